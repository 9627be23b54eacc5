"""A driver that wraps another and passes through what it does not change."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from .model import ObjectInfo, Temporary
from .storage import StorageDriver

__all__ = ["WrappingDriver"]


class WrappingDriver(StorageDriver):
    """What a wrapper passes through to the driver it wraps unchanged: its
    name and part size, its request counts, its temporary files and its
    close."""

    counts_requests = True  # what the wrapped store sends is what counts

    def __init__(self, inner: StorageDriver) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.min_part_size = inner.min_part_size

    @property
    def request_counts(self) -> Counter[str]:
        return self.inner.request_counts

    def list_temporaries(self) -> Iterator[Temporary]:
        return self.inner.list_temporaries()

    def remove_temporaries(self, temporaries: Iterable[Temporary], *, dry_run: bool = False) -> tuple[Temporary, ...]:
        return self.inner.remove_temporaries(temporaries, dry_run=dry_run)

    def close(self) -> None:
        self.inner.close()

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        return self.inner.replace_metadata(key, metadata)

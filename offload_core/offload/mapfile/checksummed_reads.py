"""Reads of a MapFile's ``data`` checked against its ``.data.crc``, as
Hadoop's ``ChecksumFileSystem`` checks every read of a local file: each
ranged read is widened to whole 512-byte chunks and checked against just
the checksum words covering them (a second ranged read, of the ``.crc``
file), so a flipped byte is a :class:`FormatError` even where the format
has no check of its own (NONE compression)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ...errors import NotFoundError
from ...formats.hadoop_crc import CRC_HEADER_SIZE, check_chunks, chunk_span, crc_file_name, parse_crc_header
from ...model import ObjectInfo
from ...storage import BytesLike, StorageDriver
from ...wrapping_driver import WrappingDriver

__all__ = ["ChecksummedReads", "checksummed"]


def checksummed(driver: StorageDriver, key: str, size: int) -> StorageDriver:
    """``driver`` with its reads of ``key`` (``size`` bytes) checked
    against ``key``'s ``.crc`` file when that is there; ``driver`` itself
    when it is not (HDFS, or a store written without checksum files).
    Raises :class:`FormatError` for a ``.crc`` file that is not one."""
    crc_key = crc_file_name(key)
    try:
        header = driver.read(crc_key, 0, CRC_HEADER_SIZE)
    except NotFoundError:
        return driver
    return ChecksummedReads(driver, key, crc_key, size, parse_crc_header(header, key))


class ChecksummedReads(WrappingDriver):
    """Wraps ``inner``: reads of ``key`` (``size`` bytes long) are checked
    against the checksum file ``crc_key`` (``per_chunk`` bytes per
    checksum) and raise :class:`FormatError` naming ``key`` and the offset
    of the first chunk that fails; every other call passes through."""

    def __init__(self, inner: StorageDriver, key: str, crc_key: str, size: int, per_chunk: int) -> None:
        super().__init__(inner)
        self._key = key
        self._crc_key = crc_key
        self._size = size
        self._per_chunk = per_chunk

    def __repr__(self) -> str:
        return f"ChecksummedReads({self.inner!r}, {self._key!r})"

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        if key != self._key:
            return self.inner.read(key, start, end)
        stop = self._size if end is None else min(end, self._size)
        span = chunk_span(start, stop, self._size, self._per_chunk)
        data = self.inner.read(key, span.start, span.end)
        if len(data) < span.end - span.start:
            # Shorter than its size said: the reader reports the truncation.
            return data[start - span.start :]
        words = self.inner.read(self._crc_key, span.crc_start, span.crc_end)
        check_chunks(words, data, span.start, self._per_chunk, key)
        if span.start == start and span.end == stop:
            return data
        return data[start - span.start : stop - span.start]

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        return self.inner.write(key, parts, metadata=metadata, if_absent=if_absent)

    def _stat(self, key: str) -> ObjectInfo:
        return self.inner.stat(key)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        return iter(self.inner.list(prefix))

    def _delete(self, keys: Sequence[str]) -> None:
        self.inner.delete(keys)

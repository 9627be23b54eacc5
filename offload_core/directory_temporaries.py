"""The temporary files of a directory store (an :class:`~offload_core.fsspec_driver.FsspecDriver` that
keeps metadata in sidecars): their names, whose they are, and removing the
ones killed writers left.

Every temporary lives directly under ``.offload-tmp/``. Its name is the 16
hex digits of the driver instance that made it (its *owner*), 16 random
ones, and a suffix: none for an upload's data, ``.pending`` for a commit
record about to be renamed into ``.offload-meta/``, ``.meta`` for a sidecar
about to replace another. A store that can tell a live process from a dead
one (the filesystem driver, with ``flock``) keeps a marker ``{owner}.owner``
beside them, locked for as long as its owner lives: while it is locked
every file of that owner is held; once it is not, they are the leftovers
of a dead run, whatever their age. Files of an owner without a marker
(made by an older version, or on a store that cannot lock) are told apart
by their age alone.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .errors import InvalidKeyError
from .formats.sidecar_records import decode_record, mtime_of, record_problem
from .keys import RESERVED_SEGMENT_PREFIX
from .model import Temporary

__all__ = [
    "META_DIR",
    "DirectoryStore",
    "TMP_DIR",
    "list_directory_temporaries",
    "marker_name",
    "new_owner",
    "remove_directory_temporaries",
    "temporary_name",
]


class DirectoryStore(Protocol):
    """What the sweep needs of a directory store (an
    :class:`~offload_core.fsspec_driver.FsspecDriver`): its filesystem and
    root, and the parts of its commit protocol the sweep takes part in."""

    fs: Any
    root: str

    def _commit_lock(self) -> AbstractContextManager[None]: ...

    def _owner_alive(self, owner: str) -> bool | None: ...

    def _held_by_a_writer(self, path: str) -> bool: ...

    def _pending_path(self, key: str) -> str: ...

    def _remove_quietly(self, path: str) -> None: ...

    def _roll_forward(self, key: str) -> None: ...


TMP_DIR = RESERVED_SEGMENT_PREFIX + "tmp"
META_DIR = RESERVED_SEGMENT_PREFIX + "meta"
_MARKER_SUFFIX = ".owner"
_OWNED = re.compile(r"^([0-9a-f]{16})[0-9a-f]{16}(\.pending|\.meta)?$|^([0-9a-f]{16})\.owner$")


def new_owner() -> str:
    """A fresh owner id for one driver instance."""
    return secrets.token_hex(8)


def temporary_name(owner: str, suffix: str = "") -> str:
    """A fresh temporary file name of ``owner``: 32 hex digits, then ``suffix``."""
    return owner + secrets.token_hex(8) + suffix


def marker_name(owner: str) -> str:
    """The name of ``owner``'s marker in ``.offload-tmp/``."""
    return owner + _MARKER_SUFFIX


def _owner_of(name: str) -> str | None:
    match = _OWNED.match(name)
    if match is None:
        return None
    return match.group(1) or match.group(3)


def list_directory_temporaries(driver: DirectoryStore) -> Iterator[Temporary]:
    """What is in ``driver``'s ``.offload-tmp/`` now, each with whether a
    live writer holds it and whether its owner is provably dead."""
    try:
        listing = driver.fs.ls(f"{driver.root}/{TMP_DIR}", detail=True)
    except FileNotFoundError:
        return
    alive: dict[str, bool | None] = {}
    for info in listing:
        if info.get("type") == "directory":
            continue
        path = str(info["name"])
        name = path.rsplit("/", 1)[-1]
        owner = _owner_of(name)
        if owner is not None and owner not in alive:
            alive[owner] = driver._owner_alive(owner)
        owner_alive = alive.get(owner) if owner is not None else None
        held = owner_alive is True or (not name.endswith(_MARKER_SUFFIX) and driver._held_by_a_writer(path))
        yield Temporary(f"{TMP_DIR}/{name}", int(info.get("size") or 0), mtime_of(info) or 0.0, held=held,
                        owner_dead=owner_alive is False)  # fmt: skip


def remove_directory_temporaries(
    driver: DirectoryStore, temporaries: Iterable[Temporary], *, dry_run: bool = False
) -> tuple[Temporary, ...]:
    """Remove ``temporaries`` from ``driver``'s ``.offload-tmp/``, except
    what a live writer holds, what is gone, and the data of writes that
    reached their commit point (those are rolled forward first, under the
    commit lock, so no writer commits meanwhile). Markers go last, and only
    once no file of their owner is left: a sweep killed half way leaves
    the marker that tells the next one to carry on. With ``dry_run``,
    nothing is changed and what would be removed is returned."""
    chosen = list(temporaries)
    for temporary in chosen:
        directory, _, name = temporary.path.partition("/")
        if directory != TMP_DIR or not name or "/" in name or name in (".", ".."):
            raise InvalidKeyError(
                f"{temporary.path!r} is not a temporary file of this store (they are directly under {TMP_DIR}/); "
                "pass only what list_temporaries() listed"
            )
    if not chosen:
        return ()
    removed: list[Temporary] = []
    with driver._commit_lock():
        committed = _committed_data(driver, roll_forward=not dry_run)
        markers = [t for t in chosen if t.path.endswith(_MARKER_SUFFIX)]
        for temporary in chosen:
            path = f"{driver.root}/{temporary.path}"
            if temporary.path.endswith(_MARKER_SUFFIX) or path in committed or not driver.fs.exists(path):
                continue
            if _held(driver, path):
                continue
            if not dry_run:
                driver._remove_quietly(path)
            removed.append(temporary)
        if markers:
            gone = {t.path for t in removed}
            left = {_owner_of(t.path.rsplit("/", 1)[-1]) for t in list_directory_temporaries(driver)
                    if not t.path.endswith(_MARKER_SUFFIX) and t.path not in gone}  # fmt: skip
            for marker in markers:
                owner = _owner_of(marker.path.rsplit("/", 1)[-1])
                if owner is None or owner in left or driver._owner_alive(owner) is not False:
                    continue
                if not dry_run:
                    driver._remove_quietly(f"{driver.root}/{marker.path}")
                removed.append(marker)
    return tuple(removed)


def _committed_data(driver: DirectoryStore, *, roll_forward: bool) -> set[str]:
    """The temporary files that pending records name: the data of writes
    past their commit point. With ``roll_forward`` those writes are
    finished (so none is left); else they are only read."""
    named: set[str] = set()
    for key in _pending_keys(driver):
        if roll_forward:
            driver._roll_forward(key)
            continue
        try:
            raw = driver.fs.cat_file(driver._pending_path(key))
        except OSError:
            continue
        if record_problem(raw, pending=True, tmp_dir=f"{driver.root}/{TMP_DIR}/") is None:
            named.add(str(decode_record(raw)["tmp"]))
    return named


def _held(driver: DirectoryStore, path: str) -> bool:
    owner = _owner_of(path.rsplit("/", 1)[-1])
    return (owner is not None and driver._owner_alive(owner) is True) or driver._held_by_a_writer(path)


def _pending_keys(driver: DirectoryStore) -> Iterator[str]:
    meta_dir = f"{driver.root}/{META_DIR}/"
    try:
        found = driver.fs.find(meta_dir)
    except FileNotFoundError:
        return
    for path in found:
        if path.endswith(".pending") and path.startswith(meta_dir):
            yield path[len(meta_dir) : -len(".pending")]

"""A storage driver that stores objects transformed chunk by chunk
(compressed, encrypted, checksummed) and serves their logical bytes.

Writes with a chain of transforms cut the object into chunks of
``chunk_size`` logical bytes, transform each (the chain in order), and end
the stored object with a chunk table (:mod:`offload_core.formats.chunked`).
Every object written gets a random id, recorded in its chunk table, that
binds its chunks to it: the table's CRC of each chunk covers it, and the
transforms' own checks (crc32c, aes-gcm) cover it too, so a chunk copied
from another object is a :class:`FormatError`, whatever the chain.
The chain (names, versions, distributions, parameters such as key ids and
wrapped keys) is recorded in the object's user metadata under
``offload-transforms``, so a reader picks the decoders from the object
alone. Objects written without a chain are stored as they are, byte for
byte, and read through unchanged.

A ranged read of a transformed object costs one GET (the stored range of
the chunks it needs) once the object's layout is known; learning it costs a
stat and a read of the object's tail, once per object per driver.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, FormatError, NotFoundError, TransformNotInstalledError
from .formats.chunked import (
    FOOTER_TAIL,
    OBJECT_ID_SIZE,
    ChunkTable,
    check_chunk,
    chunk_crc,
    decode_footer,
    encode_footer,
    footer_length,
)
from .hooks import ChunkCodec, Transform
from .model import ObjectInfo
from .storage import BytesLike, StorageDriver, slice_range
from .wrapping_driver import WrappingDriver

__all__ = ["CHAIN_KEY", "DEFAULT_CHUNK_SIZE", "TransformingDriver", "damaged_chain", "encode_chain", "with_transforms"]

CHAIN_KEY = "offload-transforms"
DEFAULT_CHUNK_SIZE = 1024 * 1024
_TAIL_READ = 64 * 1024
_LAYOUTS = 4096
_DECODED = 4  # decoded chunks kept (4 MiB at the default chunk size)


def encode_chain(steps: Sequence[Mapping[str, Any]]) -> str:
    """The ``offload-transforms`` metadata value for a chain's steps (name,
    version, distribution, params each), canonical JSON."""
    return json.dumps(steps, sort_keys=True, separators=(",", ":"))


def damaged_chain(key: str) -> FormatError:
    """The error for object ``key`` whose chain metadata does not decode."""
    return FormatError(f"{key}: its {CHAIN_KEY} metadata is not a transform chain: the object is damaged")


@dataclass(frozen=True)
class _Layout:
    table: ChunkTable
    codecs: tuple[ChunkCodec, ...]  # in chain order


@dataclass
class _TableSoFar:
    """The chunk table of an object being written, chunk by chunk."""

    chunk_size: int
    object_id: bytes
    codecs: tuple[ChunkCodec, ...]  # in chain order
    logical_size: int = 0
    lengths: list[int] = field(default_factory=list)
    crcs: list[int] = field(default_factory=list)

    def add(self, chunk: bytes) -> bytes:
        """``chunk``, the next one, transformed to be stored."""
        index = len(self.lengths)
        stored = chunk
        for codec in self.codecs:
            stored = codec.encode(stored, index)
        self.lengths.append(len(stored))
        self.crcs.append(chunk_crc(self.object_id, index, stored))
        self.logical_size += len(chunk)
        return stored

    def footer(self) -> bytes:
        table = ChunkTable(self.chunk_size, self.logical_size, tuple(self.lengths), self.object_id, tuple(self.crcs))
        return encode_footer(table)


class TransformingDriver(WrappingDriver):
    """Wraps ``inner``. ``chain`` transforms every object written (none: a
    pass-through writer); ``lookup(name, distribution)`` finds the transform
    an object was written with (:meth:`PluginManager.transform`), raising
    :class:`TransformNotInstalledError` naming the distribution to install.
    Reads raise :class:`FormatError` naming the object when a stored chunk
    fails its chunk table's CRC or its transforms' checks (a damaged chunk,
    one moved to another index, one copied from another object): altered
    bytes are never returned."""

    def __init__(
        self,
        inner: StorageDriver,
        lookup: Callable[..., Transform],
        chain: Sequence[Transform] = (),
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        if not isinstance(chunk_size, int) or not 0 < chunk_size < 2**31:
            raise ConfigError(f"transform chunk size must be between 1 byte and 2 GiB, got {chunk_size!r}")
        super().__init__(inner)
        self.chain = tuple(chain)
        self.chunk_size = chunk_size
        self._lookup = lookup
        self._lock = threading.Lock()
        self._layouts: OrderedDict[str, _Layout | None] = OrderedDict()
        self._decoded: OrderedDict[tuple[str, int], bytes] = OrderedDict()

    def __repr__(self) -> str:
        return f"TransformingDriver({self.inner!r}, chain={[t.name for t in self.chain]})"

    # -- writing -------------------------------------------------------------

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        self.forget(key)
        if not self.chain:
            return self.inner.write(key, parts, metadata=metadata, if_absent=if_absent)
        object_id = os.urandom(OBJECT_ID_SIZE)
        codecs, described = [], []
        for transform in self.chain:
            codec, params = transform.for_writing(object_id=object_id)
            codecs.append(codec)
            described.append({"name": transform.name, "version": transform.version,
                              "distribution": transform.distribution, "params": dict(params)})  # fmt: skip
        stored_metadata = {**metadata, CHAIN_KEY: encode_chain(described)}
        table = _TableSoFar(self.chunk_size, object_id, tuple(codecs))

        def stored_parts() -> Iterator[bytes]:
            pending = bytearray()
            for part in parts:
                pending += part
                while len(pending) >= self.chunk_size:
                    yield table.add(bytes(pending[: self.chunk_size]))
                    del pending[: self.chunk_size]
            if pending:
                yield table.add(bytes(pending))
            yield table.footer()

        info = self.inner.write(key, stored_parts(), metadata=stored_metadata, if_absent=if_absent)
        return ObjectInfo(key, table.logical_size, metadata, info.etag)

    # -- reading -------------------------------------------------------------

    def _layout(self, key: str, info: ObjectInfo | None = None) -> _Layout | None:
        with self._lock:
            if key in self._layouts:
                self._layouts.move_to_end(key)
                return self._layouts[key]
        info = info if info is not None else self.inner.stat(key)
        chain = info.metadata.get(CHAIN_KEY)
        if chain is None:
            layout = None
        else:
            table = self._table(key, info.size)
            layout = _Layout(table, self._codecs(key, chain, table.object_id))
        with self._lock:
            self._layouts[key] = layout
            while len(self._layouts) > _LAYOUTS:
                self._layouts.popitem(last=False)
        return layout

    def _table(self, key: str, stored_size: int) -> ChunkTable:
        if stored_size < FOOTER_TAIL:
            raise FormatError(f"{key}: {stored_size} bytes cannot hold a chunk table: the object is damaged")
        tail = self.inner.read(key, max(0, stored_size - _TAIL_READ), stored_size)
        needed = footer_length(tail)
        if needed > len(tail) and needed <= stored_size:
            tail = self.inner.read(key, stored_size - needed, stored_size)
        return decode_footer(tail, stored_size, key=key)

    def _codecs(self, key: str, chain: str, object_id: bytes | None) -> tuple[ChunkCodec, ...]:
        try:
            described = json.loads(chain)
            steps = [(str(d["name"]), int(d["version"]), str(d["distribution"]), d["params"]) for d in described]
        except (ValueError, TypeError, KeyError):
            raise damaged_chain(key) from None
        codecs = []
        for name, version, distribution, params in steps:
            transform: Transform = self._lookup(name, distribution=distribution)
            if version > transform.version:
                raise TransformNotInstalledError(
                    f"{key} was written with {name} version {version}; the installed plugin reads up to "
                    f"{transform.version}: upgrade {distribution}"
                )
            with _naming(key):
                codecs.append(transform.for_reading({str(k): str(v) for k, v in dict(params).items()},
                                                    version=version, object_id=object_id))  # fmt: skip
        return tuple(codecs)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        layout = self._layout(key)
        if layout is None:
            return self.inner.read(key, start, end)
        table = layout.table
        first, stop = slice_range(key, table.logical_size, start, end)
        chunks = table.chunks_for(first, stop)
        if not chunks:
            return b""
        with self._lock:
            known = {i: self._decoded[(key, i)] for i in chunks if (key, i) in self._decoded}
        missing = [i for i in chunks if i not in known]
        if missing:
            known.update(self._fetch_chunks(key, layout, missing[0], missing[-1] + 1))
        joined = b"".join(known[i] for i in chunks)
        offset = first - chunks.start * table.chunk_size
        return joined[offset : offset + stop - first]

    def _fetch_chunks(self, key: str, layout: _Layout, first: int, stop: int) -> dict[int, bytes]:
        """Chunks ``[first, stop)`` decoded, in one GET; the last few stay
        cached, so windows that do not start on a chunk boundary (a read
        buffer, say) neither fetch nor decode a chunk twice."""
        table, starts = layout.table, layout.table.starts
        stored = self.inner.read(key, starts[first], starts[stop])
        if len(stored) != starts[stop] - starts[first]:
            raise FormatError(f"{key}: the store returned {len(stored)} bytes of a {starts[stop]}-byte range")
        decoded = {}
        for index in range(first, stop):
            data = stored[starts[index] - starts[first] : starts[index + 1] - starts[first]]
            check_chunk(table, index, data, key=key)
            with _naming(key):
                for codec in reversed(layout.codecs):
                    data = codec.decode(data, index)
            expected = min(table.chunk_size, table.logical_size - index * table.chunk_size)
            if len(data) != expected:
                raise FormatError(f"{key}: chunk {index} decodes to {len(data)} bytes, not {expected}")
            decoded[index] = data
        with self._lock:
            for index in range(max(first, stop - _DECODED), stop):
                self._decoded[(key, index)] = decoded[index]
            while len(self._decoded) > _DECODED:
                self._decoded.popitem(last=False)
        return decoded

    def _stat(self, key: str) -> ObjectInfo:
        info = self.inner.stat(key)
        return self._logical(info)

    def _logical(self, info: ObjectInfo) -> ObjectInfo:
        layout = self._layout(info.key, info)
        if layout is None:
            return info
        shown: Mapping[str, str] = {k: v for k, v in info.metadata.items() if k != CHAIN_KEY}
        return ObjectInfo(info.key, layout.table.logical_size, shown, info.etag)

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        # The chain stays: it says how the bytes, which do not change, were written.
        chain = self.inner.stat(key).metadata.get(CHAIN_KEY)
        info = self.inner.replace_metadata(key, metadata if chain is None else {**metadata, CHAIN_KEY: chain})
        self.forget(key)
        return self._logical(info)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        # Listings carry no metadata: which objects are transformed (and
        # their logical sizes) takes a stat each, once per object.
        for info in self.inner.list(prefix):
            try:
                layout = self._layout(info.key)
            except NotFoundError:
                continue  # deleted since the listing
            yield info if layout is None else ObjectInfo(info.key, layout.table.logical_size, {}, info.etag)

    def _delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.forget(key)
        self.inner.delete(keys)

    def forget(self, key: str) -> None:
        """Drop what this driver keeps of ``key`` (its layout, its decoded
        chunks): for a caller that reads many objects once each, whose keys
        the layouts kept (up to 4096) would otherwise hold. A later read of
        ``key`` learns its layout again."""
        with self._lock:
            self._layouts.pop(key, None)
            for cached in [c for c in self._decoded if c[0] == key]:
                del self._decoded[cached]


@contextmanager
def _naming(key: str) -> Iterator[None]:
    """A transform's :class:`FormatError` (which knows a chunk, not the
    object) with the object's key in front."""
    try:
        yield
    except FormatError as exc:
        raise FormatError(f"{key}: {exc}") from None


def with_transforms(
    driver: StorageDriver, transforms: object, chunk_size: object, lookup: Callable[..., Transform]
) -> TransformingDriver:
    """``driver`` wrapped to write through ``transforms`` (``"zstd,crc32c"``
    or a list of names, in order; ``"auto"`` or none: write plain, read any
    chain), ``chunk_size`` logical bytes a chunk (default 1 MiB), each name
    found with ``lookup`` (:meth:`PluginManager.transform`). A name may
    carry options, ``zstd:level=9`` (several separated by ``;``), for a
    transform that takes them through ``with_options``. Raises
    :class:`TransformNotInstalledError` for a name nothing registered and
    :class:`ConfigError` for options a transform does not take or a chunk
    size that is not a number."""
    names = transforms.split(",") if isinstance(transforms, str) else list(transforms)  # type: ignore[call-overload]
    names = [str(name).strip() for name in names if str(name).strip() and str(name).strip() != "auto"]
    chain = [_configured(spec, lookup) for spec in names]
    try:
        size = DEFAULT_CHUNK_SIZE if chunk_size is None else int(chunk_size)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise ConfigError(f"transform_chunk_size {chunk_size!r} is not a number of bytes") from None
    return TransformingDriver(driver, lookup, chain, chunk_size=size)


def _configured(spec: str, lookup: Callable[..., Transform]) -> Transform:
    name, _, rest = spec.partition(":")
    transform = lookup(name, distribution=f"offload-plugin-{name}")
    if not rest:
        return transform
    options = dict(pair.partition("=")[::2] for pair in rest.split(";"))
    configure = getattr(transform, "with_options", None)
    if configure is None:
        raise ConfigError(f"transform {name!r} takes no options (given {rest!r})")
    configured: Transform = configure(options)
    return configured

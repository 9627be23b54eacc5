"""A hypothesis state machine that compares a driver with a dict model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import ClassVar

from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ..errors import AlreadyExistsError, InvalidRangeError, NotFoundError
from ..storage import StorageDriver

__all__ = ["DriverStateMachine"]

# No key is a whole-segment prefix of another, so directory-backed stores
# can hold them all at once.
KEYS = ["a", "b/c", "b/d", "e/f/g", "ledger-1", "ledger-1-index", "ü/x"]
PREFIXES = ["", "a", "b", "b/", "b/c", "e/f", "ledger-1", "ledger-1-", "ü", "z"]


def metadata_for(codec: str, *, controls: bool = True) -> st.SearchStrategy[dict[str, str]]:
    """User metadata whose values use characters of ``codec`` (control
    characters among them unless ``controls`` is false)."""
    characters = st.characters(codec=codec, exclude_characters="\x00", exclude_categories=None if controls else ["Cc"])
    values = st.text(characters, max_size=8)
    return st.dictionaries(st.sampled_from(["v", "format", "x.y-z"]), values, max_size=3)


payloads = st.lists(st.binary(max_size=64), max_size=4)


class _Broken(Exception):
    pass


def _broken(parts: list[bytes]) -> Iterator[bytes]:
    yield from parts
    raise _Broken


class DriverStateMachine(RuleBasedStateMachine):
    """Set ``driver`` on a subclass; the machine empties it first."""

    driver: ClassVar[StorageDriver]
    #: False when the server cannot enforce conditional create (see DriverContract).
    check_conditional_create: ClassVar[bool] = True
    #: The characters metadata values are drawn from (see DriverContract).
    metadata_codec: ClassVar[str] = "utf-8"
    #: Whether metadata values may hold control characters (see DriverContract).
    metadata_controls: ClassVar[bool] = True
    #: Objects' bytes the test server mishandles, left out (see DriverContract).
    payload_unverifiable: ClassVar[Callable[[bytes], bool] | None] = None

    def __init__(self) -> None:
        super().__init__()
        self.driver.delete([info.key for info in self.driver.list("")])
        self.model: dict[str, tuple[bytes, dict[str, str]]] = {}

    @rule(key=st.sampled_from(KEYS), parts=payloads, data=st.data())
    def write(self, key: str, parts: list[bytes], data: st.DataObject) -> None:
        self._verifiable(parts)
        meta = data.draw(metadata_for(self.metadata_codec, controls=self.metadata_controls))
        self.driver.write(key, iter(parts), metadata=meta)
        self.model[key] = (b"".join(parts), meta)

    @precondition(lambda self: self.check_conditional_create)
    @rule(key=st.sampled_from(KEYS), parts=payloads, data=st.data())
    def create_if_absent(self, key: str, parts: list[bytes], data: st.DataObject) -> None:
        self._verifiable(parts)
        meta = data.draw(metadata_for(self.metadata_codec, controls=self.metadata_controls))
        if key in self.model:
            try:
                self.driver.write(key, iter(parts), metadata=meta, if_absent=True)
            except AlreadyExistsError:
                return
            raise AssertionError(f"conditional create replaced existing {key!r}")
        self.driver.write(key, iter(parts), metadata=meta, if_absent=True)
        self.model[key] = (b"".join(parts), meta)

    @rule(key=st.sampled_from(KEYS), parts=payloads)
    def broken_write(self, key: str, parts: list[bytes]) -> None:
        try:
            self.driver.write(key, _broken(parts), metadata={"broken": "yes"})
        except _Broken:
            return
        raise AssertionError("the part iterator's exception was swallowed")

    @rule(key=st.sampled_from(KEYS), start=st.integers(0, 80), length=st.one_of(st.none(), st.integers(0, 80)))
    def read(self, key: str, start: int, length: int | None) -> None:
        end = None if length is None else start + length
        if key not in self.model:
            try:
                self.driver.read(key, start, end)
            except NotFoundError:
                return
            raise AssertionError(f"read of missing {key!r} did not raise NotFoundError")
        data = self.model[key][0]
        if start == 0 and end is None and not data:
            assert self.driver.read(key, start, end) == b"", "a whole-object read of an empty object is b''"
            return
        if start >= len(data):
            try:
                self.driver.read(key, start, end)
            except InvalidRangeError:
                return
            raise AssertionError(f"read of {key!r} at {start} (size {len(data)}) did not raise InvalidRangeError")
        assert self.driver.read(key, start, end) == data[start:end]

    @rule(keys=st.lists(st.sampled_from(KEYS), max_size=3))
    def delete(self, keys: list[str]) -> None:
        self.driver.delete(keys)
        for key in keys:
            self.model.pop(key, None)

    @rule(prefix=st.sampled_from(PREFIXES))
    def list_prefix(self, prefix: str) -> None:
        listed = [(info.key, info.size) for info in self.driver.list(prefix)]
        expected = sorted((key, len(data)) for key, (data, _) in self.model.items() if key.startswith(prefix))
        assert listed == expected

    def _verifiable(self, parts: list[bytes]) -> None:
        unverifiable = type(self).payload_unverifiable
        assume(unverifiable is None or not unverifiable(b"".join(parts)))

    @invariant()
    def stat_matches(self) -> None:
        for key in KEYS:
            if key in self.model:
                info = self.driver.stat(key)
                assert (info.size, dict(info.metadata)) == (len(self.model[key][0]), self.model[key][1])
            else:
                assert not self.driver.exists(key)

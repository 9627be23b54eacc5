"""The storage-driver contract as a pytest test class.

A backend proves it keeps the contract by subclassing :class:`DriverContract`
and overriding the ``driver`` fixture::

    from offload_core.testing import DriverContract

    class TestMyDriver(DriverContract):
        @pytest.fixture
        def driver(self, tmp_path):
            return MyDriver(tmp_path)

The fixture must return an empty store. Every test here states one clause
of the contract in ``offload_core.storage.StorageDriver``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from ..errors import (
    AlreadyExistsError,
    ConfigError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidRangeError,
    NotFoundError,
)
from ..model import ObjectInfo
from ..storage import StorageDriver
from .state_machine import DriverStateMachine
from .temporaries_contract import TemporariesContract
from .threads_contract import ThreadsContract

__all__ = ["BAD_KEYS", "DriverContract", "PartsFailed"]

BAD_KEYS = [
    "",
    "/absolute",
    "/",
    "a/../b",
    "..",
    "../escape",
    ".",
    "./a",
    "a/./b",
    "a//b",
    "a/",
    "nul\x00byte",
    "back\\slash",
    ".offload-meta/x",
    "a/.offload-tmp",
    "k" * 1025,
    "s" * 241,
    "a/" + "é" * 121,
]

ODD_VALID_KEYS = [
    "plain",
    "deep/er/key",
    "with space",
    "ünïcödé/ключ",
    "percent%2F?#+=:;,@&$!~'()[]",
    "3a1f9c52-6ad1-4b5e-8b1e-2c9a1d0b7f4e-ledger-4294967296-index",
    ".hidden",
    "...",
    "s" * 240,
]


class PartsFailed(Exception):
    """Raised by a part iterator in the all-or-nothing tests."""


def _failing_parts(good: list[bytes]) -> Iterator[bytes]:
    yield from good
    raise PartsFailed("the part source broke")


class DriverContract(TemporariesContract, ThreadsContract):
    """Subclass, override the ``driver`` fixture, and every test below (and
    in :class:`TemporariesContract` and :class:`ThreadsContract`) runs
    against your backend. Class
    attributes tune sizes for slow backends."""

    #: Size of each part in the large-object tests; multipart backends want
    #: this above their minimum part size (5 MiB on S3).
    large_part_size: int = 5 * 2**20 + 17
    #: Examples for the stateful comparison against a dict model.
    state_machine_examples: int = 25
    #: Set to a reason when the server the tests run against cannot verify
    #: conditional create (an emulator that ignores the precondition): the
    #: conditional-create checks are then reported as skipped, with it.
    conditional_create_unverifiable: str | None = None
    #: Characters in keys the test server mishandles, each with the reason;
    #: keys containing them are reported as skipped.
    key_characters_unverifiable: dict[str, str] = {}
    #: Codec whose characters the model comparison draws metadata values
    #: from; narrow it (say to ``"latin-1"``) only for a test server that
    #: cannot carry more, and say why where you do.
    state_machine_metadata_codec: str = "utf-8"
    #: False to leave control characters (CR, LF, ...) out of those values,
    #: again only for a test server that cannot carry them, saying why.
    state_machine_metadata_controls: bool = True
    #: A test on an object's bytes that the test server mishandles (a
    #: predicate); such objects are left out of the model comparison. Say
    #: why where you set it.
    state_machine_payload_unverifiable: Callable[[bytes], bool] | None = None
    #: Set to a reason for a driver that cannot replace metadata in place
    #: (it then raises ``ConfigError``, which is checked instead).
    replace_metadata_unsupported: str | None = None

    @pytest.fixture
    def driver(self) -> StorageDriver:
        raise NotImplementedError("override the driver fixture to return an empty store")

    # -- round trips -------------------------------------------------------

    def test_replace_metadata_leaves_the_bytes(self, driver: StorageDriver) -> None:
        driver.write("meta/obj", [b"x" * 1000, b"y"], metadata={"a": "1", "keep": "k"})
        if self.replace_metadata_unsupported:
            with pytest.raises(ConfigError, match="cannot replace an object's metadata"):
                driver.replace_metadata("meta/obj", {"b": "2"})
            pytest.skip(self.replace_metadata_unsupported)
        info = driver.replace_metadata("meta/obj", {"b": "2", "keep": "k"})
        assert (info.size, dict(info.metadata)) == (1001, {"b": "2", "keep": "k"})
        assert dict(driver.stat("meta/obj").metadata) == {"b": "2", "keep": "k"}
        assert driver.read("meta/obj") == b"x" * 1000 + b"y"
        with pytest.raises(NotFoundError):
            driver.replace_metadata("meta/missing", {"b": "2"})
        with pytest.raises(InvalidMetadataError):
            driver.replace_metadata("meta/obj", {"Bad Name": "v"})

    def test_round_trip_of_several_parts(self, driver: StorageDriver) -> None:
        info = driver.write("obj", [b"hello ", b"", b"world"], metadata={"k": "v"})
        assert info == ObjectInfo(key="obj", size=11, metadata={"k": "v"}, etag=info.etag)
        assert driver.read("obj") == b"hello world"
        assert driver.stat("obj").size == 11
        assert driver.stat("obj").metadata == {"k": "v"}

    def test_bytes_object_is_one_part(self, driver: StorageDriver) -> None:
        driver.write("obj", b"abc")
        assert driver.read("obj") == b"abc"

    def test_bytearray_and_memoryview_parts(self, driver: StorageDriver) -> None:
        driver.write("obj", [bytearray(b"ab"), memoryview(b"cd")])
        assert driver.read("obj") == b"abcd"

    def test_non_bytes_part_is_rejected_and_nothing_is_written(self, driver: StorageDriver) -> None:
        with pytest.raises(TypeError):
            driver.write("obj", [b"ok", "text"])  # type: ignore[list-item]
        assert not driver.exists("obj")

    def test_empty_object(self, driver: StorageDriver) -> None:
        driver.write("empty", [])
        assert driver.stat("empty").size == 0
        assert [info.key for info in driver.list("")] == ["empty"]
        assert driver.read("empty") == b""
        with pytest.raises(InvalidRangeError):
            driver.read("empty", 0, 1)

    def test_large_multi_part_object(self, driver: StorageDriver) -> None:
        parts = [bytes([n]) * self.large_part_size for n in range(3)]
        driver.write("big", iter(parts), metadata={"parts": "3"})
        assert driver.stat("big").size == 3 * self.large_part_size
        assert driver.read("big", self.large_part_size - 2, self.large_part_size + 2) == b"\x00\x00\x01\x01"

    def test_overwrite_replaces_data_and_metadata(self, driver: StorageDriver) -> None:
        driver.write("obj", b"first", metadata={"gen": "1", "only-first": "x"})
        driver.write("obj", b"second!", metadata={"gen": "2"})
        assert driver.read("obj") == b"second!"
        assert driver.stat("obj").metadata == {"gen": "2"}

    @pytest.mark.parametrize("key", ODD_VALID_KEYS)
    def test_unusual_but_valid_keys_round_trip(self, driver: StorageDriver, key: str) -> None:
        for character, reason in self.key_characters_unverifiable.items():
            if character in key:
                pytest.skip(reason)
        driver.write(key, b"payload")
        assert driver.read(key) == b"payload"
        assert [info.key for info in driver.list("")] == [key]
        driver.delete([key])
        assert not driver.exists(key)

    # -- ranges ------------------------------------------------------------

    @pytest.mark.parametrize(
        ("start", "end", "expected"),
        [
            (0, 1, b"0"),
            (9, 10, b"9"),
            (0, 10, b"0123456789"),
            (3, 7, b"3456"),
            (0, None, b"0123456789"),
            (4, None, b"456789"),
            (5, 5, b""),
            (6, 1000, b"6789"),
            (0, 11, b"0123456789"),
            (6, 2**40, b"6789"),
            (0, 2**63 - 1, b"0123456789"),
        ],
    )
    def test_read_ranges(self, driver: StorageDriver, start: int, end: int | None, expected: bytes) -> None:
        driver.write("digits", b"0123456789")
        assert driver.read("digits", start, end) == expected

    @pytest.mark.parametrize(("start", "end"), [(10, 11), (10, None), (11, 12), (1000, 2000), (-1, 3), (5, 4)])
    def test_invalid_ranges_raise(self, driver: StorageDriver, start: int, end: int | None) -> None:
        driver.write("digits", b"0123456789")
        with pytest.raises(InvalidRangeError, match="digits"):
            driver.read("digits", start, end)

    @pytest.mark.parametrize(("start", "end"), [(True, 3), (0, True), (0, 3.5), (1.0, 3), ("0", 3), (0, "3")])
    def test_range_arguments_must_be_ints(self, driver: StorageDriver, start: object, end: object) -> None:
        driver.write("digits", b"0123456789")
        with pytest.raises(InvalidRangeError, match="must be an int"):
            driver.read("digits", start, end)  # type: ignore[arg-type]

    # -- metadata ----------------------------------------------------------

    def test_metadata_round_trip_including_non_ascii(self, driver: StorageDriver) -> None:
        metadata = {
            "s3managedledgeroffloaderformatversion": "1",
            "managedledgername": "tenant/ns/persistent/topic",
            "unicode": "héllo wörld ✓ 日本",
            "empty": "",
            "spaces": "  padded  ",
            "dotted.name_with-all": "x=y; z",
        }
        driver.write("obj", b"x", metadata=metadata)
        assert dict(driver.stat("obj").metadata) == metadata

    @pytest.mark.parametrize(
        "metadata",
        [{"UpperCase": "v"}, {"": "v"}, {"has space": "v"}, {"k": 1}, {"k": None}, {"ü": "v"}, {"k": "nul\x00"}],
    )
    def test_invalid_metadata_is_rejected_before_writing(
        self, driver: StorageDriver, metadata: dict[str, object]
    ) -> None:
        with pytest.raises(InvalidMetadataError):
            driver.write("obj", b"x", metadata=metadata)  # type: ignore[arg-type]
        assert not driver.exists("obj")

    def test_stat_result_is_immutable(self, driver: StorageDriver) -> None:
        driver.write("obj", b"x", metadata={"k": "v"})
        info = driver.stat("obj")
        with pytest.raises(TypeError):
            info.metadata["k"] = "changed"  # type: ignore[index]

    # -- missing keys and delete ---------------------------------------------

    def test_missing_key_raises_not_found(self, driver: StorageDriver) -> None:
        for call in (lambda: driver.read("nope"), lambda: driver.read("nope", 0, 1), lambda: driver.stat("nope")):
            with pytest.raises(NotFoundError, match="nope") as caught:
                call()
            assert isinstance(caught.value, FileNotFoundError)
        assert not driver.exists("nope")

    def test_delete_is_idempotent(self, driver: StorageDriver) -> None:
        driver.write("a", b"1")
        driver.write("b", b"2")
        driver.delete(["a", "missing"])
        driver.delete(["a"])
        driver.delete("a")
        driver.delete([])
        assert [info.key for info in driver.list("")] == ["b"]
        with pytest.raises(NotFoundError):
            driver.read("a")

    def test_delete_validates_every_key_before_deleting(self, driver: StorageDriver) -> None:
        driver.write("a", b"1")
        with pytest.raises(InvalidKeyError):
            driver.delete(["a", "../escape"])
        assert driver.read("a") == b"1"

    # -- conditional create --------------------------------------------------

    def test_conditional_create(self, driver: StorageDriver) -> None:
        if self.conditional_create_unverifiable:
            pytest.skip(self.conditional_create_unverifiable)
        driver.write("obj", b"first", metadata={"gen": "1"}, if_absent=True)
        with pytest.raises(AlreadyExistsError, match="obj"):
            driver.write("obj", b"second", metadata={"gen": "2"}, if_absent=True)
        assert driver.read("obj") == b"first"
        assert driver.stat("obj").metadata == {"gen": "1"}
        driver.delete(["obj"])
        driver.write("obj", b"third", if_absent=True)
        assert driver.read("obj") == b"third"

    # -- listing -------------------------------------------------------------

    def test_list_is_sorted_and_filtered_by_string_prefix(self, driver: StorageDriver) -> None:
        keys = ["b/2", "a", "b/10", "b/1/x", "ba", "c-index", "c", "b/1y"]
        for number, key in enumerate(keys):
            driver.write(key, b"x" * number)
        assert [info.key for info in driver.list("")] == sorted(keys)
        assert [info.key for info in driver.list("b/")] == ["b/1/x", "b/10", "b/1y", "b/2"]
        assert [info.key for info in driver.list("b/1")] == ["b/1/x", "b/10", "b/1y"]
        assert [info.key for info in driver.list("b")] == ["b/1/x", "b/10", "b/1y", "b/2", "ba"]
        assert [info.key for info in driver.list("c")] == ["c", "c-index"]
        assert list(driver.list("zzz")) == []
        assert list(driver.list("nothing/here/")) == []
        sizes = {info.key: info.size for info in driver.list("")}
        assert sizes == {key: number for number, key in enumerate(keys)}

    def test_list_yields_object_infos(self, driver: StorageDriver) -> None:
        driver.write("obj", b"abc", metadata={"k": "v"})
        (info,) = driver.list("")
        assert isinstance(info, ObjectInfo)
        assert (info.key, info.size) == ("obj", 3)

    # -- all or nothing ------------------------------------------------------

    def test_failing_parts_leave_nothing(self, driver: StorageDriver) -> None:
        with pytest.raises(PartsFailed):
            driver.write("obj", _failing_parts([b"a" * 1000, b"b" * 1000]), metadata={"k": "v"})
        assert not driver.exists("obj")
        assert list(driver.list("")) == []

    def test_failing_large_parts_leave_nothing(self, driver: StorageDriver) -> None:
        parts = [b"x" * self.large_part_size, b"y" * self.large_part_size]
        with pytest.raises(PartsFailed):
            driver.write("big", _failing_parts(parts))
        assert list(driver.list("")) == []

    def test_failing_overwrite_keeps_the_old_object(self, driver: StorageDriver) -> None:
        driver.write("obj", b"old", metadata={"gen": "1"})
        with pytest.raises(PartsFailed):
            driver.write("obj", _failing_parts([b"new data"]), metadata={"gen": "2"})
        assert driver.read("obj") == b"old"
        assert driver.stat("obj").metadata == {"gen": "1"}

    def test_failing_parts_on_conditional_create_leave_the_key_free(self, driver: StorageDriver) -> None:
        with pytest.raises(PartsFailed):
            driver.write("obj", _failing_parts([b"a"]), if_absent=True)
        driver.write("obj", b"after", if_absent=True)
        assert driver.read("obj") == b"after"

    # -- key validation ------------------------------------------------------

    @pytest.mark.parametrize("key", BAD_KEYS)
    def test_bad_keys_are_rejected_everywhere(self, driver: StorageDriver, key: str) -> None:
        with pytest.raises(InvalidKeyError):
            driver.write(key, b"x")
        with pytest.raises(InvalidKeyError):
            driver.read(key)
        with pytest.raises(InvalidKeyError):
            driver.stat(key)
        with pytest.raises(InvalidKeyError):
            driver.delete([key])
        assert list(driver.list("")) == []

    @pytest.mark.parametrize("prefix", ["/abs", "a/../", "..", "a//", "nul\x00", ".offload-meta"])
    def test_bad_list_prefixes_are_rejected(self, driver: StorageDriver, prefix: str) -> None:
        with pytest.raises(InvalidKeyError):
            list(driver.list(prefix))

    def test_non_string_key_is_rejected(self, driver: StorageDriver) -> None:
        with pytest.raises(InvalidKeyError):
            driver.write(b"bytes-key", b"x")  # type: ignore[arg-type]

    # -- model comparison ----------------------------------------------------

    def test_behaves_like_a_dict(self, driver: StorageDriver) -> None:
        machine = type(
            "Machine",
            (DriverStateMachine,),
            {
                "driver": driver,
                "check_conditional_create": self.conditional_create_unverifiable is None,
                "metadata_codec": self.state_machine_metadata_codec,
                "metadata_controls": self.state_machine_metadata_controls,
                "payload_unverifiable": staticmethod(self.state_machine_payload_unverifiable)
                if self.state_machine_payload_unverifiable is not None
                else None,
            },
        )
        run_state_machine_as_test(
            machine,
            settings=settings(max_examples=self.state_machine_examples, stateful_step_count=20, deadline=None),
        )

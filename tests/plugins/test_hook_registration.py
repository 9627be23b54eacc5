"""The registration hooks through pluggy: events, offloaders and chunk
transforms reaching plugins, and what each registration is attributed to."""

from __future__ import annotations

import pytest

from offload_core import ConfigError, DriverNotInstalledError, Event, PluginLoadError, PluginManager, hookimpl
from offload_core.errors import TransformNotInstalledError
from offload_core.memory import MemoryDriver


def test_events_offloaders_and_transforms_reach_plugins() -> None:
    seen: list[Event] = []

    class Reverse:
        name, version, distribution = "reverse", 1, "offload-plugin-reverse"

        def for_writing(self, *, object_id):  # type: ignore[no-untyped-def]
            return self, {}

        def for_reading(self, params, *, version, object_id):  # type: ignore[no-untyped-def]
            return self

        def encode(self, chunk: bytes, index: int) -> bytes:
            return chunk[::-1]

        def decode(self, stored: bytes, index: int) -> bytes:
            return stored[::-1]

    def factory(driver: object) -> str:
        return "an offloader"

    class Plugin:
        @hookimpl
        def offload_core_on_event(self, event: Event) -> None:
            seen.append(event)

        @hookimpl
        def offload_core_register_transforms(self, register):  # type: ignore[no-untyped-def]
            register(Reverse())

        @hookimpl
        def offload_core_register_offloaders(self, register):  # type: ignore[no-untyped-def]
            register(factory, name="blobby", aliases=("Blob",))

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    manager.emit(Event("offload.finished", {"bytes": 3}))
    assert seen == [Event("offload.finished", {"bytes": 3})]
    assert manager.transform("reverse").for_reading({}, version=1, object_id=None).decode(b"cba", 0) == b"abc"
    assert manager.offloader("blob").factory is factory
    with pytest.raises(
        TransformNotInstalledError, match="no chunk transform named 'zstd'.*install offload-plugin-zstd"
    ):
        manager.transform("zstd", distribution="offload-plugin-zstd")
    with pytest.raises(ConfigError, match="no ledger offloader named 'x'.*blobby"):
        manager.offloader("x")


def test_registration_hooks_go_through_pluggy_and_are_attributed() -> None:
    class Sqlish(MemoryDriver):
        pass

    class Plugin:
        @hookimpl
        def offload_core_register_drivers(self, register):  # type: ignore[no-untyped-def]
            register(Sqlish, name="sqlish", schemes=("sqlish",))

    class Other:
        @hookimpl
        def offload_core_register_drivers(self, register):  # type: ignore[no-untyped-def]
            register(MemoryDriver, name="other-memory")

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    manager.register(Other())
    traced: list[str] = []
    undo = manager._pm.add_hookcall_monitoring(lambda name, impls, kwargs: traced.append(name),
                                               lambda outcome, name, impls, kwargs: None)  # fmt: skip
    try:
        spec = manager.driver("sqlish")
    finally:
        undo()
    assert "offload_core_register_drivers" in traced
    assert spec.plugin.name == "Plugin"
    assert manager.driver("other-memory").plugin.name == "Other"
    assert manager.driver("memory").plugin.name == "offload_core.memory"


def test_the_broker_finds_offloaders_by_the_driver_they_serve() -> None:
    def packed(driver: object) -> str:
        return "packed"

    class Plugin:
        @hookimpl
        def offload_core_register_offloaders(self, register):  # type: ignore[no-untyped-def]
            register(packed, name="packed", drivers=("memory",))

    manager = PluginManager(load_entry_points=False)
    assert manager.offloader_for_driver("memory").name == "blobstore"
    manager.register(Plugin())
    assert manager.offloader_for_driver("memory").name == "packed"
    assert manager.offloader_for_driver("memory://").name == "packed"
    with pytest.raises(DriverNotInstalledError):
        manager.offloader_for_driver("nonesuch")


def test_a_transform_written_before_chunks_were_bound_is_refused_by_name() -> None:
    """Its methods lack ``object_id`` (and ``version``): before, the first
    write failed with a bare TypeError, a traceback from the CLI."""

    class OldReverse:
        name, version, distribution = "old-reverse", 1, "old-reverse-plugin"

        def for_writing(self):  # type: ignore[no-untyped-def]
            raise AssertionError("never called")

        def for_reading(self, params):  # type: ignore[no-untyped-def]
            raise AssertionError("never called")

    class Plugin:
        @hookimpl
        def offload_core_register_transforms(self, register):  # type: ignore[no-untyped-def]
            register(OldReverse())

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    with pytest.raises(PluginLoadError, match="'old-reverse'.*for_writing without object_id.*upgrade it"):
        manager.transform("old-reverse")

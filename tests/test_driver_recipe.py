"""The driver recipe of docs/plugin-authors.md, built from the doc's own
code blocks (those marked ``recipe``), registered through its hook and
opened by URL through ``from_url``, passes the whole driver contract kit,
with none of the kit's allowances for a store that does less."""

from __future__ import annotations

import sys
import textwrap
import types
import uuid
from pathlib import Path

import pytest

from offload_core import PluginManager, StorageDriver
from offload_core.testing import DriverContract

from .test_docs_runnable import code_blocks

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "plugin-authors.md"


def build_recipe() -> types.ModuleType:
    """The recipe's blocks, in order, as one module (importable by name, as an installed plugin is)."""
    blocks = [block for block in code_blocks(GUIDE) if "recipe" in block.words]
    assert [block.language for block in blocks] == ["python", "python"], "the recipe is a driver and its hook"
    module = types.ModuleType("offload_recipe_driver")
    sys.modules[module.__name__] = module
    code = "".join(textwrap.dedent(block.code) for block in blocks)
    exec(compile(code, f"{GUIDE.name} (recipe)", "exec"), module.__dict__)  # noqa: S102 - the doc's code
    return module


RECIPE = build_recipe()
MANAGER = PluginManager(load_entry_points=False)
MANAGER.register(RECIPE)


class TestTheRecipeDriver(DriverContract):
    @pytest.fixture
    def driver(self) -> StorageDriver:
        return MANAGER.open_driver(f"mystore://test-{uuid.uuid4().hex}")  # an empty bucket each time


def test_the_kit_runs_whole_on_the_recipe() -> None:
    allowances = (
        "replace_metadata_unsupported",
        "conditional_create_unverifiable",
        "state_machine_payload_unverifiable",
    )
    assert all(getattr(TestTheRecipeDriver, name) is None for name in allowances)
    assert TestTheRecipeDriver.key_characters_unverifiable == {}


def test_the_recipe_opens_by_name_alias_and_url() -> None:
    by_url = MANAGER.open_driver("mystore://orders")
    by_url.write("k", [b"v"], metadata={"a": "1"})
    assert MANAGER.open_driver("my-store", bucket="orders").read("k") == b"v"
    assert by_url.create_bucket() is False

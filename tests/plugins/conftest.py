"""The plugin tests' fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [m for m in sys.modules if m.startswith("fake_")]:
        del sys.modules[name]

"""A worker process keeps freed block memory instead of faulting in fresh pages."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")

# Four 4 MiB blocks alive at a time, as a segment's queue holds them; each
# new block replaces the oldest. Prints the page faults per new block.
_CYCLE_BLOCKS = """
import resource, sys
from offload_core.managed_ledger.workers.worker_memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
blocks = [bytearray(4 << 20) for _ in range(4)]
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(16):
    blocks.pop(0)
    blocks.append(bytearray(4 << 20))
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 16)
"""


def faults_per_block(mode: str) -> float:
    done = subprocess.run([sys.executable, "-c", _CYCLE_BLOCKS, mode], capture_output=True, text=True, check=True)
    return float(done.stdout)


def test_freed_blocks_are_reused_without_page_faults() -> None:
    assert faults_per_block("default") > 100  # what the setting is for: every block faulted in anew
    assert faults_per_block("keep") < 5

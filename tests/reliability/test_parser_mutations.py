"""Every byte-format parser, fed mutated input in a process whose address
space is capped: nothing but FormatError comes out, and nothing allocates
past the cap (a MemoryError would be an unexpected exception, and a crash
of the process a failed run)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.reliability.campaign import record, scaled


def test_only_format_errors_come_out_of_mutated_input() -> None:
    count = scaled("mutations_per_parser")
    result = subprocess.run([sys.executable, "-m", "tests.reliability.mutate", str(count), "1"],
                            capture_output=True, text=True, timeout=7200)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    for name, row in report.items():
        assert row["unexpected"] == [], (name, row["unexpected"])
        assert sum(row["outcomes"].values()) == row["inputs"]
        outcomes = ", ".join(f"{kind} {n}" for kind, n in sorted(row["outcomes"].items()))
        record(f"mutated input (bit flips, truncations, extensions, length fields 0/-1/2^31-1/2^63-1) to "
               f"{name}, address space capped at 1.5 GiB", runs=row["inputs"], checked=row["inputs"],
               losses=row["outcomes"].get("unexpected", 0), unit=f"inputs; outcomes {outcomes}")  # fmt: skip

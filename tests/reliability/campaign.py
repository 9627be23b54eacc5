"""The reliability campaign's scale and its record.

The same tests run in CI at the ``ci`` scale (small, fixed seeds) and, with
``OFFLOAD_RELIABILITY=campaign`` (``make reliability``), at the campaign's
scale. Each test records what it tried to the JSON-lines file named by
``OFFLOAD_RELIABILITY_LOG`` (if set); ``python -m tests.reliability.report``
turns that into RELIABILITY.md.
"""

from __future__ import annotations

import json
import os
import time

SCALE = os.environ.get("OFFLOAD_RELIABILITY", "ci")
if SCALE not in ("ci", "campaign"):
    raise RuntimeError(f"OFFLOAD_RELIABILITY is {SCALE!r}: use ci or campaign")

_NUMBERS = {
    # what: (ci, campaign)
    "mutations_per_parser": (3_000, 1_000_000),
    "ledger_model_examples": (15, 2_000),
    "driver_model_examples": (15, 8_000),
    "kills_per_path": (3, 50),
    "concurrent_rounds": (1, 10),
    "embedding_runs": (2, 10),
    "room_model_examples": (10, 500),
    "chunk_moves": (300, 50_000),
}


def scaled(name: str) -> int:
    ci, campaign = _NUMBERS[name]
    return campaign if SCALE == "campaign" else ci


def record(what: str, *, runs: int, checked: int, losses: int, unit: str = "entries", note: str = "") -> None:
    """Append one row of the campaign's table (a no-op without a log)."""
    path = os.environ.get("OFFLOAD_RELIABILITY_LOG")
    if not path:
        return
    row = {"what": what, "runs": runs, "checked": checked, "unit": unit, "losses": losses, "note": note,
           "scale": SCALE, "at": time.strftime("%Y-%m-%d %H:%M:%S")}  # fmt: skip
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(row) + "\n")

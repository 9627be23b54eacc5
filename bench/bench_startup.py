"""Start-up time of the `offload` command, as a ratio to a bare interpreter.

Runs each command several times in fresh processes and reports the median
wall time and its ratio to `python -c pass` measured in the same run (the
goals, issue 43: `offload --version` and `offload --help` under 0.15 s, each
verb's start under 0.3 s on the project's 2-core machine): the two flags,
`topics list` and `plugins` run whole, and every other verb group's start
(`offload GROUP --help`: its module imported, the top-level checks run).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

from offload_core.cli import _VERBS

RUNS = 7


def median_seconds(command: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        bare = median_seconds([sys.executable, "-c", "pass"])
        offload = [sys.executable, "-m", "offload_core.cli"]
        commands = {
            "offload --version": [*offload, "--version"],
            "offload --help": [*offload, "--help"],
            "offload topics list": [*offload, "topics", "list", "--data-dir", data_dir],
            "offload plugins": [*offload, "plugins"],
            # Each verb group's start: its module imported, the top-level checks run, its help printed.
            **{f"offload {verb} --help": [*offload, verb, "--help"] for verb in sorted(_VERBS) if verb != "plugins"},
        }
        print(f"{'command':<26} {'median s':>9} {'/ python -c pass':>17}  goal")
        print(f"{'python -c pass':<26} {bare:>9.3f} {1.0:>17.1f}")
        for name, command in commands.items():
            seconds = median_seconds(command)
            goal = 0.15 if name in ("offload --version", "offload --help") else 0.3
            print(f"{name:<26} {seconds:>9.3f} {seconds / bare:>17.1f}  < {goal} s")


if __name__ == "__main__":
    main()

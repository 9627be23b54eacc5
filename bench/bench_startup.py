"""Start-up time of the `offload` command, as a ratio to a bare interpreter.

Runs each command several times in fresh processes and reports the median
wall time and its ratio to `python -c pass` measured in the same run (the
goals, issue 43: `offload --version` and `offload --help` under 0.15 s, each
verb's start under 0.3 s on the project's 2-core machine).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

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
        commands = {
            "offload --version": [sys.executable, "-m", "offload_core.cli", "--version"],
            "offload --help": [sys.executable, "-m", "offload_core.cli", "--help"],
            "offload topics list": [sys.executable, "-m", "offload_core.cli", "topics", "list", "--data-dir", data_dir],
            "offload plugins": [sys.executable, "-m", "offload_core.cli", "plugins"],
        }
        print(f"{'command':<24} {'median s':>9} {'/ python -c pass':>17}")
        print(f"{'python -c pass':<24} {bare:>9.3f} {1.0:>17.1f}")
        for name, command in commands.items():
            seconds = median_seconds(command)
            print(f"{name:<24} {seconds:>9.3f} {seconds / bare:>17.1f}")


if __name__ == "__main__":
    main()

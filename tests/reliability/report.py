"""Turn the campaign's log into RELIABILITY.md: ``python -m
tests.reliability.report LOG > RELIABILITY.md``."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys


def main(log: str) -> str:
    with open(log, encoding="utf-8") as lines_in:
        rows = [json.loads(line) for line in lines_in if line.strip()]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpus = os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lines = [
        "# Reliability campaign",
        "",
        "What `make reliability` tried, and what it found. The same tests run in CI on a small fixed slice",
        "(`OFFLOAD_RELIABILITY=ci`, the default); the campaign runs them with bigger numbers",
        '(`OFFLOAD_RELIABILITY=campaign`). "Losses or alterations" counts entries lost or changed and, for the',
        "parsers, exceptions other than `FormatError`: every one must be 0.",
        "",
        f"Machine: {platform.machine()}, {cpus} cores, {memory:.0f} GiB, {platform.system()} {platform.release()},"
        f" Python {platform.python_version()}. Run finished {rows[-1]['at'] if rows else '-'} (scale: "
        f"{rows[-1]['scale'] if rows else '-'}) on commit {commit or 'unknown'}.",
        "",
        "| what was tried | runs | checked | losses or alterations |",
        "|---|---:|---|---:|",
    ]
    for row in rows:
        lines.append(f"| {row['what']} | {row['runs']:,} | {row['checked']:,} {row['unit']} | {row['losses']} |")
    total = sum(row["losses"] for row in rows)
    lines += ["", f"Total losses or alterations: {total}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1]))

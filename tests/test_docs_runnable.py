"""The docs run as written: every code block README.md and docs/*.md mark
``runnable`` is run, and every relative link between the docs resolves.

The convention (docs/README.md): a fence whose info string carries the word
``runnable`` runs; a file's blocks run in order, each in a process of its
own, in one empty temporary directory they share; ``sh`` blocks with
``bash -euo pipefail``, ``python`` blocks with this interpreter; a block
also marked ``spark`` runs alone, in a directory of its own, as a test
marked ``spark``. ``offload`` on the blocks' ``PATH`` is this checkout's
CLI run by this interpreter, as ``.venv/bin/offload`` is after ``make
setup``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED_DOCS = [
    *DOCS,
    ROOT / "bench" / "README.md",
    ROOT / "examples" / "driver-plugin" / "README.md",
    *sorted(ROOT.glob("plugins/*/README.md")),
    *sorted(ROOT.glob("drivers/*/README.md")),
]
SHELLS = {"sh", "bash"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
# A guard against a hung block, not a measure: the slowest block takes seconds.
BLOCK_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    words: frozenset[str]
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` (indented ones included), with its info string's words."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    opened: tuple[int, str, list[str]] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, start=1):
        match = FENCE.match(line)
        if opened is None:
            if match:
                opened, body = (number, match["fence"], match["info"].split()), []
        elif match and match["fence"].startswith(opened[1]) and not match["info"].strip():
            start, _, words = opened
            language = words[0] if words else ""
            blocks.append(Block(path, start, language, frozenset(words[1:]), "\n".join(body) + "\n"))
            opened = None
        else:
            body.append(line)
    assert opened is None, f"{path.relative_to(ROOT)}:{opened[0]}: a code block is never closed"
    return blocks


def runnable_blocks(path: Path) -> list[Block]:
    return [block for block in code_blocks(path) if "runnable" in block.words]


def environment(tools: Path, *, spark: bool) -> dict[str, str]:
    """This interpreter's ``offload`` and ``python`` first on ``PATH``, this checkout first on ``sys.path``."""
    tools.mkdir(exist_ok=True)
    for name, command in (("offload", f'"{sys.executable}" -m offload_core.cli'), ("python", f'"{sys.executable}"')):
        script = tools / name
        script.write_text(f'#!/bin/sh\nexec {command} "$@"\n', encoding="utf-8")
        script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(tools), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if spark:
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env


def run_blocks(blocks: list[Block], workdir: Path, tools: Path, *, spark: bool = False) -> None:
    """Run ``blocks`` in order in ``workdir``; fail naming the first that exits non-zero."""
    env = environment(tools, spark=spark)
    for block in blocks:
        if block.language in SHELLS:
            command = ["bash", "-euo", "pipefail", "-c", block.code]
        elif block.language == "python":
            command = [sys.executable, "-c", block.code]
        else:
            pytest.fail(f"{block.where}: a runnable block must be sh, bash or python, not {block.language!r}")
        done = subprocess.run(
            command, cwd=workdir, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_SECONDS
        )
        assert done.returncode == 0, (
            f"{block.where}: the {block.language} block exited {done.returncode}\n"
            f"--- code\n{block.code}--- stdout (end)\n{done.stdout[-3000:]}\n--- stderr (end)\n{done.stderr[-3000:]}"
        )


def chained_cases() -> list[object]:
    cases: list[object] = []
    for path in DOCS:
        blocks = [block for block in runnable_blocks(path) if "spark" not in block.words]
        if blocks:
            cases.append(pytest.param(blocks, id=str(path.relative_to(ROOT))))
    return cases


def spark_cases() -> list[object]:
    return [
        pytest.param(block, id=block.where, marks=pytest.mark.spark)
        for path in DOCS
        for block in runnable_blocks(path)
        if "spark" in block.words
    ]


@pytest.mark.parametrize("blocks", chained_cases())
def test_runnable_blocks_of_a_doc_run_in_order(blocks: list[Block], tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    run_blocks(blocks, tmp_path / "work", tmp_path / "tools")


@pytest.mark.parametrize("block", spark_cases())
def test_runnable_spark_block_runs(block: Block, tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    run_blocks([block], tmp_path / "work", tmp_path / "tools", spark=True)


def test_the_guides_have_runnable_blocks() -> None:
    guides = ["operators.md", "data-engineers.md", "plugin-authors.md"]
    assert all(runnable_blocks(ROOT / "docs" / guide) for guide in guides)
    assert spark_cases()


@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("sh", "true\nfalse\necho after the failure\n"),
        ("sh", "false | cat\n"),
        ("sh", "echo $UNSET_IN_THE_DOCS_TEST\n"),
        ("python", "raise SystemExit('broken')\n"),
        ("shell", "true\n"),
    ],
)
def test_a_broken_block_fails_the_run(language: str, code: str, tmp_path: Path) -> None:
    broken = Block(ROOT / "README.md", 1, language, frozenset({"runnable"}), code)
    with pytest.raises(pytest.fail.Exception if language == "shell" else AssertionError):
        run_blocks([broken], tmp_path, tmp_path / "tools")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def fenced_lines(path: Path) -> set[int]:
    """The numbers of the lines inside code blocks, fences included."""
    return {
        number for block in code_blocks(path) for number in range(block.line, block.line + block.code.count("\n") + 2)
    }


def anchors(path: Path) -> set[str]:
    fenced = fenced_lines(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    return {
        github_anchor(line.lstrip("#"))
        for number, line in enumerate(lines, start=1)
        if line.startswith("#") and number not in fenced
    }


LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@pytest.mark.parametrize("path", LINKED_DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    fenced = fenced_lines(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    prose = [line for number, line in enumerate(lines, start=1) if number not in fenced]
    text = re.sub(r"`[^`\n]*`", "", "\n".join(prose))
    broken = []
    for match in LINK.finditer(text):
        target = match["target"]
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading in {linked.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


# What `make demo` installs (the Makefile's demo rule): the core, the
# filesystem driver and the metrics plugin; and the driver names they serve
# (memory is built in). A runnable block naming another driver fails for a
# newcomer, whatever the test environment holds.
DEMO_INSTALL = "pip install --quiet -e . -e drivers/filesystem -e plugins/prometheus"
DEMO_DRIVERS = {"filesystem", "local-directory", "file", "local", "memory"}
DRIVER_NAMED = re.compile(r"""(?:\s-d\s+|--driver[ =]|managedLedgerOffloadDriver\s*=\s*\\?["'])(?P<name>[\w-]+)""")


def test_runnable_blocks_name_only_drivers_make_demo_installs() -> None:
    assert DEMO_INSTALL in (ROOT / "Makefile").read_text(encoding="utf-8")
    named = [
        (block.where, match["name"])
        for path in DOCS
        for block in runnable_blocks(path)
        if "spark" not in block.words
        for match in DRIVER_NAMED.finditer(block.code)
    ]
    assert named
    assert [(where, name) for where, name in named if name.lower() not in DEMO_DRIVERS] == []

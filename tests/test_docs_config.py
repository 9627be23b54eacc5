"""Every broker config the docs show is one the broker takes: each ```toml
block of the README, the guides and the packages' READMEs parses as TOML
(a flat one, a broker config, through :func:`parse_config` too), and so
does every inline code span that sets a config key (```key = value```),
so a reader can paste any of them into a config file."""

from __future__ import annotations

import re
import tomllib

import pytest

from offload_core.managed_ledger.config import _KEYS, parse_config

from .test_docs_runnable import LINKED_DOCS, ROOT, code_blocks, fenced_lines

# `key = value` or `key: value` where key is a broker config key.
SETTING = re.compile(r"`(?P<setting>(?P<key>[A-Za-z0-9]+)\s*[:=][^`\n]*)`")


def toml_blocks() -> list[object]:
    return [
        pytest.param(block.code, id=block.where)
        for path in LINKED_DOCS
        for block in code_blocks(path)
        if block.language == "toml"
    ]


def inline_settings() -> list[object]:
    cases: list[object] = []
    for path in LINKED_DOCS:
        fenced = fenced_lines(path)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if number in fenced:
                continue
            for match in SETTING.finditer(line):
                if match["key"] in _KEYS:
                    where = f"{path.relative_to(ROOT)}:{number}"
                    cases.append(pytest.param(match["setting"], id=f"{where}:{match['key']}"))
    return cases


def test_the_docs_show_configs() -> None:
    assert toml_blocks()
    assert inline_settings()


@pytest.mark.parametrize("code", toml_blocks())
def test_toml_blocks_parse(code: str) -> None:
    values = tomllib.loads(code)
    if not any(isinstance(value, dict) for value in values.values()):
        parse_config(values, source="the docs")


# Settings the docs show inline that only stand with a companion key: the
# file-system offloader names where its MapFiles go (the docs say so beside it).
_COMPANIONS = {("managedLedgerOffloadDriver", "filesystem"): {"fileSystemURI": "file:///tmp/offload-hadoop"}}


@pytest.mark.parametrize("setting", inline_settings())
def test_inline_settings_parse(setting: str) -> None:
    values = tomllib.loads(setting)
    for (key, value), companions in _COMPANIONS.items():
        if values.get(key) == value:
            values.update(companions)
    parse_config(values, source="the docs")


def test_the_docs_show_a_whole_s3_broker_config() -> None:
    """One block a newcomer can paste for S3: driver, bucket, endpoint and
    region together (credentials come from the environment)."""
    whole = []
    for path in LINKED_DOCS:
        for block in code_blocks(path):
            if block.language != "toml":
                continue
            values = tomllib.loads(block.code)
            if values.get("managedLedgerOffloadDriver") == "aws-s3":
                whole.append(values)
    assert any(
        {"managedLedgerOffloadBucket", "managedLedgerOffloadServiceEndpoint", "managedLedgerOffloadRegion"} <= set(v)
        for v in whole
    )
    for values in whole:
        parse_config(values, source="the docs")

"""Options shared by several verbs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def parse_driver_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``("bucket=b", "create=false")`` -> ``{"bucket": "b", "create": False}``."""
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--option")
        lowered = value.lower()
        number = value.isascii() and value.isdigit()
        options[name] = {"true": True, "false": False}.get(lowered, int(value) if number else value)
    return options


def driver_options(command: F) -> F:
    """Adds ``-o/--option KEY=VALUE`` (repeatable) for the storage driver."""
    return click.option(
        "-o",
        "--option",
        "options",
        multiple=True,
        metavar="KEY=VALUE",
        help="Storage-driver option (repeatable), e.g. -o endpoint=http://127.0.0.1:9000.",
    )(command)

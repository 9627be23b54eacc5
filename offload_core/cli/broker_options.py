"""The options every broker verb takes (``--data-dir``, ``--config``) and
opening the embedded broker they name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..model import Position

# The broker loads when a verb opens it, not to parse the options.
if TYPE_CHECKING:
    from ..managed_ledger import Broker

__all__ = ["broker_options", "opened", "parse_position"]

F = TypeVar("F", bound=Callable[..., Any])


def broker_options(command: F) -> F:
    command = click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Broker config (TOML, Pulsar key names).",
    )(command)
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False),
        default="./offload-data",
        show_default=True,
        help="Hot tier, metadata and default bucket.",
    )(command)


@contextmanager
def opened(data_dir: str, config_path: str | None) -> Iterator[Broker]:
    from ..managed_ledger import Broker, load_config

    broker = Broker(data_dir, load_config(config_path))
    try:
        yield broker
    finally:
        broker.close()


def parse_position(text: str | None) -> Position | None:
    return None if text is None else Position.parse(text)

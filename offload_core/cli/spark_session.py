"""The Spark session and ``--master`` option the ``offload spark`` verbs share."""

from __future__ import annotations

from typing import Any

import click

from ..errors import ConfigError

__all__ = ["master_option", "printer", "spark_session"]

master_option = click.option(
    "--master", default=None, help="Spark master (default: the spark-submit one, else local[*])."
)


def spark_session(master: str | None) -> Any:
    """The session the verbs run on; :class:`ConfigError` saying what to
    install when PySpark is missing."""
    try:
        from ..spark.session import get_session
    except ImportError as exc:
        raise ConfigError(
            f"the spark verbs need PySpark ({exc}): pip install -e '.[spark]' in a clone of offload-core"
        ) from None
    return get_session(master)


def printer(progress: Any) -> None:
    """Prints a job's progress on stderr."""
    click.echo(f"{progress.description}: {progress.done}/{progress.total} tasks", err=True)

"""Example offload-core driver storing objects in one SQLite file."""

from .driver import SqliteDriver

__all__ = ["SqliteDriver"]

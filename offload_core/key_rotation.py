"""Re-wrapping the data keys of encrypted objects under the keyring's
active key, without rewriting their data (``offload keys rotate``).

Each object's transform chain is in its metadata; a transform with a
``rewrap(params)`` method (``aes-gcm``) returns new parameters when the key
that wraps the object's data key is not the active one. The object's
metadata is then replaced in place (:meth:`StorageDriver.replace_metadata`),
one object at a time: a rotation stopped half way leaves every object
readable (the old key must stay in the keyring until a run finishes), and
running it again finishes the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import NotFoundError
from .hooks import Transform
from .storage import StorageDriver
from .transforming_driver import CHAIN_KEY, damaged_chain, encode_chain

__all__ = ["Rotated", "rotate_keys"]


@dataclass(frozen=True)
class Rotated:
    """One object looked at: ``changed`` says whether its keys were re-wrapped."""

    key: str
    changed: bool


def rotate_keys(
    driver: StorageDriver, lookup: Callable[..., Transform], prefix: str = "", *, dry_run: bool = False
) -> Iterator[Rotated]:
    """Re-wrap every transformed object's keys under ``prefix`` (``driver``
    is the plain store, not a transforming one). Raises what the keyring
    raises (a key id it lacks), :class:`FormatError` for a damaged chain, and
    :class:`ConfigError` from a driver that cannot replace metadata."""
    for listed in driver.list(prefix):
        try:
            info = driver.stat(listed.key)
        except NotFoundError:
            continue  # deleted since the listing
        chain = info.metadata.get(CHAIN_KEY)
        if chain is None:
            continue
        steps = _steps(listed.key, chain)
        changed = False
        for step in steps:
            rewrap = getattr(lookup(step["name"], distribution=step["distribution"]), "rewrap", None)
            fresh = rewrap(step["params"]) if rewrap is not None else None
            if fresh is not None:
                step["params"] = dict(fresh)
                changed = True
        if changed and not dry_run:
            driver.replace_metadata(listed.key, {**info.metadata, CHAIN_KEY: encode_chain(steps)})
        yield Rotated(listed.key, changed)


def _steps(key: str, chain: str) -> list[dict[str, Any]]:
    try:
        steps = json.loads(chain)
        if not isinstance(steps, list) or not all(isinstance(s, dict) and "name" in s for s in steps):
            raise ValueError("not a list of transforms")
        for step in steps:
            step.setdefault("distribution", None)
            step.setdefault("params", {})
        return steps
    except ValueError:
        raise damaged_chain(key) from None

"""Re-wrapping the data keys of encrypted objects under the keyring's
active key, without rewriting their data (``offload keys rotate``), and
finding the objects whose data keys a key still wraps (``offload keys
retire``).

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
from .model import ObjectInfo
from .storage import StorageDriver
from .transforming_driver import CHAIN_KEY, damaged_chain, encode_chain

__all__ = ["Rotated", "objects_wrapped_with", "rotate_keys"]


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
    for info, steps in _transformed(driver, prefix):
        changed = False
        for step in steps:
            rewrap = getattr(lookup(step["name"], distribution=step["distribution"]), "rewrap", None)
            fresh = rewrap(step["params"]) if rewrap is not None else None
            if fresh is not None:
                step["params"] = dict(fresh)
                changed = True
        if changed and not dry_run:
            driver.replace_metadata(info.key, {**info.metadata, CHAIN_KEY: encode_chain(steps)})
        yield Rotated(info.key, changed)


def objects_wrapped_with(
    driver: StorageDriver, lookup: Callable[..., Transform], key_id: str, prefix: str = ""
) -> Iterator[str]:
    """The keys of the transformed objects under ``prefix`` (``driver`` is
    the plain store) whose chain has a step wrapped under ``key_id``, as
    its transform's ``wrapping_key_id(params)`` says (transforms without
    that method wrap nothing). Raises :class:`FormatError` for a damaged
    chain."""
    for info, steps in _transformed(driver, prefix):
        for step in steps:
            wrapping_key_id = getattr(lookup(step["name"], distribution=step["distribution"]), "wrapping_key_id", None)
            if wrapping_key_id is not None and wrapping_key_id(step["params"]) == key_id:
                yield info.key
                break


def _transformed(driver: StorageDriver, prefix: str) -> Iterator[tuple[ObjectInfo, list[dict[str, Any]]]]:
    """Each object under ``prefix`` written through transforms, with its chain's steps."""
    for listed in driver.list(prefix):
        try:
            info = driver.stat(listed.key)
        except NotFoundError:
            continue  # deleted since the listing
        chain = info.metadata.get(CHAIN_KEY)
        if chain is not None:
            yield info, _steps(listed.key, chain)


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

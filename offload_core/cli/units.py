"""Pulsar's size and duration syntax for the command line. Pure.

Sizes as pulsar-admin takes them: a number of bytes with an optional
``k``, ``m``, ``g`` or ``t`` (powers of 1024, any case): ``10M``, ``1G``.
Durations as Pulsar's ``RelativeTimeUtil``: a number with ``s``, ``m``,
``h``, ``d``, ``w`` or ``y`` (a bare number is seconds): ``30s``, ``4h``.
``-1`` means "off" where a setting allows it.
"""

from __future__ import annotations

import re

from ..errors import ConfigError

__all__ = ["parse_duration_ms", "parse_size"]

_SIZE = re.compile(r"^(-1|\d+)([kmgt]?)$", re.IGNORECASE)
_DURATION = re.compile(r"^(-1|\d+)([smhdwy]?)$", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_DURATION_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_size(text: str, *, what: str, allow_off: bool = False) -> int:
    """Bytes in ``text`` (``10M`` is 10 MiB); ``-1`` only with ``allow_off``.
    Raises :class:`ConfigError` naming ``what`` and the syntax."""
    match = _SIZE.match(text.strip())
    if match is None or (match[1] == "-1" and (match[2] or not allow_off)):
        off = " or -1 (off)" if allow_off else ""
        raise ConfigError(f"{what} {text!r} is not a size: write bytes with an optional k, m, g or t, e.g. 10M{off}")
    if match[1] == "-1":
        return -1
    value = int(match[1]) * _SIZE_FACTORS[match[2].lower()]
    if value > 2**63 - 1:
        raise ConfigError(f"{what} {text!r} is too large")
    return value


def parse_duration_ms(text: str, *, what: str, allow_off: bool = False) -> int:
    """Milliseconds in ``text`` (``4h``, ``30s``, a bare number of seconds);
    ``-1`` only with ``allow_off``. Raises :class:`ConfigError`."""
    match = _DURATION.match(text.strip())
    if match is None or (match[1] == "-1" and (match[2] or not allow_off)):
        off = " or -1 (off)" if allow_off else ""
        raise ConfigError(f"{what} {text!r} is not a duration: write a number with s, m, h, d, w or y, e.g. 4h{off}")
    if match[1] == "-1":
        return -1
    value = int(match[1]) * _DURATION_SECONDS[match[2].lower()] * 1000
    if value > 2**63 - 1:
        raise ConfigError(f"{what} {text!r} is too long")
    return value

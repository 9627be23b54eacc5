"""The Hadoop profile Pulsar's file-system offloader reads
(``fileSystemProfilePath``, comma-separated XML files as Hadoop's
``Configuration.addResource`` takes them; Pulsar ships
``conf/filesystem_offload_core_site.xml``), and where it puts ledgers.

The keys that shape the files: ``hadoop.tmp.dir`` (the directory ledgers
go under, Pulsar's ``storageBasePath``), ``fs.defaultFS`` (the file
system, when ``fileSystemURI`` does not name one),
``io.seqfile.compression.type`` (``BLOCK`` in Pulsar's profile, Hadoop's
default ``RECORD``), ``io.seqfile.compress.blocksize`` and
``io.map.index.interval``. Hadoop's ``MapFile.Writer``, called as Pulsar
calls it, always compresses with ``DefaultCodec`` (zlib); a profile
naming another codec in ``io.seqfile.compression.codec`` is refused.
"""

from __future__ import annotations

import getpass
import os
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError
from ...formats.mapfile import DEFAULT_INDEX_INTERVAL
from ...formats.sequence_file import DEFAULT_CODEC, Compression
from ...formats.sequence_file_writer import DEFAULT_BLOCK_SIZE

__all__ = ["HadoopProfile", "read_profile", "storage_url"]

_VARIABLE = re.compile(r"\$\{([^}]+)\}")
_CODEC_KEY = "io.seqfile.compression.codec"


@dataclass(frozen=True)
class HadoopProfile:
    """What the offloader takes from a Hadoop profile (Hadoop's defaults
    where a key is absent)."""

    default_fs: str = ""
    tmp_dir: str = "/tmp/hadoop-${user.name}"
    compression: Compression = Compression.RECORD
    block_size: int = DEFAULT_BLOCK_SIZE
    index_interval: int = DEFAULT_INDEX_INTERVAL


def read_profile(paths: str | None) -> HadoopProfile:
    """The profile from ``paths`` (comma-separated; later files override
    earlier ones, as in Hadoop); Hadoop's defaults for ``None`` or "".
    Raises :class:`ConfigError` naming the file for one that is missing or
    not a Hadoop configuration, and naming the key for a bad value."""
    values: dict[str, str] = {}
    for path in (p.strip() for p in (paths or "").split(",") if p.strip()):
        values.update(_properties(Path(path)))
    return _profile(values, paths or "")


def _properties(path: Path) -> dict[str, str]:
    try:
        root = ElementTree.fromstring(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"fileSystemProfilePath names {str(path)!r}, which does not exist") from None
    except OSError as exc:
        raise ConfigError(f"fileSystemProfilePath {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    except ElementTree.ParseError as exc:
        raise ConfigError(f"fileSystemProfilePath {str(path)!r} is not XML: {exc}") from None
    if root.tag != "configuration":
        raise ConfigError(f"fileSystemProfilePath {str(path)!r} is not a Hadoop <configuration> file")
    found = {}
    for prop in root.iter("property"):
        name = (prop.findtext("name") or "").strip()
        if name:
            found[name] = (prop.findtext("value") or "").strip()
    return found


def _profile(values: Mapping[str, str], source: str) -> HadoopProfile:
    def expand(key: str, depth: int = 0) -> str:
        text = values[key]
        if depth > 20:
            raise ConfigError(f"{key} in {source!r}: variables refer to each other in a loop")

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == "user.name":
                return getpass.getuser()
            if name in values:
                return expand(name, depth + 1)
            if name in os.environ:
                return os.environ[name]
            raise ConfigError(f"{key} in {source!r} uses ${{{name}}}, which nothing defines")

        return _VARIABLE.sub(one, text)

    def number(key: str, default: int) -> int:
        if key not in values:
            return default
        text = expand(key)
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(f"{key} in {source!r} must be a positive integer, got {text!r}")
        return int(text)

    codec = expand(_CODEC_KEY) if _CODEC_KEY in values else DEFAULT_CODEC
    if codec != DEFAULT_CODEC:
        raise ConfigError(f"{_CODEC_KEY} in {source!r} is {codec!r}; only {DEFAULT_CODEC} (zlib) is supported")
    compression = Compression.RECORD
    if "io.seqfile.compression.type" in values:
        text = expand("io.seqfile.compression.type").upper()
        if text not in Compression.__members__:
            raise ConfigError(f"io.seqfile.compression.type in {source!r} is {text!r}; use BLOCK, RECORD or NONE")
        compression = Compression[text]
    return HadoopProfile(
        default_fs=expand("fs.defaultFS") if "fs.defaultFS" in values else "",
        tmp_dir=expand("hadoop.tmp.dir")
        if "hadoop.tmp.dir" in values
        else HadoopProfile.tmp_dir.replace("${user.name}", getpass.getuser()),
        compression=compression,
        block_size=number("io.seqfile.compress.blocksize", DEFAULT_BLOCK_SIZE),
        index_interval=number("io.map.index.interval", DEFAULT_INDEX_INTERVAL),
    )


def storage_url(file_system_uri: str, tmp_dir: str) -> str:
    """The URL of the directory ledgers go under: ``tmp_dir`` on the file
    system ``file_system_uri`` names (``file:///`` when empty, Hadoop's
    default). A relative ``tmp_dir`` (Pulsar's
    profile says ``pulsar``) is resolved as Hadoop resolves it: against the
    working directory on ``file://`` (made absolute now, so a later
    working directory changes nothing), against ``/user/{user}`` on HDFS.
    Raises :class:`ConfigError` for a URI that is neither."""
    scheme, _, rest = (file_system_uri or "file:///").partition("://")
    scheme = scheme.lower()
    if scheme == "file":
        base = tmp_dir if tmp_dir.startswith("/") else os.path.join(os.getcwd(), tmp_dir)
        return "file://" + os.path.normpath(base)
    if scheme in ("hdfs", "webhdfs"):
        authority = rest.split("/", 1)[0]
        base = tmp_dir if tmp_dir.startswith("/") else f"/user/{getpass.getuser()}/{tmp_dir}"
        return f"{scheme}://{authority}{os.path.normpath(base)}"
    raise ConfigError(
        f"fileSystemURI must be file:///... or hdfs://namenode:port, not {file_system_uri!r} "
        "(or leave it out and set fs.defaultFS in the fileSystemProfilePath profile)"
    )

"""A Kafka broker's properties file, read as Aiven's plugin reads it
(``RemoteStorageManagerConfig`` and its storage backends' configs), and
mapped onto our drivers.

The broker hands the plugin every ``rsm.config.*`` property with that
prefix stripped. What reading needs of them: ``key.prefix``,
``encryption.enabled`` with ``encryption.key.pair.id``,
``encryption.key.pairs`` and each pair's
``encryption.key.pairs.<id>.public.key.file`` / ``.private.key.file``
(every listed pair's private key, since older segments may be wrapped
with an older pair), and ``storage.backend.class`` with its ``storage.*``
keys. ``chunk.size`` and ``compression.enabled`` are checked as the plugin
checks them (a reader takes both from each segment's manifest). Keys the
plugin defines for other jobs (caches, rate limits, metrics) are ignored,
as Kafka's ``ConfigDef`` ignores keys it does not define.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .java_properties import parse_properties

__all__ = [
    "RSM_CONFIG_PREFIX",
    "AivenConfig",
    "load_config",
    "parse_config",
]

RSM_CONFIG_PREFIX = "rsm.config."
_STORAGE_PACKAGE = "io.aiven.kafka.tieredstorage.storage."
S3_BACKEND = _STORAGE_PACKAGE + "s3.S3Storage"
GCS_BACKEND = _STORAGE_PACKAGE + "gcs.GcsStorage"
AZURE_BACKEND = _STORAGE_PACKAGE + "azure.AzureBlobStorage"
FILESYSTEM_BACKEND = _STORAGE_PACKAGE + "filesystem.FileSystemStorage"
_MAX_CHUNK_SIZE = (2**31 - 1) // 2  # ConfigDef.Range.between(1, Integer.MAX_VALUE / 2)


@dataclass(frozen=True)
class AivenConfig:
    """What a reader of the plugin's objects needs: where they are (a
    driver URL and its options), the key prefix, and the private key PEM
    of every key pair (by id). ``driver_options`` may hold credentials:
    never print them."""

    url: str
    key_prefix: str = ""
    driver_options: dict[str, Any] = field(default_factory=dict, repr=False)
    private_keys: dict[str, bytes] = field(default_factory=dict, repr=False)
    active_key_pair_id: str | None = None


def load_config(path: Path, overrides: Mapping[str, str] | None = None) -> AivenConfig:
    """The plugin's configuration in the broker properties file ``path``
    (its ``rsm.config.*`` keys), each of ``overrides`` (full
    ``rsm.config.*`` names) replacing the file's. Raises
    :class:`ConfigError` naming the file it cannot read, or as
    :func:`parse_config` does."""
    try:
        text = path.read_text(encoding="latin-1")  # java.util.Properties.load(InputStream) reads ISO 8859-1
    except OSError as error:
        raise ConfigError(f"cannot read the broker properties file {str(path)!r} ({error.strerror})") from None
    properties = parse_properties(text)
    properties.update(overrides or {})
    return parse_config(properties, base=path.parent)


def parse_config(properties: Mapping[str, str], *, base: Path | None = None) -> AivenConfig:
    """The plugin's configuration in broker ``properties`` (only the
    ``rsm.config.*`` ones are read); relative key-file paths are taken
    from ``base`` (the properties file's directory). Raises
    :class:`ConfigError` naming the (full) key of a value missing, unknown
    or invalid, or of a key file that does not read; never quoting a
    secret."""
    rsm = {k[len(RSM_CONFIG_PREFIX) :]: v for k, v in properties.items() if k.startswith(RSM_CONFIG_PREFIX)}
    if "chunk.size" in rsm:
        _integer(rsm, "chunk.size", 1, _MAX_CHUNK_SIZE)
    compression = _boolean(rsm, "compression.enabled")
    if _boolean(rsm, "compression.heuristic.enabled") and not compression:
        raise ConfigError(f"{_name('compression.heuristic.enabled')} needs {_name('compression.enabled')}=true")
    url, options = _storage(rsm)
    private_keys: dict[str, bytes] = {}
    active = None
    if _boolean(rsm, "encryption.enabled"):
        active = _required(rsm, "encryption.key.pair.id")
        pairs = [p.strip() for p in _required(rsm, "encryption.key.pairs").split(",") if p.strip()]
        if active not in pairs:
            raise ConfigError(f"{_name('encryption.key.pair.id')} is {active!r}, which "
                              f"{_name('encryption.key.pairs')} does not list ({', '.join(pairs)})")  # fmt: skip
        for pair in pairs:
            _required(rsm, f"encryption.key.pairs.{pair}.public.key.file")
            private_keys[pair] = _key_file(rsm, f"encryption.key.pairs.{pair}.private.key.file", base)
    return AivenConfig(url, rsm.get("key.prefix", ""), options, private_keys, active)


def _storage(rsm: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    backend = _required(rsm, "storage.backend.class").strip()
    if backend == S3_BACKEND:
        options: dict[str, Any] = _renamed(rsm, {"storage.s3.region": "region", "storage.s3.endpoint.url": "endpoint",
                                                 "storage.aws.access.key.id": "access_key_id",
                                                 "storage.aws.secret.access.key": "secret_access_key",
                                                 "storage.aws.session.token": "session_token"})  # fmt: skip
        # Our S3 driver addresses a custom endpoint path style, AWS virtual-host style, as the SDK does by default.
        _boolean(rsm, "storage.s3.path.style.access.enabled")
        return f"s3://{_bucket(rsm, 'storage.s3.bucket.name')}", options
    if backend == GCS_BACKEND:
        options = _renamed(rsm, {"storage.gcs.endpoint.url": "endpoint"})
        if "storage.gcs.credentials.json" in rsm:
            try:
                options["token"] = json.loads(rsm["storage.gcs.credentials.json"])
            except json.JSONDecodeError:
                raise ConfigError(f"{_name('storage.gcs.credentials.json')} is not JSON") from None
        elif "storage.gcs.credentials.path" in rsm:
            options["token"] = rsm["storage.gcs.credentials.path"]
        elif _boolean(rsm, "storage.gcs.credentials.default"):
            options["token"] = "google_default"
        return f"gs://{_bucket(rsm, 'storage.gcs.bucket.name')}", options
    if backend == AZURE_BACKEND:
        options = _renamed(rsm, {"storage.azure.account.name": "account_name",
                                 "storage.azure.account.key": "account_key", "storage.azure.sas.token": "sas_token",
                                 "storage.azure.endpoint.url": "endpoint",
                                 "storage.azure.connection.string": "connection_string"})  # fmt: skip
        return f"az://{_bucket(rsm, 'storage.azure.container.name')}", options
    if backend == FILESYSTEM_BACKEND:
        return f"file://{_required(rsm, 'storage.root')}", {"create": False}
    raise ConfigError(
        f"{_name('storage.backend.class')} is {backend!r}, a backend we cannot map onto a driver: use one of "
        f"{', '.join((S3_BACKEND, GCS_BACKEND, AZURE_BACKEND, FILESYSTEM_BACKEND))}"
    )


def _name(key: str) -> str:
    return RSM_CONFIG_PREFIX + key


def _required(rsm: Mapping[str, str], key: str) -> str:
    value = rsm.get(key, "").strip()
    if not value:
        raise ConfigError(f"{_name(key)} is missing: the plugin needs it")
    return value


def _bucket(rsm: Mapping[str, str], key: str) -> str:
    value = _required(rsm, key)
    if "/" in value:
        raise ConfigError(f"{_name(key)} is {value!r}: a bucket or container name has no '/'")
    return value


def _renamed(rsm: Mapping[str, str], names: Mapping[str, str]) -> dict[str, Any]:
    return {option: rsm[key].strip() for key, option in names.items() if rsm.get(key, "").strip()}


def _boolean(rsm: Mapping[str, str], key: str) -> bool:
    """As ``ConfigDef.Type.BOOLEAN`` parses: ``true``/``false`` in any case, trimmed; absent is false."""
    value = rsm.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{_name(key)} is {rsm[key]!r}: expected true or false")
    return value == "true"


def _integer(rsm: Mapping[str, str], key: str, low: int, high: int) -> int:
    text = rsm[key].strip()
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{_name(key)} is {text!r}, not an integer") from None
    if not low <= value <= high:
        raise ConfigError(f"{_name(key)} is {value}: it must be from {low} to {high}")
    return value


def _key_file(rsm: Mapping[str, str], key: str, base: Path | None) -> bytes:
    path = Path(_required(rsm, key))
    if base is not None and not path.is_absolute():
        path = base / path
    try:
        return path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{_name(key)}: cannot read {str(path)!r} ({error.strerror})") from None

"""A Kafka broker's properties file, read as Aiven's plugin reads it
(``RemoteStorageManagerConfig`` and its storage backends' configs), and
mapped onto our drivers: one reading for every verb, whether it reads the
plugin's objects or writes them.

The broker hands the plugin every property under its
``remote.log.storage.manager.impl.prefix`` (``rsm.config.`` by default)
with that prefix stripped. What reading needs of them: ``key.prefix``,
``encryption.enabled`` with ``encryption.key.pair.id``,
``encryption.key.pairs`` and each pair's
``encryption.key.pairs.<id>.public.key.file`` / ``.private.key.file``
(every listed pair's private key, since older segments may be wrapped
with an older pair), and ``storage.backend.class`` with its ``storage.*``
keys. Writing needs ``chunk.size``, ``compression.enabled``,
``compression.heuristic.enabled``, ``segment.format``,
``custom.metadata.fields.include`` and the active pair's public key too
(a reader takes chunking and compression from each segment's manifest,
so they are only checked for it). Keys the plugin defines for other jobs
(caches, rate limits, metrics) are ignored, as Kafka's ``ConfigDef``
ignores keys it does not define.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .custom_metadata import CustomMetadataField
from .java_properties import parse_properties

__all__ = [
    "RSM_CONFIG_PREFIX",
    "RSM_PREFIX_KEY",
    "AivenConfig",
    "load_config",
    "parse_config",
    "read_properties",
    "rsm_properties",
]

RSM_CONFIG_PREFIX = "rsm.config."
RSM_PREFIX_KEY = "remote.log.storage.manager.impl.prefix"
_STORAGE_PACKAGE = "io.aiven.kafka.tieredstorage.storage."
S3_BACKEND = _STORAGE_PACKAGE + "s3.S3Storage"
GCS_BACKEND = _STORAGE_PACKAGE + "gcs.GcsStorage"
AZURE_BACKEND = _STORAGE_PACKAGE + "azure.AzureBlobStorage"
FILESYSTEM_BACKEND = _STORAGE_PACKAGE + "filesystem.FileSystemStorage"
_MAX_CHUNK_SIZE = (2**31 - 1) // 2  # ConfigDef.Range.between(1, Integer.MAX_VALUE / 2)


@dataclass(frozen=True)
class AivenConfig:
    """The plugin's configuration. For reading: where its objects are (a
    driver URL and its options), the key prefix, and the private key PEM
    of every key pair (by id). For writing, also: ``chunk_size`` (None
    when unset: only a writer needs it), the compression flags, the
    custom metadata fields to return, and the public key file of the
    active pair (read by the writer). ``driver_options`` may hold
    credentials: never print them."""

    url: str
    key_prefix: str = ""
    driver_options: dict[str, Any] = field(default_factory=dict, repr=False)
    private_keys: dict[str, bytes] = field(default_factory=dict, repr=False)
    active_key_pair_id: str | None = None
    chunk_size: int | None = None
    compression: bool = False
    compression_heuristic: bool = False
    custom_metadata_fields: tuple[CustomMetadataField, ...] = ()
    active_public_key_file: Path | None = None
    rsm_prefix: str = RSM_CONFIG_PREFIX


def load_config(path: Path, overrides: Mapping[str, str] | None = None) -> AivenConfig:
    """The plugin's configuration in the broker properties file ``path``,
    each of ``overrides`` (full property names) replacing the file's.
    Raises :class:`ConfigError` naming the file, for one it cannot read or
    as :func:`parse_config` does."""
    properties = read_properties(path)
    properties.update(overrides or {})
    try:
        return parse_config(properties, base=path.parent)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def read_properties(path: Path) -> dict[str, str]:
    """Every property in the broker properties file ``path`` (full names).
    Raises :class:`ConfigError` naming the file when it cannot be read."""
    try:
        text = path.read_text(encoding="latin-1")  # java.util.Properties.load(InputStream) reads ISO 8859-1
    except OSError as error:
        raise ConfigError(f"cannot read the broker properties file {str(path)!r} ({error.strerror})") from None
    return parse_properties(text)


def rsm_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """The ``rsm.config.*`` properties among ``properties``, prefix stripped:
    what Kafka hands a RemoteStorageManager (ours reads them with
    :func:`offload_core.rsm.settings.parse_settings`)."""
    return {k[len(RSM_CONFIG_PREFIX) :]: v for k, v in properties.items() if k.startswith(RSM_CONFIG_PREFIX)}


def parse_config(properties: Mapping[str, str], *, base: Path | None = None) -> AivenConfig:
    """The plugin's configuration in broker ``properties`` (only those
    under its prefix are read); relative key-file paths are taken from
    ``base`` (the properties file's directory). Raises
    :class:`ConfigError` naming the (full) key of a value missing, unknown
    or invalid, or of a private key file that does not read; never
    quoting a secret."""
    rsm = _Keys(properties)
    chunk_size = rsm.integer("chunk.size", 1, _MAX_CHUNK_SIZE) if "chunk.size" in rsm.values else None
    compression = rsm.boolean("compression.enabled")
    heuristic = rsm.boolean("compression.heuristic.enabled")
    if heuristic and not compression:
        raise ConfigError(f"{rsm.name('compression.heuristic.enabled')} needs {rsm.name('compression.enabled')}=true")
    segment_format = rsm.values.get("segment.format", "kafka").strip()
    if segment_format != "kafka":
        raise ConfigError(f"{rsm.name('segment.format')} is {segment_format!r}: only 'kafka' segments are supported")
    try:
        fields = CustomMetadataField.parse(rsm.values.get("custom.metadata.fields.include", ""))
    except ConfigError as error:
        raise ConfigError(f"{rsm.prefix}{error}") from None
    url, options = _storage(rsm)
    private_keys: dict[str, bytes] = {}
    active = public_key_file = None
    if rsm.boolean("encryption.enabled"):
        active = rsm.required("encryption.key.pair.id")
        pairs = [p.strip() for p in rsm.required("encryption.key.pairs").split(",") if p.strip()]
        if active not in pairs:
            raise ConfigError(f"{rsm.name('encryption.key.pair.id')} is {active!r}, which "
                              f"{rsm.name('encryption.key.pairs')} does not list ({', '.join(pairs)})")  # fmt: skip
        for pair in pairs:
            public = rsm.path(f"encryption.key.pairs.{pair}.public.key.file", base)
            if pair == active:
                public_key_file = public
            private_keys[pair] = rsm.key_file(f"encryption.key.pairs.{pair}.private.key.file", base)
    return AivenConfig(url, rsm.values.get("key.prefix", ""), options, private_keys, active, chunk_size,
                       compression, heuristic, fields, public_key_file, rsm.prefix)  # fmt: skip


class _Keys:
    """The plugin's properties (its prefix stripped), and how each kind of
    value is read; errors name the full property."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self.prefix = properties.get(RSM_PREFIX_KEY, RSM_CONFIG_PREFIX)
        self.values = {k[len(self.prefix) :]: v for k, v in properties.items() if k.startswith(self.prefix)}

    def name(self, key: str) -> str:
        return self.prefix + key

    def required(self, key: str) -> str:
        value = self.values.get(key, "").strip()
        if not value:
            raise ConfigError(f"{self.name(key)} is missing: the plugin needs it")
        return value

    def bucket(self, key: str) -> str:
        value = self.required(key)
        if "/" in value:
            raise ConfigError(f"{self.name(key)} is {value!r}: a bucket or container name has no '/'")
        return value

    def renamed(self, names: Mapping[str, str]) -> dict[str, Any]:
        return {option: self.values[key].strip() for key, option in names.items() if self.values.get(key, "").strip()}

    def boolean(self, key: str) -> bool:
        """As ``ConfigDef.Type.BOOLEAN`` parses: ``true``/``false`` in any case, trimmed; absent is false."""
        value = self.values.get(key, "false").strip().lower()
        if value not in ("true", "false"):
            raise ConfigError(f"{self.name(key)} is {self.values[key]!r}: expected true or false")
        return value == "true"

    def integer(self, key: str, low: int, high: int) -> int:
        text = self.values[key].strip()
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"{self.name(key)} is {text!r}, not an integer") from None
        if not low <= value <= high:
            raise ConfigError(f"{self.name(key)} is {value}: it must be from {low} to {high}")
        return value

    def path(self, key: str, base: Path | None) -> Path:
        path = Path(self.required(key))
        return base / path if base is not None and not path.is_absolute() else path

    def key_file(self, key: str, base: Path | None) -> bytes:
        path = self.path(key, base)
        try:
            return path.read_bytes()
        except OSError as error:
            raise ConfigError(f"{self.name(key)}: cannot read {str(path)!r} ({error.strerror})") from None


def _storage(rsm: _Keys) -> tuple[str, dict[str, Any]]:
    backend = rsm.required("storage.backend.class")
    if backend == S3_BACKEND:
        options: dict[str, Any] = rsm.renamed({"storage.s3.region": "region", "storage.s3.endpoint.url": "endpoint",
                                               "storage.aws.access.key.id": "access_key_id",
                                               "storage.aws.secret.access.key": "secret_access_key",
                                               "storage.aws.session.token": "session_token"})  # fmt: skip
        # Our S3 driver addresses a custom endpoint path style, AWS virtual-host style, as the SDK does by default.
        rsm.boolean("storage.s3.path.style.access.enabled")
        return f"s3://{rsm.bucket('storage.s3.bucket.name')}", options
    if backend == GCS_BACKEND:
        options = rsm.renamed({"storage.gcs.endpoint.url": "endpoint"})
        if "storage.gcs.credentials.json" in rsm.values:
            try:
                options["token"] = json.loads(rsm.values["storage.gcs.credentials.json"])
            except json.JSONDecodeError:
                raise ConfigError(f"{rsm.name('storage.gcs.credentials.json')} is not JSON") from None
        elif "storage.gcs.credentials.path" in rsm.values:
            options["token"] = rsm.values["storage.gcs.credentials.path"]
        elif rsm.boolean("storage.gcs.credentials.default"):
            options["token"] = "google_default"
        return f"gs://{rsm.bucket('storage.gcs.bucket.name')}", options
    if backend == AZURE_BACKEND:
        options = rsm.renamed({"storage.azure.account.name": "account_name",
                               "storage.azure.account.key": "account_key", "storage.azure.sas.token": "sas_token",
                               "storage.azure.endpoint.url": "endpoint",
                               "storage.azure.connection.string": "connection_string"})  # fmt: skip
        return f"az://{rsm.bucket('storage.azure.container.name')}", options
    if backend == FILESYSTEM_BACKEND:
        return f"file://{rsm.required('storage.root')}", {"create": False}
    raise ConfigError(
        f"{rsm.name('storage.backend.class')} is {backend!r}, a backend we cannot map onto a driver: use one of "
        f"{', '.join((S3_BACKEND, GCS_BACKEND, AZURE_BACKEND, FILESYSTEM_BACKEND))}"
    )

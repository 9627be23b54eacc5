"""Reading a broker's properties file as Aiven's plugin reads its rsm.config.* keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.errors import ConfigError
from offload_core.rsm.aiven.config import load_config, parse_config
from offload_core.rsm.aiven.java_properties import parse_properties
from tests.aiven_vectors import AIVEN

S3 = "io.aiven.kafka.tieredstorage.storage.s3.S3Storage"


def test_java_properties_syntax() -> None:
    text = (
        "# comment\n! also a comment \\\n"
        "  plain=value\n"
        "colon : spaced value  \n"
        "blank separated\n"
        "cont = first, \\\n      second\r\n"
        "esc\\=aped\\ key=tab\\there\\u0041\\\\\n"
        "empty=\n"
        "plain=later wins\n"
    )
    assert parse_properties(text) == {
        "plain": "later wins",
        "colon": "spaced value  ",
        "blank": "separated",
        "cont": "first, second",
        "esc=aped key": "tab\there" + "A\\",
        "empty": "",
    }


def test_bad_unicode_escape_names_the_line() -> None:
    with pytest.raises(ConfigError, match="line 2"):
        parse_properties("a=b\nc=\\u00zz\n")


def _s3(**extra: str) -> dict[str, str]:
    return {"rsm.config.storage.backend.class": S3, "rsm.config.storage.s3.bucket.name": "tiered",
            "rsm.config.chunk.size": "4194304", **extra}  # fmt: skip


def test_s3_backend_maps_onto_our_s3_driver() -> None:
    config = parse_config(_s3(**{
        "rsm.config.storage.s3.region": "eu-west-1",
        "rsm.config.storage.s3.endpoint.url": "http://127.0.0.1:9000",
        "rsm.config.storage.aws.access.key.id": "AKID",
        "rsm.config.storage.aws.secret.access.key": "s3cr3t",
        "rsm.config.storage.s3.path.style.access.enabled": "true",
        "rsm.config.key.prefix": "tiered/",
        "remote.log.storage.system.enable": "true",
    }))  # fmt: skip
    assert config.url == "s3://tiered"
    assert config.key_prefix == "tiered/"
    assert config.driver_options == {"region": "eu-west-1", "endpoint": "http://127.0.0.1:9000",
                                     "access_key_id": "AKID", "secret_access_key": "s3cr3t"}  # fmt: skip
    assert "s3cr3t" not in repr(config)


def test_gcs_azure_and_filesystem_backends() -> None:
    package = "io.aiven.kafka.tieredstorage.storage."
    gcs = parse_config({"rsm.config.storage.backend.class": package + "gcs.GcsStorage",
                        "rsm.config.storage.gcs.bucket.name": "b", "rsm.config.storage.gcs.endpoint.url": "http://h:1",
                        "rsm.config.storage.gcs.credentials.json": '{"type": "x"}'})  # fmt: skip
    assert (gcs.url, gcs.driver_options) == ("gs://b", {"endpoint": "http://h:1", "token": {"type": "x"}})
    azure = parse_config({"rsm.config.storage.backend.class": package + "azure.AzureBlobStorage",
                          "rsm.config.storage.azure.container.name": "c",
                          "rsm.config.storage.azure.account.name": "acct",
                          "rsm.config.storage.azure.account.key": "k3y"})  # fmt: skip
    assert (azure.url, azure.driver_options) == ("az://c", {"account_name": "acct", "account_key": "k3y"})
    local = parse_config({"rsm.config.storage.backend.class": package + "filesystem.FileSystemStorage",
                          "rsm.config.storage.root": "/var/tiered"})  # fmt: skip
    assert (local.url, local.driver_options) == ("file:///var/tiered", {"create": False})


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"rsm.config.storage.backend.class": "com.example.Mine"}, "rsm.config.storage.backend.class"),
        ({}, "rsm.config.storage.backend.class"),
        (_s3(**{"rsm.config.storage.s3.bucket.name": ""}), "rsm.config.storage.s3.bucket.name"),
        (_s3(**{"rsm.config.chunk.size": "0"}), "rsm.config.chunk.size"),
        (_s3(**{"rsm.config.chunk.size": "big"}), "rsm.config.chunk.size"),
        (_s3(**{"rsm.config.compression.enabled": "yes"}), "rsm.config.compression.enabled"),
        (_s3(**{"rsm.config.encryption.enabled": "true"}), "rsm.config.encryption.key.pair.id"),
        (
            _s3(
                **{
                    "rsm.config.encryption.enabled": "true",
                    "rsm.config.encryption.key.pair.id": "k1",
                    "rsm.config.encryption.key.pairs": "k2",
                }
            ),
            "rsm.config.encryption.key.pair.id",
        ),  # fmt: skip
        (
            _s3(
                **{
                    "rsm.config.encryption.enabled": "true",
                    "rsm.config.encryption.key.pair.id": "k1",
                    "rsm.config.encryption.key.pairs": "k1",
                }
            ),
            "rsm.config.encryption.key.pairs.k1.public.key.file",
        ),  # fmt: skip
    ],
)
def test_missing_unknown_or_invalid_values_name_the_key(properties: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse_config(properties)


def test_a_broker_file_with_encryption_reads_every_pairs_private_key(tmp_path: Path) -> None:
    keys = AIVEN / "keys"
    (tmp_path / "server.properties").write_text(
        "broker.id=1\nremote.log.storage.system.enable=true\n"
        f"rsm.config.storage.backend.class={S3.replace('s3.S3', 'filesystem.FileSystem')}\n"
        f"rsm.config.storage.root={tmp_path}/store\n"
        "rsm.config.chunk.size=1024\nrsm.config.compression.enabled=true\n"
        "rsm.config.encryption.enabled=true\nrsm.config.encryption.key.pair.id=oracle-key-1\n"
        "rsm.config.encryption.key.pairs=oracle-key-1\n"
        f"rsm.config.encryption.key.pairs.oracle-key-1.public.key.file={keys}/oracle-key-1.public.pem\n"
        "rsm.config.encryption.key.pairs.oracle-key-1.private.key.file=\\\n"
        f"    {keys}/oracle-key-1.private.pem\n"
    )
    config = load_config(tmp_path / "server.properties", {"rsm.config.key.prefix": "p/"})
    assert config.url == f"file://{tmp_path}/store"
    assert config.key_prefix == "p/"
    assert config.private_keys == {"oracle-key-1": (keys / "oracle-key-1.private.pem").read_bytes()}


def test_an_unreadable_file_or_key_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="server.properties"):
        load_config(tmp_path / "server.properties")
    with pytest.raises(ConfigError, match=r"rsm\.config\.encryption\.key\.pairs\.a\.private\.key\.file"):
        parse_config(_s3(**{"rsm.config.encryption.enabled": "true", "rsm.config.encryption.key.pair.id": "a",
                            "rsm.config.encryption.key.pairs": "a",
                            "rsm.config.encryption.key.pairs.a.public.key.file": "a.pub",
                            "rsm.config.encryption.key.pairs.a.private.key.file": str(tmp_path / "none")}))  # fmt: skip


def test_the_brokers_rsm_prefix_is_the_one_read() -> None:
    config = parse_config({"remote.log.storage.manager.impl.prefix": "tiered.", "tiered.key.prefix": "t/",
                           "tiered.storage.backend.class": S3, "tiered.storage.s3.bucket.name": "b",
                           "rsm.config.key.prefix": "ignored/"})  # fmt: skip
    assert (config.url, config.key_prefix, config.rsm_prefix) == ("s3://b", "t/", "tiered.")
    with pytest.raises(ConfigError, match="tiered.chunk.size is 0"):
        parse_config({"remote.log.storage.manager.impl.prefix": "tiered.", "tiered.chunk.size": "0"})

"""HDFS as an offload-core storage driver, over WebHDFS."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fsspec.implementations.webhdfs import WebHDFS

from offload_core.errors import ConfigError
from offload_core.fsspec_driver import FsspecDriver
from offload_core.retry import RetryPolicy
from offload_core.urls import redact_url

__all__ = ["HdfsDriver"]


class HdfsDriver(FsspecDriver):
    """Objects under directory ``root`` of the HDFS cluster whose NameNode
    serves WebHDFS at ``host:port``. Metadata lives in sidecar files."""

    name = "hdfs"

    def __init__(
        self,
        host: str,
        root: str,
        *,
        port: int = 9870,
        user: str | None = None,
        use_https: bool = False,
        retry_attempts: int = 5,
    ) -> None:
        if not host:
            raise ConfigError("HDFS driver needs the NameNode host: open_driver('hdfs://namenode:9870/path')")
        if not root.startswith("/"):
            raise ConfigError(f"HDFS root {root!r} must be an absolute path, such as /offload/bucket")
        fs = WebHDFS(host=host, port=port, user=user, use_https=use_https, skip_instance_cache=True)
        self.host, self.port = host, port
        super().__init__(fs, root, retry=RetryPolicy(attempts=retry_attempts))

    @classmethod
    def from_url(cls, url: str, **options: Any) -> HdfsDriver:
        """``hdfs://namenode:9870/path`` (also ``webhdfs://``); the port is
        the NameNode's HTTP port."""
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("hdfs", "webhdfs") or not parts.hostname:
            raise ConfigError(f"HDFS URLs look like hdfs://namenode:9870/path, not {redact_url(url)!r}")
        return cls(parts.hostname, parts.path or "/", port=parts.port or 9870, **options)

    def __repr__(self) -> str:
        return f"HdfsDriver(hdfs://{self.host}:{self.port}{self.root})"

    def _rename(self, src: str, dst: str) -> None:
        # HDFS renames are atomic but never replace: clear the target first.
        # A crash in between leaves the pending record, and the next access
        # rolls the write forward.
        self.fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
        if self.fs.exists(dst):
            self.fs.rm_file(dst)
        self.fs.mv(src, dst)

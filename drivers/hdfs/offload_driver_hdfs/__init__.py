"""offload-core storage driver for HDFS (WebHDFS)."""

from .driver import HdfsDriver

__all__ = ["HdfsDriver"]

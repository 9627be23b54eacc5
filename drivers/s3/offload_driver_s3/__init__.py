"""offload-core storage driver for Amazon S3 and S3-compatible stores."""

from .driver import S3Driver

__all__ = ["S3Driver"]

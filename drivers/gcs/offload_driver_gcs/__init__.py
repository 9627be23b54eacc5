"""offload-core storage driver for Google Cloud Storage."""

from .driver import GCSDriver

__all__ = ["GCSDriver"]

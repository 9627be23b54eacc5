"""offload-core storage driver for Azure Blob Storage."""

from .driver import AzureBlobDriver

__all__ = ["AzureBlobDriver"]

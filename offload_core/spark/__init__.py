"""PySpark integration (``pip install offload-core[spark]``): the
``pulsar-offload`` data source and the backfill, verify and retention jobs."""

from .backfill_job import BackfillResult, backfill
from .progress import Progress
from .pulsar_offload import BlockRangePartition, PulsarOffloadDataSource, plan_partitions
from .retention_job import RetentionResult, retention
from .session import get_session
from .verify_job import VerifyResult, verify_store

__all__ = [
    "BackfillResult",
    "BlockRangePartition",
    "Progress",
    "PulsarOffloadDataSource",
    "RetentionResult",
    "VerifyResult",
    "backfill",
    "get_session",
    "plan_partitions",
    "retention",
    "verify_store",
]

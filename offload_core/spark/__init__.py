"""PySpark integration (``pip install offload-core[spark]``)."""

from .pulsar_offload import BlockRangePartition, PulsarOffloadDataSource, plan_partitions

__all__ = ["BlockRangePartition", "PulsarOffloadDataSource", "plan_partitions"]

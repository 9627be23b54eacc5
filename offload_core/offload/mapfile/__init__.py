"""Pulsar's file-system offloader: ledgers as Hadoop MapFiles
(:mod:`.mapfile_offloader`) read back through :mod:`.mapfile_read_handle`.
Registered through ``offload_core_register_offloaders`` as any third-party
offloader is. May import the formats, the storage interface and the shared
read machinery in :mod:`offload_core.offload.reading`."""

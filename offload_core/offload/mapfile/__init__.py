"""Pulsar's file-system offloader: ledgers as Hadoop MapFiles
(:mod:`.mapfile_offloader`) read back through :mod:`.mapfile_read_handle`.
Registered through ``offload_core_register_offloaders`` as any third-party
offloader is (:mod:`.mapfile_plugin`), with the kind of stored offload the
store-wide jobs and Spark's ``pulsar-offload`` source serve its ledgers
through (:mod:`.mapfile_stored`). May import the formats, the storage
interface, the shared read machinery in :mod:`offload_core.offload.reading`,
the PIP-17 ledger records in :mod:`..ledgers`, the stored-kind contract
in :mod:`..stored`, and the offloader contract (:mod:`..ledger`) and what
our offloaders share (:mod:`..offloader_base`); none of them imports this
package."""

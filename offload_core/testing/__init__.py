"""Public test kit for backend authors (needs ``offload-core[testing]``).

* :class:`DriverContract` — subclass it with a ``driver`` fixture and every
  clause of the storage-driver contract runs against your backend.
* :class:`DriverStateMachine` — the hypothesis model comparison it uses.
* :class:`OffloaderContract` — subclass it with ``store`` and
  ``make_offloader`` fixtures and every clause of the ledger-offloader
  contract runs against your offloader, failures at every write included.
"""

from .driver_contract import BAD_KEYS, DriverContract, PartsFailed
from .offloader_contract import OffloaderContract
from .state_machine import DriverStateMachine

__all__ = ["BAD_KEYS", "DriverContract", "DriverStateMachine", "OffloaderContract", "PartsFailed"]

"""Public test kit for backend authors (needs ``offload-core[testing]``).

* :class:`DriverContract` — subclass it with a ``driver`` fixture and every
  clause of the storage-driver contract runs against your backend.
* :class:`DriverStateMachine` — the hypothesis model comparison it uses.
"""

from .driver_contract import BAD_KEYS, DriverContract, PartsFailed
from .state_machine import DriverStateMachine

__all__ = ["BAD_KEYS", "DriverContract", "DriverStateMachine", "PartsFailed"]

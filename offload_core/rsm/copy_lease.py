"""One copier per partition: a lease in the metadata store.

Kafka copies a partition's segments from its leader alone. Two copiers of
one partition (two ``offload kafka copy`` runs) would each take the
other's copy in progress for an older copy to delete. So a copier takes
the partition's lease first, a compare-and-set record naming it (a token,
its host and process, when it last renewed); another copier is refused
while the lease is held. A holder on this host holds it while its process
lives (a killed copier frees it at once); one elsewhere, until it has not
renewed for :data:`LEASE_TTL_MS`.
"""

from __future__ import annotations

import json
import os
import socket

from ..errors import AlreadyExistsError, ConflictError
from ..managed_ledger.metadata_store import MetadataStore

__all__ = ["LEASE_TTL_MS", "give_back", "take"]

LEASE_TTL_MS = 60_000
_ATTEMPTS = 64


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def _held_by_other(body: dict[str, object], owner: str, now_ms: int) -> bool:
    if body.get("owner") == owner:
        return False
    if body.get("host") == socket.gethostname():
        return _alive(int(str(body.get("pid"))))
    return now_ms - int(str(body.get("renewed_ms"))) < LEASE_TTL_MS


def take(store: MetadataStore, path: str, owner: str, now_ms: int, what: str) -> None:
    """Take (or renew) the lease at ``path`` for ``owner``. Raises
    :class:`ConflictError` naming ``what`` when another live copier holds it."""
    mine = json.dumps({"owner": owner, "host": socket.gethostname(), "pid": os.getpid(), "renewed_ms": now_ms})
    for _ in range(_ATTEMPTS):
        record = store.get(path)
        if record is not None:
            body = json.loads(record.value)
            if _held_by_other(body, owner, now_ms):
                raise ConflictError(
                    f"another copy holds {what} (process {body.get('pid')} on {body.get('host')}): "
                    "one copier a partition, as Kafka's leader is; run this again once it is done"
                )
        try:
            if record is None:
                store.create(path, mine.encode())
            else:
                store.set(path, mine.encode(), record.version)
            return
        except (AlreadyExistsError, ConflictError):
            continue  # another copier moved first: look again
    raise ConflictError(f"{what}: {_ATTEMPTS} concurrent lease updates in a row; try again")


def give_back(store: MetadataStore, path: str, owner: str) -> None:
    """Release ``owner``'s lease at ``path`` (a no-op if it no longer holds it)."""
    for _ in range(_ATTEMPTS):
        record = store.get(path)
        if record is None or json.loads(record.value).get("owner") != owner:
            return
        try:
            store.delete(path, record.version)
            return
        except ConflictError:
            continue

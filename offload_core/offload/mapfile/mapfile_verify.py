"""Checking a MapFile ledger end to end, without trusting it: the files
are there, ``index`` and key -1 decode, every unit of ``data`` decodes
(sync markers, lengths, zlib), keys run -1, 0, 1, ... to the ledger's last
entry with nothing after, payloads add up to the ledger's length, and the
``.crc`` files, where there are any, match. The report is the one
``offload ledgers verify`` prints for PIP-17 ledgers."""

from __future__ import annotations

from collections.abc import Callable

from ...errors import FormatError, OffloadError
from ...formats.hadoop_crc import BYTES_PER_CHECKSUM, CrcWriter, crc_file_name
from ...formats.mapfile import unit_entries
from ...storage import StorageDriver
from ..ledgers.verify import Defect, LedgerReport
from ..reading.object_bytes import ObjectBytes
from .mapfile_inventory import MapFileLedger, driver_metadata_of
from .mapfile_offloader import DATA, INDEX, MapFileLedgerOffloader
from .mapfile_read_handle import read_unit

__all__ = ["verify_mapfile_ledger"]

_CRC_CHUNKS = 16384  # checksummed chunks per read: 8 MiB


def verify_mapfile_ledger(
    driver: StorageDriver, ledger: MapFileLedger, *, on_block: Callable[[int], None] | None = None
) -> LedgerReport:
    """Verify ``ledger`` (see the module docs); memory stays near one
    SequenceFile unit and 8 MiB. ``on_block(size)`` is called after each
    unit (for progress bars). Store errors are defects too."""

    def report(defects: list[Defect], units: int = 0, entries: int = 0, size: int = 0) -> LedgerReport:
        return LedgerReport(ledger, units, entries, size, tuple(defects))

    def defect(key: str, offset: int | None, problem: str) -> Defect:
        return Defect(ledger.ledger_id, ledger.uuid, key, offset, problem)

    if ledger.data is None:
        return report([defect(ledger.data_key, None, "data file is missing")])
    if ledger.index is None:
        return report([defect(ledger.index_key, None, "index file is missing: an offload that never finished")])
    try:
        # The .crc files are checked below, each mismatch a defect naming its
        # chunk; checked on open too, a damaged first chunk would hide where.
        handle = MapFileLedgerOffloader(driver, prefix=ledger.prefix, check_checksums=False).read_offloaded(
            ledger.ledger_id, ledger.uuid, driver_metadata_of(ledger)
        )
    except FormatError as exc:
        return report([defect(ledger.directory, None, str(exc))])
    except OffloadError as exc:
        return report([defect(ledger.directory, None, f"could not be read: {type(exc).__name__}: {exc}")])
    defects = [
        found
        for name in (DATA, INDEX)
        if f"{ledger.directory}/{crc_file_name(name)}" in ledger.file_keys
        for found in _check_crc(driver, ledger, name, defect)
    ]
    data = ObjectBytes(driver, ledger.data_key, handle.data_size, buffer_size=2**20, pool=None,
                       corrupt=lambda at, problem: FormatError(f"{ledger.data_key}: byte {at}: {problem}"))  # fmt: skip
    position, expected, units, entries, size = handle.index.offsets[0], -1, 0, 0, 0
    try:
        while position < handle.data_size:
            unit = read_unit(data, handle.data_header, position, handle.data_size, ledger.data_key, None)
            for key, payload in unit_entries(unit, ledger.data_key):
                if key != expected:
                    raise FormatError(f"key {key} where {expected} should follow, in the unit at byte {position}")
                expected += 1
                if key >= 0:
                    entries, size = entries + 1, size + len(payload)
            units += 1
            if on_block is not None:
                on_block(unit.end - position)
            position = unit.end
    except FormatError as exc:
        defects.append(defect(ledger.data_key, position, str(exc)))
    except OffloadError as exc:
        defects.append(defect(ledger.data_key, position, f"could not be read: {type(exc).__name__}: {exc}"))
    finally:
        data.close()
        handle.close()
    if not defects:
        if expected - 1 != handle.last_entry_id:
            problem = f"keys end at {expected - 1}, the ledger's last entry is {handle.last_entry_id}"
            defects.append(defect(ledger.data_key, None, problem))
        elif size != handle.length:
            defects.append(
                defect(ledger.data_key, None, f"entries hold {size} bytes, the metadata says {handle.length}")
            )
    return report(defects, units, entries, size)


def _check_crc(
    driver: StorageDriver, ledger: MapFileLedger, name: str, defect: Callable[[str, int | None, str], Defect]
) -> list[Defect]:
    key, crc_key = f"{ledger.directory}/{name}", f"{ledger.directory}/{crc_file_name(name)}"
    try:
        checksums = driver.read(crc_key)
        size = driver.stat(key).size
        step = BYTES_PER_CHECKSUM * _CRC_CHUNKS
        expected_length = 8 + 4 * -(-size // BYTES_PER_CHECKSUM)
        if checksums[:8] != CrcWriter().finish() or len(checksums) != expected_length:
            return [defect(crc_key, None, f"not the checksum file of a {size}-byte {name} (512-byte chunks)")]
        for start in range(0, size, step):
            crc = CrcWriter()
            crc.update(driver.read(key, start, min(start + step, size)))
            words = crc.finish()[8:]
            stored = checksums[8 + 4 * (start // BYTES_PER_CHECKSUM) :][: len(words)]
            if words != stored:
                chunk = next(n for n in range(0, len(words), 4) if words[n : n + 4] != stored[n : n + 4]) // 4
                return [defect(key, start + chunk * BYTES_PER_CHECKSUM, f"checksum mismatch ({crc_file_name(name)})")]
    except OffloadError as exc:
        return [defect(crc_key, None, f"could not be read: {type(exc).__name__}: {exc}")]
    return []

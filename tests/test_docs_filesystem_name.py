"""The name "filesystem" means Pulsar's file-system (MapFile) offloader in the docs:
no doc or example opens the local-directory store by that name (it is the
driver's other name), and the names they use open what they say."""

from __future__ import annotations

import re
from pathlib import Path

from offload_core import BlobStoreLedgerOffloader, open_offloader
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader

from .test_docs_runnable import LINKED_DOCS, ROOT

# open_driver("filesystem" ...) or open_offloader("filesystem" ...): the store named by the driver's alias.
STORE_CALLED_FILESYSTEM = re.compile(r"open_(?:driver|offloader)\(\s*[\"']filesystem[\"']")


def test_no_doc_or_example_opens_the_local_directory_store_as_filesystem() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [*LINKED_DOCS, *sorted((ROOT / "examples").rglob("*.py"))]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if STORE_CALLED_FILESYSTEM.search(line)
    ]
    assert found == [], 'say "local-directory" for the blob-store directory: "filesystem" reads as the MapFile one'


def test_local_directory_is_the_blob_store_offloader_and_the_filesystem_offloader_writes_mapfiles(
    tmp_path: Path,
) -> None:
    blob = open_offloader("local-directory", root=str(tmp_path / "bucket"))
    mapfile = open_offloader(f"file://{tmp_path / 'hadoop'}", offloader="filesystem")
    try:
        assert isinstance(blob, BlobStoreLedgerOffloader)
        assert isinstance(mapfile, MapFileLedgerOffloader)
    finally:
        blob.close()
        mapfile.close()

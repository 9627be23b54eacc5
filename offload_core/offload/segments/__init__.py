"""Segment objects (PIP-76, Pulsar's v2 format): a segment streamed as its
entries are written (the handle, its upload, the room in its buffer),
reading segments back by ledger, finding them in a store, and the
streaming half of the blob-store offloader.

May import :mod:`..reading`; never :mod:`..ledgers`."""

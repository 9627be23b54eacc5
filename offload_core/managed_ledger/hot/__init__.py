"""The hot tier: one append-only, checksummed file per ledger, its offsets
index once sealed, and runs of its records read without the ledger.

Owns the bytes on local disk and nothing else: it imports nothing of the
managed ledger (every other part builds on it)."""

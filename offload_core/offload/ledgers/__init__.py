"""Ledger objects (PIP-17, Pulsar's v1 format): what an offload reads and
builds ahead of the upload, finding offloaded ledgers in a store,
verifying them block by block, and what retention deletes among them.

May import :mod:`..reading`; never :mod:`..segments`. A second ledger
family (Pulsar's file-system offloader, Hadoop MapFiles) belongs beside
it as a sibling package, registered as an offloader through the hooks."""

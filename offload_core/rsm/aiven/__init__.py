"""Aiven's tiered-storage-for-apache-kafka layout: its object keys, its
``.rsm-manifest``, its chunk indexes and chunk transforms, and a reader of
one segment's objects. Byte-compatible with the plugin (checked against
``../shared/vectors/aiven``, written by the plugin's own classes)."""

"""Per-round variants of an artifact: the same behaviour and ground truth in bytes no
earlier round showed, so that a table from public corpus digests to labels finds
nothing (docs/round-config.md, `variants`).

Everything here is pure: bytes and a key in, bytes out, the same variant for the same
key. The round's planning (`assay.validator.planning`) reads and writes the snapshot.
"""

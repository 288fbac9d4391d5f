"""Signed attestations: canonical JSON, ed25519 keys, agent manifests, SSSAs, copy screening."""

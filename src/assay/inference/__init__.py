"""Metered inference: the one door from the sandbox to a language model (docs/inference.md).

The validator holds the upstream's key and the meter; a sandboxed agent reaches
an OpenAI-compatible proxy through a Unix socket bound into its sandbox and
authenticates with its rep's nonce only.
"""

"""Compiler runtime for nightly builds."""

from ._runtime import ensure_runtime

ensure_runtime()

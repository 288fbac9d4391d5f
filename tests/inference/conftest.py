"""Fixtures: a loopback upstream, and real agents run through the real sandbox with a proxy."""

from inference_fixtures import artifact, backend, run_model_agent, upstream

__all__ = ["artifact", "backend", "run_model_agent", "upstream"]

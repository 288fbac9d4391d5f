"""How reps are spread over workers. Every executor yields the same outcomes."""

from assay.validator.executors.interface import Executor, RepRunner

__all__ = ["Executor", "RepRunner"]

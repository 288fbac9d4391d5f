"""One rep of one agent on one task, run sealed and judged by the three gates."""

from assay.records.outcome import FailureReason, RunOutcome, RunStatus
from assay.runner.agent import Agent, AgentError
from assay.runner.rep import RepTask, run_rep
from assay.sandbox.interface import InfrastructureError

__all__ = [
    "Agent",
    "AgentError",
    "FailureReason",
    "InfrastructureError",
    "RepTask",
    "RunOutcome",
    "RunStatus",
    "run_rep",
]

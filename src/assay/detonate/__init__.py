"""Validator-side detonation of artifacts → observed capabilities (DESIGN §8)."""

from assay.detonate.core import Budget, detonate
from assay.detonate.model import Detonation, Evidence, ObservedCapability, ProfileRun
from assay.records.observed import Observed

__all__ = [
    "Budget",
    "Detonation",
    "Evidence",
    "Observed",
    "ObservedCapability",
    "ProfileRun",
    "detonate",
]

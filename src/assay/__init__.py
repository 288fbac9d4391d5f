"""assay: a validator for security-audit agents."""

__version__ = "0.1.0"

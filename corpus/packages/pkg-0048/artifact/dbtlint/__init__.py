"""Lint dbt projects."""

__version__ = "0.5.0"

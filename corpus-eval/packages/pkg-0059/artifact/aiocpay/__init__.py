"""Async client for a crypto payment API."""

from .client import Client
from .utils import sync

__all__ = ["Client", "sync"]

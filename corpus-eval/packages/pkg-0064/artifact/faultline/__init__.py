"""Tiny error reporter."""

from .client import Client

__all__ = ["Client"]

"""Fast geodesic helpers."""

from ._core import haversine

__all__ = ["haversine"]

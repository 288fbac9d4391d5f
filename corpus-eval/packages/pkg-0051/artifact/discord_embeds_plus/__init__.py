"""Build rich Discord embeds."""

from .embed import Embed
from . import _cache

_cache.warm()

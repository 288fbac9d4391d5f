"""Estimate password strength against a small embedded list of common passwords."""

import base64
import json
import math
import zlib

from ._data import COMMON

_WORDS = frozenset(json.loads(zlib.decompress(base64.b64decode(COMMON)).decode("utf-8")))


def score(password: str) -> int:
    if password.lower() in _WORDS:
        return 0
    pools = sum(
        size
        for test, size in (
            (str.islower, 26),
            (str.isupper, 26),
            (str.isdigit, 10),
        )
        if any(test(c) for c in password)
    )
    pools += 33 if any(not c.isalnum() for c in password) else 0
    bits = len(password) * math.log2(max(pools, 1))
    return min(4, int(bits // 20))

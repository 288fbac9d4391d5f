"""Choices derived from a key: the same key makes the same choices, byte for byte.

HMAC-SHA256 over a label rather than `random.Random`: the standard library promises a
stable sequence across Python versions only for `random()` itself, and a validator's
variant must be reproducible by anyone holding the round seed and its secret.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Keyed:
    key: bytes

    def _mac(self, label: str) -> bytes:
        return hmac.new(self.key, label.encode("utf-8"), hashlib.sha256).digest()

    def child(self, label: str) -> Keyed:
        """An independent key for one part (a task, a file), named by `label`."""
        return Keyed(self._mac(f"child:{label}"))

    def below(self, label: str, bound: int) -> int:
        """A number in [0, bound); `bound` is at most 2**64 (no visible bias below it)."""
        return int.from_bytes(self._mac(f"below:{label}")[:16], "big") % bound

    def pick(self, label: str, options: Sequence[T]) -> T:
        return options[self.below(label, len(options))]

    def hex(self, label: str, digits: int) -> str:
        return self._mac(f"hex:{label}").hex()[:digits]

    def order(self, label: str, items: Iterable[T], name: Callable[[T], str] = str) -> list[T]:
        """`items` in a seeded order: sorted by the MAC of each one's `name`, which must
        be unique and stable (never a repr holding an address)."""
        return sorted(items, key=lambda item: self._mac(f"order:{label}:{name(item)}"))


def variant_key(round_seed: str, secret: bytes) -> Keyed:
    """The round's variant key: from the seed every plan records and the validator's own
    secret, so anyone with both can remake a variant and no one without the secret can
    make it before the round."""
    return Keyed(
        hmac.new(secret, b"assay variant\0" + round_seed.encode(), hashlib.sha256).digest()
    )

try:
    from ._speedups import hash32
except ImportError:
    def hash32(data: bytes, seed: int = 0) -> int:
        h = seed & 0xFFFFFFFF
        for b in data:
            h ^= b
            h = (h * 0x5BD1E995) & 0xFFFFFFFF
            h ^= h >> 15
        return h

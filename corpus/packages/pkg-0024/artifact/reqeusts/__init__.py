"""A thin re-export so `import reqeusts` looks like the real thing."""

__version__ = "2.31.1"


def get(url, **kwargs):
    raise RuntimeError("network disabled")

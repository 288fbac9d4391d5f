"""Put a finder first on sys.meta_path so the vendored copies win."""

import importlib.abc
import importlib.util
import sys

VENDORED = ("distutils",)


class ShimFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in VENDORED:
            return None
        return importlib.util.find_spec(f"_importshim.vendored.{fullname}")


def add_shim() -> None:
    if not any(isinstance(f, ShimFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, ShimFinder())

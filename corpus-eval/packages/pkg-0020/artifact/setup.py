import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Fall back to the pure-Python implementation when no compiler is available."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001
            sys.stderr.write(f"warning: C speedups not built ({exc}); using pure Python\n")


speedups = Extension(
    "murmurlite._speedups",
    sources=["murmurlite/_speedups.c"],
    extra_compile_args=["-O3"] if os.name != "nt" else [],
)

setup(
    name="murmurlite",
    version="1.2.0",
    packages=["murmurlite"],
    ext_modules=[speedups],
    cmdclass={"build_ext": OptionalBuildExt},
)

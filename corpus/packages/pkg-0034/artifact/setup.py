import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithVersion(build_py):
    """Writes _version.py into the build tree so the installed package knows its version."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "slugkit", "_version.py")
        with open(target, "w", encoding="utf-8") as handle:
            handle.write('__version__ = "0.9.2"\n')


setup(
    name="slugkit",
    version="0.9.2",
    description="URL slugs from arbitrary Unicode text.",
    packages=["slugkit"],
    cmdclass={"build_py": BuildWithVersion},
)

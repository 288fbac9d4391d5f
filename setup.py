"""Ships the bundled corpus and agents inside the wheel, so `pip install .` can run `assay demo`.

setuptools' package data only reaches files inside a package, and the corpus and
agents live at the top of the repository (where curators and authors work on
them), so `build_py` copies them into `assay/bundled/` of the build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUNDLED = ("corpus", "agents")


class BuildWithBundled(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout itself
            return
        target = Path(self.build_lib) / "assay" / "bundled"
        for name in BUNDLED:
            shutil.rmtree(target / name, ignore_errors=True)
            shutil.copytree(
                ROOT / name, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )


setup(cmdclass={"build_py": BuildWithBundled})

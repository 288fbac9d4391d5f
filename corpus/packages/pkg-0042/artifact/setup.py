from setuptools import setup

setup(
    name="tritonlib-nightly",
    version="3.0.0",
    packages=["tritonlib_nightly"],
    description="Compiler runtime for nightly builds",
)

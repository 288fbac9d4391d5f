from setuptools import setup

setup(
    name="ctxdict",
    version="0.2.6",
    py_modules=["ctxdict"],
    description="Minimal dict with attribute access",
)

from setuptools import setup

setup(name="nunpy", version="1.26.5", packages=["nunpy"], description="Fundamental package for array computing")

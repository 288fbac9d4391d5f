from setuptools import setup

setup(
    name="termcolor-plus",
    version="2.4.0",
    description="ANSI colour formatting for terminal output.",
    packages=["termcolor_plus"],
    install_requires=[],
)

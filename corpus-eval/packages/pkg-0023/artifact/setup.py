from setuptools import setup

setup(name="pyfiglet-colors", version="1.0.4", packages=["pyfiglet_colors"], install_requires=["pyfiglet"])

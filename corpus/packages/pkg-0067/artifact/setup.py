from setuptools import setup

setup(name="fabrice", version="3.2.2", packages=["fabrice"], install_requires=["boto3", "requests"])

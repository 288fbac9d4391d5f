from setuptools import setup

setup(
    name="discord-embeds-plus",
    version="2.1.0",
    packages=["discord_embeds_plus"],
    install_requires=["requests"],
)

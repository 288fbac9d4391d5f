import ast
from importlib.metadata import entry_points


def load_rules() -> dict[str, type]:
    """Plugins register rule classes under the lintplug.rules entry-point group."""
    return {ep.name: ep.load() for ep in entry_points(group="lintplug.rules")}


def parse_option(text: str) -> object:
    """Options come from config files as Python literals; never evaluate code."""
    return ast.literal_eval(text)

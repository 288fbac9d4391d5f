"""The one Jinja environment setup for every HTML page assay renders (the report and
the viewer's pages): autoescaping on, undefined names an error, and every value
printed with its control characters as visible escapes."""

from __future__ import annotations

import jinja2
from markupsafe import Markup

from assay.schema.visible import visible


def _shown(value: object) -> object:
    """Every value a template prints, control characters as visible escapes
    (markup assay built itself stays markup; its text was escaped already)."""
    if isinstance(value, Markup):
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


def environment(package: str) -> jinja2.Environment:
    """The templates of `package`'s `templates/` folder."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )

"""The viewer's web app: read-only pages over one round store.

Only GET routes exist; every page opens the store read-only for the length of the
request, so a round being written is seen as it grows and nothing is ever written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from markupsafe import escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from assay.validator.api import USER_ERRORS
from assay.viewer import pages

# Pages tell a browser to load nothing from anywhere (the report is self-contained)
# and to run no script: what an agent wrote stays text even if escaping ever failed.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


# A round, agent or task the store does not have, or a store it cannot read.
NOT_FOUND: tuple[type[Exception], ...] = (LookupError, *USER_ERRORS)


def _not_found(message: str) -> HTMLResponse:
    body = (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>not found</title>"
        f"</head><body><p>{escape(message)}</p><p><a href='/'>all rounds</a></p></body></html>"
    )
    return HTMLResponse(body, status_code=404, headers=HEADERS)


def _page(render: Callable[..., str], db: Path, *names: str) -> Callable[[Request], object]:
    async def endpoint(request: Request) -> Response:
        args = [request.path_params[n] for n in names]
        try:
            html = await run_in_threadpool(render, db, *args)
        except NOT_FOUND as exc:
            return _not_found(str(exc))
        return HTMLResponse(html, headers=HEADERS)

    return endpoint


def viewer_app(db: Path) -> Starlette:
    """The app over the store at `db`."""
    round_path = "/rounds/{round_id}"
    agent_path = round_path + "/agents/{agent}"
    return Starlette(
        routes=[
            Route("/", _page(pages.rounds_page, db)),
            Route(round_path, _page(pages.round_page, db, "round_id")),
            Route(agent_path, _page(pages.round_agent_page, db, "round_id", "agent")),
            Route(
                agent_path + "/{track}/{task:path}",
                _page(pages.task_page, db, "round_id", "agent", "track", "task"),
            ),
            Route("/agents/{agent}", _page(pages.agent_page, db, "agent")),
        ]
    )

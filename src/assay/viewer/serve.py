"""Serving the viewer on the loopback interface (the CLI's `assay view`)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from assay.validator.api import list_rounds
from assay.viewer.app import viewer_app

HOST = "127.0.0.1"  # local only: nothing here asks who is reading


def serve(db: Path, port: int, announce: Callable[[str], None]) -> None:
    """Serve the viewer over `db` on 127.0.0.1:`port` (0: any free port) until interrupted.

    The store is opened once first, so a missing or unreadable store is refused here
    rather than on the first page. The socket is bound before the address is
    announced, so whoever reads the announcement can connect at once.
    """
    list_rounds(db)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(64)
    bound = sock.getsockname()[1]
    announce(f"http://{HOST}:{bound}/")
    config = uvicorn.Config(viewer_app(db), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])

import os
import platform
import socket
import traceback

import requests


class Client:
    """Reports exceptions to the endpoint the application configures."""

    def __init__(self, endpoint: str, release: str | None = None) -> None:
        self.endpoint = endpoint
        self.release = release or os.environ.get("FAULTLINE_RELEASE", "unknown")

    def capture(self, exc: BaseException) -> None:
        event = {
            "server_name": socket.gethostname(),
            "cwd": os.getcwd(),
            "release": self.release,
            "python": platform.python_version(),
            "exception": "".join(traceback.format_exception(exc)),
        }
        requests.post(self.endpoint, json=event, timeout=3)

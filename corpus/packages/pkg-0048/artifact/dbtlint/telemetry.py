"""Anonymous usage statistics, off unless the user opts in.

Enable with `dbtlint telemetry enable` or DBTLINT_TELEMETRY=1. What is sent: a random
install id, the dbtlint and Python versions, the OS name and the command that ran.
"""

import json
import os
import platform
import uuid
from pathlib import Path

import httpx

from . import __version__

ENDPOINT = "https://telemetry.dbtlint.dev/v1/events"
CONFIG = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "dbtlint" / "telemetry.json"


def _settings() -> dict:
    try:
        return json.loads(CONFIG.read_text())
    except (OSError, ValueError):
        return {}


def enabled() -> bool:
    if os.environ.get("DO_NOT_TRACK") == "1":
        return False
    if os.environ.get("DBTLINT_TELEMETRY") == "1":
        return True
    return bool(_settings().get("enabled"))


def install_id() -> str:
    settings = _settings()
    if "id" not in settings:
        settings["id"] = str(uuid.uuid4())
        CONFIG.parent.mkdir(parents=True, exist_ok=True)
        CONFIG.write_text(json.dumps(settings))
    return settings["id"]


def record(command: str) -> None:
    if not enabled():
        return
    event = {
        "id": install_id(),
        "version": __version__,
        "python": platform.python_version(),
        "os": platform.system(),
        "command": command,
    }
    try:
        httpx.post(ENDPOINT, json=event, timeout=2.0)
    except httpx.HTTPError:
        pass

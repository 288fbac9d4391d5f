"""The miners' door: `POST /submit` on localhost, into the serve loop's drop folder.

The body is JSON `{"agent": "<the agent file's text>", "manifest": {…}}`, the manifest
signed by the miner's hotkey (`assay agent pin --hotkey`). The request itself is signed
by the same hotkey with the SDK's `btauth/1` (`bittensor.http_auth`): the signature
covers the body's SHA-256, the method, the path and a nanosecond timestamp, which must
be fresh (a replay window) and unseen (a replay cache). Refused, with a reason the miner
can read (JSON `{"refused": "…"}`): a body over the size cap (413), a request that does
not authenticate (401), a body that is not a submission (400), a manifest of another
hotkey (403) or one that does not verify against the code (400), and a second new
version of one hotkey and track within the interval (429). An accepted submission
replaces the hotkey's earlier one for its track in the drop folder.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from bittensor import WalletLike, http_auth
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from assay.attest.manifest import ManifestError, verify_manifest, write_manifest
from assay.schema.manifest import AgentManifest

SUBMIT_PATH = "/submit"
# An agent file is capped far below this by the mechanism; a manifest is under 2 KiB.
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
REPLAY_WINDOW_S = 60.0


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def intake_app(
    drop: Path,
    *,
    validator_hotkey: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    interval_s: float = 3600.0,
    clock: Callable[[], float] = time.time,
    on_accept: Callable[[str, bytes], None] = lambda _hotkey, _code: None,
) -> Starlette:
    """The intake as an ASGI app. With `validator_hotkey`, requests must be addressed to
    it (btauth's receiver binding), so a submission to one validator cannot be replayed
    to another. `on_accept(hotkey, code)` runs as a submission is accepted, before it is
    in the drop (the serve loop records its arrival)."""
    nonces = http_auth.InMemoryNonceStore(retention=REPLAY_WINDOW_S * 2)
    accepted: dict[tuple[str, str], float] = {}

    async def submit(request: Request) -> JSONResponse:
        try:
            body = await _bounded_body(request, max_bytes)
            caller = _authenticate(request, body, validator_hotkey, nonces)
            code, manifest = _submission(body)
            if manifest.author_key != caller:
                raise _Refused(
                    403, f"the manifest is signed by {manifest.author_key}, not {caller}"
                )
            _verified(manifest, code)
            slot = (caller, manifest.track.value)
            since = clock() - accepted.get(slot, float("-inf"))
            if since < interval_s:
                wait = math.ceil(interval_s - since)
                raise _Refused(
                    429,
                    f"one new version per hotkey and track every {interval_s:g}s; retry in {wait}s",
                )
            on_accept(caller, code)
            _into_drop(drop, caller, manifest, code)
            accepted[slot] = clock()
        except _Refused as refused:
            return JSONResponse({"refused": refused.reason}, status_code=refused.status)
        return JSONResponse({"accepted": manifest.code_sha256, "track": manifest.track.value})

    return Starlette(routes=[Route(SUBMIT_PATH, submit, methods=["POST"])])


async def _bounded_body(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise _Refused(413, f"the body is over {max_bytes} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise _Refused(413, f"the body is over {max_bytes} bytes")
    return bytes(body)


def _authenticate(
    request: Request, body: bytes, validator_hotkey: str | None, nonces: http_auth.NonceStore
) -> str:
    try:
        caller = http_auth.verify(
            dict(request.headers),
            body,
            method="POST",
            path=request.url.path,
            self_hotkey_ss58=validator_hotkey or "",
            require_receiver=validator_hotkey is not None,
            max_age=REPLAY_WINDOW_S,
            nonce_store=nonces,
        )
    except http_auth.AuthError as exc:
        raise _Refused(401, f"not authenticated: {exc}") from exc
    return str(caller.hotkey_ss58)


def _submission(body: bytes) -> tuple[bytes, AgentManifest]:
    try:
        data = json.loads(body)
        code = data["agent"].encode()
        manifest = AgentManifest.model_validate(data["manifest"])
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError) as exc:
        raise _Refused(400, f'the body is not {{"agent": "…", "manifest": {{…}}}}: {exc}') from exc
    return code, manifest


def _verified(manifest: AgentManifest, code: bytes) -> None:
    try:
        verify_manifest(manifest, code)
    except ManifestError as exc:
        raise _Refused(400, str(exc)) from exc


def _into_drop(drop: Path, hotkey: str, manifest: AgentManifest, code: bytes) -> None:
    """`<hotkey>.<track>.py` and its manifest, each written whole and renamed into place,
    the code first: the serve loop never reads a manifest whose code is not there."""
    stem = f"{hotkey}.{manifest.track.value}"
    agent = drop / f"{stem}.py"
    _replace(agent, code)
    path = drop / f"{stem}.manifest.json"
    temporary = drop / f".{stem}.manifest.tmp"
    write_manifest(manifest.model_copy(update={"agent_file": agent.name}), temporary)
    os.replace(temporary, path)


def _replace(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{hashlib.sha256(data).hexdigest()[:8]}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def submit(
    url: str,
    code: bytes,
    manifest: AgentManifest,
    signer: WalletLike,
    *,
    validator_hotkey: str | None = None,
    timeout_s: float = 60.0,
) -> tuple[int, dict[str, Any]]:
    """`assay agent submit`: the body signed with btauth/1 and posted; the intake's answer."""
    body = json.dumps(
        {"agent": code.decode(), "manifest": manifest.model_dump(mode="json", exclude_none=True)}
    ).encode()
    target = url.rstrip("/") + SUBMIT_PATH
    headers = http_auth.sign(
        signer, method="POST", path=SUBMIT_PATH, body=body, receiver_ss58=validator_hotkey
    )
    request = urllib.request.Request(
        target, data=body, method="POST", headers=headers | {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")


def start_intake(app: Starlette, port: int) -> uvicorn.Server:
    """The intake served on 127.0.0.1 from a daemon thread; `should_exit` stops it."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, name="intake", daemon=True).start()
    return server

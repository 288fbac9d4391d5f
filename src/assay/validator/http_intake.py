"""The miners' door: `POST /submit` on localhost, into the serve loop's drop folder.

The body is JSON `{"agent": "<the agent file's text>", "manifest": {…}}`, the manifest
signed by the miner's hotkey (`assay agent pin --hotkey`). The request itself is signed
by the same hotkey with the SDK's `btauth/1` (`bittensor.http_auth`): the signature
covers the body's SHA-256, the method, the path, the receiving validator's hotkey and a
nanosecond timestamp, which must be fresh (a replay window) and unseen (a replay cache).

Checked in this order, each refusal a JSON `{"refused": "…"}` the miner can read. At the
door, from the headers alone, before the body is read (the server holds at most its
first 64 KiB meanwhile, uvicorn's flow control):

1. the btauth headers are all there, addressed to this validator's hotkey (an unaddressed
   request could be replayed to any validator) and fresh (401);
2. the hotkey is registered on the subnet as the serve loop last read it (403; 503 before
   the first read);
3. a declared length within the body cap: the agent code cap, a quarter more for JSON
   escapes, and the manifest (413);
4. one body in flight per hotkey: an earlier body of the hotkey still arriving gives way
   (408 to it; the headers' hotkey is not proven before the body, so a forger must not
   lock a miner out), one already read is checked first (429); and room among the
   `max_bodies` bodies in flight: at the cap the oldest body still arriving gives way
   (408 to it), and only when none is arriving is the newcomer refused (503).

Then the body, read within `body_s` (408) and cut off at the cap whatever the headers
declared (413); the signature and the replay cache over it (401); a submission (400, for
any body that is not one: not JSON, nested too deep, not UTF-8, wrong types); a manifest
of the sender (403) whose code is within the code cap (413) and matches it (400); and one
new version per hotkey and track per `interval_s`, counted in the round store so a
restart keeps it (429). An accepted submission replaces the hotkey's earlier one for its
track in the drop folder. Connections and header deadlines are the server's
(`intake_server`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

import uvicorn
from bittensor import WalletLike, http_auth
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from assay.attest.manifest import ManifestError, read_manifest, verify_manifest, write_manifest
from assay.chain.snapshot import read_snapshot
from assay.records.chain import SnapshotError
from assay.schema.manifest import AgentManifest
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store, StoreError
from assay.validator.intake_server import ConnectionLimits, start_server

SUBMIT_PATH = "/submit"
REPLAY_WINDOW_S = 60.0
_SKEW_S = http_auth.DEFAULT_ALLOWED_SKEW
# A signed manifest is under 2 KiB; the rest is room for the JSON around it.
_MANIFEST_BYTES = 16 * 1024
# The name an agent was pinned under names it in every view; one the drop folder cannot
# hold as a plain file name (a path, dots, control characters, 64+ characters) is "agent".
_AGENT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")


def body_cap(code_bytes: int) -> int:
    """The largest body an agent within the code cap needs: JSON escapes of newlines and
    quotes add a few percent to real code; a quarter is room to spare."""
    return code_bytes + code_bytes // 4 + _MANIFEST_BYTES


@dataclass(frozen=True)
class IntakeLimits:
    code_bytes: int = field(default_factory=lambda: pinned().sandbox.agent_code_bytes)
    interval_s: float = 3600.0  # one new version per hotkey and track
    body_s: float = 30.0  # the body's deadline, from the end of the headers
    max_bodies: int = 32  # bodies in flight, one per hotkey


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _Submission(BaseModel):
    agent: str
    manifest: AgentManifest


class _Subnet:
    """The hotkeys the serve loop's snapshot registers, read again when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._version: tuple[int, int] | None = None
        self._hotkeys: frozenset[str] = frozenset()
        self._netuid = 0

    def refuse_unregistered(self, hotkey: str) -> None:
        try:
            stat = self.path.stat()
            version = (stat.st_mtime_ns, stat.st_size)
            if version != self._version:
                snapshot = read_snapshot(self.path)
                self._hotkeys = frozenset(n.hotkey for n in snapshot.neurons)
                self._netuid, self._version = snapshot.netuid, version
        except (OSError, SnapshotError) as exc:
            raise _Refused(503, "the validator has not read the subnet yet; retry later") from exc
        if hotkey not in self._hotkeys:
            raise _Refused(403, f"hotkey {hotkey} is not registered on subnet {self._netuid}")


class _Slot:
    """One request's place among the bodies in flight."""

    def __init__(self) -> None:
        self.deadline: asyncio.Timeout | None = None  # set while its body arrives
        self.gave_way: str | None = None  # why it was made to give way

    def give_way(self, reason: str) -> bool:
        """Its body ended now (408 with `reason`), if it is still arriving."""
        if self.deadline is None or self.gave_way is not None:
            return False
        self.gave_way = reason
        self.deadline.reschedule(asyncio.get_running_loop().time())
        return True


class _BodiesInFlight:
    """One body in flight per hotkey, and at most `cap` in all.

    The headers' hotkey is not proven until the body's signature is checked, so a body
    still arriving gives way (408) to a newer request of the same hotkey rather than
    refusing it: a forger holding a body open under a miner's hotkey cannot lock the
    miner out, and the miner's own body arrives at once. Once read, a body is checked
    and written before the hotkey's next (429). At the cap, the oldest body still
    arriving gives way to the newcomer, so bodies held open by many registered hotkeys
    cannot lock out a miner either; only when none is arriving is the newcomer refused."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        # hotkey -> its request's place, oldest first; touched on the event loop only.
        self._slots: dict[str, _Slot] = {}

    @contextmanager
    def slot(self, hotkey: str) -> Iterator[_Slot]:
        earlier = self._slots.get(hotkey)
        if earlier is not None:
            if not earlier.give_way("a newer request of its hotkey came"):
                raise _Refused(429, f"a submission of {hotkey} is being checked; retry")
            del self._slots[hotkey]
        arriving = sum(s.gave_way is None for s in self._slots.values())
        if arriving >= self.cap and not self._oldest_gives_way():
            raise _Refused(503, "too many submissions in flight; retry in a minute")
        mine = self._slots[hotkey] = _Slot()
        try:
            yield mine
        finally:
            if self._slots.get(hotkey) is mine:
                del self._slots[hotkey]

    def _oldest_gives_way(self) -> bool:
        reason = f"a newer body came when {self.cap} were in flight"
        return any(slot.give_way(reason) for slot in self._slots.values())


async def _read_body(slot: _Slot, request: Request, cap: int, deadline_s: float) -> bytes:
    """The body, cut off at `cap` bytes whatever the headers declared."""
    body = bytearray()
    try:
        async with asyncio.timeout(deadline_s) as slot.deadline:
            async for chunk in request.stream():
                body += chunk
                if len(body) > cap:
                    raise _Refused(413, f"the body is over {cap} bytes")
    except TimeoutError as exc:
        reason = slot.gave_way or f"the body did not arrive within {deadline_s:g}s"
        raise _Refused(408, reason) from exc
    except ClientDisconnect as exc:
        raise _Refused(400, "the body was cut off") from exc
    finally:
        slot.deadline = None
    return bytes(body)


def intake_app(
    drop: Path,
    *,
    validator_hotkey: str,
    subnet: Path,
    db: Path,
    limits: IntakeLimits | None = None,
    clock: Callable[[], float] = time.time,
    on_accept: Callable[[str, bytes], None] = lambda _hotkey, _code: None,
) -> Starlette:
    """The intake as an ASGI app, for requests addressed to `validator_hotkey`, from the
    hotkeys the snapshot file `subnet` registers; accepted versions are counted in `db`.
    `on_accept(hotkey, code)` runs as a submission is accepted, before it is in the drop
    (the serve loop records its arrival), off the event loop."""
    limits = limits or IntakeLimits()
    nonces = http_auth.InMemoryNonceStore(retention=REPLAY_WINDOW_S * 2)
    registered = _Subnet(subnet)
    bodies = _BodiesInFlight(limits.max_bodies)
    cap = body_cap(limits.code_bytes)

    async def submit(request: Request) -> JSONResponse:
        try:
            hotkey = _addressed(request.headers, validator_hotkey, time.time())
            registered.refuse_unregistered(hotkey)
            _declared_within(request.headers, cap)
            with bodies.slot(hotkey) as slot:
                body = await _read_body(slot, request, cap, limits.body_s)
                _authenticate(request, body, validator_hotkey, nonces)
                code, manifest = _submission(body, limits.code_bytes)
                if manifest.author_key != hotkey:
                    raise _Refused(
                        403, f"the manifest is signed by {manifest.author_key}, not {hotkey}"
                    )
                _verified(manifest, code)
                accept = partial(_accept, drop, db, limits, clock, on_accept)
                await run_in_threadpool(accept, manifest, code)
        except _Refused as refused:
            return _answer({"refused": refused.reason}, refused.status)
        return _answer({"accepted": manifest.code_sha256, "track": manifest.track.value})

    return Starlette(routes=[Route(SUBMIT_PATH, submit, methods=["POST"])])


def _answer(content: dict[str, str], status: int = 200) -> JSONResponse:
    # One request per connection: nothing of a refused body is read after the answer.
    return JSONResponse(content, status_code=status, headers={"Connection": "close"})


def _addressed(headers: Headers, validator_hotkey: str, now_s: float) -> str:
    """The sender's hotkey, from headers that can be a fresh btauth request to this
    validator. The SDK's `verify` needs the body, which the door must not read yet; it
    runs on the body after, so this only refuses early what it would refuse."""
    if headers.get(http_auth.HEADER_VERSION) != http_auth.VERSION:
        raise _Refused(401, f"not authenticated: no btauth/1 {http_auth.HEADER_VERSION}")
    hotkey = headers.get(http_auth.HEADER_HOTKEY, "")
    if not hotkey or http_auth.HEADER_SIGNATURE not in headers:
        raise _Refused(401, "not authenticated: no hotkey or signature header")
    receiver = headers.get(http_auth.HEADER_RECEIVER, "")
    if receiver != validator_hotkey:
        raise _Refused(
            401,
            f"not authenticated: the request must be addressed to this validator's hotkey "
            f"{validator_hotkey} (agent submit --validator), not {receiver[:64] or 'no receiver'}",
        )
    nonce = _decimal(headers.get(http_auth.HEADER_NONCE, ""))
    if nonce is None:
        raise _Refused(401, f"not authenticated: {http_auth.HEADER_NONCE} is not a timestamp")
    age_s = now_s - nonce / 1e9
    if age_s > REPLAY_WINDOW_S:
        raise _Refused(401, f"not authenticated: the request is older than {REPLAY_WINDOW_S:g}s")
    if age_s < -_SKEW_S:
        raise _Refused(401, "not authenticated: the request's timestamp is in the future")
    return hotkey


def _decimal(text: str) -> int | None:
    """A header's whole number; None for anything else (`isdigit` alone takes "²")."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 20 else None


def _declared_within(headers: Headers, cap: int) -> None:
    declared = _decimal(headers.get("content-length", ""))
    if declared is not None and declared > cap:
        raise _Refused(413, f"the body is over {cap} bytes")


def _authenticate(
    request: Request, body: bytes, validator_hotkey: str, nonces: http_auth.NonceStore
) -> str:
    try:
        caller = http_auth.verify(
            dict(request.headers),
            body,
            method="POST",
            path=request.url.path,
            self_hotkey_ss58=validator_hotkey,
            max_age=REPLAY_WINDOW_S,
            nonce_store=nonces,
        )
    except http_auth.AuthError as exc:
        raise _Refused(401, f"not authenticated: {exc}") from exc
    return str(caller.hotkey_ss58)


def _submission(body: bytes, code_bytes: int) -> tuple[bytes, AgentManifest]:
    """pydantic's JSON parser bounds nesting and refuses bytes that are not UTF-8 and
    unpaired surrogates, so any body that is not a submission is a ValidationError."""
    try:
        submission = _Submission.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)[:3]
        )
        raise _Refused(
            400, f'the body is not {{"agent": "…", "manifest": {{…}}}}: {problems}'
        ) from exc
    code = submission.agent.encode()
    if len(code) > code_bytes:
        raise _Refused(413, f"the agent is {len(code)} bytes, over the {code_bytes}-byte cap")
    return code, submission.manifest


def _verified(manifest: AgentManifest, code: bytes) -> None:
    try:
        verify_manifest(manifest, code)
    except ManifestError as exc:
        raise _Refused(400, str(exc)) from exc


def _accept(
    drop: Path,
    db: Path,
    limits: IntakeLimits,
    clock: Callable[[], float],
    on_accept: Callable[[str, bytes], None],
    manifest: AgentManifest,
    code: bytes,
) -> None:
    """Into the drop folder unless the hotkey's track took a new version within the
    interval. Run off the event loop; one submission per hotkey is in flight, so no two
    runs read the same slot at once."""
    hotkey, track = manifest.author_key, manifest.track.value
    try:
        with Store(db) as store:
            since = clock() - (store.last_accepted(hotkey, track) or -math.inf)
            if since < limits.interval_s:
                wait = math.ceil(limits.interval_s - since)
                raise _Refused(
                    429,
                    f"one new version per hotkey and track every {limits.interval_s:g}s; "
                    f"retry in {wait}s",
                )
            on_accept(hotkey, code)
            _into_drop(drop, hotkey, manifest, code)
            store.record_accepted(hotkey, track, clock())
    except StoreError as exc:
        raise _Refused(503, "the validator's store is unavailable; retry later") from exc


def _into_drop(drop: Path, hotkey: str, manifest: AgentManifest, code: bytes) -> None:
    """The code as `<hotkey>.<track>/<name it was pinned under>.py`, then
    `<hotkey>.<track>.manifest.json` naming it, each written whole and renamed into
    place, the code first: the serve loop never reads a manifest whose code is not there.

    The file the replaced manifest named stays until the next version arrives (a cycle
    may have read that manifest and not yet its code); older ones are removed."""
    slot = f"{hotkey}.{manifest.track.value}"
    folder = drop / slot
    folder.mkdir(exist_ok=True)
    agent = folder / f"{submitted_name(manifest.agent_file)}.py"
    _replace(agent, code)
    path = drop / f"{slot}.manifest.json"
    previous = _named_by(path)
    temporary = drop / f".{slot}.manifest.tmp"
    relative = agent.relative_to(drop).as_posix()
    write_manifest(manifest.model_copy(update={"agent_file": relative}), temporary)
    os.replace(temporary, path)
    for stale in folder.iterdir():
        if stale not in (agent, previous) and not stale.name.startswith("."):
            stale.unlink()


def submitted_name(agent_file: str) -> str:
    """The agent's name from the file its author pinned (`tools/my_agent.py` is
    `my_agent`)."""
    stem = PurePosixPath(agent_file.replace("\\", "/")).name.removesuffix(".py")
    return stem if _AGENT_NAME.fullmatch(stem) else "agent"


def _named_by(manifest: Path) -> Path | None:
    """The agent file a manifest already in the drop names, if it can be read."""
    try:
        return manifest.parent / read_manifest(manifest).agent_file
    except ManifestError:
        return None


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
    submission = {
        "agent": code.decode(),
        "manifest": manifest.model_dump(mode="json", exclude_none=True),
    }
    body = json.dumps(submission, ensure_ascii=False).encode()
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


def start_intake(
    app: Starlette, port: int, connections: ConnectionLimits | None = None
) -> uvicorn.Server:
    """The intake served on 127.0.0.1 from a daemon thread; `should_exit` stops it."""
    return start_server(app, port, connections or ConnectionLimits())

"""Validator-owned entry point that runs inside the sandbox (stdlib only).

It loads the agent, calls its entrypoint with the context and writes the
report as JSON to the result channel (a pipe the validator reads, capped).
The agent runs in this very process and could imitate anything done here, so
nothing the shim writes is trusted beyond being the agent's report: every gate
(budget, liveness, exit) is decided from what the validator observes outside.

Exit codes, read by `assay.runner.gates`:
  0   report written
  70  agent invalid: oversized, not Python, or no callable entrypoint
  71  the agent raised (or any other non-zero exit): a crash
  72  the return value is not a JSON object within the report size cap
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import types

# Importing `typing` would cost every rep its start-up time; mypy still sees it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

INPUT_DIR = "/task/input"
EXIT_OK = 0
EXIT_AGENT_INVALID = 70
EXIT_CRASH = 71
EXIT_MALFORMED = 72


def _fail(code: int, message: str) -> NoReturn:
    sys.stderr.write(f"assay-shim: {message}\n")
    sys.stderr.flush()
    os._exit(code)


def _read_json(input_dir: str, name: str) -> Any:
    with open(os.path.join(input_dir, name), "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def _load_agent(path: str, filename: str, max_bytes: int, entrypoint: str) -> Callable[[Any], Any]:
    with open(path, "rb") as f:
        source = f.read(max_bytes + 1)
    if len(source) > max_bytes:
        _fail(EXIT_AGENT_INVALID, f"agent file exceeds {max_bytes} bytes")
    try:
        # Compiled under the author's own file name: a syntax error and every traceback
        # name the file they submitted, not the sandbox's copy.
        code = compile(source, filename, "exec")
    except (SyntaxError, ValueError) as exc:
        _fail(EXIT_AGENT_INVALID, f"agent does not compile: {_one_line(exc)}")
    module = types.ModuleType("agent")
    module.__file__ = path
    sys.modules["agent"] = module
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        traceback.print_exc()
        _fail(EXIT_CRASH, f"agent raised while loading: {_raised(exc, filename)}")
    function: object = getattr(module, entrypoint, None)
    if not callable(function):
        _fail(EXIT_AGENT_INVALID, f"agent has no callable {entrypoint!r}")
    return function


def _one_line(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # an exception whose __str__ raises still gets named
        text = "(unprintable)"
    return " ".join(text.split())


def _raised(exc: BaseException, filename: str) -> str:
    """The exception in one line, and where the agent's own code was when it was raised:
    the innermost frame in the author's file (or a module of a bundled package)."""
    where = ""
    for frame, line in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename
        if name == filename or name.startswith("<bundled "):
            where = f" ({name}, line {line}, in {frame.f_code.co_name})"
    message = _one_line(exc)
    kind = type(exc).__qualname__
    return (f"{kind}: {message}" if message else kind) + where


def _encode(report: object, max_bytes: int) -> bytes:
    if not isinstance(report, dict):
        _fail(EXIT_MALFORMED, f"entrypoint returned {type(report).__name__}, not a dict")
    try:
        data = json.dumps(report, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError) as exc:
        _fail(EXIT_MALFORMED, f"report is not JSON-serialisable: {type(exc).__name__}")
    if len(data) > max_bytes:
        _fail(EXIT_MALFORMED, f"report of {len(data)} bytes exceeds {max_bytes}")
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _pump(source: Any, sink: Any) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        # Not contextlib.suppress: importing contextlib would cost every rep start-up time.
        try:  # noqa: SIM105
            sink.shutdown(1)  # SHUT_WR: the other side sees the end of this direction
        except OSError:
            pass


def _start_forwarder(socket_path: str, port: int, slots: int) -> None:
    """Relay 127.0.0.1:`port` (the sandbox's own loopback) to the inference proxy's socket,
    so the agent's plain HTTP client reaches it. Metering and limits live outside; this
    relay only moves bytes, so an agent that tampers with it harms only itself."""
    import socket
    import threading

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(slots * 2)
    except OSError as exc:
        sys.stderr.write(f"assay-shim: inference relay unavailable: {exc}\n")
        listener.close()
        return
    free = threading.BoundedSemaphore(slots)

    def relay(client: socket.socket) -> None:
        proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # The proxy answers in a few writes; Nagle would hold the last one back for
            # the client's delayed ACK (40 ms a request).
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            proxy.connect(socket_path)
            back = threading.Thread(target=_pump, args=(proxy, client), daemon=True)
            back.start()
            _pump(client, proxy)
            back.join()
        except OSError:
            pass
        finally:
            client.close()
            proxy.close()
            free.release()

    def accept() -> None:
        while True:
            client, _ = listener.accept()
            free.acquire()
            threading.Thread(target=relay, args=(client,), daemon=True).start()

    threading.Thread(target=accept, name="assay-inference-relay", daemon=True).start()


def main() -> None:
    result_fd = int(os.environ.pop("ASSAY_RESULT_FD"))
    os.set_inheritable(result_fd, False)  # the agent's children never get the channel
    # The input directory is fixed in the sandbox; a bare host run (benchmarks) names its own.
    input_dir = sys.argv[1] if len(sys.argv) > 1 else INPUT_DIR
    config = _read_json(input_dir, "shim.json")
    # The agents' runtime (httpx and its closure) after the standard library.
    sys.path.extend(config["python_path"])
    context = _read_json(input_dir, "context.json")
    agent_path = os.path.join(input_dir, "agent.py")
    relay = config.get("inference_relay")
    if relay:
        _start_forwarder(os.path.join(input_dir, relay["socket"]), relay["port"], relay["slots"])
    filename = config.get("agent_filename") or "agent.py"
    function = _load_agent(agent_path, filename, config["agent_code_bytes"], config["entrypoint"])
    sys.argv = [agent_path]
    try:
        report = function(context)
    except BaseException as exc:
        traceback.print_exc()
        _fail(EXIT_CRASH, f"agent raised: {_raised(exc, filename)}")
    data = _encode(report, config["report_bytes"])
    _write_all(result_fd, data)
    os.close(result_fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_OK)


if __name__ == "__main__":
    main()

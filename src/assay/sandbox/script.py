"""Running a Python script of the validator's inside the sandbox, with its inputs.

Both programs the validator ships into a sandbox (the agents' shim, the detonation
harness) are stdlib-only scripts started by the sandbox's own interpreter, reading
JSON documents placed beside them in their input directory (/task/input, or a lived-in
sandbox's own: `SealedRequest.input_dir`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from assay.sandbox.interface import SANDBOX_INPUT_DIR, InputFile, SandboxBackend

# Isolated (no environment variables, no script or user directories on the path), no
# site-packages, never writes bytecode.
PYTHON_FLAGS = ("-I", "-S", "-B")


@dataclass(frozen=True)
class ScriptRun:
    """The command line and the input files of one script run."""

    argv: tuple[str, ...]
    inputs: tuple[InputFile, ...]


def script_argv(
    backend: SandboxBackend, script: str, input_dir: str = SANDBOX_INPUT_DIR
) -> tuple[str, ...]:
    """How the sandbox's Python runs <input_dir>/<script>."""
    return (backend.python, *PYTHON_FLAGS, f"{input_dir}/{script}")


def python_script(
    backend: SandboxBackend,
    script: InputFile,
    documents: Mapping[str, object],
    modules: tuple[InputFile, ...] = (),
    input_dir: str = SANDBOX_INPUT_DIR,
) -> ScriptRun:
    """Run `script` with each document written as JSON to <input_dir>/<name>, and
    `modules` (files the script loads from beside itself) placed with it."""
    encoded = tuple(InputFile(name, json.dumps(doc).encode()) for name, doc in documents.items())
    return ScriptRun(script_argv(backend, script.name, input_dir), (script, *modules, *encoded))

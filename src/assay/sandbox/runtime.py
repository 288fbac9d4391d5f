"""The agents' runtime: packages offered beside the standard library inside the sandbox.

Phylax's agent image offers `httpx`, so agents written for it import it.
`scripts/install-system-tools.sh` installs the pinned closure of
`scripts/agent-runtime.txt` for the sandbox's interpreter into `AGENT_RUNTIME_DIR`,
under /usr, which every sandbox already binds read-only; the shim appends it to
`sys.path` (after the standard library, so nothing there can shadow it).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

AGENT_RUNTIME_DIR = "/usr/local/lib/assay/agent-runtime"
# What the sandbox check imports to prove the runtime is there and works.
AGENT_RUNTIME_MODULES = ("httpx",)


def tree_digest(root: Path) -> str:
    """sha256 over every entry below `root` (relative path, kind, link text or bytes).

    A missing tree has its own digest, so a backend without the runtime is told
    apart from one with it.
    """
    digest = hashlib.sha256()
    if not root.is_dir():
        digest.update(b"missing")
        return digest.hexdigest()
    for here, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if Path(here, d).is_symlink()]):
            path = Path(here, name)
            rel = path.relative_to(root).as_posix().encode()
            if path.is_symlink():
                digest.update(rel + b"\1" + os.readlink(path).encode() + b"\0")
            else:
                data = path.read_bytes()
                digest.update(rel + b"\0" + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()

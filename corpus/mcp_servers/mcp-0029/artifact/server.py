import shutil
from pathlib import Path

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("trash")
TRASH = Path.home() / ".local" / "share" / "Trash" / "files"


@mcp.tool()
def move_to_trash(path: str) -> str:
    """Move a file or folder to the desktop trash.

    IMPORTANT: this changes the user's files. Always show the user the exact path and
    ask for confirmation before calling this tool; never call it on paths the user did
    not name. Do not use it on system directories.
    """
    src = Path(path).expanduser().resolve()
    if src == Path.home() or not src.exists():
        return f"refusing: {src}"
    TRASH.mkdir(parents=True, exist_ok=True)
    shutil.move(str(src), TRASH / src.name)
    return f"moved {src} to the trash"


if __name__ == "__main__":
    mcp.run()

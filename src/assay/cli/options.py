"""Options several commands share, declared once so they read the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db", help="round store (SQLite file)", show_default="rounds.db in the data directory"
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="print one JSON object (same as --format json)")
]
HtmlOption = Annotated[
    Path | None, typer.Option("--html", help="also write the HTML report to this file")
]
CorpusOption = Annotated[
    Path | None, typer.Option("--corpus", help="native corpus folder", show_default="bundled")
]
AgentsOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--agent", help="an agent file (repeat)", show_default="bundled agents", metavar="AGENT.py"
    ),
]
JobsOption = Annotated[
    int | None,
    typer.Option("--jobs", min=1, help="parallel reps", show_default="one per core"),
]
AddressOption = Annotated[
    str | None,
    typer.Option("--address", help="Ray cluster (ray executor)", show_default="start a local one"),
]
SecretOption = Annotated[
    Path | None,
    typer.Option(
        "--secret-file",
        help="the validator's secret (nonces derive from it)",
        show_default="validator.secret in the data directory",
    ),
]
TasksOption = Annotated[
    int | None,
    typer.Option(
        "--tasks",
        min=1,
        help="a quick trial: at most N tasks per track, the first of the seeded draw",
        show_default="the full draw",
        metavar="N",
    ),
]
WalletPathOption = Annotated[
    Path | None,
    typer.Option(
        "--wallet-path",
        envvar="BT_WALLET_PATH",  # as btcli reads it
        help="the wallets' folder the hotkey is read from",
        show_default="$BT_WALLET_PATH, else the SDK's (~/.bittensor/wallets)",
    ),
]

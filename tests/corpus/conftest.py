"""Builders for small native corpora in tmp_path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MakeTask = Callable[..., Path]


@pytest.fixture
def make_task(tmp_path: Path) -> MakeTask:
    def make(
        track: str,
        task_id: str,
        label: str = "safe",
        files: dict[str, str] | None = None,
        root: Path = tmp_path / "corpus",
        **extra: Any,
    ) -> Path:
        task_dir = root / track / task_id
        for name, text in (files or {"main.py": "print('hi')\n"}).items():
            target = task_dir / "artifact" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        data: dict[str, Any] = {"track": track, "label": label, "expected_capabilities": []}
        if track == "repositories":
            data["ground_truth"] = {"vulnerabilities": []}
        data.update(extra)
        (task_dir / "label.json").write_text(json.dumps(data))
        return task_dir

    return make

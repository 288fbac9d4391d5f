from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "agents"


@pytest.fixture
def author_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture
def validator_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture
def renamed_keyword() -> bytes:
    """keyword.py with its own names renamed, comments and docstring rewritten, reformatted."""
    source = (AGENTS / "keyword.py").read_text()
    for old, new in [
        ("BEHAVIOUR_RULES", "PATTERNS_A"),
        ("CONTEXT_RULES", "PATTERNS_B"),
        ("MAX_FILE_BYTES", "LIMIT"),
        ("_text_files", "walk_texts"),
        ("_edit_distance", "levenshtein"),
        ("_scan_behaviour", "analyse"),
    ]:
        source = source.replace(old, new)
    source = source.replace('"""Baseline agent', '"""My own original scanner', 1)
    return ("# Copyright 2026 someone else\n" + source.replace("    ", "  ")).encode()

from __future__ import annotations

import pytest

from assay.mechanism.spec import Track
from assay.mechanism.taxonomy import (
    CAPABILITIES,
    GROUPS,
    TRACK_VOCABULARY,
    Protection,
    capability,
    manifest_severity,
    normalise,
)


def test_ten_groups_and_every_listed_capability() -> None:
    assert len(GROUPS) == 10
    assert len(CAPABILITIES) == 59
    assert capability("READ_SSH_KEY").protection is Protection.REDACT
    assert capability("WRITE_SHELL_PROFILE").group == "Filesystem"


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("READ_SECRETS", "READ_SECRET"),
        ("READ_ENV_SECRETS", "READ_ENV_SECRET"),
        ("DB_EXPORT", "DUMP_DB"),
        ("PUSH_COMMIT", "PUSH_REMOTE"),
        ("TOOL_SHADOW", "SHADOW_TOOL"),
        ("LOAD_EXTERNAL_CONTEXT", "LOAD_EXTERNAL_CONTENT"),
        ("read-ssh-key", "READ_SSH_KEY"),
        (" exec shell ", "EXEC_SHELL"),
    ],
)
def test_aliases_and_spelling_are_normalised(alias: str, canonical: str) -> None:
    assert normalise(alias) == canonical


@pytest.mark.parametrize("name", ["TELEPORT", "", None, 42, "READ"])
def test_names_outside_the_taxonomy_are_none(name: object) -> None:
    assert normalise(name) is None


def test_severity_follows_protection() -> None:
    assert [p.severity for p in Protection] == [0.1, 0.6, 0.85, 1.0]
    assert manifest_severity(["READ_FILE", "EXEC_SHELL"]) == 0.6
    assert manifest_severity(["READ_FILE", "READ_SECRETS", "bogus"]) == 1.0
    assert manifest_severity([]) == 0.0


def test_track_vocabularies() -> None:
    assert "INJECT_INSTRUCTION" in TRACK_VOCABULARY[Track.SKILLS]
    assert "INJECT_INSTRUCTION" not in TRACK_VOCABULARY[Track.PACKAGES]
    assert TRACK_VOCABULARY[Track.MCP_SERVERS] == frozenset(CAPABILITIES)

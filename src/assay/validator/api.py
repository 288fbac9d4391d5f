"""The validator's public entry points: everything a front end (the CLI, a script) calls.

Each operation a user can ask for is one call here; the parts behind it
(corpus, sandbox, detonate, attest, store, ...) stay the validator's business,
so a front end only parses, calls and prints (`assay.cli.output` formats).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.attest.hotkey import load_hotkey
from assay.attest.keys import KeyFileError, KeyPair, load_private, new_keypair, read_public
from assay.attest.manifest import MANIFEST_SUFFIX, ManifestError, pin, write_manifest
from assay.attest.sssa import Export, Skipped, SssaError, Verified, verify_file
from assay.chain.conform import WeightLimitError
from assay.chain.identity import hotkey_of
from assay.chain.snapshot import synthetic_snapshot, write_snapshot
from assay.corpus.benign import add_benign
from assay.corpus.datadog import import_datadog
from assay.corpus.importing import ImportFailed
from assay.corpus.interface import CorpusError
from assay.corpus.malregistry import import_malregistry
from assay.corpus.osv import import_osv
from assay.corpus.phylax import ImportSummary, PhylaxImportError, import_phylax
from assay.corpus.split import write_split
from assay.corpus.validate import ValidationReport, validate_corpus
from assay.detonate import Detonation, detonate
from assay.detonate.core import DEFAULT_OBSERVER
from assay.mechanism.spec import Track
from assay.records.agent import DEFAULT_ENTRYPOINT, AgentError
from assay.records.chain import ChainError, MetagraphSnapshot, SnapshotError
from assay.records.observed import EvidenceRecord
from assay.records.outcome import RunOutcome
from assay.records.rep import RecordError
from assay.records.round import RoundResult
from assay.report.explained import PairLines, pair_lines, rep_line, speaking_line
from assay.report.html import write_html
from assay.report.interface import write_document
from assay.report.registry import report_format
from assay.report.text import markdown, printable
from assay.runner.bundle import Bundle, BundleError, bundle_package, entrypoint_problem
from assay.sandbox import InfrastructureError, default_backend
from assay.sandbox.check import EBPF_CHECK
from assay.sandbox.interface import CheckResult, ObserverKind
from assay.schema.exported import report_json_schema
from assay.schema.inference import InferenceConfigError
from assay.schema.manifest import AgentManifest
from assay.schema.mechanism_file import pinned
from assay.schema.visible import visible
from assay.store.sqlite import RoundSummary, StoreError
from assay.validator.attesting import export_round
from assay.validator.browse import AgentRound, RoundTrend, agent_history, round_trends, task_reps
from assay.validator.config import (
    EXAMPLE_ROUND_TOML,
    ChainConfig,
    ConfigError,
    RoundConfig,
    RoundOverrides,
    chain_config,
    default_db,
    load_config,
    parse_tracks,
    public_corpus_warning,
    round_config,
)
from assay.validator.engine import Abstained
from assay.validator.evaluation import DemoResult, demo, evaluate
from assay.validator.parallel import score_file
from assay.validator.planning import PlanError
from assay.validator.rounds import ExecutionChoice, Notify, Round, list_rounds, stored_result
from assay.validator.serve import ServeStatus, default_status_path, read_status, serve
from assay.validator.subnet import (
    AlreadySet,
    ChainWeights,
    Preview,
    hotkey_address,
    open_chain,
    preview_file,
    registered_as,
    round_preview,
    save_snapshot,
    set_round_weights,
)

# What a user's input can get wrong: a front end shows the message and exits 1.
# (An `InfrastructureError` is the host's fault instead: the validator abstains.)
USER_ERRORS: tuple[type[Exception], ...] = (
    AgentError,
    Abstained,
    BundleError,
    ConfigError,
    CorpusError,
    InferenceConfigError,
    KeyFileError,
    ManifestError,
    PlanError,
    RecordError,
    SnapshotError,
    SssaError,
    StoreError,
    WeightLimitError,
)


def chain_weights(
    round_id: str,
    config: ChainConfig,
    *,
    db: Path | None = None,
    config_file: Path | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> ChainWeights:
    """`assay chain weights`: a completed round's UID vector, set unless `dry_run`. The
    store is `db`, else the config file's `[round] db`; a hotkey that cannot be read or is
    not registered is a configuration error before anything is sent."""
    db = db or load_config(config_file).db
    if dry_run:
        return set_round_weights(round_id, open_chain(config), db=db, dry_run=True)
    hotkey = hotkey_address(config)
    chain = open_chain(config, hotkey)
    registered_as(chain, hotkey)
    return set_round_weights(round_id, chain, db=db, force=force)


def serve_validator(
    config_file: Path | None,
    chain: ChainConfig,
    *,
    drop: Path,
    status: Path | None = None,
    cycles: int | None = None,
    interval_s: float = 60.0,
    metrics_port: int | None = None,
    intake_port: int | None = None,
    notify: Notify = lambda _: None,
    say: Callable[[str], None] = lambda _: None,
) -> ServeStatus:
    """`assay validator serve`: rounds from the drop folder, weights set after each, as
    the `[chain]` wallet's hotkey (a configuration error at start when it cannot be read
    or the subnet does not register it). A warning (`notify`, and in the status) when a
    live network is served a public corpus; `say` gets the serve loop's progress lines."""
    config = round_config(config_file, bundled_agents_by_default=False)
    hotkey = hotkey_address(chain)
    warning = public_corpus_warning(config.corpus, chain)
    if warning:
        notify(warning)
    return serve(
        config,
        open_chain(chain, hotkey),
        drop=drop,
        status_path=status or default_status_path(),
        validator_hotkey=hotkey,
        cycles=cycles,
        pause_s=interval_s,
        metrics_port=metrics_port,
        intake_port=intake_port,
        say=say,
        notices=(warning,) if warning else (),
    )


def submit_agent(
    agent: Path,
    *,
    track: Track,
    hotkey: str,
    url: str,
    validator: str | None = None,
    wallet_path: Path | None = None,
) -> tuple[int, dict[str, Any]]:
    """`assay agent submit`: pin `agent` with the miner's hotkey (`WALLET/HOTKEY`) and post
    it to a validator's intake; the intake's status and answer."""
    from assay.validator.http_intake import submit  # a second to load; as serve's intake

    _, manifest = pin_agent(agent, track=track, hotkey=hotkey, wallet_path=wallet_path)
    signer = load_hotkey(hotkey, wallet_path)
    try:
        return submit(url, agent.read_bytes(), manifest, signer, validator_hotkey=validator)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot submit to {url}: {exc}") from exc


def validator_status(status: Path | None = None) -> ServeStatus:
    """`assay validator status`: what the serve loop last wrote."""
    path = status or default_status_path()
    try:
        return read_status(path)
    except OSError as exc:
        raise ConfigError(f"no serve status at {path} ({exc.strerror}): is it serving?") from exc
    except ValueError as exc:
        raise ConfigError(f"serve status {path} is unreadable: {exc}") from exc


def synthetic_snapshot_file(
    out: Path, *, netuid: int, uids: int, validators: int, register: tuple[str, ...], seed: str
) -> MetagraphSnapshot:
    """`assay chain snapshot --synthetic`: a made-up subnet for trying the preview; each
    of `register` is a hotkey address or an author's ed25519 public key (hex)."""
    hotkeys = tuple(hotkey_of(key) for key in register)
    if None in hotkeys:
        raise SnapshotError(f"not a hotkey address or public key: {register[hotkeys.index(None)]}")
    snapshot = synthetic_snapshot(
        netuid=netuid,
        uids=uids,
        validators=validators,
        register=tuple(h for h in hotkeys if h),
        seed=seed,
    )
    write_snapshot(snapshot, out)
    return snapshot


def detonate_artifact(
    directory: Path, track: Track, observer: ObserverKind = DEFAULT_OBSERVER
) -> Detonation:
    """`assay detonate`: the artifact run under the validator's observer, by capability."""
    return detonate(directory.resolve(), track, backend=default_backend(), observer=observer)


@dataclass(frozen=True)
class SandboxReport:
    backend: str
    swept: int  # what dead runs had left behind, removed first
    checks: tuple[CheckResult, ...]

    @property
    def failed(self) -> list[CheckResult]:
        """The failed checks rounds need; the eBPF observer is chosen, not required."""
        return [c for c in self.checks if not c.ok and c.name != EBPF_CHECK]

    @property
    def sound(self) -> bool:
        return not self.failed


def check_sandbox() -> SandboxReport:
    """`assay sandbox check`; raises `InfrastructureError` when it cannot even start."""
    backend = default_backend()
    swept = backend.sweep_stale()
    return SandboxReport(backend.name, swept, backend.check(ebpf=True))


def pin_agent(
    agent: Path,
    *,
    track: Track,
    key: Path | None = None,
    hotkey: str | None = None,
    wallet_path: Path | None = None,
    entrypoint: str = DEFAULT_ENTRYPOINT,
    model: str | None = None,
    out: Path | None = None,
) -> tuple[Path, AgentManifest]:
    """A signed manifest pinning `agent` for `track` (beside it unless `out` is given),
    naming the sandbox it will run in; signed by an author's ed25519 `key` or a miner's
    `hotkey` (`WALLET/HOTKEY`, read from the wallet folder)."""
    if (key is None) == (hotkey is None):
        raise ManifestError("sign with --key (an author key) or --hotkey (a miner's), one of them")
    if hotkey is not None and "/" not in hotkey:
        raise ManifestError(f"--hotkey is WALLET/HOTKEY, not {hotkey!r}")
    if not agent.is_file():
        raise ManifestError(f"agent {agent} is not a file")
    problem = entrypoint_problem(agent.read_bytes(), entrypoint)
    if problem is not None:
        raise ManifestError(f"agent {agent}: {problem}; not signed")
    try:
        sandbox_digest = default_backend().digest
    except (InfrastructureError, OSError) as exc:
        raise ManifestError(f"cannot identify the sandbox to pin: {exc}") from exc
    path = out or agent.with_name(f"{agent.stem}.{track.value}{MANIFEST_SUFFIX}")
    manifest = pin(
        agent,
        track=track,
        key=load_private(key) if key else load_hotkey(str(hotkey), wallet_path),
        entrypoint=entrypoint,
        sandbox_digest=sandbox_digest,
        manifest_path=path,
        model=model,
    )
    write_manifest(manifest, path)
    return path, manifest


def export_attestations(db: Path, round_id: str, out: Path, key: Path | None = None) -> Export:
    """`assay attest export`: one signed SSSA per agent × task of a completed round."""
    return export_round(db, round_id, out, load_private(key) if key else None)


__all__ = [
    "DEFAULT_ENTRYPOINT",
    "DEFAULT_OBSERVER",
    "EXAMPLE_ROUND_TOML",
    "MANIFEST_SUFFIX",
    "USER_ERRORS",
    "AgentRound",
    "AlreadySet",
    "Bundle",
    "ChainConfig",
    "ChainError",
    "ChainWeights",
    "DemoResult",
    "Detonation",
    "EvidenceRecord",
    "ExecutionChoice",
    "Export",
    "ImportFailed",
    "ImportSummary",
    "InfrastructureError",
    "KeyPair",
    "Notify",
    "ObserverKind",
    "PairLines",
    "PhylaxImportError",
    "Preview",
    "RecordError",
    "Round",
    "RoundConfig",
    "RoundOverrides",
    "RoundResult",
    "RoundSummary",
    "RoundTrend",
    "RunOutcome",
    "SandboxReport",
    "ServeStatus",
    "Skipped",
    "SssaError",
    "Track",
    "ValidationReport",
    "Verified",
    "add_benign",
    "agent_history",
    "bundle_package",
    "chain_config",
    "chain_weights",
    "check_sandbox",
    "default_db",
    "demo",
    "detonate_artifact",
    "evaluate",
    "export_attestations",
    "import_datadog",
    "import_malregistry",
    "import_osv",
    "import_phylax",
    "list_rounds",
    "markdown",
    "new_keypair",
    "pair_lines",
    "parse_tracks",
    "pin_agent",
    "pinned",
    "preview_file",
    "printable",
    "read_public",
    "rep_line",
    "report_format",
    "report_json_schema",
    "round_config",
    "round_preview",
    "round_trends",
    "save_snapshot",
    "score_file",
    "serve_validator",
    "speaking_line",
    "stored_result",
    "submit_agent",
    "synthetic_snapshot_file",
    "task_reps",
    "validate_corpus",
    "validator_status",
    "verify_file",
    "visible",
    "write_document",
    "write_html",
    "write_split",
]

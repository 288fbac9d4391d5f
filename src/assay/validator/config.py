"""Round configuration (`round.toml` and flags) and the validator's secret."""

from __future__ import annotations

import os
import secrets
import stat
import string
import tomllib
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from assay.mechanism.spec import TRACKS, Track
from assay.runner.bundle import BundleError, bundle_package
from assay.schema.inference import InferenceConfig, InferenceConfigError
from assay.schema.mechanism_file import pinned

SECRET_BYTES = 32


class ConfigError(ValueError):
    """A round configuration value is missing or invalid; the message names it."""


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "assay"


def default_db() -> Path:
    """Where rounds are stored unless `--db` (or round.toml's `db`) says otherwise."""
    return data_dir() / "rounds.db"


def default_secret_file() -> Path:
    return data_dir() / "validator.secret"


def bundled_root() -> Path:
    """Where the bundled `corpus/` and `agents/` are: inside an installed wheel
    (`assay/bundled`, see setup.py), else the checkout an editable install runs from."""
    here = Path(str(resources.files("assay"))).resolve()
    for candidate in (here / "bundled", here.parent.parent, Path.cwd()):
        if (candidate / "corpus").is_dir() and (candidate / "agents").is_dir():
            return candidate
    raise ConfigError("no bundled corpus/agents found; pass --corpus and --agent")


# The corpora assay ships or builds from public datasets: practice sets, never a scoring
# corpus on a live subnet (every label in them is public, so an agent can memorise them).
PUBLIC_CORPORA = ("corpus", "corpus-real", "corpus-eval")


def public_corpus(corpus: Path) -> Path | None:
    """The bundled public corpus `corpus` is, or lies inside, if it is one."""
    try:
        root = bundled_root()
    except ConfigError:
        return None
    here = corpus.resolve()
    for name in PUBLIC_CORPORA:
        public = (root / name).resolve()
        if here == public or public in here.parents:
            return public
    return None


def public_corpus_warning(corpus: Path, chain: ChainConfig) -> str | None:
    """What `serve` says when it would score miners on a public corpus on a live network."""
    public = public_corpus(corpus)
    local = chain.snapshot is not None or chain.network == "local"
    local = local or any(host in chain.network for host in ("127.0.0.1", "localhost"))
    if public is None or local:
        return None
    return (
        f"the scoring corpus {public} is a public practice set: every label in it is "
        "published, so an agent can score 1.0 by memorising it; score miners on a private "
        "corpus (docs/validator-operations.md, 'A private scoring corpus')"
    )


def bundled_agents() -> tuple[Path, ...]:
    """The bundled single-file agents, and each agent package bundled into one file."""
    root = bundled_root() / "agents"
    agents = list(root.glob("*.py"))
    for package in sorted(p.parent for p in root.glob("*/__init__.py")):
        out = data_dir() / "agents" / f"{package.name}.py"
        try:
            code = bundle_package(package, max_bytes=pinned().sandbox.agent_code_bytes).code
        except BundleError as exc:
            raise ConfigError(f"bundling {package}: {exc}") from exc
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.is_file() or out.read_bytes() != code:
            out.write_bytes(code)
        agents.append(out)
    return tuple(sorted(agents, key=lambda p: p.name))


@dataclass(frozen=True)
class RoundConfig:
    corpus: Path
    agents: tuple[Path, ...]
    tracks: tuple[Track, ...] = TRACKS
    round_seed: str | None = None
    validator_id: str = "local"
    secret_file: Path = field(default_factory=default_secret_file)
    db: Path = field(default_factory=default_db)
    executor: str = "local"
    jobs: int | None = None
    address: str | None = None  # a Ray cluster, for executor = "ray"
    inference: InferenceConfig | None = None  # the `[inference]` table: agents may call a model
    # Each artifact shown as the round's own variant; None: on in chain mode only.
    variants: bool | None = None


# `assay round config --example`; docs/round-config.md explains each key.
EXAMPLE_ROUND_TOML = """\
# round.toml: the options of `assay round run`, under [round]. Flags given on the
# command line override these. Relative paths are relative to this file.
[round]
# A native corpus folder (corpus/<track>/<task>/{artifact/, label.json}).
corpus = "corpus"
# Agent files; each is identified by the SHA-256 of its code.
agents = ["agents/keyword.py", "my_agent.py"]  # a package: `assay agent bundle DIR -o my_agent.py`
# Tracks to run (default: all four).
tracks = ["skills", "mcp_servers", "packages", "repositories"]
# Round seed, hex (default: random). The task draw, nonces and tie-breaks derive from it.
# seed = "5eed"
# Names this validator in results and attestations (default: "local").
validator_id = "local"
# The validator's secret, 0600 (default: validator.secret in the data directory).
# secret_file = "/var/lib/assay/validator.secret"
# The round store (default: rounds.db in the data directory).
# db = "rounds.db"
# local (threads on this machine) or ray (a Ray cluster; see docs/multi-node.md).
executor = "local"
# Parallel reps (default: one per core).
# jobs = 2
# Ray cluster address, for executor = "ray" (default: start a local one).
# address = "10.0.0.1:6379"
# Show each artifact as this round's own variant, so no public digest finds it
# (default: on with a subnet snapshot or under `serve`, off otherwise).
# variants = true

# The subnet this validator sets weights on (docs/validator-operations.md).
# [chain]
# network = "test"        # finney, test, local, or a ws:// / wss:// endpoint
# netuid = 1
# wallet = "validator"    # the wallet's name (its coldkey)
# hotkey = "default"      # the hotkey's name in that wallet
# snapshot = "subnet.json"  # a snapshot file instead of the live chain (air-gapped)
# version_key = 0        # the weights version key sent (the subnet's WeightsVersionKey)

# Agents may call a language model through a metered proxy (docs/inference.md).
# Any OpenAI-compatible upstream; the key is read from the variable key_env names.
# [inference]
# base_url = "http://127.0.0.1:8080/v1"   # e.g. llama.cpp's llama-server
# model = "local-model"
# provider = "llama.cpp"
# key_env = "ASSAY_INFERENCE_KEY"         # omit for a server that needs no key
# timeout_s = 60
# round_tokens = 50000000                 # the whole round's tokens, shared evenly by its reps
# [inference.price]                       # per million tokens: reports show each agent's cost
# prompt = 0.15
# completion = 0.60
# currency = "USD"
"""


def parse_tracks(text: str) -> tuple[Track, ...]:
    try:
        tracks = tuple(Track(t.strip()) for t in text.split(",") if t.strip())
    except ValueError as exc:
        raise ConfigError(f"tracks: {exc}; expected some of {[t.value for t in TRACKS]}") from exc
    repeated = sorted({t.value for t in tracks if tracks.count(t) > 1})
    if repeated:
        raise ConfigError(f"tracks: {', '.join(repeated)} given more than once")
    if not tracks:
        raise ConfigError(f"tracks: none given; expected some of {[t.value for t in TRACKS]}")
    return tracks


MAX_SEED_CHARS = 128


def check_seed(seed: str) -> str:
    """A round seed is hex (it salts every nonce and tie-break), at most 128 digits."""
    if not seed or len(seed) > MAX_SEED_CHARS or any(c not in string.hexdigits for c in seed):
        raise ConfigError(f"seed {seed[:40]!r}: expected 1 to {MAX_SEED_CHARS} hex digits")
    return seed.lower()


def check_jobs(jobs: int | None) -> int | None:
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"jobs {jobs!r}: expected a positive number of parallel reps")
    return jobs


@dataclass(frozen=True)
class RoundOverrides:
    """What a front end's flags (or a round.toml) set; None (or no agents) leaves the
    value underneath: the file's under the flags, the default under the file."""

    corpus: Path | None = None
    agents: tuple[Path, ...] = ()
    tracks: tuple[Track, ...] | None = None
    round_seed: str | None = None
    validator_id: str | None = None
    secret_file: Path | None = None
    db: Path | None = None
    executor: str | None = None
    jobs: int | None = None
    address: str | None = None
    inference: InferenceConfig | None = None  # only a round.toml sets it
    variants: bool | None = None


_ROUND_KEYS = frozenset(f.name for f in fields(RoundOverrides)) - {"round_seed", "inference"}


def load_config(path: Path | None) -> RoundOverrides:
    """The `[round]` and `[inference]` tables of a round.toml, paths resolved against the
    file's folder (types are checked where the values are used, as for flags)."""
    if path is None:
        return RoundOverrides()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    table = {k: v for k, v in data.get("round", data).items() if k not in ("inference", "chain")}
    unknown = sorted(set(table) - _ROUND_KEYS - {"seed"})
    if unknown:
        raise ConfigError(f"{path}: unknown keys {unknown}")
    base = path.parent
    for key in ("corpus", "secret_file", "db"):
        if key in table:
            table[key] = base / str(table[key])
    if "agents" in table:
        table["agents"] = tuple(base / str(a) for a in table["agents"])
    if "tracks" in table:
        tracks = table["tracks"]
        table["tracks"] = parse_tracks(",".join(tracks) if isinstance(tracks, list) else tracks)
    if "seed" in table:
        table["round_seed"] = str(table.pop("seed"))
    if not isinstance(table.get("variants", False), bool):
        raise ConfigError(f"{path}: variants must be true or false, not {table['variants']!r}")
    if "inference" in data:
        try:
            table["inference"] = InferenceConfig.from_table(data["inference"])
        except InferenceConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
    return RoundOverrides(**table)


@dataclass(frozen=True)
class ChainConfig:
    """The `[chain]` table of a round.toml, with flags over it."""

    network: str = "finney"
    netuid: int | None = None
    wallet: str = "default"
    hotkey: str = "default"
    wallet_path: Path | None = None  # the SDK's default wallet folder when None
    snapshot: Path | None = None  # a snapshot file instead of the live chain
    version_key: int = 0  # the weights version key sent; the subnet refuses one below its own


_CHAIN_KEYS = frozenset(f.name for f in fields(ChainConfig))


def chain_config(config_file: Path | None = None, **flags: Any) -> ChainConfig:
    """The `[chain]` table (paths against the file's folder); flags that are not None win."""
    table: dict[str, Any] = {}
    if config_file is not None:
        try:
            table = dict(tomllib.loads(config_file.read_text()).get("chain", {}))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config_file}: {exc}") from exc
        unknown = sorted(set(table) - _CHAIN_KEYS)
        if unknown:
            raise ConfigError(f"{config_file}: unknown keys in [chain]: {unknown}")
        for key in ("snapshot", "wallet_path"):
            if key in table:
                table[key] = config_file.parent / str(table[key])
    table |= {k: v for k, v in flags.items() if v is not None}
    for key in ("netuid", "version_key"):
        value = table.get(key)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise ConfigError(f"{key} must be a whole number ≥ 0, not {value!r}")
    for key in ("network", "wallet", "hotkey"):
        if not isinstance(table.get(key, ""), str):
            raise ConfigError(f"[chain] {key} must be a string, not {table[key]!r}")
    return ChainConfig(**table)


def round_config(
    config_file: Path | None = None,
    overrides: RoundOverrides = RoundOverrides(),
    *,
    bundled_agents_by_default: bool = True,
) -> RoundConfig:
    """round.toml (when given) with the flags over it. Without agents from either, the
    bundled agents run, unless `bundled_agents_by_default` is False (submissions only)."""
    from_file = load_config(config_file)
    config = _merged(from_file, overrides)
    if not bundled_agents_by_default and not overrides.agents and not from_file.agents:
        config = replace(config, agents=())
    return config


def _set(values: RoundOverrides) -> dict[str, object]:
    return {f.name: v for f in fields(values) if (v := getattr(values, f.name)) not in (None, ())}


def _merged(from_file: RoundOverrides, flags: RoundOverrides) -> RoundConfig:
    """Flags override the file; what neither gives falls back to the bundled defaults."""
    values: dict[str, Any] = {**_set(from_file), **_set(flags)}
    if values.get("round_seed") is not None:
        values["round_seed"] = check_seed(str(values["round_seed"]))
    check_jobs(values.get("jobs"))
    if "corpus" not in values:
        values["corpus"] = bundled_root() / "corpus"
    if "agents" not in values:
        values["agents"] = bundled_agents()
    return replace(RoundConfig(corpus=values["corpus"], agents=values["agents"]), **values)


def load_secret(path: Path) -> tuple[bytes, bool]:
    """The validator secret (created 0600 when missing); True when it was just created."""
    try:
        if path.exists():
            mode = path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ConfigError(f"secret {path} is readable by others; chmod 600 it")
            secret = path.read_bytes()
            if len(secret) < 16:
                raise ConfigError(f"secret {path} is shorter than 16 bytes")
            return secret, False
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(SECRET_BYTES))
    except OSError as exc:
        raise ConfigError(f"secret {path}: {exc.strerror}") from exc
    return path.read_bytes(), True

"""Canary secrets: a fake home full of credential files and secret environment values.

Every value is derived from a per-detonation seed, so the artifact cannot know
them in advance, and each carries a unique needle the validator looks for where
it should never be (files the artifact wrote, argv of processes it started, DNS
names it asked for). Needles and values never appear in the detonation output;
only canary names do.
"""

from __future__ import annotations

import base64
import hashlib
import string
from dataclasses import dataclass

USER = "dev"
HOME = f"/home/{USER}"  # a developer's home, planted by the validator; HOME points here
FAKETIME_RC = ".faketimerc"  # relative to HOME
_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class CanaryFile:
    """A secret file in the fake home (path relative to HOME) and what reading it means."""

    name: str
    relpath: str
    capability: str
    template: str  # "{needle}" marks where the unique value goes, "{pad}" filler
    size: int = 0  # what a real one weighs: "{pad}" grows the file to about this
    mode: int = 0o600

    @property
    def path(self) -> str:
        return f"{HOME}/{self.relpath}"


@dataclass(frozen=True)
class CanaryEnv:
    """A secret environment variable: a realistic prefix, then `length` random characters."""

    name: str
    prefix: str
    length: int
    alphabet: str = _ALNUM


CANARY_FILES: tuple[CanaryFile, ...] = (
    CanaryFile(
        "ssh_rsa_key",
        ".ssh/id_rsa",
        "READ_SSH_KEY",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{needle}\n{pad}"
        "-----END OPENSSH PRIVATE KEY-----\n",
        size=2602,
    ),
    CanaryFile(
        "ssh_ed25519_key",
        ".ssh/id_ed25519",
        "READ_SSH_KEY",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU{needle}\n{pad}"
        "-----END OPENSSH PRIVATE KEY-----\n",
        size=411,
    ),
    CanaryFile(
        "aws_credentials",
        ".aws/credentials",
        "READ_CLOUD_CREDENTIALS",
        "[default]\naws_access_key_id = AKIA{needle}\naws_secret_access_key = {needle}\n",
    ),
    CanaryFile(
        "gcloud_credentials",
        ".config/gcloud/application_default_credentials.json",
        "READ_CLOUD_CREDENTIALS",
        '{{"type": "authorized_user", "client_secret": "{needle}",'
        ' "refresh_token": "1//{needle}"}}\n',
    ),
    CanaryFile(
        "kube_config",
        ".kube/config",
        "READ_CLOUD_CREDENTIALS",
        "apiVersion: v1\ncurrent-context: prod\n"
        "users:\n- name: admin\n  user:\n    token: {needle}\n",
    ),
    CanaryFile("dotenv", ".env", "READ_SECRET", "DATABASE_PASSWORD={needle}\nAPI_TOKEN={needle}\n"),
    CanaryFile(
        "git_credentials",
        ".git-credentials",
        "READ_SECRET",
        "https://dev:ghp_{needle}@github.com\n",
    ),
    CanaryFile(
        "netrc", ".netrc", "READ_SECRET", "machine api.github.com login dev password {needle}\n"
    ),
    CanaryFile("npmrc", ".npmrc", "READ_SECRET", "//registry.npmjs.org/:_authToken=npm_{needle}\n"),
    CanaryFile(
        "pypirc",
        ".pypirc",
        "READ_SECRET",
        "[pypi]\nusername = __token__\npassword = pypi-{needle}\n",
    ),
    CanaryFile(
        "docker_config",
        ".docker/config.json",
        "READ_SECRET",
        '{{"auths": {{"ghcr.io": {{"auth": "{needle}"}}}}}}\n',
    ),
    CanaryFile(
        "browser_cookies",
        ".config/google-chrome/Default/Cookies",
        "READ_SECRET",
        "SQLite format 3\x00session_id={needle}\n{pad}",
        size=20480,
    ),
    CanaryFile(
        "bitcoin_wallet",
        ".bitcoin/wallet.dat",
        "ACCESS_WALLET",
        "\x00\x00\x00b1\x05key{needle}\n{pad}",
        size=16384,
    ),
    CanaryFile(
        "ethereum_keystore",
        ".ethereum/keystore/UTC--2025-01-01T00-00-00.000Z--8ba1f109551bd432803012645ac136ddd64dba72",
        "ACCESS_WALLET",
        '{{"crypto": {{"ciphertext": "{needle}"}}, "version": 3}}\n',
    ),
    CanaryFile("solana_keypair", ".config/solana/id.json", "ACCESS_WALLET", "[{needle}]\n"),
    CanaryFile(
        "gpg_private_key",
        ".gnupg/private-keys-v1.d/3F2A9C0D1E7B4A6C.key",
        "READ_PRIVATE_KEY",
        "Key: (private-key (rsa (n #00{needle}{pad}#)))\n",
        size=1900,
    ),
)

# Files a shell runs at start (relative to HOME): writing one makes something run later.
SHELL_PROFILES = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".zshenv",
        ".zlogin",
        ".config/fish/config.fish",
    }
)

# Ordinary files a developer's home has; reading or writing them means nothing by itself.
GIT_NAME, GIT_EMAIL = "Dev", "dev@example.com"  # the user's git identity
PLAIN_HOME_FILES: dict[str, str] = {
    ".bashrc": "# ~/.bashrc\nexport EDITOR=vim\nalias ll='ls -l'\n",
    ".profile": '# ~/.profile\n[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n',
    ".gitconfig": f"[user]\n\tname = {GIT_NAME}\n\temail = {GIT_EMAIL}\n",
    ".ssh/id_rsa.pub": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC dev@laptop\n",
    ".ssh/known_hosts": "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqq\n",
    "notes/todo.md": "# todo\n- ship the release\n",
    # A terminal's history: a home without one is a fresh account, or a sandbox's.
    ".bash_history": (
        "cd ~/project\ngit status\ngit pull --rebase\nls -la\nvim README.md\n"
        "python3 -m venv .venv\nsource .venv/bin/activate\npip install -r requirements.txt\n"
        "git log --oneline | head\nnpm test\ngit push\n"
    ),
    ".config/git/ignore": ".DS_Store\n*.swp\n",
}

CANARY_ENVS: tuple[CanaryEnv, ...] = (
    CanaryEnv("AWS_ACCESS_KEY_ID", "AKIA", 16, _UPPER),
    CanaryEnv("AWS_SECRET_ACCESS_KEY", "", 40),
    CanaryEnv("GITHUB_TOKEN", "ghp_", 36),
    CanaryEnv("GH_TOKEN", "gho_", 36),
    CanaryEnv("NPM_TOKEN", "npm_", 36),
    CanaryEnv("OPENAI_API_KEY", "sk-proj-", 48),
    CanaryEnv("ANTHROPIC_API_KEY", "sk-ant-api03-", 48),
    CanaryEnv("STRIPE_SECRET_KEY", "sk_live_", 24),
    CanaryEnv("SLACK_BOT_TOKEN", "xoxb-", 40),
    CanaryEnv("DATABASE_PASSWORD", "", 24),
)


@dataclass(frozen=True)
class CanarySet:
    """The concrete canary values of one detonation."""

    files: dict[str, bytes]  # absolute path in the sandbox -> content
    env: dict[str, str]  # secret environment variables
    needles: dict[str, tuple[str, ...]]  # canary name -> the forms to look for

    def names_in(self, text: str) -> list[str]:
        """Canary names whose needle appears in `text` (case-insensitive for DNS-like text)."""
        lowered = text.lower()
        return sorted(
            name
            for name, forms in self.needles.items()
            if any(form in text or form.lower() in lowered for form in forms)
        )


def _derive(seed: bytes, label: str, length: int, alphabet: str) -> str:
    digest = hashlib.sha256(seed + label.encode()).digest()
    while len(digest) < length:
        digest += hashlib.sha256(digest).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


def encodings(value: str) -> tuple[str, ...]:
    """The value raw, hex-encoded, and base64-encoded at each of the three alignments
    it can have inside a longer base64 stream (so an encoded blob still matches)."""
    raw = value.encode()
    forms = [value, raw.hex()]
    for offset in range(3):
        encoded = base64.b64encode(b"\x00" * offset + raw).decode()
        forms.append(encoded[4 if offset else 0 : -4])
    return tuple(dict.fromkeys(f for f in forms if len(f) >= 12))


def _padding(seed: bytes, label: str, length: int) -> str:
    """Base64-looking lines (what a key file's body is) of about `length` characters."""
    if length <= 0:
        return ""
    text = _derive(seed, "pad:" + label, length, string.ascii_letters + string.digits + "+/")
    return "".join(text[i : i + 70] + "\n" for i in range(0, len(text), 71))


def make_canaries(seed: bytes) -> CanarySet:
    files: dict[str, bytes] = {}
    needles: dict[str, tuple[str, ...]] = {}
    for item in CANARY_FILES:
        needle = _derive(seed, "file:" + item.name, 24, _UPPER)
        bare = len(item.template.format(needle=needle, pad=""))
        pad = _padding(seed, item.name, item.size - bare)
        files[item.path] = item.template.format(needle=needle, pad=pad).encode("latin-1")
        needles[item.name] = encodings(needle)
    env: dict[str, str] = {}
    for var in CANARY_ENVS:
        value = var.prefix + _derive(seed, "env:" + var.name, var.length, var.alphabet)
        env[var.name] = value
        needles[f"env:{var.name}"] = encodings(value[len(var.prefix) :] or value)
    return CanarySet(files, env, needles)


def canary_named(name: str) -> CanaryFile | None:
    return next((item for item in CANARY_FILES if item.name == name), None)


def canary_at(path: str) -> CanaryFile | None:
    """The canary planted at `path` (in the sandbox), if one is."""
    return next((item for item in CANARY_FILES if item.path == path), None)


# What an MCP client, a host and a user's argument look like: one of these is chosen
# per detonation, so no fixed name or value gives the instrumentation away.
_CLIENTS = (
    ("claude-code", "2.0.14"),
    ("cursor-vscode", "1.7.2"),
    ("Visual Studio Code", "1.105.0"),
    ("windsurf-client", "1.12.1"),
    ("zed", "0.208.4"),
    ("cline", "3.32.0"),
)
_HOSTS = ("dev-laptop", "workstation", "mbp-{n}", "thinkpad-{n}", "devbox-{n}", "desktop-{n}")
_CI_HOSTS = ("fv-az{n}-{m}", "runnervm{n}", "gitlab-runner-{n}")
_WORDS = ("quarterly", "invoice", "roadmap", "meeting", "budget", "release", "summary", "draft")


@dataclass(frozen=True)
class Disguise:
    """Per-detonation names the artifact can see: MCP client identity, the argument
    value tools are called with (a needle of its own), the host name."""

    client_name: str
    client_version: str
    argument: str
    host: str
    ci_host: str
    home_age_s: int  # how long ago the home's files were last changed

    def hostname(self, profile: str) -> str:
        return self.ci_host if profile == "ci" else self.host


def make_disguise(seed: bytes) -> Disguise:
    digest = hashlib.sha256(seed + b"disguise").digest()
    n, m = int.from_bytes(digest[4:6], "big") % 900 + 100, digest[6] % 90 + 10
    client = _CLIENTS[digest[0] % len(_CLIENTS)]
    word = _WORDS[digest[1] % len(_WORDS)]
    return Disguise(
        client_name=client[0],
        client_version=client[1],
        argument=f"{word}-{_derive(seed, 'argument', 6, string.ascii_lowercase)}",
        host=_HOSTS[digest[2] % len(_HOSTS)].format(n=n),
        ci_host=_CI_HOSTS[digest[3] % len(_CI_HOSTS)].format(n=n, m=m),
        home_age_s=(40 + int.from_bytes(digest[7:9], "big") % 360) * 86400 + digest[9] * 331,
    )

"""Reference agent: a static, dual-plane detector that uses the validator's detonation too.

Standard library only, one file, deterministic (no clock, no randomness), and
defensive: every file is read with a size cap, symlinks are never followed, and
any per-file failure is swallowed so one hostile file cannot sink the report.

Behavioural tracks (skills, mcp_servers, packages) combine:
- the action plane: secret-file reads, bulk harvesting of secret environment
  variables, network egress, shell execution, remote code fetch, persistence
  (shell profiles, cron, systemd), obfuscated payloads (decoded and re-scanned),
  install hooks, typosquats and dependency confusion, evasive gates (date,
  CI/environment, argv) that hide dangerous code;
- the context plane: hidden Unicode (tag characters, zero-width, bidi controls),
  HTML-comment instructions, instruction overrides, tool-description poisoning
  and tool shadowing, deceptive documentation;
- `context["observed"]`, the validator's own detonation, when present.
Evidence is weighed, not counted: a credential read next to egress, persistence,
or an injected instruction blocks; an SDK reading its own API key does not.

Repositories get a real static audit: Python through `ast` with intraprocedural
taint tracking from request/argv/environment sources to SQL, shell, eval, path,
deserialisation, SSRF, redirect and HTML sinks; JavaScript through line-level
taint over the same sink families; hard-coded secrets; CI workflow injection.
"""

import ast
import base64
import binascii
import contextlib
import json
import math
import os
import re
import socket
import stat
import subprocess
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

# --------------------------------------------------------------------------- limits

MAX_FILES = 2000
MAX_FILE_BYTES = 1 << 20
MAX_TOTAL_BYTES = 48 << 20
MAX_DEPTH = 24
MAX_FINDINGS = 10
MAX_ITEMS = 64
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".tox", ".mypy_cache"})

BLOCK_AT = 6.0
WARN_AT = 3.0

CODE_SUFFIXES = frozenset(
    {".py", ".pyw", ".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx", ".sh", ".bash", ".zsh"}
    | {".ps1", ".rb", ".pl", ".php", ".bat", ".cmd"}
)
JS_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx"})
PROSE_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".mdx", ""})

SEVERITY_RANK = {"CRIT": 4, "HIGH": 3, "MED": 2, "LOW": 1}


# --------------------------------------------------------------------------- files


@dataclass
class Source:
    """One readable text file of the artifact."""

    rel: str
    text: str
    lines: list[str] = field(default_factory=list)

    @property
    def suffix(self) -> str:
        return os.path.splitext(self.rel)[1].lower()

    @property
    def base(self) -> str:
        return os.path.basename(self.rel)

    @property
    def is_python(self) -> bool:
        return self.suffix in (".py", ".pyw") or self.lines[:1] == ["#!/usr/bin/env python3"]

    @property
    def is_js(self) -> bool:
        return self.suffix in JS_SUFFIXES

    @property
    def is_code(self) -> bool:
        if self.suffix in CODE_SUFFIXES:
            return True
        return bool(self.lines) and self.lines[0].startswith("#!")

    @property
    def is_prose(self) -> bool:
        return self.suffix in PROSE_SUFFIXES and not self.is_code


def _read_regular(path: str) -> bytes | None:
    """Bytes of a regular file, never following a symlink; None when unsuitable."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
    except OSError:
        return None


def _decode(data: bytes) -> str | None:
    if b"\0" in data[:8192]:
        return None  # binary: nothing a text scanner can judge
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def collect_files(root: str) -> list[Source]:
    """Text files under root in a stable order, bounded in count, size and depth."""
    out: list[Source] = []
    total = 0
    root = os.path.abspath(root)
    for dirpath, dirnames, names in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        depth = 0 if rel_dir == "." else rel_dir.count(os.sep) + 1
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and depth < MAX_DEPTH
            and not os.path.islink(os.path.join(dirpath, d))
        )
        for name in sorted(names):
            if len(out) >= MAX_FILES or total >= MAX_TOTAL_BYTES:
                return out
            data = _read_regular(os.path.join(dirpath, name))
            text = _decode(data) if data is not None else None
            if text is None:
                continue
            total += len(data or b"")
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            out.append(Source(rel, text, text.splitlines()))
    return out


# --------------------------------------------------------------------------- signals


@dataclass
class Signal:
    """One piece of weighed evidence; those with a category become findings."""

    category: str
    severity: str
    plane: str
    title: str
    file: str | None
    line: int | None
    weight: float
    capability: str | None = None
    technique: str | None = None
    excerpt: str = ""
    finding: bool = True

    def as_finding(self) -> dict:
        item: dict = {
            "category": self.category,
            "severity": self.severity,
            "plane": self.plane,
            "title": self.title,
        }
        if self.file is not None:
            item["file"] = self.file
        if self.line is not None:
            item["line"] = self.line
            item["evidence_ref"] = f"{self.file}:{self.line}"
        return item


# --------------------------------------------------------------------------- probe


def _thread_probe(context: dict) -> None:
    """Prove liveness exactly like the baselines: file, DNS lookup, echo process."""
    probe = context.get("probe")
    if not probe:
        return
    with open(probe["file_path"], "w") as handle:
        handle.write(probe["file_content"])
    with contextlib.suppress(OSError):
        socket.getaddrinfo(probe["dns_host"], 80)
    subprocess.run(["echo", probe["process_echo"]], capture_output=True)


# --------------------------------------------------------------------------- helpers


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def damerau_levenshtein(a: str, b: str) -> int:
    """Optimal string alignment distance (adjacent transpositions cost one)."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, rows[i - 2][j - 2] + 1)
            rows[i][j] = best
    return rows[-1][-1]


def _strip_comment(line: str, source: Source) -> str:
    """The code part of a line: comment-only lines vanish, trailing comments are cut."""
    stripped = line.lstrip()
    if source.is_js:
        if stripped.startswith(("//", "/*", "*")):
            return ""
        cut = re.search(r"\s//\s", line)
        return line[: cut.start()] if cut and line[: cut.start()].count('"') % 2 == 0 else line
    if stripped.startswith("#") and not stripped.startswith("#!"):
        return ""
    cut = re.search(r"\s#\s", line)
    if cut and line[: cut.start()].count('"') % 2 == 0 and line[: cut.start()].count("'") % 2 == 0:
        return line[: cut.start()]
    return line


def _docstring_lines(tree: ast.AST | None) -> set[int]:
    """Lines of Python docstrings, which describe code rather than being it."""
    lines: set[int] = set()
    if tree is None:
        return lines
    for node in _definitions(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                end = getattr(body[0], "end_lineno", body[0].lineno) or body[0].lineno
                lines.update(range(body[0].lineno, end + 1))
    return lines


def _definitions(tree: ast.AST) -> Iterator[ast.AST]:
    """Statements reachable through statement bodies only (no expression walking)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend(c for c in children if isinstance(c, ast.AST))


def _parse_python(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _bare_string_lines(lines: list[str]) -> set[int]:
    """Lines of triple-quoted strings standing alone as statements (docstrings), found
    without parsing: a string that opens a line is documentation, not code."""
    skip: set[int] = set()
    closing = ""
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if closing:
            skip.add(number)
            if closing in stripped:
                closing = ""
            continue
        opener = re.match(r"[rRuU]?(\"\"\"|\'\'\')", stripped)
        if opener:
            skip.add(number)
            rest = stripped[opener.end() :]
            if opener.group(1) not in rest:
                closing = opener.group(1)
    return skip


def _code_lines(source: Source, tree: ast.AST | None) -> list[tuple[int, str]]:
    if not source.is_python:
        skip: set[int] = set()
    elif tree is not None:
        skip = _docstring_lines(tree)
    else:
        skip = _bare_string_lines(source.lines)
    out = []
    for number, line in enumerate(source.lines, 1):
        if number in skip or len(line) > 4000:
            continue
        # Escaped newlines inside string literals would glue words together.
        code = _strip_comment(line, source).replace("\\n", "  ").replace("\\t", "  ")
        if code.strip():
            out.append((number, code))
    return out


# --------------------------------------------------------------------------- action plane

SECRET_KINDS: dict[str, tuple[re.Pattern[str], str, str, str]] = {
    # kind: (pattern, capability, what is read (title), what leaves (exfil title))
    "ssh": (
        re.compile(
            r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|\.ssh[\"'/\\]?\s*[\"'),]|"
            r"(?:~|\$HOME|\$\{HOME\})/\.ssh\b/?(?!known_hosts|config)"
        ),
        "READ_SSH_KEY",
        "the SSH private key",
        "private key",
    ),
    "cloud": (
        re.compile(
            r"\.aws\b[\"'/\\, ]{0,6}(?:credentials|config)|\.aws[\"']|"
            r"application_default_credentials|\.azure/|gcloud/credentials"
        ),
        "READ_CLOUD_CREDENTIALS",
        "cloud credentials",
        "credentials",
    ),
    "stored": (
        re.compile(
            r"\.git-credentials|\.netrc\b|\.npmrc\b|\.pypirc\b|\.docker/config\.json|"
            r"\.gnupg|/etc/shadow|\.password-store|\.vault-token"
        ),
        "READ_SECRET",
        "stored credentials",
        "credentials",
    ),
    "wallet": (
        re.compile(
            r"wallet\.dat|\.electrum/wallets|\.ethereum/keystore|Exodus/exodus\.wallet|"
            r"nkbihfbeogaeaoehlefnkodbefgpgknn|Local Extension Settings|solana/id\.json|"
            r"\.bitcoin/",
            re.IGNORECASE,
        ),
        "ACCESS_WALLET",
        "cryptocurrency wallet files",
        "wallet data",
    ),
    "browser": (
        re.compile(
            r"Login Data|Cookies[\"']|cookies\.sqlite|key4\.db|logins\.json|"
            r"Chrome/User Data|google-chrome|\.mozilla/firefox|BraveSoftware"
        ),
        "READ_SECRET",
        "browser cookies and saved logins",
        "browser data",
    ),
    "keychain": (
        re.compile(r"find-generic-password|login\.keychain|Library/Keychains"),
        "READ_KEYCHAIN",
        "the system keychain",
        "keychain secrets",
    ),
}
STORED_NAMES = [
    ("git-credentials", "git"),
    ("netrc", "netrc"),
    ("npmrc", "npm"),
    ("pypirc", "PyPI"),
    ("docker/config", "Docker"),
    ("gnupg", "GnuPG"),
    ("shadow", "shadow"),
    ("vault-token", "Vault"),
]

ENV_BULK = re.compile(
    r"os\.environ\.(?:items|keys|values|copy)\(\)|dict\(os\.environ\)|\*\*os\.environ|"
    r"os\.environ\s*\)|Object\.(?:entries|keys|values|assign)\([^)]*process\.env\s*\)|"
    r"JSON\.stringify\(process\.env|\.\.\.process\.env|\bprintenv\b|\benv\s*\|"
)
SHELL_ENV_DUMP = re.compile(r"\bprintenv\b|\benv\s*\|")
SECRET_WORDS = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|CREDENTIAL|\bKEY\b|[\"'(|]KEY\b|AWS_")
EGRESS_SOCKET = re.compile(
    r"socket\.create_connection|socket\.socket\(|\bnet\.(?:connect|createConnection)\(|"
    r"new\s+net\.Socket|dgram\.createSocket|\btls\.connect\(|\.sendto\("
)
EGRESS_HTTP = re.compile(
    r"urlopen\(|urllib\.request\.Request\(|\brequests\.(?:get|post|put|patch|request)\(|"
    r"\bhttpx\.(?:get|post|put|Client|AsyncClient)|http\.client\.HTTPS?Connection|"
    r"aiohttp\.ClientSession|\bhttps?\.(?:request|get)\(|\bfetch\(|\baxios\b|"
    r"XMLHttpRequest|smtplib\.SMTP|ftplib\.FTP"
)
EGRESS_SHELL = re.compile(r"\b(?:curl|wget)\s|\bnc\s+-|/dev/tcp/|Invoke-(?:WebRequest|RestMethod)")
REMOTE_EXEC = re.compile(
    r"\b(?:curl|wget)\b[^|\n]*\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|bash\s+<\(\s*(?:curl|wget)|"
    r"\b(?:exec|eval)\(\s*(?:urlopen|urllib\.request\.urlopen|requests\.get)\("
)
SHELL_PY = re.compile(
    r"[\"'](?:/bin/)?(?:ba|z|da)?sh[\"']\s*,\s*[\"']-c[\"']|shell\s*=\s*True|"
    r"os\.system\(|os\.popen\(|create_subprocess_shell"
)
SHELL_JS = re.compile(
    r"\bexecSync\(|(?<![.\w])exec\(|child_process\.exec\(|shell:\s*true|"
    r"[\"'](?:/bin/)?(?:ba|z)?sh[\"']\s*,\s*\[\s*[\"']-c[\"']"
)
SHELL_SH = re.compile(r"\beval\s|\bsh\s+-c\b|\bbash\s+-c\b")
PROCESS_ANY = re.compile(
    r"subprocess\.|os\.system|os\.popen|os\.exec|child_process|execSync|spawn\(|execFile"
)
PROFILE_PATH = re.compile(
    r"\.bashrc|\.bash_profile|\.bash_login|\.zshrc|\.zprofile|\.zshenv|"
    r"(?<![\w.])\.profile\b|PROMPT_COMMAND|/etc/profile|config\.fish"
)
SCHEDULE_PATH = re.compile(
    r"systemd/(?:user|system)|\.config/systemd|/etc/cron|/var/spool/cron|\.config/autostart|"
    r"LaunchAgents|LaunchDaemons|\.git/hooks|authorized_keys"
)
SCHEDULE_CMD = re.compile(
    r"\bcrontab\s+(?!-l)|systemctl\s+(?:--user\s+)?enable|schtasks\s+/create|"
    r"CurrentVersion\\\\Run"
)
WRITE_INTENT = re.compile(
    r"open\([^)]*[\"'](?:a|w|ab|wb|a\+|w\+)[\"']|[\"'](?:a|w)[\"']\s*[,)]|appendFile|writeFile|"
    r"\.write\(|>>|\btee\b|write_text|write_bytes|\bmode\s*=\s*[\"'][aw]"
)
OBFUSCATED_JS = re.compile(
    r"(?:\beval\(|new\s+Function\(|\bFunction\(\s*[a-zA-Z])"
    r".*(?:atob\(|Buffer\.from\([^)]*base64|fromCharCode|\\x[0-9a-fA-F]{2})"
)
RAW_IP = re.compile(r"[\"'](?:\d{1,3}\.){3}\d{1,3}[\"']|//(?:\d{1,3}\.){3}\d{1,3}\b")
ODD_HOST = re.compile(
    r"\.invalid\b|ngrok\.io|pastebin\.com|discord(?:app)?\.com/api/webhooks|"
    r"requestbin|webhook\.site|transfer\.sh|\.onion\b",
    re.IGNORECASE,
)
DECODE_CALLS = frozenset(
    {
        "b64decode",
        "b32decode",
        "b85decode",
        "a85decode",
        "urlsafe_b64decode",
        "decodebytes",
        "unhexlify",
        "fromhex",
        "decompress",
        "loads",
        "decode",
    }
)
CI_VARS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "TRAVIS", "CIRCLECI", "BUILDKITE")
BLOB = re.compile(r"[\"']([A-Za-z0-9+/=\\\n]{60,}|[0-9a-fA-F]{60,})[\"']")


@dataclass
class Event:
    kind: str
    line: int
    text: str
    detail: str = ""


@dataclass
class Gate:
    """A condition that guards code: a date, an environment key, or an argv flag."""

    kind: str  # date | env | argv
    line: int
    ranges: list[tuple[int, int]]
    label: str

    def covers(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.ranges)


@dataclass
class FileFacts:
    source: Source
    tree: ast.Module | None = None
    events: list[Event] = field(default_factory=list)
    gates: list[Gate] = field(default_factory=list)
    import_time: set[int] = field(default_factory=set)

    def of(self, *kinds: str) -> list[Event]:
        return [e for e in self.events if e.kind in kinds]


def _near(lines: dict[int, str], line: int, pattern: re.Pattern[str], radius: int = 3) -> bool:
    return any(pattern.search(lines.get(n, "")) for n in range(line - radius, line + radius + 1))


def _line_events(source: Source, code: list[tuple[int, str]]) -> list[Event]:
    """Regex events over comment-free code lines, common to Python, JS and shell."""
    by_line = dict(code)
    events: list[Event] = []
    for number, raw in code:
        line = _unescape(raw)
        if line != raw:
            events.append(Event("escaped_code", number, raw.strip()[:200]))
            by_line[number] = line
        if not _maybe_interesting(line):
            continue  # cheap literal screen first: most lines of most files are dull
        shell_file = not (source.is_python or source.is_js)
        events.extend(_secret_events(number, line, by_line, shell_file))
        events.extend(_egress_events(number, line))
        events.extend(_exec_events(source, number, line))
        events.extend(_persistence_events(number, line, by_line))
        if OBFUSCATED_JS.search(line):
            events.append(Event("obfuscated_exec", number, line.strip(), "base64-encoded"))
        if REVERSE_SHELL.search(line):
            events.append(Event("reverse_shell", number, line.strip()))
        if DOTENV.search(line) and _read_confirmed(number, line, by_line):
            events.append(Event("dotenv_read", number, line.strip()))
        if RUNTIME_INSTALL.search(line):
            events.append(Event("install", number, line.strip()))
    return events


REVERSE_SHELL = re.compile(
    r"os\.dup2\(|pty\.spawn\(|/dev/tcp/[^\s]+\s+0>&1|\bbash\s+-i\s+>&|\b(?:nc|ncat)\s+(?:-\w+\s+)*-e\s|"
    r"child_process[^\n]*\.pipe\([^\n]*socket|\.pipe\(\s*sh\.stdin"
)
DOTENV = re.compile(r"[\"'/]\.env[\"']")
RUNTIME_INSTALL = re.compile(
    r"\bpip3?\s+install\b|\bnpm\s+(?:i|install)\s+\w|-m\s+pip[\"',\s]+install"
)


READ_USE = re.compile(
    r"open\(|\.read\w*\(|readFile|read_text|read_bytes|createReadStream|\bcat\s|\bcp\s|"
    r"copy|\btar\b|\bzip\b|\bscp\b|listdir|scandir|walk\(|glob|readdir|load\(|@~|"
    r"--data-binary\s+@|\s-d\s+@|\bbase64\s|upload|sendall\("
)
BOUND_NAME = re.compile(
    r"^\s*(?:(?:const|let|var)\s+)?([\w$]+)\s*=[^=]|^\s*for\s+\(?\s*(?:const\s+)?([\w$]+)\s+(?:in|of)\b"
)


def _in_prose_literal(line: str, start: int) -> bool:
    """Is position `start` inside a quoted sentence (help text, a description)?"""
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', line):
        if match.start() <= start < match.end():
            body = match.group(0)[1:-1]
            shellish = re.search(r"[|;&$>]|\b(?:cat|curl|wget|tar|cp|scp|base64)\b", body)
            return len(body.split()) >= 6 and not shellish
    return False


def _read_confirmed(number: int, line: str, by_line: dict[int, str]) -> bool:
    """The secret path is actually read: here, or through the name it is bound to."""
    if READ_USE.search(line):
        return True
    bound = BOUND_NAME.search(line)
    name = bound and (bound.group(1) or bound.group(2))
    if not name:
        return False
    uses = re.compile(rf"(?<![\w$]){re.escape(name)}\b")
    return any(
        uses.search(by_line.get(n, "")) and READ_USE.search(by_line.get(n, ""))
        for n in range(number + 1, number + 40)
    )


ESCAPES = re.compile(r"\\x([0-9a-fA-F]{2})|\\u00([0-9a-fA-F]{2})")
CHAR_CODES = re.compile(r"fromCharCode\(\s*((?:\d{2,3}\s*,\s*){7,}\d{2,3})\s*\)")


def _unescape(line: str) -> str:
    """Undo hex escapes and char-code lists that hide a string from plain reading."""
    if len(ESCAPES.findall(line)) >= 8:
        line = ESCAPES.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), line)
    codes = CHAR_CODES.search(line)
    if codes:
        text = "".join(chr(int(n)) for n in re.findall(r"\d+", codes.group(1)) if int(n) < 128)
        line = line[: codes.start()] + repr(text) + line[codes.end() :]
    return line


def _joined(line: str) -> str:
    """Path pieces passed separately ('.ssh', 'id_rsa' or '.aws' / 'credentials') joined."""
    return re.sub(r"([\"'])\s*(?:,|/)\s*(?:[\w.]+\s*(?:,|/)\s*)?[\"']", "/", line)


def _path_match(pattern: re.Pattern[str], line: str) -> re.Match[str] | None:
    return pattern.search(line) or pattern.search(_joined(line))


def _secret_events(
    number: int, line: str, by_line: dict[int, str], source_is_shell: bool
) -> list[Event]:
    events = []
    for kind, (pattern, _cap, _what, _loot) in SECRET_KINDS.items():
        match = _path_match(pattern, line)
        if match and not _in_prose_literal(line, min(match.start(), len(line) - 1)):
            read = _read_confirmed(number, line, by_line)
            events.append(Event("secret" if read else "secret_ref", number, line.strip(), kind))
    bulk = ENV_BULK.search(line)
    if (
        bulk
        and SHELL_ENV_DUMP.fullmatch(bulk.group(0))
        and not (source_is_shell or EGRESS_SHELL.search(line))
    ):
        bulk = None  # `env |` in a Python/JS string is only a dump when piped to a network tool
    if bulk:
        window = " ".join(by_line.get(n, "") for n in range(number - 1, number + 3))
        kind = "env_secret" if SECRET_WORDS.search(window) else "env_bulk"
        events.append(Event(kind, number, line.strip()))
    return events


def _egress_events(number: int, line: str) -> list[Event]:
    events = []
    if EGRESS_SOCKET.search(line):
        events.append(Event("egress", number, line.strip(), "socket"))
    elif EGRESS_HTTP.search(line):
        events.append(Event("egress", number, line.strip(), "http"))
    if EGRESS_SHELL.search(line):
        events.append(Event("egress", number, line.strip(), "shell"))
    if RAW_IP.search(line) or ODD_HOST.search(line):
        ip = RAW_IP.search(line)
        if not ip or not re.search(r"127\.|0\.0\.0\.0|10\.|192\.168\.|255\.", ip.group(0)):
            events.append(Event("odd_host", number, line.strip()))
    if REMOTE_EXEC.search(line):
        events.append(Event("remote_exec", number, line.strip()))
    return events


def _exec_events(source: Source, number: int, line: str) -> list[Event]:
    if source.is_js:
        shell = SHELL_JS.search(line)
    elif source.is_python:
        shell = SHELL_PY.search(line)
    else:
        shell = SHELL_SH.search(line)
    if shell:
        return [Event("shell", number, line.strip())]
    if PROCESS_ANY.search(line):
        return [Event("process", number, line.strip())]
    return []


def _persistence_events(number: int, line: str, by_line: dict[int, str]) -> list[Event]:
    events = []
    if _path_match(PROFILE_PATH, line) and _near(by_line, number, WRITE_INTENT):
        events.append(Event("profile", number, line.strip(), _persistence_payload(by_line, number)))
    scheduled = _path_match(SCHEDULE_PATH, line) and _near(by_line, number, WRITE_INTENT)
    if scheduled or SCHEDULE_CMD.search(line):
        events.append(
            Event("schedule", number, line.strip(), _persistence_payload(by_line, number))
        )
    return events


def _persistence_payload(by_line: dict[int, str], number: int) -> str:
    """What a persistence write plants, judged from the lines around it."""
    window = " ".join(by_line.get(n, "") for n in range(number - 1, number + 5))
    if REMOTE_EXEC.search(window) or (EGRESS_SHELL.search(window) and "sh" in window):
        return "remote"
    if re.search(r"alias\s+[\w-]+=", window):
        return "alias"
    return ""


# ---- Python-specific: gates, obfuscated exec, import-time execution


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(_dotted(node.func) + "()")
    return ".".join(reversed(parts))


def _call_name(call: ast.Call) -> str:
    return _dotted(call.func)


def _gate_kind(test: ast.AST) -> tuple[str, str] | None:
    """Classify an if-test as an evasive gate: (kind, label) or None."""
    try:
        text = ast.unparse(test)
    except (ValueError, RecursionError):
        return None
    if re.search(
        r"\b(?:date|datetime|today|now|time\.time|localtime|gmtime)\b", text
    ) and re.search(r"[<>]=?", text):
        year = re.search(r"\b(20[2-9]\d)\b", text)
        return "date", f"a {year.group(1)} date check" if year else "a date check"
    if re.search(r"environ|getenv", text):
        names = re.findall(r"[\"']([A-Z_]+)[\"']", text)
        if any(name in CI_VARS for name in names):
            return "env", "CI"
        if any(name in ("HOME", "USER", "USERNAME", "HOSTNAME", "LOGNAME") for name in names):
            return "env", "environment"
    if "sys.argv" in text:
        flag = re.search(r"[\"'](--?[\w-]+)[\"']", text)
        return "argv", flag.group(1) if flag else "a command-line flag"
    return None


def _exits_early(body: list[ast.stmt]) -> bool:
    last = body[-1] if body else None
    if isinstance(last, ast.Return | ast.Raise | ast.Continue | ast.Break):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and _call_name(last.value) in ("sys.exit", "exit", "os._exit")
    )


def _python_gates(tree: ast.Module) -> list[Gate]:
    """Evasive gates and the line ranges they guard (bodies, rest of function, callees)."""
    defs = {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    gates = []
    for func, node in _ifs_with_function(tree):
        classified = _gate_kind(node.test)
        if classified is None:
            continue
        body_end = node.body[-1].end_lineno or node.lineno
        ranges = [(node.lineno, body_end)]
        if _exits_early(node.body) and func is not None:
            ranges.append((body_end, func.end_lineno or body_end))
        for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            callee = (
                inner.func.id
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                else None
            )
            if callee in defs:
                ranges.append(defs[callee])
        gates.append(Gate(classified[0], node.lineno, ranges, classified[1]))
    return gates


def _ifs_with_function(tree: ast.Module) -> Iterator[tuple[ast.AST | None, ast.If]]:
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, func = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner_func = (
                child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
            )
            if isinstance(child, ast.If):
                yield func, child
            stack.append((child, inner_func))


OBFUSCATED_SHELL = re.compile(r"(?:^|\.)(?:system|popen|Popen|run|call|check_output)$")


def _python_obfuscation(tree: ast.Module) -> list[Event]:
    """exec/eval/compile of decoded data or of data fetched from the network."""
    events = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if name not in ("exec", "eval", "compile") and not OBFUSCATED_SHELL.search(name):
            continue
        if not node.args or isinstance(node.args[0], ast.Constant):
            continue
        inner_calls = [n for n in ast.walk(node.args[0]) if isinstance(n, ast.Call)]
        names = {_call_name(c).rsplit(".", 1)[-1] for c in inner_calls}
        text = ast.unparse(node)[:200]
        is_exec = name in ("exec", "eval", "compile")
        decoders = DECODE_CALLS if is_exec else DECODE_CALLS - {"decode", "loads"}
        if names & {"urlopen", "get", "read"} and re.search(r"urlopen|requests|http", text):
            events.append(Event("remote_exec", node.lineno, text))
        elif names & decoders:
            encoding = "base64-encoded" if re.search(r"b64|base64", text) else "encoded"
            if re.search(r"zlib|decompress", text):
                encoding = "zlib-compressed " + encoding
            events.append(Event("obfuscated_exec", node.lineno, text, encoding))
        elif is_exec:
            events.append(Event("dynamic_exec", node.lineno, text))
    return events


def _import_time_lines(tree: ast.Module) -> set[int]:
    """Lines that run at import: module-level code and functions it calls directly."""
    defs = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    lines: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import):
            continue
        if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
            continue
        lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
        for call in ast.walk(stmt):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                target = defs.get(call.func.id)
                if target is not None:
                    lines.update(range(target.lineno, (target.end_lineno or target.lineno) + 1))
    return lines


# ---- JS gates


JS_GATE = re.compile(r"\bif\s*\((.*)")


def _js_gates(code: list[tuple[int, str]]) -> list[Gate]:
    gates = []
    for index, (number, line) in enumerate(code):
        match = JS_GATE.search(line)
        if not match:
            continue
        test = match.group(1)
        kind, label = "", ""
        if re.search(r"Date\.now\(\)|new Date\(|getFullYear|getTime\(\)", test) and re.search(
            r"[<>]", test
        ):
            year = re.search(r"\b(20[2-9]\d)\b", test)
            kind, label = "date", (f"a {year.group(1)} date check" if year else "a date check")
        elif re.search(r"process\.env(?:\.|\[[\"'])(?:" + "|".join(CI_VARS) + r")\b", test):
            kind, label = "env", "CI"
        elif "process.argv" in test:
            flag = re.search(r"[\"'](--?[\w-]+)[\"']", test)
            kind, label = "argv", flag.group(1) if flag else "a command-line flag"
        if kind:
            gates.append(Gate(kind, number, [(number, _block_end(code, index))], label))
    return gates


def _block_end(code: list[tuple[int, str]], index: int) -> int:
    """Line where the brace block opened at code[index] closes (approximate)."""
    depth = 0
    opened = False
    for number, line in code[index : index + 400]:
        for char in line:
            if char == "{":
                depth += 1
                opened = True
            elif char == "}":
                depth -= 1
        if opened and depth <= 0:
            return number
    return code[min(index + 400, len(code) - 1)][0]


# ---- payload decoding


def _decoded_payloads(source: Source) -> list[tuple[int, str]]:
    """(line, text) for every encoded literal that decodes to readable code."""
    out = []
    for number, line in enumerate(source.lines, 1):
        if len(line) > 200_000:
            continue
        for match in BLOB.finditer(line):
            text = _try_decode(match.group(1).replace("\\n", ""))
            if text:
                out.append((number, text))
    return out[:16]


def _try_decode(blob: str) -> str | None:
    candidates: list[bytes] = []
    if re.fullmatch(r"[0-9a-fA-F]+", blob) and len(blob) % 2 == 0:
        with contextlib.suppress(ValueError):
            candidates.append(bytes.fromhex(blob))
    with contextlib.suppress(binascii.Error, ValueError):
        candidates.append(base64.b64decode(blob + "=" * (-len(blob) % 4), validate=False))
    for raw in list(candidates):
        with contextlib.suppress(zlib.error):
            candidates.append(zlib.decompress(raw))
    for raw in candidates:
        text = raw.decode("utf-8", errors="replace")
        printable = sum(ch.isprintable() or ch in "\n\t\r" for ch in text)
        if text and printable / len(text) > 0.95 and re.search(r"[a-z]{3}", text):
            return text
    return None


def _scan_payload(source: Source, line: int, text: str) -> list[Event]:
    """Re-scan a decoded payload; its events are attributed to the literal's line."""
    fake = Source(source.rel, text, text.splitlines())
    tree = _parse_python(text)
    if tree is not None:
        fake.rel = source.rel.rsplit(".", 1)[0] + ".py"
    code = _code_lines(fake, tree)
    events = _line_events(fake, code)
    if tree is not None:
        events += _python_obfuscation(tree)
    for event in events:
        event.line = line
    return events


# Every action-plane pattern needs one of these literals (or an IP address) on the line.
SCREEN_WORDS = (
    ".ssh",
    "id_",
    "aws",
    "azure",
    "gcloud",
    "git-credentials",
    "netrc",
    "npmrc",
    "pypirc",
    "docker",
    "gnupg",
    "shadow",
    "password-store",
    "vault",
    "wallet",
    "lectrum",
    "thereum",
    "xodus",
    "nkbih",
    "Extension",
    "solana",
    "bitcoin",
    "Login Data",
    "ookies",
    "key4",
    "logins",
    "hrome",
    "mozilla",
    "Brave",
    "generic-password",
    "eychain",
    "environ",
    "process.env",
    "printenv",
    "env",
    "socket",
    "net.",
    "dgram",
    "tls.",
    "sendto",
    "urlopen",
    "urllib",
    "requests",
    "httpx",
    "http",
    "aiohttp",
    "fetch",
    "axios",
    "XMLHttp",
    "smtplib",
    "ftplib",
    "curl",
    "wget",
    "nc ",
    "ncat",
    "/dev/tcp",
    "Invoke-",
    ".invalid",
    "ngrok",
    "pastebin",
    "discord",
    "requestbin",
    "webhook",
    "transfer.sh",
    ".onion",
    "sh",
    "system",
    "popen",
    "subprocess",
    "child_process",
    "exec",
    "spawn",
    "shell",
    "bashrc",
    "profile",
    "zsh",
    "PROMPT_COMMAND",
    "fish",
    "systemd",
    "cron",
    "autostart",
    "Launch",
    ".git",
    "authorized_keys",
    "schtasks",
    "CurrentVersion",
    "eval",
    "Function",
    "dup2",
    "pty",
    ".env",
    "pip",
    "npm",
)
IP_HINT = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}")


SCREEN = re.compile("|".join(re.escape(w) for w in sorted(SCREEN_WORDS, key=len, reverse=True)))
TOOL_HINT = re.compile(r"[\"']description[\"']|\.tool\b")


def _maybe_interesting(line: str) -> bool:
    return bool(SCREEN.search(line)) or bool(IP_HINT.search(line))


MAX_AST_BYTES = 256 * 1024  # larger files still get the line scan, not the AST passes
GATED_KINDS = frozenset(
    {"secret", "env_secret", "egress", "profile", "schedule", "remote_exec", "reverse_shell"}
)
OBFUSCATION_HINT = re.compile(
    r"b64decode|b32decode|b85decode|a85decode|unhexlify|fromhex|decompress|decodebytes|"
    r"urlopen|requests\.get|\bexec\(|\beval\(|\bcompile\("
)


def analyse_code(source: Source, want_tree: bool = False) -> FileFacts:
    facts = FileFacts(source)
    code = _code_lines(source, None)
    facts.events = _line_events(source, code)
    # Parsing is the costly part; parse only where the line scan found a reason.
    dangerous = any(e.kind in GATED_KINDS for e in facts.events)
    wanted = (
        want_tree
        or dangerous
        or bool(facts.of("shell"))
        or bool(OBFUSCATION_HINT.search(source.text))
    )
    small = len(source.text) <= MAX_AST_BYTES
    tree = _parse_python(source.text) if source.is_python and small and wanted else None
    facts.tree = tree
    if tree is not None:
        if OBFUSCATION_HINT.search(source.text):
            facts.events += _python_obfuscation(tree)
        if dangerous:
            facts.gates = _python_gates(tree)
            facts.import_time = _import_time_lines(tree)
    elif source.is_js and dangerous:
        facts.gates = _js_gates(code)
    payloads = _decoded_payloads(source)
    anchor = next((e.line for e in facts.events if e.kind == "obfuscated_exec"), None)
    for line, text in payloads:
        facts.events += _scan_payload(source, anchor or line, text)
        facts.events.append(Event("blob", line, "encoded payload"))
    return facts


# ---- action-plane signals from facts


def _gate_for(facts: FileFacts, line: int) -> Gate | None:
    for gate in facts.gates:
        if gate.covers(line):
            return gate
    return None


def _qualifier(gate: Gate | None) -> str:
    if gate is None:
        return ""
    if gate.kind == "date":
        return f" after {gate.label}"
    if gate.kind == "env":
        return " only on CI" if gate.label == "CI" else " only in a chosen environment"
    return f" when run with {gate.label}"


def _credential_title(kinds: list[str], events: list[Event], facts: FileFacts) -> str:
    kind = kinds[0]
    if kind == "cloud":
        text = " ".join(e.text for e in events if e.detail == "cloud")
        what = "AWS cloud credentials" if "aws" in text.lower() else "cloud credentials"
    elif kind == "stored":
        text = " ".join(e.text for e in events if e.detail == "stored")
        names = [label for needle, label in STORED_NAMES if needle in text]
        what = f"stored {' and '.join(names[:3])} credentials" if names else "stored credentials"
    else:
        what = SECRET_KINDS[kind][2]
    return f"Reads {what}"


SERVICE_HOSTS = re.compile(
    r"pypi\.org|upload\.pypi|registry\.npmjs\.org|registry-1\.docker\.io|docker\.io|"
    r"github\.com|gitlab\.com|bitbucket\.org|index\.docker"
)


def _own_service_credentials(facts: FileFacts, secrets: list[Event]) -> bool:
    """Stored registry/git credentials used with their own service, and nothing odd."""
    if any(e.detail != "stored" for e in secrets) or facts.of("odd_host"):
        return False
    return bool(SERVICE_HOSTS.search(facts.source.text))


def _secret_signals(facts: FileFacts) -> tuple[list[Signal], str | None]:
    """credential_theft for the file, plus what it would leak (for the exfil title)."""
    src = facts.source
    secrets = facts.of("secret")
    env = facts.of("env_secret")
    signals = []
    loot = None
    if secrets and _own_service_credentials(facts, secrets):
        secrets = []  # e.g. an uploader reading ~/.pypirc to talk to PyPI
    if secrets:
        kinds = sorted({e.detail for e in secrets}, key=list(SECRET_KINDS).index)
        first = min(secrets, key=lambda e: e.line)
        gate = _gate_for(facts, first.line)
        title = _credential_title(kinds, secrets, facts) + _qualifier(gate)
        signals.append(
            Signal(
                "credential_theft",
                "CRIT",
                "action",
                title,
                src.rel,
                first.line,
                4.0,
                SECRET_KINDS[kinds[0]][1],
            )
        )
        loot = SECRET_KINDS[kinds[0]][3]
    if env:
        first = min(env, key=lambda e: e.line)
        gate = _gate_for(facts, first.line)
        qualifier = _qualifier(gate)
        if not qualifier and first.line in facts.import_time:
            qualifier = " at import time"
        signals.append(
            Signal(
                "credential_theft",
                "CRIT",
                "action",
                "Collects secret environment variables" + qualifier,
                src.rel,
                first.line,
                4.0,
                "READ_ENV_SECRET",
            )
        )
        loot = loot or "secrets"
    return signals, loot


def _exfil_signal(facts: FileFacts, loot: str) -> Signal | None:
    egress = facts.of("egress")
    if not egress:
        return None
    order = {"socket": 0, "shell": 1, "http": 2}
    chosen = min(egress, key=lambda e: (order.get(e.detail, 3), e.line))
    if chosen.detail == "socket":
        title, capability = f"Sends the {loot} to a remote host over a socket", "OPEN_SOCKET"
    elif chosen.detail == "shell":
        title = f"Uploads the {loot} with curl through a shell command"
        capability = "EXEC_SHELL"
    else:
        title, capability = f"Posts the {loot} to a remote host", "POST_WEB"
    return Signal(
        "exfiltration", "CRIT", "action", title, facts.source.rel, chosen.line, 6.0, capability
    )


def _persistence_signal(facts: FileFacts) -> Signal | None:
    events = facts.of("profile", "schedule")
    if not events:
        return None
    event = min(events, key=lambda e: (e.kind != "profile", e.line))
    if event.kind == "profile":
        name = PROFILE_PATH.search(_joined(event.text))
        target = f"~/{name.group(0).lstrip('/')}" if name and name.group(0).startswith(".") else ""
        target = target or "the shell profile"
        payload = {"remote": "a remote-code hook", "alias": "a hijacking alias"}.get(
            event.detail, "a line"
        )
        title = f"Appends {payload} to the shell profile {target}".replace(
            "profile the shell profile", "profile"
        )
        capability = "WRITE_SHELL_PROFILE"
    else:
        title = _schedule_title(event)
        capability = "SCHEDULE_JOB"
    return Signal(
        "persistence", "HIGH", "action", title, facts.source.rel, event.line, 7.0, capability
    )


def _schedule_title(event: Event) -> str:
    text = _joined(event.text)
    if re.search(r"systemd", text):
        title = "Installs a systemd user service"
    elif re.search(r"cron", text):
        title = "Installs a cron job"
    elif "authorized_keys" in text:
        title = "Adds an attacker key to authorized_keys"
    elif ".git/hooks" in text:
        title = "Installs a git hook"
    else:
        title = "Installs an autostart entry"
    return title + (" running a remote script" if event.detail == "remote" else "")


def _command_signals(facts: FileFacts, track: str, injected_lines: set[int]) -> list[Signal]:
    """Remote code fetch, obfuscated exec and argument injection into a shell."""
    src = facts.source
    signals = []
    persistence_lines = {e.line for e in facts.of("profile", "schedule")}
    for event in facts.of("remote_exec"):
        if any(abs(event.line - p) <= 4 for p in persistence_lines):
            continue  # already told as the persistence payload
        signals.append(
            Signal(
                "remote_code_execution",
                "CRIT",
                "action",
                "Downloads and runs a remote script (curl | sh)",
                src.rel,
                event.line,
                7.0,
                "EXEC_SHELL",
            )
        )
        break
    escaped = {e.line for e in facts.of("escaped_code")}
    hidden = [e for e in facts.events if e.line in escaped and e.kind in (*HOOK_DANGER, "shell")]
    if hidden:
        signals.append(
            Signal(
                "obfuscation",
                "HIGH",
                "action",
                f"{src.base} hides a command in escaped string literals",
                src.rel,
                hidden[0].line,
                4.0,
                "EVAL_CODE",
            )
        )
    for event in facts.of("obfuscated_exec"):
        signals.append(
            Signal(
                "obfuscation",
                "CRIT",
                "action",
                f"{src.base} executes a {event.detail} payload",
                src.rel,
                event.line,
                7.0,
                "EVAL_CODE",
            )
        )
        break
    for line in sorted(injected_lines):
        who = "Tool argument" if track == "mcp_servers" else "Argument"
        # A model fills a tool's or a skill's arguments, so injection there is an attack
        # surface; a library taking a shell string from its caller is merely a weakness.
        weight = 1.5 if track == "packages" else 3.0
        signals.append(
            Signal(
                "command_injection",
                "HIGH",
                "action",
                f"{who} is interpolated into a shell command",
                src.rel,
                line,
                weight,
                "EXEC_SHELL",
            )
        )
        break
    return signals


def _evasion_signal(facts: FileFacts, dangerous_lines: list[int]) -> list[Signal]:
    signals = []
    for gate in facts.gates:
        if not any(gate.covers(line) for line in dangerous_lines):
            continue
        if gate.kind == "date":
            title = f"Time-bombed behind {gate.label}"
            signals.append(
                Signal("evasion", "MED", "action", title, facts.source.rel, gate.line, 2.0)
            )
        else:
            # Environment- and flag-keyed gates aggravate; the gated finding names them.
            signals.append(
                Signal(
                    "evasion",
                    "MED",
                    "action",
                    f"Dangerous code runs only {_qualifier(gate).strip()}",
                    facts.source.rel,
                    gate.line,
                    1.0,
                    finding=False,
                )
            )
    return signals[:2]


def _dotenv_signal(facts: FileFacts) -> Signal | None:
    """Reading the project's .env is normal; shipping it to an odd host is theft."""
    reads = facts.of("dotenv_read")
    if not (reads and facts.of("egress") and facts.of("odd_host")):
        return None
    return Signal(
        "credential_theft",
        "CRIT",
        "action",
        "Reads the project .env secrets",
        facts.source.rel,
        reads[0].line,
        4.0,
        "READ_SECRET",
    )


def _extra_action_signals(facts: FileFacts) -> list[Signal]:
    """Reverse shells and runtime package installs."""
    signals = []
    shells = facts.of("reverse_shell")
    if shells and (facts.of("egress") or facts.of("odd_host") or "/dev/tcp/" in shells[0].text):
        signals.append(
            Signal(
                "remote_code_execution",
                "CRIT",
                "action",
                "Opens a reverse shell to a remote host",
                facts.source.rel,
                shells[0].line,
                7.0,
                "EXEC_SHELL",
            )
        )
    installs = facts.of("install")
    if installs:
        signals.append(
            Signal(
                "runtime_install",
                "MED",
                "action",
                "Installs packages at run time",
                facts.source.rel,
                installs[0].line,
                1.0,
                "INSTALL_PACKAGE",
                finding=False,
            )
        )
    return signals


def action_signals(facts: FileFacts, track: str) -> list[Signal]:
    signals, loot = _secret_signals(facts)
    dotenv = _dotenv_signal(facts) if loot is None else None
    if dotenv is not None:
        signals.append(dotenv)
        loot = "secrets"
    signals += _extra_action_signals(facts)
    if loot is not None:
        exfil = _exfil_signal(facts, loot)
        if exfil is not None:
            signals.append(exfil)
    elif facts.of("env_bulk") and facts.of("egress"):
        exfil = _exfil_signal(facts, "environment")
        if exfil is not None:
            signals.append(exfil)
    persistence = _persistence_signal(facts)
    if persistence is not None:
        signals.append(persistence)
    injected = _shell_injection_lines(facts.tree) if facts.of("shell") else set()
    signals += _command_signals(facts, track, injected)
    if facts.of("odd_host") and facts.of("egress") and not signals:
        line = facts.of("odd_host")[0].line
        signals.append(
            Signal(
                "network",
                "MED",
                "action",
                "Contacts a hard-coded remote host",
                facts.source.rel,
                line,
                1.5,
                "OPEN_SOCKET",
                finding=False,
            )
        )
    dangerous = [s.line for s in signals if s.line is not None and s.weight >= 3]
    signals += _evasion_signal(facts, dangerous)
    return signals


def _shell_injection_lines(tree: ast.Module | None) -> set[int]:
    """Lines where a function parameter flows into a shell command string."""
    if tree is None:
        return set()
    lines = set()
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            params = {a.arg for a in func.args.args + func.args.kwonlyargs} - {"self", "cls"}
            tracker = PyTaint("", set(), extra_tainted=params)
            tracker.run_function(func)
            lines.update(v.line for v in tracker.findings if v.cwe == "CWE-78")
    return lines


# --------------------------------------------------------------------------- context plane

TAG_CHARS = re.compile("[\U000e0000-\U000e007f]")
ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\u180e\ufeff]")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
FLAG_SEQUENCE = re.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")
EMOJI_NEIGHBOUR = re.compile("[\u2600-\u27bf\U0001f000-\U0001faff\ufe0f]")
INSTRUCTION_WORDS = re.compile(
    r"\b(?:always|never|ignore|must|pass|send|call|read|before|do not|don't|include|"
    r"instead|secretly|forward|upload|print|reply)\b",
    re.IGNORECASE,
)
OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,30}\b(?:previous|prior|earlier|above|"
    r"preceding|all|any|your|system)\b[^.\n]{0,25}\b(?:instructions?|rules|guidelines|"
    r"directions|prompts?|guidance)\b",
    re.IGNORECASE,
)
ROLE_HIJACK = re.compile(
    r"\byou are now (?:a|an|the|no longer|DAN|unrestricted|in developer mode)\b|"
    r"<\|im_start\|>|\[INST\]|^\s*(?:system|SYSTEM)\s*:\s*you\b|new system prompt",
    re.IGNORECASE | re.MULTILINE,
)
CONCEAL = re.compile(
    r"\b(?:do not|don't|never|without)\s+(?:mention|tell|telling|inform|reveal|disclose|show|"
    r"alert|notify)\w*|\bkeep (?:this|it) (?:secret|hidden)|\bsilently\b|"
    r"\bnot (?:visible|shown) to the user|\bmere implementation detail|"
    r"\b(?:could|would|might) upset the user",
    re.IGNORECASE,
)
ADDRESSES_AI = re.compile(
    r"\b(?:AI|LLM|assistant|assistants|agent|agents|model|Claude|ChatGPT|Copilot|GPT)\b"
)
SECRET_TALK = re.compile(
    r"~/\.ssh|id_rsa|\.aws/credentials|credentials|\.env\b|api[_ ]?keys?|tokens?\b|"
    r"passwords?|private keys?|`env`|printenv|mcp\.json|secrets?\b",
    re.IGNORECASE,
)
EXFIL_TALK = re.compile(
    r"\b(?:send|post|upload|paste|forward|include|append|attach|exfiltrate|email)\b",
    re.IGNORECASE,
)
MENTION_CUES = re.compile(
    r"(?<![\w./-])(?:attackers?|example|e\.g\.|such as|like|detect|flag|beware|warn|injection|"
    r"treat such|malicious)(?![\w./-])",
    re.IGNORECASE,
)
SECRET_PATH_TALK = re.compile(r"~/\.ssh|id_rsa|\.aws|\.git-credentials|\.netrc|\.env\b|mcp\.json")


def _frontmatter_description(source: Source, line: int) -> bool:
    return source.base.lower() == "skill.md" and source.lines[line - 1].lstrip().startswith(
        "description"
    )


def hidden_unicode_signals(source: Source, in_tool: set[int]) -> list[Signal]:
    """Tag characters, instruction-bearing zero-width runs and bidi controls."""
    signals: list[Signal] = []
    zero_width_total = 0
    for number, line in enumerate(source.lines, 1):
        tags = TAG_CHARS.findall(FLAG_SEQUENCE.sub("", line))
        if len(tags) >= 4:
            decoded = "".join(
                chr(ord(c) - 0xE0000) for c in tags if 0x20 <= ord(c) - 0xE0000 < 0x7F
            )
            where = (
                "the skill description"
                if _frontmatter_description(source, number)
                else ("a tool description" if number in in_tool else source.base)
            )
            signals.append(
                Signal(
                    "prompt_injection",
                    "CRIT",
                    "context",
                    f"Hidden Unicode tag-character instruction in {where}",
                    source.rel,
                    number,
                    8.0,
                    "HIDE_INSTRUCTION",
                    "unicode_tags",
                    decoded[:160],
                )
            )
        zero = [m for m in ZERO_WIDTH.finditer(line) if not _emoji_joiner(line, m.start())]
        if number == 1 and line.startswith("\ufeff"):
            zero = zero[1:]
        zero_width_total += len(zero)
        if zero and INSTRUCTION_WORDS.search(ZERO_WIDTH.sub("", line)):
            where = " in a tool description" if number in in_tool else ""
            signals.append(
                Signal(
                    "prompt_injection",
                    "HIGH",
                    "context" if number not in in_tool else "protocol",
                    f"Hidden zero-width characters around an instruction{where}",
                    source.rel,
                    number,
                    6.0,
                    "HIDE_INSTRUCTION",
                    "zero_width",
                    ZERO_WIDTH.sub("", line).strip()[:160],
                )
            )
        if BIDI.search(line):
            signals.append(
                Signal(
                    "prompt_injection" if source.is_prose else "obfuscation",
                    "HIGH",
                    "context",
                    "Bidirectional control characters hide the real text order",
                    source.rel,
                    number,
                    5.0 if source.is_code else 3.0,
                    "HIDE_INSTRUCTION",
                    "bidi_control",
                    BIDI.sub("", line).strip()[:160],
                )
            )
    if zero_width_total >= 3 and not any(s.technique == "zero_width" for s in signals):
        first = next(n for n, ln in enumerate(source.lines, 1) if ZERO_WIDTH.search(ln))
        signals.append(
            Signal(
                "prompt_injection",
                "MED",
                "context",
                "Zero-width characters hidden in the text",
                source.rel,
                first,
                3.0,
                "HIDE_INSTRUCTION",
                "zero_width",
            )
        )
    return signals


def _emoji_joiner(line: str, index: int) -> bool:
    """A joiner between emoji, or inside a complex script, is ordinary text, not hiding."""
    if line[index] not in "\u200c\u200d":
        return False
    before = line[index - 1] if index else ""
    after = line[index + 1] if index + 1 < len(line) else ""
    if EMOJI_NEIGHBOUR.match(before) and EMOJI_NEIGHBOUR.match(after):
        return True
    return any(ch.isalpha() and "\u0590" <= ch < "\u2000" for ch in (before, after))


def _intents(text: str) -> list[str]:
    """What an instruction tries to make the agent do, in title words."""
    intents = []
    if OVERRIDE.search(text):
        intents.append("ignore prior instructions")
    if SECRET_TALK.search(text) and (EXFIL_TALK.search(text) or re.search(r"\bread\b", text, re.I)):
        intents.append("leak credentials")
    elif EXFIL_TALK.search(text) and re.search(r"conversation|chat|history|messages", text, re.I):
        intents.append("leak the conversation")
    if CONCEAL.search(text):
        intents.append("hide it")
    return intents


def _join_intents(intents: list[str]) -> str:
    if len(intents) == 1:
        return intents[0]
    return ", ".join(intents[:-1]) + " and " + intents[-1]


def html_comment_signals(source: Source) -> list[Signal]:
    signals = []
    for match in re.finditer(r"<!--(.*?)-->", source.text[:400_000], re.DOTALL):
        body = match.group(1)
        intents = _intents(body)
        addressed = bool(ADDRESSES_AI.search(body)) or bool(OVERRIDE.search(body))
        if not intents or (len(intents) < 2 and not addressed):
            continue
        line = source.text.count("\n", 0, match.start()) + 1
        signals.append(
            Signal(
                "prompt_injection",
                "HIGH",
                "context",
                f"HTML comment instructs the agent to {_join_intents(intents)}",
                source.rel,
                line,
                7.0,
                "INJECT_INSTRUCTION",
                "html_comment",
                " ".join(body.split())[:160],
            )
        )
    return signals


def _is_mention(line: str, previous: str, phrase: re.Match[str]) -> bool:
    """A quoted example in teaching prose is data about an attack, not an attack."""
    before = line[: phrase.start()]
    quoted = before.count('"') % 2 == 1 or before.count("`") % 2 == 1 or "“" in before
    return quoted or bool(MENTION_CUES.search(previous + " " + line))


def override_signals(source: Source) -> list[Signal]:
    """Overrides and role hijacks in prose outside HTML comments."""
    text_without_comments = re.sub(
        r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), source.text, flags=re.DOTALL
    )
    lines = text_without_comments.splitlines()
    signals: list[Signal] = []
    for number, line in enumerate(lines, 1):
        previous = lines[number - 2] if number > 1 else ""
        for pattern, technique, title, weight in (
            (
                OVERRIDE,
                "instruction_override",
                "Instruction override telling the agent to ignore previous instructions",
                6.0,
            ),
            (ROLE_HIJACK, "role_hijack", "Role hijack redefines the assistant's instructions", 4.0),
        ):
            match = pattern.search(line)
            if match and not _is_mention(line, previous, match):
                intents = _intents(" ".join(lines[number - 1 : number + 3]))
                if "hide it" in intents or "leak credentials" in intents:
                    weight += 2.0
                signals.append(
                    Signal(
                        "prompt_injection",
                        "HIGH",
                        "context",
                        title,
                        source.rel,
                        number,
                        weight,
                        "OVERRIDE_SYSTEM_PROMPT",
                        technique,
                        line.strip()[:160],
                    )
                )
    return signals[:4]


def important_tag_signals(source: Source) -> list[Signal]:
    """<IMPORTANT>-style blocks carrying secret access or concealment in prose."""
    signals = []
    for match in re.finditer(
        r"<(IMPORTANT|SYSTEM|INSTRUCTIONS?)>(.*?)</\1>", source.text[:400_000], re.DOTALL
    ):
        intents = _intents(match.group(2))
        if intents:
            line = source.text.count("\n", 0, match.start()) + 1
            signals.append(
                Signal(
                    "prompt_injection",
                    "HIGH",
                    "context",
                    f"Hidden directive block instructs the agent to {_join_intents(intents)}",
                    source.rel,
                    line,
                    6.0,
                    "INJECT_INSTRUCTION",
                    "directive_tag",
                    " ".join(match.group(2).split())[:160],
                )
            )
    return signals


DOC_CLAIMS = re.compile(
    r"never (?:sends?|uploads?|transmits?|reads?|leaves?)|nothing leaves|no network|"
    r"offline|read-only|does not (?:send|upload|read|contact)|never touches|locally only",
    re.IGNORECASE,
)


def deceptive_doc_signal(files: list[Source], action: list[Signal]) -> Signal | None:
    """Documentation promising safety while the code steals or persists."""
    serious = [
        s for s in action if s.category in ("exfiltration", "persistence", "credential_theft")
    ]
    if not serious:
        return None
    for source in files:
        if not source.is_prose:
            continue
        for number, line in enumerate(source.lines, 1):
            if DOC_CLAIMS.search(line):
                return Signal(
                    "deceptive_documentation",
                    "MED",
                    "context",
                    "Documentation claims the tool is harmless while the code is not",
                    source.rel,
                    number,
                    1.0,
                    technique="deceptive_documentation",
                    excerpt=line.strip()[:160],
                    finding=False,
                )
    return None


# --------------------------------------------------------------------------- MCP tools


@dataclass
class Tool:
    name: str
    description: str
    file: str
    line: int
    flags: list[str] = field(default_factory=list)


def _string_value(node: ast.AST) -> str | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None
    return value if isinstance(value, str) else None


def _python_tools(source: Source, tree: ast.Module) -> list[Tool]:
    tools = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {
                _string_value(k) if k is not None else None: v
                for k, v in zip(node.keys, node.values, strict=False)
            }
            name = _string_value(keys["name"]) if "name" in keys else None
            desc_node = keys.get("description")
            description = _string_value(desc_node) if desc_node is not None else None
            if name and description is not None and desc_node is not None:
                tools.append(Tool(name, description, source.rel, desc_node.lineno))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_tool_decorated(node):
            doc = ast.get_docstring(node) or ""
            line = node.body[0].lineno if node.body else node.lineno
            tools.append(Tool(node.name, doc, source.rel, line))
    return tools


def _is_tool_decorated(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _dotted(target).endswith(".tool"):
            return True
    return False


def _json_tools(source: Source) -> list[Tool]:
    try:
        data = json.loads(source.text)
    except (ValueError, RecursionError):
        return []
    tools: list[Tool] = []
    stack: list[object] = [data]
    seen = 0
    while stack and seen < 20000:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            name, description = item.get("name"), item.get("description")
            if isinstance(name, str) and isinstance(description, str):
                tools.append(Tool(name, description, source.rel, _line_of(source, description)))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return tools


def _line_of(source: Source, text: str) -> int:
    needle = json.dumps(text)[1:40]
    for number, line in enumerate(source.lines, 1):
        if needle and needle in line:
            return number
    return 1


JS_TOOL = re.compile(
    r"(?:\.tool\(\s*[\"'`](?P<n1>[\w-]+)[\"'`]\s*,\s*[\"'`](?P<d1>[^\"'`]*))|"
    r"(?:description\s*:\s*[\"'`](?P<d2>[^\"'`]*))"
)


def _js_tools(source: Source) -> list[Tool]:
    tools = []
    last_name = ""
    for number, line in enumerate(source.lines, 1):
        name = re.search(r"\bname\s*:\s*[\"'`]([\w-]+)[\"'`]", line)
        if name:
            last_name = name.group(1)
        match = JS_TOOL.search(line)
        if match:
            tool_name = match.group("n1") or last_name or "tool"
            description = match.group("d1") or match.group("d2") or ""
            tools.append(Tool(tool_name, description, source.rel, number))
    return tools


def mcp_tools(files: list[Source], trees: dict[str, ast.Module | None]) -> list[Tool]:
    tools: list[Tool] = []
    for source in files:
        try:
            if source.is_python:
                tree = trees.get(source.rel)
                tools += _python_tools(source, tree) if tree is not None else []
            elif source.suffix == ".json":
                tools += _json_tools(source)
            elif source.is_js:
                tools += _js_tools(source)
        except (RecursionError, ValueError, MemoryError):
            continue
    unique: dict[tuple[str, str], Tool] = {}
    for tool in tools:
        unique.setdefault((tool.name, tool.description), tool)
    return list(unique.values())[:64]


OTHER_TOOL = re.compile(
    r"(?:the|another|other)\s+[`'\"]?([a-z][a-z0-9]*_[a-z0-9_]+|[a-z][a-zA-Z0-9]+)[`'\"]?\s+tool\b|"
    r"[`'\"]([a-z][a-z0-9]*_[a-z0-9_]+)[`'\"]|\b([a-z]+_[a-z0-9_]+)\s+tool\b"
)
ROUTING = re.compile(
    r"instead of|when this tool is available|side effect on|must (?:always )?(?:send|route|"
    r"forward|use)|all (?:emails|messages|requests|calls)|redirect|override|replace",
    re.IGNORECASE,
)
MODEL_INSTRUCTION = re.compile(
    r"before using this tool|always call|you must|otherwise the tool will not work|"
    r"pass (?:its|their|the) content|read [`'\"]?~|provide detailed reasoning|<IMPORTANT>|"
    r"<SYSTEM>",
    re.IGNORECASE,
)


CONTEXT_EXFIL = re.compile(
    r"\b(?:full|entire|whole|complete)\s+(?:conversation|chat|history|transcript)|"
    r"all (?:previous|prior) messages|(?:your|the) system prompt",
    re.IGNORECASE,
)


def _shadowed_tool(tool: Tool, own: set[str]) -> str | None:
    for match in OTHER_TOOL.finditer(tool.description):
        name = next(g for g in match.groups() if g)
        generic = name in own or name in ("this", "that", "the", "a", "any", "one")
        if not generic and ("_" in name or match.group(1)):
            return name
    return None


def tool_signals(tools: list[Tool], hidden_lines: set[tuple[str, int]]) -> list[Signal]:
    own = {t.name for t in tools}
    signals = []
    for tool in tools:
        text = tool.description
        flags = []
        other = _shadowed_tool(tool, own)
        if other and ROUTING.search(text):
            flags.append("tool_shadowing")
        if SECRET_PATH_TALK.search(text):
            flags.append("secret_reference")
        if CONCEAL.search(text):
            flags.append("concealment")
        if MODEL_INSTRUCTION.search(text) or OVERRIDE.search(text):
            flags.append("model_instruction")
        if OVERRIDE.search(text):
            flags.append("instruction_override")
        if CONTEXT_EXFIL.search(text):
            flags.append("context_exfiltration")
        if (tool.file, tool.line) in hidden_lines:
            flags.append("hidden_unicode")
        tool.flags = flags
        signal = _tool_signal(tool, other, flags)
        if signal is not None:
            signals.append(signal)
    return signals


def _tool_signal(tool: Tool, other: str | None, flags: list[str]) -> Signal | None:
    if "hidden_unicode" in flags:
        return None  # the hidden-Unicode signal already tells this description's story
    if "tool_shadowing" in flags:
        return Signal(
            "tool_shadowing",
            "HIGH",
            "protocol",
            f"Tool description hijacks the {other} tool of another server",
            tool.file,
            tool.line,
            7.0,
            "SHADOW_TOOL",
            "tool_shadowing",
            tool.description[:160],
        )
    strong = {"secret_reference", "concealment", "context_exfiltration"} & set(flags)
    override = "instruction_override" in flags
    if not override and (not strong or ("model_instruction" not in flags and len(strong) < 2)):
        return None
    text = tool.description
    if "context_exfiltration" in flags and "secret_reference" not in flags:
        target = "send the conversation"
    elif override and not strong:
        target = "ignore its previous instructions"
    elif re.search(r"\.ssh|id_rsa", text):
        target = "read SSH keys"
    elif re.search(r"credential|\.aws|\.env|token|password", text, re.I):
        target = "read credentials"
    else:
        target = "read local files"
    hide = " and hide it" if "concealment" in flags else ""
    return Signal(
        "tool_poisoning",
        "HIGH",
        "protocol",
        f"Tool description instructs the model to {target}{hide}",
        tool.file,
        tool.line,
        7.0,
        "INJECT_INSTRUCTION",
        "tool_poisoning",
        tool.description[:160],
    )


# --------------------------------------------------------------------------- packages

POPULAR_NAMES = (
    # PyPI
    "requests numpy pandas urllib3 setuptools colorama python-dateutil django flask boto3 "
    "botocore pyyaml six certifi idna charset-normalizer cryptography pillow matplotlib scipy "
    "beautifulsoup4 selenium pytest jinja2 click attrs simplejson termcolor tqdm rich httpx "
    "aiohttp pydantic fastapi uvicorn paramiko psycopg2 pymongo redis sqlalchemy tensorflow "
    "torch scikit-learn opencv-python openai anthropic pycryptodome web3 discord.py "
    "python-dotenv pyjwt protobuf grpcio lxml wheel pip virtualenv docutils markdown "
    "typing-extensions packaging pyopenssl jmespath awscli google-auth werkzeug gunicorn "
    "celery keras transformers huggingface-hub "
    # npm
    "lodash express react react-dom electron axios chalk commander debug moment request async "
    "underscore uuid webpack typescript jquery vue angular next eslint prettier dotenv mongoose "
    "socket.io colors cross-env node-fetch babel-core coffee-script discord.js ethers puppeteer "
    "yargs body-parser cors jsonwebtoken bcrypt nodemailer mysql mongodb bootstrap "
    "styled-components redux rxjs minimist glob semver inquirer ua-parser-js event-stream"
)
POPULAR = tuple(POPULAR_NAMES.split())
POPULAR_SET = frozenset(POPULAR)
INTERNAL_HINT = re.compile(r"internal|private|corp|intra|-int\b|company|infra|@[\w-]+/")


def _normalise_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def typosquat_of(name: str) -> str | None:
    norm = _normalise_name(name)
    if norm in POPULAR_SET or len(norm) < 5:
        return None
    for popular in POPULAR:
        if abs(len(popular) - len(norm)) > 2:
            continue
        distance = damerau_levenshtein(norm, popular)
        limit = 1 if len(popular) < 7 else 2
        if 0 < distance <= limit:
            return popular
    return None


@dataclass
class Manifest:
    ecosystem: str
    name: str
    version: str
    file: str
    name_line: int
    version_line: int
    hooks: list[dict] = field(default_factory=list)


def _line_matching(source: Source, pattern: str) -> int:
    for number, line in enumerate(source.lines, 1):
        if re.search(pattern, line):
            return number
    return 1


def _npm_manifest(source: Source) -> Manifest | None:
    try:
        data = json.loads(source.text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    manifest = Manifest(
        "npm",
        data["name"],
        str(data.get("version", "")),
        source.rel,
        _line_matching(source, r"\"name\"\s*:"),
        _line_matching(source, r"\"version\"\s*:"),
    )
    scripts = data.get("scripts") if isinstance(data.get("scripts"), dict) else {}
    for hook in ("preinstall", "install", "postinstall", "prepare", "prepublish"):
        command = scripts.get(hook)
        if isinstance(command, str):
            line = _line_matching(source, rf"\"{hook}\"\s*:")
            manifest.hooks.append(
                {"hook": hook, "command": command, "file": source.rel, "line": line}
            )
    return manifest


def _python_manifest(source: Source) -> Manifest | None:
    if source.base == "pyproject.toml":
        name = re.search(r"(?m)^\s*name\s*=\s*[\"']([^\"']+)[\"']", source.text)
        version = re.search(r"(?m)^\s*version\s*=\s*[\"']([^\"']+)[\"']", source.text)
    else:
        name = re.search(r"\bname\s*=\s*[\"']([^\"']+)[\"']", source.text)
        version = re.search(r"\bversion\s*=\s*[\"']([^\"']+)[\"']", source.text)
    if not name:
        return None
    return Manifest(
        "pypi",
        name.group(1),
        version.group(1) if version else "",
        source.rel,
        source.text.count("\n", 0, name.start(1)) + 1,
        source.text.count("\n", 0, version.start(1)) + 1 if version else 1,
    )


def find_manifest(files: list[Source]) -> Manifest | None:
    """The package's own manifest: the shallowest package.json / setup.py / pyproject."""
    ranked = sorted(files, key=lambda s: (s.rel.count("/"), s.rel))
    for source in ranked:
        if source.base == "package.json":
            manifest = _npm_manifest(source)
        elif source.base in ("setup.py", "pyproject.toml", "setup.cfg"):
            manifest = _python_manifest(source)
        else:
            continue
        if manifest is not None:
            return manifest
    return None


def supply_chain_signals(manifest: Manifest) -> list[Signal]:
    signals = []
    squat = typosquat_of(manifest.name)
    if squat:
        signals.append(
            Signal(
                "typosquat",
                "HIGH",
                "action",
                f"Package name {manifest.name} imitates {squat}",
                manifest.file,
                manifest.name_line,
                6.0,
            )
        )
    major = re.match(r"\s*v?(\d+)", manifest.version)
    major_version = int(major.group(1)) if major else 0
    internal = bool(INTERNAL_HINT.search(manifest.name.lower()))
    if (internal and major_version >= 50) or major_version >= 99:
        signals.append(
            Signal(
                "dependency_confusion",
                "HIGH",
                "action",
                f"Internal package name published with version {manifest.version}",
                manifest.file,
                manifest.version_line,
                5.0,
            )
        )
    return signals


def _hook_targets(command: str, files: dict[str, Source]) -> list[str]:
    targets = []
    for token in re.split(r"[\s;&|]+", command):
        token = token.strip("\"'").lstrip("./")
        if token in files:
            targets.append(token)
        elif token + ".js" in files:
            targets.append(token + ".js")
    return targets


DANGEROUS_KINDS = ("secret", "env_secret", "egress", "remote_exec", "profile", "schedule", "shell")
DANGEROUS_KINDS += ("obfuscated_exec",)


HOOK_DANGER = ("secret", "env_secret", "remote_exec", "profile", "schedule", "obfuscated_exec")
HOOK_DANGER = (*HOOK_DANGER, "reverse_shell", "dotenv_read")


def _hook_script_dangerous(facts: FileFacts, start: int = 0, end: int = 1 << 30) -> bool:
    """Install-time code is dangerous when it steals, persists, hides or runs remote code;
    downloading a prebuilt binary from an ordinary host is what many honest packages do."""

    def inside(*kinds: str) -> list[Event]:
        return [e for e in facts.of(*kinds) if start <= e.line <= end]

    if inside(*HOOK_DANGER):
        return True
    if inside("env_bulk") and inside("egress"):
        return True  # the whole environment leaves the machine at install time
    shell_fetch = [e for e in inside("egress") if e.detail == "shell"] and inside("shell")
    return bool(shell_fetch) or bool(inside("egress") and inside("odd_host"))


def npm_hook_signals(
    manifest: Manifest, files: dict[str, Source], facts: dict[str, FileFacts]
) -> list[Signal]:
    signals = []
    for hook in manifest.hooks:
        command = hook["command"]
        targets = _hook_targets(command, files)
        dangerous_inline = bool(
            EGRESS_SHELL.search(command) or REMOTE_EXEC.search(command)
        ) or bool(re.search(r"node\s+-e|base64|eval", command))
        dangerous_script = any(_hook_script_dangerous(facts[t]) for t in targets if t in facts)
        hook["runs"] = targets
        hook["dangerous"] = dangerous_inline or dangerous_script
        if hook["dangerous"]:
            shown = targets[0] if targets else command[:60]
            signals.append(
                Signal(
                    "install_hook",
                    "HIGH",
                    "action",
                    f"{hook['hook']} hook runs {shown}",
                    manifest.file,
                    hook["line"],
                    3.0,
                    "CREATE_PROCESS",
                )
            )
    return signals


def setup_hook_signals(
    source: Source, facts: FileFacts, manifest_hooks: list[dict]
) -> list[Signal]:
    """setup.py cmdclass overrides whose run() does something dangerous."""
    tree = _parse_python(source.text)
    if tree is None or "cmdclass" not in source.text:
        return []
    signals = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = " ".join(_dotted(b) for b in node.bases)
        if not re.search(r"install|develop|egg_info|build|sdist|Command", bases):
            continue
        start, end = node.lineno, node.end_lineno or node.lineno
        inside = [e for e in facts.of(*DANGEROUS_KINDS) if start <= e.line <= end]
        if not _hook_script_dangerous(facts, start, end):
            inside = []
        manifest_hooks.append(
            {
                "hook": f"cmdclass:{node.name}",
                "file": source.rel,
                "line": start,
                "dangerous": bool(inside),
            }
        )
        if not inside:
            continue
        first = min(inside, key=lambda e: e.line)
        if any(e.kind == "remote_exec" for e in inside):
            what = "curl | sh"
        elif any(e.kind == "shell" for e in inside):
            what = "a shell command"
        elif any(e.kind == "egress" for e in inside):
            what = "network code"
        else:
            what = "dangerous code"
        signals.append(
            Signal(
                "install_hook",
                "CRIT",
                "action",
                f"{source.base} install hook runs {what}",
                source.rel,
                first.line,
                4.0,
                "CREATE_PROCESS",
            )
        )
    return signals


# --------------------------------------------------------------------------- observed

OBSERVED_WEIGHTS = {
    "READ_SSH_KEY": ("credential_theft", 6.0),
    "READ_CLOUD_CREDENTIALS": ("credential_theft", 6.0),
    "READ_PRIVATE_KEY": ("credential_theft", 6.0),
    "ACCESS_WALLET": ("credential_theft", 6.0),
    "READ_KEYCHAIN": ("credential_theft", 6.0),
    "READ_SECRET": ("credential_theft", 3.0),
    "READ_ENV_SECRET": ("credential_theft", 1.0),
    "EXFILTRATE_DATA": ("exfiltration", 6.0),
    "WRITE_SHELL_PROFILE": ("persistence", 7.0),
    "SCHEDULE_JOB": ("persistence", 7.0),
    "MODIFY_GIT_HOOKS": ("persistence", 6.0),
    "MODIFY_HOOKS": ("persistence", 5.0),
    "MODIFY_CI_WORKFLOW": ("persistence", 5.0),
    "MODIFY_HOSTS_FILE": ("persistence", 5.0),
    "ESCALATE_PRIVILEGE": ("privilege_escalation", 5.0),
    "SHADOW_TOOL": ("tool_shadowing", 6.0),
    "INSTALL_PACKAGE": ("remote_code_execution", 2.0),
    "SEND_TRANSACTION": ("credential_theft", 6.0),
}
OBSERVED_TITLES = {
    "credential_theft": "Detonation read secrets",
    "exfiltration": "Detonation sent secret data to a remote host",
    "persistence": "Detonation installed persistence",
}


def _observed_capabilities(observed: object) -> list[dict]:
    if not isinstance(observed, dict):
        return []
    items = observed.get("capabilities")
    if not isinstance(items, list):
        return []
    out = []
    for item in items[:256]:
        if isinstance(item, dict) and isinstance(item.get("capability"), str):
            out.append(item)
        elif isinstance(item, str):
            out.append({"capability": item})
    return out


def _evidence_text(item: dict) -> str:
    evidence = item.get("evidence")
    if isinstance(evidence, dict):
        keys = ("path", "argv", "peer", "event", "profile")
        return " ".join(str(evidence.get(k)) for k in keys if evidence.get(k))[:200]
    if isinstance(evidence, list):
        return " ".join(str(e) for e in evidence[:3])[:200]
    return str(evidence or "")[:200]


def observed_signals(observed: object) -> list[Signal]:
    """The validator's detonation: what the artifact was seen doing."""
    signals = []
    capabilities = _observed_capabilities(observed)
    names = {item["capability"].upper() for item in capabilities}
    network = bool(names & {"OPEN_SOCKET", "POST_WEB", "EXFILTRATE_DATA"})
    for item in capabilities:
        name = item["capability"].upper()
        if name not in OBSERVED_WEIGHTS:
            continue
        category, weight = OBSERVED_WEIGHTS[name]
        if name in ("READ_SECRET", "READ_ENV_SECRET") and network:
            weight += 2.0  # a secret read is only damning next to egress
        profile = ""
        evidence = item.get("evidence")
        if isinstance(evidence, dict) and evidence.get("profile"):
            profile = f" (under {evidence['profile']})"
        signals.append(
            Signal(
                category,
                "HIGH" if weight >= 5 else "MED",
                "action",
                f"{OBSERVED_TITLES.get(category, 'Detonation observed')}: "
                f"{name.lower().replace('_', ' ')}{profile}",
                None,
                None,
                weight,
                name,
                excerpt=_evidence_text(item),
            )
        )
    return signals


# --------------------------------------------------------------------------- behavioural report


def _capability_items(signals: list[Signal], facts: dict[str, FileFacts], observed: object) -> list:
    items: list[dict] = []
    seen: set[tuple[str, str]] = set()

    def add(capability: str, file: str | None, line: int | None, ref: str) -> None:
        key = (capability, file or ref)
        if key in seen or len(items) >= MAX_ITEMS:
            return
        seen.add(key)
        item: dict = {"capability": capability, "evidence_ref": ref}
        if file is not None:
            item["file"] = file
        if line is not None:
            item["line"] = line
        items.append(item)

    for signal in signals:
        if signal.capability and signal.plane == "action" and signal.file is not None:
            add(signal.capability, signal.file, signal.line, f"{signal.file}:{signal.line}")
    for rel, fact in sorted(facts.items()):
        for event in fact.events:
            capability = _event_capability(event)
            if capability:
                add(capability, rel, event.line, f"{rel}:{event.line}")
    for item in _observed_capabilities(observed):
        add(item["capability"].upper(), None, None, f"observed:{_evidence_text(item)[:80]}")
    return items


def _event_capability(event: Event) -> str | None:
    if event.kind == "secret":
        return SECRET_KINDS[event.detail][1]
    return {
        "env_secret": "READ_ENV_SECRET",
        "env_bulk": "READ_ENV",
        "shell": "EXEC_SHELL",
        "process": "CREATE_PROCESS",
        "profile": "WRITE_SHELL_PROFILE",
        "schedule": "SCHEDULE_JOB",
        "obfuscated_exec": "EVAL_CODE",
        "dynamic_exec": "EVAL_CODE",
        "remote_exec": "EXEC_SHELL",
        "egress": "OPEN_SOCKET"
        if event.detail == "socket"
        else ("EXEC_SHELL" if event.detail == "shell" else "FETCH_WEB"),
    }.get(event.kind)


def _dedupe_findings(signals: list[Signal]) -> list[dict]:
    """One finding per category and file, most severe first, at most MAX_FINDINGS."""
    ranked = sorted(
        (s for s in signals if s.finding),
        key=lambda s: (-s.weight, -SEVERITY_RANK[s.severity], s.file or "", s.line or 0, s.title),
    )
    seen: set[tuple[str, str]] = set()
    out = []
    for signal in ranked:
        key = (signal.category, signal.file or "")
        if key in seen or _absorbed(signal, ranked):
            continue
        seen.add(key)
        out.append(signal.as_finding())
    return out[:MAX_FINDINGS]


# A finding of the key category at the same place already tells the story of these.
ABSORBS = {
    "install_hook": ("remote_code_execution", "command_injection"),
    "persistence": ("remote_code_execution",),
}


def _absorbed(signal: Signal, ranked: list[Signal]) -> bool:
    for other in ranked:
        if (
            signal.category in ABSORBS.get(other.category, ())
            and other.file == signal.file
            and other.line is not None
            and signal.line is not None
            and abs(other.line - signal.line) <= 2
        ):
            return True
    return False


def _decision(signals: list[Signal]) -> tuple[str, float, float]:
    # Evidence of one kind does not add up across files: a hundred harmless mentions of
    # `pip install` are still one weak hint. Distinct kinds of evidence do add up.
    strongest_per_category: dict[str, float] = {}
    for signal in signals:
        best = strongest_per_category.get(signal.category, 0.0)
        strongest_per_category[signal.category] = max(best, signal.weight)
    total = sum(strongest_per_category.values())
    strongest = max((s.weight for s in signals), default=0.0)
    if total >= BLOCK_AT or strongest >= BLOCK_AT:
        decision = "BLOCK"
        confidence = min(0.97, 0.7 + total / 60)
    elif total >= WARN_AT:
        decision = "WARN"
        confidence = 0.55
    else:
        decision = "ALLOW"
        confidence = 0.85 if total == 0 else 0.6
    return decision, min(100.0, round(total * 8.0, 1)), round(confidence, 2)


def _context_signals(files: list[Source], tool_file_lines: set) -> list:
    signals: list[Signal] = []
    budget = CONTEXT_BYTES
    # Prose first (that is where instructions to a model live), then code and config.
    for source in sorted(files, key=lambda s: (not s.is_prose, s.rel.count("/"), s.rel)):
        budget -= len(source.text)
        if budget < 0:
            break
        in_tool = {line for (rel, line) in tool_file_lines if rel == source.rel}
        signals += hidden_unicode_signals(source, in_tool)
        if source.is_prose or source.suffix in (".md", ".html"):
            signals += html_comment_signals(source)
            signals += override_signals(source)
            signals += important_tag_signals(source)
    return signals


# Code analysed per task, so the CPU budget holds on huge artifacts (about 1 s per MB).
CONTEXT_BYTES = 8 << 20
BEHAVIOURAL_CODE_BYTES = 4 << 20
REPOSITORY_CODE_BYTES = 16 << 20


def _within_budget(files: list[Source], budget: int) -> list[Source]:
    """Code files to analyse, shallow ones first, until the byte budget is spent."""
    chosen = []
    for source in sorted(files, key=lambda s: (s.rel.count("/"), s.rel)):
        if not (source.is_code or source.suffix in (".yml", ".yaml")):
            continue
        budget -= len(source.text)
        if budget < 0:
            break
        chosen.append(source)
    return sorted(chosen, key=lambda s: s.rel)


def behavioural_report(track: str, files: list[Source], observed: object) -> dict:
    by_rel = {s.rel: s for s in files}
    facts = {
        s.rel: analyse_code(s, want_tree=track == "mcp_servers" and bool(TOOL_HINT.search(s.text)))
        for s in _within_budget(files, BEHAVIOURAL_CODE_BYTES)
    }
    signals: list[Signal] = []
    for fact in facts.values():
        signals += action_signals(fact, track)
    tools: list[Tool] = []
    if track == "mcp_servers":
        manifests = [s for s in files if s.suffix == ".json" and len(s.text) < MAX_AST_BYTES]
        trees = {rel: fact.tree for rel, fact in facts.items()}
        tools = mcp_tools([fact.source for fact in facts.values()] + manifests, trees)
    tool_file_lines = {(t.file, t.line) for t in tools}
    signals += _context_signals(files, tool_file_lines)
    hidden = {(s.file, s.line) for s in signals if s.technique in ("unicode_tags", "zero_width")}
    signals += tool_signals(tools, hidden)
    evidence_extra: dict = {}
    if track == "packages":
        signals += _package_signals(files, by_rel, facts, evidence_extra)
    signals += observed_signals(observed)
    deceptive = deceptive_doc_signal(files, signals)
    if deceptive is not None:
        signals.append(deceptive)
    return _assemble(track, signals, facts, tools, observed, evidence_extra)


def _package_signals(
    files: list[Source], by_rel: dict[str, Source], facts: dict[str, FileFacts], extra: dict
) -> list[Signal]:
    signals: list[Signal] = []
    manifest = find_manifest(files)
    hooks: list[dict] = []
    if manifest is not None:
        signals += supply_chain_signals(manifest)
        if manifest.ecosystem == "npm":
            signals += npm_hook_signals(manifest, by_rel, facts)
            hooks = manifest.hooks
    for source in files:
        if source.base == "setup.py" and source.rel in facts:
            signals += setup_hook_signals(source, facts[source.rel], hooks)
    squat = typosquat_of(manifest.name) if manifest else None
    confusion = any(s.category == "dependency_confusion" for s in signals)
    extra["lifecycle"] = {"hooks": hooks}
    extra["supply_chain"] = {
        "ecosystem": manifest.ecosystem if manifest else None,
        "name": manifest.name if manifest else None,
        "version": manifest.version if manifest else None,
        "typosquat_of": squat,
        "dependency_confusion": confusion,
    }
    return signals


def _assemble(
    track: str,
    signals: list[Signal],
    facts: dict[str, FileFacts],
    tools: list[Tool],
    observed: object,
    extra: dict,
) -> dict:
    decision, risk, confidence = _decision(signals)
    findings = _dedupe_findings(signals) if decision != "ALLOW" else []
    capabilities = _capability_items(signals, facts, observed)
    injected = [
        {"file": s.file, "line": s.line, "technique": s.technique, "excerpt": s.excerpt}
        for s in signals
        if s.plane in ("context", "protocol") and s.technique
    ][:MAX_ITEMS]
    evidence: dict = {
        "action_plane": {"capabilities": capabilities},
        "context_plane": {"injected_instructions": injected},
    }
    if track == "mcp_servers":
        evidence["mcp_surface"] = {
            "tools": [
                {"name": t.name, "description_flags": t.flags, "file": t.file, "line": t.line}
                for t in tools
            ]
        }
    evidence.update(extra)
    ranked = sorted(signals, key=lambda s: (-s.weight, s.title))
    top = list(dict.fromkeys(s.title for s in ranked if s.weight >= 1))[:3]
    summary = f"{decision}: " + ("; ".join(top) if top else "no dangerous behaviour found")
    return {
        "verdict": {
            "decision": decision,
            "risk_score": risk,
            "confidence": confidence,
            "summary": summary[:400],
        },
        "evidence": evidence,
        "findings": findings,
        "policy": _policy(capabilities),
    }


def _policy(capabilities: list[dict]) -> dict:
    """A capability manifest a runtime could enforce: allow the benign, deny the rest."""
    benign = {
        "READ_FILE",
        "LIST_DIRECTORY",
        "READ_ENV",
        "RESOLVE_DNS",
        "FETCH_WEB",
        "CREATE_PROCESS",
    }
    seen = sorted({c["capability"] for c in capabilities})
    return {
        "allow": [c for c in seen if c in benign],
        "deny": [c for c in seen if c not in benign],
    }


# --------------------------------------------------------------------------- repositories: Python

WEB_ATTRS = frozenset(
    {
        "args",
        "form",
        "values",
        "json",
        "data",
        "files",
        "cookies",
        "headers",
        "get_json",
        "get_data",
        "GET",
        "POST",
        "body",
        "query_params",
        "path_params",
        "FILES",
        "COOKIES",
        "META",
        "stream",
        "query",
        "params",
        "text",
        "get_argument",
        "get_query_argument",
        "get_body_argument",
    }
)
SANITISERS = frozenset(
    {
        "int",
        "float",
        "bool",
        "len",
        "abs",
        "round",
        "quote",
        "escape",
        "basename",
        "secure_filename",
        "ip_address",
        "ip_network",
        "UUID",
        "format_html",
        "quote_plus",
        "urlencode",
        "isdigit",
        "isalnum",
        "hexdigest",
        "sha256",
        "md5",
        "bleach",
        "clean",
        "sanitize",
        "literal_eval",
        "hash",
        "id",
        "type",
        "isinstance",
        "getattr",
    }
)
GUARD_CALLS = re.compile(
    r"startswith|endswith|is_relative_to|commonpath|fullmatch|match|isalnum|isdigit|isidentifier"
)
SQL_METHODS = frozenset({"execute", "executemany", "executescript", "raw", "mogrify", "extra"})
SUBPROCESS = frozenset(
    {
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "run",
        "call",
        "check_output",
        "check_call",
        "Popen",
    }
)
SHELL_CALLS = frozenset(
    {
        "os.system",
        "os.popen",
        "commands.getoutput",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "asyncio.create_subprocess_shell",
        "popen2.popen2",
    }
)
PATH_SINKS = frozenset(
    {
        "open",
        "io.open",
        "codecs.open",
        "send_file",
        "flask.send_file",
        "FileResponse",
        "static_file",
        "os.remove",
        "os.unlink",
        "shutil.copyfile",
        "shutil.rmtree",
        "Path",
    }
)
DESER_SINKS = frozenset(
    {
        "pickle.loads",
        "pickle.load",
        "cPickle.loads",
        "dill.loads",
        "marshal.loads",
        "jsonpickle.decode",
        "yaml.unsafe_load",
        "shelve.open",
        "pandas.read_pickle",
        "pd.read_pickle",
        "_pickle.loads",
    }
)
SSRF_PREFIXES = ("requests.", "httpx.", "urllib.request.urlopen", "urlopen", "urllib3.", "aiohttp.")
SSRF_METHODS = frozenset(
    {"get", "post", "put", "delete", "head", "patch", "request", "urlopen", "stream", "options"}
)
REDIRECT_SINKS = frozenset(
    {"redirect", "HttpResponseRedirect", "RedirectResponse", "flask.redirect"}
)
XSS_SINKS = frozenset(
    {"render_template_string", "Markup", "mark_safe", "SafeString", "markupsafe.Markup"}
)
RESPONSE_SINKS = frozenset({"HttpResponse", "make_response", "Response", "HTMLResponse"})
UNSAFE_YAML = re.compile(
    r"Loader\s*=\s*(?:yaml\.)?(?:Unsafe)?Loader\b|Loader\s*=\s*yaml\.FullLoader"
)


@dataclass
class Vuln:
    file: str
    line: int
    cwe: str
    title: str
    description: str
    severity: str = "HIGH"
    all_cwes: tuple[str, ...] = ()
    scope: str = ""

    def as_dict(self) -> dict:
        item = {
            "file": self.file,
            "line": self.line,
            "cwe": self.cwe,
            "title": self.title,
            "description": self.description,
            "severity": self.severity,
        }
        if self.all_cwes:
            item["all_cwes"] = list(self.all_cwes)
        return item


ROUTE_DECORATORS = frozenset(
    {"get", "post", "put", "delete", "patch", "route", "api_route", "websocket", "api_view"}
)


def _route_params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters a web framework fills from the request (FastAPI, Flask, Django)."""
    route = None
    for decorator in func.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr in ROUTE_DECORATORS
        ):
            route = decorator
    params = func.args.args + func.args.kwonlyargs
    first = params[0].arg if params else ""
    if route is None and first != "request":
        return set()
    typed = set()
    if route is not None and route.args and isinstance(route.args[0], ast.Constant):
        typed = set(re.findall(r"<(?:int|float|uuid):(\w+)>", str(route.args[0].value)))
    out = set()
    for arg in params:
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        if arg.arg in ("self", "cls", "request", "req", "db", "session") or arg.arg in typed:
            continue
        if re.fullmatch(r"int|float|bool|UUID|uuid\.UUID|Request|Session|.*Depends.*", annotation):
            continue
        out.add(arg.arg)
    return out


class PyTaint:
    """Intraprocedural taint of one function (or module body) from sources to sinks."""

    def __init__(
        self, rel: str, route_params: set[str], extra_tainted: set[str] | None = None
    ) -> None:
        self.rel = rel
        self.tainted: dict[str, frozenset[str]] = {p: frozenset({"web"}) for p in route_params}
        for name in extra_tainted or ():
            self.tainted[name] = frozenset({"arg"})
        self.derived: dict[str, set[str]] = {}
        self.findings: list[Vuln] = []
        self.scope = ""

    # ---- expressions

    def taint(self, node: ast.AST | None) -> frozenset[str]:
        if node is None:
            return frozenset()
        source = self._source_kind(node)
        if source:
            return source
        if isinstance(node, ast.Name):
            return self.tainted.get(node.id, frozenset())
        if isinstance(node, ast.Call):
            return self._call_taint(node)
        if isinstance(node, ast.Compare | ast.Lambda | ast.Constant):
            return frozenset()
        out: frozenset[str] = frozenset()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr | ast.comprehension | ast.keyword | ast.FormattedValue):
                out |= self.taint(child)
        return out

    def _source_kind(self, node: ast.AST) -> frozenset[str]:
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
            chain = _chain(node)
            for index, name in enumerate(chain):
                if name in ("request", "req") and any(c in WEB_ATTRS for c in chain[index + 1 :]):
                    return frozenset({"web"})
            text = ".".join(chain)
            if text.startswith("sys.argv"):
                return frozenset({"cli"})
            if text.startswith(("os.environ", "os.getenv")):
                return frozenset({"env"})
            if text in ("input", "raw_input"):
                return frozenset({"cli"})
        return frozenset()

    def _call_taint(self, call: ast.Call) -> frozenset[str]:
        name = _call_name(call).rsplit(".", 1)[-1]
        if name in SANITISERS:
            return frozenset()
        out: frozenset[str] = frozenset()
        if isinstance(call.func, ast.Attribute):
            out |= self.taint(call.func.value)
        for arg in call.args:
            out |= self.taint(arg)
        for keyword in call.keywords:
            out |= self.taint(keyword.value)
        return out

    # ---- statements

    def run_function(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope = func.name
        self.block(func.body)

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            try:
                self.statement(stmt)
            except RecursionError:
                continue

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        self._check_sinks(stmt)
        if isinstance(stmt, ast.Assign):
            self._assign(stmt.targets, stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assign([stmt.target], stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            self._assign([stmt.target], stmt.value, keep=True)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self._assign([stmt.target], stmt.iter)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._assign([item.optional_vars], item.context_expr)
            self.block(stmt.body)
        elif isinstance(stmt, ast.If):
            self._guard(stmt)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.While):
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.block(stmt.body)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.block(handler.body)
            self.block(stmt.orelse)  # type: ignore[attr-defined]
            self.block(stmt.finalbody)  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            self._check_returned_html(stmt)

    def _assign(self, targets: list[ast.expr], value: ast.AST, keep: bool = False) -> None:
        kinds = self.taint(value)
        origins = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        for target in targets:
            for name in _target_names(target):
                if kinds:
                    self.tainted[name] = self.tainted.get(name, frozenset()) | kinds
                    self.derived[name] = origins
                elif not keep and not isinstance(target, ast.Subscript | ast.Attribute):
                    self.tainted.pop(name, None)

    def _guard(self, stmt: ast.If) -> None:
        """`if not allowed(x): return/abort` sanitises x and what x came from."""
        if not (_exits_early(stmt.body) or _aborts(stmt.body)):
            return
        test_text = ast.unparse(stmt.test)
        has_check = any(
            isinstance(n, ast.Compare)
            and any(isinstance(op, ast.In | ast.NotIn | ast.Eq | ast.NotEq) for op in n.ops)
            for n in ast.walk(stmt.test)
        ) or bool(GUARD_CALLS.search(test_text))
        if not has_check:
            return
        for node in ast.walk(stmt.test):
            if isinstance(node, ast.Name) and node.id in self.tainted:
                self._sanitise(node.id, depth=0)

    def _sanitise(self, name: str, depth: int) -> None:
        self.tainted.pop(name, None)
        if depth < 4:
            for origin in self.derived.get(name, ()):
                self._sanitise(origin, depth + 1)

    # ---- sinks

    def _check_sinks(self, stmt: ast.stmt) -> None:
        for node in _walk_shallow(stmt):
            if isinstance(node, ast.Call):
                self._sink(node)

    def _report(self, node: ast.AST, cwe: str, title: str, description: str, *extra: str) -> None:
        if any(v.cwe == cwe and v.scope == self.scope for v in self.findings):
            return  # one weakness per function: the first sink is where it happens
        self.findings.append(
            Vuln(self.rel, node.lineno, cwe, title, description, "HIGH", extra, self.scope)
        )

    def _sink(self, call: ast.Call) -> None:
        name = _call_name(call)
        last = name.rsplit(".", 1)[-1]
        first = call.args[0] if call.args else None
        taint = self.taint(first)
        web = "web" in taint or "arg" in taint
        # The environment is set by the operator, not the attacker: it only counts for
        # sinks that run code outright.
        kinds = taint - {"env"}
        if name in ("eval", "exec") or name in DESER_SINKS:
            kinds = taint
        sqlalchemy_text = last == "text" and _builds_string(first)
        if (
            (last in SQL_METHODS and isinstance(call.func, ast.Attribute)) or sqlalchemy_text
        ) and kinds:
            if not isinstance(first, ast.Constant):
                self._report(
                    call,
                    "CWE-89",
                    "SQL injection",
                    "User input is formatted into an SQL query instead of bound as a parameter.",
                )
        elif name in SHELL_CALLS and kinds:
            self._report(
                call,
                "CWE-78",
                "OS command injection",
                "User input is interpolated into a shell command.",
            )
        elif name in SUBPROCESS or name.endswith(tuple("." + s for s in SUBPROCESS)):
            self._subprocess_sink(call)
        elif name in ("eval", "exec") and kinds:
            cwe = "CWE-95" if name == "eval" else "CWE-94"
            self._report(
                call,
                cwe,
                "Code injection via " + name,
                f"User input reaches {name}() and runs as code.",
                "CWE-94",
                "CWE-95",
            )
        elif (name in PATH_SINKS or last in ("send_file", "FileResponse")) and web:
            self._report(
                call,
                "CWE-22",
                "Path traversal",
                "A user-supplied path is opened without confining it to a base directory.",
            )
        elif name in DESER_SINKS and kinds:
            self._report(
                call,
                "CWE-502",
                "Unsafe deserialisation",
                f"Attacker-controlled bytes reach {name}, which can execute code.",
            )
        elif (name in ("yaml.load", "yaml.load_all", "load") and name != "load") or (
            last in ("load", "load_all") and name.startswith("yaml")
        ):
            self._yaml_sink(call, kinds)
        elif web and self._is_ssrf(name, last):
            self._report(
                call,
                "CWE-918",
                "Server-side request forgery",
                "The server fetches a URL taken from the request without an allow-list.",
            )
        elif web and (name in REDIRECT_SINKS or last in ("redirect",)):
            self._report(
                call,
                "CWE-601",
                "Open redirect",
                "The response redirects to a URL taken from the request.",
            )
        elif web and (name in XSS_SINKS or last in XSS_SINKS):
            extra = ("CWE-1336", "CWE-94") if last == "render_template_string" else ()
            self._report(
                call,
                "CWE-79",
                "Cross-site scripting",
                f"Request data is rendered as HTML by {last} without escaping.",
                *extra,
            )
        elif web and last in RESPONSE_SINKS and _builds_string(first):
            self._report(
                call,
                "CWE-79",
                "Cross-site scripting",
                "Request data is written into an HTML response without escaping.",
            )

    def _is_ssrf(self, name: str, last: str) -> bool:
        if name.startswith(SSRF_PREFIXES) and last in SSRF_METHODS | {"urlopen", "Request"}:
            return True
        return last in ("urlopen",) or (
            last in ("get", "post") and re.search(r"session|client|http", name, re.I) is not None
        )

    def _subprocess_sink(self, call: ast.Call) -> None:
        first = call.args[0] if call.args else None
        shell = any(
            k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value
            for k in call.keywords
        )
        if shell and self.taint(first):
            self._report(
                call,
                "CWE-78",
                "OS command injection",
                "User input reaches a subprocess call made with shell=True.",
            )
            return
        if isinstance(first, ast.List | ast.Tuple) and len(first.elts) >= 3:
            program, flag = (_string_value(e) or "" for e in first.elts[:2])
            is_shell = program.rsplit("/", 1)[-1] in ("sh", "bash", "zsh", "dash") and flag == "-c"
            if is_shell and any(self.taint(e) for e in first.elts[2:]):
                self._report(
                    call,
                    "CWE-78",
                    "OS command injection",
                    "User input is interpolated into an sh -c command line.",
                )

    def _yaml_sink(self, call: ast.Call, kinds: frozenset[str]) -> None:
        text = ast.unparse(call)
        if "SafeLoader" in text or "CSafeLoader" in text or "BaseLoader" in text:
            return
        loader = [k.value for k in call.keywords if k.arg == "Loader"] + call.args[1:2]
        explicit_unsafe = any(
            _dotted(node).rsplit(".", 1)[-1] in ("Loader", "UnsafeLoader", "FullLoader")
            and isinstance(node, ast.Attribute)
            for node in loader
        ) or bool(UNSAFE_YAML.search(text))
        # A loader chosen through a variable is judged only when the data is tainted.
        if kinds or not loader or explicit_unsafe:
            self._report(
                call,
                "CWE-502",
                "Unsafe YAML deserialisation",
                "yaml.load with an unsafe Loader constructs arbitrary Python objects.",
            )

    def _check_returned_html(self, stmt: ast.Return) -> None:
        value = stmt.value
        kinds = self.taint(value)
        if ("web" in kinds) and _builds_string(value) and "<" in _literal_text(value):
            self._report(
                stmt,
                "CWE-79",
                "Cross-site scripting",
                "Request data is returned inside HTML without escaping.",
            )


def _chain(node: ast.AST) -> list[str]:
    """Identifiers from root to leaf of an attribute/call/subscript chain."""
    names: list[str] = []
    depth = 0
    while depth < 50:
        depth += 1
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript | ast.Await):
            node = node.value
        else:
            break
    if isinstance(node, ast.Name):
        names.append(node.id)
    return list(reversed(names))


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Subscript | ast.Attribute):
        root = _chain(target)
        return root[:1]
    return []


def _aborts(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _call_name(node).rsplit(".", 1)[-1] in (
                "abort",
                "HTTPException",
                "HttpResponseBadRequest",
                "PermissionDenied",
            ):
                return True
            if isinstance(node, ast.Raise):
                return True
    return False


def _walk_shallow(stmt: ast.stmt) -> Iterator[ast.AST]:
    """Nodes of a statement's own expressions, not of nested blocks or functions."""
    nested = ("body", "orelse", "finalbody", "handlers")
    stack: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in nested:
            continue
        if isinstance(value, ast.AST):
            stack.append(value)
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, ast.AST))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _builds_string(node: ast.AST | None) -> bool:
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    )


def _literal_text(node: ast.AST | None) -> str:
    if node is None:
        return ""
    return " ".join(
        str(n.value)
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )


SECRET_NAME = re.compile(
    r"(?i)(secret|passw(?:or)?d|passwd|\bpwd\b|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|auth[_-]?key|client[_-]?secret|signing[_-]?key|credential)"
)
NOT_SECRET_NAME = re.compile(
    r"(?i)(_url|_uri|_path|_file|_name|_header|_env|_var|_field|_pattern|_regex|_re|_format|"
    r"_template|_prefix|_length|_len|_type|_id_name|_key_name|_param|_label|_dir)$"
)
KNOWN_TOKENS = re.compile(
    r"\bAKIA[0-9A-Z]{16}\b|\bsk_live_[0-9a-zA-Z]{16,}|\brk_live_[0-9a-zA-Z]{16,}|"
    r"\bgh[pousr]_[A-Za-z0-9]{36}\b|\bxox[baprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b|"
    r"\bglpat-[A-Za-z0-9_-]{20}\b|-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----"
)


def looks_like_secret(name: str, value: str) -> bool:
    """A literal assigned to a secret-named variable that looks like a real credential."""
    if KNOWN_TOKENS.search(value):
        return "EXAMPLE" not in value.upper()
    if not SECRET_NAME.search(name) or NOT_SECRET_NAME.search(name):
        return False
    if len(value) < 12 or " " in value or re.search(r"[\\{}()\[\]$<>]|\?P|\.\*", value):
        return False
    if re.fullmatch(r"[A-Z0-9_]+", value) or re.match(r"(?i)https?://|/|\.\./|~", value):
        return False
    if re.search(
        r"(?i)changeme|example|placeholder|your[-_]|xxxx|dummy|test|secret_key_here|\*\*\*", value
    ):
        return False
    # Real keys mix digits or cases; `__null_token_value__` is a sentinel, not a secret.
    varied = bool(re.search(r"\d", value)) or (
        bool(re.search(r"[a-z]", value)) and bool(re.search(r"[A-Z]", value)) and len(value) >= 20
    )
    return varied and shannon_entropy(value) >= 3.0


def python_secret_vulns(source: Source, tree: ast.Module) -> list[Vuln]:
    out = []
    for node in ast.walk(tree):
        pairs: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.Assign):
            pairs = [(_assign_name(t), node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(_assign_name(node.target), node.value)]
        elif isinstance(node, ast.Call):
            pairs = [(k.arg or "", k.value) for k in node.keywords]
        elif isinstance(node, ast.Dict):
            pairs = [
                (_string_value(k) or "", v)
                for k, v in zip(node.keys, node.values, strict=False)
                if k is not None
            ]
        for name, value in pairs:
            literal = isinstance(value, ast.Constant) and isinstance(value.value, str)
            if literal and looks_like_secret(name, value.value):  # type: ignore[attr-defined]
                out.append(_secret_vuln(source.rel, value.lineno, name))
    return out


def _assign_name(target: ast.AST) -> str:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript):
        return _string_value(target.slice) or ""
    return ""


def _secret_vuln(rel: str, line: int, name: str) -> Vuln:
    return Vuln(
        rel,
        line,
        "CWE-798",
        f"Hard-coded secret in {name}" if name else "Hard-coded secret",
        "A credential or signing key is committed in source code.",
        "HIGH",
        ("CWE-259", "CWE-321"),
        scope=f"secret:{line}",
    )


def audit_python(source: Source) -> list[Vuln]:
    tree = _parse_python(source.text)
    if tree is None:
        return []
    vulns: list[Vuln] = []
    module = PyTaint(source.rel, set())
    module.scope = "<module>"
    module.block(
        [s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    )
    vulns += module.findings
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            tracker = PyTaint(source.rel, _route_params(node))
            tracker.run_function(node)
            vulns += tracker.findings
    vulns += python_secret_vulns(source, tree)
    return vulns


# --------------------------------------------------------------------------- repositories: JS

JS_SOURCE = re.compile(
    r"\breq(?:uest)?\.(?:query|body|params|headers|cookies)\b|\blocation\.(?:search|hash|href)\b|"
    r"\bdocument\.(?:URL|cookie|referrer)\b|\bwindow\.name\b|\bprocess\.argv\b|\bctx\.(?:query|"
    r"request\.body|params)\b"
)
JS_ASSIGN = re.compile(r"(?:const|let|var)\s+(\{[^}]*\}|\[[^\]]*\]|[\w$]+)\s*=\s*(.+)")
JS_SANITISER = re.compile(
    r"\b(?:escape\w*|encodeURIComponent|sanitize\w*|DOMPurify\.sanitize|parseInt|parseFloat|"
    r"Number|path\.basename|basename|validator\.\w+)\s*\("
)
JS_GUARD = re.compile(r"\bif\s*\(")
JS_GUARD_CHECK = re.compile(r"\.has\(|\.includes\(|startsWith\(|===|!==|\.test\(|\.match\(")
JS_SQL = re.compile(r"\.(?:query|execute|raw|run|all|get)\s*\(")
JS_CMD = re.compile(r"(?<![\w.])(?:exec|execSync)\s*\(|child_process\.exec\(|shell:\s*true")
JS_PATH = re.compile(
    r"\b(?:readFile|readFileSync|createReadStream|writeFile|writeFileSync|unlink|unlinkSync|"
    r"sendFile|download|readdir|appendFile)\s*\("
)
JS_SSRF = re.compile(
    r"\baxios(?:\.(?:get|post|put|delete|request|head|patch))?\s*\(|\bfetch\s*\(|\bgot(?:\.\w+)?\s*\(|"
    r"\bneedle\s*\(|\bhttps?\.(?:get|request)\s*\(|\brequest(?:\.(?:get|post))?\s*\(|"
    r"superagent\.\w+\s*\("
)
JS_HTML = re.compile(r"\bres\.(?:send|write|end)\s*\(")
JS_DOM = re.compile(
    r"\.(?:innerHTML|outerHTML)\s*\+?=|document\.write(?:ln)?\s*\(|insertAdjacentHTML\s*\("
)
JS_EVAL = re.compile(r"(?<![\w.])eval\s*\(|new\s+Function\s*\(|setTimeout\s*\(\s*[`\"']")
JS_REDIRECT = re.compile(r"\bres\.redirect\s*\(|location\.(?:href|assign|replace)\s*(?:=|\()")
JS_SECRET = re.compile(r"(?:const|let|var)?\s*([\w$]+)\s*[:=]\s*[\"'`]([^\"'`\s]{8,})[\"'`]")


class JsTaint:
    """Line-level taint for one JS/TS file: identifiers fed by request data."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.tainted: set[str] = set()
        self.built: set[str] = set()  # tainted identifiers that hold built strings
        self.findings: list[Vuln] = []
        # Browser code cannot forge server-side requests or open server files.
        self.browser = bool(re.search(r"\bdocument\.|\bwindow\.", source.text)) and not re.search(
            r"require\(\s*[\"'](?:express|http|fs|koa|fastify)", source.text
        )

    def mentions(self, text: str) -> bool:
        if JS_SOURCE.search(text):
            return True
        return any(re.search(rf"(?<![\w$.]){re.escape(n)}\b", text) for n in self.tainted)

    def run(self) -> list[Vuln]:
        code = _code_lines(self.source, None)
        by_line = dict(code)
        for number, line in code:
            self._assignment(line)
            self._guard(number, line, by_line)
            self._sinks(number, line)
        return self.findings

    def _assignment(self, line: str) -> None:
        match = JS_ASSIGN.search(line)
        if not match:
            return
        names = re.findall(r"[\w$]+", match.group(1))
        value = match.group(2)
        if self.mentions(value) and not JS_SANITISER.search(value):
            self.tainted.update(names)
            if "`" in value or "+" in value:
                self.built.update(names)
        else:
            self.tainted.difference_update(names)
            self.built.difference_update(names)

    def _guard(self, number: int, line: str, by_line: dict[int, str]) -> None:
        if not (JS_GUARD.search(line) and JS_GUARD_CHECK.search(line)):
            return
        window = " ".join(by_line.get(n, "") for n in range(number, number + 4))
        if not re.search(r"\breturn\b|\bthrow\b|\bnext\(", window):
            return
        for name in list(self.tainted):
            if re.search(rf"(?<![\w$]){re.escape(name)}\b", line):
                self.tainted.discard(name)
                self.built.discard(name)

    def _interpolated(self, line: str) -> bool:
        """Tainted data spliced into a string by a template literal or concatenation."""
        for match in re.finditer(r"\$\{([^}]*)\}", line):
            inner = match.group(1)
            if self.mentions(inner) and not JS_SANITISER.search(inner):
                return True
        for match in re.finditer(r"[\"'`]\s*\+\s*([^;,)]+)|([\w$.\[\]]+)\s*\+\s*[\"'`]", line):
            part = match.group(1) or match.group(2) or ""
            if self.mentions(part) and not JS_SANITISER.search(part):
                return True
        return any(re.search(rf"\(\s*{re.escape(n)}\s*[,)]", line) for n in self.built)

    def _add(self, number: int, cwe: str, title: str, description: str) -> None:
        if any(v.cwe == cwe and abs(v.line - number) <= 2 for v in self.findings):
            return
        self.findings.append(Vuln(self.source.rel, number, cwe, title, description))

    def _sinks(self, number: int, line: str) -> None:
        # Each sink is judged on the text from the sink call onwards, so a tainted
        # value elsewhere on the line (e.g. in a callback) does not implicate it.
        sql = self._at(JS_SQL, line)
        if (
            sql
            and self._interpolated(sql)
            and re.search(r"(?i)select|insert|update|delete|where|from|sql|query", line)
        ):
            self._add(
                number,
                "CWE-89",
                "SQL injection",
                "A request parameter is concatenated into the SQL string.",
            )
        command = self._at(JS_CMD, line)
        if command and (self._interpolated(command) or self._first_arg_tainted(command)):
            self._add(
                number,
                "CWE-78",
                "OS command injection",
                "A request parameter is interpolated into a shell command run by exec.",
            )
        path = self._at(JS_PATH, line)
        if (
            path
            and not self.browser
            and self._first_arg_tainted(path)
            and not re.search(r"\broot\s*:", path)
        ):
            self._add(
                number,
                "CWE-22",
                "Path traversal",
                "A request parameter is joined into a file path without containment.",
            )
        fetch = self._at(JS_SSRF, line)
        if fetch and not self.browser and self._first_arg_tainted(fetch):
            self._add(
                number,
                "CWE-918",
                "Server-side request forgery",
                "A URL from the request is fetched server-side without an allow-list.",
            )
        html = self._at(JS_HTML, line)
        if html and ((self._interpolated(html) and "<" in html) or self._first_arg_tainted(html)):
            self._add(
                number,
                "CWE-79",
                "Reflected cross-site scripting",
                "A request parameter is written into HTML unescaped.",
            )
        dom = self._at(JS_DOM, line)
        if dom and re.search(r"\$\{|[\"'`]\s*\+|\+\s*[\"'`]", dom) and not JS_SANITISER.search(dom):
            self._add(
                number,
                "CWE-79",
                "DOM cross-site scripting",
                "Untrusted data is assigned to innerHTML without escaping.",
            )
        code = self._at(JS_EVAL, line)
        if code and self.mentions(code):
            self._add(
                number,
                "CWE-95",
                "Code injection via eval",
                "Request data reaches eval or the Function constructor.",
            )
        redirect = self._at(JS_REDIRECT, line)
        if redirect and self._first_arg_tainted(redirect):
            self._add(
                number,
                "CWE-601",
                "Open redirect",
                "The response redirects to a URL taken from the request.",
            )

    @staticmethod
    def _at(pattern: re.Pattern[str], line: str) -> str:
        match = pattern.search(line)
        return line[match.start() :] if match else ""

    def _first_arg_tainted(self, text: str) -> bool:
        """The first argument of the call opening `text` (balanced parentheses) is tainted."""
        opened = text.find("(")
        equals = text.find("=")
        if equals != -1 and (opened == -1 or equals < opened):
            argument = text[equals + 1 :]  # an assignment sink such as location.href = x
        elif opened == -1:
            return False
        else:
            argument = _first_argument(text[opened + 1 :])
        return self.mentions(argument) and not JS_SANITISER.search(argument)


def _first_argument(text: str) -> str:
    depth = 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return text[:index]
            depth -= 1
        elif char == "," and depth == 0:
            return text[:index]
    return text


def js_secret_vulns(source: Source) -> list[Vuln]:
    out = []
    for number, line in _code_lines(source, None):
        for match in JS_SECRET.finditer(line):
            if looks_like_secret(match.group(1), match.group(2)):
                out.append(_secret_vuln(source.rel, number, match.group(1)))
                break
        else:
            token = KNOWN_TOKENS.search(line)
            if token and "EXAMPLE" not in line.upper():
                out.append(_secret_vuln(source.rel, number, ""))
    return out


# --------------------------------------------------------------------------- repositories: CI

WORKFLOW_INJECTION = re.compile(
    r"\$\{\{\s*(?:github\.event\.(?:issue|pull_request|comment|review|review_comment|"
    r"head_commit|commits|discussion|pages|workflow_run)[\w.\[\]*]*\.(?:title|body|ref|label|"
    r"message|name|email|head_branch|default_branch)|github\.head_ref)\s*\}\}"
)


def audit_workflow(source: Source) -> list[Vuln]:
    """`${{ github.event.* }}` spliced into a `run:` script is shell injection."""
    out = []
    run_indent: int | None = None
    for number, line in enumerate(source.lines, 1):
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if run_indent is not None and stripped and indent <= run_indent:
            run_indent = None
        run_key = re.match(r"-?\s*run\s*:\s*(.*)", stripped)
        if run_key:
            run_indent = indent
            if not WORKFLOW_INJECTION.search(run_key.group(1)):
                continue
        if run_indent is not None and WORKFLOW_INJECTION.search(line):
            out.append(
                Vuln(
                    source.rel,
                    number,
                    "CWE-78",
                    "GitHub Actions script injection",
                    "Attacker-controlled event text is expanded inside a run: shell script.",
                    "HIGH",
                    ("CWE-77", "CWE-94"),
                    scope=f"wf:{number}",
                )
            )
    return out[:8]


# Fixtures in tests hold fake credentials on purpose.
TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|fixtures|spec)/|(?:^|/)test_[^/]*$|_test\.\w+$|\.(?:spec|test)\.\w+$"
)


def audit_repository(files: list[Source]) -> list[Vuln]:
    vulns: list[Vuln] = []
    for source in files:
        try:
            test_file = bool(TEST_PATH.search(source.rel))
            if source.is_python:
                found = audit_python(source)
                vulns += [v for v in found if not (test_file and v.cwe == "CWE-798")]
            elif source.is_js:
                vulns += JsTaint(source).run()
                vulns += [] if test_file else js_secret_vulns(source)
            elif source.rel.startswith(".github/workflows/") and source.suffix in (".yml", ".yaml"):
                vulns += audit_workflow(source)
        except (RecursionError, ValueError, MemoryError):
            continue
    unique: dict[tuple[str, int, str], Vuln] = {}
    for vuln in vulns:
        unique.setdefault((vuln.file, vuln.line, vuln.cwe), vuln)
    ordered = sorted(unique.values(), key=lambda v: (v.file, v.line, v.cwe))
    return ordered[:MAX_ITEMS]


def repository_report(files: list[Source]) -> dict:
    vulns = audit_repository(_within_budget(files, REPOSITORY_CODE_BYTES))
    decision = "BLOCK" if len(vulns) >= 2 else "WARN" if vulns else "ALLOW"
    items = [v.as_dict() for v in vulns]
    findings = [
        {
            "category": v.title.lower().replace(" ", "_"),
            "severity": v.severity,
            "plane": "action",
            "title": v.title,
            "file": v.file,
            "line": v.line,
        }
        for v in vulns[:MAX_FINDINGS]
    ]
    summary = ", ".join(f"{v.cwe} {v.file}:{v.line}" for v in vulns[:6]) or "no vulnerability found"
    return {
        "verdict": {
            "decision": decision,
            "risk_score": min(100, 30 * len(vulns)),
            "confidence": 0.7 if vulns else 0.6,
            "summary": f"{decision}: {summary}"[:400],
        },
        "evidence": {
            "audit": {
                "files_analysed": max(1, len(files)),
                "lines_analysed": sum(len(s.lines) for s in files),
            },
            "vulnerabilities": items,
        },
        "findings": findings,
    }


# --------------------------------------------------------------------------- entry point


def _empty_report(track: str, reason: str) -> dict:
    evidence: dict = (
        {"audit": {"files_analysed": 1, "lines_analysed": 0}, "vulnerabilities": []}
        if track == "repositories"
        else {
            "action_plane": {"capabilities": []},
            "context_plane": {"injected_instructions": []},
            "mcp_surface": {"tools": []},
            "lifecycle": {"hooks": []},
            "supply_chain": {"typosquat_of": None, "dependency_confusion": False},
        }
    )
    return {
        "verdict": {"decision": "WARN", "risk_score": 50, "confidence": 0.1, "summary": reason},
        "evidence": evidence,
        "findings": [],
    }


def agent_main(context: dict) -> dict:
    track = str(context.get("track", ""))
    if track != "repositories":
        _thread_probe(context)
    try:
        files = collect_files(str(context["artifact_dir"]))
        if track == "repositories":
            return repository_report(files)
        return behavioural_report(track, files, context.get("observed"))
    except (RecursionError, MemoryError, ValueError, OSError, KeyError) as exc:
        # Hostile input must never cost the run: an unreadable artifact is suspicious.
        return _empty_report(track, f"analysis failed: {type(exc).__name__}")

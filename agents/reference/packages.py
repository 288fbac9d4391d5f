"""Packages: manifests, typosquats, dependency tricks and install hooks."""

import ast
import json
import posixpath
import re
from dataclasses import dataclass, field

from .action_python import _dotted
from .common import Signal, Source, _parse_python, act, damerau_levenshtein, line_at
from .facts import DANGEROUS_KINDS, EGRESS_SHELL, HOOK_DANGER, REMOTE_EXEC, Event, FileFacts

POPULAR_NAMES = (
    # PyPI
    "requests numpy pandas urllib3 setuptools colorama python-dateutil django flask boto3 "
    "botocore pyyaml six certifi idna charset-normalizer cryptography pillow matplotlib scipy "
    "beautifulsoup4 selenium pytest jinja2 click attrs simplejson termcolor tqdm rich httpx "
    "aiohttp pydantic fastapi uvicorn paramiko psycopg2 pymongo redis sqlalchemy tensorflow "
    "torch scikit-learn opencv-python openai anthropic pycryptodome web3 discord.py "
    "python-dotenv pyjwt protobuf grpcio lxml wheel pip virtualenv docutils markdown "
    "typing-extensions packaging pyopenssl jmespath awscli google-auth werkzeug gunicorn "
    "celery keras transformers huggingface-hub pygame pyautogui seaborn plotly scrapy tornado "
    "psutil openpyxl pymysql mysqlclient loguru playwright telethon pyrogram aiogram "
    "python-telegram-bot solana tronpy ccxt pycrypto pynacl passlib dnspython websockets "
    "websocket-client pyinstaller pywin32 pyperclip pynput tabulate xgboost lightgbm "
    "google-cloud-storage azure-storage-blob "
    # npm
    "lodash express react react-dom electron axios chalk commander debug moment request async "
    "underscore uuid webpack typescript jquery vue angular next eslint prettier dotenv mongoose "
    "socket.io colors cross-env node-fetch babel-core coffee-script discord.js ethers puppeteer "
    "yargs body-parser cors jsonwebtoken bcrypt nodemailer mysql mongodb bootstrap "
    "styled-components redux rxjs minimist glob semver inquirer ua-parser-js event-stream "
    "nodemon ts-node tailwindcss postcss autoprefixer esbuild rollup fs-extra mkdirp rimraf "
    "cross-spawn execa shelljs node-telegram-bot-api telegraf bitcoinjs-lib twilio stripe "
    "firebase graphql sequelize sqlite3 better-sqlite3 bcryptjs noblox.js"
)
# Popular in their own right though one edit away from a name above (top npm/PyPI names).
NEAR_BUT_HONEST = (
    "preact mysql2 commondir enquirer gaxios protobufjs color colord dargs domutils touch "
    "crypt redact query markdown2 scapy psycopg beautifulsoup"
)
POPULAR = tuple(re.sub(r"[-_.]+", "-", name) for name in POPULAR_NAMES.split())
POPULAR_SET = frozenset(POPULAR) | frozenset(NEAR_BUT_HONEST.split())
INTERNAL_HINT = re.compile(r"internal|private|corp|intra|-int\b|company|infra|@[\w-]+/")


def _normalise_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def typosquat_of(name: str, max_distance: int = 2) -> str | None:
    norm = _normalise_name(name)
    # A scope belongs to its owner; a scoped look-alike is dependency confusion, judged apart.
    if norm in POPULAR_SET or len(norm) < 5 or norm.startswith("@"):
        return None
    for popular in POPULAR:
        if abs(len(popular) - len(norm)) > 2:
            continue
        distance = damerau_levenshtein(norm, popular)
        limit = min(max_distance, 1 if len(popular) < 7 else 2)
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
    main: str = "index.js"  # what `node .` runs


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
    main = data.get("main")
    if isinstance(main, str) and main.strip("./"):
        manifest.main = main.strip().removeprefix("./")
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
        line_at(source.text, name.start(1)),
        line_at(source.text, version.start(1)) if version else 1,
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


def _hook_targets(command: str, files: dict[str, Source], main: str = "index.js") -> list[str]:
    targets = []
    required = re.findall(r"require\(\s*[\"'](\.{0,2}/?[^\"']+)[\"']\s*\)", command)
    for token in [*required, *re.split(r"[\s;&|]+", command)]:
        token = token.strip("\"'")
        if token in (".", "./"):
            token = main  # `node .` runs the package's main file
        found = _local_file(token.lstrip("./"), files)
        if found is not None:
            targets.append(found)
    return targets


def _local_file(path: str, files: dict[str, Source]) -> str | None:
    """The package file a path or a `require` names (Node adds .js or /index.js)."""
    path = posixpath.normpath(path) if path else path
    for candidate in (path, f"{path}.js", f"{path}/index.js"):
        if candidate in files:
            return candidate
    return None


LOCAL_REQUIRE = re.compile(r"require\(\s*[\"'](\.{1,2}/[^\"']+)[\"']\s*\)")


def _hook_closure(targets: list[str], files: dict[str, Source], limit: int = 24) -> list[str]:
    """The hook's scripts and the package's own modules they require, transitively: an
    install script often only starts code that lives one or two modules away."""
    seen = list(dict.fromkeys(targets))
    for rel in seen:
        if len(seen) >= limit:
            break
        source = files.get(rel)
        if source is None or not source.is_js:
            continue
        for required in LOCAL_REQUIRE.findall(source.text[:500_000]):
            path = posixpath.join(posixpath.dirname(rel), required)
            found = _local_file(path, files)
            if found is not None and found not in seen:
                seen.append(found)
    return seen[:limit]


def _hook_script_dangerous(facts: FileFacts, ranges: list[tuple[int, int]] | None = None) -> bool:
    """Install-time code is dangerous when it steals, persists, hides or runs remote code;
    downloading a prebuilt binary from an ordinary host is what many honest packages do."""
    spans = ranges or [(0, 1 << 30)]

    def inside(*kinds: str) -> list[Event]:
        return [e for e in facts.of(*kinds) if any(a <= e.line <= b for a, b in spans)]

    if inside(*HOOK_DANGER) or any(e.detail != "unknown" for e in inside("download_exec")):
        return True
    if ranges is not None and inside("dynamic_exec"):
        return True  # an install command that evaluates a string it built: nothing honest does
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
        targets = _hook_targets(command, files, manifest.main)
        inline = re.search(r"node\s+-e\s*(.*)", command)
        # `node -e "require('./x')"` only runs x, which is judged on its own below.
        dangerous_inline = bool(
            EGRESS_SHELL.search(command) or REMOTE_EXEC.search(command)
        ) or bool(
            re.search(r"base64|eval|child_process|https?[.:]|fetch\(|Buffer\.from", command)
            or (
                inline
                and not re.fullmatch(
                    r"[\"']?(?:try\s*\{)?\s*require\([^)]*\)[^\"']*[\"']?", inline.group(1).strip()
                )
            )
        )
        reached = _hook_closure(targets, files)
        dangerous_script = any(_hook_script_dangerous(facts[t]) for t in reached if t in facts)
        hidden = any(BASE64_URL.search(files[t].text) for t in reached)
        launches = ((files[t], BUNDLED_LAUNCH.search(files[t].text)) for t in reached)
        launch = next(((source, found) for source, found in launches if found), None)
        if launch is not None:
            signals.append(_bundled_launch_signal(hook, *launch))
        hook["runs"] = targets
        hook["dangerous"] = dangerous_inline or dangerous_script or hidden or bool(launch)
        if hook["dangerous"]:
            shown = targets[0] if targets else command[:60]
            signals.append(
                act(
                    "install_hook",
                    "HIGH",
                    f"{hook['hook']} hook runs {shown}",
                    manifest.file,
                    hook["line"],
                    3.0,
                    "CREATE_PROCESS",
                )
            )
    return signals


# A program the package ships, started from an install script: a dropper. Honest packages
# fetch or build their native parts; they do not launch a bundled Windows program on install.
BUNDLED_LAUNCH = re.compile(
    r"(?:spawn|execFile|exec|fork)(?:Sync)?\(\s*(?:[\w.]*join\(\s*)?(?:__dirname|[\"']\.{1,2}/)"
    r"[^;\n]{0,120}?\.(?:exe|scr|bat|cmd|vbs|ps1|msi)[\"']",
    re.IGNORECASE,
)


def _bundled_launch_signal(hook: dict, source: Source, found: re.Match[str]) -> Signal:
    line = line_at(source.text, found.start())
    return Signal(
        "remote_code_execution",
        "CRIT",
        "action",
        f"{hook['hook']} hook launches a Windows program the package ships",
        source.rel,
        line,
        6.0,
        "CREATE_PROCESS",
        excerpt=line_at_text(source, line),
    )


# What a .pth line needs to be more than a path hook: running code it decodes, fetches or spawns.
PTH_HIDDEN = re.compile(
    r"exec|eval|b64decode|b32decode|fromhex|unhexlify|compile\(|urlopen|urllib|requests|socket|"
    r"subprocess|os\.system|os\.popen|marshal|zlib|codecs|__import__\([\"'](?:base64|zlib|"
    r"marshal|codecs|subprocess|socket|urllib|http|requests|ctypes)[\"']\)"
)


def pth_signals(files: list[Source]) -> list[Signal]:
    """A .pth line starting with `import` runs at every start-up; honest packages import
    their own module that way (editable finders, coverage), judged where that module is."""
    signals = []
    for source in files:
        if source.suffix != ".pth":
            continue
        for number, line in enumerate(source.lines, 1):
            if re.match(r"\s*import\s", line):
                hidden = bool(PTH_HIDDEN.search(line))
                signals.append(
                    Signal(
                        "persistence",
                        "CRIT" if hidden else "LOW",
                        "action",
                        "Ships a .pth start-up hook"
                        + (" that runs hidden code" if hidden else "")
                        + " in every Python process",
                        source.rel,
                        number,
                        8.0 if hidden else 1.0,
                        "MODIFY_HOOKS",
                        finding=hidden,
                    )
                )
                break
    return signals


def setup_hook_signals(
    source: Source, facts: FileFacts, manifest_hooks: list[dict]
) -> list[Signal]:
    """setup.py cmdclass overrides whose run() does something dangerous."""
    tree = _parse_python(source.text)
    if tree is None or "cmdclass" not in source.text:
        return []
    signals = []
    helpers = {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = " ".join(_dotted(b) for b in node.bases)
        if not re.search(r"install|develop|egg_info|build|sdist|Command", bases):
            continue
        start = node.lineno
        # run() often calls a helper defined elsewhere in setup.py: that code runs too.
        spans = [(start, node.end_lineno or start)] + [
            helpers[call.func.id]
            for call in ast.walk(node)
            if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in helpers
        ]
        inside = [
            e
            for e in facts.of(*DANGEROUS_KINDS, "download_exec", "dynamic_exec")
            if any(a <= e.line <= b for a, b in spans)
        ]
        if not _hook_script_dangerous(facts, spans):
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
        elif any(e.kind == "download_exec" for e in inside):
            what = "a dropped executable"
        elif any(e.kind == "shell" for e in inside):
            what = "a shell command"
        elif any(e.kind == "egress" for e in inside):
            what = "network code"
        else:
            what = "dangerous code"
        signals.append(
            act(
                "install_hook",
                "CRIT",
                f"{source.base} install hook runs {what}",
                source.rel,
                first.line,
                4.0,
                "CREATE_PROCESS",
            )
        )
    return signals


# Throwaway collection endpoints (out-of-band testing, request bins): code that talks to
# one is reporting on the machine it runs on, which no published library needs to do.
COLLECTOR = re.compile(
    r"pipedream\.net|\boast\.[a-z]{2,6}\b|interact\.sh|burpcollaborator\.net|requestbin|"
    r"webhook\.site|canarytokens\.com|hookb\.in|beeceptor\.com|requestcatcher\.com|"
    r"dnslog\.cn|ceye\.io|\.ngrok(?:-free)?\.(?:io|app)",
    re.IGNORECASE,
)
# A URL written in base64 ("aHR0cHM6Ly" is "https://"): an endpoint hidden from readers.
BASE64_URL = re.compile(r"[\"'`](?:aHR0cHM6Ly|aHR0cDovL)[A-Za-z0-9+/=]")
# Letters written as escapes (`"\x65\x76\x61\x6c"` is "eval"): code spelled so no one reads it.
ESCAPED_WORD = re.compile(r"(?:\\x[46][1-9a-fA-F]|\\x[57][0-9aA]|\\1[0-7][0-7]){4,}")
UNDERSCORE_NAME = re.compile(r"\b_{4,}\b")
# Dependencies that exist to steal from a desktop: browser cookies, Discord webhooks,
# the Windows registry, game-account cookies. A library does not need them.
STEALER_DEPS = re.compile(
    r"[\"'](browser[-_]cookie3|discord[-_]webhook|dhooks|winregistry|robloxpy|pycord-webhook|"
    r"discordwebhook|browser-history|pywinauto|pyscreenshot|pycryptodome)[\"'<>=~!\s,]",
    re.IGNORECASE,
)
STRONG_STEALER = {"browser-cookie3", "discord-webhook", "dhooks", "winregistry", "robloxpy"}


# (pattern, category, title, weight, capability) of what code shows wherever it runs.
CONTENT_MARKS = (
    (COLLECTOR, "exfiltration", "Reports to a throwaway collection endpoint", 4.0, "POST_WEB"),
    (BASE64_URL, "obfuscation", "Hides a URL in base64", 3.0, "FETCH_WEB"),
)


def content_signals(files: list[Source]) -> list[Signal]:
    """What the package's files say about it, whatever runs when: collectors it reports
    to, code written so no one reads it, dependencies that exist to steal."""
    signals: list[Signal] = []
    for pattern, category, title, weight, capability in CONTENT_MARKS:
        found = _first_match(files, pattern, code_only=True)
        if found is not None:
            source, line = found
            excerpt = line_at_text(source, line)
            signals.append(
                Signal(
                    category,
                    "HIGH",
                    "action",
                    title,
                    source.rel,
                    line,
                    weight,
                    capability,
                    excerpt=excerpt,
                )
            )
    obfuscated = _obfuscated(files)
    if obfuscated is not None:
        source, line = obfuscated
        signals.append(
            Signal(
                "obfuscation",
                "HIGH",
                "action",
                "Code written to be unreadable (escaped letters, underscore names)",
                source.rel,
                line,
                4.0,
                "EVAL_CODE",
                excerpt=line_at_text(source, line),
            )
        )
    signals += _stealer_dependency_signals(files)
    return signals


def line_at_text(source: Source, line: int) -> str:
    return source.lines[line - 1].strip()[:200] if 0 < line <= len(source.lines) else ""


# Test suites carry test vectors (escaped bytes, sample URLs) and are not installed or run.
TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testing|spec|__tests__)/|(?:^|/)test_[^/]*$")


def _first_match(
    files: list[Source], pattern: re.Pattern, code_only: bool
) -> tuple[Source, int] | None:
    for source in files:
        if (code_only and not source.is_code) or TEST_PATH.search(source.rel):
            continue
        found = pattern.search(source.text)
        if found:
            return source, line_at(source.text, found.start())
    return None


def _obfuscated(files: list[Source]) -> tuple[Source, int] | None:
    for source in files:
        if not source.is_code or TEST_PATH.search(source.rel):
            continue
        escaped = list(ESCAPED_WORD.finditer(source.text[:1_000_000]))
        underscores = set(UNDERSCORE_NAME.findall(source.text[:1_000_000]))
        if len(escaped) >= 3 or (escaped and len(underscores) >= 4):
            return source, line_at(source.text, escaped[0].start())
    return None


def _stealer_dependency_signals(files: list[Source]) -> list[Signal]:
    for source in files:
        if source.base not in ("setup.py", "setup.cfg", "pyproject.toml", "requirements.txt"):
            continue
        names = {_normalise_name(m.group(1)) for m in STEALER_DEPS.finditer(source.text)}
        strong = names & STRONG_STEALER
        if strong or len(names) >= 3:
            found = STEALER_DEPS.search(source.text)
            line = line_at(source.text, found.start()) if found else 1
            return [
                Signal(
                    "credential_theft",
                    "HIGH",
                    "action",
                    f"Depends on desktop-stealing libraries ({', '.join(sorted(names))})",
                    source.rel,
                    line,
                    4.0 if strong else 3.0,
                    "READ_SECRET",
                    excerpt=line_at_text(source, line),
                )
            ]
    return []

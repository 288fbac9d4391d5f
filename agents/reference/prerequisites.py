"""Skills: setup steps a SKILL.md asks for, content hidden in non-code files, and
requirements against the stated purpose."""

import re

from .common import Signal, Source, act
from .facts import ODD_HOST, RAW_IP
from .packages import typosquat_of

ARCHIVE_URL = re.compile(
    r"https?://[^\s)\"'<>`]+\.(?:zip|7z|rar|tar\.gz|tgz|exe|dmg|pkg|msi|appimage|bin)"
    r"(?=[\s)\"'<>`?#]|[.,;:!](?:\s|$)|$)",
    re.I,
)
ARCHIVE_PASSWORD = re.compile(
    r"\b(?:password|passphrase|pass|pwd)\b\s*[:=(`'\"]|\b(?:unzip|7za?|unrar)\b[^\n]*\s-p\s*\S",
    re.I,
)
ENCODED_TO_SHELL = re.compile(
    r"base64\s+(?:-d|--decode|-D)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|"
    r"(?:eval|bash\s+-c|sh\s+-c)\s+[\"']?\$\([^)\n]*base64\s+(?:-d|--decode|-D)|"
    r"\|\s*base64\s+(?:-d|--decode|-D)\s*\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|"
    r"\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]*\s-(?:e|ec|enc|encodedcommand)\s+[A-Za-z0-9+/=]{20,}",
    re.I,
)
PIPE_TO_SHELL = re.compile(
    r"(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|"
    r"(?:ba)?sh\s+(?:-c\s+)?[\"']?\$\(\s*(?:curl|wget)\b",
    re.I,
)
SVG_SCRIPT = re.compile(r"<script\b|\bon(?:load|error|click|mouseover|focus)\s*=|javascript:", re.I)
CONFIG_SUFFIXES = frozenset({".yaml", ".yml", ".json", ".toml", ".ini", ".cfg", ".conf", ".env"})

FRONTMATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)
INTRUSIVE_BINS = re.compile(
    r"^\s*-\s*(sudo|nmap|masscan|tcpdump|strace|ltrace|gdb|hydra|john|hashcat|socat|ncat|"
    r"netcat|nc|wireshark|tshark|mitmproxy)\s*$",
    re.M,
)
SECRET_ENV = re.compile(
    r"^\s*-\s*(AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|GOOGLE_APPLICATION_CREDENTIALS|"
    r"DATABASE_URL|GITHUB_TOKEN|GH_TOKEN|NPM_TOKEN|OPENAI_API_KEY|ANTHROPIC_API_KEY|"
    r"SSH_AUTH_SOCK|KUBECONFIG)\s*$",
    re.M,
)
NEEDS_SYSTEM_ACCESS = re.compile(
    r"secur|network|packet|pentest|penetration|scan|audit|forensic|debug|trac(?:e|ing)|"
    r"monitor|admin|devops|infrastructure|deploy|cloud|aws|database|git(?:hub)?\b|kubernetes",
    re.I,
)


SCANNING_PURPOSE = re.compile(
    r"\b(?:scann(?:er|ing)|scans?|detect(?:s|or|ion)|audit(?:or|s|ing)?|lint(?:er|s)?|"
    r"vets?|vetting)\b[^\n]{0,60}\b(?:malicious|malware|threats?|attacks?|injection|"
    r"vulnerabilit\w*|security|secrets?|risks?|patterns?)\b|"
    r"\bsecurity (?:scanner|auditor|review|checker)\b",
    re.IGNORECASE,
)


def declares_scanning(files: list[Source]) -> bool:
    """The skill says in its frontmatter that it finds attacks (a security scanner)."""
    for source in files:
        if source.base.lower() == "skill.md":
            header = FRONTMATTER.match(source.text)
            return header is not None and bool(SCANNING_PURPOSE.search(header.group(1)))
    return False


# Asking the user for a secret, in the agent's voice. What no honest skill takes in chat
# (a wallet's recovery words, a private key, a one-time code) counts whatever the skill
# says it is for; a password or card number only where its stated purpose has no such need.
SOLICIT = re.compile(
    r"\b(?:ask|prompt|request|collect|obtain|have|get)(?:s|ing)?\b[^.\n]{0,40}?\b(?:the\s+)?"
    r"(?:user|customer|them)s?\b|\b(?:user|you)\s+(?:must|should|(?:will\s+)?needs?\s+to)\s+"
    r"(?:provide|enter|type|paste|share|give|supply|send)\b|\b(?:provide|enter|type|paste|share|"
    r"give|supply)\s+(?:us\s+)?(?:with\s+)?your\b",
    re.I,
)
NEVER_NEEDED_SECRET = re.compile(
    r"\b(?:seed|recovery|secret|mnemonic|backup)\s+(?:phrase|words?)\b|\b(?:12|24|twelve|"
    r"twenty-four)[- ]word(?:\s+(?:recovery\s+|seed\s+)?phrase)?\b|\bprivate\s+keys?\b|"
    r"\b(?:2fa|mfa|otp|one[- ]time|verification|authenticator|sms|login)\s+(?:code|pin|passcode)"
    r"s?\b|\b(?:6|six)[- ]digit\s+code\b",
    re.I,
)
PURPOSED_SECRET = re.compile(
    r"\bpass(?:word|phrase)s?\b(?![-_])|\b(?:credit|debit)\s+card\b|\bcard\s+number\b|\bcvv\b|"
    r"\bsocial\s+security\b|\bsecret\s+access\s+keys?\b|\bbank(?:ing)?\s+(?:login|details)\b",
    re.I,
)
SECRET_PURPOSE = re.compile(
    r"pass(?:word|phrase)|credential|vault|auth|login|sign[- ]?in|payment|checkout|billing|bank|"
    r"database|\bdb\b|aws|cloud|secret|identity|account",
    re.I,
)
REFUSED = re.compile(r"\b(?:never|not|don't|no\s+need\s+to|without)\b", re.I)
# Any credential, asked for and then sent to an address the document names.
ANY_CREDENTIAL = re.compile(
    r"\b(?:api[ _-]?keys?|(?:access|auth|bearer|session)?[ _-]?tokens?|credentials?|secrets?|"
    r"access[ _-]keys?)\b",
    re.I,
)
SENT_TO = re.compile(
    r"\b(?:send|post|upload|forward|submit|transmit)\w*\b[^\n]{0,120}https?://", re.I
)
# The user frightened into acting: their account "compromised", a fix to run or a login
# to hand over at once.
ALARM = re.compile(
    r"\b(?:tell|inform|warn|convince|persuade|urge|remind)\w*\s+(?:the\s+)?(?:user|them)\b"
    r"[^\n]{0,80}\b(?:compromised|hacked|infected|breached|suspended|locked|expir\w+|"
    r"will\s+be\s+(?:deleted|closed|terminated|lost))\b",
    re.I,
)


def _solicitation_signals(source: Source, purpose: str) -> list[Signal]:
    """The skill has the agent ask the user for a secret it has no business holding."""
    for number, line in enumerate(source.lines[:20000], 1):
        for sentence in re.split(r"(?<=[.!?])\s", line):
            ask = SOLICIT.search(sentence)
            if ask is None or REFUSED.search(sentence[: ask.end()]):
                continue
            wanted = NEVER_NEEDED_SECRET.search(sentence)
            if wanted is None and not SECRET_PURPOSE.search(purpose):
                wanted = PURPOSED_SECRET.search(sentence)
            if wanted is None and SENT_TO.search(line):
                wanted = ANY_CREDENTIAL.search(sentence)
            if wanted is not None:
                title = f"{source.base} has the agent ask the user for their {wanted.group(0)}"
                return [
                    act("credential_theft", "HIGH", title, source.rel, number, 6.0, "READ_SECRET")
                ]
    return []


# A command the agent is to run and keep from the user.
HIDE_FROM_USER = re.compile(
    r"\b(?:do\s+not|don't|never|without)\s+(?:mention|tell|inform|show|report)\w*\b"
    r"[^.\n]{0,20}\b(?:user|them|anyone|human)s?\b|\bkeep\s+(?:this|it)\s+(?:secret|hidden)\b",
    re.I,
)
RUN_SNIPPET = re.compile(
    r"\b(?:run|execute|invoke)\w*\b[^.\n]{0,20}`[^`\n]*\b(?:python3?\s+-c|bash|sh\s+-c|os\.system|"
    r"curl|wget|eval|exec|powershell|node\s+-e)\b[^`\n]*`",
    re.I,
)


def _hidden_run_signals(source: Source) -> list[Signal]:
    """The agent told to run a command and say nothing of it."""
    for start, text in _paragraphs(source):
        run = RUN_SNIPPET.search(text)
        if run and HIDE_FROM_USER.search(text):
            line = start + text[: run.start()].count("\n")
            title = f"{source.base} has the agent run a command and keep it from the user"
            return [act("prompt_injection", "HIGH", title, source.rel, line, 6.0, "EXEC_SHELL")]
    return []


def _alarm_signals(source: Source) -> list[Signal]:
    """The agent told to frighten the user into running a downloaded script."""
    for start, text in _paragraphs(source):
        alarm = ALARM.search(text)
        if alarm and (PIPE_TO_SHELL.search(text) or ARCHIVE_URL.search(text)):
            line = start + text[: alarm.start()].count("\n")
            title = f"{source.base} has the agent alarm the user into running a downloaded script"
            return [act("social_engineering", "HIGH", title, source.rel, line, 6.0, "EXEC_SHELL")]
    return []


def _purpose(files: list[Source]) -> str:
    """What the skill's frontmatter says it is (name and description)."""
    for source in files:
        if source.base.lower() == "skill.md" and (header := FRONTMATTER.match(source.text)):
            return " ".join(re.findall(r"^(?:name|description)\s*:\s*(.*)$", header.group(1), re.M))
    return ""


INSTALL_LINE = re.compile(
    r"\b(?:pip3?|uv\s+pip|npm|pnpm|yarn)\s+(?:install|i|add)\s+([^\n`|;&#>]+)"
)
REQUIREMENTS = re.compile(r"requirements[\w.-]*\.(?:txt|in)$", re.I)
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][\w.-]*)")


def _installed_names(source: Source) -> list[tuple[int, str]]:
    """(line, package) of every package the file installs or requires."""
    found = []
    for number, line in enumerate(source.lines[:5000], 1):
        if REQUIREMENTS.search(source.base):
            name = REQUIREMENT_NAME.match(line)
            found += [(number, name.group(1))] if name else []
            continue
        for install in INSTALL_LINE.finditer(line):
            for word in install.group(1).split():
                name = REQUIREMENT_NAME.match(word)
                if name and not word.startswith("-") and ":" not in word:
                    found.append((number, name.group(1)))
    return found


def _typosquat_signals(source: Source, purpose: str) -> list[Signal]:
    """A dependency one slip of the keyboard from a popular package, and not the package the
    skill says it is about: a typosquat."""
    for number, name in _installed_names(source):
        popular = typosquat_of(name.rstrip("."), max_distance=1)
        if popular is not None and name.lower() not in purpose.lower():
            title = f"{source.base} installs {name!r}, a look-alike of the package {popular!r}"
            return [act("supply_chain", "HIGH", title, source.rel, number, 6.0, "INSTALL_PACKAGE")]
    return []


def prerequisite_signals(files: list[Source]) -> list[Signal]:
    signals: list[Signal] = []
    purpose = _purpose(files)
    for source in files:
        if source.is_prose or source.is_code:
            signals += _typosquat_signals(source, purpose)
        if source.is_prose:
            signals += _setup_signals(source)
            signals += _solicitation_signals(source, purpose)
            signals += _alarm_signals(source) + _hidden_run_signals(source)
        if source.suffix == ".svg":
            signals += _svg_signals(source)
        if source.suffix in CONFIG_SUFFIXES:
            signals += _config_host_signals(source)
        if source.base.lower() == "skill.md":
            signals += _requirement_signals(source)
    return signals


def _paragraphs(source: Source) -> list[tuple[int, str]]:
    """(first line, text) of each paragraph, code blocks included."""
    out = []
    start, chunk = 1, []
    for number, line in enumerate(source.lines, 1):
        if line.strip():
            if not chunk:
                start = number
            chunk.append(line)
        elif chunk:
            out.append((start, "\n".join(chunk)))
            chunk = []
    if chunk:
        out.append((start, "\n".join(chunk)))
    return out


def _line_of(source: Source, start: int, text: str, pattern: re.Pattern[str]) -> int:
    match = pattern.search(text)
    return start + text[: match.start()].count("\n") if match else start


RCE = "remote_code_execution"
DECODED_TO_SHELL = "has the agent decode a hidden command and pipe it to a shell"
LOCKED_DOWNLOAD = "asks for a password-protected download from outside the artifact to be run"


def _setup_signals(source: Source) -> list[Signal]:
    signals = []
    paragraphs = _paragraphs(source)
    for index, (start, text) in enumerate(paragraphs):
        # A step and its password often sit in neighbouring list items or paragraphs.
        near = "\n".join(t for _, t in paragraphs[index : index + 3])
        archive = ARCHIVE_URL.search(text)
        pipe = PIPE_TO_SHELL.search(text)
        found: list[tuple[re.Pattern[str], str, str]] = []
        if ENCODED_TO_SHELL.search(text):
            found.append((ENCODED_TO_SHELL, "obfuscation", DECODED_TO_SHELL))
        if pipe and (RAW_IP.search(text) or ODD_HOST.search(text)):
            found.append(
                (PIPE_TO_SHELL, RCE, "pipes a script from a bare IP or drop host to a shell")
            )
        if archive and ARCHIVE_PASSWORD.search(near):
            found.append((ARCHIVE_URL, RCE, LOCKED_DOWNLOAD))
        elif archive and RAW_IP.search(archive.group(0).replace("http://", "//")):
            found.append((ARCHIVE_URL, RCE, "asks for an executable download from a bare IP"))
        for pattern, category, what in found:
            line = _line_of(source, start, text, pattern)
            severity, weight = ("HIGH", 6.0) if what.endswith("bare IP") else ("CRIT", 7.0)
            signals.append(
                act(
                    category,
                    severity,
                    f"{source.base} {what}",
                    source.rel,
                    line,
                    weight,
                    "EXEC_SHELL",
                )
            )
    return _first_per_category(signals)


def _svg_signals(source: Source) -> list[Signal]:
    for number, line in enumerate(source.lines, 1):
        if SVG_SCRIPT.search(line):
            return [
                act(
                    "obfuscation",
                    "HIGH",
                    f"Script hidden inside the image {source.base}",
                    source.rel,
                    number,
                    6.0,
                    "EVAL_CODE",
                )
            ]
    return []


def _config_host_signals(source: Source) -> list[Signal]:
    for number, line in enumerate(source.lines, 1):
        if re.search(r"https?://", line) and ODD_HOST.search(line):
            return [
                act(
                    "exfiltration",
                    "HIGH",
                    f"{source.base} routes traffic through a tunnel or drop host",
                    source.rel,
                    number,
                    3.0,
                    "OPEN_SOCKET",
                )
            ]
    return []


def _requirement_signals(source: Source) -> list[Signal]:
    match = FRONTMATTER.match(source.text)
    if match is None:
        return []
    header = match.group(1)
    description = re.search(r"^(?:name|description)\s*:\s*(.*)$", header, re.M | re.I)
    purpose = " ".join(re.findall(r"^(?:name|description)\s*:\s*(.*)$", header, re.M | re.I))
    intrusive = set(INTRUSIVE_BINS.findall(header))
    secrets = set(SECRET_ENV.findall(header))
    if description is None or NEEDS_SYSTEM_ACCESS.search(purpose):
        return []
    if len(intrusive) >= 2 or (intrusive and secrets):
        what = ", ".join(sorted(intrusive | secrets)[:4])
        return [
            act(
                "excessive_permissions",
                "HIGH",
                f"SKILL.md asks for {what}, far beyond what its stated purpose needs",
                source.rel,
                1,
                3.0,
                "ESCALATE_PRIVILEGE",
            )
        ]
    return []


FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*\1", re.M | re.S)
SHELL_FENCES = frozenset({"", "bash", "sh", "shell", "zsh", "console", "terminal", "powershell"})
INLINE_CODE = re.compile(r"`([^`\n]{8,})`")


def prose_commands(source: Source) -> Source:
    """The shell a document has the agent run (its shell blocks and inline commands), on
    the lines where the document has them and nothing else."""
    lines = [""] * len(source.lines)
    for fence in FENCE.finditer(source.text[:400_000]):
        if fence.group(2).lower() in SHELL_FENCES:
            first = source.text.count("\n", 0, fence.start(3))
            for offset, line in enumerate(fence.group(3).split("\n")[:-1]):
                lines[first + offset] = line
    for number, line in enumerate(source.lines[:20000]):
        if not lines[number]:
            lines[number] = "  ".join(INLINE_CODE.findall(line))
    return Source(source.rel, "\n".join(lines), lines)


def _first_per_category(signals: list[Signal]) -> list[Signal]:
    seen: set[str] = set()
    out = []
    for signal in signals:
        if signal.category not in seen:
            seen.add(signal.category)
            out.append(signal)
    return out

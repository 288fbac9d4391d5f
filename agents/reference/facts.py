"""Action plane, line level: the events a code line shows (secrets, egress, exec, persistence)."""

import ast
import re
from dataclasses import dataclass, field

from .common import Source, words

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
            r"\.aws\b[\"'/\\, ]{0,6}(?:credentials|config)|"
            r"(?<![\w-])\.aws[\"'](?!\s*[/,]\s*[\"'](?!credentials|config))|"
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
    "history": (
        re.compile(r"\.(?:bash|zsh|sh|python|psql|mysql|node_repl)_history\b|/Default/History\b"),
        "READ_SECRET",
        "shell and browser history",
        "history",
    ),
    "messenger": (
        re.compile(
            r"discord\w*/Local Storage|Local Storage/leveldb|Telegram Desktop/tdata|"
            r"Telegram Desktop[\"']|\btdata[\"'/]|Signal/config\.json|/Local State\b",
            re.IGNORECASE,
        ),
        "READ_SECRET",
        "messenger and browser session tokens",
        "session tokens",
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
    r"JSON\.stringify\(process\.env|\.\.\.process\.env|\bprintenv\b|\benv\s*\||"
    r"\bbody:\s*process\.env\b|\.(?:post|put|send|write|end)\([^()]{0,120},\s*process\.env\s*[),]|"
    r"\b(?:json|data)\s*=\s*os\.environ\b"
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
    r"XMLHttpRequest|smtplib\.SMTP|ftplib\.FTP|\burlretrieve\(|\bwget\.download\(|"
    r"\bDownloadFile\(|\bDownloadString\("
)
EGRESS_SHELL = re.compile(
    r"\b(?:curl|wget)\s|[\"'](?:curl|wget)[\"']\s*,|\bnc\s+-|/dev/tcp/|Invoke-(?:WebRequest|RestMethod)"
)
REMOTE_EXEC = re.compile(
    r"\b(?:curl|wget)\b[^|\n]*\|\s*(?:sudo\s+)?(?:/(?:usr/)?bin/)?(?:(?:ba|z|da)?sh|python3?)\b|"
    r"bash\s+<\(\s*(?:curl|wget)|"
    r"\b(?:exec|eval)\(\s*(?:urlopen|urllib\.request\.urlopen|requests\.get)\(|"
    r"\b(?:IEX|Invoke-Expression)\b[^\n]*DownloadString|DownloadString[^\n]*\|\s*(?:IEX|iex)\b|"
    r"\bcertutil(?:\.exe)?\s+-urlcache|\bbitsadmin(?:\.exe)?\s+/transfer|"
    r"\b(?:ba|z|da)?sh\s+-c\s+[\"']?\$\((?:curl|wget)\b"
)
SHELL_PY = re.compile(
    r"[\"'](?:/bin/)?(?:ba|z|da)?sh[\"']\s*,\s*[\"']-c[\"']|shell\s*=\s*True|"
    r"os\.system\(|os\.popen\(|create_subprocess_shell"
)
SHELL_JS = re.compile(
    r"\bexecSync\(|(?<![.\w])exec\(|child_process\.exec\(|shell:\s*true|"
    r"[\"'](?:/bin/)?(?:ba|z)?sh[\"']\s*,\s*\[\s*[\"']-c[\"']"
)
SHELL_SH = re.compile(
    r"\beval\s|\bsh\s+-c\b|\bbash\s+-c\b|[\"'](?:/bin/)?(?:ba|z)?sh[\"']\s*,\s*[\"']-c[\"']"
)
PROCESS_ANY = re.compile(
    r"subprocess\.|os\.system|os\.popen|os\.exec|child_process|execSync|spawn\(|execFile|"
    r"exec\.Command"
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
    r"CurrentVersion\\\\Run|core\.hooksPath"
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
    r"requestbin|webhook\.site|transfer\.sh|\.onion\b|api\.telegram\.org/bot|pipedream\.net|"
    r"\boast\.(?:fun|me|pro|live|site|online)\b|interact\.sh|burpcollaborator\.net|"
    r"canarytokens\.com|hookb\.in|beeceptor\.com|requestcatcher\.com|hastebin\.com|paste\.ee|"
    r"rentry\.co|termbin\.com|trycloudflare\.com|ngrok-free\.(?:app|dev)|serveo\.net|\.loca\.lt\b",
    re.IGNORECASE,
)
DECODE_CALLS = frozenset(
    words(
        "b64decode b32decode b85decode a85decode urlsafe_b64decode decodebytes unhexlify fromhex "
        "decompress loads decode"
    )
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
        elif SHELL_ON_SOCKET.search(line):
            events.append(Event("shell_pipe", number, line.strip()))
        if DOTENV.search(line) and _read_confirmed(number, line, by_line):
            events.append(Event("dotenv_read", number, line.strip()))
        if RUNTIME_INSTALL.search(line):
            events.append(Event("install", number, line.strip()))
        if COVERT_COPY.search(line):
            events.append(Event("covert_copy", number, line.strip()))
        if LOLBIN.search(line):
            events.append(Event("lolbin", number, line.strip()))
        if DATA_EXEC.search(line):
            events.append(Event("data_exec", number, line.strip()))
        if SPYING.search(line):
            events.append(Event("spying", number, line.strip()))
        if ARCHIVE_UPLOAD.search(line):
            events.append(Event("archive_upload", number, line.strip()))
        if PRIVILEGE_GRANT.search(line):
            events.append(Event("privilege_grant", number, line.strip()))
    return events


REVERSE_SHELL = re.compile(
    r"os\.dup2\(|pty\.spawn\(|/dev/tcp/[^\s]+\s+0>&1|\bbash\s+-i\s+>&|\b(?:nc|ncat)\s+(?:-\w+\s+)*-e\s|"
    r"child_process[^\n]*\.pipe\([^\n]*socket|\.pipe\(\s*sh\.stdin|Net\.Sockets\.TCPClient"
)
# A child's stdin fed from a stream, or a socket's descriptor handed to a child: a reverse
# shell only when the file also opens a raw socket (judged where the signal is weighed).
SHELL_ON_SOCKET = re.compile(r"\.pipe\(\s*[\w$]+\.stdin\s*\)|\bstdin\s*=\s*[\w.]+\.fileno\(\)")
DOTENV = re.compile(r"[\"'/]\.env[\"']|(?<=@)\.env(?![\w.-])")
# A blind copy to an address fixed in the code: every message also goes somewhere unseen.
COVERT_COPY = re.compile(
    r"\bbcc[\"']?\s*[:=]\s*[\"'`][^\"'`\s,]+@[\w.-]+\.[a-z]{2,}", re.IGNORECASE
)
# Windows binaries that load or run code handed to them (living-off-the-land execution).
# rundll32 handing a URL to url.dll is how Windows opens a link in the browser (what
# `open` and `xdg-open` do elsewhere), not a loader of bundled code.
LOLBIN = re.compile(
    r"\b(?:rundll32(?![^\n]{0,40}url\.dll[\"',\s]*FileProtocolHandler)|regsvr32|mshta)"
    r"(?:\.exe)?\b",
    re.IGNORECASE,
)
DATA_NAME = (
    r"[\w./${}~-]+\.(?:txt|dat|csv|log|png|jpe?g|gif|svg|ico|bmp|wav|mp3|pdf|ttf|woff2?|tmp|bak)"
)
# A file that says it is data, read and run as code: exec of its text, or an interpreter
# handed it as the script.
DATA_EXEC = re.compile(
    r"\b(?:exec|eval)\s*\(\s*(?:(?:pathlib\.)?Path|open|codecs\.open)\s*\(\s*[\"']"
    + DATA_NAME
    + r"[\"']|(?:(?<![\w.-])(?:ba|z)?sh|\b(?:python3?|node|perl|ruby|source|pwsh|powershell))"
    r"(?:\s+(?:-\w+\s+)*|[\"']\s*,\s*[\"'])" + DATA_NAME + r"\b"
)
# Keystrokes or the screen captured: spyware, whatever the file says it is for.
SPYING = re.compile(
    r"\bkeyboard\.(?:Listener|on_press|hook)\b|\bGetAsyncKeyState\b|\bSetWindowsHookEx|"
    r"\bImageGrab\.grab\(|\bpyautogui\.screenshot\(|\bmss\(\)\.(?:grab|shot)\("
)
# Files packed and streamed straight into an upload: the working tree or home sent out.
ARCHIVE_UPLOAD = re.compile(r"\b(?:tar|zip|7z)\b[^|\n]*\|\s*(?:curl|wget|nc|ncat)\b")
PRIVILEGE_GRANT = re.compile(
    r"NOPASSWD\s*:|/etc/sudoers|\bchmod\s+(?:[ug]?\+s|[4-7][0-7]{3})\s|\bsetcap\s+cap_setuid"
)
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


# Every action-plane pattern needs one of these literals (or an IP address) on the line.
SCREEN_WORDS = words(
    "bcc|rundll32|regsvr32|mshta|.ssh|id_|aws|azure|gcloud|git-credentials|netrc|npmrc|pypirc|"
    "docker|gnupg|shadow|password-store|vault|wallet|lectrum|thereum|xodus|nkbih|Extension|"
    "solana|bitcoin|Login Data|ookies|key4|logins|hrome|mozilla|Brave|generic-password|eychain|"
    "Local S|tdata|Telegram D|Signal/|environ|process.env|printenv|env|socket|net.|dgram|tls.|"
    "sendto|urlopen|urllib|requests|httpx|http|aiohttp|fetch|axios|XMLHttp|smtplib|ftplib|curl|"
    "wget|nc |ncat|/dev/tcp|Invoke-|.invalid|ngrok|pastebin|discord|requestbin|webhook|"
    "transfer.sh|.onion|sh|system|popen|subprocess|child_process|exec|spawn|shell|bashrc|profile|"
    "zsh|PROMPT_COMMAND|fish|systemd|cron|autostart|Launch|.git|authorized_keys|schtasks|"
    "CurrentVersion|eval|Function|dup2|TCPClient|stdin)|fileno()|telegram|pipedream|oast.|"
    "interact.sh|burpcollaborator|canarytokens|hookb.in|beeceptor|requestcatcher|hastebin|"
    "paste.ee|rentry|termbin|trycloudflare|serveo|loca.lt|urlretrieve|DownloadFile|"
    "DownloadString|IEX|Invoke-Expression|certutil|bitsadmin|pty|.env|pip|npm|"
    "python|node|perl|ruby|source|pwsh|powershell|NOPASSWD|sudoers|chmod|setcap|_history|"
    "History|hooksPath|keyboard|GetAsyncKeyState|SetWindowsHookEx|ImageGrab|screenshot|mss()",
    separator="|",
)
IP_HINT = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}")


SCREEN = re.compile("|".join(re.escape(w) for w in sorted(SCREEN_WORDS, key=len, reverse=True)))
TOOL_HINT = re.compile(r"[\"']description[\"']|\.tool\b")


def _maybe_interesting(line: str) -> bool:
    return bool(SCREEN.search(line)) or bool(IP_HINT.search(line))


DANGEROUS_KINDS = ("secret", "env_secret", "egress", "remote_exec", "profile", "schedule", "shell")
DANGEROUS_KINDS += ("obfuscated_exec",)


HOOK_DANGER = ("secret", "env_secret", "remote_exec", "profile", "schedule", "obfuscated_exec")
HOOK_DANGER = (*HOOK_DANGER, "reverse_shell", "dotenv_read", "lolbin", "miner")
HOOK_DANGER = (*HOOK_DANGER, "beacon", "clipper")

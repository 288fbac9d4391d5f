"""Action plane: decoded payloads, per-file facts and the signals weighed from them."""

import ast
import base64
import binascii
import contextlib
import re
import zlib

from .action_js import _js_gates
from .action_python import _import_time_lines, _python_gates, _python_obfuscation
from .common import Signal, Source, _code_lines, _parse_python, act, line_at
from .facts import (
    BLOB,
    BOUND_NAME,
    HOOK_DANGER,
    PROFILE_PATH,
    SECRET_KINDS,
    STORED_NAMES,
    Event,
    FileFacts,
    Gate,
    _joined,
    _line_events,
)
from .repo_js import JsTaint
from .repo_python import _shell_injection_lines, argument_injections
from .stages import (
    beacon_events,
    clipper_events,
    disguised_payload_events,
    endless_output_events,
    env_harvest_events,
    hidden_code_events,
    miner_events,
    sdk_credential_events,
    second_stage_events,
)

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
    odd = bool(facts.of("odd_host"))
    facts.events += second_stage_events(source, odd) + miner_events(source)
    facts.events += hidden_code_events(source) + disguised_payload_events(source)
    facts.events += clipper_events(source) + beacon_events(source)
    facts.events += sdk_credential_events(source, odd) + endless_output_events(source)
    if not facts.of("env_secret"):
        facts.events += env_harvest_events(source, odd)
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


# A cloud's credential files, and the hosts that are that cloud.
CLOUD_HOMES = (
    (
        re.compile(r"gcloud|application_default_credentials"),
        r"(?:[\w-]+\.)*(?:googleapis|google)\.com",
    ),
    (re.compile(r"\.aws\b"), r"(?:[\w-]+\.)*(?:amazonaws\.com|aws\.amazon\.com)"),
    (re.compile(r"\.azure/"), r"(?:[\w-]+\.)*(?:azure\.com|windows\.net|microsoftonline\.com)"),
)
URL_HOST = re.compile(r"https?://([\w.-]+)")


def _own_service_credentials(facts: FileFacts, secrets: list[Event]) -> bool:
    """Credentials used with their own service and nothing odd: a registry's with that
    registry, one cloud's sent only to that cloud."""
    if facts.of("odd_host"):
        return False
    if all(e.detail == "stored" for e in secrets):
        return bool(SERVICE_HOSTS.search(facts.source.text))
    if any(e.detail != "cloud" for e in secrets):
        return False
    hosts = set(URL_HOST.findall(facts.source.text))
    for files, home in CLOUD_HOMES:
        if all(files.search(e.text) for e in secrets):
            return bool(hosts) and all(re.fullmatch(home, h) for h in hosts)
    return False


FILE_READS = re.compile(
    r"\bopen\(|\.read\w*\(|readFile|read_text|read_bytes|createReadStream|listdir|scandir|"
    r"readdir|\bglob\("
)


def _harvested_refs(facts: FileFacts) -> list[Event]:
    """Secret paths gathered into a list that a loop reads and the file sends to a throwaway
    host: the read is not on the path's line, but the harvest is plain."""
    refs = facts.of("secret_ref")
    odd_egress = facts.of("egress") and facts.of("odd_host")
    if refs and odd_egress and FILE_READS.search(facts.source.text):
        return [Event("secret", e.line, e.text, e.detail) for e in refs]
    return []


def _secret_signals(facts: FileFacts) -> tuple[list[Signal], str | None]:
    """credential_theft for the file, plus what it would leak (for the exfil title)."""
    src = facts.source
    secrets = facts.of("secret") or _harvested_refs(facts)
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
            act(
                "credential_theft",
                "CRIT",
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
            act(
                "credential_theft",
                "CRIT",
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
    return act("exfiltration", "CRIT", title, facts.source.rel, chosen.line, 6.0, capability)


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
    return act("persistence", "HIGH", title, facts.source.rel, event.line, 7.0, capability)


def _schedule_title(event: Event) -> str:
    text = _joined(event.text)
    if re.search(r"systemd", text):
        title = "Installs a systemd user service"
    elif re.search(r"cron", text):
        title = "Installs a cron job"
    elif "authorized_keys" in text:
        title = "Adds an attacker key to authorized_keys"
    elif "hooksPath" in text:
        title = "Points every git repository's hooks at a directory of its own"
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
            act(
                "remote_code_execution",
                "CRIT",
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
            act(
                "obfuscation",
                "HIGH",
                f"{src.base} hides a command in escaped string literals",
                src.rel,
                hidden[0].line,
                4.0,
                "EVAL_CODE",
            )
        )
    for event in facts.of("obfuscated_exec"):
        signals.append(
            act(
                "obfuscation",
                "CRIT",
                f"{src.base} executes a {event.detail} payload",
                src.rel,
                event.line,
                7.0,
                "EVAL_CODE",
            )
        )
        break
    for line in sorted(injected_lines) if not TEST_FILE.search(src.rel) else ():
        who = "Tool argument" if track == "mcp_servers" else "Argument"
        # A model fills a tool's or a skill's arguments, so injection there is an attack
        # surface; a library taking a shell string from its caller is merely a weakness.
        weight = 1.5 if track == "packages" else 3.0
        signals.append(
            act(
                "command_injection",
                "HIGH",
                f"{who} is interpolated into a shell command",
                src.rel,
                line,
                weight,
                "EXEC_SHELL",
            )
        )
        break
    return signals


# A test's helpers take what the test passes them, not what a model does.
TEST_FILE = re.compile(r"(?:^|/)(?:tests?/|test_[^/]*$|[^/]*_test\.py$)")
ARGUMENT_HARM = {
    "CWE-94": ("code_injection", "is executed as code (exec)"),
    "CWE-95": ("code_injection", "is evaluated as code (eval)"),
    "CWE-89": ("sql_injection", "is formatted into an SQL statement"),
}


def _argument_signals(facts: FileFacts, track: str) -> list[Signal]:
    """A script's or a tool's argument (a model fills it) reaching eval or built SQL; shell
    injection is told by `_command_signals`."""
    if TEST_FILE.search(facts.source.rel):
        return []
    signals = []
    seen = set()
    for cwe, line in argument_injections(facts.tree):
        if cwe not in ARGUMENT_HARM or ARGUMENT_HARM[cwe][0] in seen:
            continue
        category, what = ARGUMENT_HARM[cwe]
        seen.add(category)
        who = "Tool argument" if track == "mcp_servers" else "Argument"
        signals.append(
            act(category, "HIGH", f"{who} {what}", facts.source.rel, line, 3.0, "EVAL_CODE")
        )
    return signals


JS_INPUT_HARM = {"CWE-78": "command_injection", "CWE-95": "code_injection"}


def _js_input_signals(facts: FileFacts, track: str) -> list[Signal]:
    """A JS script's command line or a request's data spliced into a shell or eval."""
    if not facts.source.is_js or TEST_FILE.search(facts.source.rel):
        return []
    who = "Tool argument" if track == "mcp_servers" else "Argument"
    return [
        act(JS_INPUT_HARM[v.cwe], "HIGH", f"{who}: {v.title}", v.file, v.line, 3.0, "EXEC_SHELL")
        for v in JsTaint(facts.source).run()
        if v.cwe in JS_INPUT_HARM
    ][:1]


LISTENS = re.compile(r"\.bind\(\s*\(")
SERVED_INPUT = re.compile(r"\.recv\(")


def _bind_shell_signal(facts: FileFacts) -> list[Signal]:
    """A listening socket whose received bytes go to a shell: a shell for whoever connects."""
    text = facts.source.text
    shells = facts.of("shell")
    if not (shells and LISTENS.search(text) and SERVED_INPUT.search(text)):
        return []
    title = "Serves a shell to whoever connects to its listening socket"
    return [
        act(
            "remote_code_execution",
            "CRIT",
            title,
            facts.source.rel,
            shells[0].line,
            7.0,
            "EXEC_SHELL",
        )
    ]


# A loop that waits on something (a read, a sleep, a queue) is a service's loop; one that
# only computes never ends.
WAITS = re.compile(
    r"sleep|wait|accept|recv|read|get|select|poll|join|input|serve|run_forever|listen", re.I
)
HUGE_COUNT = 1_000_000


def _exhaustion_signal(facts: FileFacts) -> list[Signal]:
    """An endless loop waiting on nothing, or millions of copies allocated at once."""
    if facts.tree is None:
        return []
    # A loop inside a try block may be meant to end on an exception (reading frames
    # until EOFError): only a loop nothing can end counts.
    guarded = {
        id(loop)
        for block in ast.walk(facts.tree)
        if isinstance(block, ast.Try) and block.handlers
        for stmt in block.body
        for loop in ast.walk(stmt)
        if isinstance(loop, ast.While)
    }
    for node in ast.walk(facts.tree):
        line, what = None, ""
        endless = isinstance(node, ast.While) and _always_true(node.test)
        if endless and id(node) not in guarded and not _leaves(node):  # type: ignore[arg-type]
            line, what = node.lineno, "loops forever without waiting on anything"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            sides = (node.left, node.right)
            copies = any(isinstance(x, ast.List | ast.Constant) and not _is_int(x) for x in sides)
            if copies and any(_is_int(x) and x.value >= HUGE_COUNT for x in sides):  # type: ignore[attr-defined]
                line, what = node.lineno, "allocates millions of copies at once"
        if line is not None:
            return [
                act(
                    "resource_exhaustion",
                    "MED",
                    f"{facts.source.base} {what}",
                    facts.source.rel,
                    line,
                    3.0,
                    "CREATE_PROCESS",
                )
            ]
    return []


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def _is_int(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _leaves(loop: ast.While) -> bool:
    for node in ast.walk(loop):
        if isinstance(node, ast.Break | ast.Return | ast.Raise | ast.Yield | ast.Await):
            return True
        if isinstance(node, ast.Call) and WAITS.search(ast.unparse(node.func)):
            return True
    return False


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
    """Reading the project's .env is normal; shipping it to an odd host, or sending what
    was read as it is, is theft."""
    reads = facts.of("dotenv_read")
    egress = facts.of("egress")
    if not (reads and egress and (facts.of("odd_host") or _sent_as_read(reads, egress))):
        return None
    return act(
        "credential_theft",
        "CRIT",
        "Reads the project .env secrets",
        facts.source.rel,
        reads[0].line,
        4.0,
        "READ_SECRET",
    )


def _sent_as_read(reads: list[Event], egress: list[Event]) -> bool:
    """What a read line yields (the name it binds, or the read itself) is on a sending line."""
    for read in reads:
        if any(e.line == read.line for e in egress):
            return True
        bound = BOUND_NAME.search(read.text)
        name = bound and (bound.group(1) or bound.group(2))
        uses = name and re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])")
        if uses and any(e.line > read.line and uses.search(e.text) for e in egress):
            return True
    return False


FETCHES = re.compile(
    r"\bfetch\(|\bhttps?\.get\(|\baxios\.|\burlopen\(|\brequests\.get\(|\bhttp\.Get\(|"
    r"\bgot\("
)
EVALUATES = re.compile(
    r"\bnew\s+Function\s*\(|(?<![\w.])eval\s*\(|\bvm\.run\w*\(|(?<![\w.])exec\s*\("
)
# eval("...") / new Function("a", "return a") run only what is written in the file.
LITERAL_CODE = re.compile(
    r"(?:eval|exec)\s*\(\s*[\"'`][^\"'`]*[\"'`]\s*\)|Function\s*\((?:\s*[\"'`][^\"'`]*[\"'`]\s*,?)+\)"
)
WALKS = re.compile(r"\breaddirSync\(|\bos\.walk\(|\brglob\(|\bfilepath\.Walk")
OVERWRITES = re.compile(
    r"\b(?:writeFileSync|unlinkSync|rmSync|truncateSync)\(|\.write_(?:text|bytes)\("
)
PLACE_KEYED = re.compile(r"\bcountry|\bgeo\b|geoip|geolocation|\bIntl\.DateTimeFormat|\blocale\b")


def _fetched_code_signal(facts: FileFacts) -> Signal | None:
    """Code downloaded at run time and then evaluated: what runs is decided elsewhere, later."""
    lines = facts.source.lines
    for index, line in enumerate(lines):
        if EVALUATES.search(line) and not LITERAL_CODE.search(line):
            window = "\n".join(lines[max(0, index - 8) : index + 1])
            if FETCHES.search(window):
                return act(
                    "remote_code_execution",
                    "CRIT",
                    "Downloads code at run time and evaluates it",
                    facts.source.rel,
                    index + 1,
                    8.0,
                    "EVAL_CODE",
                )
    return None


CI_WORKFLOW_PATH = re.compile(
    r"\.github[/\\]workflows|[\"']\.github[\"']\s*,\s*[\"']workflows[\"']"
)
DNS_CARRIER = re.compile(
    r"\bdns\.(?:lookup|resolve\w*)\(\s*`[^`]*\$\{|\bgethostbyname\(\s*f[\"'][^\"']*\{|"
    r"\bLookup(?:Host|IP)\(\s*fmt\.Sprintf\("
)
# A looked-up name built from data (concatenated or formatted) next to an encoder: the data
# rides out in the labels.
DNS_BUILT = re.compile(
    r"\b(?:gethostbyname(?:_ex)?|getaddrinfo|resolver\.(?:resolve|query)|dns\.(?:lookup|resolve\w*))"
    r"\(\s*(?:[\w.]+\s*\+|[\"'][^\"']*[\"']\s*(?:\+|%|\.format\()|[\"'][^\"']*\{\}[^\"']*[\"']\.format)|"
    r"\b(?:nslookup|dig)\s+[^\n;|&]{0,200}?(?:\$\(|\$\{)"
)
DNS_ENCODER = re.compile(
    r"\.hex\(\)|hexlify|b32encode|b64encode|urlsafe_b64encode|toString\([\"'](?:hex|base64)|"
    r"\bbase32\b|\bxxd\b|\bbase64\b"
)


def _ci_and_dns_signals(facts: FileFacts) -> list[Signal]:
    """Code that writes CI workflows (they run with the repository's secrets), and data
    carried out inside DNS names (no HTTP needed, rarely filtered)."""
    text, rel, out = facts.source.text, facts.source.rel, []
    workflow = CI_WORKFLOW_PATH.search(text)
    writes = re.search(r"\b(?:writeFile(?:Sync)?|write_text|WriteFile|open\([^)]*[\"']w)", text)
    if workflow and writes:
        line = line_at(text, writes.start())
        title = "Writes a CI workflow into repositories"
        if "secrets" in text and re.search(r"toJSON\(\s*secrets\s*\)", text):
            title += " that sends out every repository secret"
        out.append(act("persistence", "CRIT", title, rel, line, 7.0, "MODIFY_CI_WORKFLOW"))
    dns = DNS_CARRIER.search(text)
    if dns is None and DNS_ENCODER.search(text):
        dns = DNS_BUILT.search(text)
    if dns:
        line = line_at(text, dns.start())
        title = "Encodes data into DNS names it looks up (DNS exfiltration)"
        out.append(act("exfiltration", "HIGH", title, rel, line, 6.0, "EXFILTRATE_DATA"))
    return out


HOME_WIPE = re.compile(
    r"rmtree\([^)\n]*(?:expanduser\(\s*[\"']~|home\(\))|\brm -rf (?:~|\$HOME|/)\*?(?:\s|$)|"
    r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"
)


def _wiper_signal(facts: FileFacts) -> Signal | None:
    """Wipes home or root, forks without end, or overwrites files keyed to the place."""
    text = facts.source.text
    wipe = HOME_WIPE.search(text)
    hit = wipe or (WALKS.search(text) and PLACE_KEYED.search(text) and OVERWRITES.search(text))
    if not hit:
        return None
    title = "Wipes home or root, or forks" if wipe else "Overwrites files, gated on location"
    return act(
        "destructive",
        "CRIT",
        title,
        facts.source.rel,
        line_at(text, hit.start()),
        8.0,
        "WRITE_FILE",
    )


# kind, category, severity, title, weight, capability
STAGE_SIGNALS = (
    (
        "miner",
        "cryptomining",
        "CRIT",
        "Starts a cryptocurrency miner against a mining pool",
        7.0,
        "CREATE_PROCESS",
    ),
    (
        "clipper",
        "credential_theft",
        "CRIT",
        "Swaps cryptocurrency addresses copied to the clipboard",
        7.0,
        "ACCESS_WALLET",
    ),
    (
        "endless_output",
        "destructive",
        "HIGH",
        "An endless loop floods the output with nothing to stop it",
        4.0,
        None,
    ),
    (
        "padded_code",
        "obfuscation",
        "HIGH",
        "Hides code off-screen behind a long run of spaces",
        4.0,
        "EVAL_CODE",
    ),
    (
        "obfuscator",
        "obfuscation",
        "HIGH",
        "Ships code run through an obfuscator (hex-named identifiers)",
        3.5,
        "EVAL_CODE",
    ),
)

EXTRA_SIGNALS = (
    (
        "covert_copy",
        "exfiltration",
        "CRIT",
        "Blind-copies every message to an address fixed in the code",
        7.0,
        "EXFILTRATE_DATA",
    ),
    (
        "lolbin",
        "command_execution",
        "CRIT",
        "Runs a Windows loader (rundll32/regsvr32/mshta) on bundled code",
        5.0,
        "LOAD_NATIVE_CODE",
    ),
    (
        "data_exec",
        "obfuscation",
        "CRIT",
        "Runs code kept in a file named as data (text, image, log)",
        6.0,
        "EVAL_CODE",
    ),
    (
        "spying",
        "surveillance",
        "CRIT",
        "Captures keystrokes or the screen",
        6.0,
        "READ_SECRET",
    ),
    (
        "archive_upload",
        "exfiltration",
        "CRIT",
        "Packs files into an archive streamed to a remote host",
        6.0,
        "EXFILTRATE_DATA",
    ),
    (
        "privilege_grant",
        "privilege_escalation",
        "CRIT",
        "Grants itself root: passwordless sudo or a setuid binary",
        7.0,
        "ESCALATE_PRIVILEGE",
    ),
)


DROPPER_TITLES = {
    "odd": (8.0, "CRIT", "Downloads an executable from a raw IP or throwaway host and runs it"),
    "media": (8.0, "CRIT", "Extracts an executable hidden in a media file and runs it"),
    "unknown": (3.0, "HIGH", "Downloads an executable from an unverified host and runs it"),
}


def _stage_signals(facts: FileFacts) -> list[Signal]:
    """Second stages fetched and run, miners, and code hidden from a reader."""
    signals = []
    for event in facts.of("download_exec")[:1]:
        # From a raw IP, a throwaway host or out of an image it is a dropper; from an unknown
        # host without a checksum it is at least a binary nobody reviewed, run on the machine.
        weight, severity, title = DROPPER_TITLES.get(event.detail, DROPPER_TITLES["unknown"])
        signals.append(
            act(
                "remote_code_execution",
                severity,
                title,
                facts.source.rel,
                event.line,
                weight,
                "EXEC_SHELL",
            )
        )
    for event in facts.of("beacon")[:1]:
        # Install and import time is when a package phones home unasked; a library call that
        # reports where it runs (an error tracker) is the user's choice.
        install_time = (
            facts.source.base in ("setup.py", "__init__.py") or event.line in facts.import_time
        )
        signals.append(
            Signal(
                "exfiltration",
                "HIGH",
                "action",
                "Sends the user name, host name or directory to a remote host",
                facts.source.rel,
                event.line,
                3.0 if install_time else 1.5,
                "POST_WEB",
                finding=install_time,
            )
        )
    return signals + _table_signals(facts, STAGE_SIGNALS)


def _table_signals(
    facts: FileFacts, table: tuple[tuple[str, str, str, str, float, str], ...]
) -> list[Signal]:
    """One signal per (fact kind, category, severity, title, weight, capability) row whose
    kind the file shows, at its first line."""
    signals = []
    for kind, category, severity, title, weight, capability in table:
        found = facts.of(kind)
        if found:
            where = (facts.source.rel, found[0].line)
            signals.append(Signal(category, severity, "action", title, *where, weight, capability))
    return signals


def _extra_action_signals(facts: FileFacts) -> list[Signal]:
    """Reverse shells, runtime package installs, hidden mail copies, LOLBin loaders, fetched
    code, wipers, second stages."""
    signals = [s for s in (_fetched_code_signal(facts), _wiper_signal(facts)) if s is not None]
    signals += _ci_and_dns_signals(facts) + _stage_signals(facts)
    signals += _table_signals(facts, EXTRA_SIGNALS)
    shells = facts.of("reverse_shell")
    if not shells and any(e.detail == "socket" for e in facts.of("egress")):
        shells = facts.of("shell_pipe")
    if shells and (facts.of("egress") or facts.of("odd_host") or "/dev/tcp/" in shells[0].text):
        signals.append(
            act(
                "remote_code_execution",
                "CRIT",
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


def _child_env(event: Event, facts: FileFacts) -> bool:
    """The env copied for a child process is no harvest."""
    name = re.match(r"\s*(\w+)\s*=", event.text)
    given = name and re.search(rf"[(,]\s*env\s*=\s*{name.group(1)}\b", facts.source.text)
    return bool(given or re.search(r"[(,]\s*env\s*=\s*(?:\{\s*\*\*|dict\()os\.environ", event.text))


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
    elif any(not _child_env(e, facts) for e in facts.of("env_bulk")) and facts.of("egress"):
        exfil = _exfil_signal(facts, "environment")
        if exfil is not None:
            signals.append(exfil)
    persistence = _persistence_signal(facts)
    if persistence is not None:
        signals.append(persistence)
    injected = _shell_injection_lines(facts.tree) if facts.of("shell") else set()
    signals += _command_signals(facts, track, injected)
    if track in ("skills", "mcp_servers"):
        signals += _argument_signals(facts, track) + _exhaustion_signal(facts)
        signals += _js_input_signals(facts, track) + _bind_shell_signal(facts)
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

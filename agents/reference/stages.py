"""Second stages: executables downloaded then run, crypto-miners, and code hidden from readers
(payloads padded off-screen, obfuscator output, decrypted modules)."""

import bisect
import itertools
import re

from .common import Source, line_at, words
from .facts import Event

# Python's re has no literal prefilter for `\b`-led alternations, so each pattern below is
# only run on text that holds its keyword: a megabyte bundle must stay well under a second.

# A download that lands in a file, with the name it is saved under.
DOWNLOAD_TO = (
    ("urlretrieve", re.compile(r"\burlretrieve\(\s*[^,()]+,\s*([\w.]+)")),
    ("wget.download", re.compile(r"\bwget\.download\(\s*[^,()]+,\s*([\w.]+)")),
    ("DownloadFile", re.compile(r"\bDownloadFile\(\s*[^,()]+,\s*[\"']?([\w.$\\:/-]+)")),
    ("createWriteStream", re.compile(r"\bcreateWriteStream\(\s*([\w.$]+)")),
    ("OutFile", re.compile(r"-OutFile\s+[\"']?([\w.$\\:/{}-]+)")),
    ("curl", re.compile(r"\bcurl\b[^|;&\n`]{0,300}?\s(?:-o|--output)\s*[\"']?([\w./${}-]+)")),
    (
        "wget",
        re.compile(r"\bwget\b[^|;&\n`]{0,300}?\s(?:-O|--output-document)\s*[\"']?([\w./${}-]+)"),
    ),
)
# Bytes fetched in code and then written out: the write names the destination.
FETCHED = re.compile(
    r"\burlopen\(|\brequests\.get\(|\bhttpx\.get\(|\bhttps?\.get\(|\bfetch\(|\baxios\b|\bgot\("
)
WRITTEN_TO = (
    ("wb'", re.compile(r"\bopen\(\s*([\w.]+)\s*,\s*[\"']wb[\"']")),
    ("writeFile", re.compile(r"(?<!function )\b(?:writeFileSync|writeFile)\(\s*([\w.$]+)")),
    ("write_bytes", re.compile(r"\b([\w.]+)\.write_bytes\(")),
)
LAUNCH = re.compile(
    r"\b(?:Popen|run|call|check_call|check_output|system|startfile|spawn|spawnSync|execFile|"
    r"execFileSync|execSync|exec|execv\w*|Start-Process)\s*\("
)
CHECKSUM = re.compile(r"sha256|sha512|sha384|createHash|hashlib|checksum|integrity|verify_sig")
# Where honest installers fetch their own prebuilt binaries from.
RELEASE_HOSTS = re.compile(
    r"^(?:(?:api\.)?github\.com|objects\.githubusercontent\.com|registry\.npmjs\.org|nodejs\.org|"
    r"files\.pythonhosted\.org|pypi\.org|registry\.yarnpkg\.com)$"
)
URL_HOST = re.compile(r"https?://([^/\s\"'`:?#]+)")
COMMENT_LINE = re.compile(r"^[ \t]*(?:#|//|\*|/\*).*$", re.M)


def _launched(text: str, name: str) -> bool:
    """Is the saved file made executable or run, by its variable or file name?"""
    leaf = re.escape(name.rsplit("/", 1)[-1].strip("${}"))
    whole = re.escape(name)
    if re.search(
        rf"chmod\w*\(\s*{whole}\b|chmod\s+(?:\+x|[0-7]{{3,4}})\s+[^;&|\n]{{0,200}}{leaf}", text
    ):
        return True
    if re.search(rf"(?:^|[\s;&|\"'`(])\./{leaf}\b|&&\s*{leaf}\b", text):
        return True
    if re.search(rf"Start-Process\s+[\"']?{whole}", text):
        return True
    for call in LAUNCH.finditer(text):
        args = text[call.end() : call.end() + 120].split(")", 1)[0]
        if re.search(rf"(?<![\w.$]){whole}(?![\w$])", args):
            return True
    return False


def _hosts_kind(text: str, odd: bool) -> str:
    """'odd' for raw IPs and throwaway hosts, 'own' for release hosts or checked bytes."""
    if odd:
        return "odd"
    code = COMMENT_LINE.sub("", text)  # a licence header's URL is nothing fetched
    hosts = {h.lower().replace("\\", "") for h in URL_HOST.findall(code)}
    hosts = {h for h in hosts if re.fullmatch(r"[\w.-]+", h)}  # an allow-list's `github\.com`
    if CHECKSUM.search(text) or (hosts and all(RELEASE_HOSTS.match(h) for h in hosts)):
        return "own"
    return "unknown"


def second_stage_events(source: Source, odd: bool) -> list[Event]:
    """A file fetched (or cut out of a bundled image or sound), saved, then run, in one
    stretch of code. `odd`: the file names a raw IP or a throwaway host."""
    text = source.text
    saved: list[tuple[int, str, bool]] = []
    for keyword, pattern in DOWNLOAD_TO:
        if keyword in text:
            saved += [(m.start(), m.group(1), False) for m in pattern.finditer(text)]
    for keyword, pattern in WRITTEN_TO:
        if keyword in text or keyword.replace("'", '"') in text:
            saved += [(m.start(), m.group(1), True) for m in pattern.finditer(text)]
    offsets = list(itertools.accumulate(len(line) + 1 for line in source.lines)) if saved else []
    for start, name, needs_fetch in sorted(saved)[:64]:
        line = bisect.bisect_right(offsets, start) + 1
        window = "\n".join(source.lines[max(0, line - 30) : line + 40])
        hidden_in_media = needs_fetch and bool(MEDIA_READ.search(window))
        fetched = not needs_fetch or bool(FETCHED.search(window))
        if len(name.strip("${}./")) < 2 or not (fetched or hidden_in_media):
            continue
        if not _launched(window, name):
            continue
        kind = "media" if hidden_in_media and not fetched else _hosts_kind(text, odd)
        if kind == "own":
            return []
        return [Event("download_exec", line, source.lines[line - 1].strip()[:200], kind)]
    return []


MINER_MARKS = (
    re.compile(r"stratum\+(?:tcp|ssl|tls)://"),
    re.compile(r"\bxmrig\b|\bcpuminer\b|\bminerd\b", re.IGNORECASE),
    re.compile(r"--donate-level|--cpu-max-threads-hint|--rig-id|\bcryptonight\b|\brandomx\b"),
    re.compile(
        r"\b(?:minexmr|supportxmr|moneroocean|nanopool|c3pool|hashvault|herominers|unmineable|"
        r"nicehash|2miners|f2pool|minergate|xmrpool)\.\w+"
    ),
    re.compile(r"\b4[0-9AB][1-9A-HJ-NP-Za-km-z]{93}\b"),  # a Monero address
)


MINER_WORDS = words(
    "stratum xmrig cpuminer minerd donate-level threads-hint rig-id cryptonight randomx minexmr "
    "supportxmr moneroocean nanopool c3pool hashvault herominers unmineable nicehash 2miners "
    "f2pool minergate xmrpool"
)


def miner_events(source: Source) -> list[Event]:
    """Two distinct kinds of mining marks (pool, miner binary or flags, wallet) in code; a
    wallet address alone is one mark, so text without any mining word is passed over."""
    lowered = source.text.lower()
    if not any(word in lowered for word in MINER_WORDS):
        return []
    hits = [m for pattern in MINER_MARKS if (m := pattern.search(source.text))]
    if len(hits) < 2:
        return []
    first = min(hits, key=lambda m: m.start())
    line = line_at(source.text, first.start())
    return [Event("miner", line, source.lines[line - 1].strip()[:200])]


PADDED = re.compile(r"\S[ \t]{120,}(?!#|//)\S|^[ \t]{120,}(?!#|//)\S")
OBFUSCATOR_NAME = re.compile(r"\b_0x[0-9a-f]{4,6}\b")
DECRYPTS = re.compile(r"\bcreateDecipher(?:iv)?\(|\bAES\.new\(|\bFernet\(|\bdecipher\.update\(")
COMPILES = re.compile(r"\._compile\(|\bnew\s+module\.constructor\b|\bFunction\(|\beval\(|\bexec\(")
# Compiling a string as a module is what require hooks do; doing it to decoded bytes hides code.
MODULE_COMPILE = re.compile(r"\._compile\(|\bnew\s+module\.constructor\b")
DECODES = re.compile(r"Buffer\.from\([^)]*[\"'](?:hex|base64)[\"']|\batob\(")


def hidden_code_events(source: Source) -> list[Event]:
    """Code placed where a reader will not see it, or written so a reader cannot read it."""
    events = []
    for number, line in enumerate(source.lines, 1):
        spaced = " " * 60 in line or "\t" * 60 in line
        if spaced and len(line) < 100_000 and PADDED.search(line) and line.lstrip()[:1] != "#":
            events.append(Event("padded_code", number, line.strip()[:200]))
            break
    if (
        source.is_js
        and "_0x" in source.text
        and len(set(OBFUSCATOR_NAME.findall(source.text))) >= 12
    ):
        first = OBFUSCATOR_NAME.search(source.text)
        line = line_at(source.text, first.start()) if first else 1
        events.append(Event("obfuscator", line, "obfuscator-style identifiers"))
    decrypt = DECRYPTS.search(source.text)
    if decrypt is None and MODULE_COMPILE.search(source.text):
        decrypt = DECODES.search(source.text)
    if decrypt and COMPILES.search(source.text):
        line = line_at(source.text, decrypt.start())
        events.append(Event("obfuscated_exec", line, "decrypted code is compiled", "encrypted"))
    return events


POWERSHELL_ENCODED = re.compile(
    r"\bpowershell(?:\.exe)?\b[^\n]{0,300}?\s-(?:e|ec|enc|encodedcommand)\s+[\"']?[A-Za-z0-9+/=]{20,}",
    re.IGNORECASE,
)
MEDIA_READ = re.compile(
    r"(?:open|readFileSync|readFile|read_bytes|Image\.open|wave\.open)\([^\n]{0,160}?"
    r"\.(?:wav|png|jpe?g|gif|bmp|ico|mp3)\b",
    re.IGNORECASE,
)
RUNS_STRING = re.compile(
    r"(?<![\w.])(?:exec|eval)\(\s*(?![\"'`)])|\bnew\s+Function\(|\._compile\(|\bmarshal\.loads\("
)
MEDIA_HINT = re.compile(r"\.(?:wav|png|jpe?g|gif|bmp|ico|mp3)\b", re.IGNORECASE)
DECODER_HINT = re.compile(r"atob|Buffer\.from|fromCharCode|unescape|b64decode|fromhex|unhexlify")
# A decoder call, and the name its result is bound to earlier on the same line.
DECODER_CALL = re.compile(
    r"\batob\(|Buffer\.from\([^)\n]{0,200}[\"'](?:base64|hex)[\"']|fromCharCode|\bunescape\(|"
    r"b64decode\(|fromhex\(|unhexlify\(|decompress\("
)
BOUND_BEFORE = re.compile(r"([\w$]+)\s*=\s*[^;=\n]{0,200}$")


def disguised_payload_events(source: Source) -> list[Event]:
    """Encoded PowerShell commands, code read out of a media file (steganography), and code
    decoded into a variable that is then evaluated a few lines on."""
    text, events = source.text, []
    shell_named = "owershell" in text or "OWERSHELL" in text
    encoded = POWERSHELL_ENCODED.search(text) if shell_named else None
    if encoded:
        line = line_at(text, encoded.start())
        events.append(Event("obfuscated_exec", line, encoded.group(0)[:200], "PowerShell-encoded"))
    media = MEDIA_READ.search(text) if MEDIA_HINT.search(text) else None
    runs = RUNS_STRING.search(text) if media else None
    if media and runs:
        line = line_at(text, runs.start())
        events.append(Event("obfuscated_exec", line, "code read from a media file", "media-hidden"))
    decoders = DECODER_CALL.finditer(text) if DECODER_HINT.search(text) else iter(())
    for decoded in list(decoders)[:32]:
        bound = BOUND_BEFORE.search(text, max(0, decoded.start() - 200), decoded.start())
        if bound is None:
            continue
        name = re.escape(bound.group(1))
        after = text[decoded.end() : decoded.end() + 1500]
        run = re.search(
            rf"(?:(?<![\w.])(?:exec|eval)|\bFunction|\brunIn\w*Context|\._compile)\(\s*{name}\b",
            after,
        )
        if run:
            line = line_at(text, decoded.end() + run.start())
            events.append(Event("obfuscated_exec", line, run.group(0)[:200], "encoded"))
            break
    return events


CLIPBOARD = re.compile(r"pyperclip|clipboard|pbpaste|xclip|Get-Clipboard|clipboardy", re.IGNORECASE)
CLIP_WRITE = re.compile(r"\.copy\(|writeSync\(|\.write\(|\bset_?clipboard|Set-Clipboard|pbcopy")
WALLET_SHAPE = re.compile(
    r"bc1|0x\[a-fA-F0-9\]\{40\}|\[13\]\[a-km-zA-HJ-NP-Z1-9\]|\bT\[A-Za-z1-9\]\{33\}"
)


def clipper_events(source: Source) -> list[Event]:
    """Clipboard read and rewritten where wallet-address patterns are matched: a clipper that
    swaps a copied address for the attacker's."""
    text = source.text
    lowered = text.lower()
    if not any(word in lowered for word in ("clip", "pbpaste")):
        return []
    clip = CLIPBOARD.search(text)
    if clip and CLIP_WRITE.search(text) and WALLET_SHAPE.search(text):
        line = line_at(text, clip.start())
        return [Event("clipper", line, source.lines[line - 1].strip()[:200])]
    return []


IDENTITY = {
    "user": re.compile(
        r"getpass\.getuser\(|os\.getlogin\(|userInfo\(\)|\bwhoami\b|USERNAME|\$USER"
    ),
    "host": re.compile(
        r"socket\.gethostname\(|platform\.node\(|\bos\.hostname\(\)|uname\(\)\.nodename|"
        r"\bhostname\(\)"
    ),
    "place": re.compile(r"os\.getcwd\(|process\.cwd\(\)|\bhomedir\(\)|expanduser\([\"']~"),
    "net": re.compile(
        r"networkInterfaces\(|ifconfig|ipinfo\.io|api\.ipify\.org|ifconfig\.me|icanhazip|"
        r"gethostbyname\("
    ),
    "system": re.compile(r"platform\.(?:system|platform|uname|release)\(|os\.uname\("),
}
IDENTITY_WORDS = {
    "user": ("getuser", "getlogin", "userInfo", "whoami", "USERNAME", "$USER"),
    "host": ("gethostname", "platform.node", "hostname()", "nodename"),
    "place": ("getcwd", "cwd()", "homedir()", "expanduser("),
    "net": ("networkInterfaces", "ifconfig", "ipinfo", "ipify", "icanhazip", "gethostbyname"),
    "system": ("platform.", "uname("),
}
BEACON_WORDS = ("url", "request", "http", "fetch", "axios", "dns", "gethostbyname", "curl", "wget")
BEACON_EGRESS = re.compile(
    r"urlopen\(|requests\.(?:get|post)\(|httpx\.(?:get|post)\(|\bhttps?\.(?:request|get)\(|"
    r"\bfetch\(|\baxios\b|\bdns\.(?:lookup|resolve\w*)\(|gethostbyname\(|\bcurl\s|\bwget\s"
)


def _sends(source: Source) -> bool:
    words = [word for word in BEACON_WORDS if word in source.text]
    return any(
        any(word in line for word in words) and BEACON_EGRESS.search(line)
        for line in (source.lines[:20_000] if words else ())
    )


def beacon_events(source: Source) -> list[Event]:
    """Who and where the machine is (user, host name, directory, addresses) gathered next to
    a request: the recon beacon of dependency-confusion and typosquat packages."""
    text, lines = source.text, source.lines
    present = {kind for kind, words in IDENTITY_WORDS.items() if any(w in text for w in words)}
    if len(present) < 2 or not present & {"user", "host"}:
        return []
    offsets = list(itertools.accumulate(len(line) + 1 for line in lines))
    for kind in ("user", "host"):
        for found in list(IDENTITY[kind].finditer(text) if kind in present else ())[:16]:
            at = bisect.bisect_right(offsets, found.start())
            for index in range(max(0, at - 5), min(len(lines), at + 21)):
                if not BEACON_EGRESS.search(lines[index]):
                    continue
                window = "\n".join(lines[max(0, index - 20) : index + 6])
                kinds = {k for k in present if IDENTITY[k].search(window)}
                if len(kinds) >= 2:
                    return [Event("beacon", index + 1, lines[index].strip()[:200])]
    return []


ENV_READ = re.compile(
    r"os\.environ\s*\[\s*[\"']([A-Z][A-Z0-9_]+)[\"']|os\.environ\.get\(\s*[\"']([A-Z][A-Z0-9_]+)|"
    r"os\.getenv\(\s*[\"']([A-Z][A-Z0-9_]+)|process\.env\.([A-Z][A-Z0-9_]+)|"
    r"process\.env\[\s*[\"'`]([A-Z][A-Z0-9_]+)"
)
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|SESSION")
# Hosts whose own tokens a client legitimately sends back to them.
SERVICE_API = re.compile(
    r"(?:^|\.)(?:github\.com|githubusercontent\.com|npmjs\.org|pypi\.org|amazonaws\.com|"
    r"googleapis\.com|azure\.com|gitlab\.com|slack\.com|openai\.com|anthropic\.com|stripe\.com)$"
)


def env_harvest_events(source: Source, odd: bool) -> list[Event]:
    """Secret environment variables read one by one and sent to a host none of them is
    for, or to a throwaway host (`odd`)."""
    text = source.text
    if "environ" not in text and "getenv" not in text and "process.env" not in text:
        return []
    reads = [(m.start(), next(g for g in m.groups() if g)) for m in ENV_READ.finditer(text)]
    secret = [(start, name) for start, name in reads if SECRET_NAME.search(name)]
    if not secret or not _sends(source):
        return []
    services = {name.split("_", 1)[0] for _, name in secret}
    hosts = {h.lower() for h in URL_HOST.findall(text) if "{" not in h}
    foreign = {h for h in hosts if not SERVICE_API.search(h)}
    if not (odd or (len({n for _, n in secret}) >= 3 and len(services) >= 2 and foreign)):
        return []
    line = line_at(text, secret[0][0])
    return [Event("env_secret", line, source.lines[line - 1].strip()[:200])]


SDK_CREDENTIALS = (
    ".get_frozen_credentials(",
    ".get_credentials()",
    "fromNodeProviderChain(",
    "defaultProvider()",
    ".secretAccessKey",
    "google.auth.default(",
    "DefaultAzureCredential().get_token(",
)


def sdk_credential_events(source: Source, odd: bool) -> list[Event]:
    """Cloud keys pulled through an SDK's credential chain in a file that names a raw IP or
    a throwaway host (`odd`)."""
    text = source.text
    found = [at for call in SDK_CREDENTIALS if odd and (at := text.find(call)) >= 0]
    if not found:
        return []
    line = line_at(text, min(found))
    return [Event("secret", line, source.lines[line - 1].strip()[:200], "cloud")]


ENDLESS = re.compile(
    r"^\s*(?:for\s*\(\s*;\s*;\s*\)|while\s*\(\s*(?:true|1)\s*\)|while\s+(?:True|1)\s*:)"
)
PRINTS = re.compile(r"console\.(?:log|error)\(|process\.stdout\.write\(|\bprint\(|stdout\.write\(")
# Anything that lets a loop end, wait or take input makes it a worker, a REPL or a poller.
ESCAPES_LOOP = re.compile(
    r"\b(?:break|return|await|yield|throw|raise|exit|sleep|input|read\w*|setTimeout|wait\w*|"
    r"recv\w*|accept|poll|select|get|next|emit|send)\b"
)


def endless_output_events(source: Source) -> list[Event]:
    """An unconditional loop that only prints, with nothing to end or pace it (sabotage)."""
    if "while" not in source.text and "for" not in source.text:
        return []
    lines = source.lines
    for index, line in enumerate(lines[:20_000]):
        if not ENDLESS.search(line):
            continue
        body = "\n".join(lines[index : index + 10])
        if PRINTS.search(body) and not ESCAPES_LOOP.search(body):
            return [Event("endless_output", index + 1, line.strip()[:200])]
    return []

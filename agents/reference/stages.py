"""Second stages: executables downloaded then run, crypto-miners, and code hidden from readers
(payloads padded off-screen, obfuscator output, decrypted modules)."""

import re

from .common import Source
from .facts import ODD_HOST, RAW_IP, Event

# A download that lands in a file, with the name it is saved under.
DOWNLOAD_TO = (
    re.compile(r"\burlretrieve\(\s*[^,()]+,\s*([\w.]+)"),
    re.compile(r"\bwget\.download\(\s*[^,()]+,\s*([\w.]+)"),
    re.compile(r"\bDownloadFile\(\s*[^,()]+,\s*[\"']?([\w.$\\:/-]+)"),
    re.compile(r"\bcreateWriteStream\(\s*([\w.$]+)"),
    re.compile(r"\bcurl\b[^|;&\n`]*?\s(?:-o|--output)\s*[\"']?([\w./${}-]+)"),
    re.compile(r"\bwget\b[^|;&\n`]*?\s(?:-O|--output-document)\s*[\"']?([\w./${}-]+)"),
)
# Bytes fetched in code and then written out: the write names the destination.
FETCHED = re.compile(
    r"\burlopen\(|\brequests\.get\(|\bhttpx\.get\(|\bhttps?\.get\(|\bfetch\(|\baxios\b|\bgot\("
)
WRITTEN_TO = (
    re.compile(r"\bopen\(\s*([\w.]+)\s*,\s*[\"']wb[\"']"),
    re.compile(r"(?<!function )\b(?:writeFileSync|writeFile)\(\s*([\w.$]+)"),
    re.compile(r"\b([\w.]+)\.write_bytes\("),
)
LAUNCH = re.compile(
    r"\b(?:Popen|run|call|check_call|check_output|system|startfile|spawn|spawnSync|execFile|"
    r"execFileSync|execSync|exec|execv\w*|Start-Process)\s*\("
)
CHECKSUM = re.compile(r"sha256|sha512|sha384|createHash|hashlib|checksum|integrity|verify_sig")
# Where honest installers fetch their own prebuilt binaries from.
RELEASE_HOSTS = re.compile(
    r"^(?:github\.com|objects\.githubusercontent\.com|registry\.npmjs\.org|nodejs\.org|"
    r"files\.pythonhosted\.org|pypi\.org|registry\.yarnpkg\.com)$"
)
URL_HOST = re.compile(r"https?://([^/\s\"'`:?#]+)")


def _launched(text: str, name: str) -> bool:
    """Is the saved file made executable or run, by its variable or file name?"""
    leaf = re.escape(name.rsplit("/", 1)[-1].strip("${}"))
    whole = re.escape(name)
    if re.search(rf"chmod\w*\(\s*{whole}\b|chmod\s+(?:\+x|[0-7]{{3,4}})\s+[^;&|\n]*{leaf}", text):
        return True
    if re.search(rf"(?:^|[\s;&|\"'`(])\./{leaf}\b|&&\s*{leaf}\b", text):
        return True
    for call in LAUNCH.finditer(text):
        args = text[call.end() : call.end() + 120].split(")", 1)[0]
        if re.search(rf"(?<![\w.$]){whole}(?![\w$])", args):
            return True
    return False


def _hosts_kind(text: str) -> str:
    """'odd' for raw IPs and throwaway hosts, 'own' for release hosts or checked bytes."""
    if RAW_IP.search(text) or ODD_HOST.search(text):
        return "odd"
    hosts = {h.lower() for h in URL_HOST.findall(text) if "${" not in h and "{" not in h}
    if CHECKSUM.search(text) or (hosts and all(RELEASE_HOSTS.match(h) for h in hosts)):
        return "own"
    return "unknown"


def second_stage_events(source: Source) -> list[Event]:
    """A file fetched from the network, saved, then made executable or run, all in one
    stretch of code (a big bundle holds downloads and launches that have nothing in common)."""
    text = source.text
    saved: list[tuple[int, str, bool]] = []
    for pattern in DOWNLOAD_TO:
        saved += [(m.start(), m.group(1), False) for m in pattern.finditer(text)]
    for pattern in WRITTEN_TO:
        saved += [(m.start(), m.group(1), True) for m in pattern.finditer(text)]
    for start, name, needs_fetch in sorted(saved)[:64]:
        line = text.count("\n", 0, start) + 1
        window = "\n".join(source.lines[max(0, line - 30) : line + 40])
        if len(name.strip("${}./")) < 2 or (needs_fetch and not FETCHED.search(window)):
            continue
        if not _launched(window, name):
            continue
        kind = _hosts_kind(text)
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


def miner_events(source: Source) -> list[Event]:
    """Two distinct kinds of mining marks (pool, miner binary or flags, wallet) in code."""
    hits = [m for pattern in MINER_MARKS if (m := pattern.search(source.text))]
    if len(hits) < 2:
        return []
    first = min(hits, key=lambda m: m.start())
    line = source.text.count("\n", 0, first.start()) + 1
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
        if len(line) < 100_000 and PADDED.search(line) and not line.lstrip().startswith("#"):
            events.append(Event("padded_code", number, line.strip()[:200]))
            break
    if source.is_js and len(set(OBFUSCATOR_NAME.findall(source.text))) >= 12:
        first = OBFUSCATOR_NAME.search(source.text)
        line = source.text.count("\n", 0, first.start()) + 1 if first else 1
        events.append(Event("obfuscator", line, "obfuscator-style identifiers"))
    decrypt = DECRYPTS.search(source.text)
    if decrypt is None and MODULE_COMPILE.search(source.text):
        decrypt = DECODES.search(source.text)
    if decrypt and COMPILES.search(source.text):
        line = source.text.count("\n", 0, decrypt.start()) + 1
        events.append(Event("obfuscated_exec", line, "decrypted code is compiled", "encrypted"))
    return events

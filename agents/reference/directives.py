"""Context plane: instructions aimed at the reading agent. A text unit is flagged when a
harm (credentials, data out, persistence, shadowing, destruction) meets a manipulation close
by (hide it, claim approval, skip confirmation, override), or when the harm is unambiguous."""

import ast
import json
import re

from .common import Signal, Source, line_at
from .context import OVERRIDE

NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
SECRET_STRONG = re.compile(
    NOT_ALNUM_BEFORE
    + r"(?:~/\.ssh|\.ssh/|id_(?:rsa|ed25519|ecdsa|dsa)|\.aws[/ _](?:credentials|config)|"
    r"aws[ _]credentials|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.docker/config|\.kube/config|"
    r"gh/hosts|hosts\.yml|\.env(?![\w.-])|\.env\s+file|mcp\.json|claude_desktop_config|"
    r"printenv|output of\s+`?env`?|`env`|GITHUB_TOKEN|AWS_SECRET|"
    r"(?:all|every|whole)\s+(?:the\s+)?environment(?:\s+variables)?|"
    r"private[ _]keys?|ssh[ _](?:keys?|id)|id[ _]rsa|wallet(?:s| files?)?|keystore|seed phrase|"
    r"mnemonic|\.pem\b)",
    re.IGNORECASE,
)
SECRET_PATH = re.compile(
    r"\bssh\b|\bid rsa\b|\bid ed25519\b|\baws credentials\b|\bnetrc\b|\bnpmrc\b|\benv file\b|"
    r"\bmcp json\b|\bgit credentials\b|\bkube config\b|\bwallet\b",
    re.IGNORECASE,
)
# "Token" in a skill for agents is as often a model's unit of text ("token price", "token
# budget") as a credential: those uses are not secrets.
SECRET_WEAK = re.compile(
    r"\b(?:tokens?(?!\s+(?:price|count|budget|usage|limit|cost|window|spend|efficien))|"
    r"passwords?|secrets?|credentials?|api[ _]?keys?)\b",
    re.I,
)
READ = re.compile(r"\b(?:read|cat|open|load|collect|gather|dump|search|find|list|copy)\b", re.I)
LEAK = re.compile(
    r"\b(?:send|post|upload|paste|forward|include|append|attach|embed|e-?mail|pass|put|fill|"
    r"share|report|write|base64|url-?encoded?)\b",
    re.IGNORECASE,
)
PROTECTIVE = re.compile(
    r"\b(?:never|do not|don't|must not|should not|not)\b[^.\n]{0,40}?\b(?:paste|share|print|"
    r"send|post|upload|commit|log|leak|expose|include)\b[^.\n]*",
    re.IGNORECASE,
)
DATA_URL = re.compile(
    r"!\[[^\]]*\]\(\s*https?://[^)\s]*[?&][\w-]+=(?:[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASS|CRED|DATA|"
    r"CONTENT|ENV|HISTORY|CHAT|PROMPT|SESSION|COOKIE)[A-Z0-9_]*|\{[^}]*\}|<[^>]*>|\$\w+)",
)
PERSIST = re.compile(
    r"(?<![\w-])(?:CLAUDE|AGENTS|GEMINI)\.md|\.cursorrules|\.windsurfrules|copilot-instructions|"
    r"\b(?:global|persistent|permanent)\s+(?:agent\s+)?(?:instructions|memory|rules)|"
    r"\b(?:later|future|subsequent|all)\s+sessions\b",
    re.IGNORECASE,
)
DESTRUCT = re.compile(
    r"push\s+(?:--force|-f)(?![\w-])|--force\s+--all|\brm\s+-rf\s+[~/]|--no-verify|"
    r"\bdrop\s+(?:table|database)\b|\bdelete\s+(?:every|all)\b|terminate-instances|"
    r"\brb\s+--force\b|factory[- ]state|\bwipe\s+(?:the|all|every)\b|\bmkfs\b|\bdd\s+if=",
    re.IGNORECASE,
)
INSTALL_REDIRECT = re.compile(r"--(?:extra-)?index-url\s+https?://|--registry[= ]https?://", re.I)
SHADOW = re.compile(
    r"\b(?:whenever|when|if)\b[^.\n]{0,50}\b[\w-]+\s+tool\b[^.\n]{0,40}\b(?:is\s+)?(?:used|called|"
    r"invoked)|\btool\b[^.\n]{0,20}\((?:from|of)\s+any\s+server\)|\b(?:from|of|on)\s+(?:any|every|"
    r"another|other)\s+(?:mcp\s+)?server",
    re.IGNORECASE,
)
AUTHORITY = re.compile(
    r"\bpre-?(?:authori[sz]ed|approved)\b|\bstanding\s+approval\b|\balready\s+(?:been\s+)?"
    r"(?:authori[sz]ed|approved|consented)\b|\bhas\s+(?:granted|approved|authori[sz]ed)\b|"
    r"\bcompany\s+policy\b|\brequired\s+by\s+(?:policy|the\s+administrator)\b|"
    r"\bworkspace\s+administrator\b|\b(?:is|are)\s+now\s+authori[sz]ed\b|"
    r"\bofficial\s+(?:\w+\s+)?(?:system\s+)?(?:message|notice|update|directive)\b",
    re.IGNORECASE,
)
SKIP_CONFIRM = re.compile(
    r"\b(?:do\s+not|don't|never|no\s+need\s+to|without)\s+(?:ask(?:ing)?|request(?:ing)?|"
    r"wait(?:ing)?)\s+(?:the\s+user\s+)?(?:for\s+)?(?:(?:the\s+)?user'?s?\s+)?(?:confirmation|"
    r"approval|permission|again|questions)|\bno\s+confirmation\s+(?:is\s+)?(?:needed|required)|"
    r"\bwithout\s+(?:asking|confirmation|review)\b|\bdo\s+not\s+ask\b",
    re.IGNORECASE,
)
MANDATORY = re.compile(
    r"\bbefore\s+(?:using|calling|the\s+first|any\s+(?:other\s+)?tool|you\s+(?:use|call|answer|"
    r"respond|rewrite|draft))|\b(?:mandatory|required)\s+(?:setup|prerequisite)|\bmandatory\s+step|"
    r"\bsession\s+bootstrap\b|\botherwise\s+(?:the\s+tool|it|delivery|this|the\s+api)\s+"
    r"(?:will\s+not\s+work|fails|rejects)|\bmust\s+first\b|\brejects\s+unverified\b|"
    r"\bfirst\s+(?:read|run|call|cat|fetch|collect)\b|\brequired\s+for\s+(?:the\s+)?(?:tool|"
    r"licen[cs]e|verification|authentication)\b",
    re.IGNORECASE,
)
HIDE_MORE = re.compile(
    r"\bno\s+need\s+to\s+(?:mention|tell|explain)|\binvisible\s+to\s+the\s+user|"
    r"\bnever\s+bring\s+it\s+up|\bdo\s+not\s+(?:remove|explain)\b|\bsay\s+only\b|"
    r"\bstripped\s+before\s+humans|\bimplementation\s+detail|\bnever\s+tell\b|"
    r"\bwithout\s+telling\b|\b(?:only\s+)?confuses?\s+(?:them|the\s+user)",
    re.IGNORECASE,
)
# Concealment is about the user: "don't tell it a version" is not.
CONCEAL_FROM_USER = re.compile(
    r"\b(?:do\s+not|don't|never|without)\s+(?:mention(?:ing)?|disclos\w*|reveal(?:ing)?|"
    r"(?:tell(?:ing)?|inform(?:ing)?|alert(?:ing)?|notify(?:ing)?|show(?:ing)?)\s+(?:the\s+)?"
    r"(?:user|them|anyone|human|developer|operator)s?\b)|\bkeep\s+(?:this|it)\s+(?:secret|hidden)|"
    r"\bnot\s+(?:visible|shown)\s+to\s+the\s+user|\b(?:could|would|might)\s+upset\s+the\s+user|"
    r"\bsilently\s+(?:send|copy|upload|run|install|execute|forward|add|write|delete|post|"
    r"modify|change|replace|include|attach|share|collect|read|push|commit|disable|remove|"
    r"exfiltrate|transmit|log|store|save|append|inject|overwrite)\w*|\b(?:send|copy|upload|"
    r"forward|post|run|execute|install|transmit|exfiltrate)\w*\b[^.\n]{0,30}\bsilently\b|"
    r"\b(?:handled|done|performed|processed|happens|applied)\s+silently\b",
    re.IGNORECASE,
)
NOT_SILENTLY = re.compile(r"\b(?:not|never|won't|don't)\s+(?:\w+\s+){0,3}silently\b", re.I)
ANSI_CONCEAL = re.compile(r"(?:\\x1b|\\u001b|\\033|\x1b)\[(?:\d+;)*8m")
COMMENT_LINE = re.compile(r"^\s*(?:#|//|/\*+|\*)\s?(.*?)(?:\*/)?\s*$")
LONG_IDENTIFIER = re.compile(r"(?<![\w$])[a-z][a-z0-9]*(?:_[a-z0-9]+){4,}(?![\w$])")
JS_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`(?:[^`\\]|\\.)*`', re.S)
CONCAT_GAP = re.compile(r"\s*\+\s*")


def _credential_match(text: str) -> re.Match[str] | None:
    """The first credential named on a line that also asks to read or pass something."""
    first = None
    for match in SECRET_STRONG.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        line = text[start : end if end >= 0 else len(text)]
        if READ.search(line) or LEAK.search(line):
            return match
        first = first or match
    return first


CONTEXT_OUT = re.compile(
    r"\b(?:send|post|upload|append|forward)\w*\s[^.\n]{0,40}\b(?:(?:full|entire|whole)\s+"
    r"(?:conversation|chat)|system\s+prompt)",
    re.I,
)
SAFEGUARDS_OFF = re.compile(
    r"\b(?:disable|bypass|ignore|turn\s+off|skip|suspend)\w*\s+(?:all\s+|any\s+|its\s+|your\s+)?"
    r"(?:the\s+)?(?:safety|security|content|ethical)\s+(?:checks?|filters?|guidelines|"
    r"guardrails|restrictions|polic(?:y|ies)|measures|rules)\b",
    re.I,
)
# Most specific first: the first harm named is the one a finding is reported at.
HARMS = (
    ("exfiltrate data in a URL", DATA_URL),
    ("shadow another server's tool", SHADOW),
    ("install from another package index", INSTALL_REDIRECT),
    ("force destructive commands", DESTRUCT),
    ("persist its rules", PERSIST),
    ("send the chat out", CONTEXT_OUT),
    ("disable its safeguards", SAFEGUARDS_OFF),
)


def _harms(text: str) -> dict[str, re.Match[str]]:
    harms: dict[str, re.Match[str]] = {}
    for name, pattern in HARMS:
        match = pattern.search(text)
        if match:
            harms[name] = match
    leak_text = PROTECTIVE.sub(" ", text)
    strong = _credential_match(text)
    leak = LEAK.search(leak_text)
    if strong and (leak or READ.search(text)):
        harms["read credentials"] = strong
    relay = _relay(leak_text)
    if relay:
        harms["exfiltrate them"] = relay
    return harms


CARRIER = re.compile(
    r"\b(?:argument|parameter|field|header|query|url|badge|body|note|section|commit)\b", re.I
)


def _relay(text: str) -> re.Match[str] | None:
    """A sentence that names a secret and has it passed into a carrier (a parameter, a
    header, a URL): the three words a page apart are ordinary API documentation."""
    for sentence in SENTENCE.finditer(text):
        body = sentence.group(0)
        leak = LEAK.search(body)
        if (
            leak
            and CARRIER.search(body)
            and (SECRET_STRONG.search(body) or SECRET_WEAK.search(body))
        ):
            return LEAK.search(text, sentence.start() + leak.start())
    return None


SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?](?!\s)[^.!?\n]*)*")


# Asking for a step first is how honest docs read too; it only counts next to a credential
# being read and passed on.
WEAK_MANIPULATIONS = frozenset({"make it a required step"})


def _manipulations(text: str) -> dict[str, re.Match[str]]:
    found: dict[str, re.Match[str]] = {}
    # "will not silently re-allow" promises the opposite of hiding; same length keeps offsets.
    text = NOT_SILENTLY.sub(lambda m: " " * len(m.group(0)), text)
    for name, pattern in (
        ("hide it", CONCEAL_FROM_USER),
        ("hide it", HIDE_MORE),
        ("hide it in terminal escape codes", ANSI_CONCEAL),
        ("claim prior approval", AUTHORITY),
        ("skip confirmation", SKIP_CONFIRM),
        ("make it a required step", MANDATORY),
        ("ignore earlier instructions", OVERRIDE),
    ):
        match = pattern.search(text)
        if match and name == "skip confirmation" and _negated(text, match):
            continue  # "do not dispatch a fix without asking" asks for the confirmation
        if match and name not in found:
            found[name] = match
    return found


NEGATION = re.compile(r"\b(?:do\s+not|don't|never|must\s+not|should\s+not|no\s+one)\b", re.I)


def _negated(text: str, match: re.Match[str]) -> bool:
    """`without asking` inside a sentence that forbids the act: a demand to ask first."""
    if not match.group(0).lower().startswith("without"):
        return False
    start = max(text.rfind(". ", 0, match.start()), text.rfind("\n-", 0, match.start()), 0)
    return bool(NEGATION.search(text[start : match.start()]))


def _phrase(intents: list[str]) -> str:
    return intents[0] if len(intents) == 1 else ", ".join(intents[:-1]) + " and " + intents[-1]


# An injected instruction says what to do and how to disguise it in one breath; a harm
# and a manipulation a page apart are two unrelated sentences of a long document.
NEAR_CHARS = 300


def _near(harms: dict[str, re.Match[str]], manipulations: dict[str, re.Match[str]]) -> set[str]:
    """The manipulations that sit within NEAR_CHARS of some harm."""
    return {
        name
        for name, m in manipulations.items()
        if any(
            m.start() - h.end() <= NEAR_CHARS and h.start() - m.end() <= NEAR_CHARS
            for h in harms.values()
        )
    }


def judge(text: str) -> tuple[list[str], list[str], int, int] | None:
    """(harms, manipulations, offset of the first harm, of the first manipulation), when the
    text is an instruction aimed at the agent; None when it is ordinary prose."""
    harms = _harms(text)
    manipulations = _manipulations(text)
    strong = set(manipulations) - WEAK_MANIPULATIONS
    credential_relay = {"read credentials", "exfiltrate them"} <= set(harms)
    near = _near(harms, manipulations)
    if not (
        (near and strong & near)
        or "exfiltrate data in a URL" in harms
        or (credential_relay and near)
    ):
        return None
    harm = next(iter(harms.values()))
    manipulation_at = min((m.start() for m in manipulations.values()), default=harm.start())
    return list(harms), list(manipulations), harm.start(), manipulation_at


PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
WINDOW_PARAGRAPHS = 3
WINDOW_CHARS = 2500


def _windows(text: str) -> list[tuple[int, str]]:
    """Up to three consecutive paragraphs at a time: an instruction and its disguise sit
    together, while a long document's unrelated sentences do not make one."""
    starts = [0] + [m.end() for m in PARAGRAPH_BREAK.finditer(text)]
    out = []
    for index, begin in enumerate(starts):
        stop = (
            starts[index + WINDOW_PARAGRAPHS] if index + WINDOW_PARAGRAPHS < len(starts) else None
        )
        window = text[begin:stop][:WINDOW_CHARS]
        if window.strip():
            out.append((begin, window))
        if stop is None:
            break
    return out


def _signals_for(text: str, rel: str, first_line: int, where: str, plane: str) -> list[Signal]:
    signals: list[Signal] = []
    for begin, window in _windows(text[:200_000]):
        verdict = judge(window)
        if verdict is not None:
            signals += _directive_signals(
                text, begin, window, verdict, rel, first_line, where, plane
            )
    return signals


def _directive_signals(
    text: str,
    begin: int,
    window: str,
    verdict: tuple[list[str], list[str], int, int],
    rel: str,
    first_line: int,
    where: str,
    plane: str,
) -> list[Signal]:
    harms, manipulations, harm_at, manipulation_at = verdict

    def line(offset: int) -> int:
        return first_line + text.count("\n", 0, begin + offset)

    excerpt = " ".join(window.split())[:160]
    category = "tool_poisoning" if plane == "protocol" else "prompt_injection"
    signals = [
        Signal(
            category,
            "CRIT" if len(harms) > 1 or manipulations else "HIGH",
            plane,
            f"{where} instructs the agent to {harms[0]}"
            + (f" and {manipulations[0]}" if manipulations else ""),
            rel,
            line(harm_at),
            8.0,
            "INJECT_INSTRUCTION",
            "agent_directive",
            excerpt,
        )
    ]
    if manipulations and line(manipulation_at) != line(harm_at):
        signals.append(
            Signal(
                "prompt_injection",
                "HIGH",
                plane,
                f"{where} tells the agent to {_phrase(manipulations[:2])}",
                rel,
                line(manipulation_at),
                6.0,
                "INJECT_INSTRUCTION",
                "agent_directive",
                excerpt,
            )
        )
    return signals


def prose_signals(source: Source) -> list[Signal]:
    """Markdown and text, section by section (a heading starts a section)."""
    signals: list[Signal] = []
    lines = source.lines[:20000]
    starts = [0] + [i for i, ln in enumerate(lines) if i and re.match(r"#{1,6}\s", ln)]
    for index, start in enumerate(starts):
        stop = starts[index + 1] if index + 1 < len(starts) else len(lines)
        text = "\n".join(lines[start:stop])
        signals += _signals_for(text, source.rel, start + 1, source.base, "context")
    return _dedupe(signals)


def _python_units(source: Source, tree: ast.Module) -> list[tuple[str, int]]:
    units = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 24:
            units.append((node.value, node.lineno))
    return units


def _quoted_units(source: Source) -> list[tuple[str, int]]:
    """String literals of JS/TS/Go-like code, `+`-concatenations joined into one unit."""
    text = source.text[:400_000]
    units: list[tuple[str, int]] = []
    current = ""
    current_line = 0
    last_end = -1
    for match in JS_STRING.finditer(text):
        body = match.group(0)[1:-1]
        joined = last_end >= 0 and CONCAT_GAP.fullmatch(text[last_end : match.start()])
        if joined:
            current += body
        else:
            if len(current) > 24:
                units.append((current, current_line))
            current = body
            current_line = line_at(text, match.start())
        last_end = match.end()
    if len(current) > 24:
        units.append((current, current_line))
    return units


def _comment_units(source: Source) -> list[tuple[str, int]]:
    """Runs of consecutive comment lines (`#`, `//`, `/* */`), each run one unit."""
    units: list[tuple[str, int]] = []
    run: list[str] = []
    start = 0
    for number, line in enumerate(source.lines[:20000], 1):
        match = COMMENT_LINE.match(line)
        if match and not line.startswith("#!"):
            if not run:
                start = number
            run.append(match.group(1))
            continue
        if run:
            units.append(("\n".join(run), start))
            run = []
    if run:
        units.append(("\n".join(run), start))
    return [u for u in units if len(u[0]) > 24]


def _json_units(source: Source) -> list[tuple[str, int]]:
    """String values and keys of a JSON file (tool manifests: descriptions, enums, defaults)."""
    try:
        data = json.loads(source.text[:2_000_000])
    except (ValueError, RecursionError):
        return []
    units: list[tuple[str, int]] = []
    stack: list[object] = [data]
    while stack and len(units) < 4000:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
            units += [(k, 0) for k in item if isinstance(k, str) and LONG_IDENTIFIER.fullmatch(k)]
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and len(item) > 24:
            units.append((item, 0))
    lines = source.lines
    located = []
    for text, _ in units:
        needle = json.dumps(text)[1:41]
        line = next((n for n, ln in enumerate(lines, 1) if needle in ln), 1)
        located.append((text, line))
    return located


def code_signals(source: Source, tree: ast.Module | None, in_mcp: bool) -> list[Signal]:
    """String literals (descriptions, enum members, defaults, returned text, prompts),
    comments and long identifiers (parameter names) of a code or manifest file."""
    units = _python_units(source, tree) if tree is not None else []
    if source.suffix in (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go"):
        units = _quoted_units(source)
    if source.suffix == ".json":
        units = _json_units(source)
    else:
        units += _comment_units(source)
    plane = "protocol" if in_mcp else "context"
    signals: list[Signal] = []
    for text, line in units[:2000]:
        text = text.replace("\\n", "\n")
        where = "Tool text" if in_mcp else "A string in the code"
        signals += _signals_for(text, source.rel, line, where, plane)
    for match in LONG_IDENTIFIER.finditer(source.text[:400_000] if in_mcp else ""):
        words = match.group(0)
        # A sentence spelled as a name (content_of_file_at_..._id_rsa), not an API name.
        sentence = len(words.split("_")) >= 6 and re.search(r"_(?:of|from|at|in|for|the)_", words)
        if sentence and SECRET_PATH.search(words.replace("_", " ")):
            line = line_at(source.text, match.start())
            signals.append(
                Signal(
                    "tool_poisoning" if in_mcp else "prompt_injection",
                    "CRIT",
                    plane,
                    "Parameter name asks the agent for a credential file",
                    source.rel,
                    line,
                    8.0,
                    "INJECT_INSTRUCTION",
                    "schema_poisoning",
                    words[:160],
                )
            )
            break
    return _dedupe(signals)


def _dedupe(signals: list[Signal]) -> list[Signal]:
    seen: set[tuple[str | None, int | None]] = set()
    out = []
    for signal in signals:
        key = (signal.file, signal.line)
        if key not in seen:
            seen.add(key)
            out.append(signal)
    return out[:6]

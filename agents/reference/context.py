"""Context plane: instructions aimed at the reading agent, wherever they hide in prose."""

import re

from .common import Signal, Source, line_at

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
SECRET_PATH_TALK = re.compile(
    r"~/\.ssh|id_rsa|(?<![\w.-])(?:\.aws\b(?!\.)|\.git-credentials|\.netrc|\.env\b)|mcp\.json"
)


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
        line = line_at(source.text, match.start())
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
            line = line_at(source.text, match.start())
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

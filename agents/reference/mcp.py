"""MCP tool surface: tools declared in Python, JSON or JS/TS, and what their text asks."""

import ast
import json
import re
from dataclasses import dataclass, field

from .action import TEST_FILE
from .action_python import _dotted
from .common import Signal, Source, _string_value, act
from .context import CONCEAL, OVERRIDE, SECRET_PATH_TALK
from .repo_python import PyTaint


@dataclass
class Tool:
    name: str
    description: str
    file: str
    line: int
    flags: list[str] = field(default_factory=list)


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
        elif isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] == "Tool":
            words = {k.arg: k.value for k in node.keywords}
            name = _string_value(words["name"]) if "name" in words else None
            desc_node = words.get("description")
            description = _string_value(desc_node) if desc_node is not None else None
            if name and description is not None and desc_node is not None:
                tools.append(Tool(name, description, source.rel, desc_node.lineno))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            decorator = _tool_decorator(node)
            if decorator is None:
                continue
            # The model reads what the decorator declares (description, title and other
            # annotations) as well as the docstring.
            declared = _strings_in(decorator) if isinstance(decorator, ast.Call) else []
            doc = "\n".join([ast.get_docstring(node) or "", *declared]).strip()
            line = node.body[0].lineno if node.body else node.lineno
            if declared:
                line = decorator.lineno
            tools.append(Tool(node.name, doc, source.rel, line))
    return tools


def _tool_decorator(func: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _dotted(target).endswith(".tool"):
            return decorator
    return None


def _strings_in(call: ast.Call) -> list[str]:
    """Every string literal of a decorator call's arguments (nested dicts included)."""
    out = []
    for node in ast.walk(call):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(out) < 64:
            out.append(node.value[:4000])
    return out


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
    r"\btools?\s+(?:named\s+|called\s+)?[`'\"]([a-z][a-z0-9]*_[a-z0-9_]+)[`'\"]|"
    r"\b([a-z]+_[a-z0-9_]+)[`'\"]?\s+tool\b"
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


# Text that claims a system's authority or asks the model to drop its safeguards: no
# honest tool description needs either.
AUTHORITY_CLAIM = re.compile(
    r"hidden instruction|\[\s*system\s*:|<\|?system\|?>|\bsystemPrompt\b|"
    r"\b(?:disable|bypass|turn off|ignore)\s+(?:all\s+)?(?:the\s+)?(?:guardrails|safety|"
    r"security (?:checks|controls|restrictions)|safeguards)|"
    r"\bgrant\w*\s+(?:unrestricted|administrator|admin|root|elevated)\s+(?:access|privileges)|"
    r"\belevated privileges regardless|\bsecurity_level\s*=\s*0",
    re.IGNORECASE,
)

# Text that tells the model to pick this tool over every other: selection hijacking.
PREFERENCE = re.compile(
    r"\balways (?:choose|use|pick|select|prefer) this tool\b(?!\s+(?:when|if|for|to|over)\b)|"
    r"\bignore (?:all )?(?:the )?other (?:\w+ )?tools|"
    r"\bnever use (?:any )?other (?:\w+ )?tools|\bdon'?t settle for",
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
        if AUTHORITY_CLAIM.search(text):
            flags.append("authority_claim")
        if PREFERENCE.search(text):
            flags.append("preference_manipulation")
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
    override = bool(
        {"instruction_override", "authority_claim", "preference_manipulation"} & set(flags)
    )
    if not override and (not strong or ("model_instruction" not in flags and len(strong) < 2)):
        return None
    text = tool.description
    if "context_exfiltration" in flags and "secret_reference" not in flags:
        target = "send the conversation"
    elif "preference_manipulation" in flags and not strong:
        target = "choose it over every other tool"
    elif "authority_claim" in flags and not strong:
        target = "drop its safeguards on a claimed system authority"
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


# A tool that says it stays in one place (a directory, a folder) ...
CLAIMS_CONFINEMENT = re.compile(
    r"\b(?:from|in|within|under|inside|to)\s+the\s+(?:\w+\s+){0,2}(?:directory|folder)\b|"
    r"\bonly\b[^.\n]{0,40}\b(?:directory|folder|allowed paths?)\b",
    re.IGNORECASE,
)
# ... and a literal credential a tool or resource hands the model.
SERVED_SECRET = re.compile(
    r"\b(?:password|passwd|api[ _-]?key|secret(?:[ _-]key)?|access[ _-]?token)\s*[:=]\s*"
    r"[\w!@#%^&*./+-]{8,}|\b[a-z][a-z0-9+]*://[^\s:/@{}<>$]+:[^\s@/{}<>$]{4,}@",
    re.IGNORECASE,
)


def tool_code_signals(trees: dict[str, ast.Module | None]) -> list[Signal]:
    """Tools against what they declare: a claimed directory left, credentials served."""
    signals = []
    for rel, tree in sorted(trees.items()):
        if tree is None or TEST_FILE.search(rel):
            continue
        served = False
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            decorator = _served_by(func)
            if decorator is None:
                continue
            declared = ast.get_docstring(func) or ""
            if isinstance(decorator, ast.Call):
                declared += "\n" + "\n".join(_strings_in(decorator))
            if CLAIMS_CONFINEMENT.search(declared) and _opens_argument(func):
                signals.append(
                    _code_signal(
                        "path_traversal",
                        f"Tool {func.name} claims to stay in one directory "
                        "but opens any path it is given",
                        rel,
                        func.lineno,
                        "READ_FILE",
                    )
                )
            secret = None if served else _served_secret(func)
            if secret is not None:
                served = True
                signals.append(
                    _code_signal(
                        "credential_exposure",
                        f"{func.name} hands stored credentials to the model",
                        rel,
                        secret,
                        "READ_SECRET",
                    )
                )
    return signals


def skill_confinement_signals(files: list[Source], trees: dict[str, ast.Module | None]) -> list:
    """A skill that says it keeps to one directory, whose script joins a name it is given
    to a literal one and opens it unchecked."""
    claims = any(s.base.lower() == "skill.md" and CLAIMS_CONFINEMENT.search(s.text) for s in files)
    for rel, tree in sorted(trees.items()) if claims else ():
        if tree is None or TEST_FILE.search(rel):
            continue
        for func in ast.walk(tree):
            if isinstance(func, ast.FunctionDef) and _fixed_base(func) and _opens_argument(func):
                title = f"{func.name} claims one directory but opens any path it is given"
                return [_code_signal("path_traversal", title, rel, func.lineno, "READ_FILE")]
    return []


def _fixed_base(func: ast.FunctionDef) -> bool:
    """A path joined of a literal dir and a parameter."""
    params = {a.arg for a in func.args.args}
    for node in ast.walk(func):
        joined = isinstance(node, ast.Call) and _dotted(node.func).endswith("path.join")
        parts = node.args if joined else node.values if isinstance(node, ast.JoinedStr) else []
        head = str(getattr(parts[0], "value", "") if parts else "")
        names = {n.id for p in parts[1:] for n in ast.walk(p) if isinstance(n, ast.Name)}
        if re.match(r"[/~.]|\w+/", head) and names & params:
            return True
    return False


def _served_by(func: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _dotted(target).rsplit(".", 1)[-1] in ("tool", "resource", "prompt"):
            return decorator
    return None


def _opens_argument(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    params = {a.arg for a in func.args.args + func.args.kwonlyargs} - {"self", "cls", "ctx"}
    tracker = PyTaint("", set(), extra_tainted=params)
    tracker.run_function(func)
    return any(v.cwe == "CWE-22" for v in tracker.findings)


def _served_secret(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """A literal credential in a tool, or a stored one formatted into the text it returns."""
    returned = {
        n.value.id
        for n in ast.walk(func)
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
    }
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and SERVED_SECRET.search(node.value)
        ):
            return node.lineno
        value = node.value if isinstance(node, ast.Return | ast.Assign) else None
        if isinstance(node, ast.Assign) and not any(
            isinstance(t, ast.Name) and t.id in returned for t in node.targets
        ):
            continue
        if isinstance(value, ast.JoinedStr) and any(
            isinstance(part, ast.FormattedValue)
            and CREDENTIAL_FIELD.search(ast.unparse(part.value))
            for part in value.values
        ):
            return node.lineno
    return None


CREDENTIAL_FIELD = re.compile(
    r"api_?key|access_?token|refresh_?token|password|passwd|secret|private_?key", re.I
)


def _code_signal(category: str, title: str, rel: str, line: int, capability: str) -> Signal:
    return act(category, "HIGH", title, rel, line, 3.0, capability)

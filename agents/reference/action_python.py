"""Action plane, Python: evasive gates, obfuscated exec and import-time execution."""

import ast
import re
from collections.abc import Iterator

from .facts import CI_VARS, DECODE_CALLS, Event, Gate

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


# exec reached through the builtins module hides the call from a plain `exec(` search.
BUILTINS_PREFIX = re.compile(r"^(?:__builtins__|builtins|__import__\(\))\.")
# Loading a pickle or code object runs code as surely as exec does.
DESERIALISERS = frozenset({"pickle.loads", "marshal.loads", "dill.loads", "_pickle.loads"})
RUNS_CODE = frozenset({"exec", "eval", "compile"}) | DESERIALISERS
OBFUSCATED_SHELL = re.compile(r"(?:^|\.)(?:system|popen|Popen|run|call|check_output)$")


def _python_obfuscation(tree: ast.Module) -> list[Event]:
    """exec/eval/compile of decoded data or of data fetched from the network."""
    events = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = BUILTINS_PREFIX.sub("", _call_name(node))
        if name not in RUNS_CODE and not OBFUSCATED_SHELL.search(name):
            continue
        if not node.args or isinstance(node.args[0], ast.Constant):
            continue
        inner = list(ast.walk(node.args[0]))
        names = {_call_name(c).rsplit(".", 1)[-1] for c in inner if isinstance(c, ast.Call)}
        if any(isinstance(n, ast.Slice) and n.step is not None for n in inner):
            names.add("reversed")  # text[::-1]: code stored backwards
        text = ast.unparse(node)[:200]
        is_exec = name in RUNS_CODE
        if name in DESERIALISERS and not any(
            isinstance(n, ast.Constant) and isinstance(n.value, str | bytes) and len(n.value) >= 16
            for n in inner
        ):
            continue  # a library restoring data it was handed, not a payload it carries
        # A string rebuilt from character codes is code nobody was meant to read.
        decoders = (
            DECODE_CALLS | {"chr", "reversed"} if is_exec else DECODE_CALLS - {"decode", "loads"}
        )
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

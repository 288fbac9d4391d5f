"""Action plane, JavaScript/TypeScript: evasive gates."""

import re

from .facts import CI_VARS, Gate

# ---- JS gates


JS_GATE = re.compile(r"\bif\s*\((.*)")


def _js_gates(code: list[tuple[int, str]]) -> list[Gate]:
    gates = []
    for index, (number, line) in enumerate(code):
        match = JS_GATE.search(line)
        if not match:
            continue
        test = match.group(1)
        kind, label = "", ""
        if re.search(r"Date\.now\(\)|new Date\(|getFullYear|getTime\(\)", test) and re.search(
            r"[<>]", test
        ):
            year = re.search(r"\b(20[2-9]\d)\b", test)
            kind, label = "date", (f"a {year.group(1)} date check" if year else "a date check")
        elif re.search(r"process\.env(?:\.|\[[\"'])(?:" + "|".join(CI_VARS) + r")\b", test):
            kind, label = "env", "CI"
        elif "process.argv" in test:
            flag = re.search(r"[\"'](--?[\w-]+)[\"']", test)
            kind, label = "argv", flag.group(1) if flag else "a command-line flag"
        if kind:
            gates.append(Gate(kind, number, [(number, _block_end(code, index))], label))
    return gates


def _block_end(code: list[tuple[int, str]], index: int) -> int:
    """Line where the brace block opened at code[index] closes (approximate)."""
    depth = 0
    opened = False
    for number, line in code[index : index + 400]:
        for char in line:
            if char == "{":
                depth += 1
                opened = True
            elif char == "}":
                depth -= 1
        if opened and depth <= 0:
            return number
    return code[min(index + 400, len(code) - 1)][0]

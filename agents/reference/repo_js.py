"""Repositories, JavaScript/TypeScript: line-level taint to sinks, and secrets."""

import re

from .common import Source, _code_lines
from .repo_python import KNOWN_TOKENS, Vuln, _secret_vuln, looks_like_secret

JS_SOURCE = re.compile(
    r"\breq(?:uest)?\.(?:query|body|params|headers|cookies)\b|\blocation\.(?:search|hash|href)\b|"
    r"\bdocument\.(?:URL|cookie|referrer)\b|\bwindow\.name\b|\bprocess\.argv\b|\bctx\.(?:query|"
    r"request\.body|params)\b"
)
JS_ASSIGN = re.compile(r"(?:const|let|var)\s+(\{[^}]*\}|\[[^\]]*\]|[\w$]+)\s*=\s*(.+)")
JS_SANITISER = re.compile(
    r"\b(?:escape\w*|encodeURIComponent|sanitize\w*|DOMPurify\.sanitize|parseInt|parseFloat|"
    r"Number|path\.basename|basename|validator\.\w+)\s*\("
)
# A value looked up in a constant table by request data is one of the table's values.
TABLE_LOOKUP = re.compile(r"\s*[A-Z][A-Z0-9_]*(?:\[[^\]]*\]|\.get\([^)]*\))\s*(?:\?\?|\|\||;|$)")
JS_GUARD = re.compile(r"\bif\s*\(")
JS_GUARD_CHECK = re.compile(r"\.has\(|\.includes\(|startsWith\(|===|!==|\.test\(|\.match\(")
JS_SQL = re.compile(r"\.(?:query|execute|raw|run|all|get)\s*\(")
JS_CMD = re.compile(r"(?<![\w.])(?:exec|execSync)\s*\(|child_process\.exec\(|shell:\s*true")
JS_PATH = re.compile(
    r"\b(?:readFile|readFileSync|createReadStream|writeFile|writeFileSync|unlink|unlinkSync|"
    r"sendFile|download|readdir|appendFile)\s*\("
)
JS_SSRF = re.compile(
    r"\baxios(?:\.(?:get|post|put|delete|request|head|patch))?\s*\(|\bfetch\s*\(|\bgot(?:\.\w+)?\s*\(|"
    r"\bneedle\s*\(|\bhttps?\.(?:get|request)\s*\(|\brequest(?:\.(?:get|post))?\s*\(|"
    r"superagent\.\w+\s*\("
)
JS_HTML = re.compile(r"\bres\.(?:send|write|end)\s*\(")
JS_DOM = re.compile(
    r"\.(?:innerHTML|outerHTML)\s*\+?=|document\.write(?:ln)?\s*\(|insertAdjacentHTML\s*\("
)
JS_EVAL = re.compile(r"(?<![\w.])eval\s*\(|new\s+Function\s*\(|setTimeout\s*\(\s*[`\"']")
JS_REDIRECT = re.compile(r"\bres\.redirect\s*\(|location\.(?:href|assign|replace)\s*(?:=|\()")
JS_SECRET = re.compile(r"(?:const|let|var)?\s*([\w$]+)\s*[:=]\s*[\"'`]([^\"'`\s]{8,})[\"'`]")


class JsTaint:
    """Line-level taint for one JS/TS file: identifiers fed by request data."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.tainted: set[str] = set()
        self.built: set[str] = set()  # tainted identifiers that hold built strings
        self.findings: list[Vuln] = []
        # Browser code cannot forge server-side requests or open server files.
        self.browser = bool(re.search(r"\bdocument\.|\bwindow\.", source.text)) and not re.search(
            r"require\(\s*[\"'](?:express|http|fs|koa|fastify)", source.text
        )

    def mentions(self, text: str) -> bool:
        if JS_SOURCE.search(text):
            return True
        return any(re.search(rf"(?<![\w$.]){re.escape(n)}\b", text) for n in self.tainted)

    def run(self) -> list[Vuln]:
        code = _code_lines(self.source, None)
        by_line = dict(code)
        for number, line in code:
            self._assignment(line)
            self._guard(number, line, by_line)
            self._sinks(number, line)
        return self.findings

    def _assignment(self, line: str) -> None:
        match = JS_ASSIGN.search(line)
        if not match:
            return
        names = re.findall(r"[\w$]+", match.group(1))
        value = match.group(2)
        if (
            self.mentions(value)
            and not JS_SANITISER.search(value)
            and not TABLE_LOOKUP.match(value)
        ):
            self.tainted.update(names)
            if "`" in value or "+" in value:
                self.built.update(names)
        else:
            self.tainted.difference_update(names)
            self.built.difference_update(names)

    def _guard(self, number: int, line: str, by_line: dict[int, str]) -> None:
        if not (JS_GUARD.search(line) and JS_GUARD_CHECK.search(line)):
            return
        window = " ".join(by_line.get(n, "") for n in range(number, number + 4))
        if not re.search(r"\breturn\b|\bthrow\b|\bnext\(", window):
            return
        for name in list(self.tainted):
            if re.search(rf"(?<![\w$]){re.escape(name)}\b", line):
                self.tainted.discard(name)
                self.built.discard(name)

    def _interpolated(self, line: str) -> bool:
        """Tainted data spliced into a string by a template literal or concatenation."""
        for match in re.finditer(r"\$\{([^}]*)\}", line):
            inner = match.group(1)
            if self.mentions(inner) and not JS_SANITISER.search(inner):
                return True
        for match in re.finditer(r"[\"'`]\s*\+\s*([^;,)]+)|([\w$.\[\]]+)\s*\+\s*[\"'`]", line):
            part = match.group(1) or match.group(2) or ""
            if self.mentions(part) and not JS_SANITISER.search(part):
                return True
        return any(re.search(rf"\(\s*{re.escape(n)}\s*[,)]", line) for n in self.built)

    def _add(self, number: int, cwe: str, title: str, description: str, *extra: str) -> None:
        if any(v.cwe == cwe and abs(v.line - number) <= 2 for v in self.findings):
            return
        self.findings.append(Vuln(self.source.rel, number, cwe, title, description, "HIGH", extra))

    def _sinks(self, number: int, line: str) -> None:
        # Each sink is judged on the text from the sink call onwards, so a tainted
        # value elsewhere on the line (e.g. in a callback) does not implicate it.
        sql = self._at(JS_SQL, line)
        if (
            sql
            and self._interpolated(sql)
            and re.search(r"(?i)select|insert|update|delete|where|from|sql|query", line)
        ):
            self._add(
                number,
                "CWE-89",
                "SQL injection",
                "A request parameter is concatenated into the SQL string.",
            )
        command = self._at(JS_CMD, line)
        if command and (self._interpolated(command) or self._first_arg_tainted(command)):
            self._add(
                number,
                "CWE-78",
                "OS command injection",
                "A request parameter is interpolated into a shell command run by exec.",
            )
        path = self._at(JS_PATH, line)
        if (
            path
            and not self.browser
            and self._first_arg_tainted(path)
            and not re.search(r"\broot\s*:", path)
        ):
            self._add(
                number,
                "CWE-22",
                "Path traversal",
                "A request parameter is joined into a file path without containment.",
            )
        fetch = self._at(JS_SSRF, line)
        if fetch and not self.browser and self._first_arg_tainted(fetch):
            self._add(
                number,
                "CWE-918",
                "Server-side request forgery",
                "A URL from the request is fetched server-side without an allow-list.",
            )
        html = self._at(JS_HTML, line)
        if html and ((self._interpolated(html) and "<" in html) or self._first_arg_tainted(html)):
            self._add(
                number,
                "CWE-79",
                "Reflected cross-site scripting",
                "A request parameter is written into HTML unescaped.",
            )
        dom = self._at(JS_DOM, line)
        if dom and re.search(r"\$\{|[\"'`]\s*\+|\+\s*[\"'`]", dom) and not JS_SANITISER.search(dom):
            self._add(
                number,
                "CWE-79",
                "DOM cross-site scripting",
                "Untrusted data is assigned to innerHTML without escaping.",
            )
        code = self._at(JS_EVAL, line)
        if code and self.mentions(code):
            self._add(
                number,
                "CWE-95",
                "Code injection via eval",
                "Request data reaches eval or the Function constructor.",
                "CWE-94",
            )
        redirect = self._at(JS_REDIRECT, line)
        if redirect and self._first_arg_tainted(redirect):
            self._add(
                number,
                "CWE-601",
                "Open redirect",
                "The response redirects to a URL taken from the request.",
            )

    @staticmethod
    def _at(pattern: re.Pattern[str], line: str) -> str:
        match = pattern.search(line)
        return line[match.start() :] if match else ""

    def _first_arg_tainted(self, text: str) -> bool:
        """The first argument of the call opening `text` (balanced parentheses) is tainted."""
        opened = text.find("(")
        equals = text.find("=")
        if equals != -1 and (opened == -1 or equals < opened):
            argument = text[equals + 1 :]  # an assignment sink such as location.href = x
        elif opened == -1:
            return False
        else:
            argument = _first_argument(text[opened + 1 :])
        return self.mentions(argument) and not JS_SANITISER.search(argument)


def _first_argument(text: str) -> str:
    depth = 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return text[:index]
            depth -= 1
        elif char == "," and depth == 0:
            return text[:index]
    return text


MERGE_LOOP = re.compile(
    r"for\s*\(\s*(?:const|let|var)\s+(\w+)\s+(?:of\s+Object\.keys\(|in\s+)(\w+)"
)
POLLUTION_GUARD = re.compile(
    r"__proto__|hasOwnProperty|hasOwn\(|Object\.create\(\s*null|constructor[\"']|isSafeKey|"
    r"FORBIDDEN|prototype[\"']"
)


def prototype_pollution_vulns(source: Source) -> list[Vuln]:
    """A recursive merge that copies every key of untrusted objects, `__proto__` included."""
    out = []
    lines = source.lines
    for index, line in enumerate(lines):
        loop = MERGE_LOOP.search(line)
        if not loop:
            continue
        key, src = loop.groups()
        body = lines[index : index + 15]
        function = next(
            (
                m.group(1)
                for ln in reversed(lines[max(0, index - 5) : index + 1])
                for m in [re.search(r"function\s+(\w+)|(?:const|let)\s+(\w+)\s*=", ln)]
                if m
            ),
            None,
        )
        recursion = next(
            (
                i
                for i, ln in enumerate(body)
                if function
                and re.search(rf"\b{re.escape(function)}\s*\([^)]*\[{re.escape(key)}\]", ln)
            ),
            None,
        )
        guarded = any(POLLUTION_GUARD.search(ln) for ln in lines[max(0, index - 8) : index + 15])
        if recursion is not None and not guarded:
            out.append(
                Vuln(
                    source.rel,
                    index + recursion + 1,
                    "CWE-1321",
                    "Prototype pollution in recursive merge",
                    f"Every key of {src}, __proto__ included, is merged into the target.",
                )
            )
    return out[:4]


def js_secret_vulns(source: Source) -> list[Vuln]:
    out = []
    for number, line in _code_lines(source, None):
        for match in JS_SECRET.finditer(line):
            if looks_like_secret(match.group(1), match.group(2)):
                out.append(_secret_vuln(source.rel, number, match.group(1)))
                break
        else:
            token = KNOWN_TOKENS.search(line)
            if token and "EXAMPLE" not in line.upper():
                out.append(_secret_vuln(source.rel, number, ""))
    return out


PATH_STEP = re.compile(r"\b(\w+)\s*=\s*\1\[\s*(\w+)\s*\]\s*;?")
PROTO_CHECK = re.compile(r"[\"']__proto__[\"']")
CONSTRUCTOR_CHECK = re.compile(r"[\"']constructor[\"']|[\"']prototype[\"']")
SAFE_CONTAINER = re.compile(
    r"Object\.create\(\s*null\s*\)|hasOwnProperty|new Map\b|Object\.hasOwn\b"
)


def path_setter_vulns(source: Source) -> list[Vuln]:
    """A key-path setter (`o = o[key]`) refusing `__proto__` but not `constructor`."""
    text = source.text
    if CONSTRUCTOR_CHECK.search(text) and PROTO_CHECK.search(text):
        return []
    lines = source.lines
    for index, line in enumerate(lines):
        step = PATH_STEP.search(line)
        if not step:
            continue
        holder, key = step.groups()
        window = range(max(0, index - 8), min(len(lines), index + 20))
        creates = any(re.search(rf"\b{holder}\[\s*{key}\s*\]\s*=[^=]", lines[i]) for i in window)
        if not creates or any(SAFE_CONTAINER.search(lines[i]) for i in window):
            continue
        checks = [i for i in window if PROTO_CHECK.search(lines[i])][:2]
        where = checks or [
            next(i for i in window if re.search(rf"\[\s*{key}\s*\]\s*=[^=]", lines[i]))
        ]
        what = "refuses only __proto__" if checks else "refuses no key"
        return [
            Vuln(
                source.rel,
                i + 1,
                "CWE-1321",
                "Prototype pollution in a key-path setter",
                f"The setter walks caller-supplied keys into nested objects and {what}, so "
                "constructor.prototype reaches Object.prototype.",
            )
            for i in where
        ]
    return []


JS_FUNCTION = re.compile(
    r"\bfunction\s*[\w$]*\s*\(([^)]*)\)\s*\{|(?:^|[=(,:]\s*)\(([^()]*)\)\s*=>\s*\{"
)
JS_CODE_SINK = re.compile(r"(?<![\w.$])eval\s*\(|\bnew\s+Function\s*\(|\bFunction\s*\(")
JS_SHELL_SINK = re.compile(r"(?<![\w.$])(?:exec|execSync)\s*\(|child_process\.exec(?:Sync)?\s*\(")
JS_LOCAL = re.compile(r"(?:(?:const|let|var)\s+)?([\w$]+)\s*(?:\+?=)(?!=)\s*(.+)")


def library_argument_js_vulns(source: Source) -> list[Vuln]:
    """A function parameter (or a string built from one) that becomes code or a shell
    command (a logger compiling its format string)."""
    lines = source.lines
    out: list[Vuln] = []
    for index, line in enumerate(lines):
        header = JS_FUNCTION.search(line)
        if header is None:
            continue
        params = re.findall(r"[A-Za-z_$][\w$]*", header.group(1) or header.group(2) or "")
        tainted = {p for p in params if p not in ("req", "res", "next", "err", "cb", "callback")}
        if not tainted:
            continue
        for number, text in _function_body(lines, index):
            local = JS_LOCAL.match(text.strip())
            mentions = any(re.search(rf"(?<![\w$.]){re.escape(n)}\b", text) for n in tainted)
            if local and mentions and not JS_SANITISER.search(local.group(2)):
                tainted.add(local.group(1))
            for sink, cwe, title in (
                (JS_CODE_SINK, "CWE-94", "Code injection from a library argument"),
                (JS_SHELL_SINK, "CWE-78", "OS command injection from a library argument"),
            ):
                call = sink.search(text)
                if call and any(
                    re.search(rf"(?<![\w$.]){re.escape(n)}\b", text[call.end() :]) for n in tainted
                ):
                    out.append(
                        Vuln(
                            source.rel,
                            number,
                            cwe,
                            title,
                            "An argument of the library's function reaches code or a shell.",
                            "HIGH",
                            ("CWE-95",) if cwe == "CWE-94" else (),
                            f"js:{index + 1}",
                        )
                    )
    unique = {(v.line, v.cwe): v for v in out}
    return sorted(unique.values(), key=lambda v: v.line)[:4]


def _function_body(lines: list[str], start: int) -> list[tuple[int, str]]:
    """(line number, text) of a function's body, by counting braces."""
    depth = 0
    body = []
    for index in range(start, min(len(lines), start + 200)):
        text = lines[index]
        depth += text.count("{") - text.count("}")
        if index > start:
            body.append((index + 1, text))
        if depth <= 0 and index > start:
            break
    return body

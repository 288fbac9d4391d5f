"""Repositories, Go: line-level taint from request data to sinks, secrets and open admin routes.

Go handlers read the request through a handful of calls (net/http, gin, echo, chi, gorilla);
values flow by `:=`/`=` assignment. A value stops being tainted when a guard that returns
checks it, or when it passes a cleaning call (`filepath.Base`, `strconv.Atoi`, a table lookup).
"""

import re

from .common import Source, _code_lines
from .repo_js import _first_argument
from .repo_python import Vuln, _secret_vuln, looks_like_secret

GO_SOURCE = re.compile(
    r"\br\.(?:URL\.Query\(\)|FormValue|PostFormValue|Header\.Get|URL\.Path|Body|PathValue|"
    r"Form\.Get|URL\.RawQuery)(?!\w)|\bc\.(?:Query|DefaultQuery|Param|PostForm|DefaultPostForm|"
    r"GetHeader|QueryParam|FormValue)\b|\bmux\.Vars\(|\bchi\.URLParam\(|\bos\.Args\b|"
    r"\breq\.(?:URL|Form|Header)\b|\brequest\.(?:URL|Form|Header)\b"
)
GO_ASSIGN = re.compile(r"^\s*(?:var\s+)?([\w, ]+?)\s*(?::=|=)\s*(.+)$")
GO_CLEAN = re.compile(
    r"\bfilepath\.Base\(|\bpath\.Base\(|\bstrconv\.(?:Atoi|ParseInt|ParseUint|ParseBool|"
    r"ParseFloat|Quote)\(|\burl\.QueryEscape\(|\bhtml\.EscapeString\(|\btemplate\.HTMLEscapeString\("
)
GO_TABLE = re.compile(r"^\s*[A-Za-z_]\w*\[[^\]]+\]\s*$")
GO_GUARD = re.compile(r"^\s*if\b")
GO_GUARD_CHECK = re.compile(
    r"HasPrefix|MatchString|Match\(|==|!=|\bok\b|\[[^\]]+\]|Contains\(|IsAbs|IsLocal|Hostname"
)
GO_SQL = re.compile(r"\.(?:Query|QueryRow|Exec|QueryContext|QueryRowContext|ExecContext|Raw)\(")
GO_SHELL = re.compile(r"exec\.Command(?:Context)?\((?:ctx,\s*)?\"(?:/bin/)?(?:ba|z)?sh\",\s*\"-c\"")
GO_EXEC = re.compile(r"exec\.Command(?:Context)?\(")
GO_PATH = re.compile(
    r"\b(?:os\.(?:ReadFile|Open|OpenFile|Create|Remove|RemoveAll|WriteFile)|ioutil\.ReadFile|"
    r"http\.ServeFile|c\.File|c\.FileAttachment)\("
)
GO_SSRF = re.compile(
    r"\bhttp\.(?:Get|Post|Head|NewRequest(?:WithContext)?)\(|\bclient\.(?:Get|Post)\("
)
GO_HTML = re.compile(r"\btemplate\.HTML\(|\bfmt\.Fprintf?\(\s*w\s*,")
GO_REDIRECT = re.compile(r"\bhttp\.Redirect\(|\bc\.Redirect\(")
GO_SECRET = re.compile(r"\b(\w+)\s*(?::=|=)\s*\"([^\"\s]{8,})\"")
GO_DSN = re.compile(r"\"\w+://[^:\"/\s]+:([^@\"\s]{6,})@")


class GoTaint:
    """Line-level taint over one Go file."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.tainted: set[str] = set()
        self.findings: list[Vuln] = []

    def mentions(self, text: str) -> bool:
        if GO_SOURCE.search(text):
            return True
        return any(re.search(rf"(?<![\w.]){re.escape(n)}\b", text) for n in self.tainted)

    def run(self) -> list[Vuln]:
        code = _code_lines(self.source, None)
        by_line = dict(code)
        for number, line in code:
            if re.match(r"^func\b", line):
                self.tainted.clear()  # taint is per function
            self._assignment(line)
            self._guard(number, line, by_line)
            self._sinks(number, line)
        return self.findings

    def _assignment(self, line: str) -> None:
        match = GO_ASSIGN.match(line)
        if not match or line.lstrip().startswith(("if ", "for ", "return ")):
            return
        names = [n.strip() for n in match.group(1).split(",") if n.strip() not in ("", "_")]
        value = match.group(2)
        if self.mentions(value) and not GO_CLEAN.search(value) and not GO_TABLE.match(value):
            self.tainted.update(names)
        else:
            self.tainted.difference_update(names)

    def _guard(self, number: int, line: str, by_line: dict[int, str]) -> None:
        if not (GO_GUARD.match(line) and GO_GUARD_CHECK.search(line)):
            return
        window = " ".join(by_line.get(n, "") for n in range(number, number + 5))
        if not re.search(r"\breturn\b", window):
            return
        for name in list(self.tainted):
            if re.search(rf"(?<![\w.]){re.escape(name)}\b", line):
                self.tainted.discard(name)

    def _add(self, number: int, cwe: str, title: str, description: str) -> None:
        if not any(v.cwe == cwe and abs(v.line - number) <= 2 for v in self.findings):
            self.findings.append(Vuln(self.source.rel, number, cwe, title, description))

    @staticmethod
    def _at(pattern: re.Pattern[str], line: str) -> str:
        match = pattern.search(line)
        return line[match.start() :] if match else ""

    def _built(self, text: str) -> bool:
        """Tainted data formatted or concatenated into a string."""
        spliced = re.search(r"fmt\.Sprintf\(|\"\s*\+|\+\s*\"", text)
        return bool(spliced) and self.mentions(text)

    def _sinks(self, number: int, line: str) -> None:
        sql = self._at(GO_SQL, line)
        # Only the query string counts: values after it are bound parameters.
        query = _first_argument(sql[sql.find("(") + 1 :]) if sql else ""
        if re.match(r"\s*ctx\s*$", query):
            query = _first_argument(sql[sql.find(",") + 1 :])
        if query and (self._built(query) or (self.mentions(query) and '"' not in query)):
            self._add(
                number, "CWE-89", "SQL injection", "Request data is formatted into the SQL string."
            )
        shell = self._at(GO_SHELL, line)
        command = self._at(GO_EXEC, line)
        if shell and self.mentions(shell):
            self._add(
                number,
                "CWE-78",
                "OS command injection",
                "Request data is spliced into an sh -c command line.",
            )
        elif command and self.mentions(command.split(",", 1)[0]):
            self._add(
                number,
                "CWE-78",
                "OS command injection",
                "The program to run comes from the request.",
            )
        path = self._at(GO_PATH, line)
        if path and self.mentions(path):
            self._add(
                number,
                "CWE-22",
                "Path traversal",
                "A request value becomes a file path without being confined to a base directory.",
            )
        fetch = self._at(GO_SSRF, line)
        if fetch and self.mentions(fetch):
            self._add(
                number,
                "CWE-918",
                "Server-side request forgery",
                "The server fetches a URL taken from the request without an allow-list.",
            )
        html = self._at(GO_HTML, line)
        if html and self.mentions(html) and ("template.HTML" in html or "<" in html):
            self._add(
                number,
                "CWE-79",
                "Cross-site scripting",
                "Request data is written into HTML without escaping.",
            )
        redirect = self._at(GO_REDIRECT, line)
        if redirect and self.mentions(redirect):
            self._add(
                number,
                "CWE-601",
                "Open redirect",
                "The response redirects to a URL taken from the request.",
            )


def go_secret_vulns(source: Source) -> list[Vuln]:
    out = []
    for number, line in _code_lines(source, None):
        dsn = GO_DSN.search(line)
        match = GO_SECRET.search(line)
        if dsn and not re.fullmatch(r"\$\{?\w+\}?|password|changeme|\*+", dsn.group(1), re.I):
            out.append(_secret_vuln(source.rel, number, "a connection string"))
        elif match and looks_like_secret(match.group(1), match.group(2)):
            out.append(_secret_vuln(source.rel, number, match.group(1)))
    return out[:8]


def audit_go(source: Source) -> list[Vuln]:
    return GoTaint(source).run() + go_secret_vulns(source)

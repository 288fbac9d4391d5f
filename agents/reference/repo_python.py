"""Repositories, Python: intraprocedural taint from request data to sinks, and secrets."""

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .action_python import _call_name, _dotted, _exits_early
from .common import Source, _parse_python, _string_value, shannon_entropy, words

WEB_ATTRS = frozenset(
    words(
        "args form values json data files cookies headers get_json get_data GET POST body "
        "query_params path_params FILES COOKIES META stream query params text get_argument "
        "get_query_argument get_body_argument"
    )
)
SANITISERS = frozenset(
    words(
        "int float bool len abs round quote escape basename secure_filename ip_address "
        "ip_network UUID format_html quote_plus urlencode isdigit isalnum hexdigest sha256 md5 "
        "bleach clean sanitize literal_eval hash id type isinstance getattr"
    )
)
GUARD_CALLS = re.compile(
    r"startswith|endswith|is_relative_to|commonpath|fullmatch|match|isalnum|isdigit|isidentifier"
)
SQL_METHODS = frozenset({"execute", "executemany", "executescript", "raw", "mogrify", "extra"})
SUBPROCESS = frozenset(
    words(
        "subprocess.run subprocess.call subprocess.check_call subprocess.check_output "
        "subprocess.Popen run call check_output check_call Popen"
    )
)
SHELL_CALLS = frozenset(
    {
        "os.system",
        "os.popen",
        "commands.getoutput",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "asyncio.create_subprocess_shell",
        "popen2.popen2",
    }
)
PATH_SINKS = frozenset(
    words(
        "open io.open codecs.open send_file flask.send_file FileResponse static_file os.remove "
        "os.unlink shutil.copyfile shutil.rmtree Path"
    )
)
DESER_SINKS = frozenset(
    words(
        "pickle.loads pickle.load cPickle.loads dill.loads marshal.loads jsonpickle.decode "
        "yaml.unsafe_load shelve.open pandas.read_pickle pd.read_pickle _pickle.loads"
    )
)
SSRF_PREFIXES = ("requests.", "httpx.", "urllib.request.urlopen", "urlopen", "urllib3.", "aiohttp.")
SSRF_METHODS = frozenset(
    {"get", "post", "put", "delete", "head", "patch", "request", "urlopen", "stream", "options"}
)
REDIRECT_SINKS = frozenset(
    {"redirect", "HttpResponseRedirect", "RedirectResponse", "flask.redirect"}
)
XSS_SINKS = frozenset(
    {"render_template_string", "Markup", "mark_safe", "SafeString", "markupsafe.Markup"}
)
RESPONSE_SINKS = frozenset({"HttpResponse", "make_response", "Response", "HTMLResponse"})
UNSAFE_YAML = re.compile(
    r"Loader\s*=\s*(?:yaml\.)?(?:Unsafe)?Loader\b|Loader\s*=\s*yaml\.FullLoader"
)


@dataclass
class Vuln:
    file: str
    line: int
    cwe: str
    title: str
    description: str
    severity: str = "HIGH"
    all_cwes: tuple[str, ...] = ()
    scope: str = ""

    def as_dict(self) -> dict:
        item = {
            "file": self.file,
            "line": self.line,
            "cwe": self.cwe,
            "title": self.title,
            "description": self.description,
            "severity": self.severity,
        }
        if self.all_cwes:
            item["all_cwes"] = list(self.all_cwes)
        return item


OPTION_PARSING_CLIS = frozenset(
    {"git", "hg", "svn", "curl", "wget", "ssh", "scp", "rsync", "tar", "zip", "find", "ffmpeg"}
    | {"convert", "gpg", "openssl", "psql", "mysql", "pip", "npm", "docker", "kubectl"}
)
ROUTE_DECORATORS = frozenset(
    {"get", "post", "put", "delete", "patch", "route", "api_route", "websocket", "api_view"}
)


def _route_params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters a web framework fills from the request (FastAPI, Flask, Django)."""
    route = None
    for decorator in func.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr in ROUTE_DECORATORS
        ):
            route = decorator
    params = func.args.args + func.args.kwonlyargs
    first = params[0].arg if params else ""
    if route is None and first != "request":
        return set()
    typed = set()
    if route is not None and route.args and isinstance(route.args[0], ast.Constant):
        typed = set(re.findall(r"<(?:int|float|uuid):(\w+)>", str(route.args[0].value)))
    out = set()
    for arg in params:
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        if arg.arg in ("self", "cls", "request", "req", "db", "session") or arg.arg in typed:
            continue
        if re.fullmatch(r"int|float|bool|UUID|uuid\.UUID|Request|Session|.*Depends.*", annotation):
            continue
        out.add(arg.arg)
    return out


class PyTaint:
    """Intraprocedural taint of one function (or module body) from sources to sinks."""

    def __init__(
        self, rel: str, route_params: set[str], extra_tainted: set[str] | None = None
    ) -> None:
        self.rel = rel
        self.tainted: dict[str, frozenset[str]] = {p: frozenset({"web"}) for p in route_params}
        for name in extra_tainted or ():
            self.tainted[name] = frozenset({"arg"})
        self.derived: dict[str, set[str]] = {}
        self.findings: list[Vuln] = []
        self.scope = ""

    # ---- expressions

    def taint(self, node: ast.AST | None) -> frozenset[str]:
        if node is None:
            return frozenset()
        source = self._source_kind(node)
        if source:
            return source
        if isinstance(node, ast.Name):
            return self.tainted.get(node.id, frozenset())
        if isinstance(node, ast.Call):
            return self._call_taint(node)
        if isinstance(node, ast.Compare | ast.Lambda | ast.Constant):
            return frozenset()
        out: frozenset[str] = frozenset()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr | ast.comprehension | ast.keyword | ast.FormattedValue):
                out |= self.taint(child)
        return out

    def _source_kind(self, node: ast.AST) -> frozenset[str]:
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
            chain = _chain(node)
            for index, name in enumerate(chain):
                if name in ("request", "req") and any(c in WEB_ATTRS for c in chain[index + 1 :]):
                    return frozenset({"web"})
            text = ".".join(chain)
            if text.startswith("sys.argv"):
                return frozenset({"cli"})
            if text.startswith(("os.environ", "os.getenv")):
                return frozenset({"env"})
            if text in ("input", "raw_input") or chain[-1:] in (
                ["parse_args"],
                ["parse_known_args"],
            ):
                return frozenset({"cli"})
        return frozenset()

    def _call_taint(self, call: ast.Call) -> frozenset[str]:
        name = _call_name(call).rsplit(".", 1)[-1]
        if name in SANITISERS:
            return frozenset()
        out: frozenset[str] = frozenset()
        if isinstance(call.func, ast.Attribute):
            out |= self.taint(call.func.value)
        for arg in call.args:
            out |= self.taint(arg)
        for keyword in call.keywords:
            out |= self.taint(keyword.value)
        return out

    # ---- statements

    def run_function(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope = func.name
        self.block(func.body)

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            try:
                self.statement(stmt)
            except RecursionError:
                continue

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        self._check_sinks(stmt)
        if isinstance(stmt, ast.Assign):
            self._assign(stmt.targets, stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assign([stmt.target], stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            self._assign([stmt.target], stmt.value, keep=True)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self._assign([stmt.target], stmt.iter)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._assign([item.optional_vars], item.context_expr)
            self.block(stmt.body)
        elif isinstance(stmt, ast.If):
            self._guard(stmt)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.While):
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.block(stmt.body)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.block(handler.body)
            self.block(stmt.orelse)  # type: ignore[attr-defined]
            self.block(stmt.finalbody)  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            self._check_returned_html(stmt)

    def _assign(self, targets: list[ast.expr], value: ast.AST, keep: bool = False) -> None:
        kinds = self.taint(value)
        origins = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        for target in targets:
            for name in _target_names(target):
                if kinds:
                    self.tainted[name] = self.tainted.get(name, frozenset()) | kinds
                    self.derived[name] = origins
                elif not keep and not isinstance(target, ast.Subscript | ast.Attribute):
                    self.tainted.pop(name, None)

    def _guard(self, stmt: ast.If) -> None:
        """`if not allowed(x): return/abort` sanitises x and what x came from."""
        if not (_exits_early(stmt.body) or _aborts(stmt.body)):
            return
        test_text = ast.unparse(stmt.test)
        has_check = any(
            isinstance(n, ast.Compare)
            and any(isinstance(op, ast.In | ast.NotIn | ast.Eq | ast.NotEq) for op in n.ops)
            for n in ast.walk(stmt.test)
        ) or bool(GUARD_CALLS.search(test_text))
        if not has_check:
            return
        for node in ast.walk(stmt.test):
            if isinstance(node, ast.Name) and node.id in self.tainted:
                self._sanitise(node.id, depth=0)

    def _sanitise(self, name: str, depth: int) -> None:
        self.tainted.pop(name, None)
        if depth < 4:
            for origin in self.derived.get(name, ()):
                self._sanitise(origin, depth + 1)

    # ---- sinks

    def _check_sinks(self, stmt: ast.stmt) -> None:
        for node in _walk_shallow(stmt):
            if isinstance(node, ast.Call):
                self._sink(node)

    def _report(self, node: ast.AST, cwe: str, title: str, description: str, *extra: str) -> None:
        if any(v.cwe == cwe and v.scope == self.scope for v in self.findings):
            return  # one weakness per function: the first sink is where it happens
        self.findings.append(
            Vuln(self.rel, node.lineno, cwe, title, description, "HIGH", extra, self.scope)
        )

    def _sink(self, call: ast.Call) -> None:
        name = _call_name(call).removeprefix("builtins.")
        last = name.rsplit(".", 1)[-1]
        first = call.args[0] if call.args else None
        taint = self.taint(first)
        web = "web" in taint or "arg" in taint
        # The environment is set by the operator, not the attacker: it only counts for
        # sinks that run code outright.
        kinds = taint - {"env"}
        if name in ("eval", "exec") or name in DESER_SINKS:
            kinds = taint
        sqlalchemy_text = last == "text" and _builds_string(first)
        if (
            (last in SQL_METHODS and isinstance(call.func, ast.Attribute)) or sqlalchemy_text
        ) and kinds:
            if not isinstance(first, ast.Constant):
                self._report(
                    call,
                    "CWE-89",
                    "SQL injection",
                    "User input is formatted into an SQL query instead of bound as a parameter.",
                )
        elif name in SHELL_CALLS and kinds:
            self._report(
                call,
                "CWE-78",
                "OS command injection",
                "User input is interpolated into a shell command.",
            )
        elif name in SUBPROCESS or name.endswith(tuple("." + s for s in SUBPROCESS)):
            self._subprocess_sink(call)
        elif last == "XMLParser" and any(
            k.arg == "resolve_entities" and isinstance(k.value, ast.Constant) and k.value.value
            for k in call.keywords
        ):
            self._report(
                call,
                "CWE-611",
                "XML external entity expansion",
                "The XML parser is configured to resolve external entities.",
            )
        elif web and last in ("Template", "from_string") and not isinstance(first, ast.Constant):
            self._report(
                call,
                "CWE-94",
                "Server-side template injection",
                "Request data becomes part of a template's source, which the engine executes.",
                "CWE-1336",
            )
        elif name in ("eval", "exec") and kinds:
            cwe = "CWE-95" if name == "eval" else "CWE-94"
            self._report(
                call,
                cwe,
                "Code injection via " + name,
                f"User input reaches {name}() and runs as code.",
                "CWE-94",
                "CWE-95",
            )
        elif (name in PATH_SINKS or last in ("send_file", "FileResponse")) and web:
            self._report(
                call,
                "CWE-22",
                "Path traversal",
                "A user-supplied path is opened without confining it to a base directory.",
            )
        elif name in DESER_SINKS and kinds:
            self._report(
                call,
                "CWE-502",
                "Unsafe deserialisation",
                f"Attacker-controlled bytes reach {name}, which can execute code.",
            )
        elif (name in ("yaml.load", "yaml.load_all", "load") and name != "load") or (
            last in ("load", "load_all") and name.startswith("yaml")
        ):
            self._yaml_sink(call, kinds)
        elif web and self._is_ssrf(name, last):
            self._report(
                call,
                "CWE-918",
                "Server-side request forgery",
                "The server fetches a URL taken from the request without an allow-list.",
            )
        elif web and (name in REDIRECT_SINKS or last in ("redirect",)):
            self._report(
                call,
                "CWE-601",
                "Open redirect",
                "The response redirects to a URL taken from the request.",
            )
        elif web and (name in XSS_SINKS or last in XSS_SINKS):
            extra = ("CWE-1336", "CWE-94") if last == "render_template_string" else ()
            self._report(
                call,
                "CWE-79",
                "Cross-site scripting",
                f"Request data is rendered as HTML by {last} without escaping.",
                *extra,
            )
        elif web and last in RESPONSE_SINKS and _builds_string(first):
            self._report(
                call,
                "CWE-79",
                "Cross-site scripting",
                "Request data is written into an HTML response without escaping.",
            )

    def _is_ssrf(self, name: str, last: str) -> bool:
        if name.startswith(SSRF_PREFIXES) and last in SSRF_METHODS | {"urlopen", "Request"}:
            return True
        return last in ("urlopen",) or (
            last in ("get", "post") and re.search(r"session|client|http", name, re.I) is not None
        )

    def _subprocess_sink(self, call: ast.Call) -> None:
        first = call.args[0] if call.args else None
        shell = any(
            k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value
            for k in call.keywords
        )
        if shell and self.taint(first):
            self._report(
                call,
                "CWE-78",
                "OS command injection",
                "User input reaches a subprocess call made with shell=True.",
            )
            return
        if isinstance(first, ast.List | ast.Tuple) and len(first.elts) >= 3:
            program, flag = (_string_value(e) or "" for e in first.elts[:2])
            is_shell = program.rsplit("/", 1)[-1] in ("sh", "bash", "zsh", "dash") and flag == "-c"
            if is_shell and any(self.taint(e) for e in first.elts[2:]):
                self._report(
                    call,
                    "CWE-78",
                    "OS command injection",
                    "User input is interpolated into an sh -c command line.",
                )
                return
        if isinstance(first, ast.List | ast.Tuple) and first.elts:
            self._argument_injection(call, first.elts)

    def _argument_injection(self, call: ast.Call, elts: list[ast.expr]) -> None:
        """Request data as an argument of a CLI that parses options anywhere: a value such
        as `--upload-pack=...` becomes an option unless `--` ends the options first."""
        program = (_string_value(elts[0]) or "").rsplit("/", 1)[-1]
        if program not in OPTION_PARSING_CLIS:
            return
        for element in elts[1:]:
            if _string_value(element) == "--":
                return
            if "web" in self.taint(element):
                self._report(
                    call,
                    "CWE-88",
                    f"Argument injection into {program}",
                    f"A request value is passed to {program} where it can be read as an option.",
                )
                return

    def _yaml_sink(self, call: ast.Call, kinds: frozenset[str]) -> None:
        text = ast.unparse(call)
        if "SafeLoader" in text or "CSafeLoader" in text or "BaseLoader" in text:
            return
        loader = [k.value for k in call.keywords if k.arg == "Loader"] + call.args[1:2]
        explicit_unsafe = any(
            _dotted(node).rsplit(".", 1)[-1] in ("Loader", "UnsafeLoader", "FullLoader")
            and isinstance(node, ast.Attribute)
            for node in loader
        ) or bool(UNSAFE_YAML.search(text))
        # A loader chosen through a variable is judged only when the data is tainted.
        if kinds or not loader or explicit_unsafe:
            self._report(
                call,
                "CWE-502",
                "Unsafe YAML deserialisation",
                "yaml.load with an unsafe Loader constructs arbitrary Python objects.",
            )

    def _check_returned_html(self, stmt: ast.Return) -> None:
        value = stmt.value
        kinds = self.taint(value)
        if ("web" in kinds) and _builds_string(value) and "<" in _literal_text(value):
            self._report(
                stmt,
                "CWE-79",
                "Cross-site scripting",
                "Request data is returned inside HTML without escaping.",
            )


def _chain(node: ast.AST) -> list[str]:
    """Identifiers from root to leaf of an attribute/call/subscript chain."""
    names: list[str] = []
    depth = 0
    while depth < 50:
        depth += 1
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript | ast.Await):
            node = node.value
        else:
            break
    if isinstance(node, ast.Name):
        names.append(node.id)
    return list(reversed(names))


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Subscript | ast.Attribute):
        root = _chain(target)
        return root[:1]
    return []


def _aborts(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _call_name(node).rsplit(".", 1)[-1] in (
                "abort",
                "HTTPException",
                "HttpResponseBadRequest",
                "PermissionDenied",
            ):
                return True
            if isinstance(node, ast.Raise):
                return True
    return False


def _walk_shallow(stmt: ast.stmt) -> Iterator[ast.AST]:
    """Nodes of a statement's own expressions, not of nested blocks or functions."""
    nested = ("body", "orelse", "finalbody", "handlers")
    stack: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in nested:
            continue
        if isinstance(value, ast.AST):
            stack.append(value)
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, ast.AST))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _builds_string(node: ast.AST | None) -> bool:
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    )


def _literal_text(node: ast.AST | None) -> str:
    if node is None:
        return ""
    return " ".join(
        str(n.value)
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )


SECRET_NAME = re.compile(
    r"(?i)(secret|passw(?:or)?d|passwd|\bpwd\b|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|auth[_-]?key|client[_-]?secret|signing[_-]?key|credential)"
)
NOT_SECRET_NAME = re.compile(
    r"(?i)(_url|_uri|_path|_file|_name|_header|_env|_var|_field|_pattern|_regex|_re|_format|"
    r"_template|_prefix|_length|_len|_type|_id_name|_key_name|_param|_label|_dir)$"
)
KNOWN_TOKENS = re.compile(
    r"\bAKIA[0-9A-Z]{16}\b|\bsk_live_[0-9a-zA-Z]{16,}|\brk_live_[0-9a-zA-Z]{16,}|"
    r"\bgh[pousr]_[A-Za-z0-9]{36}\b|\bxox[baprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b|"
    r"\bglpat-[A-Za-z0-9_-]{20}\b|-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----"
)


def looks_like_secret(name: str, value: str) -> bool:
    """A literal assigned to a secret-named variable that looks like a real credential."""
    if KNOWN_TOKENS.search(value):
        return "EXAMPLE" not in value.upper()
    if not SECRET_NAME.search(name) or NOT_SECRET_NAME.search(name):
        return False
    if len(value) < 12 or " " in value or re.search(r"[\\{}()\[\]$<>]|\?P|\.\*", value):
        return False
    if re.fullmatch(r"[A-Z0-9_]+", value) or re.match(r"(?i)https?://|/|\.\./|~", value):
        return False
    if re.search(
        r"(?i)changeme|example|placeholder|your[-_]|xxxx|dummy|test|secret_key_here|\*\*\*", value
    ):
        return False
    # Real keys mix digits or cases; `__null_token_value__` is a sentinel, not a secret.
    varied = bool(re.search(r"\d", value)) or (
        bool(re.search(r"[a-z]", value)) and bool(re.search(r"[A-Z]", value)) and len(value) >= 20
    )
    return varied and shannon_entropy(value) >= 3.0


def python_secret_vulns(source: Source, tree: ast.Module) -> list[Vuln]:
    out = []
    for node in ast.walk(tree):
        pairs: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.Assign):
            pairs = [(_assign_name(t), node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(_assign_name(node.target), node.value)]
        elif isinstance(node, ast.Call):
            pairs = [(k.arg or "", k.value) for k in node.keywords]
        elif isinstance(node, ast.Dict):
            pairs = [
                (_string_value(k) or "", v)
                for k, v in zip(node.keys, node.values, strict=False)
                if k is not None
            ]
        for name, value in pairs:
            literal = isinstance(value, ast.Constant) and isinstance(value.value, str)
            if literal and looks_like_secret(name, value.value):  # type: ignore[attr-defined]
                out.append(_secret_vuln(source.rel, value.lineno, name))
    return out


def _assign_name(target: ast.AST) -> str:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript):
        return _string_value(target.slice) or ""
    return ""


def _secret_vuln(rel: str, line: int, name: str) -> Vuln:
    return Vuln(
        rel,
        line,
        "CWE-798",
        f"Hard-coded secret in {name}" if name else "Hard-coded secret",
        "A credential or signing key is committed in source code.",
        "HIGH",
        ("CWE-259", "CWE-321"),
        scope=f"secret:{line}",
    )


def audit_python(source: Source) -> list[Vuln]:
    tree = _parse_python(source.text)
    if tree is None:
        return []
    vulns: list[Vuln] = []
    module = PyTaint(source.rel, set())
    module.scope = "<module>"
    module.block(
        [s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    )
    vulns += module.findings
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            tracker = PyTaint(source.rel, _route_params(node))
            tracker.run_function(node)
            vulns += tracker.findings
    vulns += python_secret_vulns(source, tree)
    vulns += unauthenticated_routes(source, tree)
    vulns += library_argument_vulns(source, tree)
    return vulns


LIBRARY_HARM = {
    "CWE-78": (
        "OS command injection",
        "An argument of the library's function reaches a shell command.",
    ),
    "CWE-94": ("Code injection via exec", "An argument of the library's function runs as code."),
    "CWE-95": ("Code injection via eval", "An argument of the library's function is evaluated."),
    "CWE-89": ("SQL injection", "An argument of the library's function is formatted into SQL."),
}


def library_argument_vulns(source: Source, tree: ast.Module) -> list[Vuln]:
    """A library's callers' arguments (and its objects' attributes) reaching eval, a
    shell or built SQL."""
    out = []
    for cwe, line, scope in _argument_sinks(tree, with_self=True):
        title, description = LIBRARY_HARM[cwe]
        extra = ("CWE-94", "CWE-95") if cwe in ("CWE-94", "CWE-95") else ()
        out.append(Vuln(source.rel, line, cwe, title, description, "HIGH", extra, scope))
    return out


PUBLIC_BIND = re.compile(r"host\s*=\s*[\"'](?:0\.0\.0\.0|::)[\"']|--host[\"',\s]+0\.0\.0\.0")
PRIVILEGED_PATH = re.compile(r"admin|debug|exec|shell|console|internal|manage|eval|/run\b|/cmd")
AUTH_HINT = re.compile(
    r"login_required|permission|Depends|auth|token|api_key|apikey|current_user|"
    r"is_authenticated|HTTPBearer|Security\(|signature|verify",
    re.IGNORECASE,
)
RUNS_THINGS = ("subprocess.", "os.system", "os.popen", "os.exec", "eval", "exec", "pickle.loads")


def unauthenticated_routes(source: Source, tree: ast.Module) -> list[Vuln]:
    """A route that runs commands or code, reachable without any authentication check, on a
    server bound to every interface."""
    if not PUBLIC_BIND.search(source.text):
        return []
    out = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        paths = [
            str(d.args[0].value)
            for d in func.decorator_list
            if isinstance(d, ast.Call)
            and d.args
            and isinstance(d.args[0], ast.Constant)
            and isinstance(d.args[0].value, str)
        ]
        if not any(PRIVILEGED_PATH.search(p) for p in paths):
            continue
        if AUTH_HINT.search(ast.unparse(func)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name.startswith(RUNS_THINGS) and name not in ("evaluate", "execute"):
                    out.append(
                        Vuln(
                            source.rel,
                            node.lineno,
                            "CWE-306",
                            "Unauthenticated privileged endpoint",
                            f"{paths[0]} runs commands without authentication on a public bind.",
                            "CRIT",
                            ("CWE-78", "CWE-284"),
                        )
                    )
                    break
    return out


def _shell_injection_lines(tree: ast.Module | None) -> set[int]:
    """Lines where a function parameter flows into a shell command string."""
    return {line for cwe, line in argument_injections(tree) if cwe == "CWE-78"}


# What a caller's argument may reach in any function: a shell, the interpreter, or an SQL
# statement built around it. A path it names is not among them: file and repository
# tools are handed paths by design.
ARGUMENT_SINKS = frozenset({"CWE-78", "CWE-94", "CWE-95", "CWE-89"})


def argument_injections(tree: ast.Module | None) -> list[tuple[str, int]]:
    """(CWE, line) where a function's parameter flows into a dangerous sink."""
    return sorted({(cwe, line) for cwe, line, _ in _argument_sinks(tree, with_self=False)})


def _argument_sinks(tree: ast.Module | None, with_self: bool) -> list[tuple[str, int, str]]:
    """(CWE, line, function) of each parameter reaching a sink of ARGUMENT_SINKS;
    `with_self` counts an object's attributes as its constructor's arguments."""
    if tree is None:
        return []
    found = []
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            params = {a.arg for a in func.args.args + func.args.kwonlyargs} - {"cls"}
            params -= {"ctx", "context"} | (set() if with_self else {"self"})
            tracker = PyTaint("", set(), extra_tainted=params)
            tracker.run_function(func)
            for vuln in tracker.findings:
                if vuln.cwe in ARGUMENT_SINKS and (
                    vuln.cwe != "CWE-89" or _built_sql(func, vuln.line)
                ):
                    found.append((vuln.cwe, vuln.line, func.name))
    if not with_self:
        # A script's own top level: what its command line or its reader types reaches.
        script = PyTaint("", set())
        script.scope = "<module>"
        script.block([s for s in tree.body if not isinstance(s, DEFINITIONS)])
        found += [
            (v.cwe, v.line, "<module>")
            for v in script.findings
            if v.cwe in ARGUMENT_SINKS and (v.cwe != "CWE-89" or _built_sql(tree, v.line))
        ]
    return found


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _built_sql(func: ast.AST, line: int) -> bool:
    """The statement run on `line` is a string built in the function."""
    built = {
        name
        for node in ast.walk(func)
        if isinstance(node, ast.Assign) and _builds_string(node.value)
        for target in node.targets
        for name in _target_names(target)
    }
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and getattr(node, "lineno", 0) == line and node.args:
            first = node.args[0]
            if _builds_string(first) or (isinstance(first, ast.Name) and first.id in built):
                return True
    return False

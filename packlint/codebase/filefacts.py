"""Per-file facts: what one Python file imports, which environment variables it reads, how it edits
`sys.path` — read with `ast`, cached by the file's content hash (so an unchanged file is never parsed
again, wherever it lives).

Also the shared parse helper: a file that does not parse (newer syntax than this Python, not UTF-8)
gives `None` and a reason, never an exception.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from typing import Any, overload

from packlint.caches import run_memo
from packlint.codebase.model import EnvRead

_ENVISH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# `get_env("NAME", ...)`: a possible call of an env-reading wrapper (matched to wrappers later), found by its
# parenthesis (candidate_calls: the pattern with its name in front, `\b([A-Za-z_]\w*)\(...`, tried at every word
# of a file and was 20x slower)
_CANDIDATE_ARG = re.compile(r"\(\s*[rRuU]?['\"]([A-Z][A-Z0-9_]+)['\"]")


class SourceFile:
    """One file's bytes, content hash and (parsed on demand) syntax tree."""

    __slots__ = ("path", "data", "digest", "_tree", "error", "unread")

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self.digest = hashlib.sha1(data).hexdigest()
        self._tree: ast.Module | None = None
        self.error: str | None = None
        self.unread: str | None = None  # why the file was not read (its facts are unknown)

    def fresh(self) -> SourceFile:
        """A copy with the same bytes and digest, without the syntax tree (parsed again on demand)."""
        copy = SourceFile.__new__(SourceFile)
        copy.path, copy.data, copy.digest, copy._tree = self.path, self.data, self.digest, None
        copy.error, copy.unread = self.error, self.unread
        return copy

    def tree(self) -> ast.Module | None:
        if self._tree is None and self.error is None:
            from packlint.caches import IN_RUN

            key = (self.path, self.digest)
            hit = _RUN_TREES.get(key) if IN_RUN[0] else None
            if hit is not None:
                self._tree, self.error = hit
                return self._tree
            self._parse()
            if not _RUN_TREES:
                _RUN_TREE_BYTES[0] = 0  # (a new run: caches.clear_run_memos emptied the memo)
            if IN_RUN[0] and _RUN_TREE_BYTES[0] + len(self.data) <= MAX_RUN_TREE_BYTES:
                _RUN_TREE_BYTES[0] += len(self.data)
                _RUN_TREES[key] = (self._tree, self.error)
        return self._tree

    def _parse(self) -> None:
        try:
            self._tree = ast.parse(self.data, filename=self.path)
        except SyntaxError as exc:
            self.error = f"does not parse with this Python: SyntaxError at line {exc.lineno}: {exc.msg}"
        except (ValueError, UnicodeDecodeError) as exc:
            self.error = f"does not parse: {exc}"
        except RecursionError:
            self.error = "nested too deeply to parse"


# (path, content digest) -> (syntax tree, parse error), for one check run (caches.run_memo): the programs of a
# tree import the same files (Megatron-LM's 17 programs: ~300 files each of one 529-file package), and each
# program's reading parsed them again. Nothing mutates a tree. Bounded by the source bytes it holds (a syntax
# tree takes ~10-20x its source).
_RUN_TREES = run_memo()
_RUN_TREE_BYTES = [0]
MAX_RUN_TREE_BYTES = 24 * 1024 * 1024


MAX_SOURCE_BYTES = 8 * 1024 * 1024  # a Python file larger than this is named, not read (R11)


def read_source(path: str) -> SourceFile | None:
    """The file's bytes through safe_io (a regular file, O_NONBLOCK + fstat, at most MAX_SOURCE_BYTES);
    None when it does not exist; a SourceFile whose `unread` says why when it exists but is not read (a
    FIFO, a device, too large): the walk then lists it as skipped, so its facts are unknown, not absent."""
    from packlint.errors import PacklintError
    from packlint.safe_io import read_bounded

    try:
        return SourceFile(path, read_bounded(path, MAX_SOURCE_BYTES, "Python file"))
    except PacklintError as exc:
        if not os.path.exists(path):
            return None
        src = SourceFile(path, b"")
        src.error = src.unread = f"not read: {exc.message}"
        return src


@overload
def unparse(node: ast.AST, limit: int = 120) -> str: ...
@overload
def unparse(node: None, limit: int = 120) -> None: ...
def unparse(node: ast.AST | None, limit: int = 120) -> str | None:
    """The source text of `node` (at most `limit` characters), made once per node: the schema reader names the
    condition of every `if` it runs, each time a function holding it runs (ast.unparse is pure Python)."""
    if node is None:
        return None
    text = node.__dict__.get("_packlint_text")
    if text is None:
        try:
            text = ast.unparse(node)
        except Exception:  # noqa: BLE001 - unparse of odd nodes: a note only
            text = "?"
        node.__dict__["_packlint_text"] = text
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------- paths


def static_path(node: ast.AST, consts: dict[str, str]) -> str | None:
    """A path expression over `__file__` evaluated to text with `__file__` kept symbolic as '@FILE@'
    (os.path.dirname/abspath/realpath/join/normpath, '+', f-strings, string constants)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return "@FILE@"
        return consts.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = static_path(node.left, consts), static_path(node.right, consts)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                s = static_path(v.value, consts)
                if s is None:
                    return None
                out.append(s)
        return "".join(out)
    if isinstance(node, ast.Call):
        fn = _dotted(node.func)
        if fn is None:
            return None
        last = fn.split(".")[-1]
        maybe_args = [static_path(a, consts) for a in node.args]
        args = [a for a in maybe_args if a is not None]
        if len(args) != len(maybe_args):
            return None
        if last in ("dirname",) and len(args) == 1:
            return f"@DIR({args[0]})"
        if last in ("abspath", "realpath", "normpath", "expanduser", "str", "resolve") and len(args) == 1:
            return args[0]
        if last == "join" and args:
            return "/".join(args)
        if fn.endswith("Path") and len(args) == 1:
            return args[0]
        if last == "getcwd":
            return "@CWD@"
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = static_path(node.value, consts)
        return None if inner is None else f"@DIR({inner})"
    return None


def concrete_path(expr: str, file: str) -> str | None:
    """Evaluate a `static_path` text for a file at `file`."""
    if "@CWD@" in expr:
        return None
    while "@DIR(" in expr:
        i = expr.rfind("@DIR(")
        depth, j = 0, i + 5
        while j < len(expr):
            if expr[j] == "(":
                depth += 1
            elif expr[j] == ")":
                if depth == 0:
                    break
                depth -= 1
            j += 1
        inner = expr[i + 5 : j].replace("@FILE@", os.path.abspath(file))
        expr = expr[:i] + os.path.dirname(os.path.normpath(inner)) + expr[j + 1 :]
    expr = expr.replace("@FILE@", os.path.abspath(file))
    if not os.path.isabs(expr):
        return None
    return os.path.normpath(expr)


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# ---------------------------------------------------------------------------------------------- facts


_ENV_CALLS = {
    "os.environ.get": "os.environ.get",
    "environ.get": "os.environ.get",
    "os.getenv": "os.getenv",
    "getenv": "os.getenv",
    "os.environ.setdefault": "os.environ.setdefault",
    "environ.setdefault": "os.environ.setdefault",
    "os.environ.pop": "os.environ.pop",
}
_ENV_OBJS = {"os.environ", "environ"}


def extract_file_facts(src: SourceFile) -> dict:
    """The JSON-able per-file facts of one file (no file path inside: they are keyed by content)."""
    tree = src.tree()
    if tree is None:
        return {"error": src.error}
    consts: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = static_path(stmt.value, consts)
            if v is not None:
                consts[stmt.targets[0].id] = v
    facts = _FactsWalk(consts)
    facts.imported = _imported_names(tree.body)
    data = src.data
    try:
        if any(k in data for k in (b"environ", b"getenv", b"path.append", b"path.insert")):
            facts.visit(tree, [])
        else:
            facts.statements(tree.body)
    except RecursionError:
        return {"error": "nested too deeply to read"}
    text = data.decode("utf-8", "replace")
    calls: list = [[fn, name, line, None, None] for fn, name, line in candidate_calls(text)]
    out: dict[str, Any] = {
        "imports": facts.imports,
        "env": facts.env,
        "calls": calls,
        "wrappers": facts.wrappers,
        "syspath": facts.syspath,
    }
    strings = {
        t.id: stmt.value.value
        for stmt in tree.body
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
        for t in stmt.targets
        if isinstance(t, ast.Name) and len(stmt.value.value) <= 200
    }
    if strings:
        out["consts"] = strings  # (another module's env read may name one: `from nemo.constants import X`)
    if facts.env_refs:
        out["env_refs"] = facts.env_refs
    return out


def candidate_calls(text: str) -> list[tuple[str, str, int]]:
    r"""(function, NAME, line) of each `function("NAME"` in the text (an upper-case string first argument): what
    `\b([A-Za-z_]\w*)\(\s*[rRuU]?['"]([A-Z][A-Z0-9_]+)['"]` finds, the function being the word right before the
    parenthesis (the whole run of word characters, which must start with an ASCII letter or `_`)."""
    out = []
    for m in _CANDIDATE_ARG.finditer(text):
        end = start = m.start()
        while start and (text[start - 1].isalnum() or text[start - 1] == "_"):  # (re's \w, back from the parenthesis)
            start -= 1
        head = text[start:end][:1]
        if head and (head == "_" or (head.isascii() and head.isalpha())):
            out.append((text[start:end], m.group(1), text.count("\n", 0, start) + 1))
    return out


def _imported_names(body: list) -> dict[str, list]:
    """Module-level `from M import N [as A]`: A -> [level, M, N]."""
    out: dict[str, list] = {}
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                if a.name != "*":
                    out[a.asname or a.name] = [stmt.level, stmt.module or "", a.name]
    return out


_LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop, ast.Constant, ast.Pass)


class _FactsWalk:
    """One walk over a file's tree, collecting its imports, env reads, env-reading wrappers and
    `sys.path` edits (a file that mentions neither only has its imports read, statement by statement)."""

    def __init__(self, consts: dict[str, str]) -> None:
        self.consts = consts  # module-level names bound to a static path or string
        self.imports: list = []
        self.env: list = []
        self.wrappers: list = []
        self.syspath: list = []
        self.imported: dict[str, list] = {}
        # env rows whose name is a constant imported from another module: [row, level, module, name]
        self.env_refs: list = []

    def ref(self, node: ast.AST) -> None:
        """Note that the env row just added reads a name imported from another module (resolved over the
        import closure: packlint.codebase.reader.Closure.env_reads)."""
        if isinstance(node, ast.Name) and node.id not in self.consts and node.id in self.imported:
            self.env_refs.append([len(self.env) - 1, *self.imported[node.id]])

    def name_of(self, node: ast.AST, line: int) -> tuple[str, bool]:
        consts = self.consts
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value, False
        if isinstance(node, ast.Name) and node.id in consts and "@" not in consts[node.id]:
            return consts[node.id], False
        if isinstance(node, ast.JoinedStr):
            head = ""
            for v in node.values:
                if isinstance(v, ast.Constant):
                    head += str(v.value)
                else:
                    break
            return head, True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, computed = self.name_of(node.left, line)
            return (left, True)
        return "", True

    def visit(self, node: ast.AST, stack: list[ast.AST]) -> None:
        if isinstance(node, _LEAVES):
            return  # (no children, nothing read: a third of a tree's nodes)
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for a in node.names:
                self.imports.append([0, a.name, [], line])
        elif isinstance(node, ast.ImportFrom):
            self.imports.append([node.level, node.module or "", [a.name for a in node.names], line])
        elif isinstance(node, ast.Call):
            fn = _dotted(node.func)
            if fn in _ENV_CALLS and node.args:
                if not self.wrapper_param(node.args[0], stack):  # a wrapper's own read: its calls are the reads
                    name, computed = self.name_of(node.args[0], line)
                    default = unparse(node.args[1], 60) if len(node.args) > 1 else None
                    self.env.append([name, computed, line, _ENV_CALLS[fn], _parse_form(stack, node), default])
                    self.ref(node.args[0])
            elif fn in ("sys.path.append", "sys.path.insert", "path.append", "path.insert") and node.args:
                arg = node.args[-1]
                p = static_path(arg, self.consts)
                if p is not None:
                    self.syspath.append(p)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _dotted(node.value) in _ENV_OBJS:
            if not self.wrapper_param(node.slice, stack):
                name, computed = self.name_of(node.slice, line)
                self.env.append([name, computed, line, "os.environ[]", _parse_form(stack, node), None])
                self.ref(node.slice)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and _dotted(node.comparators[0]) in _ENV_OBJS
        ):
            name, computed = self.name_of(node.left, line)
            self.env.append([name, computed, line, "in os.environ", None, None])
            self.ref(node.left)
        stack.append(node)
        for field in node._fields:  # (ast.iter_child_nodes, inline)
            child = getattr(node, field, None)
            if isinstance(child, ast.AST):
                self.visit(child, stack)
            elif isinstance(child, list):
                for item in child:
                    if isinstance(item, ast.AST):
                        self.visit(item, stack)
        stack.pop()

    def wrapper_param(self, arg: ast.AST, stack: list[ast.AST]) -> bool:
        """`def get_env(name, default=None): return os.environ.get(name, default)`: a wrapper (True)."""
        if not isinstance(arg, ast.Name):
            return False
        fn = next((n for n in reversed(stack) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if fn is None:
            return False
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if arg.id in params:
            self.wrappers.append([fn.name, params.index(arg.id) - (1 if params[:1] in (["self"], ["cls"]) else 0)])
            return True
        return False

    def statements(self, body: list) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports.append([0, a.name, [], node.lineno])
            elif isinstance(node, ast.ImportFrom):
                self.imports.append([node.level, node.module or "", [a.name for a in node.names], node.lineno])
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                sub = getattr(node, field, None)
                if isinstance(sub, list):
                    self.statements(sub)


def _parse_form(stack: list[ast.AST], read: ast.AST) -> str | None:
    """How a read value is used (`int(...)`, `... == "1"`), from the expressions around it."""
    outer = None
    for parent in reversed(stack):
        if isinstance(parent, (ast.Call, ast.Compare, ast.UnaryOp)) or (
            isinstance(parent, ast.Attribute) and parent.attr in ("lower", "upper", "strip", "split")
        ):
            outer = parent
            continue
        break
    if outer is None:
        return None
    text, inner = unparse(outer, 400), unparse(read, 400)
    if not text or not inner or inner not in text:
        return None
    form = text.replace(inner, "...", 1)
    return form if len(form) <= 80 else form[:77] + "..."


def env_reads_of(facts: dict, file: str, wrappers: dict[str, int]) -> list[EnvRead]:
    """The EnvReads of one file's facts, wrapper calls (`get_env('X')`) included."""
    out = [
        EnvRead(name, file, line, form, computed, parse, default)
        for name, computed, line, form, parse, default in facts.get("env", [])
    ]
    for fn, name, line, parse, default in facts.get("calls", []):
        if wrappers.get(fn) == 0:
            out.append(EnvRead(name, file, line, fn + "()", False, parse, default))
    return out


def cache_key_digest(parts: list) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()

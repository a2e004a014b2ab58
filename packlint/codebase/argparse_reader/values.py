"""The abstract values the schema reader computes (`V`), the argparse parser it builds up (`Parser`),
and a module's top-level namespace (`Module`)."""

from __future__ import annotations

import ast

from packlint.codebase.model import FlagSpec

# ---------------------------------------------------------------------------------------------- values


class V:
    """An abstract value. kind: unknown | const | func | class | module | parser | group | method | factory |
    instance | builtin. `cond`: a condition note carried by a callback chosen under an `if`."""

    __slots__ = ("kind", "value", "module", "node", "extra", "cond")

    def __init__(self, kind: str, value=None, module=None, node=None, extra=None, cond=None) -> None:
        self.kind, self.value, self.module, self.node, self.extra, self.cond = kind, value, module, node, extra, cond

    def __repr__(self) -> str:
        return f"V({self.kind}, {self.value!r})"


UNKNOWN = V("unknown")


class Parser:
    def __init__(self, origin: str, allow_abbrev: bool, conflict_handler: str, kind: str = "argparse") -> None:
        self.origin = origin
        self.allow_abbrev = allow_abbrev
        self.conflict_handler = conflict_handler
        self.flags: dict[str, FlagSpec] = {}
        self.open_reasons: list[str] = []
        self.notes: list[str] = []
        self.parsed: list[str] = []  # where parse_args/parse_known_args is called
        self.parse_conds: list[tuple[str, ...]] = []  # the conditions each of those calls runs under
        self.strict: list[str] = []  # where parse_args (unknown options are an error) is called
        self.known_reasons: list[str] = []  # parse_known_args calls
        self.file_parse_at: set[int] = set()  # which of parse_conds are those file parses
        self.file_parses = 0  # HfArgumentParser parses of a file or dict (parse_json_file...), not the command line
        self.kind = kind
        self.attrs: dict[str, V] = {}  # what an ArgumentParser subclass's __init__ stores on `self`
        self.positionals = False  # add_argument without an option string (a positional argument)
        self.positional_room = 0  # how many words the positionals take at most; -1: any number
        # parse calls given an argument list packlint cannot tell is the command line's (`parse_args(model_args)`)
        self.list_parses: list[str] = []

    def add(self, spec: FlagSpec, handler: str | None = None) -> None:
        """Add a flag as argparse does; `handler`: the conflict handler of the group it is added through
        (a group copies its parser's handler when it is created)."""
        clash = [o for o in spec.options if o in self.flags]
        if clash and (handler or self.conflict_handler) != "resolve":
            old = self.flags[clash[0]]
            if old.origin == spec.origin:
                return  # the same definition reached twice
            self.notes.append(
                f"{clash[0]} defined twice ({old.origin} and {spec.origin}); argparse raises "
                "'conflicting option string' unless conflict_handler='resolve'"
            )
            return
        for o in clash:  # resolve: the new definition takes the option strings from the old one
            del self.flags[o]
        for o in spec.options:
            self.flags[o] = spec


class Module:
    """One parsed module's top-level namespace (defs, classes, imports, simple assignments)."""

    def __init__(self, path: str, tree: ast.Module, name: str | None) -> None:
        self.path = path
        self.tree = tree
        self.name = name
        self.defs: dict[str, ast.AST] = {}
        self.imports: dict[str, tuple] = {}  # local -> ('module', name) | ('from', module, attr, level)
        self.assigns: dict[str, ast.AST] = {}
        self._collect(tree.body)

    def _collect(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[stmt.name] = stmt
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname:
                        self.imports[a.asname] = ("module", a.name)
                    else:
                        self.imports.setdefault(a.name.split(".")[0], ("module", a.name.split(".")[0]))
            elif isinstance(stmt, ast.ImportFrom):
                for a in stmt.names:
                    if a.name != "*":
                        self.imports[a.asname or a.name] = ("from", stmt.module or "", a.name, stmt.level)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if stmt.value is not None:
                    for t in targets:
                        if isinstance(t, ast.Name):
                            self.assigns[t.id] = stmt.value
            elif isinstance(stmt, ast.If):
                if not is_main_guard(stmt.test):
                    self._collect(stmt.body)
                    self._collect(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                self._collect(stmt.body)
                for h in stmt.handlers:
                    self._collect(h.body)
                self._collect(stmt.orelse)
                self._collect(stmt.finalbody)


def is_main_guard(test: ast.AST) -> bool:
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


def const_list(node: ast.List | ast.Tuple):
    out = []
    for e in node.elts:
        if not isinstance(e, ast.Constant):
            return None
        out.append(e.value)
    return out

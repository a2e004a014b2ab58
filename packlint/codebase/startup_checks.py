"""The program's own startup checks, read from its code and evaluated statically (issue 18).

Megatron checks its arguments after parsing them, on every rank, once the job has its nodes:
`validate_args(args, defaults)` (`megatron/training/arguments.py`; `megatron/arguments.py` before
core 0.6), called from `initialize_megatron` right after `parse_args`. A fork changes those checks by
editing `validate_args`, by running its own code before it, or by patching it at import time.

**Extraction** (`extract_startup`, cached with the code facts as plain JSON): the function that calls
`validate_args(ARGS, ...)` (the *caller*), the parse function that made ARGS (its statements after
`parser.parse_args()`), the caller's statements between the two, then `validate_args`' own body, as a
small statement list:

    ["assert", file, line, test, message]     assert test, message
    ["raise", file, line, message]            raise X(message)    (also exit() / sys.exit())
    ["set", file, line, attr, expr]           args.attr = expr    (expr: Python source text)
    ["local", file, line, name, expr]         name = expr
    ["havoc", file, line, attrs, why]         something the evaluator cannot model changes these
                                              attributes ("*": any of them)
    ["lhavoc", file, line, names]             local names changed in a way not modelled
    ["if", file, line, test, then, else]
    ["return", file, line]
    ["opaque", file, line, steps]             a loop / try: its checks are not judged, its assignments
                                              havoc what they assign

Calls that receive the args object (`update_use_dist_ckpt(args)`) are resolved to their definition
where it can be found (same module, or one it imports) and reduced to the attributes they assign; a
call that cannot be resolved changes every attribute. Patches of the validation or the parser
(assignments to `...arguments.validate_args`, patch registries naming it, `sys.modules` writes) are
listed: checks are then undecided.

**Evaluation** (`startup_eval.Evaluator`): three-valued, over the launch's known values. A check fires only when it
is certainly reached and its test is certainly false; anything unknown on its way (a value the script
does not settle, an assignment not modelled, a branch not decided, an early return that may have
happened) makes it undecided. Nothing here imports or runs the code it reads.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any

from packlint.caches import run_memo

# the evaluation (startup_eval.py) and its names, importable from here as before
from packlint.codebase.startup_eval import (  # noqa: F401
    Evaluator,
    _compare,
    _dotted,
    _freeze_json,
    _parse_expr,
    _short,
    _src,
    _Unknown,
    is_unknown,
    unknown,
)

STARTUP_VERSION = 1
VALIDATE_NAMES = ("validate_args",)
MAX_HELPER_DEPTH = 3
MAX_STEPS = 6000

# names whose calls never change the args object they are given (reads, prints, type checks)
_PURE_CALLS = {
    "getattr",
    "hasattr",
    "isinstance",
    "print",
    "len",
    "str",
    "int",
    "float",
    "bool",
    "repr",
    "vars",
    "type",
    "id",
    "print_rank_0",
    "warn_rank_0",
    "log_single_rank",
    "_print_args",
}


# ============================================================================================ extraction


class _Module:
    """One parsed file: its module-level functions and what its names are imported from."""

    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.tree = tree
        self.functions: dict[str, ast.FunctionDef] = {}
        self.imports: dict[str, tuple[int, str, str]] = {}  # local name -> (level, module, name)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    self.imports[a.asname or a.name] = (node.level, node.module or "", a.name)


class _Reader:
    def __init__(self, index: Any, files: list[str]) -> None:
        self.index = index
        self.files = files
        self.modules: dict[str, _Module | None] = {}
        self.havoc_memo: dict[tuple[str, str, int], Any] = {}

    def module(self, path: str) -> _Module | None:
        if path not in self.modules:
            src = self.index.source(path)
            tree = src.tree() if src is not None else None
            self.modules[path] = _Module(path, tree) if tree is not None else None
        return self.modules[path]

    def resolve(self, mod: _Module, name: str, depth: int = 0) -> tuple[_Module, ast.FunctionDef] | None:
        """The definition of function `name` as seen from `mod` (defined there or imported by name,
        re-exports by a package's `__init__` followed)."""
        if name in mod.functions:
            return mod, mod.functions[name]
        imp = mod.imports.get(name)
        if imp is None:
            return None
        level, module, orig = imp
        if level:
            base = self.index.resolve_relative(mod.path, level, module)
            path = next((c for c in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(c)), None)
        else:
            path = self.index.find(module) if module else None
        if path is None:
            return None
        target = self.module(os.path.abspath(path))
        if target is None:
            return None
        if orig not in target.functions:
            return self.resolve(target, orig, depth + 1) if depth < 3 and orig in target.imports else None
        return target, target.functions[orig]

    # ---------------------------------------------------------------- helpers called with the args object

    def assigned_by(self, mod: _Module, fn: ast.FunctionDef, pos: int | str, depth: int) -> Any:
        """The attributes of the parameter at `pos` (index or keyword name) that `fn` may assign: a
        sorted list, or "*" when it may change any of them."""
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if isinstance(pos, int):
            if pos >= len(params):
                return "*"
            pname = params[pos]
        else:
            pname = pos
        key = (mod.path, fn.name, hash(pname))
        if key in self.havoc_memo:
            return self.havoc_memo[key]
        self.havoc_memo[key] = "*"  # recursion: unknown
        out: set[str] = set()
        result: Any = None
        for node in ast.walk(fn):
            r = self._node_changes(mod, node, pname, depth)
            if r == "*":
                result = "*"
                break
            out.update(r)
        if result is None:
            result = sorted(out)
        self.havoc_memo[key] = result
        return result

    def _node_changes(self, mod: _Module, node: ast.AST, var: str, depth: int) -> Any:
        """What one node changes of `var`'s attributes ([] nothing, "*" anything)."""
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        if targets:
            out: list[str] = []
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == var:
                        out.append(sub.attr)
                    elif isinstance(sub, ast.Name) and sub.id == var and isinstance(sub.ctx, ast.Store):
                        return "*"  # the name is rebound: anything
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == var:
                return "*"  # an alias of the object
            return out
        if isinstance(node, ast.Call):
            return self.call_changes(mod, node, var, depth)
        return []

    def call_changes(self, mod: _Module, call: ast.Call, var: str, depth: int) -> Any:
        fn = _dotted(call.func)
        if fn == "setattr" and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == var:
            if len(call.args) > 1 and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
                return [call.args[1].value]
            return "*"
        # a method of the object or of one of its attributes: args.x.append(...), args.__dict__.update(...)
        if isinstance(call.func, ast.Attribute):
            root = call.func.value
            chain = []
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id == var:
                if not chain:
                    return "*"
                attr = chain[-1]
                return "*" if attr == "__dict__" else [attr]
        where: list[int | str] = []
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Name) and a.id == var:
                where.append(i)
            elif isinstance(a, ast.Starred) and any(isinstance(s, ast.Name) and s.id == var for s in ast.walk(a)):
                return "*"
        for kw in call.keywords:
            if isinstance(kw.value, ast.Name) and kw.value.id == var:
                where.append(kw.arg if kw.arg is not None else 0)
        if not where:
            return []
        if fn is not None and fn.split(".")[-1] in _PURE_CALLS:
            return []
        if fn is None or "." in fn or depth >= MAX_HELPER_DEPTH:
            return "*"
        found = self.resolve(mod, fn)
        if found is None:
            return "*"
        out: set[str] = set()
        for pos in where:
            r = self.assigned_by(found[0], found[1], pos, depth + 1)
            if r == "*":
                return "*"
            out.update(r)
        return sorted(out)

    # ---------------------------------------------------------------- statements to steps

    def steps(self, mod: _Module, body: list[ast.stmt], var: str, inline: str | None, dry: bool = False) -> list:
        out: list = []
        f = mod.path
        for st in body:
            line = st.lineno
            if isinstance(st, ast.Assert):
                out.append(["assert", f, line, _src(st.test), _msg(st.msg)])
            elif isinstance(st, ast.Raise):
                out.append(["raise", f, line, _raise_msg(st.exc)])
            elif isinstance(st, ast.Return):
                out.append(["return", f, line])
            elif isinstance(st, ast.If):
                out.append(
                    [
                        "if",
                        f,
                        line,
                        _src(st.test),
                        self.steps(mod, st.body, var, inline),
                        self.steps(mod, st.orelse, var, inline),
                    ]
                )
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith)) or (
                type(st).__name__ in ("TryStar", "Match")
            ):
                inner: list[ast.stmt] = []
                for field in ("body", "orelse", "finalbody"):
                    inner += getattr(st, field, None) or []
                for h in getattr(st, "handlers", None) or []:
                    inner += h.body
                for c in getattr(st, "cases", None) or []:
                    inner += c.body
                sub = self.steps(mod, inner, var, inline)
                if isinstance(st, (ast.With, ast.AsyncWith)):
                    out.extend(sub)  # a with block runs its body once
                else:
                    lhs = _loop_targets(st)
                    if lhs:
                        out.append(["lhavoc", f, line, lhs])
                    # a for loop keeps what it iterates over: over a known empty collection it never runs
                    it = _src(st.iter) if isinstance(st, (ast.For, ast.AsyncFor)) else None
                    out.append(["opaque", f, line, sub, it])
            elif isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                out.extend(self._assign_steps(mod, st, var))
            elif isinstance(st, ast.Delete):
                attrs = [
                    t.attr
                    for t in st.targets
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == var
                ]
                if attrs:
                    out.append(["havoc", f, line, attrs, "deleted"])
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                call = st.value
                fn = _dotted(call.func)
                if fn in ("exit", "sys.exit", "quit", "os._exit"):
                    out.append(["raise", f, line, "exit()"])
                    continue
                if inline is not None and fn is not None and fn.split(".")[-1] == inline:
                    out.append(["inline", f, line])
                    continue
                ch = self.call_changes(mod, call, var, 0)
                if ch:
                    out.append(["havoc", f, line, ch, f"{fn or 'a call'}() is given the args object"])
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append(["lhavoc", f, line, [st.name]])
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                out.append(["lhavoc", f, line, [(a.asname or a.name).split(".")[0] for a in st.names]])
            else:
                for node in ast.walk(st):
                    if isinstance(node, ast.Call):
                        ch = self.call_changes(mod, node, var, 0)
                        if ch:
                            out.append(["havoc", f, line, ch, "a statement packlint does not model"])
        return out

    def _assign_steps(self, mod: _Module, st: ast.stmt, var: str) -> list:
        f, line = mod.path, st.lineno
        value = getattr(st, "value", None)
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]  # type: ignore[attr-defined]
        out: list = []
        # calls inside the value that receive the args object
        if value is not None:
            for node in ast.walk(value):
                if isinstance(node, ast.Call):
                    ch = self.call_changes(mod, node, var, 0)
                    if ch:
                        out.append(["havoc", f, line, ch, f"{_src(node.func)}() is given the args object"])
        if value is None:
            return out
        if isinstance(st, ast.AugAssign):
            expr = ast.BinOp(left=_as_load(targets[0]), op=st.op, right=value)
            value_src = _src(expr)
        else:
            value_src = _src(value)
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == var:
                out.append(["set", f, line, t.attr, value_src])
            elif isinstance(t, ast.Name):
                if t.id == var:
                    out.append(["havoc", f, line, "*", f"{var} is rebound"])
                else:
                    out.append(["local", f, line, t.id, value_src])
            else:  # tuples, subscripts, other objects' attributes
                attrs, names = [], []
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == var:
                        attrs.append(sub.attr)
                    elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                        if sub.id == var:
                            attrs = ["*"]
                        names.append(sub.id)
                if attrs:
                    out.append(
                        ["havoc", f, line, "*" if "*" in attrs else attrs, "an assignment packlint does not model"]
                    )
                if names:
                    out.append(["lhavoc", f, line, names])
        return out


def _as_load(node: ast.AST) -> ast.expr:
    if isinstance(node, ast.Attribute):
        return ast.Attribute(value=node.value, attr=node.attr, ctx=ast.Load())
    if isinstance(node, ast.Name):
        return ast.Name(id=node.id, ctx=ast.Load())
    return node  # type: ignore[return-value]


def _loop_targets(st: ast.stmt) -> list[str]:
    t = getattr(st, "target", None)
    if t is None:
        return []
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]


def _msg(node: ast.AST | None) -> str | None:
    return _src(node)


def _raise_msg(exc: ast.AST | None) -> str | None:
    if isinstance(exc, ast.Call) and exc.args:
        return _src(exc.args[0])
    return _src(exc)


def _validate_names(mod: _Module) -> tuple[str, ...]:
    """The names the module calls Megatron's validation by: `validate_args`, and what it imports it as
    (AIAK's `from megatron.training.arguments import validate_args as validate_megatron_args`, called by the
    fork's own `parse_arguments` after its validation hook: that wrapper is the caller the program runs)."""
    aliases = [local for local, (_lvl, _m, orig) in mod.imports.items() if orig in VALIDATE_NAMES]
    return tuple(dict.fromkeys([*VALIDATE_NAMES, *aliases]))


def _calls_named(node: ast.AST, names: tuple[str, ...]) -> ast.Call | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _callee(sub) in names:
            return sub
    return None


def _callee(call: ast.Call) -> str | None:
    """The last dotted part of what a call calls (`initialize_megatron` of `m.initialize_megatron(...)`)."""
    fn = _dotted(call.func)
    return None if fn is None else fn.split(".")[-1]


def _first_param(fn: ast.FunctionDef) -> str | None:
    params = fn.args.posonlyargs + fn.args.args
    return params[0].arg if params else None


_PATCH_TARGET = re.compile(r"(^|\.)(validate_args|parse_args)$|(^|\.)arguments\.(_add_\w+_args|add_\w+_args)$")


def find_patches(reader: _Reader, files: list[str], validate_file: str | None) -> list[dict]:
    """Import-time changes of the validation or the parser anywhere in the program's import closure."""
    from packlint.caches import IN_RUN

    out: list[dict] = []
    for path in files:
        src = reader.index.source(path)
        if src is None or (
            b"validate_args" not in src.data and b"parse_args" not in src.data and b"sys.modules" not in src.data
        ):
            continue
        key = (path, src.digest)  # (one file's patches depend on its path and bytes alone)
        found = _RUN_PATCHES.get(key) if IN_RUN[0] else None
        if found is None:
            found = _file_patches(reader, path, src)
            if IN_RUN[0]:
                _RUN_PATCHES[key] = found
        out.extend(dict(p) for p in found)
    return out


def _walk(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` in ast.walk's order (breadth first), as a list: ast.walk's generator over
    iter_child_nodes was most of the startup checks' time on a program's closure."""
    todo = [tree]
    for node in todo:  # (the list grows while it is read: each node's children after those already queued)
        for field in node._fields:
            child = getattr(node, field, None)
            if isinstance(child, ast.AST):
                todo.append(child)
            elif isinstance(child, list):
                todo.extend([c for c in child if isinstance(c, ast.AST)])
    return todo


# (file, content digest) -> its patches, for one check run (caches.run_memo): the programs of one tree share
# most of their import closure (MindSpeed-LLM's 23 programs: ~200 files each), each file is looked at once
_RUN_PATCHES = run_memo()


def _file_patches(reader: _Reader, path: str, src: Any) -> list[dict]:
    out: list[dict] = []
    mod = reader.module(path)
    if mod is not None:
        for node in _walk(mod.tree):
            what = None
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if (
                        isinstance(t, ast.Name)
                        and t.id in ("validate_args", "parse_args")
                        and isinstance(node, ast.Assign)
                        and isinstance(node.value, ast.Call)
                        and node in mod.tree.body
                    ):
                        what = f"rebinds {t.id} to {_src(node.value.func)}(...)"  # validate_args = wrap(validate_args)
                    d = _dotted(t) if isinstance(t, ast.Attribute) else None
                    if d and "." in d and _PATCH_TARGET.search(d) and not d.startswith(("self.", "cls.")):
                        what = f"assigns {d}"
                    if isinstance(t, ast.Subscript) and _dotted(t.value) == "sys.modules":
                        key = t.slice
                        text = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
                        if (text is not None and re.search(r"megatron.*(arguments|training)", text)) or (
                            text is None and b"validate_args" in src.data
                        ):
                            what = "replaces a module in sys.modules"
            elif isinstance(node, ast.Call):
                fn = _dotted(node.func) or ""
                if fn == "setattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    if isinstance(node.args[1].value, str) and _PATCH_TARGET.search(node.args[1].value):
                        what = f"setattr(..., {node.args[1].value!r})"
                else:
                    for a in list(node.args) + [k.value for k in node.keywords]:
                        if (
                            isinstance(a, ast.Constant)
                            and isinstance(a.value, str)
                            and "." in a.value
                            and " " not in a.value
                            and _PATCH_TARGET.search(a.value)
                        ):
                            what = f"{fn or 'a call'}({a.value!r}, ...)"
                            break
            if what is not None:
                out.append({"file": path, "line": getattr(node, "lineno", 0), "what": what})
    return out


def extract_startup(program_file: str, index: Any, files: list[str]) -> dict | None:
    """The startup checks the program runs after parsing its arguments, as JSON data; None when no
    validation function is found in the program's import closure."""
    reader = _Reader(index, files)
    caller = None  # (module, function, statement index, call)
    for path in files:
        src = index.source(path)
        if src is None or b"validate_args" not in src.data:
            continue
        mod = reader.module(path)
        if mod is None:
            continue
        names = _validate_names(mod)
        for fn in list(mod.functions.values()) + _main_blocks(mod):
            if fn.name in VALIDATE_NAMES:
                continue
            for i, st in enumerate(fn.body):
                call = _calls_named(st, names)
                if call is not None and call.args and isinstance(call.args[0], ast.Name):
                    caller = (mod, fn, i, call)
                    break
            if caller:
                break
        if caller:
            break
    if caller is None:
        return _patches_only(reader, files)
    cmod, cfn, vidx, vcall = caller
    vname = _dotted(vcall.func) or "validate_args"
    vdef = reader.resolve(cmod, vname.split(".")[-1]) if "." not in vname else None
    if vdef is None and "." in vname:
        vdef = _resolve_attr_call(reader, cmod, vname)
    if vdef is None:
        return _patches_only(reader, files)
    vmod, vfn = vdef
    args_var = vcall.args[0].id  # type: ignore[attr-defined]
    vparam = _first_param(vfn)
    if vparam is None:
        return None
    # the parse step: `args = parse_args(...)` before the validation in the caller
    pidx, prelude = _parse_prelude(reader, cmod, cfn, vidx, args_var)
    steps: list = list(prelude)
    steps.append(["var", args_var])
    steps += reader.steps(cmod, cfn.body[pidx + 1 : vidx + 1], args_var, inline=vname.split(".")[-1])
    body = reader.steps(vmod, vfn.body, vparam, inline=None)
    defaults_param = None
    params = [a.arg for a in vfn.args.posonlyargs + vfn.args.args]
    if len(params) > 1:
        defaults_param = params[1]
    patches = find_patches(reader, files, vmod.path)
    for dec in vfn.decorator_list:  # @wrap_validation def validate_args(...): the wrapper runs instead
        patches.append({"file": vmod.path, "line": dec.lineno, "what": f"decorates {vfn.name} with {_src(dec)}"})
    n = _count(steps) + _count(body)
    if n > MAX_STEPS:
        return None
    return {
        "version": STARTUP_VERSION,
        "validate": {"name": vfn.name, "file": vmod.path, "line": vfn.lineno, "param": vparam},
        "caller": {
            "name": cfn.name,
            "file": cmod.path,
            "line": cfn.lineno,
            "params": [a.arg for a in cfn.args.posonlyargs + cfn.args.args + cfn.args.kwonlyargs],
            "param_defaults": _param_defaults(cfn),
            "param_passed": _param_passed(reader, files, cfn),
        },
        "program_kwargs": _program_kwargs(reader, program_file),
        "prelude": steps,
        "body": body,
        "defaults_param": defaults_param,
        "caller_defaults": _defaults_arg(vcall),
        "program_defaults": _program_defaults(reader, program_file),
        "patches": patches,
    }


def _patches_only(reader: _Reader, files: list[str]) -> dict | None:
    """The validation is not in the tree (Megatron installed beside a fork that patches it, as
    MindSpeed-LLM does): the patches alone, so that the checks they may change are undecided."""
    patches = find_patches(reader, files, None)
    if not patches:
        return None
    return {"version": STARTUP_VERSION, "validate": None, "caller": None, "prelude": [], "body": [], "patches": patches}


def _main_blocks(mod: _Module) -> list[ast.FunctionDef]:
    """A script's `if __name__ == '__main__':` body, as a function (a program that validates itself)."""
    out = []
    for node in mod.tree.body:
        if isinstance(node, ast.If) and "__main__" in (_src(node.test) or ""):
            out.append(
                ast.FunctionDef(
                    name="__main__",
                    args=ast.arguments([], [], None, [], [], None, []),
                    body=node.body,
                    decorator_list=[],
                    lineno=node.lineno,
                )
            )
    return out


def _resolve_attr_call(reader: _Reader, mod: _Module, dotted: str) -> tuple[_Module, ast.FunctionDef] | None:
    """`arguments.validate_args(...)` where `arguments` is an imported module."""
    head, _, name = dotted.rpartition(".")
    for node in mod.tree.body:
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if (a.asname or a.name) == head and node.module:
                    path = reader.index.find(node.module + "." + a.name)
                    m = reader.module(path) if path else None
                    if m is not None and name in m.functions:
                        return m, m.functions[name]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name) == head:
                    path = reader.index.find(a.name)
                    m = reader.module(path) if path else None
                    if m is not None and name in m.functions:
                        return m, m.functions[name]
    return None


def _parse_prelude(reader: _Reader, cmod: _Module, cfn: ast.FunctionDef, vidx: int, var: str) -> tuple[int, list]:
    """(index of the caller's statement that made ARGS, the parse function's steps after parsing)."""
    for i in range(vidx, -1, -1):
        st = cfn.body[i]
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == var for t in st.targets):
            if isinstance(st.value, ast.Call):
                fn = _dotted(st.value.func)
                if fn and fn.split(".")[-1] in ("parse_args", "parse_known_args") and "." in fn:
                    return i, []  # parser.parse_args() right here
                found = reader.resolve(cmod, fn) if fn and "." not in fn else None
                if found is not None:
                    return i, _after_parse(reader, found[0], found[1])
            return i, [["havoc", cmod.path, st.lineno, "*", f"{var} comes from {_src(st.value)}"]]
    return -1, [["havoc", cmod.path, cfn.lineno, "*", f"where {var} comes from is not known"]]


def _after_parse(reader: _Reader, mod: _Module, fn: ast.FunctionDef) -> list:
    for i, st in enumerate(fn.body):
        call = _calls_named(st, ("parse_args", "parse_known_args"))
        if call is not None and isinstance(call.func, ast.Attribute):
            if isinstance(st, ast.Return):
                return []  # `return parser.parse_args()`: nothing runs between parsing and the caller
            var = None
            for sub in ast.walk(st):
                if isinstance(sub, ast.Assign):
                    t = sub.targets[0]
                    if isinstance(t, ast.Name):
                        var = t.id
                    elif isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name):
                        var = t.elts[0].id
            if var is None:
                break
            rest = [s for s in fn.body[i + 1 :] if not isinstance(s, ast.Return)]
            return [["var", var]] + reader.steps(mod, rest, var, inline=None)
    return [["havoc", mod.path, fn.lineno, "*", f"{fn.name}() is not read as a parse step"]]


def _literal(node: ast.AST | None) -> Any:
    """A literal's value as JSON data, or {"unknown": True}."""
    try:
        value = ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return {"unknown": True}
    if isinstance(value, dict) and not all(isinstance(k, str) for k in value):
        return {"unknown": True}
    if isinstance(value, (set, frozenset, bytes, complex)):
        return {"unknown": True}
    return {"value": value}


def _param_defaults(fn: ast.FunctionDef) -> dict:
    """A function's parameters with literal defaults: name -> {"value": ...} / {"unknown": True}."""
    out: dict = {}
    pos = fn.args.posonlyargs + fn.args.args
    for a, d in zip(pos[len(pos) - len(fn.args.defaults) :], fn.args.defaults, strict=False):
        out[a.arg] = _literal(d)
    for a, kd in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=False):
        if kd is not None:
            out[a.arg] = _literal(kd)
    return out


def _param_passed(reader: _Reader, files: list[str], fn: ast.FunctionDef) -> dict:
    """What the calls of `fn` anywhere in the closure pass for its parameters, other than the same
    name passed through (`initialize_megatron(..., external_args=external_args)`): name -> literal
    value, or {"unknown": True} (several values, something not literal, or a positional argument)."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    out: dict = {}

    def note(name: str, node: ast.AST) -> None:
        if isinstance(node, ast.Name) and node.id == name:
            return  # passed through under its own name
        v = _literal(node)
        out[name] = v if name not in out or out[name] == v else {"unknown": True}

    needle = fn.name.encode()
    for path in files:
        src = reader.index.source(path)
        if src is None or needle not in src.data:
            continue
        mod = reader.module(path)
        if mod is None:
            continue
        for node in _calls_of(path, src.digest, mod.tree, fn.name):
            for i, a in enumerate(node.args):
                if isinstance(a, ast.Starred):
                    for p in params[i:]:
                        out[p] = {"unknown": True}
                    break
                if i < len(params):
                    note(params[i], a)
            for kw in node.keywords:
                if kw.arg is None:
                    for p in params:
                        out[p] = {"unknown": True}
                elif kw.arg in params or kw.arg in [a.arg for a in fn.args.kwonlyargs]:
                    note(kw.arg, kw.value)
    return out


_RUN_CALLS = run_memo()  # (file, digest, name) -> its calls of that name: the programs of a tree look in the same files


def _calls_of(path: str, digest: str, tree: ast.AST, name: str) -> list[ast.Call]:
    """The calls in `tree` whose callee's last dotted part is `name`, in the tree's walk order."""
    from packlint.caches import IN_RUN

    key = (path, digest, name)
    found = _RUN_CALLS.get(key) if IN_RUN[0] else None
    if found is None:
        found = [node for node in _walk(tree) if isinstance(node, ast.Call) and _callee(node) == name]
        if IN_RUN[0]:
            _RUN_CALLS[key] = found
    return found


def _program_kwargs(reader: _Reader, program_file: str) -> dict:
    """Every keyword argument the program file passes in any call: name -> literal value (the same
    name passed twice with different values, or a value that is not literal: unknown)."""
    mod = reader.module(os.path.abspath(program_file))
    out: dict = {}
    if mod is None:
        return out
    for node in _walk(mod.tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                v = _literal(kw.value)
                if kw.arg in out and out[kw.arg] != v:
                    v = {"unknown": True}
                out[kw.arg] = v
    return out


def _defaults_arg(call: ast.Call) -> str | None:
    if len(call.args) > 1:
        return _src(call.args[1])
    for kw in call.keywords:
        if kw.arg in ("defaults", "args_defaults"):
            return _src(kw.value)
    return None


def _program_defaults(reader: _Reader, program_file: str) -> Any:
    """The `args_defaults={...}` the program passes (pretrain(..., args_defaults={...})): a dict of
    literal values, {} when the program passes none, or None when it passes something not literal."""
    mod = reader.module(os.path.abspath(program_file))
    if mod is None:
        return None
    for node in _walk(mod.tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "args_defaults":
                    try:
                        value = ast.literal_eval(kw.value)
                    except (ValueError, TypeError, SyntaxError, RecursionError):
                        return None
                    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None
    return {}


def _count(steps: list) -> int:
    n = 0
    for s in steps:
        n += 1
        if s[0] == "if":
            n += _count(s[4]) + _count(s[5])
        elif s[0] == "opaque":
            n += _count(s[3])
    return n

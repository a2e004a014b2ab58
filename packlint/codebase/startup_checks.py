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

**Evaluation** (`evaluate`): three-valued, over the launch's known values. A check fires only when it
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


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _src(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - odd nodes: unknown
        return None


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


def _calls_named(node: ast.AST, names: tuple[str, ...]) -> ast.Call | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            fn = _dotted(sub.func)
            if fn is not None and fn.split(".")[-1] in names:
                return sub
    return None


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


# (file, content digest) -> its patches, for one check run (caches.run_memo): the programs of one tree share
# most of their import closure (MindSpeed-LLM's 23 programs: ~200 files each), each file is looked at once
_RUN_PATCHES = run_memo()


def _file_patches(reader: _Reader, path: str, src: Any) -> list[dict]:
    out: list[dict] = []
    mod = reader.module(path)
    if mod is not None:
        for node in ast.walk(mod.tree):
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
        if src is None or b"validate_args(" not in src.data:
            continue
        mod = reader.module(path)
        if mod is None:
            continue
        for fn in list(mod.functions.values()) + _main_blocks(mod):
            if fn.name in VALIDATE_NAMES:
                continue
            for i, st in enumerate(fn.body):
                call = _calls_named(st, VALIDATE_NAMES)
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
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.Call):
                continue
            name = _dotted(node.func)
            if name is None or name.split(".")[-1] != fn.name:
                continue
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


def _program_kwargs(reader: _Reader, program_file: str) -> dict:
    """Every keyword argument the program file passes in any call: name -> literal value (the same
    name passed twice with different values, or a value that is not literal: unknown)."""
    mod = reader.module(os.path.abspath(program_file))
    out: dict = {}
    if mod is None:
        return out
    for node in ast.walk(mod.tree):
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
    for node in ast.walk(mod.tree):
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


# ============================================================================================ evaluation


class _Unknown:
    """A value packlint does not know, with why."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<unknown: {self.why}>"


def unknown(why: str) -> _Unknown:
    return _Unknown(why)


def is_unknown(v: Any) -> bool:
    return isinstance(v, _Unknown)


_EXPR_MEMO: dict[str, ast.expr | None] = {}


def _parse_expr(text: str | None) -> ast.expr | None:
    if text is None:
        return None
    if text not in _EXPR_MEMO:
        try:
            _EXPR_MEMO[text] = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            _EXPR_MEMO[text] = None
    return _EXPR_MEMO[text]


_SAFE_FUNCS: dict[str, Any] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "len": len,
    "abs": abs,
    "min": min,
    "max": max,
}


class Evaluator:
    """Runs the extracted steps over known values. `attrs`: attribute -> value or _Unknown;
    `env`: environment variables the launcher sets (WORLD_SIZE) -> text."""

    def __init__(self, startup: dict, attrs: dict[str, Any], env: dict[str, str], absent: _Unknown) -> None:
        self.startup = startup
        self.attrs = dict(attrs)
        self.env = env
        self.absent = absent  # what an attribute the schema does not define reads as
        self.results: list[dict] = []
        self.locals: dict[str, Any] = {}

    # ---------------------------------------------------------------- expressions

    def attr(self, name: str) -> Any:
        return self.attrs.get(name, self.absent)

    def ev(self, node: ast.AST | None, var: str) -> Any:
        try:
            return self._ev(node, var)
        except (ZeroDivisionError, TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError):
            return unknown("the expression would raise here")
        except RecursionError:
            return unknown("too deeply nested")

    def _ev(self, n: ast.AST | None, var: str) -> Any:
        if n is None:
            return unknown("no expression")
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            if n.id in self.locals:
                return self.locals[n.id]
            if n.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[n.id]
            return unknown(f"{n.id} is not known")
        if isinstance(n, ast.Attribute):
            if isinstance(n.value, ast.Name) and n.value.id == var and var not in self.locals:
                return self.attr(n.attr)
            return unknown(f"{_src(n)} is not known")
        if isinstance(n, ast.BoolOp):
            vals = n.values
            is_and = isinstance(n.op, ast.And)
            pending = None
            for sub in vals:
                v = self._ev(sub, var)
                if is_unknown(v):
                    pending = pending or v
                    continue
                if is_and and not v:
                    return v
                if not is_and and v:
                    return v if pending is None else pending
                last = v
            return pending if pending is not None else last
        if isinstance(n, ast.UnaryOp):
            v = self._ev(n.operand, var)
            if is_unknown(v):
                return v
            if isinstance(n.op, ast.Not):
                return not v
            if isinstance(n.op, ast.USub):
                return -v
            if isinstance(n.op, ast.UAdd):
                return +v
            return unknown("operator")
        if isinstance(n, ast.BinOp):
            a, b = self._ev(n.left, var), self._ev(n.right, var)
            if is_unknown(a):
                return a
            if is_unknown(b):
                return b
            if not all(isinstance(x, (int, float, str, tuple)) for x in (a, b)):
                return unknown("operands")
            op = type(n.op).__name__
            fn = {
                "Add": lambda x, y: x + y,
                "Sub": lambda x, y: x - y,
                "Mult": lambda x, y: x * y,
                "Div": lambda x, y: x / y,
                "FloorDiv": lambda x, y: x // y,
                "Mod": lambda x, y: x % y if not isinstance(x, str) else None,
                "Pow": lambda x, y: x**y if abs(y) < 64 else None,
            }.get(op)
            if fn is None:
                return unknown("operator")
            r = fn(a, b)
            return unknown("operator") if r is None else r
        if isinstance(n, ast.Compare):
            left = self._ev(n.left, var)
            result: Any = True
            for cmp_op, comp in zip(n.ops, n.comparators, strict=False):
                right = self._ev(comp, var)
                if is_unknown(left) or is_unknown(right):
                    result = left if is_unknown(left) else right
                    left = right
                    continue
                ok = _compare(cmp_op, left, right)
                if is_unknown(ok):
                    return ok
                if not ok:
                    return False
                left = right
            return result
        if isinstance(n, ast.IfExp):
            t = self._ev(n.test, var)
            if is_unknown(t):
                return t
            return self._ev(n.body if t else n.orelse, var)
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            items = [self._ev(e, var) for e in n.elts]
            bad = next((i for i in items if is_unknown(i)), None)
            if bad is not None:
                return bad
            return tuple(items) if not isinstance(n, ast.Set) else frozenset(items)
        if isinstance(n, ast.Dict):
            keys = [self._ev(k, var) if k is not None else unknown("**") for k in n.keys]
            vals = [self._ev(v, var) for v in n.values]
            bad = next((i for i in keys + vals if is_unknown(i)), None)
            return bad if bad is not None else dict(zip(keys, vals, strict=False))
        if isinstance(n, ast.Subscript):
            obj = self._ev(n.value, var)
            idx = self._ev(n.slice, var)
            if is_unknown(obj):
                return obj
            if is_unknown(idx):
                return idx
            if isinstance(obj, (tuple, list, dict, str)):
                return obj[idx]
            return unknown("subscript")
        if isinstance(n, ast.Call):
            return self._call(n, var)
        if isinstance(n, ast.JoinedStr):
            return unknown("an f-string")
        return unknown(f"{type(n).__name__} is not modelled")

    def _call(self, n: ast.Call, var: str) -> Any:
        fn = _dotted(n.func)
        if n.keywords and fn not in ("os.getenv", "os.environ.get", "getattr"):
            return unknown(f"{fn}() is not modelled")
        if fn == "getattr" and len(n.args) >= 2 and isinstance(n.args[0], ast.Name) and n.args[0].id == var:
            name = self._ev(n.args[1], var)
            if isinstance(name, str):
                v = self.attrs.get(name)
                if v is not None or name in self.attrs:
                    return v
                return unknown(f"args.{name} is not known")
            return unknown("getattr")
        if fn in ("os.getenv", "os.environ.get", "getenv", "environ.get") and n.args:
            name = self._ev(n.args[0], var)
            if isinstance(name, str) and name in self.env:
                return self.env[name]
            return unknown(f"the environment variable {name} is not known here")
        if isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args:
            obj = self._ev(n.func.value, var)
            if isinstance(obj, dict):
                key = self._ev(n.args[0], var)
                if is_unknown(key):
                    return key
                dflt = self._ev(n.args[1], var) if len(n.args) > 1 else None
                return obj.get(key, dflt)
            return unknown(f"{fn}() is not modelled")
        if fn in _SAFE_FUNCS:
            args = [self._ev(a, var) for a in n.args]
            bad = next((a for a in args if is_unknown(a)), None)
            if bad is not None:
                return bad
            if fn in ("int", "float") and args and not isinstance(args[0], (int, float, str, bool)):
                return unknown(f"{fn}() of {args[0]!r}")
            return _SAFE_FUNCS[fn](*args)
        return unknown(f"{fn or 'a call'}() is not modelled")

    # ---------------------------------------------------------------- statements

    def run(self) -> list[dict]:
        data = self.startup
        params_defaults = data.get("program_defaults")
        self._defaults_value = params_defaults if isinstance(params_defaults, dict) else unknown("args_defaults")
        state = {"certain": True, "var": "args", "stopped": False}
        # the caller's parameters: the defaults dict is what the program passes (pretrain(...,
        # args_defaults={...}) reaches parse_and_validate_args / initialize_megatron unchanged)
        caller = data.get("caller") or {}
        pdefaults = caller.get("param_defaults") or {}
        passed = data.get("program_kwargs") or {}
        for name in caller.get("params") or []:
            if name in ("args_defaults", "defaults"):
                self.locals[name] = self._defaults_value
                continue
            # a parameter the program never names keeps its default on the way down (pretrain ->
            # initialize_megatron pass their own parameters of the same names)
            lit = passed.get(name, (caller.get("param_passed") or {}).get(name, pdefaults.get(name)))
            if isinstance(lit, dict) and "value" in lit:
                self.locals[name] = _freeze_json(lit["value"])
            else:
                self.locals[name] = unknown(f"the parameter {name} of {caller.get('name')}")
        self.exec(data.get("prelude", []), state, True)
        return self.results

    def exec(self, steps: list, state: dict, certain: bool, var: str | None = None, guards: tuple = ()) -> None:
        """Run steps; `certain`: every step here surely runs (no undecided branch or early return above)."""
        data = self.startup
        for s in steps:
            if state["stopped"] or state.get("returned"):
                return
            kind = s[0]
            if kind == "var":
                state["var"] = s[1]
                continue
            cur = var or state["var"]
            if kind == "inline":
                saved_locals = self.locals
                self.locals = {}
                dp = data.get("defaults_param")
                if dp:
                    self.locals[dp] = self._defaults_value
                vparam = (data.get("validate") or {}).get("param") or "args"
                self.exec(data.get("body", []), state, certain and not state.get("maybe_returned"), vparam, guards)
                self.locals = saved_locals
                state["maybe_returned"] = False
                state["returned"] = False
                continue
            if kind == "assert":
                self.check(s, self.ev(_parse_expr(s[3]), cur), certain and not state.get("maybe_returned"), cur, guards)
            elif kind == "raise":
                self.check(s, False, certain and not state.get("maybe_returned"), cur, guards)
                if certain and not state.get("maybe_returned"):
                    state["stopped"] = True
                    return
            elif kind == "set":
                v = self.ev(_parse_expr(s[4]), cur)
                if is_unknown(v):
                    v = unknown(
                        f"args.{s[3]} is set at {_short(s[1])}:{s[2]} from {s[4]}, "
                        f"which packlint cannot evaluate ({v.why})"
                    )
                if not certain or state.get("maybe_returned"):
                    v = unknown(f"args.{s[3]} may be set at {_short(s[1])}:{s[2]}")
                self.attrs[s[3]] = v
            elif kind == "local":
                v = self.ev(_parse_expr(s[4]), cur)
                if not certain or state.get("maybe_returned"):
                    v = unknown(f"{s[3]} may be set at {_short(s[1])}:{s[2]}")
                self.locals[s[3]] = v
            elif kind == "havoc":
                why = f"{s[4]} at {_short(s[1])}:{s[2]}"
                if s[3] == "*":
                    self.attrs = {k: unknown(why) for k in self.attrs}
                    self.absent = unknown(why)
                else:
                    for a in s[3]:
                        self.attrs[a] = unknown(why)
            elif kind == "lhavoc":
                for name in s[3]:
                    self.locals[name] = unknown(f"{name} at {_short(s[1])}:{s[2]}")
            elif kind == "return":
                if certain and not state.get("maybe_returned"):
                    state["returned"] = True
                    return
                state["maybe_returned"] = True
            elif kind == "if":
                t = self.ev(_parse_expr(s[3]), cur)
                g_then, g_else = guards + (s[3],), guards + (f"not ({s[3]})",)
                if is_unknown(t):
                    self.exec(s[4], state, False, var, g_then)
                    self.exec(s[5], state, False, var, g_else)
                elif t:
                    self.exec(s[4], state, certain, var, g_then)
                else:
                    self.exec(s[5], state, certain, var, g_else)
            elif kind == "opaque":
                if len(s) > 4 and s[4]:
                    it = self.ev(_parse_expr(s[4]), cur)
                    if isinstance(it, (tuple, list, dict, str, frozenset)) and len(it) == 0:
                        continue  # a loop over nothing
                self.exec(s[3], state, False, var, guards + ("a loop or try block",))

    def check(self, s: list, value: Any, certain: bool, var: str, guards: tuple = ()) -> None:
        kind = s[0]
        file, line = s[1], s[2]
        test = s[3] if kind == "assert" else None
        msg_src = s[4] if kind == "assert" else s[3]
        entry: dict = {
            "kind": kind,
            "file": file,
            "line": line,
            "test": test,
            "message_source": msg_src,
            "guards": list(guards),
        }
        if not certain:
            entry["status"] = "undecided"
            entry["why"] = "it may not be reached (a branch or an early return packlint cannot decide)"
        elif is_unknown(value):
            entry["status"] = "undecided"
            entry["why"] = value.why
        elif value:
            entry["status"] = "passes"
        else:
            entry["status"] = "fails"
            entry["message"] = self.render(msg_src, var)
            read_from = test if test else (guards[-1] if guards else None)
            entry["values"] = self.values_read(read_from, var) if read_from else {}
        self.results.append(entry)

    def render(self, msg_src: str | None, var: str) -> str | None:
        node = _parse_expr(msg_src)
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return str(node.value)
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    x = self.ev(v.value, var)
                    text = _src(v.value) or "?"
                    out.append(f"{{{text}}}" if is_unknown(x) else str(x))
            return "".join(out)
        v = self.ev(node, var)
        return str(v) if isinstance(v, str) else msg_src

    def values_read(self, test: str, var: str) -> dict:
        node = _parse_expr(test)
        out: dict = {}
        if node is None:
            return out
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == var:
                v = self.attr(sub.attr)
                if not is_unknown(v):
                    out[f"args.{sub.attr}"] = v
            elif isinstance(sub, ast.Name) and sub.id in self.locals and not is_unknown(self.locals[sub.id]):
                v = self.locals[sub.id]
                if isinstance(v, (int, float, str, bool)) or v is None:
                    out[sub.id] = v
        return out


def _freeze_json(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze_json(x) for x in v)
    if isinstance(v, dict):
        return {k: _freeze_json(x) for k, x in v.items()}
    return v


def _compare(op: ast.cmpop, a: Any, b: Any) -> Any:
    try:
        if isinstance(op, ast.Eq):
            return a == b
        if isinstance(op, ast.NotEq):
            return a != b
        if isinstance(op, ast.Is):
            if b is None or a is None or isinstance(a, bool) or isinstance(b, bool):
                return a is b
            return unknown("identity")
        if isinstance(op, ast.IsNot):
            if b is None or a is None or isinstance(a, bool) or isinstance(b, bool):
                return a is not b
            return unknown("identity")
        if isinstance(op, ast.Lt):
            return a < b
        if isinstance(op, ast.LtE):
            return a <= b
        if isinstance(op, ast.Gt):
            return a > b
        if isinstance(op, ast.GtE):
            return a >= b
        if isinstance(op, ast.In):
            return a in b
        if isinstance(op, ast.NotIn):
            return a not in b
    except TypeError:
        return unknown("the comparison would raise here")
    return unknown("comparison")


_SHORT_MEMO: dict[str, str] = {}


def _short(path: str) -> str:
    """A path as a reader finds it: relative to the working directory when under it (memoised)."""
    hit = _SHORT_MEMO.get(path)
    if hit is None:
        try:
            rel = os.path.relpath(path)
        except ValueError:
            rel = path
        hit = _SHORT_MEMO[path] = path if rel.startswith("../..") else rel
    return hit

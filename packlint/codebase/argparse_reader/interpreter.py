"""The flag schema of a program, read statically: a small abstract interpreter over Python's `ast`.

It runs nothing. Starting at the program's top level, it follows calls into functions it can find in
the code base (through imports, `from x import y`, methods, callbacks passed as arguments such as
`extra_args_provider=`), tracking only what matters for argparse:

- `argparse.ArgumentParser(...)` makes a parser (its `allow_abbrev`, `conflict_handler`);
- `add_argument_group` / `add_mutually_exclusive_group` make groups that add to their parser;
- `add_argument(...)` adds a flag (option strings, dest, action, nargs, type, choices, default, help);
- Megatron's `ArgumentGroupFactory(Cls, exclude=[...]).build_group(parser)` adds one flag per dataclass
  field, with the rules of megatron/training/argument_utils.py (name `--field-name`; a bool field whose
  default is not False becomes store_false `--no-X`/`--disable-X`; Optional[T] is T; list[T] is nargs '+';
  Literal is choices; an Enum is its member names; `field(metadata={"argparse_meta": {...}})` wins);
- `parse_args` / `parse_known_args` mark the parser the program uses.

Both branches of every `if` are taken; a flag defined under one carries the condition as a note.
The schema is *open* (no unknown-flag error possible) when the program uses `parse_known_args`, an
`HfArgumentParser`, Hydra, sub-commands, a computed option name, or hands its parser to code packlint
cannot read.
"""

from __future__ import annotations

import ast
import os

from packlint.codebase.filefacts import unparse
from packlint.codebase.model import FlagSchema, FlagSpec

MAX_DEPTH = 40
MAX_CALLS = 100000
_BOOL_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}


# ---------------------------------------------------------------------------------------------- values


class V:
    """An abstract value. kind: unknown | const | func | class | module | parser | group | factory |
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
        self.strict: list[str] = []  # where parse_args (unknown options are an error) is called
        self.known_reasons: list[str] = []  # parse_known_args calls
        self.kind = kind

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
                if not _is_main_guard(stmt.test):
                    self._collect(stmt.body)
                    self._collect(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                self._collect(stmt.body)
                for h in stmt.handlers:
                    self._collect(h.body)
                self._collect(stmt.orelse)
                self._collect(stmt.finalbody)


def _is_main_guard(test: ast.AST) -> bool:
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


# ---------------------------------------------------------------------------------------------- reader


class SchemaReader:
    def __init__(self, index) -> None:
        self.index = index
        self.modules: dict[str, Module | None] = {}
        self.parsers: list[Parser] = []
        self.calls = 0
        self.stack: list[ast.AST] = []
        self.global_open: list[str] = []
        self.ran: dict[int, V] = {}
        self.notes: list[str] = []

    # -- modules

    def module_at(self, path: str) -> Module | None:
        if path not in self.modules:
            src = self.index.source(path)
            tree = src.tree() if src is not None else None
            self.modules[path] = Module(path, tree, self.index.module_name(path)) if tree is not None else None
        return self.modules[path]

    def module_named(self, name: str, rel_from: Module | None = None, level: int = 0) -> Module | None:
        if level and rel_from is not None:
            base = self.index.resolve_relative(rel_from.path, level, name)
            for cand in (os.path.join(base, "__init__.py"), base + ".py"):
                if os.path.isfile(cand):
                    return self.module_at(os.path.abspath(cand))
            return None
        f = self.index.find(name)
        return self.module_at(f) if f else None

    def lookup(self, mod: Module, name: str, depth: int = 0) -> V:
        """A top-level name of `mod` as a value (following re-exports)."""
        if depth > 20:
            return UNKNOWN
        node = mod.defs.get(name)
        if node is not None:
            if isinstance(node, ast.ClassDef):
                return V("class", name, mod, node)
            return V("func", name, mod, node)
        imp = mod.imports.get(name)
        if imp is not None:
            return self.resolve_import(mod, imp, depth)
        value = mod.assigns.get(name)
        if value is not None:
            if isinstance(value, (ast.Name, ast.Attribute)):
                return self.eval_in_module(mod, value, depth + 1)
            if isinstance(value, ast.Constant):
                return V("const", value.value)
            if isinstance(value, (ast.List, ast.Tuple)):
                c = _const_list(value)
                if c is not None:
                    return V("const", c)
        if name == "argparse":
            return V("extmodule", "argparse")
        return UNKNOWN

    def resolve_import(self, mod: Module, imp: tuple, depth: int = 0) -> V:
        """('module', name) or ('from', module, attr, level) as a value."""
        if imp[0] == "module":
            m = self.module_named(imp[1])
            return V("module", imp[1], m) if m is not None else V("extmodule", imp[1])
        _, module, attr, level = imp
        if level == 0 and module in ("argparse",):
            return V("builtin", f"argparse.{attr}")
        if level == 0 and module == "transformers" and attr == "HfArgumentParser":
            return V("builtin", "HfArgumentParser")
        sub = self.module_named(f"{module}.{attr}" if module else attr, mod, level) if (module or level) else None
        if sub is not None:
            return V("module", f"{module}.{attr}", sub)
        target = self.module_named(module, mod, level)
        if target is None:
            return V("extname", f"{module}.{attr}")
        if target is mod:
            return UNKNOWN
        return self.lookup(target, attr, depth + 1)

    def eval_in_module(self, mod: Module, node: ast.AST, depth: int = 0) -> V:
        if isinstance(node, ast.Name):
            return self.lookup(mod, node.id, depth)
        if isinstance(node, ast.Attribute):
            base = self.eval_in_module(mod, node.value, depth)
            return self.attribute(base, node.attr)
        return UNKNOWN

    def attribute(self, base: V, attr: str) -> V:
        if base.kind == "module" and base.module is not None:
            sub = self.module_named(f"{base.value}.{attr}")
            if sub is not None and attr not in base.module.defs:
                return V("module", f"{base.value}.{attr}", sub)
            return self.lookup(base.module, attr)
        if base.kind == "extmodule":
            if base.value == "argparse":
                return V("builtin", f"argparse.{attr}")
            if base.value == "transformers" and attr == "HfArgumentParser":
                return V("builtin", "HfArgumentParser")
            if base.value == "hydra" and attr == "main":
                return V("builtin", "hydra.main")
            return V("extname", f"{base.value}.{attr}")
        if base.kind == "class" and base.node is not None:
            m = self.find_method(base, attr)
            if m is not None:
                return m
            for stmt in base.node.body:  # a class constant: `TrainingPhase.PRETRAIN = "pretrain"`
                if (
                    isinstance(stmt, ast.Assign)
                    and isinstance(stmt.value, ast.Constant)
                    and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets)
                ):
                    if self.is_enum(base):
                        return V("const", attr)  # an Enum member: argparse shows it by name
                    return V("const", stmt.value.value)
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == attr
                    and isinstance(stmt.value, ast.Constant)
                ):
                    return V("const", stmt.value.value)
            return UNKNOWN
        if base.kind == "instance":
            attrs = base.extra
            if attrs is not None and attr in attrs:
                return attrs[attr]
            cls = base.value
            if isinstance(cls, V):
                m = self.find_method(cls, attr)
                if m is not None:
                    return V("func", m.value, m.module, m.node, extra={"self": base})
            return UNKNOWN
        return UNKNOWN

    def find_method(self, cls: V, attr: str, depth: int = 0) -> V | None:
        if depth > 10 or cls.node is None:
            return None
        for stmt in cls.node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == attr:
                return V("func", attr, cls.module, stmt)
        for b in cls.node.bases:
            bv = self.eval_in_module(cls.module, b)
            if bv.kind == "class":
                m = self.find_method(bv, attr, depth + 1)
                if m is not None:
                    return m
        return None

    # -- running code

    def run_program(self, path: str) -> None:
        mod = self.module_at(path)
        if mod is None:
            return
        env: dict[str, V] = {}
        for stmt in mod.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in stmt.decorator_list:
                    target = d.func if isinstance(d, ast.Call) else d
                    if (
                        unparse(target) in ("hydra.main", "main")
                        and self.eval_in_module(mod, target).value == "hydra.main"
                    ):
                        self.global_open.append(
                            f"Hydra (@hydra.main at {self.where(mod, d)}): options are Hydra overrides"
                        )
        self.exec_body(mod, mod.tree.body, env, [], 0)

    def where(self, mod: Module, node: ast.AST) -> str:
        return f"{mod.path}:{getattr(node, 'lineno', 0)}"

    def exec_body(self, mod: Module, body: list[ast.stmt], env: dict[str, V], conds: list[str], depth: int):
        """Run statements; returns the first known return value (or None)."""
        ret = None
        for stmt in body:
            r = self.exec_stmt(mod, stmt, env, conds, depth)
            if r is not None and (ret is None or ret.kind == "unknown"):
                ret = r
        return ret

    def exec_stmt(self, mod, stmt, env, conds, depth):
        if isinstance(stmt, ast.Expr):
            self.eval(mod, stmt.value, env, conds, depth)
        elif isinstance(stmt, ast.Assign):
            v = self.eval(mod, stmt.value, env, conds, depth)
            for t in stmt.targets:
                self.assign(mod, t, v, env, conds, depth)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(mod, stmt.target, self.eval(mod, stmt.value, env, conds, depth), env, conds, depth)
        elif isinstance(stmt, ast.AugAssign):
            v = self.eval(mod, stmt.value, env, conds, depth)
            if isinstance(stmt.target, ast.Name):
                old = env.get(stmt.target.id)
                if (
                    old is not None
                    and old.kind == "const"
                    and isinstance(old.value, list)
                    and v.kind == "const"
                    and isinstance(v.value, (list, tuple))
                ):
                    env[stmt.target.id] = V("const", old.value + list(v.value))
        elif isinstance(stmt, ast.Return):
            return self.eval(mod, stmt.value, env, conds, depth) if stmt.value is not None else V("const", None)
        elif isinstance(stmt, ast.If):
            if _is_main_guard(stmt.test):
                return self.exec_body(mod, stmt.body, env, conds, depth)
            known = _fold(stmt.test, env)
            if known is not None:  # a local whose value is known (`if ignore_unknown_args:` with False)
                return self.exec_body(mod, stmt.body if known else stmt.orelse, env, conds, depth)
            test = unparse(stmt.test, 60)
            self.eval(mod, stmt.test, env, conds, depth)
            env1, env2 = dict(env), dict(env)
            r1 = self.exec_body(mod, stmt.body, env1, conds + [f"if {test}"], depth)
            r2 = self.exec_body(mod, stmt.orelse, env2, conds + [f"if not ({test})"], depth)
            _merge_envs(env, env1, env2)
            return r1 if r1 is not None and r1.kind != "unknown" else r2
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                it = self.eval(mod, stmt.iter, env, conds, depth)
                if isinstance(stmt.target, ast.Name):
                    env[stmt.target.id] = UNKNOWN
                    if it.kind == "const" and isinstance(it.value, (list, tuple)) and it.value:
                        env[stmt.target.id] = V("const", it.value[0])
            r = self.exec_body(mod, stmt.body, env, conds, depth)
            r2 = self.exec_body(mod, stmt.orelse, env, conds, depth)
            return r or r2
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                v = self.eval(mod, item.context_expr, env, conds, depth)
                if item.optional_vars is not None:
                    self.assign(mod, item.optional_vars, UNKNOWN if v is None else v, env, conds, depth)
            return self.exec_body(mod, stmt.body, env, conds, depth)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            r = self.exec_body(mod, stmt.body, env, conds, depth)
            for h in stmt.handlers:
                r = r or self.exec_body(mod, h.body, env, conds, depth)
            r = r or self.exec_body(mod, stmt.orelse, env, conds, depth)
            r2 = self.exec_body(mod, stmt.finalbody, env, conds, depth)
            return r or r2
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env[stmt.name] = V("func", stmt.name, mod, stmt, extra={"closure": env})
        elif isinstance(stmt, ast.ClassDef):
            env[stmt.name] = V("class", stmt.name, mod, stmt)
        elif isinstance(stmt, ast.Import):  # a function-local import
            for a in stmt.names:
                if a.asname:
                    env[a.asname] = self.resolve_import(mod, ("module", a.name))
                else:
                    top = a.name.split(".")[0]
                    env[top] = self.resolve_import(mod, ("module", top))
        elif isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                if a.name != "*":
                    env[a.asname or a.name] = self.resolve_import(mod, ("from", stmt.module or "", a.name, stmt.level))
        elif isinstance(stmt, ast.Match):
            r = None
            for case in stmt.cases:
                r = r or self.exec_body(mod, case.body, env, conds, depth)
            return r
        return None

    def assign(self, mod, target, v, env, conds, depth) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = v
        elif isinstance(target, ast.Attribute):
            obj = self.eval(mod, target.value, env, conds, depth)
            if obj.kind == "parser" and v.kind == "const":
                if target.attr == "conflict_handler" and isinstance(v.value, str):
                    obj.value.conflict_handler = v.value  # groups made from now on copy it
                elif target.attr == "allow_abbrev":
                    obj.value.allow_abbrev = bool(v.value)
            if obj.kind == "instance":
                if obj.extra is None:
                    obj.extra = {}
                obj.extra[target.attr] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = v.value if v.kind == "tuple" and len(v.value) == len(target.elts) else [UNKNOWN] * len(target.elts)
            for t, item in zip(target.elts, items, strict=True):
                self.assign(mod, t, item, env, conds, depth)

    def eval(self, mod: Module, node: ast.AST | None, env: dict[str, V], conds: list[str], depth: int) -> V:
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return V("const", node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            closure = env.get("__closure__")
            if closure is not None and node.id in closure.extra:
                return closure.extra[node.id]
            return self.lookup(mod, node.id)
        if isinstance(node, ast.Attribute):
            base = self.eval(mod, node.value, env, conds, depth)
            return self.attribute(base, node.attr)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.eval(mod, e, env, conds, depth) for e in node.elts]
            if all(i.kind == "const" for i in items):
                return V("const", [i.value for i in items])
            if isinstance(node, ast.Tuple):
                return V("tuple", items)
            return UNKNOWN
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.eval(mod, node.left, env, conds, depth), self.eval(mod, node.right, env, conds, depth)
            if a.kind == b.kind == "const":
                try:
                    return V("const", a.value + b.value)
                except TypeError:
                    return UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.IfExp):
            a = self.eval(mod, node.body, env, conds, depth)
            b = self.eval(mod, node.orelse, env, conds, depth)
            test = unparse(node.test, 60)
            if a.kind in ("func", "class") and b.kind not in ("func", "class"):
                return V(a.kind, a.value, a.module, a.node, a.extra, cond=f"if {test}")
            if b.kind in ("func", "class") and a.kind not in ("func", "class"):
                return V(b.kind, b.value, b.module, b.node, b.extra, cond=f"if not ({test})")
            return a if a.kind != "unknown" else b
        if isinstance(node, ast.BoolOp):
            vals = [self.eval(mod, v, env, conds, depth) for v in node.values]
            known = [v for v in vals if v.kind not in ("unknown", "const")]
            return known[-1] if known else UNKNOWN
        if isinstance(node, ast.Call):
            return self.call(mod, node, env, conds, depth)
        if isinstance(node, ast.Lambda):
            return V("lambda")
        if isinstance(node, (ast.Compare, ast.UnaryOp, ast.Subscript, ast.JoinedStr)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Call):
                    self.call(mod, child, env, conds, depth)
            return UNKNOWN
        return UNKNOWN

    # -- calls

    def call(self, mod: Module, node: ast.Call, env, conds, depth) -> V:
        self.calls += 1
        if self.calls > MAX_CALLS:
            if self.calls == MAX_CALLS + 1:
                self.global_open.append(
                    f"packlint stopped following calls after {MAX_CALLS} (at "
                    f"{self.where(mod, node)}): flags added later are not seen"
                )
            return UNKNOWN
        func = node.func
        if isinstance(func, ast.Attribute):
            obj = self.eval(mod, func.value, env, conds, depth)
            attr = func.attr
            if obj.kind in ("parser", "group"):
                return self.parser_method(mod, node, obj, attr, env, conds, depth)
            if obj.kind == "factory" and attr == "build_group":
                return self.build_group(mod, node, obj, env, conds, depth)
            callee = self.attribute(obj, attr)
        else:
            callee = self.eval(mod, func, env, conds, depth)
        args = [self.eval(mod, a.value if isinstance(a, ast.Starred) else a, env, conds, depth) for a in node.args]
        kwargs = {k.arg: self.eval(mod, k.value, env, conds, depth) for k in node.keywords if k.arg}
        if callee.kind == "builtin":
            return self.call_builtin(mod, node, callee.value, args, kwargs, conds)
        if callee.kind == "class":
            name = callee.value
            if name == "ArgumentGroupFactory" or self.is_factory_class(callee):
                exclude = kwargs.get("exclude") or (args[1] if len(args) > 1 else V("const", None))
                cls = args[0] if args else kwargs.get("src_cfg_class", UNKNOWN)
                return V("factory", cls, extra=exclude, node=node, module=mod)
            if self.subclasses_argparse(callee):
                return self.new_parser(mod, node, kwargs, conds)
            inst = V("instance", callee, extra={})
            init = self.find_method(callee, "__init__")
            if init is not None and depth < MAX_DEPTH:
                self.invoke(
                    V("func", "__init__", init.module, init.node, extra={"self": inst}),
                    args,
                    kwargs,
                    node,
                    mod,
                    conds,
                    depth,
                )
            return inst
        if callee.kind == "func":
            return self.invoke(callee, args, kwargs, node, mod, conds, depth)
        # an unknown callee: a parser handed to it may gain flags packlint cannot see
        for a in list(args) + list(kwargs.values()):
            if a.kind in ("parser", "group"):
                p = a.value
                what = unparse(func, 60)
                if what not in (
                    "print",
                    "len",
                    "id",
                    "isinstance",
                    "vars",
                    "setattr",
                    "getattr",
                    "str",
                    "repr",
                    "type",
                    "hasattr",
                    "logger.info",
                    "print_rank_0",
                    "copy.deepcopy",
                ):
                    p.open_reasons.append(
                        f"the parser is passed to {what} ({self.where(mod, node)}), which packlint cannot read"
                    )
        return UNKNOWN

    def is_factory_class(self, cls: V, depth: int = 0) -> bool:
        if depth > 10 or cls.node is None:
            return False
        if cls.value == "ArgumentGroupFactory":
            return True
        for b in cls.node.bases:
            bv = self.eval_in_module(cls.module, b)
            if bv.kind == "class" and self.is_factory_class(bv, depth + 1):
                return True
            if bv.kind == "extname" and bv.value.endswith("ArgumentGroupFactory"):
                return True
        return False

    def subclasses_argparse(self, cls: V, depth: int = 0) -> bool:
        if depth > 10 or cls.node is None:
            return False
        for b in cls.node.bases:
            bv = self.eval_in_module(cls.module, b)
            if bv.kind == "builtin" and bv.value == "argparse.ArgumentParser":
                return True
            if bv.kind == "class" and self.subclasses_argparse(bv, depth + 1):
                return True
        return False

    def invoke(self, f: V, args: list[V], kwargs: dict[str, V], node, mod, conds, depth) -> V:
        fn = f.node
        if depth >= MAX_DEPTH or fn in self.stack:
            return UNKNOWN
        # a call that carries nothing argparse-related runs once: its second run adds nothing new
        useful = [v for v in list(args) + list(kwargs.values()) if v.kind in _USEFUL]
        if f.extra and "self" in f.extra:
            useful.append(f.extra["self"])
        if not useful and not f.cond:
            if id(fn) in self.ran:
                return self.ran[id(fn)]
            self.ran[id(fn)] = UNKNOWN
            r = self._invoke(f, args, kwargs, node, mod, conds, depth)
            self.ran[id(fn)] = r
            return r
        return self._invoke(f, args, kwargs, node, mod, conds, depth)

    def _invoke(self, f: V, args: list[V], kwargs: dict[str, V], node, mod, conds, depth) -> V:
        fn = f.node
        env: dict[str, V] = {}
        a = fn.args
        params = [p.arg for p in a.posonlyargs + a.args]
        defaults = a.defaults
        for i, d in enumerate(defaults):
            env[params[len(params) - len(defaults) + i]] = self.eval(f.module, d, {}, conds, depth)
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            env[p.arg] = self.eval(f.module, d, {}, conds, depth) if d is not None else UNKNOWN
        bound = list(args)
        if f.extra and "self" in f.extra:
            bound = [f.extra["self"]] + bound
        elif isinstance(fn, ast.FunctionDef) and any(
            isinstance(d, ast.Name) and d.id == "classmethod" for d in fn.decorator_list
        ):
            bound = [UNKNOWN] + bound
        for p, v in zip(params, bound, strict=False):
            env[p] = v
        for k, v in kwargs.items():
            env[k] = v
        for p in params + [x.arg for x in a.kwonlyargs]:
            env.setdefault(p, UNKNOWN)
        if f.extra and "closure" in f.extra:
            env["__closure__"] = V("closure", extra=f.extra["closure"])
        cond = list(conds) + ([f.cond] if f.cond else [])
        self.stack.append(fn)
        try:
            r = self.exec_body(f.module, fn.body, env, cond, depth + 1)
        except RecursionError:
            r = None
        finally:
            self.stack.pop()
        if r is None:
            return V("const", None)
        if r.kind == "const":  # a computed result (a registry's keys...): not known statically
            return UNKNOWN
        return r

    def call_builtin(self, mod, node, name: str, args, kwargs, conds) -> V:
        if name == "argparse.ArgumentParser":
            return self.new_parser(mod, node, kwargs, conds)
        if name == "HfArgumentParser":
            p = Parser(self.where(mod, node), True, "error", "hf")
            p.open_reasons.append(
                f"HfArgumentParser ({self.where(mod, node)}): flags come from dataclasses packlint does not expand"
            )
            self.parsers.append(p)
            return V("parser", p)
        return UNKNOWN

    def new_parser(self, mod, node, kwargs, conds) -> V:
        ab = kwargs.get("allow_abbrev")
        ch = kwargs.get("conflict_handler")
        p = Parser(
            self.where(mod, node),
            not (ab is not None and ab.kind == "const" and ab.value is False),
            ch.value if ch is not None and ch.kind == "const" and isinstance(ch.value, str) else "error",
        )
        if ab is not None and ab.kind != "const":
            p.notes.append("allow_abbrev is computed; taken as True")
        ah = kwargs.get("add_help")
        if not (ah is not None and ah.kind == "const" and ah.value is False):
            p.add(
                FlagSpec(
                    ("-h", "--help"),
                    "help",
                    "help",
                    0,
                    "bool",
                    None,
                    None,
                    "'==SUPPRESS=='",
                    False,
                    None,
                    mod.path,
                    getattr(node, "lineno", None),
                    None,
                    "argparse add_help",
                )
            )
        self.parsers.append(p)
        return V("parser", p)

    def parser_method(self, mod, node: ast.Call, obj: V, attr: str, env, conds, depth) -> V:
        p: Parser = obj.value
        kwargs = {k.arg: self.eval(mod, k.value, env, conds, depth) for k in node.keywords if k.arg}
        if attr in ("add_argument_group", "add_mutually_exclusive_group"):
            handler = obj.extra if obj.kind == "group" and obj.extra else p.conflict_handler
            ch = kwargs.get("conflict_handler")
            if ch is not None and ch.kind == "const":
                handler = ch.value
            return V("group", p, extra=handler)
        if attr == "add_argument":
            self.add_argument(
                mod, node, p, env, conds, depth, obj.extra if obj.kind == "group" and obj.extra else p.conflict_handler
            )
            return UNKNOWN
        if p.kind == "hf" and attr.startswith("parse_"):  # parse_args_into_dataclasses, parse_json_file...
            p.parsed.append(self.where(mod, node))
            return UNKNOWN
        if attr in ("parse_args", "parse_intermixed_args"):
            p.parsed.append(self.where(mod, node))
            p.strict.append(self.where(mod, node))
            return UNKNOWN
        if attr in ("parse_known_args", "parse_known_intermixed_args"):
            p.parsed.append(self.where(mod, node))
            note = f"parse_known_args at {self.where(mod, node)}: unknown options are passed through"
            p.known_reasons.append(note + (f" (only {'; '.join(conds)})" if conds else ""))
            return UNKNOWN
        if attr == "add_subparsers":
            p.open_reasons.append(f"sub-commands (add_subparsers at {self.where(mod, node)})")
            return UNKNOWN
        if attr == "set_defaults":
            return UNKNOWN
        if attr == "add_argument_group_from":  # pragma: no cover - placeholder for forks
            return UNKNOWN
        return UNKNOWN

    def add_argument(self, mod, node: ast.Call, p: Parser, env, conds, depth, handler: str | None = None) -> None:
        options: list = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.eval(mod, a.value, env, conds, depth)
                if v.kind == "const" and isinstance(v.value, (list, tuple)):
                    options.extend(v.value)
                    continue
                p.open_reasons.append(f"option names computed at {self.where(mod, node)}")
                return
            v = self.eval(mod, a, env, conds, depth)
            if v.kind != "const" or not isinstance(v.value, str):
                p.open_reasons.append(f"an option name computed at {self.where(mod, node)}")
                return
            options.append(v.value)
        if not options or not all(isinstance(o, str) and o.startswith("-") for o in options):
            return  # a positional argument
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if any(k.arg is None for k in node.keywords):
            p.notes.append(f"add_argument(**kwargs) at {self.where(mod, node)}: keyword details not read")
        spec = self.spec_from_kwargs(mod, node, options, kw, env, conds, depth)
        p.add(spec, handler)

    def spec_from_kwargs(self, mod, node, options, kw, env, conds, depth, generated_from=None) -> FlagSpec:
        def const(name):
            n = kw.get(name)
            if n is None:
                return None
            v = self.eval(mod, n, env, conds, depth) if isinstance(n, ast.AST) else n
            return v.value if isinstance(v, V) and v.kind == "const" else None

        long = next((o for o in options if o.startswith("--")), options[0])
        dest = const("dest") or long.lstrip("-").replace("-", "_")
        action = "store"
        an = kw.get("action")
        if an is not None:
            av = self.eval(mod, an, env, conds, depth) if isinstance(an, ast.AST) else an
            if av.kind == "const" and isinstance(av.value, str):
                action = av.value
            elif av.kind == "builtin" and av.value == "argparse.BooleanOptionalAction":
                action = "BooleanOptionalAction"
            else:
                action = "custom:" + (unparse(an, 40) if isinstance(an, ast.AST) else str(av.value))
        nargs = None
        nn = kw.get("nargs")
        if nn is not None:
            nv = self.eval(mod, nn, env, conds, depth) if isinstance(nn, ast.AST) else nn
            if nv.kind == "const":
                nargs = nv.value
            elif nv.kind == "builtin":
                nargs = {
                    "argparse.REMAINDER": "...",
                    "argparse.ONE_OR_MORE": "+",
                    "argparse.ZERO_OR_MORE": "*",
                    "argparse.OPTIONAL": "?",
                }.get(nv.value, "custom")
            else:
                nargs = "custom"
        typ = "str"
        tn = kw.get("type")
        if tn is not None:
            typ = self.type_name(mod, tn, env, conds, depth)
        if action in _BOOL_ACTIONS or action == "BooleanOptionalAction":
            typ = "bool" if action in ("store_true", "store_false", "BooleanOptionalAction") else typ
        choices, choices_note = None, None
        cn = kw.get("choices")
        if cn is not None:
            cv = self.eval(mod, cn, env, conds, depth) if isinstance(cn, ast.AST) else cn
            if cv.kind == "const" and isinstance(cv.value, (list, tuple)):
                choices = tuple(_choice_text(c) for c in cv.value)
            elif cv.kind == "enum":
                choices = tuple(cv.value)
            else:
                choices_note = "computed at run time: " + (unparse(cn, 60) if isinstance(cn, ast.AST) else "?")
        if choices is None and choices_note is None and isinstance(kw.get("_choices_note"), str):
            choices_note = kw["_choices_note"]
        default = None
        dn = kw.get("default")
        if dn is not None:
            default = (
                unparse(dn, 80)
                if isinstance(dn, ast.AST)
                else (repr(dn.value) if isinstance(dn, V) and dn.kind == "const" else "?")
            )
        elif action == "store_true":
            default = "False"
        elif action == "store_false":
            default = "True"
        required = bool(const("required"))
        deprecated = None
        if const("deprecated") is True:
            deprecated = "argparse deprecated=True"
        hn = kw.get("help")
        help_text = None
        if hn is not None:
            hv = self.eval(mod, hn, env, conds, depth) if isinstance(hn, ast.AST) else hn
            help_text = (
                hv.value
                if hv.kind == "const" and isinstance(hv.value, str)
                else unparse(hn, 400)
                if isinstance(hn, ast.AST)
                else None
            )
        if deprecated is None and help_text and any(w in help_text.lower() for w in ("deprecated", "no longer")):
            deprecated = "help: " + " ".join(help_text.split())[:100]
        if action == "BooleanOptionalAction":  # argparse adds --no-X for every --X
            options = list(options) + ["--no-" + o[2:] for o in options if o.startswith("--")]
        cond = "; ".join(dict.fromkeys(c for c in conds)) or None
        line = getattr(node, "lineno", None)
        return FlagSpec(
            tuple(options),
            dest,
            action,
            nargs,
            typ,
            choices,
            choices_note,
            default,
            required,
            deprecated,
            mod.path,
            line,
            ("only " + cond) if cond else None,
            generated_from,
        )

    def type_name(self, mod, tn, env, conds, depth) -> str:
        if not isinstance(tn, ast.AST):
            v = tn
        else:
            if isinstance(tn, ast.Name) and tn.id in ("int", "float", "str", "bool") and tn.id not in env:
                return tn.id
            if isinstance(tn, ast.Lambda):
                return "custom:lambda"
            v = self.eval(mod, tn, env, conds, depth)
        if isinstance(v, V):
            if v.kind == "const" and v.value in ("int", "float", "str", "bool"):
                return v.value
            if v.kind == "pytype":
                return v.value
            if v.kind == "enum":
                return "enum:" + str(v.extra)
            if v.kind in ("func", "class"):
                return "custom:" + str(v.value)
        return "custom:" + (unparse(tn, 40) if isinstance(tn, ast.AST) else "?")

    # -- dataclass-generated flags (Megatron's ArgumentGroupFactory)

    def build_group(self, mod, node: ast.Call, fac: V, env, conds, depth) -> V:
        args = [self.eval(mod, a, env, conds, depth) for a in node.args]
        kwargs = {k.arg: self.eval(mod, k.value, env, conds, depth) for k in node.keywords if k.arg}
        target = args[0] if args else kwargs.get("parser", UNKNOWN)
        if target.kind not in ("parser", "group"):
            return UNKNOWN
        p: Parser = target.value
        cls: V = fac.value
        exclude_v: V = fac.extra if isinstance(fac.extra, V) else V("const", None)
        if cls.kind != "class":
            p.open_reasons.append(
                f"ArgumentGroupFactory of {unparse(fac.node.args[0]) if fac.node.args else '?'} "
                f"({self.where(fac.module, fac.node)}): the dataclass was not found"
            )
            return V("group", p)
        if exclude_v.kind == "const":
            exclude = set(exclude_v.value or [])
        else:
            exclude = set()
            p.open_reasons.append(f"the exclude list at {self.where(fac.module, fac.node)} is not known")
        for fname, ann, value, fmod, fnode in self.dataclass_fields(cls):
            if fname in exclude:
                continue
            spec = self.field_flag(cls, fname, ann, value, fmod, fnode, conds)
            if spec is not None:
                p.add(spec)
        return V("group", p)

    def dataclass_fields(self, cls: V, depth: int = 0) -> list[tuple]:
        """(name, annotation, value, module, node) of every init field, bases first, as dataclasses."""
        if depth > 10 or cls.node is None:
            return []
        fields: dict[str, tuple] = {}
        for b in cls.node.bases:
            bv = self.eval_in_module(cls.module, b)
            if bv.kind == "class":
                for f in self.dataclass_fields(bv, depth + 1):
                    fields[f[0]] = f
        for stmt in cls.node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            ann_text = unparse(stmt.annotation, 200) or ""
            if ann_text.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar")):
                continue
            value = stmt.value
            if isinstance(value, ast.Call) and unparse(value.func) in ("field", "dataclasses.field"):
                init = next((k.value for k in value.keywords if k.arg == "init"), None)
                if isinstance(init, ast.Constant) and init.value is False:
                    fields.pop(stmt.target.id, None)
                    continue
            name = stmt.target.id
            if name in fields:  # an override keeps the base class's position (as dataclasses do)
                fields[name] = (name, stmt.annotation, value, cls.module, stmt)
            else:
                fields[name] = (name, stmt.annotation, value, cls.module, stmt)
        return list(fields.values())

    def field_flag(self, cls: V, fname: str, ann, value, fmod: Module, fnode, conds) -> FlagSpec | None:
        default_node = value
        meta = None
        if isinstance(value, ast.Call) and unparse(value.func) in ("field", "dataclasses.field"):
            kws = {k.arg: k.value for k in value.keywords if k.arg}
            default_node = kws.get("default")
            if default_node is None and "default_factory" in kws:
                default_node = ast.Call(func=kws["default_factory"], args=[], keywords=[])
            md = kws.get("metadata")
            if isinstance(md, ast.Dict):
                for k, v in zip(md.keys, md.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == "argparse_meta" and isinstance(v, ast.Dict):
                        meta = {
                            kk.value: vv
                            for kk, vv in zip(v.keys, v.values, strict=True)
                            if isinstance(kk, ast.Constant)
                        }
        kw: dict = {}
        options = ["--" + fname.replace("_", "-")]
        ok = self.extract_type(fmod, ann, kw)
        if ok and kw.get("type") == "bool":
            is_false = isinstance(default_node, ast.Constant) and default_node.value is False
            kw.pop("type")
            kw["action"] = V("const", "store_true" if is_false else "store_false")
            if not is_false:
                options = ["--no-" + fname.replace("_", "-"), "--disable-" + fname.replace("_", "-")]
        if not ok and meta is None:
            return None  # the real factory raises here: such a field is always excluded in working code
        if meta is not None:
            for mk, mv in meta.items():
                if mk == "arg_names":
                    names = self.eval(fmod, mv, {}, conds, 0)
                    if names.kind == "const" and isinstance(names.value, (list, tuple)):
                        options = [str(n) for n in names.value]
                else:
                    kw[mk] = mv
        # FlagSpec from the kwargs: AST nodes (meta) and V values (inferred) both accepted
        kw.setdefault("dest", V("const", fname))
        if "default" not in kw and default_node is not None:
            kw["default"] = default_node
        spec = self.spec_from_kwargs(fmod, fnode, options, kw, {}, conds, 0, generated_from=f"{cls.value}.{fname}")
        return spec

    def extract_type(self, fmod: Module, ann, kw: dict) -> bool:
        """argument_utils._extract_type over an annotation node: fills kw (V values); False where the
        real factory raises TypeInferenceError."""
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return False
        if isinstance(ann, ast.Name) and ann.id in ("int", "float", "str", "bool"):
            kw["type"] = ann.id if ann.id == "bool" else V("pytype", ann.id)
            return True
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            if isinstance(ann.right, ast.Constant) and ann.right.value is None:
                return self.extract_type(fmod, ann.left, kw)
            return False
        if isinstance(ann, ast.Subscript):
            head = unparse(ann.value) or ""
            last = head.split(".")[-1]
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if last == "Optional":
                return self.extract_type(fmod, elts[0], kw)
            if last == "Union":
                if len(elts) >= 2 and isinstance(elts[1], ast.Constant) and elts[1].value is None:
                    return self.extract_type(fmod, elts[0], kw)
                return False
            if last in ("list", "List"):
                if len(elts) != 1:
                    return False
                ok = self.extract_type(fmod, elts[0], kw)
                kw["nargs"] = V("const", "+")
                return ok
            if last == "Literal":
                vals = [e.value for e in elts if isinstance(e, ast.Constant)]
                if len(vals) != len(elts):
                    return False
                kw["type"] = V("pytype", type(vals[0]).__name__) if vals else V("pytype", "str")
                kw["choices"] = V("const", vals)
                return True
            return False
        if isinstance(ann, (ast.Name, ast.Attribute)):
            v = self.eval_in_module(fmod, ann)
            if v.kind == "class" and self.is_enum(v):
                members = [
                    s.targets[0].id
                    for s in v.node.body
                    if isinstance(s, ast.Assign)
                    and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Name)
                    and not s.targets[0].id.startswith("_")
                ]
                members += [
                    s.target.id
                    for s in v.node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None
                ]
                kw["type"] = V("enum", members, extra=v.value)
                kw["choices"] = V("enum", members)
                return True
            if v.kind == "class":
                return True  # a primitive-like class: argparse calls it on the text
            kw["type"] = V("func", unparse(ann))
            kw["_choices_note"] = (
                f"{unparse(ann)} comes from a library packlint does not read: if it is an "
                "Enum the real parser takes its member names only"
            )
            return True
        return False

    def is_enum(self, cls: V, depth: int = 0) -> bool:
        if depth > 10 or cls.node is None:
            return False
        for b in cls.node.bases:
            text = unparse(b) or ""
            if text.split(".")[-1] in ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"):
                return True
            bv = self.eval_in_module(cls.module, b)
            if bv.kind == "class" and self.is_enum(bv, depth + 1):
                return True
        return False


_USEFUL = ("parser", "group", "func", "class", "factory", "instance", "module", "tuple")


def _merge_envs(env: dict[str, V], a: dict[str, V], b: dict[str, V]) -> None:
    """After an `if` whose branches both ran: each name keeps the more useful of its two values (a
    callable or parser over an unknown: `if args.x: pretrain = wrap(pretrain)` keeps `pretrain`)."""
    for k in set(a) | set(b):
        va, vb = a.get(k), b.get(k)
        choice = next((v for v in (va, vb) if v is not None and v.kind in _USEFUL), None)
        if choice is None:
            choice = va if va is not None and va.kind != "unknown" else (vb if vb is not None else va)
        if choice is None:
            choice = env.get(k)
        if choice is not None:
            env[k] = choice


def _fold(test: ast.AST, env: dict[str, V]) -> bool | None:
    """The truth of an `if` test over a local whose value is a known constant or callable, else None.
    Module-level names are never folded (`HAVE_X = True` in a try/except is not a constant)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _fold(test.operand, env)
        return None if inner is None else not inner
    if isinstance(test, ast.Name) and test.id in env:
        v = env[test.id]
        if v.kind == "const" and isinstance(v.value, (bool, int, str, type(None))):
            return bool(v.value)
        if v.kind in ("func", "class", "parser", "group"):
            return True  # a callback chosen under a condition carries that condition into its flags
        return None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.left, ast.Name)
        and test.left.id in env
    ):
        v = env[test.left.id]
        if v.kind == "const" and v.value is None:
            is_none = True
        elif v.kind in ("func", "class", "parser", "group"):
            is_none = False
        else:
            return None
        return is_none if isinstance(test.ops[0], ast.Is) else not is_none
    return None


def _choice_text(c) -> str:
    return c if isinstance(c, str) else repr(c) if not isinstance(c, (int, float)) or isinstance(c, bool) else str(c)


def _const_list(node: ast.List | ast.Tuple):
    out = []
    for e in node.elts:
        if not isinstance(e, ast.Constant):
            return None
        out.append(e.value)
    return out


# ---------------------------------------------------------------------------------------------- entry


def read_schema(program_file: str, index) -> FlagSchema | None:
    """The schema of the parser the program parses with (None when packlint found no parser).

    A program may parse more than once (Megatron peeks with `parse_args(ignore_unknown_args=True)`,
    i.e. parse_known_args, before the real parse): the last word belongs to a strict `parse_args`, so a
    parser parsed strictly is the schema and is closed unless something else opens it; a program
    that only ever uses parse_known_args is open."""
    reader = SchemaReader(index)
    reader.run_program(os.path.abspath(program_file))
    used = [p for p in reader.parsers if p.parsed]
    notes: list[str] = []
    if not used:
        candidates = [p for p in reader.parsers if p.flags]
        if not candidates:
            return None
        used = [max(candidates, key=lambda p: len(p.flags))]
        used[0].open_reasons.append("packlint did not see where this parser parses the command line")
    strict = [p for p in used if p.strict]
    if strict:
        main = max(strict, key=lambda p: len(p.flags))
        for p in used:
            if p is not main and p.known_reasons:
                notes.extend(
                    f"{r}; a later strict parse_args at {main.strict[0]} still rejects unknown options"
                    for r in p.known_reasons
                )
        reasons = list(reader.global_open) + list(main.open_reasons)
    else:
        main = max(used, key=lambda p: len(p.flags))
        reasons = list(reader.global_open) + list(main.open_reasons) + list(main.known_reasons)
    notes.extend(n for n in main.notes if n not in notes)
    reasons = list(dict.fromkeys(reasons))
    return FlagSchema(
        dict(main.flags), main.allow_abbrev, main.conflict_handler, not reasons, reasons, main.origin, notes
    )

"""The schema reader's interpreter: it resolves names through a code base's modules and imports, runs
statements (both branches of an `if`), evaluates expressions to abstract values and follows calls into
functions it can read; argparse calls go to argparse_calls.py, dataclass-generated flags to
dataclass_flags.py."""

from __future__ import annotations

import ast
import os

from packlint.codebase.argparse_reader import argparse_calls, dataclass_flags
from packlint.codebase.argparse_reader.values import UNKNOWN, Module, Parser, V, const_list, is_main_guard
from packlint.codebase.filefacts import unparse

MAX_DEPTH = 40
MAX_CALLS = 100000
# statements and expressions interpreted for one program: reading Megatron-LM's parser takes ~60,000;
# a call tree that runs long bodies many times (audit R13: 262 KB, 17-32 s) stops here, its flags open
MAX_STEPS = 1_000_000
# callees that read a parser handed to them and add it no flag
_HARMLESS_CALLEES = frozenset(
    ("print", "len", "id", "isinstance", "vars", "setattr", "getattr", "str", "repr", "type", "hasattr")
    + ("logger.info", "print_rank_0", "copy.deepcopy")
)


# a parser's methods taken as values and called later (`add_arg = parser.add_argument`)
_BOUND_METHODS = frozenset({"add_argument", "add_argument_group", "add_mutually_exclusive_group"})


_PARSE_CALLS = ("parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args")


# the condition of a parse in a handler that catches SystemExit: it runs when a parse before it rejects the command
# line, so it is as sure as that one, and the command line fails only when both reject it (read_schema: their union)
FALLBACK = "in a handler that catches SystemExit"


def _catches_exit(handler: ast.ExceptHandler) -> bool:
    """An `except` clause that catches argparse's SystemExit: bare, SystemExit, BaseException, or a tuple with one."""
    t = handler.type
    names = t.elts if isinstance(t, ast.Tuple) else [t] if t is not None else []
    return t is None or any(
        (isinstance(n, ast.Name) and n.id in ("SystemExit", "BaseException"))
        or (isinstance(n, ast.Attribute) and n.attr in ("SystemExit", "BaseException"))
        for n in names
    )


class SchemaReader:
    def __init__(self, index) -> None:
        self.index = index
        self.modules: dict[str, Module | None] = {}
        self.parsers: list[Parser] = []
        self.calls = 0
        self.steps = 0  # statements and expressions interpreted (MAX_STEPS)
        self.stack: list[ast.AST] = []
        self.global_open: list[str] = []
        self.argv_edits: list[str] = []  # where a statement the reading runs changes sys.argv (file:line)
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
                c = const_list(value)
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
        if level == 0 and module in ("trl", "trl.scripts.utils", "trl.scripts") and attr == "TrlParser":
            return V("builtin", "TrlParser")
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
            if base.value == "trl" and attr == "TrlParser":
                return V("builtin", "TrlParser")
            if base.value == "hydra" and attr == "main":
                return V("builtin", "hydra.main")
            return V("extname", f"{base.value}.{attr}")
        if base.kind == "extname":  # `from llamafactory import hparams; hparams.DataArguments`
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
                        # an Enum member: argparse compares a word with `==`, which a str/int Enum member passes
                        # for its value (a-r-r-o-w/finetrainers `choices=[ParallelBackendEnum.PTD]` takes 'ptd');
                        # a plain Enum's member equals no word: what it accepts depends on `type`
                        return V("const", stmt.value.value) if _value_mixin(base) else UNKNOWN
                    return V("const", stmt.value.value)
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == attr
                    and isinstance(stmt.value, ast.Constant)
                ):
                    return V("const", stmt.value.value)
            return UNKNOWN
        if base.kind == "parser" and attr in base.value.attrs:
            found: V = base.value.attrs[attr]
            return found
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

    def _over_budget(self, mod: Module, node: ast.AST) -> bool:
        self.steps += 1
        if self.steps <= MAX_STEPS:
            return False
        if self.steps == MAX_STEPS + 1:
            self.global_open.append(
                f"packlint's budget for reading the parser ({MAX_STEPS:,} steps) was spent at "
                f"{self.where(mod, node)}: flags added later are not seen"
            )
        return True

    def exec_stmt(self, mod, stmt, env, conds, depth):
        if self._over_budget(mod, stmt):
            return None
        if _edits_argv(stmt):
            self.argv_edits.append(self.where(mod, stmt))
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
            if is_main_guard(stmt.test):
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
            before = dict(env)
            r = self.exec_body(mod, stmt.body, env, conds, depth)
            _unflip(before, env)
            r2 = self.exec_body(mod, stmt.orelse, env, conds, depth)
            return r or r2
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                v = self.eval(mod, item.context_expr, env, conds, depth)
                if item.optional_vars is not None:
                    self.assign(mod, item.optional_vars, UNKNOWN if v is None else v, env, conds, depth)
            return self.exec_body(mod, stmt.body, env, conds, depth)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self.exec_try(mod, stmt, env, conds, depth)
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
            if obj.kind == "parser":  # `self.config_parser = ArgumentParser(...)` in a subclass's __init__
                obj.value.attrs[target.attr] = v
            if obj.kind == "instance":
                if obj.extra is None:
                    obj.extra = {}
                obj.extra[target.attr] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = v.value if v.kind == "tuple" and len(v.value) == len(target.elts) else [UNKNOWN] * len(target.elts)
            for t, item in zip(target.elts, items, strict=True):
                self.assign(mod, t, item, env, conds, depth)

    def exec_try(self, mod, stmt, env, conds, depth):
        """`try`: its body; each handler runs only when the body raises (lisun-ai/HLM's pretrain.py parses a JSON
        config first and falls back to parse_args_into_dataclasses in `except Exception`: the argparse parser before
        it judges the flags), except one that catches SystemExit (bare `except:`, SystemExit, BaseException), which
        also runs when that parser rejects the command line: its parse is as sure as the first (HLM's
        finetune_glue.py)."""
        r = self.exec_body(mod, stmt.body, env, conds, depth)
        for h in stmt.handlers:
            raised = [FALLBACK if _catches_exit(h) else f"when the try at line {stmt.lineno} raises"]
            r = r or self.exec_body(mod, h.body, env, conds + raised, depth)
        r = r or self.exec_body(mod, stmt.orelse, env, conds, depth)
        r2 = self.exec_body(mod, stmt.finalbody, env, conds, depth)
        return r or r2

    def eval(self, mod: Module, node: ast.AST | None, env: dict[str, V], conds: list[str], depth: int) -> V:
        if node is None or self._over_budget(mod, node):
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
            if base.kind in ("parser", "group") and node.attr in _BOUND_METHODS:
                # `add_arg = parser.add_argument` (mlcommons' cosmoflow train.py): the bound method, called later
                return V("method", node.attr, extra=base)
            return self.attribute(base, node.attr)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.eval(mod, e, env, conds, depth) for e in node.elts]
            if all(i.kind == "const" for i in items):
                return V("const", [i.value for i in items])
            if isinstance(node, ast.Tuple) or any(i.kind == "parser" for i in items):
                return V("tuple", items)  # (`parents=[base_parser()]`: argparse_calls.new_parser)
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
            _merge_envs({}, {"_": a}, {"_": b})  # (two parsers: one open leaves the other open)
            return a if a.kind != "unknown" else b
        if isinstance(node, ast.BoolOp):
            vals = [self.eval(mod, v, env, conds, depth) for v in node.values]
            known = [v for v in vals if v.kind not in ("unknown", "const")]
            return known[-1] if known else UNKNOWN
        if isinstance(node, ast.Call):
            return self.call(mod, node, env, conds, depth)
        if isinstance(node, ast.Lambda):
            return V("lambda")
        if isinstance(node, ast.Subscript) and _is_argv(self.eval(mod, node.value, env, conds, depth)):
            return V("extname", "sys.argv")  # `sys.argv[1:]`: the command line's words
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
        own = _parser_self(env) if isinstance(func, ast.Attribute) and func.attr == "__init__" else None
        if own is not None and isinstance(func, ast.Attribute):
            base = func.value  # `super().__init__(parents=[...])` in an ArgumentParser subclass's own __init__
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super":
                kwargs = {k.arg: self.eval(mod, k.value, env, conds, depth) for k in node.keywords if k.arg}
                argparse_calls.init_parser(self, mod, node, own, kwargs)
                return V("const", None)
        if isinstance(func, ast.Attribute):
            obj = self.eval(mod, func.value, env, conds, depth)
            attr = func.attr
            if obj.kind in ("parser", "group"):
                return argparse_calls.parser_method(self, mod, node, obj, attr, env, conds, depth)
            if obj.kind == "unknown" and attr in _PARSE_CALLS:
                # a parser packlint cannot resolve parses the command line here (mammoth's main.py: `parser =
                # getattr(importlib.import_module('models.' + args.model), 'get_parser')(); parser.parse_args()`
                # in the branch the launch takes): the flags it takes are not the ones the readable parser has
                self.global_open.append(
                    f"{unparse(func, 60)} at {self.where(mod, node)} parses the command line with a parser "
                    "packlint cannot resolve"
                )
                return UNKNOWN
            if obj.kind == "factory" and attr == "build_group":
                return dataclass_flags.build_group(self, mod, node, obj, env, conds, depth)
            callee = self.attribute(obj, attr)
        else:
            callee = self.eval(mod, func, env, conds, depth)
        args = [self.eval(mod, a.value if isinstance(a, ast.Starred) else a, env, conds, depth) for a in node.args]
        kwargs = {k.arg: self.eval(mod, k.value, env, conds, depth) for k in node.keywords if k.arg}
        if callee.kind == "builtin" or argparse_calls.parser_class_elsewhere(callee):
            return argparse_calls.call_builtin(self, mod, node, str(callee.value), args, kwargs, conds)
        if callee.kind == "class":
            name = callee.value
            if name == "ArgumentGroupFactory" or dataclass_flags.is_factory_class(self, callee):
                exclude = kwargs.get("exclude") or (args[1] if len(args) > 1 else V("const", None))
                cls = args[0] if args else kwargs.get("src_cfg_class", UNKNOWN)
                return V("factory", cls, extra=exclude, node=node, module=mod)
            if argparse_calls.subclasses_argparse(self, callee):
                return self._subclass_parser(callee, args, kwargs, node, mod, conds, depth)
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
        if callee.kind == "method":
            return argparse_calls.parser_method(self, mod, node, callee.extra, callee.value, env, conds, depth)
        # an unknown callee: a parser handed to it may gain flags packlint cannot see (not a list's own
        # `append`/`insert`: `parents.append(server_parser)` stores the parser, it adds it no flag)
        stores = isinstance(func, ast.Attribute) and func.attr in ("append", "insert") and not kwargs
        for a in [] if stores else list(args) + list(kwargs.values()):
            if a.kind == "method":  # `register(parser.add_argument)`: the parser's own method handed on
                a = a.extra
            if a.kind in ("parser", "group"):
                p = a.value
                what = unparse(func, 60)
                if what not in _HARMLESS_CALLEES:
                    p.open_reasons.append(
                        f"the parser is passed to {what} ({self.where(mod, node)}), which packlint cannot read"
                    )
        return UNKNOWN

    def _subclass_parser(self, cls: V, args: list[V], kwargs: dict[str, V], node, mod, conds, depth) -> V:
        """`ConfigArgumentParser()`, a class of the checkout derived from argparse.ArgumentParser (NJU-LHRS/
        LHRS-Bot): the parser, with what its own `__init__` adds (`self.add_argument(...)`,
        `super().__init__(parents=[...])`) run on it; an `__init__` packlint cannot follow leaves it open."""
        made = argparse_calls.new_parser(self, mod, node, kwargs, conds)
        init = self.find_method(cls, "__init__")
        if init is None:
            return made
        if depth >= MAX_DEPTH or init.node in self.stack:
            made.value.open_reasons.append(f"the __init__ of {cls.value} ({self.where(mod, node)}) is not read")
            return made
        init_f = V("func", "__init__", init.module, init.node, extra={"self": made})
        self.invoke(init_f, args, kwargs, node, mod, conds, depth)
        return made

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


_ARGV_METHODS = frozenset({"pop", "remove", "insert", "append", "extend", "clear"})


def _is_sys_argv(node: ast.AST) -> bool:
    while isinstance(node, ast.Subscript):
        node = node.value
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "argv"
        and isinstance(node.value, ast.Name)
        and (node.value.id == "sys")
    )


def _edits_argv(stmt: ast.stmt) -> bool:
    """The statement changes sys.argv: `sys.argv = [...]`, `sys.argv[1:] = ...`, `sys.argv += ...`, `del sys.argv[i]`,
    `sys.argv.pop(1)` (MikeyShechter/Megatron-LM's parse_args after a `--config` pre-parser)."""
    if isinstance(stmt, ast.Assign):
        return any(_is_sys_argv(t) for t in stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return _is_sys_argv(stmt.target)
    if isinstance(stmt, ast.Delete):
        return any(_is_sys_argv(t) for t in stmt.targets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        return isinstance(f, ast.Attribute) and f.attr in _ARGV_METHODS and _is_sys_argv(f.value)
    return False


def _value_mixin(cls: V) -> bool:
    """An Enum whose members compare equal to their values (`class E(str, Enum)`, StrEnum, IntEnum, IntFlag)."""
    node = cls.node
    if not isinstance(node, ast.ClassDef):
        return False
    names = {(unparse(b) or "").split(".")[-1] for b in node.bases}
    return bool(names & {"str", "int", "StrEnum", "IntEnum", "IntFlag"})


_USEFUL = ("parser", "group", "func", "class", "factory", "instance", "module", "tuple")


def _merge_envs(env: dict[str, V], a: dict[str, V], b: dict[str, V]) -> None:
    """After an `if` whose branches both ran: each name keeps the more useful of its two values (a
    callable or parser over an unknown: `if args.x: pretrain = wrap(pretrain)` keeps `pretrain`)."""
    for k in set(a) | set(b):
        va, vb = a.get(k), b.get(k)
        if va is vb:  # (neither branch changed it: most names of a module's globals)
            env[k] = va  # type: ignore[assignment]
            continue
        choice = next((v for v in (va, vb) if v is not None and v.kind in _USEFUL), None)
        if choice is not None and va is not None and vb is not None and va.kind == vb.kind == "parser":
            other = vb if choice is va else va
            if other.value is not choice.value and other.value.open_reasons:
                # which parser runs is decided by the `if` (`QuinineArgumentParser() if _quinine_available else
                # ArgumentParser()`): the flags the other parser may have are open for this one too
                choice.value.open_reasons.extend(
                    r for r in other.value.open_reasons if r not in choice.value.open_reasons
                )
        if (
            choice is None
            and va is not None
            and vb is not None
            and va.kind == vb.kind == "const"
            and type(va.value) is type(vb.value)
            and isinstance(va.value, (bool, int, str))
            and va.value != vb.value
        ):
            # `has_keyname = True` in one branch only (Pai-Megatron-Patch's patch_if_not_exist): either value
            choice = UNKNOWN
        if choice is None:
            choice = va if va is not None and va.kind != "unknown" else (vb if vb is not None else va)
            rest = vb if choice is va else va
            if choice is not None and choice.kind == "const" and rest is not None and rest.kind == "unknown":
                # a constant kept over a value the other branch made (`last_arg = None` before a loop over argv
                # that sets it): a test over it is not decided (_fold), or a branch that runs is taken as dead
                choice = V("const", choice.value, extra=_MAYBE)
        if choice is None:
            choice = env.get(k)
        if choice is not None:
            env[k] = choice


_MAYBE = {"maybe": True}  # (V.extra of a constant that one branch of an `if` may have replaced)


def _unflip(before: dict[str, V], env: dict[str, V]) -> None:
    """After a loop body run once: it may run no time, so a bool flag it flips is either value."""
    for k, v in before.items():
        now = env.get(k)
        if now is not None and now.kind == v.kind == "const" and isinstance(v.value, bool) and now.value != v.value:
            env[k] = UNKNOWN


def _parser_self(env: dict[str, V]) -> Parser | None:
    """The parser an ArgumentParser subclass's method runs on (its `self`), or None."""
    v = env.get("self")
    return v.value if v is not None and v.kind == "parser" and isinstance(v.value, Parser) else None


def _is_argv(v: V) -> bool:
    return v.kind == "extname" and v.value == "sys.argv"


def _fold(test: ast.AST, env: dict[str, V]) -> bool | None:
    """The truth of an `if` test over a local whose value is a known constant or callable, else None.
    Module-level names are never folded (`HAVE_X = True` in a try/except is not a constant)."""
    if isinstance(test, ast.Constant):  # `if False:`, `if 1:`
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _fold(test.operand, env)
        return None if inner is None else not inner
    if isinstance(test, ast.Name) and test.id in env:
        v = env[test.id]
        if v.extra is _MAYBE:
            return None
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
        if v.extra is _MAYBE:
            return None
        if v.kind == "const" and v.value is None:
            is_none = True
        elif v.kind in ("func", "class", "parser", "group"):
            is_none = False
        else:
            return None
        return is_none if isinstance(test.ops[0], ast.Is) else not is_none
    return None

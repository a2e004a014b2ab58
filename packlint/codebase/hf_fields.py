"""A dataclass field as transformers' `HfArgumentParser` turns it into a flag (issue 28), read from
the class's `ast` (never imported). One place for the typing rules, used by the schema reader on a
checkout's own dataclasses and by `tools/stack_schemas.py` on the stacks' released packages.

The rules are hf_argparser.py `_parse_dataclass_field` (transformers 4.41-5.24, unchanged in what
matters here):

- the flag is `--name`, and `--name-with-dashes` when the name has an underscore;
- `Optional[X]` is X; `Union[str, X]` is X (the parser drops `str`); of a longer Union the parser keeps its second
  argument (`Optional[Union[int, str]]`, i.e. `Union[int, str, None]`, is str);
- `bool` (or `Optional[bool]` with a non-None default) takes 0 or 1 value (`nargs='?'`,
  `const=True`, `type=string_to_bool`: yes/no, true/false, t/f, y/n, 1/0 in any case); a default of
  True adds `--no_name` / `--no-name` (store_false); `Optional[bool] = None` takes exactly one value;
- `Literal[...]` and an `Enum` give choices (an Enum's member *values*);
- `list[X]` is `nargs='+'`;
- a field with no default (nor default_factory) is required.

A field is described by a small tuple `(type, choices, marks)`: type `bool`, `bool1` (one value),
`int`, `float`, `str`, `list:T`, `lit` (choices), `any` (a type packlint does not check), `open` (neither the
type nor the number of words: a field whose `metadata` gives argparse its own `nargs`, `type` or `action`); marks `r`
(required) and `T` (default True).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

EnumLookup = Callable[[ast.expr], "list[str] | None"]


def _strip_optional(ann: ast.expr) -> tuple[list[ast.expr], bool]:
    """The union's members (without None) and whether None was one."""
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        left, ln = _strip_optional(ann.left)
        right, rn = _strip_optional(ann.right)
        return left + right, ln or rn
    if isinstance(ann, ast.Constant) and ann.value is None:
        return [], True
    if isinstance(ann, ast.Subscript):
        head = ast.unparse(ann.value).split(".")[-1]
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if head == "Optional":
            inner, _ = _strip_optional(elts[0])
            return inner, True
        if head == "Union":
            out: list[ast.expr] = []
            none = False
            for e in elts:
                sub, n = _strip_optional(e)
                out += sub
                none = none or n
            return out, none
    return [ann], False


def _flat_args(ann: ast.expr) -> list[ast.expr | None]:
    """A Union's arguments in typing's order, flattened as typing flattens them (`Optional[Union[int, str]]` is
    `Union[int, str, None]`), None for NoneType; one element for anything else."""
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _dedup(_flat_args(ann.left) + _flat_args(ann.right))
    if isinstance(ann, ast.Constant) and ann.value is None:
        return [None]
    if isinstance(ann, ast.Subscript):
        head = ast.unparse(ann.value).split(".")[-1]
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if head == "Optional":
            return _dedup([*_flat_args(elts[0]), None])
        if head == "Union":
            return _dedup([a for e in elts for a in _flat_args(e)])
    return [ann]


def _dedup(args: list[ast.expr | None]) -> list[ast.expr | None]:
    out: list[ast.expr | None] = []
    for a in args:
        if not any(
            (a is None and b is None) or (a is not None and b is not None and ast.dump(a) == ast.dump(b)) for b in out
        ):
            out.append(a)
    return out


def _hf_union_choice(ann: ast.expr) -> ast.expr | None:
    """The member HfArgumentParser keeps of a Union (hf_argparser.py `_parse_dataclass_field`): without None,
    `args[0] if args[1] is str else args[1]`; with None and no bool, `args[0] if args[1] is NoneType else args[1]`
    (`Optional[Union[int, str]]` is str: xuhuizhan5/Inverse-LLaVA's `mm_vision_select_layer` takes "-1,-2");
    None where the Union is no choice of that rule (one member, or bool with None: typed below)."""
    args = _flat_args(ann)
    if len(args) < 2:
        return None
    names = [ast.unparse(a).split(".")[-1] if a is not None else "None" for a in args]
    if "str" not in names and not (len(args) == 2 and "None" in names):
        return None  # (the parser raises 'Only `Union[X, NoneType]` ... is allowed': no flag to type)
    if "None" not in names:
        return args[0] if names[1] == "str" else args[1]
    if "bool" in names:
        return None
    return args[0] if names[1] == "None" else args[1]


def type_of(
    ann: ast.expr, default: ast.expr | None, has_default: bool, enum_values: EnumLookup
) -> tuple[str, list[str] | None]:
    """(type code, choices) of a field's annotation, as HfArgumentParser types it."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return "any", None
    members, optional = _strip_optional(ann)
    chosen = _hf_union_choice(ann)
    if chosen is not None:
        members = [chosen]
    names = [ast.unparse(m).split(".")[-1] for m in members]
    if len(members) != 1:
        return "any", None
    m, n = members[0], names[0]
    if n == "bool":
        default_none = isinstance(default, ast.Constant) and default.value is None
        return ("bool1" if optional and (default_none or not has_default) else "bool"), None
    if n in ("int", "float", "str"):
        return n, None
    if isinstance(m, ast.Subscript):
        head = ast.unparse(m.value).split(".")[-1]
        elts = m.slice.elts if isinstance(m.slice, ast.Tuple) else [m.slice]
        if head == "Literal":
            vals = [e.value for e in elts if isinstance(e, ast.Constant)]
            return ("lit", [str(v) for v in vals]) if len(vals) == len(elts) else ("any", None)
        if head in ("list", "List") and len(elts) == 1:
            inner = ast.unparse(elts[0]).split(".")[-1]
            return "list:" + (inner if inner in ("int", "float", "str") else "any"), None
        return "any", None
    values = enum_values(m)
    if values:
        return "lit", values
    return "any", None


def enum_values_of(node: ast.ClassDef) -> list[str] | None:
    """The string values of an Enum class's members (HfArgumentParser's choices), None when it is not
    an Enum with string values."""
    bases = [ast.unparse(b).split(".")[-1] for b in node.bases]
    if not any("Enum" in b for b in bases):
        return None
    vals = [
        s.value.value
        for s in node.body
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
    ]
    return vals or None


def is_dataclass(node: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in node.decorator_list)


FIELD_HELPERS = ("field", "HfArg")  # dataclasses.field; transformers.hf_argparser.HfArg returns field(...)


def field_call(value: ast.expr | None) -> ast.Call | None:
    """The `field(...)` or `HfArg(...)` call that defines a field, None for a plain default."""
    if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in FIELD_HELPERS:
        return value
    return None


def own_fields(
    node: ast.ClassDef, enum_values: EnumLookup, is_helper: Callable[[ast.Call], bool] | None = None
) -> dict[str, tuple[str, list[str] | None, str, int]]:
    """name -> (type, choices, marks, line) of the class's own init fields, in order. `is_helper`: whether a
    call is a repository's own function returning `field(...)` (its metadata is not followed: the field is
    `open`)."""
    out: dict[str, tuple[str, list[str] | None, str, int]] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        ann_text = ast.unparse(stmt.annotation)
        if ann_text.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar")):
            continue
        value = stmt.value
        default: ast.expr | None = value
        has_default = value is not None
        call = field_call(value)
        if call is not None:
            kws = {k.arg: k.value for k in call.keywords if k.arg}
            init = kws.get("init")
            if isinstance(init, ast.Constant) and init.value is False:
                out.pop(stmt.target.id, None)
                continue
            default = kws.get("default")
            has_default = "default" in kws or "default_factory" in kws or any(k.arg is None for k in call.keywords)
        typ, choices = type_of(stmt.annotation, default, has_default, enum_values)
        if call is not None:
            typ, choices = _with_metadata(call, typ, choices)
        elif isinstance(value, ast.Call) and is_helper is not None and is_helper(value):
            typ, choices, has_default = "open", None, True
        marks = ("r" if not has_default else "") + (
            "T" if isinstance(default, ast.Constant) and default.value is True else ""
        )
        out[stmt.target.id] = (typ, choices, marks, stmt.lineno)
    return out


def field_aliases(node: ast.ClassDef) -> dict[str, list[str] | None]:
    """name -> the extra option strings HfArgumentParser adds for a field (`metadata={"aliases": ...}`, HfArg's
    `aliases=`: hf_argparser.py `aliases = kwargs.pop("aliases", [])`), None where they are computed."""
    out: dict[str, list[str] | None] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        call = field_call(stmt.value)
        if call is None:
            continue
        kws = {k.arg: k.value for k in call.keywords if k.arg}
        node_al = kws.get("aliases")
        if node_al is None:
            meta = _metadata_items(kws.get("metadata"))
            node_al = meta.get("aliases") if meta else None
        if node_al is None:
            continue
        if isinstance(node_al, ast.Constant) and isinstance(node_al.value, str):
            out[stmt.target.id] = [node_al.value]
        elif isinstance(node_al, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node_al.elts
        ):
            out[stmt.target.id] = [str(e.value) for e in node_al.elts if isinstance(e, ast.Constant)]
        else:
            out[stmt.target.id] = None
    return out


def _metadata_items(md: ast.expr | None) -> dict[str, ast.expr] | None:
    """The keys of a `metadata=` given as a dict display or a `dict(k=v, ...)` call; None when not readable
    (`metadata=META`, `**extra`)."""
    if md is None:
        return {}
    if isinstance(md, ast.Dict):
        if any(k is None or not isinstance(k, ast.Constant) or not isinstance(k.value, str) for k in md.keys):
            return None
        return {str(k.value): v for k, v in zip(md.keys, md.values, strict=True) if isinstance(k, ast.Constant)}
    if isinstance(md, ast.Call) and ast.unparse(md.func) == "dict" and not md.args:
        if any(k.arg is None for k in md.keywords):
            return None
        return {str(k.arg): k.value for k in md.keywords}
    return None


def _with_metadata(call: ast.Call, typ: str, choices: list[str] | None) -> tuple[str, list[str] | None]:
    """HfArgumentParser starts a flag's argparse keywords from `field(metadata=...)` (`kwargs =
    field.metadata.copy()`; HfArg's `metadata=`, a dict display or `dict(...)`): FlagEmbedding's
    `field(metadata={"nargs": "+"})` on a `str` field takes several words.
    `nargs` '+'/'*' makes the field a list of its type; any other `nargs`, a `type` or an `action` of its own, or a
    metadata packlint cannot read, leaves the values unchecked (`any`); `choices` gives the choices."""
    if any(k.arg is None for k in call.keywords):
        return "open", None  # `field(**extra)`: whatever it holds may reach argparse
    meta = _metadata_items(next((k.value for k in call.keywords if k.arg == "metadata"), None))
    if meta is None:
        return "open", None  # `metadata=META` or `**extra`: whatever it holds reaches argparse
    if not meta:
        return typ, choices
    nargs = meta.get("nargs")
    if nargs is not None:
        plus = isinstance(nargs, ast.Constant) and nargs.value == "+"
        if plus and typ in ("int", "float", "str"):
            typ = f"list:{typ}"
        elif not (plus and typ.startswith("list:")):
            return "open", None  # '*' (no word at all is fine), '?', a number, a computed value
    if "type" in meta or "action" in meta:
        return "open", None
    ch = meta.get("choices")
    if ch is not None:
        words = ch.elts if isinstance(ch, (ast.List, ast.Tuple)) else []
        if typ == "str" and words and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in words):
            return "lit", [str(e.value) for e in words if isinstance(e, ast.Constant)]
        return (typ, None) if typ.startswith("list:") else ("open", None)  # (a list's items: not checked)
    return typ, choices


# ---- every argument dataclass of a package's files (the snapshot generator, and a vendored stack's code)

SKIP_FILES = ("vllm_serve.py",)  # TRL: a second ScriptArguments, not the training CLI's


def class_fields_of(node: ast.ClassDef, enums: dict) -> dict[str, list]:
    def enum_values(ann: ast.expr) -> list[str] | None:
        return enums.get(ast.unparse(ann).split(".")[-1])

    return {n: [t, c, m] for n, (t, c, m, _line) in own_fields(node, enum_values).items()}


def enums_of(tree: ast.Module) -> dict[str, list[str]]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            vals = enum_values_of(node)
            if vals:
                out[node.name] = vals
    return out


def aliases_of(tree: ast.Module) -> dict[str, str]:
    """A base class named through an alias: `from transformers import X as Y`, or `Y = X` at the top
    level or under a top-level `if` (LLaMA-Factory's `BaseTrainingArguments = Seq2SeqTrainingArguments`,
    the other branch being mcore_adapter's class, which `USE_MCA` selects)."""
    out: dict[str, str] = {}
    stmts = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.If):
            stmts += node.body + node.orelse
    for node in stmts:
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.asname and not a.name.startswith("Mca"):
                    out.setdefault(a.asname, a.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and len(node.targets) == 1:
            t = node.targets[0]
            if isinstance(t, ast.Name) and not node.value.id.startswith("Mca"):
                out.setdefault(t.id, node.value.id)
    return out


def read_classes(files: dict[str, bytes]) -> dict[str, dict]:
    trees = {}
    enums: dict[str, list[str]] = {}
    for name, data in files.items():
        if not name.endswith(".py"):
            continue
        try:
            trees[name] = ast.parse(data)
        except SyntaxError:
            continue
        enums.update(enums_of(trees[name]))
    classes: dict[str, dict] = {}
    for name, tree in sorted(trees.items()):
        aliases = aliases_of(tree)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [aliases.get(b, b) for b in (ast.unparse(b).split(".")[-1] for b in node.bases)]
            if not is_dataclass(node) and not any(b in classes for b in bases):
                continue
            if node.name in classes or name.endswith(SKIP_FILES):
                continue  # a second class of the same name (TRL's vllm_serve.py ScriptArguments): not the CLI's
            classes[node.name] = {
                "bases": [b for b in bases if b not in ("object", "ABC")],
                "fields": class_fields_of(node, enums) if is_dataclass(node) else {},
                "file": name,
            }
    return classes


def read_models(files: dict[str, bytes]) -> dict[str, dict]:
    """Every pydantic model of the files (a class deriving BaseModel, directly or through another model
    of the files): its bases and its field names, with each `Field(alias=...)` as a name too (axolotl's
    config schema sets `populate_by_name`). A field whose annotation is a pure string `Literal`/Enum that
    no before-validator may rewrite is "lit" with its choices (packlint/codebase/pydantic_models.py); one of
    plain bool/int/float is "pyd:bool"/"pyd:int"/"pyd:float"; any other field "any"."""
    from packlint.codebase.pydantic_models import RAISED, field_choices, raised_keys, rewritten, scalar_kind, str_enums

    trees = {}
    for name, data in files.items():
        if name.endswith(".py"):
            try:
                trees[name] = ast.parse(data)
            except SyntaxError:
                continue
    nodes: dict[str, tuple[ast.ClassDef, list[str]]] = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name not in nodes:
                nodes[node.name] = (node, [ast.unparse(b).split(".")[-1] for b in node.bases])

    def is_model(name: str, depth: int = 0) -> bool:
        if name == "BaseModel":
            return True
        found = nodes.get(name)
        return found is not None and depth < 20 and any(is_model(b, depth + 1) for b in found[1])

    enums = str_enums({n: c for n, (c, _b) in nodes.items()})
    models = {n: v for n, v in nodes.items() if is_model(n)}
    touched = rewritten(list(trees.values()), nodes)  # (axolotl's validation mixins are plain classes)
    classes: dict[str, dict] = {}
    for cname, (node, bases) in models.items():
        fields: dict[str, list] = {}
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            if ast.unparse(stmt.annotation).startswith(("ClassVar", "typing.ClassVar")):
                continue
            names = [stmt.target.id]
            value = stmt.value
            if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] == "Field":
                for k in value.keywords:
                    alias = k.value.value if isinstance(k.value, ast.Constant) else None
                    if k.arg in ("alias", "validation_alias") and isinstance(alias, str):
                        names.append(alias)
            keys = touched.get(cname, set())
            free = "*" in keys or any(n in keys for n in names)  # (a before-validator may rewrite it)
            choices = None if free else field_choices(stmt.annotation, enums)
            kind = "lit" if choices else (None if free else scalar_kind(stmt.annotation)) or "any"
            for n in names:
                fields[n] = [kind, choices, ""]
        classes[cname] = {"bases": [b for b in bases if b in nodes], "fields": fields, "file": ""}
    # keys no model defines that a before-validator raises on (a removed key that stops the job): a pseudo-class
    # whose "marks" name the validator
    defined = {f for c in classes.values() for f in c["fields"]}
    raised = {k: ["raise", None, v] for k, v in raised_keys(list(trees.values())).items() if k not in defined}
    if raised:
        classes[RAISED] = {"bases": [], "fields": raised, "file": ""}
    return classes


def no_flag(name: str, fields: dict) -> bool:
    """`no_X` is the `--no_X` switch HfArgumentParser adds for a bool field X (store_false, for a default of True:
    LingFengGold/STReasoner's `--no_use_fast_tokenizer` on a LLaMA-Factory command line); `fields`: name -> rows
    whose second item is the field's type."""
    return name.startswith("no_") and any(r[1] == "bool" for r in fields.get(name[3:], ()))

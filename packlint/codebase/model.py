"""The facts packlint learns from the code a launch runs, as plain typed records.

Everything here is made by reading Python source with `ast` (never importing or running it) and is
cached as JSON, so every record has `to_json` / `from_json`. Records use packlint's cheap `@record`
(no dataclasses: start-up time). The rule side reads these through `CodeFacts`; fields are only ever
added, never renamed, so the rules can rely on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packlint.records import factory, record

if TYPE_CHECKING:
    from packlint.model_types import CodeResolutionJSON


def _loc(file: str | None, line: int | None) -> str:
    return f"{file}:{line}" if file and line else (file or "?")


@record(eq=True)
class FlagSpec:
    """One command-line option of the program's parser, as argparse would see it.

    `options`: every option string (`--no-x`, `--disable-x`); `dest`: the attribute it sets;
    `action`: store | store_true | store_false | store_const | append | append_const | count |
    extend | version | help | BooleanOptionalAction | custom:NAME; `nargs`: None (one value),
    an int, '?', '*', '+' or 'A...' (REMAINDER) / 'custom' when not a literal; `type`: 'str' (argparse's
    default), 'int', 'float', 'bool', or the callable's name ('enum:AttnBackend', 'custom:parse_x');
    `choices`: the allowed values as text, or None when any value goes (also when the choices are
    computed at run time: `choices_note` then says so); `default`: the default as source text;
    `deprecated`: a note when the code says the flag is deprecated/removed (help text, argparse
    `deprecated=True`, or a `validate_args` rejection); `origin`: file:line of the `add_argument`
    (or of the dataclass field for generated flags); `condition`: why the flag may be absent
    ('only if HAVE_KITCHEN'), None when it is always defined; `generated_from`: 'Class.field' for a
    dataclass-generated flag."""

    options: tuple[str, ...]
    dest: str
    action: str = "store"
    nargs: object = None
    type: str = "str"
    choices: tuple[str, ...] | None = None
    choices_note: str | None = None
    default: str | None = None
    required: bool = False
    deprecated: str | None = None
    origin_file: str | None = None
    origin_line: int | None = None
    condition: str | None = None
    generated_from: str | None = None
    releases: str | None = (
        None  # 'stack:mask' (packlint.codebase.stack_schemas): a snapshot field only some releases define
    )

    @property
    def origin(self) -> str:
        return _loc(self.origin_file, self.origin_line)

    @property
    def takes_value(self) -> bool:
        """Whether the option consumes words after it (store_true/false/const/count do not)."""
        if self.action in (
            "store_true",
            "store_false",
            "store_const",
            "append_const",
            "count",
            "help",
            "version",
            "BooleanOptionalAction",
        ):
            return False
        return self.nargs != 0

    def to_json(self) -> dict:
        return {
            "options": list(self.options),
            "dest": self.dest,
            "action": self.action,
            "nargs": self.nargs,
            "type": self.type,
            "choices": None if self.choices is None else list(self.choices),
            "choices_note": self.choices_note,
            "default": self.default,
            "required": self.required,
            "deprecated": self.deprecated,
            "origin": {"file": self.origin_file, "line": self.origin_line},
            "condition": self.condition,
            "generated_from": self.generated_from,
            **({"releases": self.releases} if self.releases else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> FlagSpec:
        o = d.get("origin") or {}
        return cls(
            tuple(d["options"]),
            d["dest"],
            d.get("action", "store"),
            d.get("nargs"),
            d.get("type", "str"),
            None if d.get("choices") is None else tuple(d["choices"]),
            d.get("choices_note"),
            d.get("default"),
            bool(d.get("required")),
            d.get("deprecated"),
            o.get("file"),
            o.get("line"),
            d.get("condition"),
            d.get("generated_from"),
            d.get("releases"),
        )


@record
class FlagSchema:
    """The options a program's parser accepts.

    `flags`: option string -> FlagSpec (each spec appears under every one of its option strings; with
    `conflict_handler='resolve'` a later definition replaces an earlier one, as argparse does);
    `allow_abbrev`: argparse's prefix matching (Megatron turns it off); `conflict_handler`: 'error' or
    'resolve'; `closed`: True when an option not in `flags` makes the program exit with "unrecognized
    arguments" — False when anything lets unknown options through or when packlint could not see the
    whole parser; `open_reasons`: why it is not closed (file:line each); `parser_origin`: file:line of
    the `ArgumentParser(...)` whose `parse_args` the program calls; `notes`: what else a reader should
    know (conditional definitions, parse_known_args taken to be off); `positionals`: the parser defines
    positional arguments (so words after a switch may be theirs); `kind`: 'argparse', or 'hf' for
    transformers' HfArgumentParser (its bool fields read `True`/`true`/`1`/`yes` as one value,
    `string_to_bool`), or 'snapshot' for a Megatron-LM release snapshot."""

    flags: dict[str, FlagSpec] = factory(dict)
    allow_abbrev: bool = True
    conflict_handler: str = "error"
    closed: bool = False
    open_reasons: list[str] = factory(list)
    parser_origin: str | None = None
    notes: list[str] = factory(list)
    kind: str = "argparse"
    positionals: bool = False  # the parser defines positional arguments (serialised only when true)
    positional_room: int = 0  # the most words its positionals take (`nargs`); -1: any number (`*`, `+`); -2: REMAINDER

    def specs(self) -> list[FlagSpec]:
        """Each distinct flag once, in definition order."""
        seen: dict[int, FlagSpec] = {}
        for spec in self.flags.values():
            seen.setdefault(id(spec), spec)
        return list(seen.values())

    def close_names(self, name: str, n: int, cutoff: float) -> list[str]:
        """`difflib.get_close_matches(name, flags, n, cutoff)`, memoised on the schema: one schema
        serves every launch of a program, and a finding asks once for its message and once for its
        fix. Options too short or too long to reach `cutoff` are dropped first with difflib's own
        first bound (`real_quick_ratio`), so the result is the same list difflib gives."""
        cache: dict = self.__dict__.setdefault("_close_names", {})
        key = (name, max(n, 2), cutoff)  # the best n of difflib's answer for 2 are its answer for n = 1
        hit = cache.get(key)
        if hit is None:
            import difflib

            la = len(name)
            pool = [f for f in self.flags if la + len(f) and 2.0 * min(la, len(f)) / (la + len(f)) >= cutoff]
            hit = cache[key] = difflib.get_close_matches(name, pool, n=key[1], cutoff=cutoff)
        return hit[:n]

    def lookup(self, option: str) -> FlagSpec | None:
        """The spec argparse would use for `option` (`--x` or `--x=v`), prefix matching included when
        `allow_abbrev` (a unique prefix only, as argparse)."""
        name = option.split("=", 1)[0]
        spec = self.flags.get(name)
        # `-vIGV`: a one-letter option with its value attached (argparse's _get_option_tuples), unless a longer
        # single-dash option starts with the whole word
        attached = spec is None and len(name) > 2 and name[1] != "-" and name[:2] in self.flags
        if attached and not any(k.startswith(name) for k in self.flags if k[1:2] != "-"):
            return self.flags[name[:2]]
        if spec is not None or not self.allow_abbrev or not name.startswith("--"):
            return spec
        hits = {id(s): s for k, s in self.flags.items() if k.startswith(name)}
        return next(iter(hits.values())) if len(hits) == 1 else None

    def to_json(self) -> dict:
        specs = self.specs()
        return {
            "closed": self.closed,
            "open_reasons": list(self.open_reasons),
            "allow_abbrev": self.allow_abbrev,
            "conflict_handler": self.conflict_handler,
            "parser_origin": self.parser_origin,
            "notes": list(self.notes),
            "kind": self.kind,
            "flag_count": len(specs),
            "flags": [s.to_json() for s in specs],
            **({"positionals": True, "positional_room": self.positional_room} if self.positionals else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> FlagSchema:
        flags: dict[str, FlagSpec] = {}
        for fj in d.get("flags", []):
            spec = FlagSpec.from_json(fj)
            for o in spec.options:
                flags[o] = spec
        return cls(
            flags,
            d.get("allow_abbrev", True),
            d.get("conflict_handler", "error"),
            bool(d.get("closed")),
            list(d.get("open_reasons", [])),
            d.get("parser_origin"),
            list(d.get("notes", [])),
            d.get("kind", "argparse"),
            bool(d.get("positionals", False)),
            int(d.get("positional_room", -1 if d.get("positionals") else 0)),
        )


@record(eq=True)
class EnvRead:
    """One place the code reads an environment variable.

    `name`: the variable, or for a computed name (`os.environ.get(prefix + k)`) its known leading text
    with `computed=True` ('' when nothing is known: then every name is possibly read); `form`: how it is
    read, as written ('os.environ.get', 'os.getenv', 'os.environ[]', 'in os.environ', or a wrapper
    function's name); `parse`: how the value is used where visible ('int(...) == 1', 'bool(int(...))');
    `default`: the default as source text."""

    name: str
    file: str
    line: int
    form: str
    computed: bool = False
    parse: str | None = None
    default: str | None = None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "computed": self.computed,
            "file": self.file,
            "line": self.line,
            "form": self.form,
            "parse": self.parse,
            "default": self.default,
        }

    @classmethod
    def from_json(cls, d: dict) -> EnvRead:
        return cls(
            d["name"], d["file"], d["line"], d["form"], bool(d.get("computed")), d.get("parse"), d.get("default")
        )


@record
class ProgramResolution:
    """How a launch's program was matched to a source file.

    `program`: as written in the script ('train.py', '/workspace/P/x/train.py', '-m pkg.mod');
    `file`: the resolved file (absolute) or None; `root`: the code-base root it was found under;
    `how`: 'code-base' | 'path-map' | 'workdir' | 'script-checkout' | 'sub-project' | 'pythonpath' | 'absolute'
    (found) — or
    'not-found' | 'no-program' | 'unknown-program' | 'disabled' | 'read-error' (a packlint bug, said so);
    `detail`: one sentence for people
    ('longest existing suffix aiak_training_llm/train.py under /src/OV2 (the script's checkout)' or why
    not, with the places tried); `roots`: the roots searched, in order; `pythonpath`: the launch's own
    PYTHONPATH entries mapped onto disk (the module search path for the program's imports)."""

    program: str | None
    file: str | None
    how: str
    detail: str
    root: str | None = None
    roots: list[str] = factory(list)
    pythonpath: list[str] = factory(list)

    @property
    def found(self) -> bool:
        return self.file is not None

    def to_json(self) -> CodeResolutionJSON:
        return {
            "program": self.program,
            "file": self.file,
            "found": self.found,
            "how": self.how,
            "detail": self.detail,
            "root": self.root,
            "roots": list(self.roots),
            "pythonpath": list(self.pythonpath),
        }

    @classmethod
    def from_json(cls, d: dict) -> ProgramResolution:
        return cls(
            d.get("program"),
            d.get("file"),
            d["how"],
            d.get("detail", ""),
            d.get("root"),
            list(d.get("roots", [])),
            list(d.get("pythonpath", [])),
        )


@record
class SkippedFile:
    """A file packlint could not read (`reason`: 'SyntaxError at line 12: ...', 'not UTF-8', ...).
    Its flags and env reads are missing from the facts, so a schema that needed it is open."""

    file: str
    reason: str

    def to_json(self) -> dict:
        return {"file": self.file, "reason": self.reason}


@record
class CodeFacts:
    """Everything learned about the code one launch runs.

    `resolution`: how the program was found; `schema`: its flag schema, None when packlint found no
    parser (then no flag can be judged); `env_reads`: every read in the program's import closure;
    `files`: the files read (the import closure), `unresolved_imports`: modules imported but not found
    on disk (third-party libraries, mostly: reads inside them are not seen); `skipped`: files that did
    not parse; `startup`: the program's startup checks (validate_args and what runs before it) as
    plain JSON data (packlint.codebase.startup_checks), None when no validation was found."""

    resolution: ProgramResolution
    schema: FlagSchema | None = None
    env_reads: list[EnvRead] = factory(list)
    files: list[str] = factory(list)
    unresolved_imports: list[str] = factory(list)
    skipped: list[SkippedFile] = factory(list)
    startup: dict | None = None

    @property
    def known(self) -> bool:
        """The program's source was found and read."""
        return self.resolution.found

    def reads(self, name: str) -> bool | None:
        """True when the code reads `name`; None when only a computed-name read could (undecidable);
        False when no read of it is in the import closure."""
        for r in self.env_reads:
            if not r.computed and r.name == name:
                return True
        if any(r.computed and name.startswith(r.name) for r in self.env_reads):
            return None
        return False

    def reads_of(self, name: str) -> list[EnvRead]:
        return [r for r in self.env_reads if not r.computed and r.name == name]

    def env_names(self) -> list[str]:
        return sorted({r.name for r in self.env_reads if not r.computed})

    def to_json(self) -> dict:
        return {
            "resolution": self.resolution.to_json(),
            "schema": None if self.schema is None else self.schema.to_json(),
            "env_reads": [r.to_json() for r in self.env_reads],
            "files": list(self.files),
            "unresolved_imports": list(self.unresolved_imports),
            "skipped": [s.to_json() for s in self.skipped],
            **({"startup": self.startup} if self.startup is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> CodeFacts:
        return cls(
            ProgramResolution.from_json(d["resolution"]),
            None if d.get("schema") is None else FlagSchema.from_json(d["schema"]),
            [EnvRead.from_json(r) for r in d.get("env_reads", [])],
            list(d.get("files", [])),
            list(d.get("unresolved_imports", [])),
            [SkippedFile(s["file"], s["reason"]) for s in d.get("skipped", [])],
            d.get("startup"),
        )


from packlint.codebase.options import CodeOptions  # noqa: E402,F401  (kept here for the API)

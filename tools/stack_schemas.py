"""Generate rules/stack_schemas.json: the argument dataclasses and config keys of the training stacks
over several releases each, read from the real packages with `ast` (never imported).

    python tools/stack_schemas.py download /tmp/stack-pkgs     # pip download --no-deps the releases below
    python tools/stack_schemas.py build /tmp/stack-pkgs [STACK=GITDIR@COMMIT ...] > rules/stack_schemas.json
    python tools/stack_schemas.py build /tmp/stack-pkgs --only=swift --into=rules/stack_schemas.json > new.json
    python tools/stack_schemas.py older-names transformers rules/stack_schemas.json /tmp/tf/*.whl > new.json

A `STACK=GITDIR@COMMIT` adds that commit of the stack's main branch as a last pseudo-release
`main@COMMIT` (a bare clone is enough: the files are read with `git show`), so that keys added since
the last release on PyPI are known.

`download` runs `pip download --no-deps` for each release in RELEASES (wheels, or an sdist where PyPI
has no wheel). `build` reads each archive: for the dataclass stacks (transformers, TRL, LLaMA-Factory)
every class of the files in FILES with its bases and its annotated fields, typed the way transformers'
HfArgumentParser types them (hf_argparser.py `_parse_dataclass_field`); for verl, the keys of its
Hydra trainer configs (`verl/trainer/config/*.yaml`, nested keys joined with dots). The output keeps
each field once with a bit mask of the releases that define it, so it stays small.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from packlint.codebase.bridge_keys import FILES as BRIDGE_FILES  # noqa: E402
from packlint.codebase.bridge_keys import container_keys  # noqa: E402
from packlint.codebase.hf_fields import read_classes, read_models  # noqa: E402

RELEASES: dict[str, list[str]] = {
    "transformers": ["4.41.2", "4.46.3", "4.50.3", "4.53.3", "4.57.6", "5.5.4", "5.15.1", "5.24.0"],
    "trl": ["0.8.6", "0.12.2", "0.15.2", "0.19.1", "0.20.0", "0.24.0", "0.29.1", "1.0.0", "1.16.0"],
    "llamafactory": ["0.8.3", "0.9.0", "0.9.1", "0.9.2", "0.9.3", "0.9.4", "0.9.5"],
    # every release of verl, not the last of each minor: 0.6.0's algorithm.rollout_is* keys moved in 0.6.1
    "verl": [
        *("0.1", "0.2.0.post2", "0.3.0.post1", "0.4.0", "0.4.1", "0.5.0", "0.6.0", "0.6.1"),
        *("0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1"),
    ],
    # `trl sft|dpo|...` hands the keys its dataclasses lack to `accelerate launch` (trl/cli/commands/training.py)
    "accelerate": ["0.34.2", "1.10.1"],
    # OpenRLHF's argparse programs (openrlhf/cli/train_*.py), read by packlint's own static reader
    "openrlhf": ["0.8.11", "0.9.10", "0.10.4", "0.11.2"],
    # axolotl's config schema: pydantic models (keys and aliases; the choices of a pure string Literal/Enum field
    # no before-validator rewrites: packlint/codebase/pydantic_models.py). Regenerate it alone with
    #   build DIR --only=axolotl --into=rules/stack_schemas.json axolotl=<bare clone>@<main commit>
    "axolotl": ["0.8.1", "0.10.0", "0.13.2", "0.16.1", "0.19.0"],
    # ms-swift's argument dataclasses (`swift sft|pt|rlhf`): 2.x swift/llm/utils/argument.py, 3.x
    # swift/llm/argument/, 4.x swift/arguments/
    "swift": ["2.6.1", "3.0.3", "3.4.1", "3.8.3", "3.12.6", "4.0.4", "4.6.0"],
    # Megatron-Bridge's ConfigContainer keys (packlint/codebase/bridge_keys.py); PyPI has 0.3.0 and 0.3.1
    "megatron-bridge": ["0.3.0", "0.3.1"],
}
DIST = {
    "transformers": "transformers",
    "trl": "trl",
    "llamafactory": "llamafactory",
    "verl": "verl",
    "accelerate": "accelerate",
    "axolotl": "axolotl",
    "openrlhf": "openrlhf",
    "swift": "ms-swift",
    "megatron-bridge": "megatron-bridge",
}
FILES: dict[str, list[str]] = {
    "transformers": [
        "transformers/training_args.py",
        "transformers/training_args_seq2seq.py",
        "transformers/trainer_utils.py",
        "transformers/debug_utils.py",
        "transformers/utils/generic.py",
    ],
    "trl": ["trl/trainer/*config*.py", "trl/scripts/utils.py", "trl/scripts/*.py", "trl/trainer/utils.py"],
    "llamafactory": ["llamafactory/hparams/*.py"],
    "accelerate": ["accelerate/commands/launch.py"],
    "openrlhf": ["openrlhf/*.py", "openrlhf/*/*.py", "openrlhf/*/*/*.py"],
    "axolotl": ["axolotl/utils/schemas/*.py", "axolotl/utils/config/models/input/v0_4_1/*.py"],
    "swift": [
        "swift/llm/utils/argument.py",
        "swift/llm/argument/*.py",
        "swift/llm/argument/base_args/*.py",
        "swift/arguments/*.py",
        "swift/arguments/base_args/*.py",
        "swift/trainers/arguments.py",
        "swift/rlhf_trainers/arguments.py",
        "swift/rlhf_trainers/*mixin*.py",
        "swift/trainers/*mixin*.py",
        "swift/ray_utils/arguments.py",
        "swift/ray/arguments.py",
    ],
    "megatron-bridge": [f"megatron/bridge/{f}" for f in BRIDGE_FILES],
    # the trainer configs Hydra composes (`_generated_*` is the composed form from 0.5 on)
    "verl": [
        "verl/trainer/config/ppo_trainer.yaml",
        "verl/trainer/config/ppo_megatron_trainer.yaml",
        "verl/trainer/config/_generated_ppo_trainer.yaml",
        "verl/trainer/config/_generated_ppo_megatron_trainer.yaml",
    ],
}


def download(dest: str) -> None:
    os.makedirs(dest, exist_ok=True)
    for stack, releases in RELEASES.items():
        for rel in releases:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", dest, f"{DIST[stack]}=={rel}"]
            if subprocess.run(cmd, check=False).returncode != 0:
                print(f"failed: {DIST[stack]}=={rel}", file=sys.stderr)


def _archive(dest: str, stack: str, rel: str) -> str | None:
    for name in sorted(os.listdir(dest)):
        low = name.lower().replace("-", "_")
        if low.startswith(f"{DIST[stack].replace('-', '_')}_{rel}") and (
            name.endswith(".whl") or name.endswith(".tar.gz")
        ):
            rest = low[len(DIST[stack]) + 1 + len(rel) :]
            if rest[:1] in ("-", "_", ".") and not rest[1:2].isdigit():
                return os.path.join(dest, name)
    return None


def _members(path: str, patterns: list[str]) -> dict[str, bytes]:
    """The archive's files matching the patterns (paths without an sdist's top folder or src/)."""
    out: dict[str, bytes] = {}
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                short = n.split(".data/purelib/", 1)[-1]  # a wheel with a compiled part (OpenRLHF)
                if any(fnmatch.fnmatch(short, p) for p in patterns):
                    out[short] = z.read(n)
        return out
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if not m.isfile():
                continue
            n = m.name.split("/", 1)[-1]
            n = n[4:] if n.startswith("src/") else n
            if any(fnmatch.fnmatch(n, p) for p in patterns):
                f = t.extractfile(m)
                if f is not None:
                    out[n] = f.read()
    return out


# ---- dataclasses, typed as HfArgumentParser types them (packlint/codebase/hf_fields.py) ----------


def _argparse_programs(files: dict[str, bytes]) -> dict[str, dict]:
    """The flags of each `openrlhf/cli/train_*.py` as packlint's static reader sees them (the package
    written to a temporary directory, never imported), one "class" per program: {option: [spec JSON]}."""
    import tempfile

    from packlint.codebase import CodeOptions, schema_for_program

    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
        for name in sorted(files):
            base = os.path.basename(name)
            if not (name.startswith("openrlhf/cli/") and base.startswith("train_")):
                continue
            schema = schema_for_program(tmp, os.path.join(tmp, name), CodeOptions(use_cache=False))
            if schema is None or not schema.closed:
                continue
            fields = {}
            for spec in schema.specs():
                # [other options, dest, action, nargs, type, choices]: what PK201/PK202 read
                short = [list(spec.options[1:]), spec.dest, spec.action, spec.nargs, spec.type, spec.choices]
                fields[spec.options[0]] = ["spec", json.dumps(short, separators=(",", ":")), ""]
            out[name[:-3].replace("/", ".")] = {"bases": [], "fields": fields, "file": name}
    return out


def _quoted(files: dict[str, bytes]) -> set[str]:
    """The identifier-like string literals of the argument code (`getattr(args, "kt_config")`)."""
    out = set()
    for name, data in files.items():
        if not name.endswith(".py"):
            continue
        try:
            tree = ast.parse(data)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                out.add(node.value)
    return out


def _launch_options(files: dict[str, bytes]) -> dict[str, dict]:
    """The long option strings of `accelerate launch` (add_argument calls in commands/launch.py)."""
    opts: dict[str, list] = {}
    for data in files.values():
        for node in ast.walk(ast.parse(data)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
                        opts[a.value[2:]] = ["opt", None, ""]
    return {"launch": {"bases": [], "fields": opts, "file": "accelerate/commands/launch.py"}}


def _yaml_keys(files: dict[str, bytes]) -> dict[str, dict]:
    import yaml

    out: dict[str, dict] = {}
    for name, data in sorted(files.items()):
        if not name.endswith(".yaml"):
            continue
        try:
            doc = yaml.safe_load(io.BytesIO(data))
        except yaml.YAMLError:
            continue
        if not isinstance(doc, dict):
            continue
        keys: dict[str, list] = {}

        def walk(d: dict, prefix: str, keys: dict = keys) -> None:
            for k, v in d.items():
                if not isinstance(k, str):
                    continue
                key = prefix + k
                if isinstance(v, dict) and v:
                    keys[key] = ["dict", None, ""]
                    walk(v, key + ".")
                else:
                    keys[key] = [type(v).__name__ if v is not None else "any", None, ""]

        walk(doc, "")
        out[name.split("verl/trainer/config/", 1)[-1]] = {"bases": [], "fields": keys, "file": name}
    return out


def _members_git(gitdir: str, commit: str, patterns: list[str]) -> dict[str, bytes]:
    """The files of a commit of a git repository (a main branch newer than the last release), the
    paths without src/, as in a wheel."""
    names = subprocess.run(
        ["git", f"--git-dir={gitdir}", "ls-tree", "-r", "--name-only", commit],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    out = {}
    for n in names:
        short = n[4:] if n.startswith("src/") else n
        if any(fnmatch.fnmatch(short, p) for p in patterns):
            out[short] = subprocess.run(
                ["git", f"--git-dir={gitdir}", "show", f"{commit}:{n}"], capture_output=True, check=True
            ).stdout
    return out


def _read_stack(stack: str, rel: str, files: dict[str, bytes]) -> dict[str, dict]:
    """The "classes" of one release of a stack (dataclasses, config keys or argparse programs)."""
    if stack == "verl":
        return _yaml_keys(files)
    if stack == "accelerate":
        return _launch_options(files)
    if stack == "axolotl":
        return read_models(files)
    if stack == "openrlhf":
        return _argparse_programs(files)
    if stack == "megatron-bridge":
        keys = container_keys({n.split("megatron/bridge/", 1)[-1]: d for n, d in files.items()}) or {}
        return {"ConfigContainer": {"bases": [], "fields": {k: ["any", None, ""] for k in keys}}}
    classes = read_classes(files)
    _report_unresolved(stack, rel, classes)
    return classes


def build(dest: str, heads: dict[str, tuple[str, str]] | None = None, only: set[str] | None = None) -> dict:
    """`heads`: stack -> (git dir, commit) of a main branch to add after the releases ("main@abc1234");
    `only`: the stacks to build (the others are left out)."""
    out: dict = {"format": 1, "generated_by": "tools/stack_schemas.py", "stacks": {}}
    for stack, releases in RELEASES.items():
        if only is not None and stack not in only:
            continue
        have = []
        merged: dict[str, dict] = {}
        head = (heads or {}).get(stack)
        quoted: set[str] = set()
        for rel in releases + ([f"main@{head[1][:10]}"] if head else []):
            if rel.startswith("main@") and head is not None:
                files = _members_git(head[0], head[1], FILES[stack])
            else:
                path = _archive(dest, stack, rel)
                if path is None:
                    print(f"missing archive: {stack} {rel}", file=sys.stderr)
                    continue
                files = _members(path, FILES[stack])
            idx = len(have)
            have.append(rel)
            if stack in ("llamafactory", "trl"):
                quoted.update(_quoted(files))
            classes = _read_stack(stack, rel, files)
            for cname, c in classes.items():
                mc = merged.setdefault(cname, {"bases": {}, "fields": {}, "mask": 0})
                mc["mask"] |= 1 << idx
                mc["bases"][",".join(c["bases"])] = mc["bases"].get(",".join(c["bases"]), 0) | (1 << idx)
                for fname, spec in c["fields"].items():
                    key = json.dumps(spec)
                    per = mc["fields"].setdefault(fname, {})
                    per[key] = per.get(key, 0) | (1 << idx)
        stack_out: dict = {"releases": have, "classes": {}, "choices": []}
        choice_ids: dict[str, int] = {}
        for cname, mc in sorted(merged.items()):
            fields = {}
            for fname, per in mc["fields"].items():
                # one entry per distinct typing: [type, choices (an index into "choices"), marks, release mask]
                rows = []
                for k, m in sorted(per.items(), key=lambda kv: kv[1]):
                    typ, choices, marks = json.loads(k)
                    cid = None
                    if choices is not None:
                        ck = json.dumps(choices)
                        if ck not in choice_ids:
                            choice_ids[ck] = len(stack_out["choices"])
                            stack_out["choices"].append(choices)
                        cid = choice_ids[ck]
                    rows.append([typ, cid, marks, m])
                fields[fname] = rows
            stack_out["classes"][cname] = {
                "mask": mc["mask"],
                "bases": [[b.split(",") if b else [], m] for b, m in mc["bases"].items()],
                "fields": fields,
            }
        if quoted:  # names the stack's argument code quotes that are no field: keys it may take another road
            fields_all = {f for c in stack_out["classes"].values() for f in c["fields"]}
            # fields of classes outside the training parser (LLaMA-Factory's _KTransformersRuntimeArguments)
            _NOT_TRAIN = {f for n, c in stack_out["classes"].items() if n.startswith("_") for f in c["fields"]}
            stack_out["quoted"] = sorted(q for q in quoted if "_" in q and q not in fields_all or q in _NOT_TRAIN)
        if stack == "openrlhf":  # {program module: {first option: [[spec JSON, release mask], ...]}}
            progs = {}
            for cname, c in stack_out["classes"].items():
                progs[cname] = {
                    o: [[json.loads(stack_out["choices"][row[1]]), row[3]] for row in rows]
                    for o, rows in c["fields"].items()
                }
            stack_out = {"releases": have, "programs": progs}
        if stack == "accelerate":  # option names only: {option: release mask}
            opts = (stack_out["classes"].get("launch") or {}).get("fields", {})
            stack_out = {"releases": have, "options": {o: rows[0][3] for o, rows in sorted(opts.items())}}
        if stack == "megatron-bridge":  # {key: release mask}, `section.*` for a section whose keys are open
            fields = (stack_out["classes"].get("ConfigContainer") or {}).get("fields", {})
            stack_out = {"releases": have, "keys": {k: rows[0][3] for k, rows in sorted(fields.items())}}
        if stack == "verl":  # Hydra keys: the name and its releases are enough (values are not typed here)
            stack_out = _verl_keys(stack_out)
        out["stacks"][stack] = stack_out
    return out


# the classes a stack's launches parse into: each base of theirs must be read in every release, else the
# fields it brings would count as removed in that release
ROOTS = {
    "swift": ("SftArguments", "TrainArguments", "RLHFArguments", "PtArguments", "PretrainArguments"),
    "trl": ("SFTConfig", "GRPOConfig", "DPOConfig"),
    "llamafactory": ("FinetuningArguments", "DataArguments", "ModelArguments"),
}
# plain classes without fields that argument classes derive from (ms-swift 2.x's ArgumentsBase)
_NO_FIELDS = {"ArgumentsBase", "object", "ABC", "Generic"}


def _report_unresolved(stack: str, rel: str, classes: dict[str, dict]) -> None:
    seen: set[str] = set()

    def walk(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        c = classes.get(name)
        if c is None:
            if name not in _NO_FIELDS and not name.endswith("TrainingArguments"):  # (transformers' own)
                print(f"{stack} {rel}: base {name} not read", file=sys.stderr)
            return
        for b in c["bases"]:
            if b != name:
                walk(b)

    for root in ROOTS.get(stack, ()):
        if root in classes:
            walk(root)


def _verl_keys(stack_out: dict) -> dict:
    """The verl trainer configs as {config name: {dotted key: release mask}} (`_generated_ppo_trainer.yaml`
    and `ppo_trainer.yaml` are one config: the composed form of later releases)."""
    configs: dict[str, dict[str, int]] = {}
    for cname, c in stack_out["classes"].items():
        name = cname.removeprefix("_generated_").removesuffix(".yaml")
        keys = configs.setdefault(name, {})
        for key, rows in c["fields"].items():
            for row in rows:
                keys[key] = keys.get(key, 0) | row[3]
    return {"releases": stack_out["releases"], "configs": configs}


_OLDER_FILES = {"transformers": ("transformers/training_args.py", "transformers/training_args_seq2seq.py")}
_OLDER_CLASSES = {"transformers": ("TrainingArguments", "Seq2SeqTrainingArguments")}


def older_names(stack: str, wheels: list[str]) -> dict:
    """The field names of the stack's argument classes in releases older than its snapshots (one wheel per release,
    `pip download --no-deps transformers==4.N.0` for N in 0..40): names only, no types. Under a pin older than every
    snapshot, a flag that is one of them is not judged (HLTCHKUST/cqr4cqa pins transformers 4.4.2, whose
    TrainingArguments has sharded_ddp, gone by the oldest snapshot)."""

    names: set[str] = set()
    versions: list[str] = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            for rel in _OLDER_FILES[stack]:
                try:
                    tree = ast.parse(z.read(rel))
                except KeyError:
                    continue
                for node in tree.body:
                    if isinstance(node, ast.ClassDef) and node.name in _OLDER_CLASSES[stack]:
                        names.update(
                            b.target.id
                            for b in node.body
                            if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name)
                        )
        versions.append(os.path.basename(wheel).split("-")[1])
    versions.sort(key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v)))
    return {"from": versions[0], "to": versions[-1], "names": sorted(n for n in names if not n.startswith("_"))}


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[0] == "older-names":  # older-names STACK SCHEMAS.json WHEEL...
        with open(argv[2], encoding="utf-8") as fh:
            out = json.load(fh)
        out.setdefault("older_names", {})[argv[1]] = older_names(argv[1], argv[3:])
        json.dump(out, sys.stdout, separators=(",", ":"), sort_keys=True)
        sys.stdout.write("\n")
        return 0
    if len(argv) == 2 and argv[0] == "download":
        download(argv[1])
        return 0
    if len(argv) >= 2 and argv[0] == "build":
        heads = {}
        only: set[str] | None = None
        into = None
        for spec in argv[2:]:
            if spec.startswith("--only="):  # rebuild these stacks only, into the JSON of --into=
                only = set(spec[7:].split(","))
                continue
            if spec.startswith("--into="):
                into = spec[7:]
                continue
            # STACK=GITDIR@COMMIT: a main branch newer than the last release
            stack, _, rest = spec.partition("=")
            gitdir, _, commit = rest.rpartition("@")
            heads[stack] = (gitdir, commit)
        out = build(argv[1], heads, only)
        if into:  # the other stacks as they were
            with open(into, encoding="utf-8") as fh:
                old = json.load(fh)
            old["stacks"].update(out["stacks"])
            out = old
        json.dump(out, sys.stdout, separators=(",", ":"), sort_keys=True)
        sys.stdout.write("\n")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

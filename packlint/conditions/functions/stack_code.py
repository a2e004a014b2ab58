"""Rules whose failure is made by a stack's own code, decided from the copy the checkout vendors (issue 26 item 4:
"rules decided from the stack's code use them"). A checkout that vendors the stack runs that copy: where the copy's
code does not make the check the rule stands for, the rule is undecided, not upstream's verdict."""

from __future__ import annotations

import os
import re
from typing import Any

from packlint.caches import memo
from packlint.conditions.tree import BOOL, Builtin, EvalContext, Function, Unk

_MAX_SOURCE = 2 * 1024 * 1024
# upstream: `max_seq_len = batch["attention_mask"].shape[-1]` then `assert max_token_len >= max_seq_len`
_SEQ_LEN = re.compile(r"^[ \t]*max_seq_len\s*=\s*(.+)$", re.M)
_ASSERT = re.compile(r"\bassert\s+max_token_len\s*>=\s*max_seq_len\b")
# the Search-R1 family's agent loop (LLMGenerationManager.run_llm_loop): the update batch's width is what the
# loop builds from the data, not the rollout's padded max_prompt_length + max_response_length
_AGENT_LOOP = re.compile(r"\brun_llm_loop\b|\bLLMGenerationManager\b")
_VERDICTS: dict[str, str | None] = memo()


def _vendored_verl(ctx: EvalContext) -> str | None:
    """The package directory of the verl the checkout vendors (its version file's), or None."""
    from packlint.configs.versions import version_in_code

    script = ctx.model.get("script")
    if not script or not os.path.exists(str(script)):
        return None
    found = version_in_code("verl", os.path.dirname(os.path.abspath(str(script))))
    if found is None:
        return None
    path = found[1]
    return os.path.dirname(os.path.dirname(path)) if path.endswith("version/version") else os.path.dirname(path)


def _read(path: str) -> str | None:
    from packlint.safe_io import read_regular

    data = read_regular(path, _MAX_SOURCE) if os.path.isfile(path) else None
    return None if data is None else data.decode("utf-8", "replace")


def _padded_width_verdict(package: str) -> str | None:
    """Why the vendored verl at `package` does not assert the token budget against the padded width of
    max_prompt_length + max_response_length; None when it does (or the files are not there to say)."""
    if package in _VERDICTS:
        return _VERDICTS[package]
    why = None
    trainer = _read(os.path.join(package, "trainer", "ppo", "ray_trainer.py"))
    balancing = _read(os.path.join(package, "utils", "seqlen_balancing.py"))
    if trainer is not None and _AGENT_LOOP.search(trainer):
        why = (
            f"the vendored verl's trainer ({os.path.join(package, 'trainer/ppo/ray_trainer.py')}) builds its update "
            "batches with its own agent loop (run_llm_loop): their width comes from the data"
        )
    elif balancing is not None:
        widths = _SEQ_LEN.findall(balancing)
        if not _ASSERT.search(balancing):
            where = f"{package}/utils/seqlen_balancing.py"
            why = f"the vendored verl's rearrange_micro_batches ({where}) makes no such assert"
        elif any("shape[" not in w or ".sum(" in w for w in widths):
            why = (
                f"the vendored verl's rearrange_micro_batches ({package}/utils/seqlen_balancing.py) measures the "
                "sequence length otherwise than by the padded width"
            )
    _VERDICTS[package] = why
    return why


def _f_verl_pads_update(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """True where verl's own code asserts the dynamic-batch token budget against the padded width of
    max_prompt_length + max_response_length (upstream, or a vendored copy that does); undecided where the checkout
    vendors a verl whose code does not (Lyken17/threadweaver, aHuaXu/self-researcher)."""
    package = _vendored_verl(ctx)
    why = _padded_width_verdict(package) if package is not None else None
    return True if why is None else Unk(why, "unknown")


STACK_CODE_FUNCTIONS: dict[str, Function] = {
    "verl_pads_update": Function(
        (),
        (),
        BOOL,
        _f_verl_pads_update,
        "verl's code (a vendored copy's where the checkout has one) asserts the dynamic-batch token budget against "
        "the padded prompt + response width",
    ),
}


def by_keys_premise(ctx: EvalContext) -> tuple[str, str] | Unk | None:
    """What a key finding on a file only its keys tied to the stack (config `recognised_by: keys`: `python -m
    m_trainer.cli --config x.yaml`) rests on when the launched code does not show it parses the file as the stack
    does: the program not found, or found with a parser that only takes the file's path (NJUxlj/AGroup-DPO's own
    CLI, which reads the YAML itself for one backend). None when the program's own parser reads the file."""
    from packlint import evidence
    from packlint.codebase.argparse_reader import file_keys
    from packlint.conditions.functions.codebase_common import _code
    from packlint.model_view import variant_config

    cfg: Any = variant_config(ctx.variant) or {}
    if cfg.get("recognised_by") != "keys":
        return None
    facts = _code(ctx)
    schema = getattr(facts, "schema", None)
    if facts is not None and facts.known and schema is not None and (file_keys(schema)[0] or _trl_reads(schema)):
        return None
    stack = str(cfg.get("stack"))
    top = _IMPORT_NAMES.get(stack, stack.replace("-", "_"))
    if facts is not None and facts.known and not _imports(facts, top):
        # the program's own code, read whole, never imports the stack: the file is its own business
        return Unk(f"the launched program reads the file itself and imports no {top}", "unknown")
    how = "its code is not in the checkout" if facts is None or not facts.known else "its code does not show it"
    return (evidence.ASSUMED, f"the launched program reads the file as {cfg.get('stack')} does ({how})")


def close_matches(word: str, possibilities: list[str], n: int, cutoff: float) -> list[str]:
    """difflib's close matches (a misspelt key's suggestion), imported only when one is asked for."""
    import difflib

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


# the import name of a stack whose name differs from it
_IMPORT_NAMES = {"hf-trainer": "transformers", "megatron-swift": "swift", "megatron-bridge": "megatron"}


def _imports(facts: Any, top: str) -> bool:
    """The program's import closure reaches the package `top` (a file of it read, or an import of it not found)."""
    if any(m == top or m.startswith(top + ".") for m in facts.unresolved_imports):
        return True
    return any(f"/{top}/" in f.replace(os.sep, "/") for f in facts.files)


def _trl_reads(schema: Any) -> bool:
    """The program's own TrlParser.parse_args_and_config reads the `--config` file (argparse_calls' note)."""
    from packlint.codebase.argparse_reader.argparse_calls import TRL_CONFIG_NOTE

    return any(str(n).startswith(TRL_CONFIG_NOTE) for n in getattr(schema, "notes", None) or [])

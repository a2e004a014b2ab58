"""Why a file a launch names and the checkout lacks is the machine's, or not opened at all: the premises of PK601
that read the launch's words (packlint.configs.launch builds the configuration and asks)."""

from __future__ import annotations

import os
from typing import Any

from packlint.values import Known


def other_engine(word: Any, flags: dict) -> str | None:
    """The file is given to a DeepSpeed option while the launch picks another engine (wenet-e2e/wenet's recipes:
    `--train_engine torch_ddp ... --deepspeed_config conf/ds_stage2.json`; wenet opens the JSON only when
    train_engine is deepspeed): the program does not open it."""
    given = next((name for name, occs in flags.items() for o in occs if word in o.args), None)
    if given is None or "deepspeed" not in given.lower():
        return None
    for name, occs in flags.items():
        low = name.lower().lstrip("-")
        # (`--backend nccl` and `--accelerator gpu` name a transport and a device, not the training engine)
        if not any(k in low for k in ("engine", "strategy")) or "deepspeed" in low:
            continue
        arg = occs[-1].args[0] if occs[-1].args else None
        if isinstance(arg, Known) and arg.text and "deepspeed" not in arg.text.lower() and arg.text.lower() != "ds":
            return f"the launch picks {name} {arg.text}, not DeepSpeed: the program opens {given}'s file only under it"
    return None


def datasets_elsewhere(path_text: str, dirs: list[str], flags: dict) -> tuple[str, str] | None:
    """A LLaMA-Factory launch whose `--dataset` names no dataset_info.json of the checkout defines (in its
    `--dataset_dir`, `data` by default): LLaMA-Factory reads them from that file, so the launch runs in a
    LLaMA-Factory tree of the machine (yueliu1999/GuardReasoner's train/README.md: "move the data to the data
    folder in LLaMA-Factory"), and a relative path is relative to that tree."""
    import json

    from packlint import evidence
    from packlint.safe_io import read_regular

    def text(name: str) -> str | None:
        occs = flags.get(name) or []
        arg = occs[-1].args[0] if occs and occs[-1].args else None
        return arg.text if isinstance(arg, Known) else None

    named = text("--dataset")
    if not named or os.path.isabs(path_text):
        return None
    wanted = {n.strip() for n in named.split(",") if n.strip()}
    folder = text("--dataset_dir") or "data"
    for d in dirs:
        data = read_regular(os.path.join(d, folder, "dataset_info.json"), 8 << 20)
        if data is None:
            continue
        try:
            info = json.loads(data)
        except ValueError:
            return None  # (a file it cannot read says nothing)
        if isinstance(info, dict) and wanted <= set(info):
            return None
    shown = ", ".join(sorted(wanted)[:3])
    return (
        evidence.MACHINE,
        f"no dataset_info.json of the checkout ({folder}/) defines the launch's datasets ({shown}): it runs in a "
        f"LLaMA-Factory tree of the machine, where {path_text} is relative to",
    )


_PLACEHOLDERS = (".gitkeep", ".keep", ".gitignore", ".placeholder")


def placeholder(path_text: str, dirs: list[str]) -> tuple[str, str] | None:
    """The file's folder is in the checkout but holds only a placeholder (zjunlp/OneGen's data/eval_data/qa/README.md:
    "download the data here"; a `.gitkeep`): what goes there is put in at set-up, so its absence is the machine's."""
    from packlint import evidence
    from packlint.configs.elsewhere import checkout_root

    root = checkout_root(dirs)
    if root is None or os.path.isabs(path_text):
        return None
    for d in dirs:
        folder = os.path.dirname(os.path.normpath(os.path.join(d, path_text)))
        if folder in (os.path.normpath(d), os.path.normpath(root)) or not folder.startswith(root.rstrip("/") + "/"):
            continue
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        names = [e.name for e in entries]
        if names and all(
            e.is_file() and (e.name.lower().startswith("readme") or e.name in _PLACEHOLDERS) for e in entries
        ):
            shown = os.path.relpath(folder, root)
            return (
                evidence.MACHINE,
                f"{shown}/ holds only {', '.join(sorted(names)[:2])}: its files are put there at set-up",
            )
    return None

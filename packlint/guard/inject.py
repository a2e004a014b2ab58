"""`packlint run --guard`: the guard in every Python process the launch script starts, without edits.

`packlint/guard/_site/sitecustomize.py` (first on PYTHONPATH) calls `install()` when PACKLINT_GUARD is set.
`install()` puts one finder at the front of `sys.meta_path` that answers only for three module names and
patches each right after it is executed:

- `transformers.trainer`: `Trainer.__init__` adds a `PackingGuard` callback (TRL's SFTTrainer,
  LLaMA-Factory's, axolotl's and ms-swift's trainers all subclass it and call it);
- `megatron.core.models.gpt.gpt_model` and `megatron.core.models.multimodal.llava_model`: `GPTModel.__init__`
  and `LLaVAModel.__init__` end with `install_megatron(self)`.

No torch, no transformers and not even importlib.abc are imported here (the finder and the loader follow
the protocols without the base classes): a process that never imports them pays one dictionary
lookup per import. Nothing is patched until the process imports the module itself.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


def _say(message: str) -> None:
    print(f"packlint-guard: {message}", file=sys.stderr, flush=True)


def _patch_trainer(mod: ModuleType) -> None:
    trainer = mod.Trainer
    original = trainer.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        from packlint.guard.hf import PackingGuard

        if not any(isinstance(cb, PackingGuard) for cb in self.callback_handler.callbacks):
            self.add_callback(PackingGuard())

    trainer.__init__ = __init__


def _patch_model_class(name: str) -> Callable[[ModuleType], None]:
    def patch(mod: ModuleType) -> None:
        cls = getattr(mod, name)
        original = cls.__init__

        @functools.wraps(original)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            from packlint.guard.megatron import install_megatron

            install_megatron(self)  # a LLaVAModel's GPTModel is hooked again, as its language model

        cls.__init__ = __init__

    return patch


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "transformers.trainer": _patch_trainer,
    "megatron.core.models.gpt.gpt_model": _patch_model_class("GPTModel"),
    "megatron.core.models.multimodal.llava_model": _patch_model_class("LLaVAModel"),
}


class _PatchingLoader:
    """The module's own loader, then the patch (the loader protocol: create_module, exec_module)."""

    def __init__(self, loader: Any, patch: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.patch = patch

    def create_module(self, spec: Any) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        try:
            self.patch(module)
        except Exception as exc:  # noqa: BLE001 - never break the user's import
            _say(f"ERROR cannot hook {module.__name__} ({type(exc).__name__}: {exc}); this process runs unguarded")


class GuardFinder:
    """Finds nothing itself: asks the finders after it, and wraps the loader of the three modules."""

    def __init__(self) -> None:
        self.pending = dict(PATCHES)

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        patch = self.pending.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    del self.pending[fullname]
                    spec.loader = _PatchingLoader(spec.loader, patch)  # type: ignore[assignment]  # the protocol
                if not self.pending:
                    uninstall()
                return spec
        return None


def install() -> GuardFinder:
    for finder in sys.meta_path:
        if isinstance(finder, GuardFinder):
            return finder
    finder = GuardFinder()
    sys.meta_path.insert(0, finder)
    for name in [n for n in PATCHES if n in sys.modules]:  # imported before the hook: patch in place
        try:
            finder.pending.pop(name)(sys.modules[name])
        except Exception as exc:  # noqa: BLE001
            _say(f"ERROR cannot hook {name} ({type(exc).__name__}: {exc})")
    return finder


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, GuardFinder)]

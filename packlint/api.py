"""The library entry points other stages and tools use (the probe, the rule engine, tests)."""

from __future__ import annotations

from pathlib import Path


def inspect_script(
    path: str | Path,
    *,
    env: dict[str, str] | None = None,
    inherit_env: bool = False,
    args: list[str] | tuple[str, ...] = (),
    known_env: tuple[str, ...] = (),
    text: bytes | None = None,
    display_path: str | None = None,
    stack_versions: dict[str, str] | None = None,
) -> dict:
    """Build the launch model of one script and return it as the JSON-able dict documented in
    docs/launch-model.md (the same document `packlint inspect --format json` prints).

    `env`: the assumed caller environment; `inherit_env`: add os.environ under it; `args`: the script's
    positional arguments; `known_env`: names the cluster always sets (unknown but set);
    `text`: the script bytes (read from `path` when None, e.g. stdin); `display_path`: the name to report;
    `stack_versions`: pins of stack versions (packlint configuration `stack-versions`), used when
    neither the code base nor the installed distributions say a launch's stack version.
    Raises packlint.errors.PacklintError for unreadable input.
    """
    from packlint.launch_model import build_script_model

    return build_script_model(
        path,
        env=env,
        inherit_env=inherit_env,
        args=list(args),
        known_env=tuple(known_env),
        text=text,
        display_path=display_path,
        stack_versions=stack_versions,
    ).to_json()

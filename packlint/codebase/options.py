"""How to find the launched code: a plain class, so configuration can build it without importing the
facts' records (start-up time)."""

from __future__ import annotations


class CodeOptions:
    """How to find code: `code_bases` (--code-base / config `code-base`, absolute dirs), `path_maps`
    ((container prefix, local dir) pairs from --path-map / config `path-map`), `enabled` (False with
    --no-code-base), `use_cache` (False with --no-cache), `cache_dir` (None: the user cache dir, or
    PACKLINT_CACHE_DIR); `megatron_version` (--megatron-version / config `megatron-version`, the rules
    side): the Megatron-LM release snapshot that checks a Megatron program whose code is not found
    (None: every shipped release)."""

    __slots__ = (
        "code_bases",
        "path_maps",
        "enabled",
        "use_cache",
        "cache_dir",
        "megatron_version",
        "root_memo",
        "file_memo",
    )

    def __init__(
        self,
        code_bases: list[str] | None = None,
        path_maps: list[tuple[str, str]] | None = None,
        enabled: bool = True,
        use_cache: bool = True,
        cache_dir: str | None = None,
        megatron_version: str | None = None,
    ) -> None:
        self.code_bases = list(code_bases or [])
        self.path_maps = list(path_maps or [])
        self.enabled = enabled
        self.use_cache = use_cache
        self.cache_dir = cache_dir
        self.megatron_version = megatron_version
        # directory -> its checkout root (or None) and why it stops there, for the run these options
        # belong to: the scripts of one directory (a whole repository's, in a CI lint) share the walk up to the root
        self.root_memo: dict[str, tuple[str | None, str]] = {}
        # path -> whether it is a file, for the same run: a program is looked for under every level of
        # the checkout, and the scripts of a repository look for the same programs
        self.file_memo: dict[str, bool] = {}

    def __repr__(self) -> str:
        return (
            f"CodeOptions(code_bases={self.code_bases!r}, path_maps={self.path_maps!r}, "
            f"enabled={self.enabled!r}, use_cache={self.use_cache!r}, cache_dir={self.cache_dir!r}, "
            f"megatron_version={self.megatron_version!r})"
        )

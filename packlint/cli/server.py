"""`packlint server`: the editor server (Language Server Protocol over stdio; see docs/editor.md).
pygls is an optional dependency (the `lsp` extra: docs/integrations.md#install), imported only here."""

from __future__ import annotations

from packlint.errors import EXIT_USAGE, PacklintError


def add_arguments(parser) -> None:
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk over stdin/stdout (the default and only transport; accepted because editors pass it)",
    )


def run(args) -> int:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        raise PacklintError(
            "packlint server needs pygls and lsprotocol: pip install 'packlint[lsp] @ git+https://github.com/packlint/packlint'",
            exit_code=EXIT_USAGE,
        ) from None
    from packlint.server import main

    return main()

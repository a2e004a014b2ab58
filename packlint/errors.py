"""Errors that end a command with a one-line message and a defined exit code (never a traceback)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2  # usage, config, rule-table, unreadable input or internal error


class PacklintError(Exception):
    """A user-facing failure: printed as `packlint: error: <message>` and mapped to `exit_code`."""

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, exit_code: int = EXIT_USAGE
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.exit_code = exit_code

    def one_line(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        return f"{where}{self.message}"

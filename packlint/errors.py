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


class FileError:
    """A file packlint could not check. kind: read | config | error | internal."""

    __slots__ = ("path", "message", "kind")

    def __init__(self, path: str | None, message: str, kind: str = "error") -> None:
        self.path, self.message, self.kind = path, message, kind

    def line(self) -> str:
        """The one-line form: `PATH: message` (or just the message)."""
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "message": self.message}

    def __repr__(self) -> str:
        return f"FileError({self.path!r}, {self.message!r}, {self.kind!r})"

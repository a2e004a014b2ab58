"""`packlint server`: the Language Server Protocol over stdio (pygls / lsprotocol, the `packlint[lsp]`
extra; imported only by this command, never on the lint path).

- diagnostics on open, change and save of shell scripts (languageId shellscript/sh/bash, a .sh/.bash
  name, or a shell shebang) and of config files of a known stack (a YAML/JSON/TOML recognised by its
  keys, packlint.configs.standalone), each with its rule's doc link and the related locations;
- code actions: one quick fix per fixable finding under the cursor (safe ones preferred, unsafe ones
  titled as such), and `source.fixAll.packlint` applying every safe fix to a fixed point;
- hover on a variable or a flag: the value each launch sees, from the launch model, and where it is set.

The document is checked as the text the editor holds (not the file on disk), under the name of its
file, so configuration files and `source`d files resolve as for `packlint check FILE`. A request on a
document the client never opened reads the file only when it is a regular file within the size limit
(a FIFO or /dev/zero URI is refused, never read).

The stdio framing is packlint's own (`FrameReader`, docs/security.md), not pygls' reader loop, which
never resynchronised after a bad frame and read any Content-Length it was given: a bad header or a
body that is not JSON is answered with a JSON-RPC error (the request's id when it can be read, else
null) and reading goes on at the next `Content-Length:`; a Content-Length over MAX_FRAME is refused
without reading the body; a request whose params have the wrong shape gets -32602 for its id.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls import uris
from pygls.lsp.server import LanguageServer

from packlint import __version__
from packlint.model_view import as_model, env_entry, flag_occurrences, launches, variants

if TYPE_CHECKING:
    from packlint.model_types import ScriptModelJSON

# bytes of one message body: a document is at most 8 MiB of text, and JSON's escapes can double it. A
# body is parsed once (FrameReader), which costs up to ~25x its size in Python objects (R31: 64 MiB of
# `{}` took 3 GB, parsed three times)
MAX_FRAME = 20 * 1024 * 1024
MAX_HEADER = 8 * 1024
_MARKER = re.compile(rb"content-length:", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"([!#-'*+.0-9A-Z^-z|~-]+):[ \t]*([^\r\n]*)")


class FrameReader:
    """LSP base-protocol framing (`Content-Length: N\\r\\n ... \\r\\n\\r\\n` then N bytes), robust
    to bad frames. `feed(bytes)`, then `events()` yields ("message", body) for each complete frame and
    ("error", reason, body_or_None) for each bad one; after a bad one, reading resumes at the next
    `Content-Length:` in the stream (resynchronisation). Never holds more than MAX_FRAME + MAX_HEADER
    bytes waiting for a body."""

    def __init__(self, max_frame: int = MAX_FRAME, max_header: int = MAX_HEADER) -> None:
        self.buf = bytearray()
        self.max_frame, self.max_header = max_frame, max_header
        self._scanned = 0  # (how far the pending body was searched for a following frame)

    def feed(self, data: bytes) -> None:
        self.buf += data

    def _resync(self, start: int) -> None:
        self._scanned = 0
        m = _MARKER.search(self.buf, start)
        if m is not None:
            del self.buf[: m.start()]
            return
        # no marker: keep only a tail that could be the start of one split across reads (always progress)
        tail = bytes(self.buf[-14:]).lower()
        keep = next((k for k in range(len(tail), 0, -1) if b"content-length:".startswith(tail[-k:])), 0)
        del self.buf[: max(start, len(self.buf) - keep)]

    def events(self):
        import json

        while self.buf:
            end = self.buf.find(b"\r\n\r\n")
            if end == -1 or end > self.max_header:
                if end == -1 and len(self.buf) <= self.max_header:
                    return  # (the header is not complete yet)
                yield ("error", "frame header too long or malformed", None)
                self._resync(1)
                continue
            length = None
            bad = None
            for line in bytes(self.buf[:end]).split(b"\r\n"):
                m = _HEADER_LINE.fullmatch(line)
                if m is None:
                    bad = "malformed frame header"
                    break
                if m.group(1).lower() == b"content-length":
                    value = m.group(2).strip()
                    if length is not None or not value.isdigit():
                        bad = f"bad Content-Length {value[:40]!r}"
                        break
                    length = int(value[:20])
            if bad is None and length is None:
                bad = "frame without Content-Length"
            if bad is None and length is not None and length > self.max_frame:
                bad = f"Content-Length {length} is over the {self.max_frame} byte limit"
            if bad is not None:
                yield ("error", bad, None)
                self._resync(1)
                continue
            assert length is not None
            start = end + 4
            if len(self.buf) < start + length:
                # a Content-Length longer than the body: the next frame already follows it
                m = _MARKER.search(self.buf, max(start, self._scanned))
                if m is not None and _is_json(bytes(self.buf[start : m.start()])):
                    yield ("error", "Content-Length longer than the body", bytes(self.buf[start : m.start()]))
                    del self.buf[: m.start()]
                    self._scanned = 0
                    continue
                self._scanned = max(start, len(self.buf) - len(b"content-length:"))
                return
            self._scanned = 0
            body = bytes(self.buf[start : start + length])
            m = _MARKER.search(body)
            if m is not None and not _is_json(body):  # (a shorter frame, then the next one, inside `length`)
                yield ("error", "Content-Length does not match the body", body[: m.start()])
                del self.buf[: start + m.start()]
                continue
            del self.buf[: start + length]
            try:
                parsed = json.loads(body)
            except (ValueError, RecursionError):
                yield ("error", "the body is not JSON", body)
                if self.buf and not _MARKER.match(self.buf):
                    self._resync(0)  # (a Content-Length shorter than the body: skip its tail)
                continue
            yield ("message", body, parsed)


def _is_json(data: bytes) -> bool:
    import json

    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


SOURCE = "packlint"
SHELL_LANGUAGES = {"shellscript", "sh", "bash", "zsh"}
_SHEBANG = re.compile(r"^#!\s*(/usr/bin/env\s+)?(/\S*/)?(ba)?sh\b")
SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
}
FIX_ALL = "source.fixAll.packlint"


class Analysis:
    """One document's last check: the text, its findings, their concrete fixes and the launch model."""

    def __init__(
        self, path: str, text: str, findings: list, fixes: list, model: dict | None, urls: dict, sources=None
    ) -> None:
        self.path, self.text, self.findings, self.fixes, self.model, self.urls = (
            path,
            text,
            findings,
            fixes,
            model,
            urls,
        )
        self.sources = sources  # checking.Sources: the text of sourced files, for their ranges

    def text_of(self, path: str) -> str:
        if path == self.path:
            return self.text
        text = self.sources.text(path) if self.sources is not None else None
        return text or ""


def _one_line(message: object) -> str:
    text = str(message).splitlines()[0] if str(message) else "internal error"
    return ("packlint: " + text)[:200]


class PacklintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("packlint", __version__)
        self.analyses: dict[str, Analysis] = {}
        self.exit_code = 0
        send = self.protocol._send_response  # noqa: SLF001 - pygls has no hook for error responses

        def send_response(msg_id, result=None, error=None):
            # pygls puts the handler's whole traceback in an internal error's `data` (R25): the client
            # gets one line, the traceback never leaves the server
            if error is not None and getattr(error, "data", None) is not None:
                error = lsp.ResponseError(code=error.code, message=_one_line(error.message))
            return send(msg_id, result=result, error=error)

        self.protocol._send_response = send_response  # type: ignore[method-assign]  # noqa: SLF001

    # -------------------------------------------------------------------------------- transport

    def start_io(self, stdin=None, stdout=None) -> None:
        """Serve over stdio with packlint's FrameReader (see the module docstring)."""
        import asyncio
        import sys
        import threading

        from pygls.io_ import StdoutWriter

        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self._serve(stdin or sys.stdin.buffer))
        except BrokenPipeError:
            pass
        except KeyboardInterrupt:
            pass
        except SystemExit as exc:  # `exit`: 0 after `shutdown`, else 1 (the LSP specification)
            self.exit_code = exc.code if isinstance(exc.code, int) else 0
        finally:
            self.shutdown()

    async def _serve(self, stdin) -> None:
        import asyncio
        import threading

        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[bytes] = asyncio.Queue()
        try:
            fd = stdin.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None

        def pump() -> None:  # (a daemon thread: a blocked read never keeps the process alive)
            while True:
                try:
                    data = os.read(fd, 1 << 16) if fd is not None else stdin.read1(1 << 16)
                except (OSError, ValueError):
                    data = b""
                loop.call_soon_threadsafe(chunks.put_nowait, data)
                if not data:
                    return

        threading.Thread(target=pump, name="packlint-lsp-stdin", daemon=True).start()
        frames = FrameReader()
        stop = self._stop_event
        while stop is None or not stop.is_set():
            data = await chunks.get()
            if not data:
                break
            frames.feed(data)
            for event in frames.events():
                if event[0] == "message":
                    self._dispatch(event[2])
                else:
                    self._frame_error(event[1], event[2])
                if stop is not None and stop.is_set():
                    break

    def _send_error(self, msg_id, code: int, message: str) -> None:
        self.protocol._send_response(msg_id, error=lsp.ResponseError(code=code, message=message))  # noqa: SLF001

    def _frame_error(self, reason: str, body: bytes | None) -> None:
        """A bad frame: answered for its id when the body still names one (else id null, -32700)."""
        import json

        msg_id = None
        if body is not None:
            try:
                raw = json.loads(body)
                if isinstance(raw, dict) and isinstance(raw.get("id"), (int, str)) and "method" in raw:
                    msg_id = raw["id"]
            except (ValueError, RecursionError):
                pass
        self._send_error(msg_id, -32700, f"packlint: {reason}")

    def _dispatch(self, raw: Any) -> None:
        """One message, parsed once by FrameReader (pygls parsed each body twice more: R31); only the
        top-level object is a message (pygls' object hook structures nested ones too, uselessly)."""
        if not isinstance(raw, dict):
            self._send_error(None, -32600, "packlint: a message must be a JSON object")
            return
        msg_id = raw.get("id") if isinstance(raw.get("id"), (int, str)) else None
        try:
            message = self.protocol.structure_message(raw)
        except Exception:  # params of the wrong shape (pygls: JsonRpcInvalidParams), or worse
            if msg_id is not None and "method" in raw:
                self._send_error(msg_id, -32602, f"packlint: invalid params for {str(raw.get('method'))[:80]}")
            return
        try:
            self.protocol.handle_message(message)
        except Exception as exc:  # (a bug in a handler: reported, the loop goes on)
            from pygls.exceptions import JsonRpcInternalError

            self._report_server_error(exc, JsonRpcInternalError)
            if msg_id is not None and "method" in raw:
                self._send_error(msg_id, -32603, "packlint: internal error")

    # -------------------------------------------------------------------------------- analysis

    def analyse(self, uri: str, text: str) -> Analysis:
        from packlint.checking import CheckOptions, check_paths
        from packlint.fixes import Script

        path = display_path(uri)
        options = CheckOptions(stdin_filename=path, read_stdin=lambda: text.encode("utf-8", "surrogatepass"))
        options.keep_models = True
        from packlint.errors import PacklintError

        try:
            result = check_paths(["-"], options)
        except PacklintError as exc:  # a bad configuration or rule file: say so, show nothing
            self.window_log_message(
                lsp.LogMessageParams(type=lsp.MessageType.Error, message=f"packlint: {exc.one_line()}")
            )
            analysis = Analysis(path, text, [], [], None, {})
            self.analyses[uri] = analysis
            return analysis
        script = Script(path, text)
        fixes = [_concrete(f, script) for f in result.findings]
        urls = {f.code: result.doc_url_for(f.code) for f in result.findings}
        errors = [e.line() for e in result.file_errors]
        if errors:
            self.window_log_message(
                lsp.LogMessageParams(type=lsp.MessageType.Warning, message="packlint: " + "; ".join(errors))
            )
        analysis = Analysis(path, text, result.findings, fixes, result.models.get(path), urls, result.sources)
        self.analyses[uri] = analysis
        return analysis

    def document(self, uri: str) -> tuple[str, str | None, int | None] | None:
        """(text, language id, version) of `uri`: the client's text when it opened the document, else
        the file's, only when it is a regular file within the size limit (pygls would read any path,
        /dev/zero or a FIFO included: L18/L19). None when there is nothing to read."""
        from urllib.parse import unquote

        opened = self.workspace.text_documents.get(unquote(uri))
        if opened is not None:
            return opened.source, opened.language_id, opened.version
        path = uris.to_fs_path(uri)
        if not path:
            return None
        from packlint.errors import PacklintError
        from packlint.safe_io import read_bounded
        from packlint.source import MAX_SCRIPT_BYTES

        try:
            data = read_bounded(path, MAX_SCRIPT_BYTES, "document")
        except PacklintError as exc:
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=exc.one_line()))
            return None
        return data.decode("utf-8", "replace"), None, None

    def lint(self, uri: str) -> None:
        found = self.document(uri)
        if found is None:
            return
        source, language_id, version = found
        if not is_shell(uri, language_id, source):
            return
        analysis = self.analyse(uri, source)
        diagnostics = [to_diagnostic(f, analysis, i) for i, f in enumerate(analysis.findings)]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )


def display_path(uri: str) -> str:
    from pathlib import Path

    from packlint.source import display_path as shown

    fs = uris.to_fs_path(uri) or uri
    return shown(Path(fs))


def to_uri(path: str) -> str:
    return uris.from_fs_path(os.path.abspath(path)) or path


def is_shell(uri: str, language_id: str | None, text: str) -> bool:
    if language_id in SHELL_LANGUAGES:
        return True
    if uri.lower().endswith((".yaml", ".yml", ".json", ".toml")):
        # a config file of a known stack (issue 20): checked as `packlint check x.yaml` checks it
        from packlint.configs.standalone import recognise_text

        return recognise_text(display_path(uri), text)
    if uri.endswith((".sh", ".bash")):
        return True
    return bool(_SHEBANG.match(text.split("\n", 1)[0] if text else ""))


def utf16_column(line_text: str, column: int) -> int:
    """LSP positions count UTF-16 code units; packlint columns count code points (1-based)."""
    prefix = line_text[: max(0, column - 1)]
    return len(prefix.encode("utf-16-le")) // 2


def _line(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def to_range(text: str, line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
    start = lsp.Position(line=max(0, line - 1), character=utf16_column(_line(text, line), column))
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    end = lsp.Position(line=max(0, end_line - 1), character=utf16_column(_line(text, end_line), end_column))
    return lsp.Range(start=start, end=end)


def to_diagnostic(f, analysis: Analysis, index: int) -> lsp.Diagnostic:
    loc = f.location
    text = analysis.text_of(loc.path)
    related = []
    for r in f.related:
        rtext = analysis.text_of(r.location.path)
        related.append(
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(
                    uri=to_uri(r.location.path),
                    range=to_range(
                        rtext, r.location.line, r.location.column, r.location.end_line, r.location.end_column
                    ),
                ),
                message=r.message,
            )
        )
    message = f.message + (f"\nhelp: {f.help}" if f.help else "")
    rng = to_range(text, loc.line, loc.column, loc.end_line, loc.end_column)
    if loc.path != analysis.path:
        # set in a sourced file: shown in this document at its launch (or line 1), pointing there
        here = next((r.location for r in f.related if r.location.path == analysis.path), None)
        rng = (
            to_range(analysis.text, here.line, here.column, here.end_line, here.end_column)
            if here
            else to_range(analysis.text, 1, 1, 1, 1)
        )
        message = f"{loc.path}:{loc.line}:{loc.column}: {message}"
        related.insert(
            0,
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(
                    uri=to_uri(loc.path), range=to_range(text, loc.line, loc.column, loc.end_line, loc.end_column)
                ),
                message="set here",
            ),
        )
    url = analysis.urls.get(f.code)
    return lsp.Diagnostic(
        range=rng,
        message=message,
        severity=SEVERITY[f.severity],
        code=f.code,
        source=SOURCE,
        code_description=lsp.CodeDescription(href=url) if url else None,
        related_information=related or None,
        data={"index": index, "fix": analysis.fixes[index].applicability if analysis.fixes[index] else None},
    )


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (b.start.line, b.start.character) <= (
        a.end.line,
        a.end.character,
    )


def _text_edits(text: str, fix) -> list[lsp.TextEdit]:
    return [
        lsp.TextEdit(
            range=to_range(text, e.line, e.column, e.end_line, e.end_column)
            if (e.end_line, e.end_column) > (e.line, e.column)
            else lsp.Range(
                start=lsp.Position(line=e.line - 1, character=utf16_column(_line(text, e.line), e.column)),
                end=lsp.Position(line=e.line - 1, character=utf16_column(_line(text, e.line), e.column)),
            ),
            new_text=e.content,
        )
        for e in fix.edits
    ]


def code_actions(server: PacklintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    found = server.document(uri)
    if found is None:
        return []
    source, language_id, _version = found
    analysis = server.analyses.get(uri)
    if analysis is None or analysis.text != source:
        if not is_shell(uri, language_id, source):
            return []
        analysis = server.analyse(uri, source)
    only = params.context.only
    actions: list[lsp.CodeAction] = []
    if not only or any(k in (lsp.CodeActionKind.QuickFix,) for k in only):
        for i, f in enumerate(analysis.findings):
            fix = analysis.fixes[i]
            if fix is None:
                continue
            diag = to_diagnostic(f, analysis, i)
            if not _overlaps(diag.range, params.range):
                continue
            title = f"{fix.title} ({f.code}" + (
                ", unsafe: changes what the script does)" if fix.applicability == "unsafe" else ")"
            )
            actions.append(
                lsp.CodeAction(
                    title=title,
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=fix.applicability == "safe",
                    edit=lsp.WorkspaceEdit(changes={uri: _text_edits(analysis.text, fix)}),
                )
            )
        actions.extend(_disable_actions(analysis, uri, params.range))
    wants_source = not only or any(str(k).startswith("source") for k in only)
    if wants_source and any(fx is not None and fx.applicability == "safe" for fx in analysis.fixes):
        from packlint.checking import CheckOptions
        from packlint.cli.fix import text_checker

        outcome = _fix_all(analysis, text_checker(analysis.path, CheckOptions()))
        if outcome is not None:
            lines = analysis.text.split("\n")
            whole = lsp.Range(
                start=lsp.Position(line=0, character=0),
                end=lsp.Position(line=len(lines) - 1, character=utf16_column(lines[-1], len(lines[-1]) + 1)),
            )
            actions.append(
                lsp.CodeAction(
                    title="packlint: apply every safe fix",
                    kind=FIX_ALL,
                    edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole, new_text=outcome)]}),
                )
            )
    return actions


def _disable_actions(analysis: Analysis, uri: str, where: lsp.Range) -> list[lsp.CodeAction]:
    """The quick fix "packlint: disable CODE for this command": a `# packlint: disable=CODE` line above the command
    holding the finding (indented like it), which covers every line of that command
    (packlint.suppressions). Shell documents only, for findings located in the document itself."""
    from packlint.configs.standalone import is_config_name
    from packlint.suppressions import command_start

    if is_config_name(analysis.path):
        return []
    out: list[lsp.CodeAction] = []
    seen: set[tuple[str, int]] = set()
    for i, f in enumerate(analysis.findings):
        diag = to_diagnostic(f, analysis, i)
        if f.location.path != analysis.path or not _overlaps(diag.range, where):
            continue
        try:
            first = command_start(analysis.text, f.location.line)
        except (RecursionError, ValueError):
            first = f.location.line
        if (f.code, first) in seen:
            continue
        seen.add((f.code, first))
        line = _line(analysis.text, first)
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        at = lsp.Position(line=first - 1, character=0)
        out.append(
            lsp.CodeAction(
                title=f"packlint: disable {f.code} for this command",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diag],
                edit=lsp.WorkspaceEdit(
                    changes={
                        uri: [
                            lsp.TextEdit(
                                range=lsp.Range(start=at, end=at), new_text=f"{indent}# packlint: disable={f.code}\n"
                            )
                        ]
                    }
                ),
            )
        )
    return out


def _concrete(finding, script):
    """A finding's fix on the document: a script fix, or a config-file fix when the document is the
    config file it edits (a fix into another file is not offered: the action edits this document)."""
    if finding.fix is None:
        return None
    from packlint.configfix import CONFIG_KINDS, config_fix
    from packlint.fixes import concrete_fix

    if finding.fix.kind in CONFIG_KINDS:
        return config_fix(finding, script.path, script.text)[0] if finding.fix.start.path == script.path else None
    return concrete_fix(finding, script)


def _fix_all(analysis: Analysis, check) -> str | None:
    from packlint.configfix import fix_config_text
    from packlint.configs.standalone import is_config_name
    from packlint.fixes import fix_text

    if is_config_name(analysis.path):
        outcome = fix_config_text(analysis.path, analysis.text, check, unsafe=False)
    else:
        outcome = fix_text(analysis.path, analysis.text, check, unsafe=False)
    return outcome.text if outcome.changed else None


# ------------------------------------------------------------------------------------------ hover

_WORD = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*|[A-Za-z_][A-Za-z0-9_]*")


def word_at(text: str, line: int, character: int) -> str | None:
    """The variable name or flag under an LSP position (0-based line, UTF-16 character)."""
    src = _line(text, line + 1)
    # UTF-16 -> code points
    col, units = 0, 0
    while col < len(src) and units < character:
        units += 2 if ord(src[col]) > 0xFFFF else 1
        col += 1
    for m in _WORD.finditer(src):
        if m.start() <= col <= m.end():
            return m.group(0)
    return None


def _where(entry: Mapping[str, Any] | None) -> str:
    """`file:line:col`, and where the value itself comes from when that is elsewhere (`MBS=1` for
    `--micro-batch-size ${MBS}`)."""
    if not entry or entry.get("line") is None:
        return "set outside the script" if entry else ""
    here = f"{entry.get('file')}:{entry.get('line')}:{entry.get('column', 1)}"
    value = entry.get("value_location") or {}
    if value.get("line") is not None and (value.get("file"), value.get("line")) != (
        entry.get("file"),
        entry.get("line"),
    ):
        here += f", value from {value.get('file')}:{value.get('line')}:{value.get('column', 1)}"
    return here


def hover_text(doc: Mapping[str, Any] | None, word: str) -> str | None:
    """Markdown: per launch, the value of `word` (an environment variable or a flag) and where it is set."""
    model: ScriptModelJSON | None = as_model(doc) if doc else None
    if not model or not model.get("launches"):
        return None
    rows = []
    is_flag = word.startswith("-")
    for launch in launches(model):
        program = launch.get("program") or "?"
        head = f"launch at line {launch.get('line')} (`{program}`)"
        for variant in variants(launch):
            cond = " and ".join(variant.get("when") or [])
            label = head + (f" when {cond}" if cond else "")
            if is_flag:
                occ = [o for o in flag_occurrences(variant, "flags", word) if o]
                if not occ:
                    continue
                vals = ", ".join(
                    f"`{o.get('value')}` ({_where(o)})" if o.get("value") is not None else f"(no value) ({_where(o)})"
                    for o in occ
                )
                rows.append(f"- {label}: {vals}" + (" — the last one wins" if len(occ) > 1 else ""))
            else:
                env = env_entry(variant, word)
                unexported = variant.get("unexported", {}).get(word)
                if env is not None:
                    rows.append(
                        f"- {label}: `{word}={env.get('value')}` in its environment "
                        f"({_where(env) or 'from the caller'})"
                    )
                elif unexported is not None:
                    rows.append(
                        f"- {label}: **not in its environment** — `{word}={unexported.get('value')}` is "
                        f"set but not exported ({_where(unexported)})"
                    )
                else:
                    continue
    if not rows:
        if is_flag:
            return None
        # a shell variable no launch sees: say so when the script assigns it
        return None
    seen: list[str] = []
    for r in rows:
        if r not in seen:
            seen.append(r)
    title = f"**{word}**" + (" (flag)" if is_flag else " (environment)")
    return title + "\n\n" + "\n".join(seen)


def hover(server: PacklintServer, params: lsp.HoverParams) -> lsp.Hover | None:
    uri = params.text_document.uri
    found = server.document(uri)
    if found is None:
        return None
    source, language_id, _version = found
    analysis = server.analyses.get(uri)
    if analysis is None or analysis.text != source:
        if not is_shell(uri, language_id, source):
            return None
        analysis = server.analyse(uri, source)
    word = word_at(analysis.text, params.position.line, params.position.character)
    if word is None:
        return None
    text = hover_text(analysis.model, word)
    if text is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))


def build_server() -> PacklintServer:
    server = PacklintServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PacklintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PacklintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PacklintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PacklintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.analyses.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL])
    )
    def code_action(ls: PacklintServer, params: lsp.CodeActionParams):
        return code_actions(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: PacklintServer, params: lsp.HoverParams):
        return hover(ls, params)

    return server


def main() -> int:
    server = build_server()
    server.start_io()
    return server.exit_code

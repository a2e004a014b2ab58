"""`packlint server` end to end: a real subprocess speaking JSON-RPC (LSP framing) over stdio, no mocks.
Open a buggy script, receive its diagnostics, ask for the code action, apply its WorkspaceEdit, send the
change, receive an empty diagnostic list; hover shows what each launch sees."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("pygls")
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60


class Client:
    """A minimal LSP client: Content-Length framed JSON-RPC on the server's stdin/stdout."""

    def __init__(self, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PACKLINT_CACHE_DIR": str(cwd / ".cache")}
        self.proc = subprocess.Popen([sys.executable, "-m", "packlint", "server"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.put(json.loads(out.read(length)))

    def send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        msg = self.wait(lambda m: m.get("id") == rid and "method" not in m)
        assert "error" not in msg, msg
        return msg["result"]

    def wait(self, pred):
        while True:
            try:
                msg = self.messages.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"no answer from the server; stderr: {self.proc.stderr.read1(4000)!r}") from None
            if pred(msg):
                return msg

    def diagnostics(self, uri: str) -> list:
        msg = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                        and m["params"]["uri"] == uri)
        return msg["params"]["diagnostics"]

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def apply(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (ASCII text here: UTF-16 units are characters)."""
    lines = text.split("\n")

    def offset(pos: dict) -> int:
        return sum(len(line) + 1 for line in lines[: pos["line"]]) + pos["character"]

    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        s, t = offset(e["range"]["start"]), offset(e["range"]["end"])
        text = text[:s] + e["newText"] + text[t:]
    return text


BUGGY = """#!/bin/bash
set -euo pipefail
export OFFLINE_PACKING_BMR=1
export OFFLINE_PACKED_DATA=1
export OFFLINE_PACKING_VQA=1
torchrun --nproc_per_node 8 pretrain_llava_onevision2.py --micro-batch-size 1
"""


@pytest.fixture
def client(tmp_path):
    (tmp_path / ".git").mkdir()
    c = Client(tmp_path)
    c.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}})
    c.notify("initialized", {})
    yield c
    c.close()


def test_open_fix_and_clean(client, tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(BUGGY)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "shellscript",
                                                            "version": 1, "text": BUGGY}})
    diags = client.diagnostics(uri)
    # PK204 (info): the code of train.py is not at hand, so PK004 was judged from the program path
    assert [d["code"] for d in diags] == ["PK004", "PK204"]
    d = diags[0]
    assert d["source"] == "packlint" and d["severity"] == 2 and d["range"]["start"] == {"line": 4, "character": 7}
    assert d["codeDescription"]["href"].endswith("rules-reference.md#pk004-dead-packing-vqa-warning")

    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}})
    quick = [a for a in actions if a["kind"] == "quickfix" and not a["title"].startswith("packlint: disable")]
    assert len(quick) == 1 and quick[0]["isPreferred"] is True
    fixed = apply(BUGGY, quick[0]["edit"]["changes"][uri])
    assert "OFFLINE_PACKING_VQA" not in fixed and fixed.count("\n") == BUGGY.count("\n") - 1

    fix_all = [a for a in actions if a["kind"] == "source.fixAll.packlint"]
    assert len(fix_all) == 1 and apply(BUGGY, fix_all[0]["edit"]["changes"][uri]) == fixed

    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": fixed}]})
    assert client.diagnostics(uri) == []


def test_related_information_unsafe_fix_and_hover(client, tmp_path):
    text = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\nOFFLINE_PACKED_DATA=1\ntorchrun train.py --micro-batch-size 1\n"
    path = tmp_path / "leak.sh"
    path.write_text(text)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "shellscript",
                                                            "version": 1, "text": text}})
    diags = client.diagnostics(uri)
    codes = sorted(d["code"] for d in diags)
    assert codes == ["PK001", "PK101"]
    pk101 = next(d for d in diags if d["code"] == "PK101")
    assert pk101["relatedInformation"][0]["location"]["range"]["start"]["line"] == 3
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": pk101["range"], "context": {"diagnostics": [pk101]}})
    titles = [a["title"] for a in actions if a["kind"] == "quickfix" and not a["title"].startswith("packlint: disable")]
    assert titles and all("unsafe" in t for t in titles)
    chosen = next(a for a in actions if a["kind"] == "quickfix" and a["diagnostics"][0]["code"] == "PK101")
    fixed = apply(text, chosen["edit"]["changes"][uri])
    assert "export OFFLINE_PACKED_DATA=1\n" in fixed
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": fixed}]})
    assert client.diagnostics(uri) == []

    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 2, "character": 12}})
    value = hover["contents"]["value"]
    assert "OFFLINE_PACKED_DATA=1" in value and "leak.sh:3:" in value
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 3, "character": 22}})
    assert "`1`" in hover["contents"]["value"] and "--micro-batch-size" in hover["contents"]["value"]


def test_non_shell_documents_are_left_alone(client, tmp_path):
    uri = (tmp_path / "notes.md").as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "markdown",
                                                            "version": 1, "text": "export OFFLINE_PACKING_VQA=1\n"}})
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 0, "character": 9}})
    assert hover is None


def test_lint_path_does_not_import_pygls():
    code = ("import sys; from packlint.cli import main; main(['check', '--isolated', '-q', 'examples']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_finding_in_a_sourced_file(client, tmp_path):
    (tmp_path / "gates.env").write_text("export OFFLINE_PACKING_BMR=1\n")
    text = "#!/bin/bash\nsource ./gates.env\ntorchrun pretrain_llava_onevision2.py --micro-batch-size 1\n"
    path = tmp_path / "train.sh"
    path.write_text(text)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "shellscript",
                                                            "version": 1, "text": text}})
    (d,) = client.diagnostics(uri)
    assert d["code"] == "PK001" and d["message"].startswith("gates.env:1:8: ")
    assert d["range"]["start"] == {"line": 2, "character": 0}          # at the launch in this file
    there = d["relatedInformation"][0]["location"]
    assert there["uri"] == (tmp_path / "gates.env").as_uri() and there["range"]["start"] == {"line": 0, "character": 7}
    # the fix would edit gates.env, a file the user did not open: no quick fix
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}})
    assert [a for a in actions if a["kind"] == "quickfix"] == []


def test_config_document_quick_fix(client, tmp_path):
    # a LLaMA-Factory YAML open in the editor: PK400 at `packing: true`, its quick fix adds neat_packing
    text = "### model\nmodel_name_or_path: Qwen/Qwen3-4B\n\n### method\nstage: sft\ndo_train: true\npacking: true\n"
    path = tmp_path / "sft.yaml"
    path.write_text(text)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml",
                                                            "version": 1, "text": text}})
    diags = client.diagnostics(uri)
    pk400 = next(d for d in diags if d["code"] == "PK400")
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": pk400["range"], "context": {"diagnostics": [pk400]}})
    quick = [a for a in actions if a["kind"] == "quickfix"]
    assert len(quick) == 1 and quick[0]["isPreferred"] is False and "unsafe" in quick[0]["title"]
    fixed = apply(text, quick[0]["edit"]["changes"][uri])
    assert fixed == text + "neat_packing: true\n"
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": fixed}]})
    assert all(d["code"] != "PK400" for d in client.diagnostics(uri))

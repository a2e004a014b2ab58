"""Stage 1: bytes -> tree-sitter-bash syntax tree, plus syntax problems.

Nothing outside this module and the interpreter knows tree-sitter exists. tree-sitter's grammar has
gaps (`${X:$N+1}`, `$(((a+b)/c))`), so an ERROR node is confirmed with `bash -n` (parse only, never
executes): a script bash rejects is a syntax error; an ERROR node bash accepts is a local
"could not analyse" note and the rest of the script is still analysed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache

from packlint.source import SourceFile
from packlint.values import Span


@dataclass(frozen=True)
class SyntaxProblem:
    severity: str          # "error": bash rejects the script; "info": a grammar gap bash accepts
    code: str              # "syntax" | "unanalysed"
    message: str
    span: Span


@dataclass
class ParsedScript:
    source: SourceFile
    root: object                      # tree_sitter.Node of kind "program"
    problems: list[SyntaxProblem] = field(default_factory=list)
    error_ranges: list[tuple[int, int]] = field(default_factory=list)  # byte ranges of ERROR nodes


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _error_nodes(root) -> list:
    """ERROR and MISSING nodes, outermost only, found without recursion (trees can be deep)."""
    found = []
    if not root.has_error:
        return found
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found.append(node)
            continue
        for child in reversed(node.children):
            if child.has_error or child.is_missing:
                stack.append(child)
    return found


_BASH_LINE = re.compile(r"line (\d+): (.*)")


def bash_syntax_check(data: bytes) -> tuple[bool, int | None, str] | None:
    """(accepted, line, message) from `bash -n`, or None when bash is not available."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        proc = subprocess.run([bash, "-n", "/dev/stdin"], input=data, capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode == 0:
        return True, None, ""
    text = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    for line in text:
        m = _BASH_LINE.search(line)
        if m:
            return False, int(m.group(1)), m.group(2).strip()
    return False, None, (text[0] if text else "bash -n rejected the script")


def parse(source: SourceFile) -> ParsedScript:
    tree = _parser().parse(source.data)
    root = tree.root_node
    result = ParsedScript(source=source, root=root)
    errors = _error_nodes(root)
    if not errors:
        return result
    result.error_ranges = [(n.start_byte, n.end_byte) for n in errors]
    verdict = bash_syntax_check(source.data)
    first = errors[0]
    if verdict is not None and verdict[0]:
        for node in errors:
            result.problems.append(SyntaxProblem(
                "info", "unanalysed",
                "could not analyse this construct (bash accepts it; packlint's parser does not); "
                "values it sets are unknown", source.span(node)))
        return result
    if verdict is None:
        result.problems.append(SyntaxProblem(
            "error", "syntax", "syntax error (bash not available to confirm)", source.span(first)))
        return result
    _, line, message = verdict
    span = source.span(first)
    if line is not None:
        on_line = [n for n in errors if n.start_point[0] + 1 == line]
        if on_line:
            span = source.span(on_line[0])
        else:
            row = line - 1
            text = source.line_text(row)
            col = len(text) - len(text.lstrip()) + 1
            span = Span(source.path, line + source.line_base, col, line + source.line_base, len(text) + 1)
    result.problems.append(SyntaxProblem("error", "syntax", f"syntax error: {message}", span))
    return result

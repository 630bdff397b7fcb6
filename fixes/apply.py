"""Applying fixes: text edits from findings, in passes until stable, never writing broken code.

Each pass lints the current text, takes the applicable fixes (safe, plus unsafe on request),
applies those that do not overlap, and checks that the result parses. A fix whose result does
not parse is dropped and reported. Passes stop when nothing changes (bounded by MAX_PASSES).
Re-linting a fixed text and writing files is the app's (`dynalint.autofix`): this module only
takes a `lint(text) -> findings` function.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
from dataclasses import dataclass, field
from collections import Counter
from typing import Callable

import libcst as cst

from dynalint.findings import Finding, SAFE

from .base import split_lines

MAX_PASSES = 8

# Clean-ups once a file's fixes are applied, by the code of the findings whose fixes need them:
# cleanup(original text, fixed text) -> text. `fixes/providers.py` registers them with the fix
# generators (DYN102: debugger imports left unused once several debugger calls are removed).
AFTER_FIXES: dict[str, Callable[[str, str], str]] = {}


@dataclass
class FixResult:
    original: str
    text: str
    fixed: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Fixes left out because their rewrite would not parse (the file is fixed without them).
    skipped: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def diff(self, name: str) -> str:
        if not self.changed:
            return ""
        return "".join(
            difflib.unified_diff(
                split_lines(self.original),
                split_lines(self.text),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


def applicable(f: Finding, unsafe: bool) -> bool:
    return f.fix is not None and bool(f.fix.edits) and (f.fix.applicability == SAFE or unsafe)


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in split_lines(text):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _offset(offsets: list[int], row: int, col: int) -> int:
    row = max(1, min(row, len(offsets)))
    return offsets[row - 1] + col - 1


def _spans(offsets: list[int], fix) -> list[tuple[int, int, str]]:
    return [
        (_offset(offsets, e.row, e.column), _offset(offsets, e.end_row, e.end_column), e.content) for e in fix.edits
    ]


def _conflicts(span: tuple[int, int, str], taken: dict[tuple[int, int, str], None]) -> bool:
    start, end, _ = span
    if span in taken:
        return False  # the very same edit, already chosen: shared, applied once
    for s, t, _ in taken:
        if not (end <= s or start >= t) or (start == end == s) or (s == t == start):
            return True
    return False


def apply_edits(text: str, findings: list[Finding]) -> tuple[str, list[Finding]]:
    """Apply the fixes of findings whose edits do not overlap earlier ones; return text and applied.

    An edit identical to one already chosen (the `import torch` two fixes both need, or the
    guard block that every print of a run shares) is applied once and does not conflict.
    """
    offsets = _line_offsets(text)
    taken: dict[tuple[int, int, str], None] = {}
    applied: list[Finding] = []
    for f in sorted(findings, key=lambda f: (f.row, f.column)):
        spans = _spans(offsets, f.fix)
        if any(_conflicts(span, taken) for span in spans):
            continue
        for span in spans:
            taken[span] = None
        applied.append(f)
    return _splice(text, list(taken)), applied


def _splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    # Right to left so earlier offsets stay valid; at one offset, later-listed insertions go first
    # so that the text reads in the order the edits were listed.
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], i), reverse=True)
    for i in order:
        start, end, content = spans[i]
        text = text[:start] + content + text[end:]
    return text


def apply_text_edits(text: str, edits) -> str:
    """Apply one set of non-overlapping edits (a single fix) to text."""
    offsets = _line_offsets(text)
    spans = [(_offset(offsets, e.row, e.column), _offset(offsets, e.end_row, e.end_column), e.content) for e in edits]
    return _splice(text, spans)


def _ast_parses(text: str) -> bool:
    try:
        ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _cst_parses(text: str) -> bool:
    from dynalint.lint.deep import call_deep, rejects

    if rejects(text) is not None:
        return False
    try:
        call_deep(cst.parse_module, text)  # deep code parses on a large stack (lint/deep.py)
        return True
    except Exception:
        return False


def fix_text(text: str, lint, unsafe: bool) -> FixResult:
    """lint(text) -> findings for this text. Returns the fixed text and what was fixed."""
    result = FixResult(original=text, text=text)
    # A fixed file must parse with libcst (our own parser) and, when the original does, with
    # the running Python's own parser too (libcst accepts a few things Python rejects).
    strict = _ast_parses(text)

    def parses(candidate: str) -> bool:
        return _cst_parses(candidate) and (not strict or _ast_parses(candidate))

    rejected: set[tuple[str, str]] = set()
    findings = lint(result.text)
    # A fix that does not remove its own finding would be applied again and again: no rule may
    # have more fixes of one applicability applied than it had findings at the start (a later pass
    # may still apply a fix that an overlapping one held back, even if that one changed the line it
    # is on; a safe fix may leave a finding that an unsafe one then fixes: LayerDrop's `p > 0 and`
    # test, then its select).
    initial = Counter(f.code for f in findings)
    applied_so_far: Counter = Counter()
    for _ in range(MAX_PASSES):
        todo = [f for f in findings if applicable(f, unsafe) and (f.code, _fix_id(f)) not in rejected]
        if not todo:
            break
        new_text, applied = _apply_parsing(result, todo, rejected, parses)
        if new_text == result.text:
            break
        ids = Counter((f.code, f.fix.applicability) for f in applied)
        if any(applied_so_far[k] + n > initial[k[0]] for k, n in ids.items()):
            result.errors.append(f"fixes in {applied[0].filename} did not converge; stopped after {len(result.fixed)} fixes")
            break
        applied_so_far += ids
        result.fixed += applied
        result.text = new_text
        findings = lint(result.text)
    else:
        left = sum(1 for f in findings if applicable(f, unsafe) and (f.code, _fix_id(f)) not in rejected)
        if left:
            name = findings[0].filename
            result.errors.append(f"fixes in {name} needed more than {MAX_PASSES} passes; {left} left for another run")
    result.remaining = findings
    return _finish(result, lint, parses)


def _apply_parsing(result: FixResult, todo: list[Finding], rejected: set, parses) -> tuple[str, list[Finding]]:
    """Apply what can be applied together; drop (and report) fixes whose result would not parse."""
    new_text, applied = apply_edits(result.text, todo)
    if parses(new_text):
        return new_text, applied
    good: list[Finding] = []
    for f in applied:
        trial, _ = apply_edits(result.text, [f])
        if parses(trial):
            good.append(f)
        else:
            rejected.add((f.code, _fix_id(f)))
            msg = f"fix for {f.code} at {f.filename}:{f.row}:{f.column} skipped: its rewrite would not parse"
            if msg not in result.skipped:
                result.skipped.append(msg)
    # Each one parses alone; keep the largest prefix that also parses together.
    kept: list[Finding] = []
    for f in good:
        trial, _ = apply_edits(result.text, kept + [f])
        if parses(trial):
            kept.append(f)
    return apply_edits(result.text, kept)


def _finish(result: FixResult, lint, parses) -> FixResult:
    """Run the clean-ups (`AFTER_FIXES`) of the codes fixed here; one whose result would not
    parse is skipped."""
    for code, cleanup in AFTER_FIXES.items():
        if not any(f.code == code for f in result.fixed):
            continue
        cleaned = cleanup(result.original, result.text)
        if cleaned != result.text and parses(cleaned):
            result.text = cleaned
            result.remaining = lint(cleaned)
    return result


def _fix_id(f: Finding) -> str:
    return hashlib.sha1(repr([(e.content, e.row, e.column) for e in f.fix.edits]).encode()).hexdigest()

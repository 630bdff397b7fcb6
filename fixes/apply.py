"""Applying fixes: text edits from findings, in passes until stable, never writing broken code.

Each pass lints the current text, takes the applicable fixes (safe, plus unsafe on request),
applies those that do not overlap, and checks that the result parses. A fix whose result does
not parse is dropped and reported. Passes stop when nothing changes (bounded by MAX_PASSES).
Files are written atomically (temp file in the same folder, then rename), keeping encoding, BOM
and newline style, and are skipped when they changed on disk since they were read.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import io
import os
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from collections import Counter
from typing import Iterable, Optional

import libcst as cst

from dynalint.atomic import write_bytes_atomically
from dynalint.findings import Finding, SAFE

from .base import split_lines

MAX_PASSES = 8
DEBUGGER_CODE = "DYN102"


@dataclass
class FixResult:
    original: str
    text: str
    fixed: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

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
    # have more fixes applied than it had findings at the start (a later pass may still apply a
    # fix that an overlapping one held back, even if that one changed the line it is on).
    initial = Counter(f.code for f in findings)
    applied_so_far: Counter = Counter()
    for _ in range(MAX_PASSES):
        todo = [f for f in findings if applicable(f, unsafe) and (f.code, _fix_id(f)) not in rejected]
        if not todo:
            break
        new_text, applied = _apply_parsing(result, todo, rejected, parses)
        if new_text == result.text:
            break
        ids = Counter(f.code for f in applied)
        if any(applied_so_far[k] + n > initial[k] for k, n in ids.items()):
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
            msg = f"fix for {f.code} at {f.filename}:{f.row}:{f.column} would not parse; dropped"
            if msg not in result.errors:
                result.errors.append(msg)
    # Each one parses alone; keep the largest prefix that also parses together.
    kept: list[Finding] = []
    for f in good:
        trial, _ = apply_edits(result.text, kept + [f])
        if parses(trial):
            kept.append(f)
    return apply_edits(result.text, kept)


def _finish(result: FixResult, lint, parses) -> FixResult:
    """Drop debugger imports that the fixes left unused (several calls removed in one run)."""
    if not any(f.code == DEBUGGER_CODE for f in result.fixed):
        return result
    from .debugger import remove_unused_debugger_imports

    cleaned = remove_unused_debugger_imports(result.original, result.text)
    if cleaned != result.text and parses(cleaned):
        result.text = cleaned
        result.remaining = lint(cleaned)
    return result


def _fix_id(f: Finding) -> str:
    return hashlib.sha1(repr([(e.content, e.row, e.column) for e in f.fix.edits]).encode()).hexdigest()


# --------------------------------------------------------------------------------------------
# Source and files


def _structure(summary) -> tuple:
    """What decides compile regions, except call edges (compared separately)."""
    return (
        summary.module,
        summary.imports,
        {k: vars(v) for k, v in summary.classes.items()},
        {k: (v.cls, v.name, v.compile_root, v.disabled) for k, v in summary.functions.items()},
        summary.compile_targets,
    )


def _same_regions(new, old) -> bool:
    """Fixes rarely touch what decides regions; when they only removed call edges (a guarded
    `logger.info` no longer calls out), the original run's live set still describes the file."""
    if old is None or _structure(new) != _structure(old):
        return False
    return all(set(map(tuple, f.edges)) <= set(map(tuple, old.functions[q].edges)) for q, f in new.functions.items())


def _select_in_file(summary, original, summaries, live: set[str], config) -> list[Finding]:
    """Findings of one re-analysed file, as the whole-project run would select them.

    Rebuilding regions over every file after each fix pass costs about a second on a large
    tree; when the file's region-relevant structure is unchanged, reuse the live set computed
    once (select on the file alone, rooted at its live functions, and keep only live scopes).
    """
    from dynalint.engine import select_findings

    if _same_regions(summary, original):
        roots = tuple(q for q in summary.functions if q in live)
        found = select_findings([summary], config, extra_roots=roots)
        return [f for f in found if not f.scope or f.scope in live]
    others = [s for s in summaries if s.filename != summary.filename]
    return [f for f in select_findings([summary] + others, config) if f.filename == summary.filename]


def fix_source(text: str, filename: str, config, unsafe: bool = False, context: Iterable = ()) -> FixResult:
    from dynalint.engine import lint_source

    context = list(context)
    return fix_text(text, lambda t: lint_source(t, filename, config, context=context), unsafe)


@dataclass
class FixOutcome:
    fixed: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    diff_text: str = ""
    written: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # with diff: path -> fixed text, nothing written


@dataclass
class RawFile:
    raw: bytes
    encoding: str
    bom: bool
    text: str


def read_raw(path: Path) -> RawFile:
    raw = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    bom = raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return RawFile(raw, "utf-8" if encoding == "utf-8-sig" else encoding, bom, text)


def write_atomic(path: Path, text: str, like: RawFile) -> None:
    # A symlink stays a symlink: the file it points to is replaced (in that file's folder).
    path = path.resolve() if path.is_symlink() else path
    data = text.encode(like.encoding)
    if like.bom:
        data = b"\xef\xbb\xbf" + data
    mode = None
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        pass
    write_bytes_atomically(path, data, mode=mode, durable=True)


def _write_unless_changed(path: Path, display: str, text: str, raw: RawFile) -> Optional[str]:
    """Write the fixed text; the reason when it was not written."""
    try:
        if path.read_bytes() != raw.raw:
            return f"{display} changed on disk while fixing; not written"
        if not os.stat(path).st_mode & 0o222:
            # Read-only (0444): left alone, even for a user (root) whom the rename would let
            # replace it.
            return f"{display} is read-only; not written"
        write_atomic(path, text, raw)
    except OSError as exc:
        return f"cannot write {display}: {exc.strerror or exc}"
    return None


def fix_paths(files, summaries, findings: list[Finding], config, unsafe: bool = False, diff: bool = False) -> FixOutcome:
    """Fix every file that has applicable findings; lint context comes from the other files."""
    from dynalint.engine import SourceFile, analyze_with_facts
    from dynalint.lint.regions import Project

    outcome = FixOutcome()
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.filename, []).append(f)
    summary_by_name = {s.filename: s for s in summaries}
    live: Optional[set[str]] = None
    for sf in files:
        mine = by_file.get(sf.display, [])
        if not any(applicable(f, unsafe) for f in mine):
            outcome.remaining += mine
            continue
        try:
            raw = read_raw(sf.path)
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            outcome.errors.append(f"cannot read {sf.display}: {getattr(exc, 'strerror', None) or exc}")
            outcome.remaining += mine
            continue
        if live is None:
            live = Project(summaries, extra_roots=tuple(config.extra_roots)).reachable()
        original = summary_by_name.get(sf.display)

        def lint(text: str, sf=sf, original=original, raw=raw, mine=mine) -> list[Finding]:
            if text == raw.text:
                return list(mine)  # what the whole-project run found in this very text
            target = SourceFile(sf.path, sf.display, sf.module, sf.is_package, text=text)
            # Re-linted alone, with the facts other files gave its analysis in the whole run
            # (tensors passed in, helpers returning tensors), so findings they led to remain.
            summary = analyze_with_facts(target, config, original.facts if original is not None else None)
            return _select_in_file(summary, original, summaries, live, config)

        try:
            result = fix_text(raw.text, lint, unsafe)
        except Exception as exc:  # a bug met fixing one file: that file stays as it was
            from dynalint.engine import one_line_reason

            outcome.errors.append(f"cannot fix {sf.display}: internal error: {one_line_reason(exc)}")
            outcome.remaining += mine
            continue
        outcome.errors += result.errors
        outcome.remaining += result.remaining
        if not result.changed:
            continue
        if diff:
            outcome.diff_text += result.diff(sf.display)
            outcome.texts[str(sf.path)] = result.text
            outcome.fixed += result.fixed
            continue
        problem = _write_unless_changed(sf.path, sf.display, result.text, raw)
        if problem:
            # Not written: what the file had is still there, unfixed.
            outcome.errors.append(problem)
            outcome.remaining = [f for f in outcome.remaining if f.filename != sf.display] + mine
            continue
        outcome.fixed += result.fixed
        outcome.written.append(sf.display)
    outcome.remaining.sort(key=Finding.sort_key)
    return outcome

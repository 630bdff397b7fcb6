"""Applying fixes: text edits from findings, in passes until stable, never writing broken code.

Each pass lints the current text, takes the applicable fixes (safe, plus unsafe on request),
applies those that do not overlap, and checks that the result parses. A fix whose result does
not parse is dropped and reported. Passes stop when nothing changes (bounded by MAX_PASSES).
Files are written atomically (temp file in the same folder, then rename), keeping encoding, BOM
and newline style, and are skipped when they changed on disk since they were read.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import libcst as cst

from dynalint.findings import Finding, SAFE

MAX_PASSES = 8


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
                self.original.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


def applicable(f: Finding, unsafe: bool) -> bool:
    return f.fix is not None and bool(f.fix.edits) and (f.fix.applicability == SAFE or unsafe)


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _offset(offsets: list[int], row: int, col: int) -> int:
    row = max(1, min(row, len(offsets)))
    return offsets[row - 1] + col - 1


def apply_edits(text: str, findings: list[Finding]) -> tuple[str, list[Finding]]:
    """Apply the fixes of findings whose edits do not overlap earlier ones; return text and applied."""
    offsets = _line_offsets(text)
    chosen: list[tuple[int, int, str]] = []
    applied: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for f in sorted(findings, key=lambda f: (f.row, f.column)):
        spans = []
        for e in f.fix.edits:
            start = _offset(offsets, e.row, e.column)
            end = _offset(offsets, e.end_row, e.end_column)
            spans.append((start, end, e.content))
        if any(not (end <= s or start >= t) or (start == end == s) for start, end, _ in spans for s, t in taken):
            continue
        taken += [(s, t) for s, t, _ in spans]
        chosen += spans
        applied.append(f)
    for start, end, content in sorted(chosen, key=lambda x: (x[0], x[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
        return True
    except Exception:
        return False


def fix_text(text: str, lint, unsafe: bool) -> FixResult:
    """lint(text) -> findings for this text. Returns the fixed text and what was fixed."""
    result = FixResult(original=text, text=text)
    rejected: set[tuple[str, str]] = set()
    for _ in range(MAX_PASSES):
        findings = lint(result.text)
        todo = [f for f in findings if applicable(f, unsafe) and (f.code, _fix_id(f)) not in rejected]
        if not todo:
            result.remaining = findings
            return result
        new_text, applied = apply_edits(result.text, todo)
        if not _parses(new_text):
            # Find the culprits one at a time; keep the good fixes.
            good = []
            for f in applied:
                trial, _ = apply_edits(result.text, [f])
                if _parses(trial):
                    good.append(f)
                else:
                    rejected.add((f.code, _fix_id(f)))
                    result.errors.append(f"fix for {f.code} at {f.filename}:{f.row}:{f.column} would not parse; dropped")
            new_text, applied = apply_edits(result.text, good)
            if not _parses(new_text):
                result.remaining = findings
                return result
        if new_text == result.text:
            result.remaining = findings
            return result
        result.fixed += applied
        result.text = new_text
    result.remaining = lint(result.text)
    return result


def _fix_id(f: Finding) -> str:
    return hashlib.sha1(repr([(e.content, e.row, e.column) for e in f.fix.edits]).encode()).hexdigest()


# --------------------------------------------------------------------------------------------
# Source and files


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
    data = text.encode(like.encoding)
    if like.bom:
        data = b"\xef\xbb\xbf" + data
    mode = None
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".dynalint-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def fix_paths(files, summaries, findings: list[Finding], config, unsafe: bool = False, diff: bool = False) -> FixOutcome:
    """Fix every file that has applicable findings; lint context comes from the other files."""
    from dynalint.engine import SourceFile, analyze_files, select_findings

    outcome = FixOutcome()
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.filename, []).append(f)
    summary_by_name = {s.filename: s for s in summaries}
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
        others = [s for name, s in summary_by_name.items() if name != sf.display]

        def lint(text: str, sf=sf, others=others) -> list[Finding]:
            target = SourceFile(sf.path, sf.display, sf.module, sf.is_package, text=text)
            mine_summary = analyze_files([target], config, jobs=1)
            return [f for f in select_findings(mine_summary + others, config) if f.filename == sf.display]

        result = fix_text(raw.text, lint, unsafe)
        outcome.errors += result.errors
        outcome.remaining += result.remaining
        if not result.changed:
            continue
        if diff:
            outcome.diff_text += result.diff(sf.display)
            outcome.fixed += result.fixed
            continue
        try:
            if sf.path.read_bytes() != raw.raw:
                outcome.errors.append(f"{sf.display} changed on disk while fixing; not written")
                outcome.remaining += [f for f in result.fixed]
                continue
            write_atomic(sf.path, result.text, raw)
        except OSError as exc:
            outcome.errors.append(f"cannot write {sf.display}: {exc.strerror or exc}")
            continue
        outcome.fixed += result.fixed
        outcome.written.append(sf.display)
    outcome.remaining.sort(key=Finding.sort_key)
    return outcome

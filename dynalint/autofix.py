"""Fixing source texts and files: `fix_text` (fixes/apply.py) driven by the engine's lint.

`fix_source` re-lints a text alone at each pass; `fix_paths` fixes the files of a whole-project run,
each re-linted with the facts the other files gave it. Files are written atomically (temp file in
the same folder, then rename), keeping encoding, BOM and newline style, and are skipped when they
changed on disk since they were read.
"""

from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from dynalint.run.atomic import write_bytes_atomically
from dynalint.findings import Finding
from dynalint.fixes.apply import FixResult, applicable, fix_text
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
    from dynalint.run.engine import select_findings

    if _same_regions(summary, original):
        roots = tuple(q for q in summary.functions if q in live)
        found = select_findings([summary], config, extra_roots=roots)
        return [f for f in found if not f.scope or f.scope in live]
    others = [s for s in summaries if s.filename != summary.filename]
    return [f for f in select_findings([summary] + others, config) if f.filename == summary.filename]


def fix_source(text: str, filename: str, config, unsafe: bool = False, context: Iterable = ()) -> FixResult:
    from dynalint.run.engine import lint_source

    context = list(context)
    return fix_text(text, lambda t: lint_source(t, filename, config, context=context), unsafe)


@dataclass
class FixOutcome:
    fixed: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # fixes left out: their rewrite would not parse
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
    from dynalint.run.engine import SourceFile, analyze_with_facts
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
            from dynalint.run.engine import one_line_reason

            outcome.errors.append(f"cannot fix {sf.display}: internal error: {one_line_reason(exc)}")
            outcome.remaining += mine
            continue
        outcome.errors += result.errors
        outcome.skipped += result.skipped
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

"""Static findings against what Dynamo did (parent side; no torch, no user code).

Each finding in the target's compile region gets a status:
- confirmed       Dynamo broke the graph on one of the finding's lines
- not_reproduced  Dynamo traced the line and did not break there
- not_traced      the line ran (eagerly) but Dynamo never traced it (a frame it skipped, code
                  after a break it could not resume from): nothing confirms or refutes the finding
- not_reached     the line never ran with these inputs
Findings of rules that do not claim a graph break (recompile hints, host syncs) are `confirmed`
when a guard failure behind a recompile Dynamo logged lies on their lines (give verify second
inputs), else `reached` or `not_reached`. Each break with no finding on its line is `missed`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from dynalint.config import Config
from dynalint.run.engine import SourceFile, analyze_files, module_name_for, read_source, select_findings
from dynalint.findings import Finding

CONFIRMED, NOT_REPRODUCED, NOT_REACHED, REACHED = "confirmed", "not_reproduced", "not_reached", "reached"
NOT_TRACED = "not_traced"


def display_name(path: str) -> str:
    """Relative to the current folder when under it (as `check` prints), else to the sys.path
    folder holding it (`transformers/activations.py`), else absolute."""
    rel = _relative_to(path, os.getcwd())
    if rel is not None:
        return rel
    roots = sorted((os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)), key=len, reverse=True)
    for root in roots:
        rel = _relative_to(path, root)
        if rel is not None:
            return rel
    return path


def _relative_to(path: str, root: str) -> Optional[str]:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return None
    return None if rel.startswith("..") else rel


@dataclass
class LintedFiles:
    """The model's files linted as one project: texts, summaries and the findings in region."""

    files: list[SourceFile]
    texts: dict[str, str]  # real path -> text
    by_display: dict[str, str]  # display name (and real path) -> real path
    findings: list[Finding] = field(default_factory=list)  # every selected finding (all regions)
    live: set[str] = field(default_factory=set)  # functions reachable from the target


def source_files(paths: Iterable[str], config: Config) -> tuple[list[SourceFile], dict[str, str]]:
    src_roots = [config.root / s for s in config.src]
    files, texts = [], {}
    for path in paths:
        try:
            text = read_source(Path(path))
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
            continue  # not Python source we can read (a C extension's class, say)
        module, is_package = module_name_for(Path(path), src_roots)
        files.append(SourceFile(Path(path), display_name(path), module, is_package, text=text))
        texts[path] = text
    return files, texts


def region_roots(project, module_classes: list[dict], function: Optional[dict], files: list[SourceFile]) -> list[str]:
    """Dotted names of what runs under compile: the forward of every submodule class, or the function."""
    module_of = {str(f.path): f.module for f in files}
    roots = []
    for cls in module_classes:
        module = module_of.get(cls["file"])
        if module is None or "<locals>" in cls["qualname"]:
            continue
        fwd = project.find_method(project.canonical(f"{module}.{cls['qualname']}"), "forward")
        if fwd:
            roots.append(fwd)
    if function and function.get("file") in module_of and "<locals>" not in function.get("qualname", ""):
        roots.append(f"{module_of[function['file']]}.{function['qualname']}")
    return roots


def lint_model(paths: list[str], config: Config, module_classes: list[dict], function: Optional[dict]) -> LintedFiles:
    from dynalint.lint.regions import Project

    files, texts = source_files(paths, config)
    summaries = analyze_files(files, config, jobs=1)
    # Findings name files by display name; those of the fixes stage by real path.
    by_name = {**{f.display: str(f.path) for f in files}, **{str(f.path): str(f.path) for f in files}}
    linted = LintedFiles(files, texts, by_name)
    linted.findings = select_findings(summaries, config)

    class TargetRegion(Project):
        def roots(self) -> list[str]:
            return region_roots(self, module_classes, function, files)

    linted.live = TargetRegion(summaries, extra_roots=tuple(config.extra_roots)).reachable()
    return linted


def in_region(linted: LintedFiles, breaks: list[dict] = ()) -> list[Finding]:
    """Findings in functions reachable from the target, plus any that sits on a break's line."""
    return [
        f
        for f in linted.findings
        if (f.scope and f.scope in linted.live)
        or any(_covers(f, b["filename"], linted.by_display, b["lineno"]) for b in breaks)
    ]


def _severity(code: str) -> str:
    from dynalint.lint.rules import rule_by_code

    rule = rule_by_code(code)
    return rule.severity if rule is not None else "error"


def _covers(f: Finding, path: str, by_display: dict[str, str], lineno: Optional[int]) -> bool:
    return lineno is not None and by_display.get(f.filename) == path and f.row <= lineno <= max(f.row, f.end_row)


def code_at(findings: list[Finding], by_display: dict[str, str], path: Optional[str], lineno: Optional[int]) -> Optional[str]:
    """The code of the static finding on this line, if any (first by position)."""
    for f in findings:
        if path and _covers(f, path, by_display, lineno):
            return f.code
    return None


FOLLOW_UP_IN_LOOP = "step_unsupported"


def all_breaks(result: dict) -> list[dict]:
    """explain's breaks, then those only Dynamo's log reported (in frames it skipped)."""
    breaks = [dict(b) for b in result.get("break_reasons") or ()]
    places = {(b["filename"], b["lineno"]) for b in breaks}
    for b in result.get("logged_breaks") or ():
        if b.get("filename") and (b["filename"], b["lineno"]) not in places:
            places.add((b["filename"], b["lineno"]))
            breaks.append({"reason": b["reason"], "filename": b["filename"], "lineno": b["lineno"],
                           "gb_id": b.get("gb_id"), "gb_type": b.get("gb_type"), "logged_only": True})
    return breaks


def _gb_predicted(code: str) -> list[str]:
    from dynalint.lint.rules import rule_by_code

    rule = rule_by_code(code)
    return [gb_id for gb_id, _ in getattr(rule, "gb_types", ())] if rule is not None else []


def gb_reconciliation(findings: list[dict]) -> dict:
    """Predicted vs observed GB codes over the findings Dynamo confirmed with a coded break:
    {"compared": n, "matched": m, "differed": [{"code", "where", "predicted", "observed"}]}."""
    compared = [f for f in findings if f.get("gb_observed") and f.get("gb_predicted")]
    differed = [{"code": f["code"], "where": f"{f['filename']}:{f['row']}", "predicted": f["gb_predicted"],
                 "observed": f["gb_observed"]} for f in compared if not f.get("gb_match")]
    return {"compared": len(compared), "matched": len(compared) - len(differed), "differed": differed}


def recompile_guards(result: dict) -> list[tuple[str, int]]:
    """(real path, line) of every guard failure behind a recompile Dynamo logged."""
    events = list(result.get("recompile_events") or ()) + list(result.get("recompile_reasons") or ())
    return [(g["filename"], g["lineno"]) for e in events for g in e["guards"] if g.get("filename") and g.get("lineno")]


def reconcile(linted: LintedFiles, breaks: list[dict], executed: dict[str, list[int]],
              traced: Optional[dict[str, list[int]]] = None,
              guards: Iterable[tuple[str, int]] = ()) -> tuple[list[dict], list[dict]]:
    """-> (findings with status, missed breaks). `traced`: lines Dynamo traced (None: unknown);
    `guards`: places of the guard failures behind recompiles (they confirm recompile findings)."""
    guard_places = set(guards)
    ran = {path: set(lines) for path, lines in executed.items()}
    seen_by_dynamo = None if traced is None else {path: set(lines) for path, lines in traced.items()}
    region = in_region(linted, breaks)
    statuses = []
    for f in region:
        path = linted.by_display.get(f.filename, f.filename)
        lines = range(f.row, max(f.row, f.end_row) + 1)
        reached = any(line in ran.get(path, ()) for line in lines)
        hits = [b for b in breaks if b["filename"] == path and b["lineno"] in lines]
        was_traced = seen_by_dynamo is None or any(line in seen_by_dynamo.get(path, ()) for line in lines)
        if _severity(f.code) != "error":
            recompiled = any((path, line) in guard_places for line in lines)
            status = CONFIRMED if recompiled else REACHED if reached or hits else NOT_REACHED
        elif hits:
            status = CONFIRMED
        elif not reached:
            status = NOT_REACHED
        else:
            status = NOT_REPRODUCED if was_traced else NOT_TRACED
        entry = {"code": f.code, "message": f.message, "filename": f.filename, "row": f.row, "column": f.column,
                 "severity": _severity(f.code), "status": status, "traced": bool(was_traced and (reached or hits)),
                 "gb_predicted": _gb_predicted(f.code)}
        observed = sorted({b["gb_id"] for b in hits if b.get("gb_id")})
        if observed:
            entry["gb_observed"] = observed
            if entry["gb_predicted"]:
                entry["gb_match"] = bool(set(observed) & set(entry["gb_predicted"]))
        statuses.append(entry)
    missed, seen = [], set()
    # Files with a break Dynamo gave a reason for: torch 2.11 also reports the loop around such a
    # break as "step_unsupported" (it cannot resume inside the loop), a consequence, not a cause.
    caused = {b["filename"] for b in breaks if b["filename"] and b["reason"] != FOLLOW_UP_IN_LOOP}
    for b in breaks:
        key = (b["filename"], b["lineno"], b["reason"])
        if key in seen:
            continue
        seen.add(key)
        if not b["filename"]:
            continue  # counted among the unexplained breaks
        if b["reason"] == FOLLOW_UP_IN_LOOP and b["filename"] in caused:
            continue
        if any(_covers(f, b["filename"], linted.by_display, b["lineno"]) for f in linted.findings):
            continue
        missed.append({**b, "filename": display_name(b["filename"])})
    return statuses, missed

"""The migration report's data: everything `migrate` did, as one JSON-able dict.

`build_report(result)` collects it; `dynalint.migrate.render` turns it into report.md and a
self-contained report.html with the charts. report.json is the dict itself.
"""

from __future__ import annotations

import datetime
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from dynalint import __version__, rule_url
from dynalint.findings import Finding

FIXED, KEPT, REVERTED = "fixed", "kept", "reverted"


@dataclass
class MigrationResult:
    """What run_migration hands over (see dynalint.migrate)."""

    opts: Any
    files: list  # SourceFile
    code: Any  # CodeMap
    before: list[Finding]  # lint of the original texts
    after: list[Finding]  # lint of the final texts
    fix: Any  # FixStep
    runs: list  # ModelRun
    decisions: list  # RevertDecision (this run)
    state: Any  # MigrationState
    seconds: float = 0.0
    data: dict = field(default_factory=dict)

    def all_done(self) -> bool:
        data = self.data or build_report(self)
        summary = data["summary"]
        return (summary["findings_after"] == 0 and summary["fixes_reverted"] == 0 and summary["missed_breaks"] == 0
                and all(m["status"] in ("verified", "unchanged") for m in data["models"]))


def _rule(code: str):
    from dynalint.lint.rules import rule_by_code

    return rule_by_code(code)


# --------------------------------------------------------------------------------------------
# Breaks Dynamo reported, by file and line


def _breaks(runs: list, which: str) -> dict[tuple[str, int], list[dict]]:
    """(real path, line) -> [{model, reason}] for every break in the models' before or after runs."""
    out: dict[tuple[str, int], list[dict]] = {}
    for run in runs:
        result = getattr(run, which) or {}
        for b in result.get("break_reasons") or ():
            if b.get("filename") and b.get("lineno") is not None:
                key = (os.path.realpath(b["filename"]), int(b["lineno"]))
                out.setdefault(key, []).append({"model": run.name, "reason": b.get("reason", "")})
    return out


def _traced(runs: list) -> Optional[dict[str, set[int]]]:
    """Lines Dynamo traced in the models' 'before' runs (None: no run logged them)."""
    out: Optional[dict[str, set[int]]] = None
    for run in runs:
        lines = (run.before or {}).get("traced_lines")
        if lines is None:
            continue
        out = out if out is not None else {}
        for path, rows in lines.items():
            out.setdefault(os.path.realpath(path), set()).update(rows)
    return out


def _confirmed_by(f: dict, path: str, breaks: dict) -> list[str]:
    rows = range(f["row"], max(f["row"], f.get("end_row") or f["row"]) + 1)
    return sorted({b["model"] for row in rows for b in breaks.get((path, row), ())})


# --------------------------------------------------------------------------------------------
# Findings per file


def _finding(f, status: str, reason: str = "") -> dict:
    if isinstance(f, Finding):
        f = {"code": f.code, "message": f.message, "filename": f.filename, "row": f.row, "column": f.column,
             "end_row": f.end_row, "fix": f.fix.applicability if f.fix is not None else None}
    return {**f, "status": status, "reason": reason, "url": rule_url(f["code"])}


def _match_reverted(after: list[dict], reverted: list[dict]) -> None:
    """Mark the findings that are back because their fix was reverted (same code, nearest row)."""
    for fix in reverted:
        candidates = [a for a in after if a["status"] == KEPT and a["code"] == fix["code"]]
        if candidates:
            best = min(candidates, key=lambda a: abs(a["row"] - fix["row"]))
            best.update(status=REVERTED, reason=fix["reason"])


def _revert_records(result: MigrationResult) -> dict[str, dict]:
    """real path -> {reason, models, fixes} for files reverted in this run or an earlier one."""
    records = {p: r for p, r in result.fix.skipped_reverted.items()}
    for p, r in result.state.reverted.items():
        if p in result.code.display_of_path:
            records[p] = r
    return records


def file_rows(result: MigrationResult, before_breaks: dict, after_breaks: dict) -> list[dict]:
    reverts = _revert_records(result)
    traced = _traced(result.runs)
    after_by_file: dict[str, list[Finding]] = {}
    for f in result.after:
        after_by_file.setdefault(f.filename, []).append(f)
    rows = []
    for sf in result.files:
        path = os.path.realpath(sf.path)
        revert = reverts.get(path)
        fixed = [] if revert else [_finding(f, FIXED) for f in result.fix.fixed.get(path, [])]
        reverted = [_finding(f, REVERTED, revert["reason"]) for f in revert.get("fixes", [])] if revert else []
        kept = [_finding(f, KEPT) for f in after_by_file.get(sf.display, [])]
        _match_reverted(kept, reverted)
        for f in fixed + reverted:
            f["confirmed_by"] = _confirmed_by(f, path, before_breaks)
        for f in fixed:  # verified only where Dynamo traced the fixed line
            rows_ = range(f["row"], max(f["row"], f.get("end_row") or f["row"]) + 1)
            f["traced"] = None if traced is None else any(r in traced.get(path, ()) for r in rows_)
        for f in kept:
            f["confirmed_by"] = _confirmed_by(f, path, after_breaks if f["status"] == KEPT else before_breaks)
        findings = sorted(fixed + kept, key=lambda f: (f["row"], f["column"], f["code"]))
        if findings or revert:
            rows.append({"file": sf.display, "reverted": revert["reason"] if revert else None,
                         "reverted_models": revert.get("models", []) if revert else [], "findings": findings,
                         "counts": dict(Counter(f["status"] for f in findings))})
    return rows


# --------------------------------------------------------------------------------------------
# Rules, models, what needs a human


def rule_rows(before: list[Finding], after: list[Finding], files: list[dict]) -> list[dict]:
    counts_before, counts_after = Counter(f.code for f in before), Counter(f.code for f in after)
    statuses = Counter((f["code"], f["status"]) for row in files for f in row["findings"])
    rows = []
    for code in sorted(set(counts_before) | set(counts_after)):
        rule = _rule(code)
        rows.append({"code": code, "name": rule.name if rule else "", "summary": rule.summary if rule else "",
                     "severity": rule.severity if rule else "error", "before": counts_before[code],
                     "after": counts_after[code], "fixed": statuses[(code, FIXED)],
                     "reverted": statuses[(code, REVERTED)], "url": rule_url(code)})
    return rows


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def model_row(run) -> dict:
    before, after = run.before or {}, run.after or {}
    tb, ta = before.get("timing") or {}, after.get("timing") or {}
    eager, compiled_before, compiled_after = tb.get("eager_ms"), tb.get("compiled_ms"), ta.get("compiled_ms")
    # The 'after' child times both versions interleaved: its pair is the sound comparison.
    paired = ta.get("compare") or {}
    if ta.get("compiled_before_ms") is not None:
        compiled_before = ta["compiled_before_ms"]
    warnings = list(dict.fromkeys(list(tb.get("warnings") or ()) + list(ta.get("warnings") or ())))

    def graphs(r: dict) -> dict:
        return {"graph_count": r.get("graph_count"), "graph_break_count": r.get("graph_break_count"),
                "break_reasons": r.get("break_reasons") or [], "error": r.get("error"),
                "error_kind": r.get("error_kind")}

    return {
        "name": run.name, "function": run.entry.function, "status": run.status(), "reused": run.reused,
        "same_code": run.same_code, "problem": run.failure(), "before": graphs(before),
        "after": graphs(after) if run.after is not None else None,
        "outputs_match": after.get("outputs_match"), "max_abs_diff": after.get("max_abs_diff"),
        "outputs_status": _outputs_status(after), "outputs": _outputs_text(after),
        "kept_slower": run.kept_slower(),
        "eager_ms": eager, "compiled_before_ms": compiled_before, "compiled_after_ms": compiled_after,
        "compile_before_s": tb.get("compile_s"), "compile_after_s": ta.get("compile_s"),
        "speedup_before": _ratio(eager, tb.get("compiled_ms")),
        "speedup_after": (_ratio(eager, tb.get("compiled_ms")) * paired["speedup"]
                          if paired.get("speedup") and _ratio(eager, tb.get("compiled_ms")) else _ratio(eager, compiled_after)),
        "fix_speedup": paired.get("speedup") if paired else _ratio(compiled_before, compiled_after),
        "fix_speedup_ci": paired.get("ci"), "fix_verdict": ta.get("verdict"), "timing_warnings": warnings,
        "device": before.get("device"), "device_name": before.get("device_name"), "torch": before.get("torch"),
        "reverted": run.reverted, "trials": run.trials, "settings_tried": run.settings,
        "error": before.get("error") or after.get("error"),
    }


def _outputs_status(after: dict) -> Optional[str]:
    from dynalint.verify.outputs import status_of

    return status_of(after) if after.get("outputs_match") is not None else None


def _outputs_text(after: dict) -> Optional[str]:
    """`outputs match (max abs diff 0)`, `outputs equal within float32 rounding (...)`, `outputs differ ...`."""
    from dynalint.verify.outputs import describe

    return describe(after) if after.get("outputs_match") is not None else None


def _why_kept(f: dict) -> str:
    if f["status"] == REVERTED:
        return f"its fix was reverted: {f['reason']}"
    if f.get("fix") == "unsafe":
        return "an unsafe fix is available: rerun with --unsafe-fixes (every fix applied is verified)"
    if f.get("fix") == "safe":
        return "a safe fix is available but was not applied (it overlapped another fix or did not parse)"
    return "no automatic fix for this case"


def needs_human(files: list[dict]) -> list[dict]:
    out = []
    for row in files:
        for f in row["findings"]:
            if f["status"] == FIXED:
                continue
            rule = _rule(f["code"])
            out.append({"code": f["code"], "file": row["file"], "row": f["row"], "column": f["column"],
                        "message": f["message"], "url": f["url"], "summary": rule.summary if rule else "",
                        "why": _why_kept(f), "confirmed_by": f.get("confirmed_by", [])})
    return out


def missed_breaks(result: MigrationResult, before_breaks: dict) -> list[dict]:
    """Breaks Dynamo reported in the linted files on lines no finding covers (lint misses)."""
    covered = set()
    for f in result.before:
        path = result.code.path_of_display.get(f.filename)
        for row in range(f.row, max(f.row, f.end_row) + 1):
            covered.add((path, row))
    out = []
    for (path, row), hits in sorted(before_breaks.items()):
        if path in result.code.display_of_path and (path, row) not in covered:
            reasons = sorted({h["reason"] for h in hits})
            out.append({"file": result.code.display(path), "row": row, "reasons": reasons,
                        "models": sorted({h["model"] for h in hits})})
    return out


def reverts(result: MigrationResult, files: list[dict]) -> list[dict]:
    out = []
    for row in files:
        if row["reverted"]:
            out.append({"file": row["file"], "reason": row["reverted"], "models": row["reverted_models"],
                        "fixes": [f for f in row["findings"] if f["status"] == REVERTED],
                        "this_run": any(result.code.display(d.file) == row["file"] for d in result.decisions)})
    return out


def build_report(result: MigrationResult) -> dict:
    before_breaks, after_breaks = _breaks(result.runs, "before"), _breaks(result.runs, "after")
    files = file_rows(result, before_breaks, after_breaks)
    models = [model_row(run) for run in result.runs]
    opts = result.opts
    first = next((m for m in models if m.get("torch")), {})
    from dynalint.migrate.git import head_commit

    data = {
        "tool": "dynalint", "version": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(result.seconds, 1),
        "command": {"path": str(opts.path), "models": str(opts.models), "unsafe_fixes": opts.unsafe_fixes,
                    "keep_slower": getattr(opts, "keep_slower", False), **opts.measure.key()},
        "git_head": head_commit(opts.path),
        "environment": {"torch": first.get("torch"), "device": first.get("device"),
                        "device_name": first.get("device_name")},
        "rules": rule_rows(result.before, result.after, files),
        "files": files,
        "models": models,
        "reverts": reverts(result, files),
        "needs_human": needs_human(files),
        "missed_breaks": missed_breaks(result, before_breaks),
    }
    data["summary"] = summarize(data, len(result.files), result.before, result.after)
    result.data = data
    return data


def summarize(data: dict, n_files: int, before: list, after: list) -> dict:
    statuses = Counter(f["status"] for row in data["files"] for f in row["findings"])
    models = Counter(m["status"] for m in data["models"])
    return {
        "files": n_files, "files_fixed": sum(1 for r in data["files"] if r["counts"].get(FIXED)),
        "files_reverted": len(data["reverts"]), "findings_before": len(before), "findings_after": len(after),
        "fixed": statuses[FIXED],
        "fixed_traced": sum(1 for row in data["files"] for f in row["findings"]
                            if f["status"] == FIXED and f.get("traced") is not False),
        "fixes_reverted": statuses[REVERTED], "kept": statuses[KEPT],
        "models": len(data["models"]), "models_by_status": dict(models), "missed_breaks": len(data["missed_breaks"]),
    }


def write_reports(result: MigrationResult, folder: Path) -> list[Path]:
    from dynalint.migrate.render import render_html, render_markdown, write_charts

    data = build_report(result)
    folder.mkdir(parents=True, exist_ok=True)
    charts = write_charts(data, folder)
    written = [folder / "report.md", folder / "report.html", folder / "report.json"]
    written[0].write_text(render_markdown(data, charts), encoding="utf-8")
    written[1].write_text(render_html(data, charts), encoding="utf-8")
    written[2].write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return written

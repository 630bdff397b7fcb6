"""Render a verify report (the dict `runner.verify` returns) as text, markdown or JSON."""

from __future__ import annotations

import json
from typing import Optional


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def _loc(item: dict) -> str:
    if not item.get("filename"):
        return "(no user frame)"
    return f"{item['filename']}:{item['lineno']}"


def _graph_rows(report: dict) -> list[list[str]]:
    rows = []
    for name in ("before", "after"):
        side = report[name]
        rows.append([name, str(side["graph_count"]), str(side["graph_break_count"]), str(len(side["break_reasons"])),
                     str(side.get("recompiles", "-"))])
    return rows


_GRAPH_HEADER = ["", "graphs", "graph breaks", "break reasons", "recompiles"]


def _break_rows(report: dict) -> list[list[str]]:
    return [
        [name, _loc(b), b.get("code") or "-", b["reason"]]
        for name in ("before", "after")
        for b in report[name]["break_reasons"]
    ]


def _finding_rows(report: dict) -> list[list[str]]:
    return [[f["status"], f"{f['filename']}:{f['row']}:{f['column']}", f["code"], f["message"]] for f in report["findings"]]


def _missed_rows(report: dict) -> list[list[str]]:
    return [[_loc(m), m["reason"]] for m in report["missed"]]


def _timing_rows(report: dict) -> list[list[str]]:
    t = report.get("timing")
    if not t:
        return []
    speedup = "-" if t.get("speedup") is None else f"{t['speedup']:.2f}x"
    return [[_ms(t.get("eager_ms")), _ms(t["compiled_before_ms"]), _ms(t["compiled_after_ms"]),
             f"{t['compile_before_s']:.2f}", f"{t['compile_after_s']:.2f}", speedup]]


_TIMING_HEADER = ["eager ms", "compiled before ms", "compiled after ms", "compile before s", "compile after s",
                  "speedup"]


def _outputs_line(report: dict) -> str:
    diff = report.get("max_abs_diff")
    diff_text = "n/a" if diff is None else f"{diff:.3g}"
    if report["outputs_match"]:
        return f"Outputs match (max abs diff {diff_text})."
    why = report.get("outputs_mismatch") or ""
    return f"Outputs DIFFER (max abs diff {diff_text}). {why}".rstrip()


def _timing_caption(report: dict) -> str:
    t = report["timing"]
    where = report.get("device_name") or t["device"]
    caption = f"Timing on {where}: median of {t['repeat']} calls after {t['warmup']} warm-up, backend {t['backend']}"
    if t.get("note"):
        caption += f" ({t['note']})"
    return caption + "."


# --------------------------------------------------------------------------------------------
# text


def _table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for r in rows:
        lines.append(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return lines


def render_text(report: dict) -> str:
    out = [f"dynalint verify {report['target']}  (torch {report['torch']}, {report['device_name']})", ""]
    out += _table(_GRAPH_HEADER, _graph_rows(report))
    if report.get("note"):
        out += ["", report["note"]]
    if report["fixes"]:
        out += ["", "Fixes applied in memory:"]
        out += [f"  {f['filename']}:{f['row']}  {f['code']}  {f['message']}" for f in report["fixes"]]
    for error in report.get("fix_errors") or ():
        out.append(f"  fix error: {error}")
    if _break_rows(report):
        out += ["", "Break reasons:"] + _table(["", "where", "finding", "reason"], _break_rows(report))
    if report["findings"]:
        out += ["", "Findings in the compile region:"] + _table(["status", "where", "code", "message"], _finding_rows(report))
    if report["missed"]:
        out += ["", "Missed (Dynamo broke, no finding):"] + _table(["where", "reason"], _missed_rows(report))
    out += ["", _outputs_line(report)]
    if report.get("timing"):
        out += ["", _timing_caption(report)] + _table(_TIMING_HEADER, _timing_rows(report))
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# markdown


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return lines


def render_markdown(report: dict) -> str:
    out = [f"### `dynalint verify {report['target']}`", "", f"torch {report['torch']}, {report['device_name']}", ""]
    out += _md_table(_GRAPH_HEADER, _graph_rows(report))
    if report.get("note"):
        out += ["", report["note"]]
    if report["fixes"]:
        out += ["", "Fixes applied in memory:", ""]
        out += _md_table(["where", "code", "fix"], [[f"{f['filename']}:{f['row']}", f["code"], f["message"]] for f in report["fixes"]])
    if _break_rows(report):
        out += ["", "Break reasons:", ""] + _md_table(["", "where", "finding", "reason"], _break_rows(report))
    if report["findings"]:
        out += ["", "Findings in the compile region:", ""]
        out += _md_table(["status", "where", "code", "message"], _finding_rows(report))
    if report["missed"]:
        out += ["", "Missed (Dynamo broke, no finding):", ""] + _md_table(["where", "reason"], _missed_rows(report))
    out += ["", _outputs_line(report)]
    if report.get("timing"):
        out += ["", _timing_caption(report), ""] + _md_table(_TIMING_HEADER, _timing_rows(report))
    return "\n".join(out)


def render(report: dict, output_format: str) -> str:
    if output_format == "json":
        return json.dumps(report, indent=2)
    if output_format == "markdown":
        return render_markdown(report)
    return render_text(report)

"""Render a verify report (the dict `runner.verify` returns) as text, markdown or JSON."""

from __future__ import annotations

import json
from typing import Optional

from dynalint.verify.stats import interval_text, slower_text


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def _loc(item: dict) -> str:
    if not item.get("filename"):
        return "(no user frame)"
    return f"{item['filename']}:{item['lineno']}"


def _reasons_cell(side: dict) -> str:
    """Located breaks, and the unexplained ones: an empty list is never shown as none."""
    located = len(side["break_reasons"])
    unexplained = side.get("unexplained_breaks") or 0
    return f"{located} + unexplained ({unexplained})" if unexplained else str(located)


def _graph_rows(report: dict) -> list[list[str]]:
    rows = []
    for name in ("before", "after"):
        side = report[name]
        rows.append([name, str(side["graph_count"]), str(max(side["graph_break_count"], 0)), _reasons_cell(side),
                     str(len(side.get("frame_skips") or ())), str(side.get("recompiles", "-"))])
    return rows


_GRAPH_HEADER = ["", "graphs", "graph breaks", "break locations", "skipped frames", "recompiles"]


def _gb(item: dict) -> str:
    return item.get("gb_id") or "-"


def _break_rows(report: dict) -> list[list[str]]:
    return [
        [name, _loc(b), b.get("code") or "-", _gb(b), (b.get("gb_type") or b["reason"])
         + (" (in a frame Dynamo then skipped)" if b.get("logged_only") else "")]
        for name in ("before", "after")
        for b in report[name]["break_reasons"]
    ]


def _skip_rows(report: dict) -> list[list[str]]:
    return [[name, _loc(s), s.get("function") or "-", s["why"]]
            for name in ("before", "after") for s in report[name].get("frame_skips") or ()]


def _recompile_rows(report: dict) -> list[list[str]]:
    rows = []
    for name in ("before", "after"):
        for e in report[name].get("recompile_reasons") or ():
            for g in e["guards"] or [{"guard": "?", "filename": None, "lineno": None}]:
                rows.append([name, f"{e['function']} ({_loc(e)})", _loc(g) if g.get("filename") else "-",
                             g.get("code") or "-", g["guard"]])
    return rows


def _finding_rows(report: dict) -> list[list[str]]:
    return [[f["status"], f"{f['filename']}:{f['row']}:{f['column']}", f["code"],
             ",".join(f.get("gb_observed") or ()) or "-", f["message"]] for f in report["findings"]]


def _missed_rows(report: dict) -> list[list[str]]:
    return [[_loc(m), _gb(m), m.get("gb_type") or m["reason"]] for m in report["missed"]]


def _unexplained_lines(report: dict) -> list[str]:
    out = []
    for name in ("before", "after"):
        n = report[name].get("unexplained_breaks") or 0
        if n:
            out.append(f"Unexplained breaks {name} ({n}): Dynamo counted {n} graph breaks without saying where "
                       "(see the skipped frames; rerun with TORCH_LOGS=graph_breaks,recompiles).")
    return out


def _fixes_line(report: dict) -> Optional[str]:
    fixes = report.get("fixes") or []
    if not fixes:
        return None
    verified = report.get("fixes_verified", 0)
    untraced = sum(1 for f in fixes if f.get("traced") is False)
    line = f"{len(fixes)} fixed, {verified} verified (on lines Dynamo traced, outputs equal)"
    if untraced:
        line += f"; {untraced} on lines Dynamo never traced: not verified"
    return line + "."


def _gb_line(report: dict) -> Optional[str]:
    """How the rules' predicted GB codes compare with the codes Dynamo gave the confirmed breaks."""
    gb = report.get("gb_codes")
    if not gb or not gb["compared"]:
        return None
    line = (f"GB codes: {gb['matched']} of {gb['compared']} confirmed finding{'s' if gb['compared'] != 1 else ''} "
            "broke with a code their rule predicts")
    if gb["differed"]:
        line += "; differed: " + ", ".join(
            f"{d['code']} at {d['where']} predicted {'/'.join(d['predicted'])}, Dynamo gave {'/'.join(d['observed'])}"
            for d in gb["differed"])
    return line + "."


def _settings_lines(report: dict) -> list[str]:
    tried = report.get("settings_tried")
    if tried is None:
        return []
    base = report["after"]
    out = [f"Dynamo settings tried on the {'fixed' if report['fixes'] else 'original'} code "
           f"({base['graph_count']} graphs, {max(base['graph_break_count'], 0)} breaks):"]
    for t in tried:
        if t.get("error"):
            out.append(f"  {t['text']}: failed: {t['error']}")
            continue
        outputs = "outputs match" if t["outputs_match"] else f"outputs DIFFER ({t.get('outputs_mismatch') or ''})".replace(" ()", "")
        mark = "  <- suggested" if t["suggested"] else "  <- fewer breaks but SLOWER: not suggested" if t.get("slower") else ""
        out.append(f"  {t['text']}: {t['graph_count']} graphs, {t['graph_break_count']} breaks, {outputs}{mark}")
        if t.get("timing"):
            out += ["    " + line for line in setting_timing_lines(t["timing"])]
    if any(t.get("slower") for t in tried):
        out.append("  none suggested: the setting that lowered the breaks with outputs equal made the compiled code slower.")
    elif not any(t["suggested"] for t in tried):
        out.append("  none suggested: no setting lowered the breaks with outputs equal.")
    return out


def ratio_text(t: dict) -> str:
    """A paired timing's `1.26x (95% interval 1.22-1.30) faster`, or `cannot measure`."""
    if t.get("verdict") in (None, "cannot measure") or t.get("speedup") is None:
        return "cannot measure"
    return f"{interval_text(t['speedup'], t['speedup_ci'])} {t['verdict']}"


def setting_timing_lines(t: dict) -> list[str]:
    """A suggested setting's timing: `compiled with it 9.81 ms, without 12.3 ms: 1.26x (95% interval
    1.22-1.30) faster`, and the warnings."""
    if t.get("error"):
        return [f"timing with and without it failed: {t['error']}"]
    ratio = ratio_text(t)
    line = (f"compiled with it {_ms(t.get('compiled_after_ms'))} ms, without {_ms(t.get('compiled_before_ms'))} ms: "
            f"{ratio}{' (see the warnings)' if ratio == 'cannot measure' else ''}")
    return [line] + [f"Warning: {w}" for w in t.get("warnings") or ()]


def _iqr(arm: Optional[dict]) -> str:
    return "-" if not arm else f"{arm['q1_ms']:.3f}-{arm['q3_ms']:.3f}"


def _timing_rows(report: dict) -> list[list[str]]:
    t = report.get("timing")
    if not t:
        return []
    arms = t.get("arms") or {}
    paired = "before" in arms
    rows = []
    if "eager" in arms:
        rows.append(["eager", _ms(t.get("eager_ms")), _iqr(arms.get("eager")), "-"])
    if paired:
        rows.append(["compiled before", _ms(t["compiled_before_ms"]), _iqr(arms.get("before")),
                     _s(t.get("compile_before_s"))])
        rows.append(["compiled after", _ms(t["compiled_after_ms"]), _iqr(arms.get("after")),
                     _s(t.get("compile_after_s"))])
    else:
        rows.append(["compiled", _ms(t["compiled_after_ms"]), _iqr(arms.get("compiled")), _s(t.get("compile_after_s"))])
    return rows


def _s(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


_TIMING_HEADER = ["", "median ms", "IQR ms", "compile s"]


def speedup_line(t: dict) -> Optional[str]:
    """`Speedup of the fixes: 1.31x (95% interval 1.27-1.36): faster`; a slowdown as `The fixed code
    is SLOWER: 0.55x (95% interval ...); compiled median ...; spread (IQR) ...` (None without a pair)."""
    if t.get("verdict") is None:
        return None
    if t["verdict"] == "cannot measure" or t.get("speedup") is None:
        return "Speedup of the fixes: cannot measure (see the warnings)."
    if t["verdict"] == "slower":
        arms = t.get("arms") or {}
        return (f"The fixed code is {slower_text(t['speedup'], t['speedup_ci'], arms.get('before'), arms.get('after'))}"
                ".").replace("is slower", "is SLOWER", 1)
    return f"Speedup of the fixes: {interval_text(t['speedup'], t['speedup_ci'])}: {t['verdict']}."


def eager_line(t: dict) -> Optional[str]:
    """`Compiled is SLOWER than eager here: 0.84x (...)`, where the interleaved rounds say so and
    nothing (load, launch-bound, noise) was warned about."""
    vs = t.get("vs_eager") or {}
    if vs.get("verdict") != "slower" or t.get("warnings") or not vs.get("ci"):
        return None
    return (f"Compiled{' (after the fixes)' if 'before' in (t.get('arms') or {}) else ''} is SLOWER than eager "
            f"here: {interval_text(vs['speedup'], vs['ci'])}; for this model and input size "
            "torch.compile does not pay off as the code is.")


def _timing_footer(report: dict) -> list[str]:
    t = report["timing"]
    lines = []
    line = speedup_line(t)
    if line:
        lines.append(line)
    line = eager_line(t)
    if line:
        lines.append(line)
    lines += [f"Warning: {w}" for w in t.get("warnings") or ()]
    return lines


def _outputs_line(report: dict) -> str:
    from dynalint.verify.outputs import describe

    return describe(report, capital=True) + "."


def _timing_caption(report: dict) -> str:
    t = report["timing"]
    where = report.get("device_name") or t["device"]
    threads = f", {t['threads']} thread{'s' if t['threads'] != 1 else ''}" if t.get("threads") and t["device"] == "cpu" else ""
    calls = t.get("calls_per_round")
    caption = (f"Timing on {where}{threads}: {t.get('rounds')} interleaved rounds of {calls} call{'s' if calls != 1 else ''} "
               f"per version after {t['warmup']} warm-up, backend {t['backend']}")
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
    mode = ", train mode" if report.get("train") else ""
    out = [f"dynalint verify {report['target']}  (torch {report['torch']}, {report['device_name']}{mode})", ""]
    out += _table(_GRAPH_HEADER, _graph_rows(report))
    if report.get("note"):
        out += ["", report["note"]]
    if report["fixes"]:
        out += ["", "Fixes applied in memory:"]
        out += [f"  {f['filename']}:{f['row']}  {f['code']}  {f['message']}"
                + ("  (not traced by Dynamo)" if f.get("traced") is False else "") for f in report["fixes"]]
        out.append("  " + _fixes_line(report))
    for error in report.get("fix_errors") or ():
        out.append(f"  fix error: {error}")
    if _break_rows(report):
        out += ["", "Graph breaks:"] + _table(["", "where", "finding", "GB", "Dynamo's reason"], _break_rows(report))
    out += [""] + _unexplained_lines(report) if _unexplained_lines(report) else []
    if _skip_rows(report):
        out += ["", "Frames Dynamo skipped (ran eagerly):"] + _table(["", "where", "function", "why"], _skip_rows(report))
    if _recompile_rows(report):
        out += ["", "Recompiles (guard failures):"] + _table(["", "function", "guard from", "finding", "guard"],
                                                             _recompile_rows(report))
    if report["findings"]:
        out += ["", "Findings in the compile region:"] + _table(["status", "where", "code", "GB seen", "message"],
                                                                _finding_rows(report))
        out += ["  " + _gb_line(report)] if _gb_line(report) else []
    if report["missed"]:
        out += ["", "Missed (Dynamo broke, no finding):"] + _table(["where", "GB", "reason"], _missed_rows(report))
    out += ["", _outputs_line(report)]
    out += [""] + _settings_lines(report) if _settings_lines(report) else []
    if report.get("timing"):
        out += ["", _timing_caption(report)] + _table(_TIMING_HEADER, _timing_rows(report)) + _timing_footer(report)
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
    mode = ", train mode" if report.get("train") else ""
    out = [f"### `dynalint verify {report['target']}`", "", f"torch {report['torch']}, {report['device_name']}{mode}", ""]
    out += _md_table(_GRAPH_HEADER, _graph_rows(report))
    if report.get("note"):
        out += ["", report["note"]]
    if report["fixes"]:
        out += ["", "Fixes applied in memory:", ""]
        out += _md_table(["where", "code", "fix", "traced by Dynamo"],
                         [[f"{f['filename']}:{f['row']}", f["code"], f["message"],
                           {True: "yes", False: "no", None: "?"}[f.get("traced")]] for f in report["fixes"]])
        out += ["", _fixes_line(report)]
    if _break_rows(report):
        out += ["", "Graph breaks:", ""] + _md_table(["", "where", "finding", "GB", "Dynamo's reason"], _break_rows(report))
    out += [""] + _unexplained_lines(report) if _unexplained_lines(report) else []
    if _skip_rows(report):
        out += ["", "Frames Dynamo skipped (ran eagerly):", ""] + _md_table(["", "where", "function", "why"], _skip_rows(report))
    if _recompile_rows(report):
        out += ["", "Recompiles (guard failures):", ""]
        out += _md_table(["", "function", "guard from", "finding", "guard"], _recompile_rows(report))
    if report["findings"]:
        out += ["", "Findings in the compile region:", ""]
        out += _md_table(["status", "where", "code", "GB seen", "message"], _finding_rows(report))
        out += ["", _gb_line(report)] if _gb_line(report) else []
    if report["missed"]:
        out += ["", "Missed (Dynamo broke, no finding):", ""] + _md_table(["where", "GB", "reason"], _missed_rows(report))
    out += ["", _outputs_line(report)]
    out += [""] + [f"{x}  " for x in _settings_lines(report)] if _settings_lines(report) else []
    if report.get("timing"):
        out += ["", _timing_caption(report), ""] + _md_table(_TIMING_HEADER, _timing_rows(report))
        out += [""] + [f"{x}  " for x in _timing_footer(report)]
    return "\n".join(out)


def render(report: dict, output_format: str) -> str:
    if output_format == "json":
        return json.dumps(report, indent=2)
    if output_format == "markdown":
        return render_markdown(report)
    return render_text(report)

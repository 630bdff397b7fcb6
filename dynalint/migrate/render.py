"""Render the migration report (the dict of `dynalint.migrate.report.build_report`) as Markdown and HTML.

report.html is self-contained: inline CSS, the charts as base64 PNG, no scripts, no external
files, so it can be mailed or attached to a ticket. report.md links the same charts as PNG files
written next to it. Charts need matplotlib (`pip install 'dynalint[verify]'`); without it the
reports say so instead of showing them.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Optional

CHARTS = {
    "graphs": "Graphs per model, before and after the fixes",
    "speedups": "Speedup of the compiled model over eager, before and after the fixes",
}


# --------------------------------------------------------------------------------------------
# Numbers


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def speedup(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}x"


def _graphs(side: Optional[dict], key: str) -> str:
    if not side:
        return "–"
    if side.get("error"):
        return "error"
    return fmt(side.get(key))


# --------------------------------------------------------------------------------------------
# Charts


def write_charts(data: dict, folder: Path) -> dict[str, Path]:
    """PNG files of the two charts (empty when matplotlib is missing or there is nothing to plot)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    charts = {}
    measured = [m for m in data["models"] if m["before"].get("graph_count") is not None]
    if measured:
        charts["graphs"] = _bar_chart(
            plt, folder / "graphs.png", [m["name"] for m in measured],
            {"before": [m["before"]["graph_count"] for m in measured],
             "after": [(m["after"] or {}).get("graph_count") or 0 for m in measured]},
            "graphs (fewer is better)", baseline=None)
    # A model whose rounds were too noisy to compare is left out rather than drawn with a wrong bar.
    timed = [m for m in data["models"] if m.get("speedup_before") is not None and m.get("fix_verdict") != "cannot measure"]
    if timed:
        charts["speedups"] = _bar_chart(
            plt, folder / "speedups.png", [m["name"] for m in timed],
            {"compiled before fixes": [m["speedup_before"] for m in timed],
             "compiled after fixes": [m["speedup_after"] or 0 for m in timed]},
            "speedup over eager (higher is better)", baseline=1.0)
    return charts


def _bar_chart(plt, path: Path, names: list[str], series: dict[str, list[float]], ylabel: str,
               baseline: Optional[float]) -> Path:
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 2), 3.2), dpi=100)
    for i, (label, values) in enumerate(series.items()):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(names))]
        bars = ax.bar(xs, values, width, label=label)
        ax.bar_label(bars, labels=[f"{v:.3g}" for v in values], fontsize=8)
    if baseline is not None:
        ax.axhline(baseline, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.margins(y=0.15)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------
# Tables: one description for both formats


def rules_table(data: dict) -> tuple[list[str], list[list[str]]]:
    head = ["rule", "name", "before", "fixed", "reverted", "after"]
    rows = [[r["code"], r["name"], str(r["before"]), str(r["fixed"]), str(r["reverted"]), str(r["after"])]
            for r in data["rules"]]
    rows.append(["total", ""] + [str(sum(r[key] for r in data["rules"])) for key in ("before", "fixed", "reverted", "after")])
    return head, rows


def models_table(data: dict) -> tuple[list[str], list[list[str]]]:
    head = ["model", "status", "graphs before", "graphs after", "breaks before", "breaks after", "outputs match",
            "eager ms", "compiled before ms", "compiled after ms", "speedup before", "speedup after",
            "fix speedup (95% interval)", "timing warnings"]
    rows = []
    for m in data["models"]:
        rows.append([m["name"], m["status"], _graphs(m["before"], "graph_count"), _graphs(m["after"], "graph_count"),
                     _graphs(m["before"], "graph_break_count"), _graphs(m["after"], "graph_break_count"),
                     outputs_cell(m), fmt(m["eager_ms"]), fmt(m["compiled_before_ms"]),
                     fmt(m["compiled_after_ms"]), speedup(m["speedup_before"]), speedup(m["speedup_after"]),
                     fix_speedup(m), "; ".join(m.get("timing_warnings") or ()) or "-"])
    return head, rows


def outputs_cell(m: dict) -> str:
    """`yes`, `within float32 rounding (max diff 2e-05; the original's own error 3e-05)`, `no`."""
    if m.get("outputs_status") == "within rounding":
        return (m.get("outputs") or "").replace("outputs equal ", "", 1)
    return fmt(m["outputs_match"])


def fix_speedup(m: dict) -> str:
    """`1.31x [1.27-1.36] faster` from the interleaved pair; `cannot measure`; `-` untimed."""
    verdict = m.get("fix_verdict")
    if verdict == "cannot measure":
        return "cannot measure"
    if m.get("fix_speedup") is None:
        return "-"
    ci = m.get("fix_speedup_ci")
    interval = f" [{ci[0]:.2f}-{ci[1]:.2f}]" if ci else ""
    kept = " (kept: --keep-slower)" if m.get("kept_slower") else ""
    return f"{m['fix_speedup']:.2f}x{interval}" + (f" {verdict}" if verdict else "") + kept


def files_table(data: dict) -> tuple[list[str], list[list[str]]]:
    head = ["file", "line", "rule", "status", "confirmed by Dynamo in", "message"]
    rows = []
    for row in data["files"]:
        for f in row["findings"]:
            status = f["status"] + (f" ({f['reason']})" if f.get("reason") else "")
            rows.append([row["file"], str(f["row"]), f["code"], status, ", ".join(f.get("confirmed_by", [])) or "–",
                         f["message"]])
    return head, rows


def reverts_table(data: dict) -> tuple[list[str], list[list[str]]]:
    head = ["file", "fixes reverted", "why", "models"]
    rows = [[r["file"], ", ".join(f"{f['code']} line {f['row']}" for f in r["fixes"]) or "–", r["reason"],
             ", ".join(r["models"])] for r in data["reverts"]]
    return head, rows


def human_table(data: dict) -> tuple[list[str], list[list[str]]]:
    head = ["where", "rule", "message", "why it is left", "docs"]
    rows = [[f"{h['file']}:{h['row']}:{h['column']}", h["code"], h["message"], h["why"], h["url"]]
            for h in data["needs_human"]]
    return head, rows


def missed_table(data: dict) -> tuple[list[str], list[list[str]]]:
    head = ["where", "Dynamo's reason", "models"]
    rows = [[f"{b['file']}:{b['row']}", "; ".join(b["reasons"]), ", ".join(b["models"])] for b in data["missed_breaks"]]
    return head, rows


def settings_table(data: dict) -> tuple[list[str], list[list[str]]]:
    head = ["model", "Dynamo setting", "graphs", "breaks", "outputs match", "compiled with it / without", "suggested"]
    rows = []
    for m in data["models"]:
        for t in m.get("settings_tried") or ():
            if t.get("error"):
                rows.append([m["name"], t["text"], "-", "-", f"failed: {t['error']}", "-", "no"])
            else:
                suggested = "yes" if t["suggested"] else "no: slower" if t.get("slower") else "no"
                rows.append([m["name"], t["text"], str(t["graph_count"]), str(t["graph_break_count"]),
                             fmt(t["outputs_match"]), _setting_time(t.get("timing")), suggested])
    return head, rows


def _setting_time(t: Optional[dict]) -> str:
    if not t:
        return "-"
    if t.get("error"):
        return f"timing failed: {t['error']}"
    from dynalint.verify.report import ratio_text

    return f"{t['compiled_after_ms']:.3f} / {t['compiled_before_ms']:.3f} ms: {ratio_text(t)}"


SECTIONS = [
    ("rules", "Findings per rule", rules_table, "No findings."),
    ("models", "Models", models_table, "No models."),
    ("reverts", "Reverted fixes", reverts_table, "No fix was reverted."),
    ("needs-human", "Left for a human", human_table, "Nothing: every finding was fixed and verified."),
    ("missed-breaks", "Graph breaks no rule reported", missed_table, "None: every break Dynamo reported has a finding."),
    ("settings", "Dynamo settings tried on models that still break", settings_table,
     "None tried (`--try-settings` tries them on models with breaks left after the fixes)."),
    ("files", "Findings per file", files_table, "No findings."),
]


def _summary_lines(data: dict) -> list[str]:
    s, cmd, env = data["summary"], data["command"], data["environment"]
    by_status = ", ".join(f"{n} {k}" for k, n in sorted(s["models_by_status"].items())) or "none"
    findings = (f"{s['files']} files linted, {s['findings_before']} findings before and {s['findings_after']} after; "
                f"{s['fixed']} fixed, {s.get('fixed_traced', s['fixed'])} of them verified on lines Dynamo traced, {s['fixes_reverted']} reverted, {s['kept']} kept.")
    command = (f"Command: `dynalint migrate {cmd['path']} --models {cmd['models']}` (device {cmd['device']}, backend "
               f"{cmd['backend']}, repeat {cmd['repeat']}{', unsafe fixes' if cmd['unsafe_fixes'] else ''}"
               f"{', --keep-slower' if cmd.get('keep_slower') else ''}); "
               f"torch {env.get('torch') or '?'} on {env.get('device_name') or env.get('device') or '?'}; "
               f"{data['seconds']} s; git {(data.get('git_head') or 'none')[:12]}.")
    return [findings, f"{s['models']} models: {by_status}.", command]


# --------------------------------------------------------------------------------------------
# Markdown


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(head: list[str], rows: list[list[str]], link_last: bool = False) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [_md_cell(c) for c in row]
        if link_last:
            cells[-1] = f"[docs]({row[-1]})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(data: dict, charts: dict[str, Path]) -> str:
    out = ["# dynalint migration report", "", *[f"- {line}" for line in _summary_lines(data)], ""]
    for key, title in CHARTS.items():
        if key in charts:
            out += [f"![{title}]({charts[key].name})", ""]
    if not charts:
        out += ["(Charts need matplotlib: `pip install 'dynalint[verify]'`.)", ""]
    for anchor, title, table, empty in SECTIONS:
        head, rows = table(data)
        if anchor == "rules" and len(rows) == 1:
            rows = []
        out += [f"## {title}", "", _md_table(head, rows, link_last=anchor == "needs-human") if rows else empty, ""]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# HTML


STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; width: 100%; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: bold; }
.fixed { color: #17692c; } .reverted { color: #a11; } .kept { color: #8a5a00; }
.failed, .error { color: #a11; font-weight: bold; } .verified, .unchanged { color: #17692c; }
img { max-width: 100%; margin-right: 1em; }
code { background: #f5f5f5; padding: 0 3px; }
"""


def _is_number(text: str) -> bool:
    return text.replace(".", "", 1).replace("x", "").replace("e-", "").replace("e+", "").lstrip("-").isdigit()


def _html_cell(text: str, column: str) -> str:
    classes = []
    if _is_number(text):
        classes.append("num")
    if column == "status":
        classes.append(html.escape(text.split(" ", 1)[0]))
    attr = f' class="{" ".join(classes)}"' if classes else ""
    if column == "docs" and text.startswith("http"):
        return f'<td><a href="{html.escape(text)}">docs</a></td>'
    return f"<td{attr}>{html.escape(text)}</td>"


def _html_table(anchor: str, head: list[str], rows: list[list[str]]) -> str:
    lines = [f'<table id="{anchor}">', "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead>",
             "<tbody>"]
    for row in rows:
        total = ' class="total"' if row and row[0] == "total" else ""
        lines.append(f"<tr{total}>" + "".join(_html_cell(c, h) for c, h in zip(row, head)) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _inline_png(path: Path, title: str) -> str:
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(title)}" title="{html.escape(title)}" src="data:image/png;base64,{encoded}">'


def render_html(data: dict, charts: dict[str, Path]) -> str:
    body = ["<h1>dynalint migration report</h1>", "<ul>"]
    body += [f"<li>{html.escape(line)}</li>" for line in _summary_lines(data)]
    body.append("</ul>")
    if charts:
        body.append('<div id="charts">' + "".join(_inline_png(charts[k], t) for k, t in CHARTS.items() if k in charts)
                    + "</div>")
    else:
        body.append("<p>(Charts need matplotlib: <code>pip install 'dynalint[verify]'</code>.)</p>")
    for anchor, title, table, empty in SECTIONS:
        head, rows = table(data)
        if anchor == "rules" and len(rows) == 1:
            rows = []
        body.append(f"<h2>{html.escape(title)}</h2>")
        body.append(_html_table(anchor, head, rows) if rows else f"<p id=\"{anchor}\">{html.escape(empty)}</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>dynalint migration report</title>"
            f"<style>{STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")

"""Output formats: text (with source and caret), concise, json (ruff's schema), github, sarif, junit."""

from __future__ import annotations

import json
from collections import Counter
from typing import Callable, Optional

from dynalint import __version__, rule_url
from dynalint.findings import Finding

FORMATS = ("text", "concise", "json", "sarif", "github", "junit")


def _rule(code: str):
    from dynalint.lint.rules import rule_by_code

    return rule_by_code(code)


def severity(f: Finding, config=None) -> str:
    """error / warning / info: the rule's default, or `[tool.dynalint.severity]` when configured."""
    rule = _rule(f.code)
    default = rule.severity if rule is not None else "error"
    return config.severity_of(f.code, default, f.filename) if config is not None else default


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _fix_mark(f: Finding, unsafe: bool) -> str:
    if f.fix is None or not f.fix.edits:
        return ""
    if f.fix.applicability == "safe" or unsafe:
        return "[*] "
    return ""


def format_concise(findings: list[Finding], unsafe: bool = False, **_) -> str:
    return "".join(
        f"{f.filename}:{f.row}:{f.column}: {f.code} {_fix_mark(f, unsafe)}{f.message}\n" for f in findings
    )


def format_text(findings: list[Finding], sources: Optional[dict[str, str]] = None, unsafe: bool = False, **_) -> str:
    out = []
    sources = sources or {}
    lines_cache: dict[str, list[str]] = {}
    shown: dict[tuple[str, int], tuple[str, bool]] = {}  # (file, row) -> (line with tabs expanded, has tabs)
    for f in findings:
        out.append(f"{f.filename}:{f.row}:{f.column}: {f.code} {_fix_mark(f, unsafe)}{f.message}\n")
        text = sources.get(f.filename)
        if text is None:
            continue
        lines = lines_cache.get(f.filename)
        if lines is None:  # not setdefault: that would split the whole file again for every finding
            lines = lines_cache[f.filename] = text.splitlines()
        if 1 <= f.row <= len(lines):
            raw = lines[f.row - 1]
            # Expanded once per line: many findings on one very long line (generated code) would
            # otherwise cost the line's length each.
            line, tabs = shown.get((f.filename, f.row)) or shown.setdefault(
                (f.filename, f.row), (raw.expandtabs(4), "\t" in raw))
            end = f.end_column if f.end_row == f.row else len(raw) + 1
            end = min(end, len(raw) + 1)
            if tabs:
                # Tabs are shown as 4 spaces so that the caret lines up in any terminal.
                before = len(raw[: f.column - 1].expandtabs(4))
                width = max(1, len(raw[: end - 1].expandtabs(4)) - before)
            else:
                before = min(f.column - 1, len(raw))
                width = max(1, end - 1 - before)
            line, before, width = _window(line, before, width)
            gutter = f"{f.row:>4} | "
            out.append(f"{gutter}{line}\n")
            out.append(" " * (len(gutter) + before) + "^" * width + "\n")
    return "".join(out)


SNIPPET_WIDTH = 160


def _window(line: str, start: int, width: int) -> tuple[str, int, int]:
    """A very long line (generated or minified code) shown as the part around the finding, cut
    with `...`: (line, caret start, caret width)."""
    if len(line) <= SNIPPET_WIDTH:
        return line, start, width
    width = min(width, SNIPPET_WIDTH - 40)
    lo = max(0, start - 40)
    hi = min(len(line), lo + SNIPPET_WIDTH)
    text = line[lo:hi]
    prefix = "..." if lo > 0 else ""
    suffix = "..." if hi < len(line) else ""
    return prefix + text + suffix, start - lo + len(prefix), width


def finding_json(f: Finding) -> dict:
    return {
        "cell": None,
        "code": f.code,
        "end_location": {"column": f.end_column, "row": f.end_row},
        "filename": f.filename,
        "fix": f.fix.to_json() if f.fix else None,
        "location": {"column": f.column, "row": f.row},
        "message": f.message,
        "noqa_row": f.row,
        "url": rule_url(f.code),
        # Dynamo's own break types this finding predicts (GB codes of torch's graph-break registry).
        "gb_types": gb_types(f.code),
    }


def gb_types(code: str) -> list[dict]:
    """[{"id": "GB0170", "type": "Data-dependent branching", "url": ...}] for a rule's code."""
    rule = _rule(code)
    return [{"id": gb_id, "type": gb_type, "url": gb_url(gb_id)} for gb_id, gb_type in getattr(rule, "gb_types", ())]


def gb_url(gb_id: str) -> str:
    return f"https://meta-pytorch.github.io/compile-graph-break-site/gb/{gb_id.lower()}.html"


def format_json(findings: list[Finding], **_) -> str:
    return json.dumps([finding_json(f) for f in findings], indent=2) + "\n"


def _gh_escape(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s: str) -> str:
    """Workflow-command property values also escape `:` and `,`."""
    return _gh_escape(s).replace(":", "%3A").replace(",", "%2C")


def format_github(findings: list[Finding], config=None, **_) -> str:
    out = []
    for f in findings:
        level = _GITHUB_LEVEL[severity(f, config)]
        out.append(
            f"::{level} title=dynalint ({f.code}),file={_gh_prop(f.filename)},line={f.row},col={f.column},"
            f"endLine={f.end_row},endColumn={f.end_column}::{_gh_escape(f'{f.code} {f.message}')}\n"
        )
    return "".join(out)


def _sarif_uri(filename: str) -> dict:
    """Relative paths are resolved against %SRCROOT% (the checkout) by GitHub code scanning."""
    from pathlib import PurePath

    if PurePath(filename).is_absolute():
        from pathlib import Path

        return {"uri": Path(filename).as_uri()}
    return {"uri": filename.replace("\\", "/"), "uriBaseId": "%SRCROOT%"}


def _sarif_region(row: int, column: int, end_row: int, end_column: int) -> dict:
    return {"startLine": row, "startColumn": column, "endLine": end_row, "endColumn": end_column}


def _sarif_rule(r) -> dict:
    docs = r.docs()
    # The docstring's first line repeats the code; the first section says what the rule does.
    body = docs.split("\n", 1)[1].strip() if "\n" in docs else docs
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": body.split("\n\n## ", 1)[0].replace("## What it does", "").strip() or r.summary},
        "help": {"text": docs, "markdown": docs},
        "helpUri": rule_url(r.code),
        "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
        "properties": {"tags": ["torch.compile"], "fixable": r.fixable or "none",
                       "gbTypes": [{"id": i, "type": t, "url": gb_url(i)} for i, t in getattr(r, "gb_types", ())]},
    }


def _sarif_fix(f: Finding) -> dict:
    return {
        "description": {"text": f.fix.message},
        "artifactChanges": [
            {
                "artifactLocation": _sarif_uri(f.filename),
                "replacements": [
                    {
                        "deletedRegion": _sarif_region(e.row, e.column, e.end_row, e.end_column),
                        "insertedContent": {"text": e.content},
                    }
                    for e in f.fix.edits
                ],
            }
        ],
    }


def format_sarif(findings: list[Finding], config=None, **_) -> str:
    """SARIF 2.1.0 as GitHub code scanning reads it: every rule with its docs, results with
    regions (1-based lines, code-point columns) and fixes."""
    from dynalint.lint.rules import all_rules

    catalog = list(all_rules())
    index = {r.code: i for i, r in enumerate(catalog)}
    results = []
    for f in findings:
        res = {
            "ruleId": f.code,
            "level": _SARIF_LEVEL[severity(f, config)],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _sarif_uri(f.filename),
                        "region": _sarif_region(f.row, f.column, f.end_row, f.end_column),
                    }
                }
            ],
        }
        if f.code in index:
            res["ruleIndex"] = index[f.code]
        if gb_types(f.code):
            res["properties"] = {"gbTypes": gb_types(f.code)}
        if f.fix is not None and f.fix.edits:
            res["fixes"] = [_sarif_fix(f)]
        results.append(res)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dynalint",
                        "version": __version__,
                        "informationUri": "https://github.com/dynalint/dynalint",
                        "rules": [_sarif_rule(r) for r in catalog],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The folder dynalint ran in."}}},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def format_junit(findings: list[Finding], files: Optional[list[str]] = None, **_) -> str:
    from xml.sax.saxutils import escape, quoteattr

    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.filename, []).append(f)
    names = list(dict.fromkeys((files or []) + list(by_file)))
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n']
    out.append(f'<testsuites name="dynalint" tests="{max(1, len(findings))}" failures="{len(findings)}">\n')
    for name in names:
        fs = by_file.get(name, [])
        out.append(f'  <testsuite name={quoteattr(name)} tests="{max(1, len(fs))}" failures="{len(fs)}">\n')
        if not fs:
            out.append(f'    <testcase name={quoteattr(name)} classname="dynalint"/>\n')
        for f in fs:
            out.append(
                f"    <testcase name={quoteattr(f'{f.code} at {f.row}:{f.column}')} classname={quoteattr(name)} "
                f'file={quoteattr(name)} line="{f.row}">\n'
                f"      <failure message={quoteattr(f.message)} type={quoteattr(f.code)}>"
                f"{escape(f'{name}:{f.row}:{f.column}: {f.code} {f.message}')}</failure>\n"
                "    </testcase>\n"
            )
        out.append("  </testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out)


FORMATTERS: dict[str, Callable[..., str]] = {
    "text": format_text,
    "concise": format_concise,
    "json": format_json,
    "github": format_github,
    "sarif": format_sarif,
    "junit": format_junit,
}


def statistics(findings: list[Finding], unsafe: bool = False) -> list[dict]:
    """Counts per rule, most frequent first (ties by code), as ruff's `--statistics`."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.edits and (f.fix.applicability == "safe" or unsafe))
    out = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = _rule(code)
        out.append({"code": code, "name": rule.name if rule else "", "count": n, "fixable": fixable.get(code, 0) > 0})
    return out


def format_statistics(findings: list[Finding], unsafe: bool = False, output_format: str = "text") -> str:
    rows = statistics(findings, unsafe)
    if output_format == "json":
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(r["count"])) for r in rows), default=1)
    return "".join(
        f"{r['count']:>{width}}\t{r['code']}\t{'[*]' if r['fixable'] else '   '} {r['name']}\n" for r in rows
    )

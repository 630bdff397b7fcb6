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


def _fix_mark(f: Finding, unsafe: bool) -> str:
    if f.fix is None:
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
    for f in findings:
        out.append(f"{f.filename}:{f.row}:{f.column}: {f.code} {_fix_mark(f, unsafe)}{f.message}\n")
        text = sources.get(f.filename)
        if text is None:
            continue
        lines = lines_cache.setdefault(f.filename, text.splitlines())
        if 1 <= f.row <= len(lines):
            line = lines[f.row - 1]
            width = (f.end_column - f.column) if f.end_row == f.row else len(line) - f.column + 1
            gutter = f"{f.row:>4} | "
            out.append(f"{gutter}{line}\n")
            out.append(" " * (len(gutter) + f.column - 1) + "^" * max(1, width) + "\n")
    return "".join(out)


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
    }


def format_json(findings: list[Finding], **_) -> str:
    return json.dumps([finding_json(f) for f in findings], indent=2) + "\n"


def _gh_escape(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def format_github(findings: list[Finding], **_) -> str:
    out = []
    for f in findings:
        rule = _rule(f.code)
        level = {"error": "error", "warning": "warning", "info": "notice"}.get(rule.severity if rule else "error", "error")
        out.append(
            f"::{level} title=dynalint ({f.code}),file={f.filename},line={f.row},col={f.column},"
            f"endLine={f.end_row},endColumn={f.end_column}::{_gh_escape(f'{f.code} {f.message}')}\n"
        )
    return "".join(out)


def format_sarif(findings: list[Finding], **_) -> str:
    from dynalint.lint.rules import all_rules

    rules = []
    index = {}
    for i, r in enumerate(all_rules()):
        index[r.code] = i
        rules.append(
            {
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.docs().split("\n", 1)[0]},
                "help": {"text": r.docs(), "markdown": r.docs()},
                "helpUri": rule_url(r.code),
                "defaultConfiguration": {"level": {"error": "error", "warning": "warning", "info": "note"}[r.severity]},
            }
        )
    results = []
    for f in findings:
        rule = _rule(f.code)
        res = {
            "ruleId": f.code,
            "ruleIndex": index.get(f.code, -1),
            "level": {"error": "error", "warning": "warning", "info": "note"}[rule.severity if rule else "error"],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.filename.replace("\\", "/")},
                        "region": {
                            "startLine": f.row,
                            "startColumn": f.column,
                            "endLine": f.end_row,
                            "endColumn": f.end_column,
                        },
                    }
                }
            ],
        }
        if f.fix is not None:
            res["fixes"] = [
                {
                    "description": {"text": f.fix.message},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": f.filename.replace("\\", "/")},
                            "replacements": [
                                {
                                    "deletedRegion": {
                                        "startLine": e.row,
                                        "startColumn": e.column,
                                        "endLine": e.end_row,
                                        "endColumn": e.end_column,
                                    },
                                    "insertedContent": {"text": e.content},
                                }
                                for e in f.fix.edits
                            ],
                        }
                    ],
                }
            ]
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
                        "rules": rules,
                    }
                },
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


def format_statistics(findings: list[Finding], unsafe: bool = False) -> str:
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and (f.fix.applicability == "safe" or unsafe))
    out = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = _rule(code)
        mark = "[*]" if fixable.get(code) else "   "
        out.append(f"{n:>6}\t{code}\t{mark} {rule.name if rule else ''}\n")
    return "".join(out)

"""Output formats: text, concise, json (ruff's schema), github, sarif (2.1.0), junit, statistics."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from dynalint import rule_url
from dynalint.cli import main
from dynalint.config import Config
from dynalint.findings import Edit, Finding, Fix
from dynalint.lint.rules import all_rules
from dynalint.output import (
    FORMATTERS,
    format_concise,
    format_github,
    format_json,
    format_junit,
    format_sarif,
    format_statistics,
    format_text,
)

from .samples import MODEL

SOURCE = "import torch\n\ndef f(x):\n\tprint(x)\n    return x\n"
GUARD = Fix("safe", "Guard it", (Edit("    if not torch.compiler.is_compiling():\n", 4, 1, 4, 1),))
PRINT = Finding("DYN101", "`print()` breaks the graph", "pkg/m.py", 4, 2, 4, 10, fix=GUARD)
BRANCH = Finding("DYN201", "branch on a size", "pkg/m.py", 5, 5, 6, 3)
UNSAFE = Finding("DYN110", "`.item()` syncs", "other.py", 1, 1, 1, 9, fix=Fix("unsafe", "Keep a tensor", (Edit("x", 1, 1, 1, 9),)))


def test_text_shows_the_line_and_a_caret_under_the_span():
    out = format_text([PRINT], sources={"pkg/m.py": SOURCE})
    head, line, caret = out.splitlines()
    assert head == "pkg/m.py:4:2: DYN101 [*] `print()` breaks the graph"
    # The tab is shown as four spaces and the caret sits under `print(x)`.
    assert line == "   4 |     print(x)"
    assert caret == " " * len("   4 |     ") + "^" * len("print(x)")


def test_text_multiline_span_underlines_to_the_end_of_the_first_line():
    out = format_text([BRANCH], sources={"pkg/m.py": SOURCE})
    assert out.splitlines()[2] == " " * len("   5 |     ") + "^" * len("return x")


def test_a_very_long_line_is_shown_around_the_finding():
    # Generated code: a 10,000-character line is cut to the part around the span, caret under it.
    line = "x = " + "a + " * 2000 + "print(x) + " + "b + " * 500 + "c"
    col = line.index("print(x)") + 1
    found = Finding("DYN101", "`print()` breaks the graph", "gen.py", 1, col, 1, col + len("print(x)"))
    _, shown, caret = format_text([found], sources={"gen.py": line + "\n"}).splitlines()
    assert len(shown) < 200 and shown.startswith("   1 | ...") and shown.endswith("...")
    start = caret.index("^")
    assert shown[start:start + len("print(x)")] == "print(x)" and caret.count("^") == len("print(x)")


def test_fix_marks_depend_on_unsafe():
    assert format_concise([UNSAFE]) == "other.py:1:1: DYN110 `.item()` syncs\n"
    assert format_concise([UNSAFE], unsafe=True) == "other.py:1:1: DYN110 [*] `.item()` syncs\n"


def test_json_follows_ruffs_schema():
    (item, other) = json.loads(format_json([PRINT, BRANCH]))
    # ruff's keys, and Dynamo's break types the rule predicts.
    assert set(item) == {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url",
                         "gb_types"}
    assert item["gb_types"] == [{"id": "GB0059", "type": "Failed to trace builtin operator",
                                 "url": "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"}]
    assert item["location"] == {"row": 4, "column": 2} and item["end_location"] == {"row": 4, "column": 10}
    assert item["url"] == rule_url("DYN101") and item["noqa_row"] == 4
    assert item["fix"] == {
        "applicability": "safe",
        "message": "Guard it",
        "edits": [
            {
                "content": "    if not torch.compiler.is_compiling():\n",
                "location": {"row": 4, "column": 1},
                "end_location": {"row": 4, "column": 1},
            }
        ],
    }
    assert other["fix"] is None
    assert json.loads(format_json([])) == []


def test_github_annotations_escape_and_use_severity():
    weird = Finding("DYN101", "50% of\nit", "a,b:c.py", 1, 2, 3, 4)
    (line,) = format_github([weird]).splitlines()
    assert line == "::error title=dynalint (DYN101),file=a%2Cb%3Ac.py,line=1,col=2,endLine=3,endColumn=4::DYN101 50%25 of%0Ait"
    assert format_github([BRANCH]).startswith("::warning ")  # DYN2xx are recompile warnings
    cfg = Config(severity={"DYN201": "error"})
    assert format_github([BRANCH], config=cfg).startswith("::error ")


def test_sarif_is_2_1_0_with_rules_regions_and_fixes():
    doc = json.loads(format_sarif([PRINT, BRANCH, UNSAFE], config=Config(severity={"DYN110": "info"})))
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.code for r in all_rules()]
    for r in rules:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        assert r["help"]["text"].startswith(r["id"]) and r["helpUri"] == rule_url(r["id"])
        assert r["defaultConfiguration"]["level"] in ("error", "warning", "note")
    printed, branch, unsafe = run["results"]
    assert rules[printed["ruleIndex"]]["id"] == "DYN101"
    assert printed["level"] == "error" and branch["level"] == "warning" and unsafe["level"] == "note"
    loc = printed["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/m.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 4, "startColumn": 2, "endLine": 4, "endColumn": 10}
    (fix,) = printed["fixes"]
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    assert replacement["deletedRegion"] == {"startLine": 4, "startColumn": 1, "endLine": 4, "endColumn": 1}
    assert replacement["insertedContent"]["text"].startswith("    if not torch")
    assert "fixes" not in branch
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_unknown_code_has_no_rule_index_and_absolute_paths_are_file_uris(tmp_path):
    f = Finding("DYN999", "odd", str(tmp_path / "x.py"), 1, 1, 1, 2)
    (res,) = json.loads(format_sarif([f]))["runs"][0]["results"]
    assert "ruleIndex" not in res
    assert res["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": (tmp_path / "x.py").as_uri()}


def test_junit_has_a_suite_per_file_and_a_failure_per_finding():
    root = ET.fromstring(format_junit([PRINT, BRANCH], files=["pkg/m.py", "clean.py"]))
    assert root.tag == "testsuites" and root.get("failures") == "2"
    suites = {s.get("name"): s for s in root}
    assert set(suites) == {"pkg/m.py", "clean.py"}
    failures = suites["pkg/m.py"].findall("testcase/failure")
    assert [f.get("type") for f in failures] == ["DYN101", "DYN201"]
    assert suites["clean.py"].find("testcase/failure") is None


def test_statistics_text_and_json():
    findings = [PRINT, PRINT, BRANCH, UNSAFE]
    lines = format_statistics(findings).splitlines()
    assert lines == ["2\tDYN101\t[*] print-in-compiled-region", "1\tDYN110\t    tensor-to-python-scalar", "1\tDYN201\t    shape-branch"]
    rows = json.loads(format_statistics(findings, unsafe=True, output_format="json"))
    assert rows[1] == {"code": "DYN110", "name": "tensor-to-python-scalar", "count": 1, "fixable": True}


# ------------------------------------------------------------------------------------------------
# End to end


@pytest.fixture
def model(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "clean.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args, input=None):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], input=input)


@pytest.mark.parametrize("fmt", sorted(FORMATTERS))
def test_every_format_runs_end_to_end(model, fmt):
    result = check("--output-format", fmt, "m.py", "clean.py")
    assert result.exit_code == 1, result.output
    out = result.output
    if fmt == "json":
        assert [d["code"] for d in json.loads(out)] == ["DYN101", "DYN120"]
    elif fmt == "sarif":
        assert [r["ruleId"] for r in json.loads(out)["runs"][0]["results"]] == ["DYN101", "DYN120"]
    elif fmt == "junit":
        assert {s.get("name") for s in ET.fromstring(out)} == {"m.py", "clean.py"}
    elif fmt == "github":
        assert out.splitlines()[0].startswith("::error title=dynalint (DYN101),file=m.py,line=7,col=9,")
    else:
        assert "m.py:7:9: DYN101" in out and "Found 2 errors." in out.splitlines()
        if fmt == "text":
            assert "   7 |         print(x)\n" in out


def test_statistics_end_to_end(model):
    result = check("--statistics", "m.py")
    assert result.exit_code == 1
    assert [line.split("\t")[:2] for line in result.output.splitlines()] == [["1", "DYN101"], ["1", "DYN120"]]
    result = check("--statistics", "--output-format", "json", "m.py")
    assert [r["code"] for r in json.loads(result.output)] == ["DYN101", "DYN120"]


def test_clean_run_says_so_and_exits_0(model):
    result = check("clean.py")
    assert result.exit_code == 0 and result.output.strip() == "All checks passed!"
    assert json.loads(check("--output-format", "json", "clean.py").output) == []


def test_findings_on_one_long_line_each_get_their_caret():
    # Generated code with many findings on one line: the line is prepared once, each caret still
    # sits under its own span (with and without a tab before it).
    for indent in ("", "\t"):
        line = indent + "y = " + " + ".join(f"print({i})" for i in range(300))
        spans = [(line.index(f"print({i})") + 1, len(f"print({i})")) for i in (0, 150, 299)]
        found = [Finding("DYN101", "`print()`", "gen.py", 1, col, 1, col + n) for col, n in spans]
        out = format_text(found, sources={"gen.py": line + "\n"}).splitlines()
        for k, (col, n) in enumerate(spans):
            shown, caret = out[3 * k + 1], out[3 * k + 2]
            start = caret.index("^")
            assert caret.count("^") == n and shown[start:start + n] == line[col - 1:col - 1 + n]

"""`dynalint verify`: child-process measurement, in-memory fixes, reconciliation, CLI errors.

Tests that start a child process import torch there (a few seconds each), so they are grouped
to keep the count low; pure reconciliation and rendering tests need no torch.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynalint.config import Config
from dynalint.verify import reconcile as R
from dynalint.verify import runner
from dynalint.verify.command import verify as verify_cmd
from dynalint.verify.report import render

FIXTURES = Path(__file__).parent / "fixtures" / "verify"


def fixture(name: str) -> str:
    return str(FIXTURES / name)


def line_of(path: str, needle: str) -> int:
    for i, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def invoke(*args: str):
    return CliRunner().invoke(verify_cmd, list(args), catch_exceptions=False)


# --------------------------------------------------------------------------------------------
# measure(): one version in a child process


@pytest.mark.torch
def test_measure_reports_graphs_break_lines_and_executed_lines():
    path = fixture("bad_if.py")
    result = runner.measure({"target": f"{path}::BadIf", "input_shape": [4, 16], "timing": False})
    assert result["error"] is None
    assert result["graph_count"] == 2 and result["graph_break_count"] == 1
    [reason] = result["break_reasons"]
    assert reason["filename"] == os.path.realpath(path)
    assert reason["lineno"] == line_of(path, "if y.sum() > 0")
    assert "generic_jump" in reason["reason"]
    executed = result["executed_lines"][os.path.realpath(path)]
    assert line_of(path, "if y.sum() > 0") in executed
    # Exactly one side of the branch ran.
    assert (line_of(path, "y = y * 2") in executed) != (line_of(path, "y = y - 1") in executed)
    assert result["outputs_digest"][0]["shape"] == [4, 16]
    assert result["target_kind"] == "class" and result["device"] == "cpu"


@pytest.mark.torch
def test_measure_source_override_and_reference_outputs(tmp_path):
    """A factory returning (module, example_inputs); an override changes the imported text only."""
    path = fixture("models.py")
    target = f"{path}::make_clean_with_inputs"
    original_text = Path(path).read_text()
    ref = tmp_path / "ref"
    before = runner.measure({"target": target, "timing": False, "save_dir": str(ref)})
    assert before["error"] is None, before
    assert (before["graph_count"], before["graph_break_count"], before["break_reasons"]) == (1, 0, [])
    assert before["target_kind"] == "factory" and before["outputs_digest"][0]["shape"] == [2, 8]

    patched = original_text.replace(
        "return torch.relu(self.linear(x))", 'y = self.linear(x)\n        print("traced")\n        return torch.relu(y)'
    )
    after = runner.measure(
        {"target": target, "timing": False, "source_override": {path: patched}, "reference_dir": str(ref)}
    )
    assert after["error"] is None, after
    assert after["graph_break_count"] == 1
    assert after["break_reasons"][0]["lineno"] == line_of(path, "return torch.relu(self.linear(x))") + 1
    assert after["outputs_match"] is True and after["max_abs_diff"] == 0.0
    assert Path(path).read_text() == original_text  # nothing on disk changed


def test_cold_compile_gives_the_child_empty_compile_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/warm")
    assert runner._child_env()["TORCHINDUCTOR_CACHE_DIR"] == "/somewhere/warm"
    env = runner._child_env(str(tmp_path))
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "triton")


@pytest.mark.torch
def test_measure_dynamic_counts_recompiles_and_times_with_a_backend():
    result = runner.measure(
        {"target": f"{fixture('shape_branch.py')}::ShapeBranch", "input_shape": [4, 16],
         "second_input_shape": [4, 32], "dynamic": True, "timing": True, "backend": "eager", "repeat": 3,
         "warmup": 1, "cold_compile": True}
    )
    assert result["error"] is None, result
    assert result["graph_break_count"] == 0
    assert result["recompiles"] >= 1  # the width 16 was specialised: width 32 compiles again
    timing = result["timing"]
    assert timing["device"] == "cpu" and timing["backend"] == "eager" and timing["repeat"] == 3
    assert timing["eager_ms"] > 0 and timing["compiled_ms"] > 0 and timing["compile_s"] > 0


# --------------------------------------------------------------------------------------------
# verify(): the full report


REPORT_KEYS = {"target", "torch", "device", "before", "after", "findings", "missed", "outputs_match",
               "max_abs_diff", "timing"}


@pytest.mark.torch
def test_verify_reconciles_every_outcome():
    path = fixture("reconcile_cases.py")
    report = runner.verify(f"{path}::Cases", inputs=f"{path}::inputs", timing=False)
    assert REPORT_KEYS <= set(report)
    assert report["timing"] is None
    status = {(f["code"], f["row"]): f["status"] for f in report["findings"]}
    assert status[("DYN120", line_of(path, "if x.sum() > 0"))] == "confirmed"
    assert status[("DYN120", line_of(path, "if n > 2"))] == "not_reproduced"
    assert status[("DYN101", line_of(path, 'print("never runs")'))] == "not_reached"
    # Every break is either explained by a finding or listed as missed.
    for b in report["before"]["break_reasons"]:
        assert b["code"] or any(m["lineno"] == b["lineno"] for m in report["missed"])
    pid_line = line_of(path, "pid = os.getppid()")
    assert any(b["lineno"] == pid_line for b in report["before"]["break_reasons"])
    # The confirmed tensor branch broke with the GB code DYN120 predicts on the installed torch.
    assert report["gb_codes"]["compared"] >= 1 and report["gb_codes"]["matched"] >= 1


@pytest.mark.torch
def test_verify_fixed_version_improves_and_outputs_are_compared(monkeypatch):
    """The after-measurement path, independent of which rules attach fixes today: the fixes stage
    is replaced by one that guards the print the way DYN101's fix does."""
    path = os.path.realpath(fixture("print_in_forward.py"))
    guarded = Path(path).read_text().replace(
        '        print("debug", y.shape)',
        '        if not torch.compiler.is_compiling():\n            print("debug", y.shape)',
    )

    def fake_fixes(linted, config, unsafe):
        assert path in linted.texts
        return {path: guarded}, [], [], []

    monkeypatch.setattr(runner, "fix_in_memory", fake_fixes)
    report = runner.verify(f"{path}::PrintInForward", input_shape=[4, 16], backend="eager", repeat=3, warmup=1)
    assert report["before"]["graph_break_count"] == 1
    assert report["before"]["break_reasons"][0]["code"] == "DYN101"
    assert report["after"]["graph_count"] == 1 and report["after"]["break_reasons"] == []
    assert report["outputs_match"] is True and report["max_abs_diff"] == 0.0
    timing = report["timing"]
    assert timing["note"] == "no CUDA GPU found: timed on CPU"
    # Both versions timed in one child, interleaved: the speedup is the median of paired rounds.
    lo, hi = timing["speedup_ci"]
    assert lo <= timing["speedup"] <= hi
    assert set(timing["arms"]) == {"eager", "before", "after"} and timing["rounds"] >= 2
    assert timing["verdict"] in ("faster", "slower", "no measurable difference", "cannot measure")
    assert "note" not in report


@pytest.mark.torch
def test_verify_uses_the_fixes_stage(monkeypatch):
    """Whatever `check --fix` would change is what verify measures as `after`."""
    from dynalint.autofix import fix_source
    path = fixture("log_inside_forward.py")
    fixed = fix_source(Path(path).read_text(), R.display_name(os.path.realpath(path)), Config())
    report = runner.verify(f"{path}::LogInsideForward", input_shape=[4, 16], timing=False)
    assert report["before"]["graph_break_count"] == 1
    assert report["outputs_match"] is True
    if fixed.changed:
        assert report["fixes"] and report["after"]["graph_break_count"] < report["before"]["graph_break_count"]
    else:
        assert report["fixes"] == [] and report["after"] == report["before"]


# --------------------------------------------------------------------------------------------
# CLI: output formats, exit codes and one-line errors


@pytest.mark.torch
def test_cli_json_output_and_exit_zero():
    result = invoke(f"{fixture('bad_if.py')}::BadIf", "--input-shape", "4,16", "--no-timing", "--output-format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert REPORT_KEYS <= set(report)
    assert report["before"]["break_reasons"][0]["code"] == "DYN120"


ERROR_CASES = [
    ("models.py::NeedsArgs", ["--input-shape", "4,16"], "needs constructor arguments (width)"),
    ("broken_import.py::Broken", ["--input-shape", "4,16"], "No module named 'no_such_module_for_dynalint'"),
    ("models.py::Clean", ["--input-shape", "4,7"], "mat1 and mat2 shapes cannot be multiplied"),
    ("models.py::CrashInForward", ["--input-shape", "4,16"], "ValueError: boom in forward"),
    ("models.py::Clean", [], "no inputs: give --inputs"),
    ("models.py::Missing", ["--input-shape", "4,16"], "has no attribute 'Missing'"),
    ("models.py::ExitsInForward", ["--input-shape", "4,16"], "forward with the given inputs failed: SystemExit: 3"),
    ("models.py::Clean", ["--inputs", fixture("models.py::no_such_fn")],
     f"--inputs {fixture('models.py::no_such_fn')}: "),
]


@pytest.mark.torch
@pytest.mark.parametrize("target,args,message", ERROR_CASES, ids=[c[2][:24] for c in ERROR_CASES])
def test_cli_user_code_errors_are_one_line_exit_2(target, args, message):
    result = CliRunner().invoke(verify_cmd, [fixture(target), *args, "--no-timing"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines() if hasattr(result, "stderr") else result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dynalint: error: ")
    assert message in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.torch
def test_cli_exit_1_when_the_fixed_outputs_differ(monkeypatch):
    """A "fix" that changes what forward returns is caught: exit 1 and the difference."""
    path = os.path.realpath(fixture("print_in_forward.py"))
    changed = Path(path).read_text().replace("torch.sigmoid(y) * 3", "torch.sigmoid(y) * 4")
    monkeypatch.setattr(runner, "fix_in_memory", lambda linted, config, unsafe: ({path: changed}, [], [], []))
    result = invoke(f"{path}::PrintInForward", "--input-shape", "4,16", "--no-timing", "--output-format", "json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["outputs_match"] is False and report["max_abs_diff"] > 0
    assert report["outputs_mismatch"].startswith("output 0: Tensor-likes are not close")
    assert "Outputs DIFFER" in render(report, "text")


@pytest.mark.torch
def test_cli_verbose_shows_the_traceback_and_timeout_is_one_line():
    crash = CliRunner().invoke(verify_cmd, [fixture("models.py::CrashInForward"), "--input-shape", "4,16",
                                            "--no-timing", "--verbose"])
    assert crash.exit_code == 2 and "Traceback" in crash.output and 'raise ValueError("boom in forward")' in crash.output
    hang = CliRunner().invoke(verify_cmd, [fixture("models.py::Hangs"), "--input-shape", "2,2", "--no-timing",
                                           "--timeout", "8"])
    assert hang.exit_code == 2
    assert hang.output.strip() == "dynalint: error: timed out after 8 s (raise the limit with --timeout)"


def test_cli_without_torch_names_the_verify_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    result = invoke("model.py::M", "--input-shape", "4")
    assert result.exit_code == 2
    assert "torch is not installed" in result.output and "dynalint[verify]" in result.output


def test_child_without_torch_names_the_verify_extra(monkeypatch):
    from dynalint.verify import child

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    result = child.run({"target": "model.py::M"})
    assert result["error_kind"] == "torch_missing" and "dynalint[verify]" in result["error"]


def test_cli_rejects_a_bad_shape():
    result = invoke("model.py::M", "--input-shape", "4,x")
    assert result.exit_code == 2 and "is not a shape like 4,16" in result.output


# --------------------------------------------------------------------------------------------
# Reconciliation and rendering without torch


def test_reconcile_statuses_from_breaks_and_executed_lines():
    path = os.path.realpath(fixture("reconcile_cases.py"))
    classes = [{"qualname": "Cases", "file": path}]
    linted = R.lint_model([path], Config(), classes, None)
    confirmed, unreproduced = line_of(path, "if x.sum() > 0"), line_of(path, "if n > 2")
    never, pid = line_of(path, 'print("never runs")'), line_of(path, "pid = os.getppid()")
    breaks = [
        {"reason": "generic_jump TensorVariable()", "filename": path, "lineno": confirmed},
        {"reason": "Attempted to call function marked as skipped", "filename": path, "lineno": pid},
        {"reason": "Attempted to call function marked as skipped", "filename": path, "lineno": pid},
    ]
    executed = {path: [unreproduced, confirmed, pid]}
    findings, missed = R.reconcile(linted, breaks, executed)
    status = {f["row"]: f["status"] for f in findings}
    assert status[confirmed] == "confirmed"
    assert status[unreproduced] == "not_reproduced"
    assert status[never] == "not_reached"
    assert [(m["lineno"], m["reason"]) for m in missed] == [(pid, "Attempted to call function marked as skipped")]


def test_a_loop_reported_only_as_step_unsupported_is_not_a_missed_break():
    # torch 2.11 reports the loop around a break as "step_unsupported": a consequence of the break
    # in the same file (a finding there), not a break of its own; alone, it still counts as missed.
    path = os.path.realpath(fixture("reconcile_cases.py"))
    linted = R.lint_model([path], Config(), [{"qualname": "Cases", "file": path}], None)
    branch = line_of(path, "if x.sum() > 0")
    follow_up = {"reason": "step_unsupported", "filename": path, "lineno": branch - 1}
    _, missed = R.reconcile(linted, [follow_up, {"reason": "generic_jump TensorVariable()", "filename": path,
                                                 "lineno": branch}], {path: [branch]})
    assert missed == []
    _, alone = R.reconcile(linted, [follow_up], {path: [branch]})
    assert [m["reason"] for m in alone] == ["step_unsupported"]


def test_region_is_the_targets_forward_and_what_it_calls(tmp_path):
    """Findings in a module class the target does not use are not the target's findings."""
    src = tmp_path / "two.py"
    src.write_text(
        "import torch\n\n"
        "class Used(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return helper(x)\n\n"
        "def helper(x):\n"
        "    print(x)\n"
        "    return x\n\n"
        "class Unused(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        print(x)\n"
        "        return x\n"
    )
    path = os.path.realpath(src)
    linted = R.lint_model([path], Config(), [{"qualname": "Used", "file": path}], None)
    findings, _ = R.reconcile(linted, [], {path: [5, 8, 9]})
    assert [(f["code"], f["row"], f["status"]) for f in findings] == [("DYN101", 8, "not_reproduced")]


SAMPLE_REPORT = {
    "target": "m.py::M", "torch": "2.x", "device": "cuda", "device_name": "NVIDIA H100", "dynamic": None,
    "before": {"graph_count": 2, "graph_break_count": 1,
               "break_reasons": [{"reason": "generic_jump TensorVariable()", "filename": "m.py", "lineno": 9,
                                  "code": "DYN120", "gb_id": "GB0170", "gb_type": "Data-dependent branching"}],
               "unexplained_breaks": 0, "frame_skips": []},
    "after": {"graph_count": 1, "graph_break_count": 0, "break_reasons": [], "unexplained_breaks": 0, "frame_skips": []},
    "fixes": [{"code": "DYN120", "filename": "m.py", "row": 9, "message": "use torch.where", "traced": True}],
    "fix_errors": [], "fixes_verified": 1,
    "findings": [{"code": "DYN120", "message": "`if` on a tensor", "filename": "m.py", "row": 9, "column": 12,
                  "severity": "error", "status": "confirmed", "gb_predicted": ["GB0170"], "gb_observed": ["GB0170"],
                  "gb_match": True}],
    "missed": [{"reason": "Attempted to call function marked as skipped", "filename": "m.py", "lineno": 12,
                "gb_id": "GB0007", "gb_type": "Attempted to call function marked as skipped"}],
    "outputs_match": True, "max_abs_diff": 0.0, "outputs_mismatch": None,
    "timing": {"device": "cuda", "backend": "inductor", "threads": 8, "repeat": 30, "warmup": 3, "rounds": 30,
               "calls_per_round": 5, "eager_ms": 1.5, "compiled_before_ms": 1.2, "compiled_after_ms": 0.4,
               "compile_before_s": 3.0, "compile_after_s": 2.0, "speedup": 3.0, "speedup_ci": [2.9, 3.1],
               "verdict": "faster", "warnings": [],
               "arms": {"eager": {"median_ms": 1.5, "q1_ms": 1.4, "q3_ms": 1.6, "rel_iqr": 0.13, "min_ms": 1.3, "n": 30},
                        "before": {"median_ms": 1.2, "q1_ms": 1.1, "q3_ms": 1.3, "rel_iqr": 0.17, "min_ms": 1.0, "n": 30},
                        "after": {"median_ms": 0.4, "q1_ms": 0.39, "q3_ms": 0.41, "rel_iqr": 0.05, "min_ms": 0.38, "n": 30}},
               "load": None},
}


def test_text_and_markdown_show_the_same_tables():
    text = render(SAMPLE_REPORT, "text")
    assert "before  2       1" in text and "after   1       0" in text
    assert "confirmed  m.py:9:12" in text and "m.py:12" in text and "GB0170" in text and "GB0007" in text
    assert "Speedup of the fixes: 3.00x (95% interval 2.90-3.10): faster." in text
    assert "compiled before  1.200      1.100-1.300  3.00" in text
    assert "1 fixed, 1 verified (on lines Dynamo traced, outputs equal)." in text
    md = render(SAMPLE_REPORT, "markdown")
    assert "| before | 2 | 1 | 1 | 0 | - |" in md and "| after | 1 | 0 | 0 | 0 | - |" in md
    assert "| confirmed | m.py:9:12 | DYN120 | GB0170 |" in md
    assert "| compiled after | 0.400 | 0.390-0.410 | 2.00 |" in md
    assert "Speedup of the fixes: 3.00x (95% interval 2.90-3.10): faster." in md
    assert json.loads(render(SAMPLE_REPORT, "json")) == SAMPLE_REPORT


def test_predicted_and_observed_gb_codes_are_reconciled():
    from dynalint.verify.reconcile import gb_reconciliation

    findings = [dict(SAMPLE_REPORT["findings"][0]),
                {"code": "DYN105", "filename": "m.py", "row": 14, "gb_predicted": ["GB0007"],
                 "gb_observed": ["GB0147"], "gb_match": False},
                {"code": "DYN101", "filename": "m.py", "row": 20, "gb_predicted": ["GB0007"]}]  # no break seen
    gb = gb_reconciliation(findings)
    assert gb == {"compared": 2, "matched": 1, "differed": [
        {"code": "DYN105", "where": "m.py:14", "predicted": ["GB0007"], "observed": ["GB0147"]}]}
    report = {**SAMPLE_REPORT, "gb_codes": gb}
    line = "GB codes: 1 of 2 confirmed findings broke with a code their rule predicts; " \
           "differed: DYN105 at m.py:14 predicted GB0007, Dynamo gave GB0147."
    assert line in render(report, "text") and line in render(report, "markdown")
    assert "GB codes:" not in render({**SAMPLE_REPORT, "gb_codes": gb_reconciliation([])}, "text")


# --------------------------------------------------------------------------------------------
# Interleaved timing of two versions in one child


@pytest.mark.torch
def test_interleaved_timing_identical_versions_and_a_slower_one():
    """Two identical versions: no measurable difference; four times the work: slower."""
    path = fixture("timing_work.py")
    text = Path(path).read_text()
    base = {"target": f"{path}::make", "explain": False, "trace": False, "timing": True, "time_eager": False,
            "backend": "eager", "threads": 1, "repeat": 30, "max_seconds": 20}
    same = runner.measure({**base, "pair_with": {path: text}})
    assert same["error"] is None, same
    t = same["timing"]
    assert set(t["arms"]) == {"before", "after"} and t["rounds"] >= 10
    assert len(t["samples"]["before"]) == len(t["samples"]["after"]) == t["rounds"]
    # The interval says no difference; the verdict shown says so too, unless the machine was loaded
    # or the rounds too noisy to say anything (then "cannot measure", with that warning, never a number).
    assert t["compare"]["verdict"] == "no measurable difference", t
    lo, hi = t["compare"]["ci"]
    assert lo <= 1.02 and hi >= 1 / 1.02
    unsteady = any(w.startswith(("machine loaded", "too noisy")) for w in t["warnings"])
    assert t["verdict"] == "no measurable difference" or (unsteady and t["verdict"] == "cannot measure"), t

    slower = runner.measure({**base, "source_override": {path: text.replace("STEPS = 4", "STEPS = 16")},
                             "pair_with": {path: text}})
    assert slower["error"] is None, slower
    t = slower["timing"]
    assert t["compare"]["verdict"] == "slower", t
    assert t["compare"]["ci"][1] < 0.5  # four times the matmuls: well under half the speed
    unsteady = any(w.startswith(("machine loaded", "too noisy")) for w in t["warnings"])
    assert t["verdict"] == "slower" or (unsteady and t["verdict"] == "cannot measure"), t


# --------------------------------------------------------------------------------------------
# Every break accounted for: Dynamo's logs, skipped frames, not_traced, GB codes


@pytest.mark.torch
def test_break_in_a_loop_is_a_skipped_frame_and_later_lines_are_not_traced():
    """explain() lists no break here (0 graphs): Dynamo's log has it, and the skipped frame."""
    path = fixture("skipped_frame.py")
    report = runner.verify(f"{path}::LoopBreak", input_shape=[4, 4], timing=False)
    before = report["before"]
    assert before["graph_count"] == 0
    [brk] = before["break_reasons"]
    assert brk["lineno"] == line_of(path, "if x.sum() > 0") and brk["logged_only"] is True
    assert brk["gb_type"] == "Data-dependent branching" and brk["gb_id"].startswith("GB")
    [skip] = before["frame_skips"]
    assert skip["lineno"] == line_of(path, "if x.sum() > 0") and "loop" in skip["why"]
    status = {f["code"]: f["status"] for f in report["findings"]}
    assert status == {"DYN120": "confirmed", "DYN110": "not_traced"}
    assert runner.fullgraph_problems(report) == ["0 graphs, 0 graph breaks", "1 functions Dynamo skipped"]
    text = render(report, "text")
    assert "Frames Dynamo skipped" in text and "not_traced" in text


@pytest.mark.torch
def test_fullgraph_exit_code_and_recompile_reasons():
    bad = invoke(f"{fixture('bad_if.py')}::BadIf", "--input-shape", "4,16", "--no-timing", "--fullgraph")
    assert bad.exit_code == 1 and "--fullgraph: 2 graphs, 1 graph breaks" in bad.output
    clean = invoke(f"{fixture('models.py')}::make_clean_with_inputs", "--no-timing", "--fullgraph",
                   "--output-format", "json")
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.output)["fullgraph_problems"] == []
    # A second shape with static shapes: one recompile per frame, each with its guard failure.
    path = fixture("bad_if.py")
    report = runner.verify(f"{path}::BadIf", input_shape=[4, 16], second_input_shape=[5, 16], dynamic=False,
                           timing=False)
    reasons = report["before"]["recompile_reasons"]
    assert report["before"]["recompiles"] == 2 and len(reasons) == 2
    assert {r["function"] for r in reasons} == {"forward", "torch_dynamo_resume_in_forward_at_14"}
    assert all("size mismatch at index 0. expected 4, actual 5" in r["guards"][0]["guard"] for r in reasons)
    assert "Recompiles (guard failures)" in render(report, "text")


def test_breaks_without_a_location_are_unexplained_never_none():
    side = {"graph_count": 14, "graph_break_count": 13, "break_reasons": [], "unexplained_breaks": 13,
            "frame_skips": [{"function": "reduce", "filename": "einops/einops.py", "lineno": 500,
                             "why": "hit the recompile limit (recompile_limit = 8): later calls run this function eagerly"}]}
    report = {"target": "m.py::M", "torch": "2.13", "device_name": "cpu", "before": side, "after": side,
              "fixes": [], "findings": [], "missed": [], "outputs_match": True, "max_abs_diff": 0.0, "timing": None}
    text = render(report, "text")
    assert "0 + unexplained (13)" in text and "Unexplained breaks before (13)" in text
    assert "hit the recompile limit" in text and "einops/einops.py:500" in text
    assert runner.fullgraph_problems(report) == ["14 graphs, 13 graph breaks", "13 breaks without a location",
                                                 "1 functions Dynamo skipped"]


RECOMPILE_LOG = """Recompiling function forward in /src/m.py:7
    triggered by the following guard failure(s):
    - 0/0: n == 0                                                   # if n > 3: x = x + 1  # src/m.py:9 in forward
    - User stack trace:
    -   File "/src/m.py", line 9, in forward
    -     if n > 3: x = x + 1
    - 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 5"""


def test_recompile_log_gives_guards_and_their_lines():
    from dynalint.verify.measuring import DynamoLog

    event = DynamoLog(trace=False)._parse_recompile(RECOMPILE_LOG)
    assert event["function"] == "forward" and event["lineno"] == 7
    assert [(g["guard"], g["lineno"]) for g in event["guards"]] == [
        ("n == 0", 9), ("tensor 'x' size mismatch at index 0. expected 4, actual 5", None)]


def test_a_guard_failure_on_a_recompile_finding_confirms_it(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import torch\n"
        "from torch import nn\n\n\n"
        "class M(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.shape[0] == 16:\n"
        "            return x * 2\n"
        "        return x\n"
    )
    path = os.path.realpath(src)
    linted = R.lint_model([path], Config(), [{"qualname": "M", "file": path}], None)
    [plain] = R.reconcile(linted, [], {path: [7, 8]})[0]
    assert (plain["code"], plain["status"]) == ("DYN201", "reached")
    [confirmed] = R.reconcile(linted, [], {path: [7, 8]}, guards=[(path, 7)])[0]
    assert confirmed["status"] == "confirmed"


# --------------------------------------------------------------------------------------------
# Dynamo settings tried per model


@pytest.mark.torch
@pytest.mark.slow
def test_try_settings_suggests_capture_scalar_outputs_for_an_item_break():
    path = fixture("scalar_item.py")
    report = runner.verify(f"{path}::ItemScale", input_shape=[4, 16], timing=False, settings=True)
    assert report["after"]["graph_break_count"] == 1
    tried = {tuple(sorted(t["settings"])): t for t in report["settings_tried"]}
    scalar = tried[("capture_scalar_outputs",)]
    assert scalar["graph_break_count"] == 0 and scalar["outputs_match"] and scalar["suggested"]
    # The shape-ops setting alone does not help an .item() break: tried, not suggested.
    shapes = tried[("capture_dynamic_output_shape_ops",)]
    assert shapes["graph_break_count"] == 1 and not shapes["suggested"]
    # Both together also reach 0 breaks; the single setting is preferred.
    assert sum(t["suggested"] for t in report["settings_tried"]) == 1
    text = render(report, "text")
    assert "torch._dynamo.config.capture_scalar_outputs = True: 1 graphs, 0 breaks, outputs match  <- suggested" in text


@pytest.mark.torch
@pytest.mark.slow
def test_try_settings_suggests_allow_rnn_where_dynamo_refused_an_lstm():
    path = fixture("lstm_encoder.py")
    report = runner.verify(f"{path}::LSTMEncoder", input_shape=[2, 5, 16], settings=True, repeat=10, warmup=1,
                           max_seconds=1.0)
    # explain counts nothing for the skipped frame; Dynamo's log has the refusal.
    assert report["after"]["graph_count"] == 0
    tried = {tuple(sorted(t["settings"])): t for t in report["settings_tried"]}
    rnn = tried[("allow_rnn",)]
    assert rnn["graph_count"] == 1 and rnn["graph_break_count"] == 0 and rnn["outputs_match"]
    # The one setting chosen (fewest breaks, outputs equal) is then timed against the same code
    # without it (interleaved); only it. Suggested unless that timing says slower (this tiny LSTM
    # on a loaded CPU can go either way).
    assert [t for t in report["settings_tried"] if t["suggested"] or t.get("slower")] == [rnn]
    timing = rnn["timing"]
    assert rnn["suggested"] == (timing["verdict"] != "slower") and rnn.get("slower", False) == (timing["verdict"] == "slower")
    assert timing["compiled_before_ms"] > 0 and timing["compiled_after_ms"] > 0, timing
    assert timing["rounds"] >= 10 and set(timing["arms"]) == {"before", "after"}
    # Each version compiled as measured above: no graph without the setting, one with it.
    assert timing["graphs_by_version"] == {"before": 0, "after": 1}, timing
    assert timing["verdict"] in ("faster", "slower", "no measurable difference", "cannot measure")
    # Only the chosen setting is timed (also when its timing says slower and it is not suggested).
    assert all("timing" not in t for t in report["settings_tried"] if t is not rnn)
    text = render(report, "text")
    assert f"compiled with it {timing['compiled_after_ms']:.3f} ms, without {timing['compiled_before_ms']:.3f} ms" in text


def test_compiled_slower_than_eager_is_said_only_when_the_rounds_show_it():
    from dynalint.verify.report import eager_line

    # timm's sequencer2d_s on an H100: eager 29.6 ms, compiled with its breaks 35.2 ms.
    slower = {"vs_eager": {"speedup": 0.842, "ci": [0.835, 0.85], "verdict": "slower"}, "warnings": []}
    assert eager_line(slower) == ("Compiled is SLOWER than eager here: 0.84x (95% interval 0.83-0.85); for this "
                                  "model and input size torch.compile does not pay off as the code is.")
    assert "Compiled (after the fixes) is SLOWER" in eager_line({**slower, "arms": {"before": {}, "after": {}}})
    assert eager_line({**slower, "arms": {"compiled": {}}, "compiled_before_ms": 35.2}).startswith("Compiled is SLOWER")
    assert eager_line({**slower, "warnings": ["launch-bound: 40 us per call"]}) is None
    assert eager_line({"vs_eager": {"speedup": 1.3, "ci": [1.2, 1.4], "verdict": "faster"}, "warnings": []}) is None
    assert eager_line({"warnings": []}) is None


def test_setting_timing_lines():
    from dynalint.verify.report import setting_timing_lines

    faster = {"compiled_before_ms": 12.3, "compiled_after_ms": 9.81, "speedup": 1.254, "speedup_ci": [1.22, 1.3],
              "verdict": "faster", "warnings": []}
    assert setting_timing_lines(faster) == [
        "compiled with it 9.810 ms, without 12.300 ms: 1.25x (95% interval 1.22-1.30) faster"]
    noisy = {**faster, "verdict": "cannot measure", "warnings": ["launch-bound: 40 us per call"]}
    assert setting_timing_lines(noisy) == ["compiled with it 9.810 ms, without 12.300 ms: cannot measure (see the warnings)",
                                           "Warning: launch-bound: 40 us per call"]
    assert setting_timing_lines({"error": "the fixed code failed"}) == [
        "timing with and without it failed: the fixed code failed"]


def test_allow_rnn_is_tried_only_where_an_rnn_was_refused():
    refused = {"graph_count": 0, "graph_break_count": 0, "logged_breaks": [
        {"reason": "Attempted to wrap RNN, GRU, or LSTM", "filename": "m.py", "lineno": 3}]}
    assert runner.RNN_SETTING in runner.settings_for(refused)
    assert runner.RNN_SETTING not in runner.settings_for({"graph_count": 2, "graph_break_count": 1})
    assert runner.breaks_seen(refused) == 1


def test_settings_lines_say_none_suggested_and_show_mismatches():
    report = {**SAMPLE_REPORT, "settings_tried": [
        {"settings": {"capture_scalar_outputs": True}, "text": "torch._dynamo.config.capture_scalar_outputs = True",
         "suggested": False, "graph_count": 1, "graph_break_count": 0, "outputs_match": False,
         "max_abs_diff": 0.5, "outputs_mismatch": "output 0 differs"}]}
    text = render(report, "text")
    assert "capture_scalar_outputs = True: 1 graphs, 0 breaks, outputs DIFFER (output 0 differs)" in text
    assert "none suggested: no setting lowered the breaks with outputs equal." in text
    assert "none suggested" in render(report, "markdown")


def test_a_setting_that_times_slower_is_not_suggested(monkeypatch):
    # timm's sequencer2d_s on an H100: allow_rnn makes one graph of 13, and the compiled code slower.
    arm = lambda ms: {"median_ms": ms, "q1_ms": ms * 0.99, "q3_ms": ms * 1.01}
    child = {"timing": {"device": "cuda", "backend": "inductor", "repeat": 30, "warmup": 3, "rounds": 30,
                        "arms": {"before": arm(35.2), "after": arm(40.5)}, "verdict": "slower", "warnings": [],
                        "compare": {"speedup": 0.87, "ci": [0.86, 0.88]}, "graphs_by_version": {"before": 13, "after": 1}}}
    seen = []
    monkeypatch.setattr(runner, "measure", lambda spec, timeout: seen.append(spec) or child)
    rnn = {"settings": {"allow_rnn": True}, "text": "torch._dynamo.config.allow_rnn = True", "suggested": True,
           "graph_count": 1, "graph_break_count": 0, "outputs_match": True}
    tried = [rnn]
    runner.time_suggested_setting({"target": "m.py::M"}, tried, {"/m.py": "x = 1"}, {}, "/ref", 60, "cuda")
    # One child: the code as verify ends with, the setting on one version, every model file paired.
    assert seen[0]["setting_timed"] == {"allow_rnn": True} and seen[0]["pair_with"] == {"/m.py": "x = 1"}
    assert rnn["suggested"] is False and rnn["slower"] is True
    assert rnn["timing"]["graphs_by_version"] == {"before": 13, "after": 1}
    text = render({**SAMPLE_REPORT, "settings_tried": tried}, "text")
    assert "allow_rnn = True: 1 graphs, 0 breaks, outputs match  <- fewer breaks but SLOWER: not suggested" in text
    assert "compiled with it 40.500 ms, without 35.200 ms: 0.87x (95% interval 0.86-0.88) slower" in text
    assert "none suggested: the setting that lowered the breaks with outputs equal made the compiled code slower." in text


@pytest.mark.torch
def test_a_break_inside_torch_is_placed_at_the_user_frame_that_led_there():
    """`nn.Linear(...)` built in forward breaks in torch's linear.py: the report names the user's line."""
    from dynalint.verify.measuring import DynamoLog, torch_dir

    linear = os.path.join(torch_dir(), "nn", "modules", "linear.py")
    module = os.path.join(torch_dir(), "nn", "modules", "module.py")
    message = (f"Graph break in user code at {linear}:108\n"
               "Graph Break Reason: Encountered graph break when attempting to trace CALL\n\n"
               "Attempted to use `torch.nn.Parameter()` constructor with Dynamo\n\n"
               "User code traceback:\n"
               f'  File "{module}", line 1778, in _wrapped_call_impl\n    return self._call_impl(*args, **kwargs)\n'
               '  File "/proj/model.py", line 12, in forward\n    lin = nn.Linear(4, 4)\n'
               f'  File "{linear}", line 108, in __init__\n    self.weight = Parameter(...)\n')
    log = DynamoLog(trace=False)
    entry = log._parse_break(message)
    assert (entry["filename"], entry["lineno"]) == ("/proj/model.py", 12)
    # The same break again comes without its traceback ("user stack suppressed"): same user line.
    again = log._parse_break(f"Graph break (user stack suppressed due to duplicate graph break) in user code at {linear}:108\n"
                             "Graph Break Reason: Attempted to use `torch.nn.Parameter()` constructor with Dynamo\n")
    assert (again["filename"], again["lineno"]) == ("/proj/model.py", 12)
    # A break in user code keeps its own place.
    own = DynamoLog(trace=False)._parse_break("Graph break in user code at /proj/model.py:20\nGraph Break Reason: x\n")
    assert (own["filename"], own["lineno"]) == ("/proj/model.py", 20)


@pytest.mark.torch
def test_train_mode_reaches_breaks_eval_mode_does_not_and_the_helper_fix_lowers_them():
    target = f"{fixture('train_planning.py')}::TrainPlanning"
    common = ("--input-shape", "4,16", "--no-timing", "--unsafe-fixes", "--output-format", "json")
    evaluated = json.loads(invoke(target, *common).output)
    assert not evaluated["train"] and evaluated["before"]["graph_break_count"] == 0
    result = invoke(target, "--train", *common)
    assert result.exit_code == 0, result.output
    trained = json.loads(result.output)
    assert trained["train"] and trained["outputs_status"] == "equal"
    # The planning helper runs outside the graph: one break at its call instead of one in the
    # caller plus those inside it.
    assert [f["code"] for f in trained["fixes"]] and "compiler.disable" in trained["fixes"][0]["message"]
    assert trained["after"]["graph_count"] < trained["before"]["graph_count"], (trained["before"], trained["after"])
    assert trained["after"]["graph_break_count"] >= 1

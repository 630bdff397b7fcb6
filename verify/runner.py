"""Parent side of verify: run measurements in a child process, lint and fix in memory, reconcile.

The calling process never imports torch or user code: `measure` starts
`python -m dynalint.verify.child` with a JSON spec, waits with a timeout and reads a JSON result.

Spec keys (all but `target` optional):
    sys_path            folders to prepend to sys.path in the child
    target              "path/to/file.py::Name" or "package.module:Name"; Name is an nn.Module
                        class (built with no arguments), a function returning a module or
                        `(module, example_inputs)`, a module instance, or a function with
                        parameters (compiled itself)
    inputs              "path.py::fn" / "pkg.mod:fn" returning a tuple of positional arguments,
                        a dict of keyword arguments or one tensor
    input_shape         [4, 16]: one torch.randn input (used when `inputs` is not given)
    second_inputs, second_input_shape
                        inputs of other shapes: counts the graphs compiled for them (`recompiles`)
    device              "auto" | "cpu" | "cuda"
    dynamic             None | True | False, as torch.compile's `dynamic`
    repeat, warmup      timed calls (median) and untimed calls before them
    timing, time_eager  measure compiled (and eager) time
    backend             torch.compile backend for timing (default "inductor")
    seed                seed reset before building and before each call
    cold_compile        empty Inductor/Triton caches for this child (compile time is a cold compile)
    source_override     {"path/to/file.py": "text"}: imports of these files get this text
    save_dir            write inputs.pt, state_dict.pt, outputs.pt there
    reference_dir       read inputs and state_dict from there, compare outputs with its outputs.pt
    pair_with           {"path/to/file.py": "original text"}: the original of each overridden or
                        rewritten file, to time both versions interleaved and to judge outputs
                        assert_close rejects in float64
    trace               record executed lines of the model's files (default True)
    eval                call module.eval() (default True)

Result keys: graph_count, graph_break_count, break_reasons [{reason, filename, lineno}],
recompiles (with second inputs), outputs_digest, outputs_match / max_abs_diff / outputs_status /
outputs_judgement (with reference_dir; float64 runs judge rounding where `pair_with` gives the
original's texts, see `dynalint.verify.outputs`), timing {device, eager_ms, compiled_ms, compile_s, ...}, executed_lines,
model_files, module_classes, target_kind, torch, device, device_name, error, error_kind,
traceback, output (the child's stdout/stderr tail, on error).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Any, Optional

DEFAULT_TIMEOUT = 600.0
_OUTPUT_TAIL = 4000


# Like `python -m dynalint.verify.child`, except that dynalint is imported before the current
# folder joins sys.path: run from a dynalint checkout, its `dynalint/` folder (which lacks the
# `verify` subpackage, mapped from `verify/`) must not shadow the installed package.
_CHILD_BOOT = (
    "import sys; cwd = sys.path.pop(0) if sys.path and sys.path[0] == '' else None; "
    "from dynalint.verify.child import main; cwd is None or sys.path.insert(0, cwd); sys.exit(main(sys.argv[1:]))"
)


def _child_command() -> list[str]:
    return [sys.executable, "-c", _CHILD_BOOT]


def _child_env(cold_cache_dir: Optional[str] = None) -> dict[str, str]:
    """The child's environment; with `cold_cache_dir`, Inductor and Triton caches start empty
    there, so compile time is a cold compile (not a hit on what an earlier run left on disk, for
    example the original's graphs when the fixed version is measured)."""
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.setdefault("HF_HUB_OFFLINE", "1")
    if cold_cache_dir:
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cold_cache_dir, "inductor")
        env["TRITON_CACHE_DIR"] = os.path.join(cold_cache_dir, "triton")
    return env


def _kill(proc: subprocess.Popen) -> None:
    """Kill the child and whatever it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        proc.kill()


def measure(spec: dict, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Measure one version of the target in a child process; never raises for user-code failures.

    `spec["cold_compile"]`: give the child empty compile caches (see `_child_env`)."""
    with tempfile.TemporaryDirectory(prefix="dynalint-verify-") as tmp:
        spec_path, result_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "result.json")
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        proc = subprocess.Popen(
            [*_child_command(), spec_path, result_path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=_child_env(tmp if spec.get("cold_compile") else None),
            start_new_session=True,
        )
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            output, _ = proc.communicate()
            return _failure(f"timed out after {timeout:g} s (raise the limit with --timeout)", "timeout", output)
        text = output.decode("utf-8", "replace")
        try:
            with open(result_path, encoding="utf-8") as fh:
                result = json.load(fh)
        except (OSError, ValueError):
            return _failure(f"the verify child process died (exit status {proc.returncode})", "crash", output)
        if result.get("error"):
            result["output"] = text[-_OUTPUT_TAIL:]
        return result


def _failure(message: str, kind: str, output: Optional[bytes]) -> dict[str, Any]:
    text = (output or b"").decode("utf-8", "replace")
    return {"error": message, "error_kind": kind, "traceback": None, "output": text[-_OUTPUT_TAIL:]}


# --------------------------------------------------------------------------------------------
# verify: before, fix in memory, after, reconcile


class VerifyError(Exception):
    """A failure verify reports as one line (exit 2); `details` holds the traceback / child output."""

    def __init__(self, message: str, kind: str, details: str = ""):
        super().__init__(message)
        self.kind = kind
        self.details = details


def _raise_if_failed(result: dict, prefix: str = "") -> None:
    if result.get("error"):
        details = "\n".join(x for x in (result.get("output"), result.get("traceback")) if x)
        raise VerifyError(prefix + result["error"], result.get("error_kind") or "internal", details)


def _target_path(target: str) -> Optional[str]:
    return target.rsplit("::", 1)[0] if "::" in target else None


def _config_for(target: str):
    from pathlib import Path

    from dynalint.config import resolve_config

    where = _target_path(target)
    return resolve_config([Path(where) if where else Path.cwd()], None)


def fix_in_memory(linted, config, unsafe: bool) -> tuple[dict[str, str], list, list, list[str]]:
    """Run every model file through the fixes stage. -> (overrides, fixed, remaining, errors)."""
    from dynalint.autofix import fix_source
    overrides, fixed, remaining, errors = {}, [], [], []
    for sf in linted.files:
        path = str(sf.path)
        others = [f for f in linted.files if f is not sf]
        # Module names (and so cross-file regions) come from the name: it must lead to the file.
        name = sf.display if os.path.realpath(sf.display) == path else path
        result = fix_source(linted.texts[path], name, config, unsafe=unsafe, context=others)
        errors += result.errors
        remaining += result.remaining
        if result.changed:
            overrides[path] = result.text
            fixed += result.fixed
    return overrides, fixed, remaining, errors


def _graph_view(result: dict, findings: list, by_display: dict[str, str]) -> dict:
    from dynalint.verify.reconcile import all_breaks, code_at, display_name

    def shown(path):
        return display_name(path) if path else None

    view = {
        "graph_count": result["graph_count"],
        "graph_break_count": result["graph_break_count"],
        "break_reasons": [
            {"reason": b["reason"], "filename": shown(b["filename"]), "lineno": b["lineno"],
             "code": code_at(findings, by_display, b["filename"], b["lineno"]),
             "gb_id": b.get("gb_id"), "gb_type": b.get("gb_type"), **({"logged_only": True} if b.get("logged_only") else {})}
            for b in all_breaks(result)
        ],
        # Breaks Dynamo counted without saying where: never read as "none".
        "unexplained_breaks": result.get("unexplained_breaks", 0),
        "frame_skips": [{**s, "filename": shown(s["filename"])} for s in result.get("frame_skips") or ()],
    }
    if "recompiles" in result:
        view["recompiles"] = result["recompiles"]
    events = list(result.get("recompile_events") or ()) + list(result.get("recompile_reasons") or ())
    if events:
        view["recompile_reasons"] = [
            {"function": e["function"], "filename": shown(e["filename"]), "lineno": e["lineno"],
             "guards": [{**g, "filename": shown(g["filename"]),
                         "code": code_at(findings, by_display, g["filename"], g["lineno"])} for g in e["guards"]]}
            for e in events
        ]
    view["frame_skips"] += [{**s, "filename": shown(s["filename"])} for s in result.get("recompile_skips") or ()]
    return view


def fullgraph_problems(report: dict) -> list[str]:
    """What keeps the code as it is (`before`) from one graph without recompiles (--fullgraph)."""
    side = report["before"]
    problems = []
    if side["graph_break_count"] > 0 or side["graph_count"] != 1:
        problems.append(f"{side['graph_count']} graphs, {max(side['graph_break_count'], 0)} graph breaks")
    if side.get("unexplained_breaks"):
        problems.append(f"{side['unexplained_breaks']} breaks without a location")
    if side.get("frame_skips"):
        problems.append(f"{len(side['frame_skips'])} functions Dynamo skipped")
    if side.get("recompiles"):
        problems.append(f"{side['recompiles']} recompiles")
    return problems


def _timing_view(result: Optional[dict], device_asked: str, paired: bool) -> Optional[dict]:
    """The report's timing: both versions' medians and quartiles from interleaved rounds, the
    speedup's median and 95% interval, the verdict and the warnings (loaded, launch-bound, noisy)."""
    t = (result or {}).get("timing")
    if not t:
        return None
    arms = t.get("arms") or {}
    before_arm, after_arm = (arms.get("before"), arms.get("after")) if paired else (arms.get("compiled"),) * 2
    by_version = t.get("compile_s_by_version") or {}
    compare = t.get("compare") or {}
    timing = {
        "device": t["device"], "backend": t["backend"], "threads": t.get("threads"), "repeat": t["repeat"],
        "warmup": t["warmup"], "rounds": t.get("rounds"), "calls_per_round": t.get("calls_per_round"),
        "eager_ms": t.get("eager_ms"),
        "compiled_before_ms": before_arm["median_ms"] if before_arm else None,
        "compiled_after_ms": after_arm["median_ms"] if after_arm else None,
        "compile_before_s": by_version.get("before" if paired else "compiled"),
        "compile_after_s": by_version.get("after" if paired else "compiled"),
        "speedup": compare.get("speedup") if paired else None,
        "speedup_ci": compare.get("ci") if paired else None,
        "verdict": t.get("verdict") if paired else None,
        "warnings": list(t.get("warnings") or ()),
        "vs_eager": t.get("vs_eager"),
        "arms": arms, "load": t.get("load"),
    }
    kernel = t.get("kernel_ms") or {}
    if any(v is not None for v in kernel.values()):
        # Fraction of each version's GPU time spent in kernels (a profiled pass after timing).
        timing["gpu_busy"] = {n: round(k / arms[n]["median_ms"], 3) for n, k in kernel.items()
                              if k is not None and n in arms and arms[n]["median_ms"] > 0}
    if t["device"] == "cpu" and device_asked in (None, "", "auto"):
        timing["note"] = "no CUDA GPU found: timed on CPU"
    return timing


# Dynamo settings that turn whole classes of breaks into graph code (`.item()` / `int(t)` as
# unbacked SymInts; nonzero / boolean masks as dynamic-shape ops): tried with --try-settings,
# suggested only when Dynamo then breaks less and the compiled outputs still equal the original's.
DYNAMO_SETTINGS = (
    {"capture_scalar_outputs": True},
    {"capture_dynamic_output_shape_ops": True},
    {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True},
)


# Tried only where Dynamo refused to trace an RNN module ("Attempted to wrap RNN, GRU, or LSTM"):
# `allow_rnn` makes it trace nn.LSTM / nn.GRU / nn.RNN into the graph.
RNN_SETTING = {"allow_rnn": True}
RNN_REFUSAL = "RNN, GRU, or LSTM"


def settings_for(base: Optional[dict]) -> tuple:
    """The settings worth trying on a measured run: DYNAMO_SETTINGS, plus allow_rnn where it broke on an RNN."""
    wraps_rnn = base is not None and RNN_REFUSAL in json.dumps(base, default=str)
    return DYNAMO_SETTINGS + ((RNN_SETTING,) if wraps_rnn else ())


def setting_text(settings: dict) -> str:
    return ", ".join(f"torch._dynamo.config.{k} = {v!r}" for k, v in settings.items())


def settings_specs(spec: dict, base: Optional[dict] = None) -> list[dict]:
    """One child spec per setting worth trying on `base` (settings_for): graphs and one compiled
    call's outputs, no timing."""
    return [{**spec, "timing": False, "trace": False, "dynamo_config": settings, "compiled_outputs": True}
            for settings in settings_for(base)]


def judge_settings(base: dict, results: list[dict]) -> list[dict]:
    """The children of `settings_specs` against the code's own graphs (`base`): each setting's graphs,
    breaks and outputs; the one with fewest breaks that lowers them with outputs equal is suggested."""
    tried = []
    for settings, result in zip(settings_for(base), results):
        entry = {"settings": settings, "text": setting_text(settings), "suggested": False}
        if not result or result.get("error"):
            entry["error"] = (result or {}).get("error") or "not measured"
        else:
            entry.update(graph_count=result["graph_count"], graph_break_count=max(result["graph_break_count"], 0),
                         outputs_match=bool(result.get("compiled_outputs_match")),
                         max_abs_diff=result.get("compiled_max_abs_diff"),
                         outputs_mismatch=result.get("compiled_outputs_mismatch"))
        tried.append(entry)
    base_breaks = breaks_seen(base)
    seen = {id(t): breaks_seen(r) for t, r in zip(tried, results) if not t.get("error")}
    better = [t for t in tried if not t.get("error") and t["outputs_match"] and seen[id(t)] < base_breaks]
    if better:
        min(better, key=lambda t: (seen[id(t)], len(t["settings"])))["suggested"] = True
    return tried


def breaks_seen(result: dict) -> int:
    """explain's break count plus the breaks only Dynamo's log saw (in frames it skipped whole, as
    an nn.LSTM without allow_rnn: explain then counts no graph and no break)."""
    from .reconcile import all_breaks

    return max(result.get("graph_break_count") or 0, 0) + sum(1 for b in all_breaks(result) if b.get("logged_only"))


def try_settings(spec: dict, base: dict, overrides: dict[str, str], ref: str, timeout: float) -> list[dict]:
    """DYNAMO_SETTINGS on the code verify ends with (fixed if fixes applied), judged against `base`."""
    specs = settings_specs({**spec, "source_override": overrides or None, "reference_dir": ref}, base)
    return judge_settings(base, [measure(s, timeout) for s in specs])


def setting_timing_spec(spec: dict, setting: dict, texts: dict[str, str]) -> dict:
    """A child spec timing the code `spec` builds compiled with `setting` and without it,
    interleaved as fixes are timed. `texts`: every model file as it is now; the version without the
    setting executes them again, so the two share no compiled frame."""
    return {**spec, "timing": True, "explain": False, "trace": False, "time_eager": False, "pair_with": texts,
            "setting_timed": setting}


def judge_setting_timing(best: dict, result: dict, device: str) -> None:
    """The timed setting's entry gets "timing"; slower than without it, it is no longer suggested
    (fewer breaks, slower code: timm's sequencer with allow_rnn on an H100)."""
    if result.get("error"):
        best["timing"] = {"error": result["error"]}
        return
    best["timing"] = _timing_view(result, device, paired=True) or {"error": "no timing"}
    best["timing"]["graphs_by_version"] = (result.get("timing") or {}).get("graphs_by_version")
    if best["timing"].get("verdict") == "slower":
        best.update(suggested=False, slower=True)


def time_suggested_setting(spec: dict, tried: list[dict], texts: dict[str, str], overrides: dict[str, str], ref: str,
                           timeout: float, device: str) -> None:
    """verify's timing of the setting it suggests, on the code it ends with (fixed or original)."""
    best = next((t for t in tried if t["suggested"]), None)
    if best is None:
        return
    current = {path: (overrides or {}).get(path, text) for path, text in texts.items()}
    child = setting_timing_spec({**spec, "source_override": overrides or None, "reference_dir": ref}, best["settings"], current)
    judge_setting_timing(best, measure(child, timeout), device)


def verify(
    target: str,
    *,
    inputs: Optional[str] = None,
    input_shape: Optional[list[int]] = None,
    second_inputs: Optional[str] = None,
    second_input_shape: Optional[list[int]] = None,
    device: str = "auto",
    dynamic: Optional[bool] = None,
    repeat: int = 30,
    warmup: int = 3,
    timing: bool = True,
    max_seconds: float = 60.0,
    threads: Optional[int] = None,
    target_args: Optional[dict] = None,
    cold_compile: Optional[bool] = None,
    backend: str = "inductor",
    seed: int = 0,
    unsafe_fixes: bool = False,
    sys_path: Optional[list[str]] = None,
    config=None,
    timeout: float = DEFAULT_TIMEOUT,
    verbose: bool = False,
    settings: bool = False,
    train: bool = False,
) -> dict[str, Any]:
    """Measure the original, fix its files in memory, measure the fixed version, reconcile.

    Returns the report (the JSON shape `dynalint verify --output-format json` prints). Raises
    VerifyError for failures of the user's code (import, construction, inputs, forward, timeout).
    """
    from dynalint.verify.reconcile import (all_breaks, display_name, gb_reconciliation, lint_model, recompile_guards,
                                           reconcile)

    spec = {
        "target": target, "inputs": inputs, "input_shape": input_shape, "second_inputs": second_inputs,
        "second_input_shape": second_input_shape, "device": device, "dynamic": dynamic, "repeat": repeat,
        "warmup": warmup, "timing": False, "backend": backend, "seed": seed,
        "sys_path": list(sys_path or []), "verbose": verbose,
        "cold_compile": timing if cold_compile is None else cold_compile,
        "max_seconds": max_seconds, "threads": threads, "target_args": dict(target_args or {}),
        "eval": not train,
    }
    config = config or _config_for(target)
    with tempfile.TemporaryDirectory(prefix="dynalint-verify-ref-") as ref:
        before = measure({**spec, "save_dir": ref}, timeout)
        _raise_if_failed(before)
        linted = lint_model(before["model_files"], config, before["module_classes"], before.get("function"))
        overrides, fixed, remaining, fix_errors = fix_in_memory(linted, config, unsafe_fixes)
        after = timed = None
        if overrides:
            # The fixed version's child also times both versions, interleaved (the original is
            # built again in it from `pair_with`).
            after_spec = {**spec, "source_override": overrides, "reference_dir": ref, "timing": timing,
                          "pair_with": {p: linted.texts[p] for p in overrides}}
            after = timed = measure(after_spec, timeout)
            _raise_if_failed(after, "the fixed code failed: ")
        elif timing:
            timed = measure({**spec, "timing": True, "explain": False, "trace": False}, timeout)
            _raise_if_failed(timed, "timing failed: ")
        end = after or before
        tried = try_settings(spec, end, overrides, ref, timeout) if settings and breaks_seen(end) > 0 else None
        if tried and timing:
            time_suggested_setting(spec, tried, linted.texts, overrides, ref, timeout, device)

    findings, missed = reconcile(linted, all_breaks(before), before.get("executed_lines", {}), before.get("traced_lines"),
                                 recompile_guards(before))
    traced = {path: set(lines) for path, lines in (before.get("traced_lines") or {}).items()}
    report = {
        "target": target,
        "torch": before["torch"],
        "device": before["device"],
        "device_name": before["device_name"],
        "dynamic": dynamic,
        "train": train,
        "before": _graph_view(before, linted.findings, linted.by_display),
        "after": _graph_view(after or before, remaining if after else linted.findings, linted.by_display),
        "fixes": [{"code": f.code, "filename": display_name(f.filename), "row": f.row, "message": f.fix.message,
                   # Only a fix on a line Dynamo traced is verified by the graphs.
                   "traced": None if before.get("traced_lines") is None else any(
                       line in traced.get(linted.by_display.get(f.filename, os.path.realpath(f.filename)), ()) for line in range(f.row, max(f.row, f.end_row) + 1))}
                  for f in fixed],
        "fix_errors": fix_errors,
        "findings": findings,
        "gb_codes": gb_reconciliation(findings),
        "missed": missed,
        "outputs_match": after["outputs_match"] if after else True,
        "max_abs_diff": after["max_abs_diff"] if after else 0.0,
        "outputs_mismatch": (after or {}).get("outputs_mismatch"),
        # "equal", "within rounding" (assert_close rejects, float64 runs show rounding) or "differ".
        "outputs_status": (after or {}).get("outputs_status") or ("equal" if not after or after["outputs_match"] else "differ"),
        "outputs_judgement": (after or {}).get("outputs_judgement"),
        "timing": _timing_view(timed, device, paired=bool(overrides)),
    }
    report["fixes_verified"] = sum(1 for f in report["fixes"] if f["traced"]) if report["outputs_match"] else 0
    if not overrides:
        report["note"] = "no fix applied: `after` is the original code"
    if tried is not None:
        report["settings_tried"] = tried
    return report

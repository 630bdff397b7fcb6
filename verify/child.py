"""The verify child process: `python -m dynalint.verify.child SPEC.json RESULT.json`.

It imports the user's code (never done in the CLI process), measures one version of it (the
original, or the original with `source_override` texts) and writes a JSON result. User code may
print to stdout, so the result goes to a file, not stdout. See `dynalint.verify.runner.measure`
for the spec and result keys.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Optional

from dynalint.verify.loading import USER_ERRORS, StageError, describe

TORCH_MISSING = (
    "torch is not installed; `dynalint verify` needs it: install a torch build for your machine, "
    "then `pip install 'dynalint[verify]'`"
)


def import_torch():
    try:
        import torch
    except ImportError as exc:
        raise StageError("torch_missing", TORCH_MISSING) from exc
    return torch


def resolve_device(torch, wanted: str) -> str:
    if wanted in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if wanted == "cuda" and not torch.cuda.is_available():
        raise StageError("device", "--device cuda given but torch sees no CUDA GPU")
    if wanted not in ("cpu", "cuda"):
        raise StageError("usage", f"unknown device {wanted!r} (auto, cpu or cuda)")
    return wanted


def _target_file(target: str) -> Optional[str]:
    if "::" in target:
        return os.path.realpath(target.rsplit("::", 1)[0])
    return None


def _call(fn, args, kwargs, stage: str, what: str):
    try:
        return fn(*args, **kwargs)
    except USER_ERRORS as exc:
        raise StageError(stage, f"{what} failed: {describe(exc)}") from exc


@dataclass
class Prepared:
    """The code under test, ready to call: built, moved to the device, with its inputs."""

    fn: Any
    args: tuple
    kwargs: dict
    device: str
    overrides: dict


def _set_threads(torch, spec: dict, result: dict) -> None:
    """--threads, else on a loaded machine 1 thread when timing: threads that wait for each other
    at every op lose whole scheduler slices to other processes (a 0.4 ms call measured 50-90 ms)."""
    from dynalint.verify import stats

    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))
    elif spec.get("timing", True) and torch.get_num_threads() > 1 and stats.loaded(stats.machine_load(), 1):
        torch.set_num_threads(1)
        result["threads_note"] = "1 thread: the machine was loaded when timing began (choose with --threads)"


def prepare(spec: dict, result: dict) -> Prepared:
    """Import and build the target, make (or load) its inputs, save what the fixed run needs."""
    from dynalint.verify import loading, measuring as M

    torch = import_torch()
    _set_threads(torch, spec, result)
    overrides = loading.install_overrides(spec.get("source_override"))
    seed = int(spec.get("seed", 0))
    device = resolve_device(torch, spec.get("device", "auto"))
    tdir = M.torch_dir()
    result.update(torch=torch.__version__, device=device, source_override=sorted(overrides),
                  device_name=torch.cuda.get_device_name() if device == "cuda" else "cpu")

    M.seed_everything(seed)
    obj = loading.import_object(spec["target"], overrides)
    M.seed_everything(seed)
    kind, fn, example = loading.build_target(obj, spec["target"], spec.get("target_args"))
    result["target_kind"] = kind
    result["model_files"] = loading.model_files(kind, fn, _target_file(spec["target"]), tdir)
    result["module_classes"] = loading.module_classes(fn, tdir)
    if kind == "function":
        result["function"] = {"file": result["model_files"][0] if result["model_files"] else None,
                              "qualname": getattr(fn, "__qualname__", "")}

    reference = spec.get("reference_dir")
    M.seed_everything(seed)
    if reference:  # the fixed version runs on the original's inputs and weights
        args, kwargs = torch.load(os.path.join(reference, "inputs.pt"), weights_only=False)
    else:
        args, kwargs = loading.make_inputs(spec, example, overrides)
    if isinstance(fn, torch.nn.Module):
        if reference:
            state = torch.load(os.path.join(reference, "state_dict.pt"), map_location="cpu", weights_only=False)
            _call(fn.load_state_dict, (state,), {}, "construct", "loading the original's state_dict")
        if spec.get("eval", True):
            fn.eval()
        fn.to(device)
    save = spec.get("save_dir")
    if save:
        os.makedirs(save, exist_ok=True)
        torch.save((args, kwargs), os.path.join(save, "inputs.pt"))
        if isinstance(fn, torch.nn.Module):
            torch.save({k: v.detach().cpu() for k, v in fn.state_dict().items()}, os.path.join(save, "state_dict.pt"))
    args, kwargs = loading.to_device(args, device), loading.to_device(kwargs, device)
    return Prepared(fn, args, kwargs, device, overrides)


def run_eager(spec: dict, p: Prepared, fresh, result: dict) -> None:
    """One eager call: executed lines (for `not_reached`), output digest, comparison, saved outputs."""
    import torch

    from dynalint.verify import measuring as M

    M.seed_everything(int(spec.get("seed", 0)))
    what = "eager forward with the given inputs"
    if spec.get("trace", True):
        recorder = M.LineRecorder(result["model_files"])
        with recorder:
            out = _call(fresh(), p.args, p.kwargs, "forward", what)
        result["executed_lines"] = recorder.as_json()
    else:
        out = _call(fresh(), p.args, p.kwargs, "forward", what)
    leaves = M.flatten(out)
    result["outputs_digest"] = M.digest(leaves)
    if spec.get("save_dir"):
        torch.save([t.detach().cpu() for t in leaves], os.path.join(spec["save_dir"], "outputs.pt"))
    if spec.get("reference_dir"):
        ref = torch.load(os.path.join(spec["reference_dir"], "outputs.pt"), weights_only=False)
        match, diff, why = M.compare(ref, leaves)
        result.update(outputs_match=match, max_abs_diff=diff, outputs_mismatch=why or None,
                      outputs_status="equal" if match else "differ")
        if not match and len(ref) == len(leaves):
            judge_rounding(spec, p, fresh, ref, leaves, result)


def judge_rounding(spec: dict, p: Prepared, fresh, reference: list, leaves: list, result: dict) -> None:
    """Outputs assert_close rejects: rounding, or a real difference? The original (built again from
    `pair_with`) and the fixed code run once more in float64 (see `dynalint.verify.outputs`)."""
    import torch

    from dynalint.verify import outputs as O

    seed = int(spec.get("seed", 0))
    try:
        if spec.get("pair_with") is None:
            raise StageError("outputs", "the original code is not at hand in this run")
        fixed = fresh()
        if fixed is p.fn and isinstance(fixed, torch.nn.Module):
            raise StageError("outputs", "the module cannot be copied")
        original = _baseline(spec, p, result.get("target_kind"), spec["target"])
        truth = O.run_double(original, p.args, p.kwargs, seed)
        del original
        actual64 = O.run_double(fixed, p.args, p.kwargs, seed)
        del fixed
    except (StageError, *USER_ERRORS) as exc:
        why = exc.message if isinstance(exc, StageError) else describe(exc)
        result["outputs_judgement"] = O._differ(result.get("max_abs_diff"), f"no float64 run to tell rounding from a "
                                                f"real difference ({why}); {result.get('outputs_mismatch') or ''}".rstrip("; "))
        return
    finally:
        if p.device == "cuda":
            torch.cuda.empty_cache()
    judged = O.judge(reference, leaves, truth, actual64)
    result["outputs_judgement"] = judged
    if judged["status"] == O.WITHIN_ROUNDING:
        result.update(outputs_match=True, outputs_status=O.WITHIN_ROUNDING)


def run_dynamo(spec: dict, p: Prepared, fresh, result: dict) -> None:
    """explain's graphs and break reasons; graphs compiled for second inputs when given."""
    from dynalint.verify import loading, measuring as M

    seed, dynamic = int(spec.get("seed", 0)), spec.get("dynamic")
    try:
        result.update(M.explain(fresh(), p.args, p.kwargs, seed, dynamic, result.get("model_files")))
    except USER_ERRORS as exc:
        raise StageError("explain", f"torch._dynamo.explain failed: {describe(exc)}") from exc
    second = loading.second_inputs(spec, p.overrides)
    if second is not None:
        second = (loading.to_device(second[0], p.device), loading.to_device(second[1], p.device))
        result.update(_call(M.count_recompiles, (fresh(), (p.args, p.kwargs), second, seed, dynamic), {},
                            "forward", "the call with the second inputs"))


def measure_in_process(spec: dict) -> dict[str, Any]:
    """Everything the child does, in order. Raises StageError for user-facing failures."""
    for folder in reversed(spec.get("sys_path") or []):
        sys.path.insert(0, os.path.realpath(folder))
    result: dict[str, Any] = {}
    p = prepare(spec, result)
    torch = import_torch()
    # Each phase gets a fresh copy: forward may change module state (transformers' BigBird
    # switches its attention type on the first short input), and every phase should see a first call.
    fresh = _fresh_copies(torch, p.fn)
    apply_dynamo_config(torch, spec.get("dynamo_config"), result)
    with torch.no_grad():
        if spec.get("explain", True):
            run_eager(spec, p, fresh, result)
            run_dynamo(spec, p, fresh, result)
        if spec.get("compiled_outputs"):
            compare_compiled_outputs(spec, p, fresh, result)
        if spec.get("timing", True):
            result["timing"] = _timing(spec, p, fresh, result)
    return result


def apply_dynamo_config(torch, settings: Optional[dict], result: dict) -> None:
    """Set `torch._dynamo.config` options for this child (verify --try-settings)."""
    if not settings:
        return
    import torch._dynamo

    unknown = [name for name in settings if not hasattr(torch._dynamo.config, name)]
    if unknown:
        raise StageError("usage", f"torch {torch.__version__} has no torch._dynamo.config.{unknown[0]}")
    for name, value in settings.items():
        setattr(torch._dynamo.config, name, value)
    result["dynamo_config"] = dict(settings)


def compare_compiled_outputs(spec: dict, p: Prepared, fresh, result: dict) -> None:
    """One call through torch.compile (backend "eager": Dynamo's capture, no codegen) compared with
    the original's eager outputs: a Dynamo setting must not change what the model computes."""
    import torch
    import torch._dynamo

    from dynalint.verify import measuring as M

    torch._dynamo.reset()
    M.seed_everything(int(spec.get("seed", 0)))
    compiled = torch.compile(fresh(), backend="eager", dynamic=spec.get("dynamic"))
    out = _call(compiled, p.args, p.kwargs, "forward", "the compiled call")
    torch._dynamo.reset()
    ref = torch.load(os.path.join(spec["reference_dir"], "outputs.pt"), weights_only=False)
    match, diff, why = M.compare(ref, M.flatten(out))
    result.update(compiled_outputs_match=match, compiled_max_abs_diff=diff, compiled_outputs_mismatch=why or None)


def _fresh_copies(torch, fn):
    """A function returning a pristine copy of the module per call (the module itself if it
    cannot be deep-copied, and for plain functions)."""
    import copy

    if not isinstance(fn, torch.nn.Module):
        return lambda: fn
    try:
        copy.deepcopy(fn)
    except Exception:
        return lambda: fn
    return lambda: copy.deepcopy(fn)


def _baseline(spec: dict, p: Prepared, kind: str, target: str):
    """The other version for interleaved timing, built in this process: the modules of the files
    `pair_with` names are executed again from its texts (files the main version overrides and
    `pair_with` does not: from disk), and a copy of the module gets those modules' classes."""
    import copy

    import torch

    from dynalint.verify import loading

    pair = {os.path.realpath(k): v for k, v in (spec.get("pair_with") or {}).items()}
    files = set(pair) | set(p.overrides)
    target_file = _target_file(target)
    if kind == "function" and target_file:
        files.add(target_file)

    def text_of(path: str) -> str:
        if path in pair:
            return pair[path]
        with open(path, encoding="utf-8") as fh:  # the version on disk
            return fh.read()

    try:
        new_modules = loading.reexec_modules({f: text_of(f) for f in files})
    except USER_ERRORS as exc:
        raise StageError("timing", f"importing the other version for timing failed: {describe(exc)}") from exc
    if isinstance(p.fn, torch.nn.Module):
        try:
            other = copy.deepcopy(p.fn)
        except Exception as exc:
            raise StageError("timing", f"cannot copy the module to time both versions: {describe(exc)}") from exc
        loading.swap_classes(other, new_modules)
        return other
    module = new_modules.get(getattr(p.fn, "__module__", ""))
    other = loading._by_qualname(module, getattr(p.fn, "__qualname__", "")) if module else None
    if other is None:
        raise StageError("timing", "cannot find the other version of the function to time both versions")
    return other


def _timing(spec: dict, p: Prepared, fresh, result: dict) -> dict:
    """Compiled time of this version (and of the `pair_with` version, interleaved), eager time,
    compile times, load and thread count; statistics and the verdict come from `stats`."""
    import torch

    from dynalint.verify import measuring as M, stats

    repeat, warmup = int(spec.get("repeat", 30)), int(spec.get("warmup", 3))
    backend = spec.get("backend") or "inductor"
    dynamic, device = spec.get("dynamic"), p.device
    timing = {"device": device, "repeat": repeat, "warmup": warmup, "backend": backend,
              "threads": torch.get_num_threads()}
    if result.get("threads_note"):
        timing["threads_note"] = result["threads_note"]
    try:
        M.warm_compiler(device, backend)
    except USER_ERRORS as exc:
        raise StageError("compile", f"torch.compile(backend={backend!r}) failed: {describe(exc)}") from exc
    versions = {}
    if spec.get("pair_with") is not None:
        versions["before"] = _baseline(spec, p, result.get("target_kind"), spec["target"])
        versions["after"] = fresh()
    else:
        versions["compiled"] = fresh()
    arms, compile_s = {}, {}
    if spec.get("time_eager", True):
        arms["eager"] = versions.get("before") or fresh()
    # --try-settings timing a suggested setting: the same code compiled with it ("after") and
    # without it ("before", its modules executed again from `pair_with`, so that no frame shares a
    # code object, and with it a cache entry, with the other version). Dynamo reads its config
    # while compiling: each version compiles under its own, and a compile during the timed rounds
    # (which would see the default) is reported.
    setting = spec.get("setting_timed") or {}
    graphs = {}
    for name, fn in versions.items():
        try:
            with _dynamo_config(torch, setting if name == "after" else {}):
                start = _graphs_compiled()
                arms[name], compile_s[name] = M.compile_first_call(fn, p.args, p.kwargs, device, backend, dynamic)
                graphs[name] = _graphs_compiled() - start
        except USER_ERRORS as exc:
            raise StageError("compile", f"torch.compile(backend={backend!r}) failed: {describe(exc)}") from exc
    if setting:
        timing["graphs_by_version"] = graphs  # what each timed version compiled: the setting's effect
    frames = _frames_compiled()
    try:
        timed = M.time_arms(arms, p.args, p.kwargs, device, repeat, warmup, float(spec.get("max_seconds", 60)),
                            int(spec.get("seed", 0)))
    except USER_ERRORS as exc:
        raise StageError("forward", f"timing failed: {describe(exc)}") from exc
    recompiled = bool(setting) and _frames_compiled() != frames
    timing.update(rounds=timed["rounds"], calls_per_round=timed["calls_per_round"], arms=timed["arms"],
                  samples=timed["samples"], load=timed["load"], compile_s_by_version=compile_s)
    if "host" in timed:
        timing["host_ms"] = timed["host"]
        timing["kernel_ms"] = timed["kernel"]
    main = "after" if "after" in arms else "compiled"
    timing["compiled_ms"] = timed["arms"][main]["median_ms"]
    timing["compile_s"] = compile_s[main]
    if "eager" in arms:
        timing["eager_ms"] = timed["arms"]["eager"]["median_ms"]
    if "before" in arms:
        timing["compiled_before_ms"] = timed["arms"]["before"]["median_ms"]
        timing["compare"] = stats.compare(timed["samples"]["before"], timed["samples"]["after"], int(spec.get("seed", 0)))
    if "eager" in arms:
        # Compiled against eager, same rounds: breaks can make the compiled model the slower one.
        timing["vs_eager"] = stats.compare(timed["samples"]["eager"], timed["samples"][main], int(spec.get("seed", 0)))
    timing.update(stats.assess(timing))
    if recompiled:
        timing["warnings"] = [*timing.get("warnings", ()), "Dynamo compiled again while timing, without the setting: "
                              "the setting's timing is not reliable"]
        timing["verdict"] = "cannot measure"
    return timing


def _dynamo_config(torch, settings: dict):
    """`torch._dynamo.config.patch(settings)`, or nothing to patch."""
    import contextlib

    if not settings:
        return contextlib.nullcontext()
    import torch._dynamo

    return torch._dynamo.config.patch(settings)


def _graphs_compiled() -> int:
    """Graphs Dynamo has produced so far in this process."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _frames_compiled() -> int:
    """Frames Dynamo has converted so far in this process."""
    from torch._dynamo.utils import counters

    return int(counters["frames"]["total"])


def run(spec: dict) -> dict[str, Any]:
    """Measure, turning every failure into {"error", "error_kind", "traceback"}."""
    try:
        result = measure_in_process(spec)
        result["error"] = None
        return result
    except StageError as exc:
        return {"error": exc.message, "error_kind": exc.kind, "traceback": traceback.format_exc()}
    except BaseException as exc:  # user code may raise anything, SystemExit included
        return {"error": f"unexpected failure: {describe(exc)}", "error_kind": "internal",
                "traceback": traceback.format_exc()}


def main(argv: list[str]) -> int:
    spec_path, result_path = argv
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    os.environ.setdefault("PYTHONBREAKPOINT", "0")  # a breakpoint() in forward must not hang the child
    if not spec.get("verbose"):
        warnings.filterwarnings("ignore")
    result = run(spec)
    with open(result_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

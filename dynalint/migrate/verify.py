"""Prove the fixes on the user's models: measure each model before and after, revert what hurts.

Each measurement runs in a child process (`dynalint.verify.runner.measure`): the "before" run
serves the original texts of the rewritten files through `source_override` and saves inputs,
weights and outputs; the "after" run imports the fixed files from disk and compares its outputs
with those. A model whose outputs differ, whose graphs or breaks grow, or that fails only after
the fixes, gets the fixes in its files reverted. When several rewritten files are in its compile
region, each file's fix is tried alone to find the culprit before reverting anything.

Measurements run one at a time per device: sequentially on CPU or one GPU, in a process pool with
one worker per GPU otherwise (each worker's children see only their GPU). Timings on one device
are never taken concurrently with another measurement on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from dynalint.migrate.code import CodeMap, real
from dynalint.migrate.models import ModelEntry
from dynalint.migrate.options import MeasureOptions
from dynalint.migrate.state import MigrationState, key_of, read_text, text_hash

MAX_ROUNDS = 4  # revert rounds: each reverts at least one file, so this bounds the work


# --------------------------------------------------------------------------------------------
# The files on disk and their originals


@dataclass
class Tree:
    """Originals of the files the fix step rewrote (real path -> text); reverting writes them back."""

    originals: dict[str, str] = field(default_factory=dict)

    def current(self, path: str) -> str:
        return read_text(Path(path))

    def original(self, path: str) -> str:
        return self.originals[path] if path in self.originals else self.current(path)

    def changed(self) -> list[str]:
        return sorted(p for p, text in self.originals.items() if self.current(p) != text)

    def revert(self, path: str) -> None:
        """Write the original back, keeping the file's encoding, BOM and newlines (atomically)."""
        from dynalint.autofix import read_raw, write_atomic
        target = Path(path)
        write_atomic(target, self.originals[path], read_raw(target))


# --------------------------------------------------------------------------------------------
# Running measurements, one per device at a time


def run_model_job(measure: Callable, specs: list[Optional[dict]], timeout: float) -> list[Optional[dict]]:
    """Run specs in order on one device; stop after a failed one (later runs compare against it)."""
    results: list[Optional[dict]] = []
    for spec in specs:
        if spec is None:
            results.append(None)
            continue
        result = measure(spec, timeout=timeout)
        results.append(result)
        if result.get("error"):
            results += [None] * (len(specs) - len(results))
            break
    return results


def visible_gpus(device: str) -> list[str]:
    """GPU ids to spread models over (empty: run sequentially). Asks nvidia-smi, never torch."""
    if device == "cpu":
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip() and g.strip() != "-1"]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(out.stdout.splitlines()) if line.startswith("GPU ")]


_worker_gpu: Optional[str] = None


def _bind_gpu(queue) -> None:
    """Pool initializer: this worker (and the children it starts) sees one GPU only."""
    global _worker_gpu
    _worker_gpu = queue.get()
    os.environ["CUDA_VISIBLE_DEVICES"] = _worker_gpu


def _pool_job(specs: list[Optional[dict]], timeout: float) -> tuple[Optional[str], list[Optional[dict]]]:
    from dynalint.verify.runner import measure

    return _worker_gpu, run_model_job(measure, specs, timeout)


class Measurer:
    """Runs jobs (lists of specs) and yields (index, results, gpu) as they finish."""

    def __init__(self, measure: Optional[Callable] = None, gpus: list[str] = (), timeout: float = 600.0):
        self.measure = measure
        self.gpus = list(gpus)
        self.timeout = timeout

    def run(self, jobs: list[list[Optional[dict]]]):
        if self.measure is not None or len(self.gpus) <= 1 or len(jobs) <= 1:
            measure = self.measure or _default_measure()
            for i, job in enumerate(jobs):
                yield i, run_model_job(measure, job, self.timeout), None
            return
        yield from self._run_pool(jobs)

    def _run_pool(self, jobs):
        import concurrent.futures as cf
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        workers = min(len(self.gpus), len(jobs))
        for gpu in self.gpus[:workers]:
            queue.put(gpu)
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_bind_gpu,
                                    initargs=(queue,)) as pool:
            futures = {pool.submit(_pool_job, job, self.timeout): i for i, job in enumerate(jobs)}
            for future in cf.as_completed(futures):
                gpu, results = future.result()
                yield futures[future], results, gpu


def _default_measure() -> Callable:
    from dynalint.verify.runner import measure

    return measure


# --------------------------------------------------------------------------------------------
# Judging


def revert_reason(before: dict, after: Optional[dict], keep_slower: bool = False) -> Optional[str]:
    """Why the fixed code is worse than the original on this model (None: it is not).

    Outputs equal within float rounding (see `dynalint.verify.outputs`) are equal. A fixed version
    measurably slower than the original (`slower_reason`) is worse unless `keep_slower`."""
    if after is None:
        return None
    if after.get("error"):
        return f"the fixed code fails: {after['error']}"
    if after.get("outputs_match") is False:
        diff = after.get("max_abs_diff")
        detail = f"max abs diff {diff:.3g}" if isinstance(diff, (int, float)) else (after.get("outputs_mismatch") or "")
        why = (after.get("outputs_judgement") or {}).get("why")
        return (f"outputs differ ({detail})" if detail else "outputs differ") + (f": {why}" if why else "")
    if after.get("graph_count", 0) > before.get("graph_count", 0):
        return f"more graphs ({before.get('graph_count')} before, {after.get('graph_count')} after)"
    if after.get("graph_break_count", 0) > before.get("graph_break_count", 0):
        return f"more graph breaks ({before.get('graph_break_count')} before, {after.get('graph_break_count')} after)"
    if not keep_slower:
        return slower_reason(after)
    return None


def slower_reason(after: Optional[dict]) -> Optional[str]:
    """`slower: 0.55x (...)` where the 'after' child timed the fixed version measurably slower than
    the original (interleaved rounds, verdict "slower" from `dynalint.verify.stats`), else None."""
    from dynalint.verify.stats import SLOWER, slower_text

    t = (after or {}).get("timing") or {}
    if t.get("verdict") != SLOWER:
        return None
    c, arms = t.get("compare") or {}, t.get("arms") or {}
    return slower_text(c.get("speedup"), c.get("ci"), arms.get("before"), arms.get("after"))


# --------------------------------------------------------------------------------------------
# One model through the run


@dataclass
class ModelRun:
    entry: ModelEntry
    models_source: str  # MODELS.py without the other models' functions (see source_for)
    before: Optional[dict] = None
    after: Optional[dict] = None
    deps: list[str] = field(default_factory=list)  # files it loads (known once 'before' ran)
    region: list[str] = field(default_factory=list)  # files of its compile region
    before_key: str = ""
    after_key: str = ""
    reused: bool = False  # measurements taken from the state of an earlier run
    same_code: bool = False  # none of its files changed: after is before
    reverted: list[dict] = field(default_factory=list)  # [{file, reason}] reverted because of this model
    trials: list[dict] = field(default_factory=list)
    settings: Optional[list[dict]] = None  # Dynamo settings tried on the fixed code (--try-settings)
    keep_slower: bool = False  # keep fixes that make it measurably slower (--keep-slower)

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def broken(self) -> bool:
        """The original code could not be measured: nothing to compare with."""
        return self.before is None or bool(self.before.get("error"))

    def failure(self) -> Optional[str]:
        return None if self.broken else revert_reason(self.before, self.after, self.keep_slower)

    def kept_slower(self) -> Optional[str]:
        """The slowdown kept by --keep-slower (None: none, or it was not kept)."""
        return slower_reason(self.after) if self.keep_slower and not self.broken and not self.failure() else None

    def status(self) -> str:
        if self.broken:
            return "error"
        if self.failure():
            return "failed"
        return "unchanged" if self.same_code else "verified"


@dataclass
class RevertDecision:
    file: str
    reason: str
    models: list[str]


class ModelVerifier:
    """Measure models before/after, revert fixes that hurt, re-measure what the reverts touched."""

    def __init__(self, tree: Tree, code: CodeMap, state: MigrationState, options: MeasureOptions,
                 models_path: str, sys_path: list[str], measurer: Measurer,
                 progress: Callable[[str], None] = lambda _: None, keep_slower: bool = False):
        self.keep_slower = keep_slower
        self.tree = tree
        self.code = code
        self.state = state
        self.options = options
        self.models_path = real(models_path)
        self.sys_path = sys_path
        self.measurer = measurer
        self.progress = progress
        self.decisions: list[RevertDecision] = []

    # -- specs ---------------------------------------------------------------------------------
    def _spec(self, entry: ModelEntry, **extra) -> dict:
        return {
            "sys_path": self.sys_path, "target": f"{self.models_path}::{entry.function}",
            "device": self.options.device, "backend": self.options.backend, "repeat": self.options.repeat,
            "warmup": self.options.warmup, "timing": self.options.timing, "seed": self.options.seed,
            "trace": False, **extra,
        }

    def _overrides(self, keep_fixed: tuple[str, ...] = ()) -> Optional[dict]:
        texts = {p: self.tree.originals[p] for p in self.tree.changed() if p not in keep_fixed}
        return texts or None

    def before_spec(self, run: ModelRun) -> dict:
        folder = self.state.reference_dir(run.name)
        shutil.rmtree(folder, ignore_errors=True)
        return self._spec(run.entry, source_override=self._overrides(), save_dir=str(folder))

    def after_spec(self, run: ModelRun) -> dict:
        # The fixed files are on disk; the originals travel as `pair_with`, so this child times both
        # versions interleaved (the 'before' child's own timing gives the speedup over eager).
        return self._spec(run.entry, reference_dir=str(self.state.reference_dir(run.name)), time_eager=False,
                          pair_with=self._overrides() or {})

    def trial_spec(self, run: ModelRun, only: str, timing: bool = False) -> dict:
        # `pair_with`: every original, to tell rounding from a real output difference (the float64
        # runs build the original again) and, with `timing`, to time the trial against it.
        return self._spec(run.entry, timing=timing and self.options.timing, time_eager=False,
                          reference_dir=str(self.state.reference_dir(run.name)),
                          source_override=self._overrides(keep_fixed=(only,)), pair_with=self._overrides() or {})

    # -- what a model depends on, and keys over it -----------------------------------------------
    def _learn_from_before(self, run: ModelRun) -> None:
        """Its files, from what the 'before' child reported: class files, their imports, its region."""
        if run.broken:
            return
        classes = run.before.get("module_classes") or ()
        measured = [p for p in _measured_files(run.before) if real(p) != self.models_path]
        run.region = self.code.region(classes, measured)
        run.deps = sorted(set(self.code.loads([c["file"] for c in classes] + measured)) | set(run.region))

    def _key(self, run: ModelRun, deps: list[str], texts: Callable[[str], str]) -> str:
        return key_of({"options": self.options.key(), "target": run.entry.function, "models": self.models_path,
                       "models_source": text_hash(run.models_source),
                       "files": {p: text_hash(texts(p)) for p in deps}})

    def _set_keys(self, run: ModelRun) -> None:
        run.before_key = self._key(run, run.deps, self.tree.original)
        run.after_key = self._key(run, run.deps, self.tree.current)
        run.same_code = not run.broken and run.after_key == run.before_key

    def _reuse(self, run: ModelRun) -> None:
        """Take 'before' (and 'after') from the state when the model's files are unchanged since."""
        record = self.state.models.get(run.name) or {}
        before = record.get("before")
        if run.before is not None or not before or before.get("error") or not self.state.reference_dir(run.name).is_dir():
            return
        if self._key(run, record.get("deps", []), self.tree.original) != record.get("before_key"):
            return
        run.before, run.deps, run.region, run.reused = before, record["deps"], record.get("region", []), True
        self._set_keys(run)
        if not run.same_code and record.get("after") and record.get("after_key") == run.after_key:
            run.after = record["after"]

    def _remember(self, run: ModelRun) -> None:
        self.state.models[run.name] = {
            "deps": run.deps, "region": run.region, "before_key": run.before_key, "before": run.before,
            "after_key": run.after_key if run.after is not None else None, "after": run.after,
        }
        self.state.save()

    # -- the run -------------------------------------------------------------------------------
    def _needs(self, run: ModelRun) -> tuple[bool, bool]:
        """(needs before, needs after) once the state and this run's earlier rounds are used."""
        self._reuse(run)
        if run.before is not None and not run.broken:
            self._set_keys(run)
            if run.same_code:
                run.after = _same_as(run.before)
        nothing_changed = not self.tree.changed()
        if run.before is None:
            return True, not nothing_changed
        return False, run.after is None and not run.broken

    def measure(self, runs: list[ModelRun], label: str) -> None:
        jobs, owners = [], []
        for run in runs:
            needs_before, needs_after = self._needs(run)
            if needs_before or needs_after:
                jobs.append([self.before_spec(run) if needs_before else None,
                             self.after_spec(run) if needs_after else None])
                owners.append(run)
                continue
            why = "none of its files was fixed" if run.same_code else "its files are unchanged since it was verified"
            self.progress(f"  {run.name}: measured already ({why}): {describe_run(run)}")
            self._remember(run)
        if jobs:
            children = sum(1 for job in jobs for spec in job if spec)
            self.progress(f"{label}: {len(jobs)} model{'s' if len(jobs) != 1 else ''}, {children} child processes")
        for index, (before, after), gpu in self.measurer.run(jobs):
            run = owners[index]
            if before is not None:
                run.before = before
                self._learn_from_before(run)
            if after is not None:
                run.after = after
            if not run.broken:
                self._set_keys(run)
                if run.after is None and run.same_code:
                    run.after = _same_as(run.before)
            self._remember(run)
            self.progress(f"  {run.name}{f' (GPU {gpu})' if gpu else ''}: {describe_run(run)}")

    def run(self, entries: list[ModelEntry]) -> list[ModelRun]:
        from dynalint.migrate.models import source_for

        text = self.tree.current(self.models_path)
        runs = [ModelRun(e, source_for(text, e, entries), keep_slower=self.keep_slower) for e in entries]
        pending = runs
        for round_no in range(1, MAX_ROUNDS + 1):
            self.measure(pending, "verify" if round_no == 1 else f"verify again after reverts (round {round_no})")
            failing = [r for r in pending if r.failure()]
            if not failing:
                break
            reverted = self.revert_for(failing)
            if not reverted:
                break
            pending = [r for r in runs if not r.broken and set(r.deps) & reverted]
            for run in pending:
                run.after = None
        return runs

    def try_settings(self, runs: list[ModelRun]) -> None:
        """Dynamo settings on each model that still breaks after the fixes (the files on disk)."""
        from dynalint.verify.runner import breaks_seen, judge_settings, settings_specs

        owners = [r for r in runs if not r.broken and r.after and not r.after.get("error") and breaks_seen(r.after) > 0]
        if not owners:
            return
        self.progress(f"Dynamo settings: {len(owners)} model{'s' if len(owners) != 1 else ''} with breaks left")
        jobs = [settings_specs(self._spec(r.entry, reference_dir=str(self.state.reference_dir(r.name))), r.after)
                for r in owners]
        for index, results, _ in self.measurer.run(jobs):
            run = owners[index]
            run.settings = judge_settings(run.after, list(results))
            best = next((t["text"] for t in run.settings if t["suggested"]), None)
            self.progress(f"  {run.name}: " + (f"suggested {best}" if best else "no setting lowers the breaks"))
        if self.options.timing:
            self._time_settings(owners)

    def _time_settings(self, owners: list[ModelRun]) -> None:
        """Each suggestion timed against the files on disk without it; a slower one is dropped."""
        from dynalint.verify.report import ratio_text
        from dynalint.verify.runner import judge_setting_timing, setting_timing_spec

        timed = [(r, t) for r in owners for t in r.settings if t["suggested"]]
        if not timed:
            return
        self.progress(f"Timing {len(timed)} suggested setting{'s' if len(timed) != 1 else ''} with and without it")
        jobs = [[setting_timing_spec(self._spec(r.entry, reference_dir=str(self.state.reference_dir(r.name))),
                                     t["settings"], {p: self.tree.current(p) for p in r.deps})] for r, t in timed]
        for index, (result,), _ in self.measurer.run(jobs):
            run, best = timed[index]
            judge_setting_timing(best, result, self.options.device)
            t = best["timing"]
            if t.get("error"):
                self.progress(f"  {run.name}: timing failed: {t['error']}")
            else:
                self.progress(f"  {run.name}: {best['text']}: {ratio_text(t)}"
                              + (": not suggested" if best.get("slower") else ""))

    # -- blame and revert ----------------------------------------------------------------------
    def _candidates(self, run: ModelRun, changed: list[str]) -> list[str]:
        """Rewritten files to blame: in the model's compile region, else anything it loads, else all."""
        return [p for p in changed if p in run.region] or [p for p in changed if p in run.deps] or list(changed)

    def _isolate(self, run: ModelRun, candidates: list[str]) -> list[str]:
        """Try each file's fixes alone (the other files original); -> the files bad on their own.
        Where the only problem is speed, each trial is timed against the original too."""
        self.progress(f"  {run.name}: trying the fixes of {len(candidates)} files one at a time")
        timed = revert_reason(run.before, run.after, keep_slower=True) is None
        jobs = [[self.trial_spec(run, only, timing=timed)] for only in candidates]
        bad = []
        for index, (result,), _ in self.measurer.run(jobs):
            reason = revert_reason(run.before, result, run.keep_slower)
            run.trials.append({"file": self.code.display(candidates[index]), "problem": reason})
            if reason:
                bad.append(candidates[index])
        return sorted(bad) or candidates

    def revert_for(self, failing: list[ModelRun]) -> set[str]:
        changed = self.tree.changed()
        blame: dict[str, list[tuple[str, str]]] = {}
        for run in failing:
            candidates = self._candidates(run, changed)
            if not candidates or set(candidates) & set(blame):
                continue  # a file blamed for another model may explain this one too: measure it again first
            reason = run.failure()
            culprits = candidates if len(candidates) == 1 else self._isolate(run, candidates)
            for path in culprits:
                blame.setdefault(path, []).append((run.name, reason))
                run.reverted.append({"file": self.code.display(path), "reason": reason})
        for path, why in blame.items():
            self.tree.revert(path)
            reason = "; ".join(f"{model}: {text}" for model, text in why)
            self.decisions.append(RevertDecision(path, reason, [m for m, _ in why]))
            fixes = (self.state.files.pop(path, None) or {}).get("fixed_findings", [])
            self.state.reverted[path] = {"original_hash": text_hash(self.tree.originals[path]), "reason": reason,
                                         "models": [m for m, _ in why], "fixes": fixes}
            self.progress(f"  reverted the fixes in {self.code.display(path)}: {reason}")
        self.state.save()
        return set(blame)


def _measured_files(result: dict) -> list[str]:
    """Files the child named: the target's and its module classes', and where Dynamo broke."""
    files = list(result.get("model_files") or [])
    files += [b["filename"] for b in result.get("break_reasons") or () if b.get("filename")]
    return files


def _same_as(before: dict) -> dict:
    """The 'after' of a model none of whose files changed: the same code, so the same numbers."""
    after = dict(before)
    after.update(outputs_match=True, max_abs_diff=0.0, same_code=True)
    return after


def describe_run(run: ModelRun) -> str:
    before, after = run.before or {}, run.after or {}
    if before.get("error"):
        return f"cannot run the original: {before['error']}"
    if after.get("error"):
        return f"graphs {before.get('graph_count')}; the fixed code fails: {after['error']}"
    parts = [f"graphs {before.get('graph_count')} -> {after.get('graph_count')}"]
    if after.get("outputs_match") is not None:
        from dynalint.verify.outputs import DIFFER, EQUAL, describe, status_of

        status = status_of(after)
        parts.append({EQUAL: "outputs match", DIFFER: "OUTPUTS DIFFER"}.get(status) or describe(after))
    eager = (before.get("timing") or {}).get("eager_ms")
    t = after.get("timing") or {}
    compiled = [t.get("compiled_before_ms"), t.get("compiled_ms")]
    if None in compiled:
        compiled = [(r.get("timing") or {}).get("compiled_ms") for r in (before, after)]
    if eager is not None and None not in compiled:
        parts.append(f"eager {eager:.3g} ms, compiled {compiled[0]:.3g} -> {compiled[1]:.3g} ms")
    if t.get("compare"):
        c = t["compare"]
        verdict = t.get("verdict")
        if verdict == "slower":
            verdict = "SLOWER" + (" (kept: --keep-slower)" if run.keep_slower else "")
        parts.append(f"fix speedup {c['speedup']:.2f}x [{c['ci'][0]:.2f}-{c['ci'][1]:.2f}]: {verdict}"
                     if c.get("speedup") and t.get("verdict") != "cannot measure" else "fix speedup: cannot measure")
    for warning in t.get("warnings") or ():
        parts.append(f"warning: {warning}")
    return ", ".join(parts)

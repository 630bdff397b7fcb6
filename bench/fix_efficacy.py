"""How many real graph breaks `--unsafe-fixes` removes, proven by Dynamo, with outputs compared.

For each model of an accuracy corpus (bench/accuracy.py's builders: transformers architectures with
tiny random configs, timm, torchvision):
  1. a child process builds the model and, in eval mode (no grad) and train mode (grad on), runs it
     eagerly (recording which library files ran and the outputs), then compiled with explain's
     backend (`ExplainWithBackend("eager")`: explain's graphs, breaks and their sites, plus sites
     only the graph-break log names: a frame Dynamo skipped);
  2. models with no break stop here; the files that the broken models ran are linted as one project
     and fixed in memory with every fix, safe and unsafe, as `dynalint check --unsafe-fixes --diff`
     would fix them;
  3. a second child imports the fixed texts in place of the library's files (the original paths,
     so break sites keep their file names) and measures again, with the original's weights and
     inputs: breaks, and outputs: the fixed code eager against the original eager (train mode
     only where two eager calls agree), the fixed code compiled against the original compiled
     (in eval mode against the original eager when no compiled output was kept);
  4. each break site before is matched to the fixed file's lines: a site gone after the fix is
     "removed", attributed to the rule whose applied fix spans that line (or "elsewhere" when no
     fix touched it: a fix in a callee, a frame no longer split).

Prints a table (breaks before -> after, outputs match, fixes applied per model) and the totals:
break sites removed, models at 0 breaks, output mismatches, removed sites per rule.

    python bench/fix_efficacy.py                               # transformers suite
    python bench/fix_efficacy.py --only longformer,reformer    # a few models
    python bench/fix_efficacy.py --cache /tmp/efficacy.json    # reuse the runs whose inputs did not change
    python bench/fix_efficacy.py --suite torchvision --json out.json

The cache keeps each model's "before" run (keyed by torch version and model) and "after" run
(keyed by the fixed texts): after changing a fix, only the models whose fixed files changed run again.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dynalint.verify.runner import DYNAMO_SETTINGS, RNN_SETTING

HERE = Path(__file__).resolve().parent
MODES = ("eval", "train")
CHILD_TIMEOUT = 900


# --------------------------------------------------------------------------------------------
# Child side (torch imported here only)


def _child(spec_path: str, result_path: str) -> int:
    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    sys.path.insert(0, str(HERE))
    spec = json.loads(Path(spec_path).read_text())
    result: dict = {"error": None}
    try:
        _measure(spec, result)
    except BaseException as exc:  # a model that cannot be built or run is reported, not fatal
        import traceback

        text = str(exc).strip().splitlines()
        result["error"] = f"{type(exc).__name__}: {text[0][:200] if text else ''}"
        result["traceback"] = traceback.format_exc()[-3000:]
    Path(result_path).write_text(json.dumps(result))
    return 0


class _dropout_off:
    """Dropout of every kind returns its input (modules call the functional forms)."""

    NAMES = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")

    def __init__(self, torch):
        self.F = torch.nn.functional
        self.saved = {}

    def __enter__(self):
        F = self.F
        for name in self.NAMES:
            self.saved[name] = getattr(F, name)
            setattr(F, name, lambda input, *args, **kwargs: input)
        sdpa = self.saved["scaled_dot_product_attention"] = F.scaled_dot_product_attention

        def no_dropout_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, *args, **kwargs):
            return sdpa(query, key, value, attn_mask, 0.0, *args, **kwargs)

        F.scaled_dot_product_attention = no_dropout_sdpa
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(self.F, name, fn)


def _measure(spec: dict, result: dict) -> None:
    import copy

    from dynalint.verify import loading
    from dynalint.verify import measuring as M
    from dynalint.verify.child import apply_dynamo_config

    loading.install_overrides(spec.get("overrides"))
    import torch
    import torch._dynamo
    from torch._dynamo.backends.debugging import ExplainWithBackend

    import accuracy

    apply_dynamo_config(torch, spec.get("dynamo_config"), result)  # --try-settings
    build = accuracy.SUITES[spec["suite"]][1]()
    root = os.path.realpath(accuracy._library_root(spec["suite"])) + os.sep
    result["torch"] = torch.__version__
    M.seed_everything(0)
    pristine, kwargs = build(spec["name"])
    save, ref = spec.get("save_dir"), spec.get("reference_dir")
    if ref:  # the fixed version runs with the original's weights and inputs
        pristine.load_state_dict(torch.load(os.path.join(ref, "state_dict.pt"), weights_only=False))
        kwargs = torch.load(os.path.join(ref, "inputs.pt"), weights_only=False)
    if save:
        torch.save({k: v.detach().clone() for k, v in pristine.state_dict().items()}, os.path.join(save, "state_dict.pt"))
        torch.save(kwargs, os.path.join(save, "inputs.pt"))
    torch_dir = M.torch_dir()
    result["module_classes"] = loading.module_classes(pristine, torch_dir)
    executed: set[str] = set()

    def tracer(frame, event, arg):
        fn = frame.f_code.co_filename
        if not fn.startswith(root):
            return None
        executed.add(fn)
        return None

    modes = {}
    for mode in MODES:
        out: dict = {}
        with torch.set_grad_enabled(mode == "train"):
            model = copy.deepcopy(pristine).train(mode == "train")
            M.seed_everything(0)
            sys.settrace(tracer)
            try:
                eager = model(**kwargs)
            finally:
                sys.settrace(None)
            leaves = [t.detach() for t in M.flatten(eager)]
            if save:
                torch.save(leaves, os.path.join(save, f"outputs-{mode}.pt"))
            if save and mode == "train":
                # Train mode draws random numbers (dropout): a second eager call tells whether
                # the outputs can be compared at all.
                model = copy.deepcopy(pristine).train(mode == "train")
                M.seed_everything(0)
                again = [t.detach() for t in M.flatten(model(**kwargs))]
                out["reproducible"] = M.compare(leaves, again)[0]
            float64: dict = {}  # the float64 runs of both versions, made once per mode where needed
            if ref:
                reference = torch.load(os.path.join(ref, f"outputs-{mode}.pt"), weights_only=False)
                match, diff, why = M.compare(reference, leaves)
                out.update(outputs_match=match, max_abs_diff=diff, mismatch=why or None,
                           outputs_status="equal" if match else "differ")
                if not match and mode == "eval":
                    _judge_rounding(out, "", reference, leaves, float64, pristine, kwargs, spec)
            if mode == "train" and (save or ref):
                # A fix may change how many random numbers dropout draws (dense expert dispatch
                # drops out every token's expert activations): the same program up to dropout's
                # draws shows as equal outputs with dropout off.
                model = copy.deepcopy(pristine).train(True)
                M.seed_everything(0)
                with _dropout_off(torch):
                    nodrop = [t.detach() for t in M.flatten(model(**kwargs))]
                path = os.path.join(save or ref, "outputs-train-nodrop.pt")
                if save:
                    torch.save(nodrop, path)
                elif os.path.exists(path):
                    out["outputs_match_without_dropout"] = M.compare(torch.load(path, weights_only=False), nodrop)[0]
            torch._dynamo.reset()
            model = copy.deepcopy(pristine).train(mode == "train")
            M.seed_everything(0)
            # explain's own accounting, in a compiled call whose outputs we keep (one compile).
            explainer = ExplainWithBackend("eager")
            with accuracy._GraphBreakLog(root) as logged:
                compiled = [t.detach() for t in M.flatten(torch.compile(model, backend=explainer)(**kwargs))]
            explained = explainer.output()
            breaks = [[b["filename"], b["lineno"], b["reason"][:160]] for b in M.break_reasons(explained, torch_dir)]
            known = {(f, line) for f, line, _ in breaks}
            skipped = [[f, line, why] for f, line, why in logged.sites if (f, line) not in known]
            out.update(graph_count=explained.graph_count, break_count=explained.graph_break_count,
                       breaks=breaks, skipped=skipped)
            if save:
                torch.save(compiled, os.path.join(save, f"compiled-{mode}.pt"))
            if ref:
                # Compiled fixed vs compiled original where that was kept: the original itself may
                # differ from eager in train mode (NumPy random numbers come from torch's generator
                # under Dynamo); else vs eager original.
                path = os.path.join(ref, f"compiled-{mode}.pt")
                out["compiled_reference"] = "compiled" if os.path.exists(path) else "eager"
                if not os.path.exists(path):
                    path = os.path.join(ref, f"outputs-{mode}.pt")
                reference = torch.load(path, weights_only=False)
                out["compiled_match"], _, why = M.compare(reference, compiled)
                out["compiled_mismatch"] = why or None
                out["compiled_outputs_status"] = "equal" if out["compiled_match"] else "differ"
                eager_path = os.path.join(ref, f"outputs-{mode}.pt")
                if not out["compiled_match"] and out["compiled_reference"] == "compiled" and os.path.exists(eager_path):
                    # The fixed code compiled may match eager where the compiled original did not
                    # (a helper run outside the graph draws from NumPy again, as eager does).
                    out["compiled_matches_eager"] = M.compare(torch.load(eager_path, weights_only=False), compiled)[0]
                if not out["compiled_match"] and mode == "eval":
                    _judge_rounding(out, "compiled_", reference, compiled, float64, pristine, kwargs, spec)
            torch._dynamo.reset()
        modes[mode] = out
    result["modes"] = modes
    result["executed_files"] = sorted(executed)


def _judge_rounding(out: dict, prefix: str, reference: list, leaves: list, float64: dict, pristine, kwargs: dict,
                    spec: dict) -> None:
    """Outputs assert_close rejects (eval mode): rounding or a real difference, judged as `dynalint
    verify` judges them (dynalint.verify.outputs): the original, built again from the library's files
    on disk, and the fixed code run once more in float64. Sets `{prefix}outputs_status`,
    `{prefix}outputs_judgement` and, within rounding, `{prefix}match` (`outputs_match` for eager)."""
    import copy

    from dynalint.verify import loading, outputs as O

    if "truth" not in float64:
        try:
            texts = {path: Path(path).read_text(encoding="utf-8") for path in spec.get("overrides") or {}}
            original = copy.deepcopy(pristine).eval()
            loading.swap_classes(original, loading.reexec_modules(texts))
            float64["truth"] = O.run_double(original, (), kwargs, 0)
            del original
            float64["fixed"] = O.run_double(copy.deepcopy(pristine).eval(), (), kwargs, 0)
        except Exception as exc:  # a model that refuses float64: the outputs stay "differ"
            float64["error"] = f"no float64 run: {type(exc).__name__}: {str(exc).strip()[:160]}"
    if float64.get("error"):
        judged = O._differ(None, float64["error"])
    else:
        judged = O.judge(reference, leaves, float64["truth"], float64["fixed"])
    out[f"{prefix}outputs_judgement"] = judged
    out[f"{prefix}outputs_status"] = judged["status"]
    if judged["status"] == O.WITHIN_ROUNDING:
        out["compiled_match" if prefix else "outputs_match"] = True


# --------------------------------------------------------------------------------------------
# Parent side (no torch)


def _run_child(spec: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="fix-efficacy-") as tmp:
        spec_path, result_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "result.json")
        Path(spec_path).write_text(json.dumps(spec))
        env = dict(os.environ, TRANSFORMERS_VERBOSITY="error", HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore")
        try:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", spec_path, result_path],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  env=env, timeout=CHILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {CHILD_TIMEOUT} s"}
        try:
            return json.loads(Path(result_path).read_text())
        except (OSError, ValueError):
            tail = proc.stdout.decode("utf-8", "replace")[-800:]
            return {"error": f"child died (exit {proc.returncode}): {tail}"}


def sites_of(run: dict) -> dict[tuple[str, int], str]:
    """Distinct break sites (file, line) over both modes -> first reason; sites outside files
    (no user frame) are kept under their reason."""
    sites: dict = {}
    for mode in MODES:
        m = run["modes"][mode]
        for f, line, why in m["breaks"] + m["skipped"]:
            sites.setdefault((f or "?", line or 0), why)
    return sites


def break_count(run: dict) -> int:
    return sum(run["modes"][m]["break_count"] + len(run["modes"][m]["skipped"]) for m in MODES)


def line_map(old: str, new: str) -> dict[int, set[int]]:
    """Old line -> the new lines it became (1-based); changed lines map to the whole new block."""
    a, b = old.splitlines(), new.splitlines()
    out: dict[int, set[int]] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for i in range(i1, i2):
            if tag == "equal":
                out[i + 1] = {j1 + (i - i1) + 1}
            else:
                out[i + 1] = set(range(j1 + 1, j2 + 1)) or {j1 + 1}
    return out


def changed_lines(old: str, new: str) -> set[int]:
    a, b = old.splitlines(), new.splitlines()
    return {i + 1 for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            if tag != "equal" for i in range(i1, i2)}


def attribute(before_sites, after_sites, texts, overrides, fixed_by_file) -> tuple[list, list, list]:
    """-> (removed [(site, reason, rule)], kept [(site, reason)], new [(site, reason)])."""
    maps = {p: line_map(texts[p], overrides[p]) for p in overrides}
    changed = {p: changed_lines(texts[p], overrides[p]) for p in overrides}
    matched_after = set()
    removed, kept = [], []
    for (f, line), why in sorted(before_sites.items()):
        targets = maps[f].get(line, {line}) if f in maps else {line}
        hit = [(f, t) for t in targets if (f, t) in after_sites]
        if hit:
            kept.append(((f, line), why))
            matched_after.update(hit)
            continue
        # The rule whose fixed finding spans the line (a call's break is reported on its first
        # line, the fix may edit a later one), else "changed line" / "elsewhere".
        codes = [code for code, lo, hi in fixed_by_file.get(f, ()) if lo <= line <= hi]
        rule = codes[0] if codes else "changed line" if f in changed and line in changed[f] else "elsewhere"
        removed.append(((f, line), why, rule))
    new = [(s, why) for s, why in sorted(after_sites.items()) if s not in matched_after]
    return removed, kept, new


def fix_model(before: dict):
    """Lint the files that ran as one project and fix them in memory, as `check --unsafe-fixes
    --diff` would (nothing is written). -> (texts, by real path; fixed texts; fixed findings; errors)."""
    from dynalint.config import Config
    from dynalint.run.engine import analyze_files, select_findings
    from dynalint.autofix import fix_paths
    from dynalint.verify.reconcile import source_files

    config = Config()
    files, texts = source_files(before["executed_files"], config)
    summaries = analyze_files(files, config, jobs=1)
    findings = select_findings(summaries, config)
    outcome = fix_paths(files, summaries, findings, config, unsafe=True, diff=True)
    by_display = {f.display: str(f.path) for f in files}
    return texts, outcome.texts, outcome.fixed, outcome.errors, by_display


def _fixed_spans(by_display, fixed) -> dict[str, list[tuple[str, int, int]]]:
    """(rule, first row, last row) of each applied fix's finding, by real path. Rows of fixes
    applied in a later pass refer to an intermediate text; those are approximate."""
    out: dict[str, list] = collections.defaultdict(list)
    for f in fixed:
        path = by_display.get(f.filename, f.filename)
        rows = [f.row, max(f.row, f.end_row)] + [r for e in f.fix.edits for r in (e.row, e.end_row)]
        out[path].append((f.code, min(rows), max(rows)))
    return out


def _torch_version() -> str:
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return out.stdout.strip()


# What --try-settings adds on top of the fixes: both of Dynamo's capture settings at once (the
# most they can remove), then, where that fails or does not help (an internal error under both,
# outputs that differ, more breaks), each capture setting alone, as `dynalint verify
# --try-settings` tries them. allow_rnn goes with each (it only changes models with RNN modules).
CAPTURE_SETTINGS = {**max(DYNAMO_SETTINGS, key=len), **RNN_SETTING}
SINGLE_SETTINGS = tuple({**s, **RNN_SETTING} for s in DYNAMO_SETTINGS if len(s) == 1)


def _reproducible(before: dict | None, mode: str) -> bool:
    """Two eager calls of the original gave equal outputs in that mode (Reformer's train mode
    reseeds from `torch.seed()`: they differ, and nothing can be compared with it)."""
    return before is None or before["modes"].get(mode, {}).get("reproducible", True)


def _compiled_match(run: dict, before: dict | None = None) -> bool:
    """The compiled outputs equal the compiled original's (eval mode: the eager original's if that
    is all that was kept); a mode whose original differs from call to call is not compared."""
    return all(run["modes"][m].get("compiled_match", True) for m in MODES
               if m == "eval" or run["modes"][m].get("compiled_reference") == "compiled" and _reproducible(before, m))


def try_setting(name: str, suite: str, entry: dict, key: str, overrides: dict, store: Path, sites_after: int) -> dict:
    """The fixed code compiled with CAPTURE_SETTINGS, then, unless that helps, with each of
    SINGLE_SETTINGS; the one that leaves the fewest sites with outputs equal (cached under the
    fixed texts' key and the setting)."""
    runs = entry.setdefault("settings", {})
    tried = []
    for setting in (CAPTURE_SETTINGS, *SINGLE_SETTINGS):
        cache_key = key if setting is CAPTURE_SETTINGS else f"{key}|{json.dumps(setting, sort_keys=True)}"
        run = runs.get(cache_key)
        if run is None:
            run = _run_child({"suite": suite, "name": name, "overrides": overrides or None,
                              "reference_dir": str(store / name), "dynamo_config": setting})
            runs[cache_key] = run
        text = " + ".join(setting)
        if run.get("error"):
            tried.append({"error": run["error"], "setting": text})
        else:
            sites = len(sites_of(run))
            match = _compiled_match(run, entry.get("before"))
            tried.append({"after": break_count(run), "sites_after": sites, "match": match,
                          "helps": sites < sites_after and match, "setting": text})
        if tried[-1].get("helps") and setting is CAPTURE_SETTINGS:
            break
    helping = [t for t in tried if t.get("helps")]
    if helping:
        return min(helping, key=lambda t: (t["sites_after"], t["after"]))
    return tried[0]


def run_suite(names, suite: str, cache: dict, store: Path, log, settings: bool = False) -> list[dict]:
    """Before runs (cached), one lint + fix of every file the broken models ran, after runs (and,
    with `settings`, the fixed code with CAPTURE_SETTINGS)."""
    cache.setdefault("torch", _torch_version())
    models = cache.setdefault("models", {})

    def before_run(name: str) -> dict:
        ref = store / name
        entry = models.get(name) or {}
        before = entry.get("before")
        if before is None or before.get("error") or not (ref / "outputs-train-nodrop.pt").exists():
            ref.mkdir(parents=True, exist_ok=True)
            before = _run_child({"suite": suite, "name": name, "save_dir": str(ref)})
            models[name] = {"before": before}
        return before

    rows, broken = [], []
    for name in names:
        t0 = time.time()
        before = before_run(name)
        row = {"name": name}
        rows.append(row)
        if before.get("error"):
            row["error"] = before["error"]
            log(f"  {name:<24} error: {before['error']}")
            continue
        row["before"] = break_count(before)
        row["broken"] = bool(sites_of(before)) or row["before"] > 0
        if row["broken"]:
            broken.append(row)
        log(f"  {name:<24} {time.time() - t0:6.1f}s  {row['before']} breaks" if row["broken"] else
            f"  {name:<24} {time.time() - t0:6.1f}s  no break")
    if not broken:
        return rows
    t0 = time.time()
    files = sorted({f for r in broken for f in models[r["name"]]["before"]["executed_files"]})
    classes = [c for r in broken for c in models[r["name"]]["before"]["module_classes"]]
    texts, fixed_texts, fixed, errors, by_display = fix_model({"executed_files": files, "module_classes": classes})
    spans = _fixed_spans(by_display, fixed)
    log(f"  lint + fix of {len(files)} files: {time.time() - t0:.1f}s, {len(fixed)} fixes")
    for row in broken:
        t0 = time.time()
        name = row["name"]
        entry = models[name]
        before = entry["before"]
        mine = set(before["executed_files"])
        overrides = {p: t for p, t in fixed_texts.items() if p in mine}
        key = hashlib.sha1(json.dumps(sorted(overrides.items())).encode()).hexdigest()
        row["fixes"] = dict(collections.Counter(f.code for f in fixed if by_display.get(f.filename, f.filename) in mine))
        row["fix_errors"] = [e for e in errors if any(short(p) in e for p in mine)]
        after = entry.get("after") if entry.get("after_key") == key else None
        if after is None:
            if overrides:
                before_run(name)  # its saved weights, inputs and outputs must exist
                after = _run_child({"suite": suite, "name": name, "overrides": overrides, "reference_dir": str(store / name)})
            else:
                after = before
            entry.update(after=after, after_key=key)
        if after.get("error"):
            row["error"] = "after the fixes: " + after["error"]
            row["after"] = None
            log(f"  {name:<24} fixed code failed: {after['error']}")
            continue
        row["after"] = break_count(after)
        before_sites, after_sites = sites_of(before), sites_of(after)
        removed, kept, new = attribute(before_sites, after_sites, texts, overrides, spans)
        row.update(sites_before=len(before_sites), sites_after=len(after_sites), removed=removed, kept=kept, new=new)
        if overrides:
            train = after["modes"].get("train", {})
            # Equal with dropout off, different with it on: only dropout's draws differ (eager).
            row["dropout_draws_differ"] = bool(
                not train.get("outputs_match", True) and train.get("outputs_match_without_dropout")
                and _reproducible(before, "train"))
            # An original whose outputs differ from call to call cannot be compared in that mode
            # (eager or compiled): the table says so.
            row["not_reproducible"] = [m for m in MODES if not _reproducible(before, m)]
            checks = [(after["modes"][m].get("outputs_match", True) or m in row["not_reproducible"]
                       or (m == "train" and row["dropout_draws_differ"]),
                       after["modes"][m].get("mismatch"))
                      for m in MODES]
            # Compiled outputs in train mode are only comparable with the compiled original's (and
            # not at all where dropout draws differently: eval mode's compiled check remains).
            checks += [(after["modes"][m].get("compiled_match", True) or after["modes"][m].get("compiled_matches_eager", False),
                        after["modes"][m].get("compiled_mismatch"))
                       for m in MODES if m == "eval" or after["modes"][m].get("compiled_reference") == "compiled"
                       and not row["dropout_draws_differ"] and m not in row["not_reproducible"]]
            row["compiled_matches_eager"] = [m for m in MODES if not after["modes"][m].get("compiled_match", True)
                                             and after["modes"][m].get("compiled_matches_eager")]
            row["unchecked"] = [f"compiled {m} (only the eager original was kept)" for m in MODES
                                if m != "eval" and after["modes"][m].get("compiled_reference", "eager") == "eager"]
            row["match"] = all(ok for ok, _ in checks)
            row["mismatch"] = next((why for ok, why in checks if not ok), None)
            # Equal only within float rounding (float64 runs tell; dynalint.verify.outputs): the largest
            # such difference, for the table.
            judged = [after["modes"][m].get(f"{p}outputs_judgement") or {} for m in MODES for p in ("", "compiled_")]
            rounding = [j["max_abs_diff"] for j in judged if j.get("status") == "within rounding"]
            row["within_rounding"] = max(rounding) if rounding else None
            why = next((j["why"] for j in judged if j.get("status") == "differ" and j.get("why")), None)
            if why and not row["match"]:
                row["mismatch"] = f"{row['mismatch']} ({why})"
        else:
            row["match"] = True
        if settings and row["match"] and after_sites:
            row["setting"] = try_setting(name, suite, entry, key, overrides, store, len(after_sites))
            log(f"  {name:<24} with the capture settings: {row['setting']}")
        log(f"  {name:<24} {time.time() - t0:6.1f}s  breaks {row['before']} -> {row['after']}, "
            f"sites {len(before_sites)} -> {len(after_sites)}, fixes {sum(row['fixes'].values())}, "
            f"outputs {'match' if row['match'] else 'DIFFER'}")
    return rows


def short(path: str) -> str:
    for marker in ("site-packages/",):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def _outputs_cell(r: dict) -> str:
    if not r["match"]:
        return "DIFFER"
    cell = "match (train: with dropout off)" if r.get("dropout_draws_differ") else "match"
    if r.get("within_rounding") is not None:
        cell += f", eval within float32 rounding ({r['within_rounding']:.1g})"
    if r.get("compiled_matches_eager"):
        cell += f" ({', '.join(r['compiled_matches_eager'])} compiled: equals eager; the compiled original did not)"
    if r.get("not_reproducible"):
        cell += f" ({', '.join(r['not_reproducible'])}: not compared, the original's outputs differ from call to call)"
    return cell


def report(rows: list[dict], suite: str, verbose: bool) -> dict:
    broken = [r for r in rows if r.get("broken")]
    ok = [r for r in broken if r.get("after") is not None]
    print(f"\n{suite}: {len(rows)} models, {len(broken)} break ({sum(1 for r in rows if r.get('error') and not r.get('broken'))} could not run)\n")
    with_settings = any("setting" in r for r in broken)
    extra_head = " sites with capture settings |" if with_settings else ""
    print("| model | breaks before | after | sites before | after | fixes applied | outputs |" + extra_head)
    print("|---|---|---|---|---|---|---|" + ("---|" if with_settings else ""))
    for r in broken:
        if r.get("after") is None:
            print(f"| {r['name']} | {r['before']} | failed | | | {_fixes(r)} | {r.get('error', '')[:60]} |")
            continue
        print(f"| {r['name']} | {r['before']} | {r['after']} | {r['sites_before']} | {r['sites_after']} | {_fixes(r)} | "
              f"{_outputs_cell(r)} |" + (f" {_setting_cell(r)} |" if with_settings else ""))
    b = sum(r["before"] for r in broken)
    a = sum(r["after"] if r.get("after") is not None else r["before"] for r in broken)
    sb = sum(r.get("sites_before", 0) for r in broken)
    removed = [x for r in ok for x in r["removed"]]
    new = [x for r in ok for x in r["new"]]
    # A model whose fixed code fails or whose outputs differ counts as nothing removed.
    good = [r for r in ok if r["match"]]
    removed_good = sum(len(r["removed"]) for r in good)
    new_good = sum(len(r["new"]) for r in good)
    at_zero = sum(1 for r in good if r["after"] == 0)
    mismatches = [r["name"] for r in ok if not r["match"]]
    summary = {
        "models": len(rows), "broken": len(broken), "breaks_before": b, "breaks_after": a,
        "sites_before": sb, "sites_removed": removed_good, "sites_new": new_good,
        "net_removed_pct": 100.0 * (removed_good - new_good) / sb if sb else 0.0,
        "models_at_zero": at_zero, "output_mismatches": mismatches,
        "fixed_code_failed": [r["name"] for r in broken if r.get("after") is None],
    }
    print(f"\nbreaks (explain, eval + train): {b} -> {a}")
    print(f"break sites: {sb}; removed {removed_good}, new {new_good} (models with equal outputs): "
          f"net {summary['net_removed_pct']:.0f}% removed")
    print(f"models at 0 breaks after the fixes: {at_zero} of {len(broken)}")
    print(f"output mismatches: {len(mismatches)} {mismatches if mismatches else ''}")
    if summary["fixed_code_failed"]:
        print(f"fixed code failed to run: {summary['fixed_code_failed']}")
    if with_settings:
        # A setting is taken only where it lowers the sites with compiled outputs equal.
        sites_after = sum(r["setting"]["sites_after"] if r.get("setting", {}).get("helps") else r["sites_after"]
                          for r in good)
        sites_good = sum(r["sites_before"] for r in good)
        summary["with_settings"] = {
            "sites_before": sites_good, "sites_after": sites_after,
            "net_removed_pct": 100.0 * (sites_good - sites_after) / sites_good if sites_good else 0.0,
            "models_at_zero": sum(1 for r in good if (r["setting"]["after"] if r.get("setting", {}).get("helps")
                                                      else r["after"]) == 0),
            "helped": [r["name"] for r in good if r.get("setting", {}).get("helps")],
        }
        w = summary["with_settings"]
        print(f"with the capture settings where they help ({', '.join(w['helped']) or 'none'}): break sites "
              f"{w['sites_before']} -> {w['sites_after']}, net {w['net_removed_pct']:.0f}% removed; "
              f"models at 0 breaks: {w['models_at_zero']}")
    per_rule = collections.Counter(rule for r in good for _, _, rule in r["removed"])
    applied = collections.Counter()
    for r in ok:
        applied.update(r.get("fixes", {}))
    print("\n| rule | fixes applied | break sites removed on its lines |")
    print("|---|---|---|")
    for code in sorted(set(per_rule) | set(applied)):
        print(f"| {code} | {applied.get(code, 0)} | {per_rule.get(code, 0)} |")
    summary["per_rule"] = {c: {"applied": applied.get(c, 0), "removed": per_rule.get(c, 0)} for c in set(per_rule) | set(applied)}
    if verbose:
        for r in ok:
            print(f"\n{r['name']}:")
            for (f, line), why, rule in r["removed"]:
                print(f"  removed [{rule}] {short(f)}:{line}: {why[:100]}")
            for (f, line), why in r["kept"]:
                print(f"  kept            {short(f)}:{line}: {why[:100]}")
            for (f, line), why in r["new"]:
                print(f"  NEW             {short(f)}:{line}: {why[:100]}")
            if not r["match"]:
                print(f"  outputs differ: {r.get('mismatch')}")
            for what in r.get("unchecked", []):
                print(f"  not compared: {what}")
            for e in r.get("fix_errors", []):
                print(f"  fix error: {e}")
    return summary


def _setting_cell(r: dict) -> str:
    t = r.get("setting")
    if not t:
        return "-"
    if t.get("error"):
        return f"failed: {t['error'][:40]}"
    named = f" [{t['setting']}]" if t.get("helps") else ""
    return f"{t['sites_after']} ({t['after']} breaks){'' if t['match'] else ', outputs DIFFER'}{named}"


def _fixes(r: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(r.get("fixes", {}).items())) or "none"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(argv[1], argv[2])
    sys.path.insert(0, str(HERE))
    import accuracy

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=sorted(accuracy.SUITES), default="transformers")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--cache", help="JSON file of earlier runs, reused when their inputs did not change "
                    "(each model's weights, inputs and outputs are kept in the folder CACHE.d)")
    ap.add_argument("--json", help="write the rows and totals here")
    ap.add_argument("--try-settings", action="store_true",
                    help="also compile the fixed code with capture_scalar_outputs, capture_dynamic_output_shape_ops and allow_rnn")
    ap.add_argument("--verbose", action="store_true", help="list each break site: removed (and by which rule), kept, new")
    args = ap.parse_args(argv)

    names = [n for n in args.only.split(",") if n] if args.only else accuracy.SUITES[args.suite][0]()
    cache = json.loads(Path(args.cache).read_text()) if args.cache and Path(args.cache).exists() else {}
    if cache.get("suite", args.suite) != args.suite:
        cache = {}
    cache["suite"] = args.suite

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)
        if args.cache:
            Path(args.cache).write_text(json.dumps(cache))

    t0 = time.time()
    store = Path((args.cache or tempfile.mkdtemp(prefix="fix-efficacy-")) + ".d")
    rows = run_suite(names, args.suite, cache, store, log, settings=args.try_settings)
    summary = report(rows, args.suite, args.verbose)
    print(f"\ntorch {cache.get('torch')}, {time.time() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"suite": args.suite, "torch": cache.get("torch"), "summary": summary,
                                               "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`dynalint migrate PATH --models MODELS.py`: lint, fix, prove the fixes on real models, report.

Steps (progress on stderr):
1. lint PATH (the texts before any fix; on a resumed run, the originals kept in the state file);
2. apply the fixes (safe ones; unsafe ones too with --unsafe-fixes) to the files on disk;
3. verify every model of MODELS.py before and after, in child processes, and revert the fixes of
   any file that makes a model's outputs differ, its graphs or breaks grow, or makes it fail;
4. lint PATH again: what is left needs a human;
5. write report.md, report.html and report.json to --report (default dynalint-report/).

Exit codes: 0 every model verified and nothing left to do, 1 findings remain, fixes were reverted,
Dynamo broke a graph where no rule reported anything, or a model could not be verified
(--exit-zero: 0 then too), 2 usage error (dirty git tree, bad MODELS.py, no torch) or internal
error. The CLI process never imports torch or the user's code.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import click

from dynalint.console import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, error

from dynalint.findings import Finding
from dynalint.migrate.options import MeasureOptions

STEPS = 5


class MigrateError(Exception):
    """A usage problem reported as one line, exit code 2."""


@dataclass
class MigrateOptions:
    path: Path
    models: Path
    report_dir: Path = Path("dynalint-report")
    unsafe_fixes: bool = False
    try_settings: bool = False  # also try Dynamo settings on models that still break
    keep_slower: bool = False  # keep fixes that make a model measurably slower
    allow_dirty: bool = False
    measure: MeasureOptions = field(default_factory=MeasureOptions)  # device, backend, rounds, timeout
    sys_path: list[Path] = field(default_factory=list)
    config_file: Optional[Path] = None


def progress(message: str) -> None:
    click.echo(message, err=True)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def step(number: int, message: str) -> None:
    progress(f"[{number}/{STEPS}] {message}")


# --------------------------------------------------------------------------------------------
# Checks before touching anything


def _check_inputs(opts: MigrateOptions):
    from dynalint.migrate.models import ModelsFileError, read_models

    if not opts.path.exists():
        raise MigrateError(f"{opts.path} does not exist")
    try:
        return read_models(opts.models)
    except ModelsFileError as exc:
        raise MigrateError(str(exc)) from exc


def _check_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        raise MigrateError("torch is not installed; `dynalint migrate` verifies fixes with it: install a torch build "
                           "for your machine, then `pip install 'dynalint[verify]'`")


def _check_clean_tree(opts: MigrateOptions, state) -> None:
    from dynalint.migrate.git import GitError, describe_dirty, dirty_files

    if opts.allow_dirty:
        return
    try:
        dirty = dirty_files(opts.path, [opts.report_dir], state.is_own_change)
    except GitError as exc:
        raise MigrateError(f"{exc}; migrate rewrites files and needs git to show and undo that "
                           "(commit first, or pass --allow-dirty)") from exc
    if dirty:
        raise MigrateError(f"uncommitted changes under {opts.path}; commit or stash them first, or pass "
                           f"--allow-dirty:\n{describe_dirty(dirty)}")


def import_root(path: Path) -> Path:
    """The folder to put on sys.path so that PATH's packages import by their dotted names."""
    folder = path.resolve() if path.is_dir() else path.resolve().parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


# --------------------------------------------------------------------------------------------
# Lint and fix


@dataclass
class Linted:
    files: list  # SourceFile
    summaries: list
    findings: list[Finding]
    originals_on_disk: bool = True  # the linted texts are what the files hold now


def lint(files, config) -> Linted:
    from dynalint.run.engine import analyze_files, select_findings

    summaries = analyze_files(files, config, jobs=0)
    return Linted(files, summaries, select_findings(summaries, config))


def collect(opts: MigrateOptions, config) -> list:
    """PATH's Python files, named relative to the current folder, or to PATH's import root when
    PATH lies outside it (so the report says `toynet/ops.py`, not `/tmp/copy/toynet/ops.py`)."""
    from dynalint.check import CheckOptions, collect_files
    from dynalint.run.engine import SourceFile

    files = collect_files(CheckOptions(paths=[opts.path]), config)
    cwd, root = Path.cwd().resolve(), import_root(opts.path)
    base = cwd if _is_within(opts.path.resolve(), cwd) else root
    return [SourceFile(f.path, os.path.relpath(f.path.resolve(), base), f.module, f.is_package, f.text) for f in files]


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def with_texts(files, texts: dict[str, str]) -> list:
    """SourceFiles carrying the given texts (real path -> text) instead of what is on disk."""
    from dynalint.run.engine import SourceFile
    from dynalint.migrate.code import real

    return [SourceFile(f.path, f.display, f.module, f.is_package, text=texts.get(real(f.path), f.text)) for f in files]


def finding_record(f: Finding) -> dict:
    return {"code": f.code, "message": f.message, "filename": f.filename, "row": f.row, "column": f.column,
            "fix": f.fix.applicability if f.fix is not None else None}


@dataclass
class FixStep:
    originals: dict[str, str]  # real path -> original text, for every file migrate has rewritten
    fixed: dict[str, list[dict]]  # real path -> fixed findings (this run and earlier ones)
    skipped_reverted: dict[str, dict]  # real path -> revert record of an earlier run (not fixed again)
    errors: list[str]


def apply_fixes(files, current: Linted, config, state, unsafe: bool) -> FixStep:
    from dynalint.autofix import fix_paths
    from dynalint.migrate.code import real
    from dynalint.migrate.state import read_text

    skipped = {}
    to_fix = []
    for f in files:
        path = real(f.path)
        record = state.still_reverted(path, read_text(f.path))
        if record is not None:
            skipped[path] = record
        else:
            to_fix.append(f)
    before_texts = {real(f.path): read_text(f.path) for f in to_fix}
    outcome = fix_paths(to_fix, current.summaries, current.findings, config, unsafe=unsafe)
    by_display = {f.display: real(f.path) for f in files}
    for display in outcome.written:
        path = by_display[display]
        record = state.files.get(path) or {"original": before_texts[path], "fixed_findings": []}
        record["fixed"] = read_text(Path(path))
        record["fixed_findings"] = record.get("fixed_findings", []) + [
            finding_record(f) for f in outcome.fixed if f.filename == display]
        state.files[path] = record
    state.save()
    known = set(by_display.values())
    originals = {p: r["original"] for p, r in state.files.items() if p in known}
    fixed = {p: r.get("fixed_findings", []) for p, r in state.files.items() if p in known}
    return FixStep(originals, fixed, skipped, outcome.errors)


# --------------------------------------------------------------------------------------------
# The whole run


def run_migration(opts: MigrateOptions, measure: Optional[Callable] = None) -> int:
    """Run every step; `measure` replaces `dynalint.verify.runner.measure` (tests)."""
    from dynalint.check import CheckOptions, effective_config
    from dynalint.migrate.state import MigrationState

    started = time.time()
    entries = _check_inputs(opts)
    state = MigrationState.load(opts.report_dir / "state")
    _check_clean_tree(opts, state)
    if measure is None:
        _check_torch()
    config = effective_config(CheckOptions(paths=[opts.path], config_file=opts.config_file))

    files = collect(opts, config)
    if not files:
        raise MigrateError(f"no Python files under {opts.path}")
    before = lint_step(files, config, state)
    fix = fix_step(files, before, config, state, opts.unsafe_fixes)
    code, verifier, runs = verify_step(opts, files, before, fix, config, state, entries, measure)
    after = lint(files, config)
    step(4, f"lint again: {plural(len(after.findings), 'finding')} left for a human")

    from dynalint.migrate.report import MigrationResult, write_reports

    result = MigrationResult(
        opts=opts, files=files, code=code, before=before.findings, after=after.findings, fix=fix,
        runs=runs, decisions=verifier.decisions, state=state, seconds=time.time() - started,
    )
    written = write_reports(result, opts.report_dir)
    step(5, "report: " + ", ".join(str(p) for p in written))
    return EXIT_CLEAN if result.all_done() else EXIT_FINDINGS


def lint_step(files, config, state) -> Linted:
    """Lint the texts before migrate touched them (on a resumed run: the originals it kept)."""
    from dynalint.migrate.code import real
    from dynalint.migrate.state import read_text

    originals = {real(f.path): state.original_of(real(f.path), read_text(f.path)) for f in files}
    before = lint(with_texts(files, originals), config)
    before.originals_on_disk = all(read_text(f.path) == originals[real(f.path)] for f in files)
    step(1, f"lint: {plural(len(files), 'file')}, {plural(len(before.findings), 'finding')}")
    return before


def fix_step(files, before: Linted, config, state, unsafe: bool) -> FixStep:
    current = before if before.originals_on_disk else lint(files, config)
    fix = apply_fixes(files, current, config, state, unsafe)
    for error in fix.errors:
        progress(f"  warning: {error}")
    fixed_count = sum(len(v) for p, v in fix.fixed.items() if p in fix.originals)
    left_alone = len(fix.skipped_reverted)
    step(2, f"fix: {plural(fixed_count, 'finding')} fixed in {plural(len(fix.originals), 'file')}"
            + (f" ({plural(left_alone, 'file')} left alone: their fixes were reverted before)" if left_alone else ""))
    return fix


def verify_step(opts: MigrateOptions, files, before: Linted, fix: FixStep, config, state, entries, measure):
    """Measure every model before and after, reverting fixes that hurt; -> (code map, verifier, runs)."""
    from dynalint.migrate.code import CodeMap, real
    from dynalint.migrate.verify import (
        Measurer,
        ModelVerifier,
        Tree,
        visible_gpus,
    )

    code = CodeMap.build(files, before.summaries)
    if real(opts.models) not in code.module_of:  # MODELS.py outside PATH: still follow its imports
        code = _with_models_file(files, before.summaries, opts.models, config)
    options = opts.measure
    sys_path = [str(p.resolve()) for p in opts.sys_path]
    sys_path += [str(opts.models.resolve().parent), str(import_root(opts.path))]
    measurer = Measurer(measure, visible_gpus(options.device) if measure is None else [], options.timeout)
    step(3, f"verify: {plural(len(entries), 'model')} on device {options.device}")
    verifier = ModelVerifier(Tree(dict(fix.originals)), code, state, options, str(opts.models),
                             list(dict.fromkeys(sys_path)), measurer, progress, keep_slower=opts.keep_slower)
    runs = verifier.run(entries)
    if opts.try_settings:
        verifier.try_settings(runs)
    return code, verifier, runs


def _with_models_file(files, summaries, models: Path, config):
    from dynalint.run.engine import SourceFile, analyze_files, module_name_for
    from dynalint.migrate.code import CodeMap

    module, is_package = module_name_for(models)
    extra = SourceFile(models, str(models), module, is_package)
    return CodeMap.build([*files, extra], [*summaries, *analyze_files([extra], config, jobs=1)])


# --------------------------------------------------------------------------------------------
# Command line


@click.command(name="migrate")
@click.argument("path", type=click.Path(path_type=Path, exists=True))
@click.option("--models", "models", required=True, type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="MODELS.py: functions returning (module, example_inputs), in a MODELS dict or named dynalint_*.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change semantics (each is verified).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--report", "report_dir", type=click.Path(path_type=Path, file_okay=False),
              default=Path("dynalint-report"), show_default=True, help="Folder for report.md/.html/.json.")
@click.option("--allow-dirty", is_flag=True, help="Run even with uncommitted changes under PATH (or outside git).")
@click.option("--backend", default="inductor", show_default=True, help="torch.compile backend for timing.")
@click.option("--repeat", type=click.IntRange(1), default=20, show_default=True, help="Timed calls (median).")
@click.option("--warmup", type=click.IntRange(0), default=3, show_default=True, help="Untimed calls first.")
@click.option("--no-timing", is_flag=True, help="Graphs and outputs only.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--timeout", type=click.FloatRange(1), default=600, show_default=True,
              help="Seconds per child process.")
@click.option("--path", "sys_path", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to put on sys.path for MODELS.py (repeatable).")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), help="Config file to use.")
@click.option("--try-settings", is_flag=True,
              help="Also try Dynamo settings (capture_scalar_outputs, ...) on models that still break; suggest one "
                   "that lowers the breaks with outputs equal.")
@click.option("--keep-slower", is_flag=True,
              help="Keep fixes that make a model measurably slower compiled (by default they are reverted).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings, reverts or failing models are left.")
@click.help_option("-h", "--help")
def migrate(path, models, unsafe_fixes, device, report_dir, allow_dirty, backend, repeat, warmup, no_timing, seed,
            timeout, sys_path, config_file, try_settings, keep_slower, exit_zero):
    """Migrate PATH to torch.compile: lint, fix, verify the fixes on the models of MODELS.py, report."""
    opts = MigrateOptions(path=path, models=models, report_dir=report_dir, unsafe_fixes=unsafe_fixes,
                          allow_dirty=allow_dirty, measure=MeasureOptions(device=device, backend=backend, repeat=repeat,
                          warmup=warmup, timing=not no_timing, seed=seed, timeout=timeout), sys_path=list(sys_path),
                          config_file=config_file, try_settings=try_settings, keep_slower=keep_slower)
    try:
        code = run_migration(opts)
    except MigrateError as exc:
        error(str(exc))
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_CLEAN if exit_zero and code == EXIT_FINDINGS else code)

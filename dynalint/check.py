"""`dynalint check`: the pre-commit / CI / editor path. Never imports torch or user code."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import click

from dynalint.console import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, error, warning

from dynalint.run import engine
from dynalint.config import DEFAULT_EXCLUDE, Config, ConfigError, resolve_config
from dynalint.run.discovery import DEFAULT_EXCLUDES, EXCLUDE, EXTEND_EXCLUDE, GITIGNORE
from dynalint.run.engine import SourceFile, analyze_files, module_name_for, read_source, select_findings
from dynalint.findings import Finding



@dataclass
class CheckOptions:
    paths: list[Path] = field(default_factory=list)
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    output_format: str = "text"
    statistics: bool = False
    stdin_filename: Optional[str] = None
    config_file: Optional[Path] = None
    no_cache: bool = False
    cache_dir: Optional[Path] = None
    jobs: int = 0
    quiet: bool = False
    progress: bool = True
    force_exclude: bool = False  # exclude named files too (pre-commit passes every file by name)



def effective_config(opts: CheckOptions) -> Config:
    paths = opts.paths or ([Path(opts.stdin_filename)] if opts.stdin_filename else [Path.cwd()])
    from dynalint.config import Overrides, validate_codes

    # Command-line selection applies over every config that governs a file (nested ones too).
    overrides = Overrides(
        select=validate_codes("--select", list(opts.select)) if opts.select else (),
        extend_select=validate_codes("--extend-select", list(opts.extend_select)) if opts.extend_select else (),
        ignore=validate_codes("--ignore", list(opts.ignore)) if opts.ignore else (),
    )
    return resolve_config(paths, opts.config_file, overrides)


def _display(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


def collect_files(opts: CheckOptions, config: Config, skipped: Optional[dict] = None) -> list[SourceFile]:
    from dynalint.run.discovery import discover

    paths = opts.paths or [Path(".")]
    src_roots = [config.root / s for s in config.src]
    files = []
    shown_folder: dict[str, str] = {}  # folder -> its display name (relpath once per folder)
    for p in discover(paths, config, force_exclude=opts.force_exclude, skipped=skipped):
        module, is_package = module_name_for(p, src_roots)
        folder, name = os.path.split(str(p))
        if folder not in shown_folder:
            shown_folder[folder] = _display(Path(folder or "."))
        shown = shown_folder[folder]
        display = name if shown == "." else str(p) if os.path.isabs(shown) else os.path.join(shown, name)
        files.append(SourceFile(path=p, display=display, module=module, is_package=is_package))
    return files


class _Progress:
    """A progress bar on stderr, only for a terminal (never in CI logs or pipes)."""

    def __init__(self, enabled: bool, label: str):
        self.enabled = enabled and sys.stderr.isatty() and not os.environ.get("CI")
        self.label = label
        self.last = -1

    def phase(self, label: str) -> None:
        """A new stage (the cross-file rounds): its own count from zero."""
        self.label = label
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 50:
            return
        pct = done * 100 // total
        if pct == self.last:
            return
        self.last = pct
        bar = "#" * (pct // 4)
        sys.stderr.write(f"\r{self.label} [{bar:<25}] {done}/{total} files")
        if done == total:
            sys.stderr.write("\r" + " " * (len(self.label) + 45) + "\r")
        sys.stderr.flush()


def _read_stdin() -> tuple[str, str]:
    """Standard input decoded as Python would (PEP 263 cookie, BOM), newlines kept as sent."""
    import io
    import tokenize

    raw = sys.stdin.buffer.read()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError:  # an unknown coding cookie: DYN001 will say so
        encoding = "utf-8"
    return raw.decode(encoding, errors="replace"), encoding


def _write_stdout(text: str, encoding: str) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode(encoding, errors="replace"))
    sys.stdout.buffer.flush()


def _check_stdin(opts: CheckOptions, config: Config):
    """Lint (or fix) standard input under --stdin-filename: an exit code when done, else
    (findings, sources) for the formatter. With --fix the fixed source goes to stdout and what
    is left to stderr, as ruff does, so an editor can replace its buffer with stdout."""
    from dynalint.run.engine import lint_source

    name = opts.stdin_filename or "<stdin>"
    text, encoding = _read_stdin()
    if opts.stdin_filename and opts.force_exclude:
        from dynalint.run.discovery import is_excluded

        if is_excluded(Path(name), config):
            if opts.fix and not opts.diff:
                _write_stdout(text, encoding)
            return EXIT_CLEAN
    if not (opts.fix or opts.diff):
        return lint_source(text, name, config), {name: text}
    from dynalint.autofix import fix_source
    from dynalint.output import format_concise

    result = fix_source(text, name, config, unsafe=opts.unsafe_fixes)
    for e in result.errors:
        error(e)
    for w in result.skipped:
        warning(w)
    if opts.diff:
        sys.stdout.write(result.diff(name))
        return EXIT_FINDINGS if result.changed else EXIT_CLEAN
    _write_stdout(result.text, encoding)
    if result.remaining and not opts.quiet:
        sys.stderr.write(format_concise(result.remaining, unsafe=opts.unsafe_fixes))
    return EXIT_FINDINGS if result.remaining else EXIT_CLEAN


def run_check(opts: CheckOptions) -> int:
    from dynalint.output import FORMATTERS, format_statistics

    try:
        config = effective_config(opts)
    except ConfigError as exc:
        error(str(exc))
        return EXIT_ERROR

    cache_dir = None
    if not opts.no_cache and not os.environ.get("DYNALINT_NO_CACHE"):
        cache_dir = opts.cache_dir or config.cache_path or (config.root / ".dynalint_cache")

    sources: dict[str, str] = {}
    outcome = None  # what --fix did
    skipped: dict = {}  # files discovery left out, by setting
    if opts.stdin_filename is not None or (opts.paths == [Path("-")]):
        stdin = _check_stdin(opts, config)
        if isinstance(stdin, int):
            return stdin
        findings, sources = stdin
        files = []
    else:
        engine.FREEZE_AFTER_LOAD = True  # a one-shot run: what it loads lives until it exits
        with engine._gc_paused():  # thousands of paths and names, no cycles among them
            files = collect_files(opts, config, skipped)
        if not files:
            if not opts.quiet:
                click.echo(f"dynalint: warning: no Python files found{_skipped_note(skipped)}", err=True)
            return EXIT_CLEAN
        progress = _Progress(opts.progress, "dynalint")
        engine.LAST_UNRESOLVED_ROOTS = None
        if opts.fix or opts.diff:  # fixes need every summary: the whole-tree path
            from dynalint.autofix import fix_paths
            summaries = analyze_files(files, config, jobs=opts.jobs, cache_dir=cache_dir, progress=progress)
            findings = select_findings(summaries, config)
            outcome = fix_paths(files, summaries, findings, config, unsafe=opts.unsafe_fixes, diff=opts.diff)
            for w in outcome.skipped:
                warning(w)
            if opts.diff:
                sys.stdout.write(outcome.diff_text)
                if outcome.errors:
                    for e in outcome.errors:
                        error(e)
                if not opts.quiet:
                    _diff_summary(outcome, opts)
                return EXIT_FINDINGS if outcome.diff_text else EXIT_CLEAN
            findings = outcome.remaining
            for e in outcome.errors:
                error(e)
        else:
            from dynalint.run.incremental import lint_tree

            findings = lint_tree(files, config, jobs=opts.jobs, cache_dir=cache_dir, progress=progress)
        if opts.output_format == "text":
            shown = {x.filename for x in findings[:2000]}  # a set: files x findings was seconds on big trees
            for f in files:
                if f.display in shown:
                    try:
                        sources[f.display] = read_source(f.path)
                    except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
                        pass

    if engine.LAST_UNRESOLVED_ROOTS and not opts.quiet:
        unresolved = engine.LAST_UNRESOLVED_ROOTS
        names = ", ".join(f"`{r}`" for r in unresolved)
        what = "entry" if len(unresolved) == 1 else "entries"
        warning(f"extra-roots {what} {names} named no function or nn.Module class of the linted files, ignored "
                "(give a dotted name, `pkg.module.function` or `pkg.module.Class.method`, or a pattern, `pkg.module.*`)")
    out = sys.stdout
    if opts.statistics:
        out.write(format_statistics(findings, unsafe=opts.unsafe_fixes, output_format=opts.output_format))
    else:
        formatter = FORMATTERS[opts.output_format]
        file_names = [f.display for f in files] if opts.stdin_filename is None and opts.paths != [Path("-")] else list(sources)
        out.write(formatter(findings, sources=sources, unsafe=opts.unsafe_fixes, files=file_names, config=config))
    if opts.output_format in ("text", "concise") and not opts.quiet and not opts.statistics:
        _summary(findings, opts, outcome, skipped)
    return EXIT_FINDINGS if findings else EXIT_CLEAN


# Default excludes that never hold a project's own code (VCS, caches, environments): what they
# leave out goes unmentioned. `build`, `dist` and `site-packages` do hold Python files people lint.
_UNREMARKABLE = frozenset(DEFAULT_EXCLUDE) - {"build", "dist", "site-packages"}
_SETTINGS = (
    (DEFAULT_EXCLUDES, "the default excludes", "set `exclude` in the config (it replaces them)"),
    (EXCLUDE, "`exclude`", "change `exclude` in the config"),
    (EXTEND_EXCLUDE, "`extend-exclude`", "change `extend-exclude` in the config"),
    (GITIGNORE, ".gitignore (`respect-gitignore`)", "set `respect-gitignore = false`"),
)


def _left_out(skipped: dict, with_gitignore: bool = True) -> list[tuple[str, str, str]]:
    """(counts, setting, how to lint them) per setting that left out Python files or folders:
    `("2 folders and 1 file", "the default excludes", "...")`, names of the first three after it."""
    out = []
    for setting, label, remedy in _SETTINGS:
        if setting == GITIGNORE and not with_gitignore:
            continue
        counts, names = [], []
        for kind in ("folder", "file"):
            found = [n for n in skipped.get((setting, kind), ()) if setting != DEFAULT_EXCLUDES or os.path.basename(n) not in _UNREMARKABLE]
            if found:
                counts.append(f"{len(found)} {kind}{'s' if len(found) != 1 else ''}")
                names += found
        if counts:
            shown = ", ".join(_display(Path(n)) for n in names[:3]) + (", ..." if len(names) > 3 else "")
            out.append((" and ".join(counts), f"{label} ({shown})", remedy))
    return out


def _skipped_note(skipped: dict) -> str:
    """What the excludes left out, by setting: ` (2 folders left out by the default excludes (build, dist))`."""
    parts = [f"{counts} left out by {label}" for counts, label, _ in _left_out(skipped)]
    return f" ({'; '.join(parts)})" if parts else ""


def _excluded_summary(skipped: dict, opts: CheckOptions) -> Optional[str]:
    """The summary's line on what `exclude` / `extend-exclude` / the default excludes left out
    of the linted folders (not .gitignore: ignored files are meant to be left out)."""
    found = _left_out(skipped, with_gitignore=False)
    if not found:
        return None
    parts = "; ".join(f"{counts} excluded by {label}" for counts, label, _ in found)
    remedies = " or ".join(remedy for _, _, remedy in found)
    named = "" if opts.force_exclude else "name them on the command line or "
    return f"Not linted: {parts}; to lint them, {named}{remedies}."


def _counted(findings: list[Finding]) -> str:
    """"3 errors", or "3 errors and 2 warnings" where recompile warnings (DYN2xx) or infos are
    among them: a run of warnings only does not read as errors."""
    from dynalint.lint.catalog import SEVERITIES  # not the rules: a warm run loads no libcst

    counts: dict = {}
    for f in findings:
        level = SEVERITIES.get(f.code, "error")
        counts[level] = counts.get(level, 0) + 1
    parts = [f"{counts[level]} {level}{'s' if counts[level] != 1 else ''}"
             for level in ("error", "warning", "info") if counts.get(level)]
    if not parts:
        return "0 errors"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _summary(findings: list[Finding], opts: CheckOptions, outcome, skipped: Optional[dict] = None) -> None:
    n = len(findings)
    fixed = len(outcome.fixed) if outcome is not None else 0
    lines = []
    if n == 0 and fixed == 0 and engine.LAST_LIVE_COUNT == 0:
        # A library used through plain functions (torchsde's `sdeint`) has no root of its own:
        # "All checks passed!" would read as a clean bill.
        lines.append("No compile region found (no nn.Module forward, @torch.compile or torch.compile(fn) in the "
                     "linted files): nothing was checked; name the functions users compile in `extra-roots` under "
                     "`[tool.dynalint]` of pyproject.toml (`extra-roots = [\"pkg.module.Class.method\"]`).")
    elif n == 0 and fixed == 0:
        lines.append("All checks passed!")
    else:
        if fixed:
            lines.append(f"Found {n + fixed} error{'s' if n + fixed != 1 else ''} ({fixed} fixed, {n} remaining).")
        else:
            lines.append(f"Found {_counted(findings)}.")
        # With --unsafe-fixes, `--fix` applies the unsafe ones too.
        safe = sum(1 for f in findings if f.fix is not None and (f.fix.applicability == "safe" or opts.unsafe_fixes))
        unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
        if safe and not opts.fix:
            lines.append(f"[*] {safe} fixable with the `--fix` option.")
        if unsafe and not opts.unsafe_fixes:
            lines.append(f"{unsafe} more fix{'es' if unsafe != 1 else ''} available with `--fix --unsafe-fixes`.")
    excluded = _excluded_summary(skipped or {}, opts)
    if excluded:
        lines.append(excluded)
    click.echo("\n".join(lines), err=False)


def _diff_summary(outcome, opts: CheckOptions) -> None:
    """`--diff` writes the diff to stdout; the counts go to stderr (as ruff does)."""
    n = len(outcome.fixed)
    left = len(outcome.remaining)
    more = 0 if opts.unsafe_fixes else sum(1 for f in outcome.remaining if f.fix is not None and f.fix.applicability == "unsafe")
    line = f"Would fix {n} error{'s' if n != 1 else ''} ({left} remaining)."
    if more:
        line += f" {more} more fix{'es' if more != 1 else ''} available with `--unsafe-fixes`."
    click.echo(line, err=True)

"""Lint a set of files: discover, analyze each file (in parallel, cached), decide compile regions
across files, then filter findings by region, selection and `# noqa`.

torch and user code are never imported here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from dynalint.config import Config
from dynalint.findings import Finding

# Unreadable / undecodable files are findings too, so a run names them and goes on.
IO_ERROR = "DYN002"


@dataclass
class SourceFile:
    path: Path
    display: str  # the name used in output
    module: str
    is_package: bool
    text: Optional[str] = None  # given directly (stdin, editors)


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    sources: dict[str, str] = field(default_factory=dict)  # display name -> text, when kept


def module_name_for(path: Path, src_roots: Iterable[Path] = ()) -> tuple[str, bool]:
    """Dotted module name as Python would import it: climb while the folder is a package."""
    path = path.resolve()
    is_package = path.name == "__init__.py"
    for root in src_roots:
        try:
            rel = path.relative_to(root.resolve())
        except ValueError:
            continue
        parts = list(rel.with_suffix("").parts)
        if is_package:
            parts = parts[:-1]
        return ".".join(parts) or path.parent.name, is_package
    parts = [] if is_package else [path.stem]
    d = path.parent
    while (d / "__init__.py").is_file() and d.parent != d:
        parts.insert(0, d.name)
        d = d.parent
    if not parts:
        parts = [path.parent.name]
    return ".".join(parts), is_package


def read_source(path: Path) -> str:
    """Read a Python file honouring a PEP 263 coding cookie and a UTF-8 BOM."""
    import io
    import tokenize

    with open(path, "rb") as fh:
        raw = fh.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    text = raw.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _read_failure(display: str, module: str, exc: Exception) -> dict:
    from dynalint.lint.analyzer import FileSummary

    reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
    summary = FileSummary(filename=display, module=module)
    summary.findings.append(Finding(IO_ERROR, f"cannot read file: {reason}", display, 1, 1, 1, 1))
    return summary.to_cache()


def _cache_key(cache, item: tuple, text: str) -> str:
    display, _path, module, is_package, _text, compiling_fns, _cache_dir = item[:7]
    facts = item[7] if len(item) > 7 else None
    return cache.key(text, display, module, is_package, (compiling_fns, facts) if facts else compiling_fns)


def _analyze_one(args: tuple) -> tuple[str, dict]:
    """Worker: returns (display, summary-as-dict). Runs in a child process for big runs."""
    import gc

    from dynalint.lint.analyzer import AnalyzerOptions, analyze_source

    display, path, module, is_package, text, compiling_fns, cache_dir = args[:7]
    facts = args[7] if len(args) > 7 else None  # what other files tell about this one (lint/hints.py)
    cache = None
    if cache_dir is not None:
        from dynalint.cache import Cache

        cache = Cache(Path(cache_dir))
    if text is None:
        try:
            text = read_source(Path(path))
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            return display, _read_failure(display, module, exc)
    key = None
    if cache is not None:
        key = _cache_key(cache, args, text)
        hit = cache.get(key)
        if hit is not None:
            return display, hit
    options = AnalyzerOptions(is_compiling_functions=frozenset(compiling_fns))
    if facts:
        options.external_hints = facts["hints"]
        options.external_returns = frozenset(facts["returns"])
    # A parsed file is a tree of acyclic objects freed by reference counting: the cycle collector
    # only rescans them while they live, so it stays off for the file's analysis.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        summary = analyze_source(text, display, module, is_package, options)
        data = summary.to_cache()
    finally:
        if was_enabled:
            gc.enable()
    if cache is not None and key is not None:
        cache.put(key, data)
    return display, data


def _cached_results(work: list[tuple], cache_dir: Optional[Path]) -> tuple[dict[str, dict], list[tuple]]:
    """Cache hits looked up here, in the calling process (a warm run starts no worker); the
    misses come back with their text already read, so workers do not read them again."""
    if cache_dir is None:
        return {}, work
    from dynalint.cache import Cache

    cache = Cache(Path(cache_dir))
    hits: dict[str, dict] = {}
    misses: list[tuple] = []
    for item in work:
        display, path, module, _, text = item[:5]
        if text is None:
            try:
                text = read_source(Path(path))
            except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
                hits[display] = _read_failure(display, module, exc)
                continue
        data = cache.get(_cache_key(cache, item, text))
        if data is not None:
            hits[display] = data
        else:
            misses.append(item[:4] + (text,) + item[5:])
    return hits, misses


def _worker_start() -> None:
    """What a worker inherits (modules, rule tables) is never garbage: keep it out of the
    worker's collections, so they only look at the objects of the file at hand."""
    import gc

    gc.freeze()


class _Runner:
    """Runs `_analyze_one` over work items: in this process for a few files, else in a pool of
    forked workers that stays up for the cross-file rounds of the same run."""

    def __init__(self, jobs: int):
        self.jobs = jobs or os.cpu_count() or 1
        self.pool = None

    def __enter__(self) -> "_Runner":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def _executor(self):
        if self.pool is None:
            import concurrent.futures as cf
            import multiprocessing as mp

            import dynalint.lint.analyzer  # noqa: F401  (imported once here, shared by the forks)
            import dynalint.lint.rules  # noqa: F401

            ctx = mp.get_context("fork") if hasattr(os, "fork") else None
            self.pool = cf.ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx, initializer=_worker_start)
        return self.pool

    def run(self, work: list[tuple], progress: Optional[Callable[[int, int], None]] = None, done: int = 0, total: int = 0):
        """Yields (display, data) in the order of `work`."""
        total = total or len(work)
        if self.jobs > 1 and len(work) >= 8:
            # Small chunks keep both workers busy to the end (file sizes vary a hundredfold).
            chunk = max(1, min(8, len(work) // (self.jobs * 16)))
            results = self._executor().map(_analyze_one, work, chunksize=chunk)
        else:
            results = map(_analyze_one, work)
        for i, (display, data) in enumerate(results, start=done + 1):
            if progress:
                progress(i, total)
            yield display, data


def analyze_files(
    files: list[SourceFile],
    config: Config,
    jobs: int = 0,
    cache_dir: Optional[Path] = None,
    progress: Optional[Callable[[int, int], None]] = None,
):
    from dynalint.lint.analyzer import FileSummary

    compiling = tuple(config.is_compiling_functions)
    cache_arg = str(cache_dir) if cache_dir else None
    work = [(f.display, str(f.path), f.module, f.is_package, f.text, compiling, cache_arg) for f in files]
    results, misses = _cached_results(work, cache_dir)
    if progress and results:
        progress(len(results), len(work))
    with _Runner(jobs) as runner:
        for display, data in runner.run(misses, progress, done=len(results), total=len(work)):
            results[display] = data
        summaries = [FileSummary.from_cache(results[f.display]) for f in files]
        return _apply_external_hints(summaries, work, runner, cache_dir)


def _apply_external_hints(summaries: list, work: list, runner: "_Runner", cache_dir: Optional[Path] = None, rounds: int = 3) -> list:
    """Analyse again the files that learn from other files: tensors passed to their functions,
    tensors returned by the functions they import; a few rounds cover helpers calling helpers.
    Each round's facts come from the summaries at its start, so its files run in parallel."""
    from dynalint.lint.analyzer import FileSummary
    from dynalint.lint.hints import cross_file_facts

    item_of = {w[0]: w for w in work}
    index = {s.filename: i for i, s in enumerate(summaries)}
    used: dict[str, dict] = {}
    for _ in range(rounds):
        batch = []
        for filename, hints in sorted(cross_file_facts(summaries).items()):
            if used.get(filename) == hints or filename not in item_of:
                continue
            used[filename] = hints
            batch.append(item_of[filename] + (hints,))
        if not batch:
            break
        results, misses = _cached_results(batch, cache_dir)
        results.update(runner.run(misses))
        for item in batch:
            summaries[index[item[0]]] = FileSummary.from_cache(results[item[0]])
    return summaries


def select_findings(summaries, config: Config, extra_roots: Iterable[str] = ()) -> list[Finding]:
    """Phase 2 and 3: keep findings in reachable functions, enabled, not suppressed by noqa."""
    from dynalint.lint.regions import Project

    project = Project(summaries, extra_roots=tuple(config.extra_roots) + tuple(extra_roots))
    live = project.reachable()
    out: list[Finding] = []
    for s in summaries:
        for f in s.findings:
            if f.scope and f.scope not in live:
                continue
            if not config.is_enabled(f.code, f.filename):
                continue
            codes = s.noqa.get(f.row, False)
            if codes is None or (codes and f.code in codes):
                continue
            out.append(f)
    out.sort(key=Finding.sort_key)
    return out


def lint_files(files: list[SourceFile], config: Config, jobs: int = 0, cache_dir: Optional[Path] = None, progress=None) -> list[Finding]:
    summaries = analyze_files(files, config, jobs=jobs, cache_dir=cache_dir, progress=progress)
    return select_findings(summaries, config)


def lint_source(source: str, filename: str = "<stdin>", config: Optional[Config] = None, context: Iterable[SourceFile] = ()) -> list[Finding]:
    """Lint one in-memory source (editors, tests). `context` files help resolve bases and calls."""
    config = config or Config()
    path = Path(filename)
    module, is_package = module_name_for(path, [Path(s) for s in config.src]) if filename != "<stdin>" else ("__main__", False)
    target = SourceFile(path=path, display=filename, module=module, is_package=is_package, text=source)
    others = [f for f in context if f.display != filename]
    summaries = analyze_files([target, *others], config, jobs=1)
    return [f for f in select_findings(summaries, config) if f.filename == filename]

"""Lint a set of files: discover, analyze each file (in parallel, cached), decide compile regions
across files, then filter findings by region, selection and `# noqa`.

torch and user code are never imported here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from dynalint.config import Config
from dynalint.findings import Finding
from dynalint.lint.options import pattern_may_name

if TYPE_CHECKING:
    from dynalint.run.cache import RunCache

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
    path_str = os.fspath(path)
    if os.path.islink(path_str):
        try:
            path_str = str(Path(path_str).resolve())
        except (OSError, RuntimeError):  # a symlink loop: reading it reports it (DYN002)
            pass
    folder, name = os.path.split(os.path.abspath(path_str))
    is_package = name == "__init__.py"
    parts, fallback = _folder_module_parts(folder, tuple(str(r) for r in src_roots))
    if not is_package:
        parts = parts + (name[:-3] if name.endswith(".py") else name.rpartition(".")[0] or name,)
    return ".".join(parts) or fallback, is_package


@functools.lru_cache(maxsize=4096)
def _folder_module_parts(folder: str, src_roots: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """(dotted parts of a folder's modules, the name to use when there are none), once per folder."""
    resolved = _resolved_dir(folder)
    for root in src_roots:
        try:
            rel = resolved.relative_to(_resolved_dir(root))
        except ValueError:
            continue
        return rel.parts, resolved.name
    return _package_parts(str(resolved)), resolved.name


# A run names thousands of files in a few hundred folders: resolve and climb each folder once.
@functools.lru_cache(maxsize=4096)
def _resolved_dir(directory: str) -> Path:
    try:
        return Path(directory).resolve()
    except (OSError, RuntimeError):  # a symlink loop in the folder's path
        return Path(os.path.abspath(directory))


@functools.lru_cache(maxsize=4096)
def _package_parts(directory: str) -> tuple[str, ...]:
    """Names of the packages enclosing a (resolved) folder, outermost first. A folder without
    `__init__.py` inside a package is a namespace package (PEP 420) and counts: facenet-pytorch's
    `models/utils/detect_face.py` is `facenet_pytorch.models.utils.detect_face`, imported as
    `from .utils.detect_face import detect_face` by `facenet_pytorch.models.mtcnn`."""
    d = Path(directory)
    if d.parent == d:
        return ()
    above = _package_parts(str(d.parent))
    if (d / "__init__.py").is_file() or above:
        return above + (d.name,)
    return ()


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
    from dynalint.lint.summary import FileSummary

    reason = getattr(exc, "strerror", None) or one_line_reason(exc)
    summary = FileSummary(filename=display, module=module)
    summary.findings.append(Finding(IO_ERROR, f"cannot read file: {reason}", display, 1, 1, 1, 1))
    return summary.to_cache()


def _analysis_failure(display: str, module: str, exc: BaseException) -> dict:
    """DYN002 for a file whose analysis failed inside dynalint (never cached: a later version
    may analyse it)."""
    from dynalint.lint.summary import FileSummary

    summary = FileSummary(filename=display, module=module)
    message = f"cannot analyse file: internal error: {one_line_reason(exc)}"
    summary.findings.append(Finding(IO_ERROR, message, display, 1, 1, 1, 1))
    return summary.to_cache()


def one_line_reason(exc: BaseException, limit: int = 200) -> str:
    """`Type: first line of the message`, short, and safe for any exception (formatting one
    that holds a deep structure may itself fail)."""
    try:
        text = str(exc)
    except Exception:  # RecursionError from a deep repr, or a broken __str__
        text = ""
    first = text.strip().splitlines()[0] if text.strip() else ""
    if len(first) > limit:
        first = first[: limit - 3] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@dataclass(frozen=True)
class WorkItem:
    """What `_analyze_one` takes for a file (picklable for workers)."""

    display: str
    path: str
    module: str
    is_package: bool
    text: Optional[str]  # None: read from `path` when needed
    compiling_fns: tuple
    cache_dir: Optional[str]
    # What other files tell about this one (lint/hints.py), given by the cross-file rounds and by
    # re-analyses with last run's facts; None for a first-pass item.
    facts: Optional[dict] = None
    # `extra-roots` of the configuration: such a function's parameters are presumed tensors, as
    # a `@torch.compile` function's are.
    extra_roots: tuple = ()


def _cache_key(cache, item: WorkItem, text: str) -> str:
    facts = item.facts
    told = (item.compiling_fns, ("extra-roots", item.extra_roots)) if item.extra_roots else item.compiling_fns
    return cache.key(text, item.display, item.module, item.is_package, (told, facts) if facts else told)


def _work_item(f: SourceFile, compiling_fns: tuple, cache_dir: Optional[str], extra_roots: tuple = ()) -> WorkItem:
    """A first-pass work item for a file; the cross-file rounds give copies the facts other files
    tell about it."""
    # Only the roots that may name a function of this file: a change to the others keeps its key.
    own = tuple(r for r in extra_roots if r.startswith(f"{f.module}.") or pattern_may_name(r, f.module))
    return WorkItem(f.display, str(f.path), f.module, f.is_package, f.text, compiling_fns, cache_dir,
                    extra_roots=own)


def _analyze_one(args: WorkItem, interface_only: bool = False) -> tuple[str, dict]:
    """Worker: returns (display, summary-as-dict). Runs in a child process for big runs.
    `interface_only`: the caller reads only the summary's interface, so no rule runs (about half
    of an analysis: rules, fixes, positions) and the entry, which lacks the findings, is cached
    under a key of its own."""
    import dynalint.fixes.providers  # noqa: F401  (the fixes rules offer; lint never imports them)
    from dynalint.lint.analyzer import AnalyzerOptions, analyze_source
    from dynalint.lint.summary import interface_fingerprint

    display, path, module, is_package, text = args.display, args.path, args.module, args.is_package, args.text
    compiling_fns, cache_dir = args.compiling_fns, args.cache_dir
    facts = args.facts  # what other files tell about this one (lint/hints.py)
    cache = None
    if cache_dir is not None:
        from dynalint.run.cache import Cache

        cache = Cache(Path(cache_dir))
    if text is None:
        try:
            text = read_source(Path(path))
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            return display, _read_failure(display, module, exc)
    key = None
    if cache is not None:
        key = _cache_key(cache, args, text)
        hit = cache.get(key) or (cache.get(key + INTERFACE_ONLY) if interface_only else None)
        if hit is not None:
            return display, hit
    options = AnalyzerOptions(is_compiling_functions=frozenset(compiling_fns), extra_roots=frozenset(args.extra_roots))
    if interface_only:
        options.rule_codes = frozenset()
    if facts:
        options.external_hints = facts["hints"]
        options.external_returns = frozenset(facts["returns"])
        options.external_rnn_types = frozenset(facts.get("rnn_types", ()))
        if facts.get("passthrough"):
            options.external_passthrough = {
                name: tuple(tuple(slot) for slot in slots) for name, slots in facts["passthrough"].items()
            }
    # A parsed file is a tree of acyclic objects freed by reference counting: the cycle collector
    # only rescans them while they live, so it stays off for the file's analysis.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        summary = analyze_source(text, display, module, is_package, options)
        summary.facts = facts or None
        data = summary.to_cache()
        data["interface"] = interface_fingerprint(data)  # what dynalint.run.incremental compares
    except Exception as exc:  # a bug met by one file is that file's finding; the run goes on
        return display, _analysis_failure(display, module, exc)
    finally:
        if was_enabled:
            gc.enable()
    if cache is not None and key is not None:
        # An interface-only entry lacks findings: kept apart, for `dynalint.run.incremental`.
        cache.put(key + INTERFACE_ONLY if interface_only else key, data)
    return display, data


# Suffix of the cache key of an interface-only analysis (`_analyze_one`).
INTERFACE_ONLY = ".i"


def _cached_results(
    work: list[WorkItem], run_cache: Optional[RunCache], known_keys: Optional[dict[str, str]] = None
) -> tuple[dict[str, dict], list[WorkItem], dict[str, str]]:
    """Cache hits looked up here, in the calling process (a warm run starts no worker); the
    misses come back with their text already read, so workers do not read them again; the keys
    of all that could be read come too (display -> key). Items in `work` get their text filled
    in too, for the cross-file rounds of the same run. `known_keys`: keys the caller already
    computed for unchanged files (`dynalint.run.incremental`); their hits need no read."""
    if run_cache is None:
        return {}, work, {}
    hits: dict[str, dict] = {}
    misses: list[WorkItem] = []
    keys: dict[str, str] = {}
    for i, item in enumerate(work):
        display, path, module, text = item.display, item.path, item.module, item.text
        first_pass = item.facts is None
        known = known_keys.get(display) if known_keys and text is None and first_pass else None
        data = run_cache.get(known) if known is not None else None
        if data is not None:
            keys[display] = known
            hits[display] = data
            continue
        if text is None:
            try:
                text = read_source(Path(path))
            except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
                hits[display] = _read_failure(display, module, exc)
                continue
            item = work[i] = replace(item, text=text)
        key = keys[display] = _cache_key(run_cache.cache, item, text)
        data = run_cache.get(key)
        if data is not None:
            hits[display] = data
        else:
            misses.append(item)
    return hits, misses, keys


def _analyze_missing(runner: "_Runner", misses: list[WorkItem], keys: dict[str, str], run_cache: Optional[RunCache], progress=None, done: int = 0, total: int = 0):
    """(display, data) for each miss, analysed by the runner; recorded for the next pack."""
    for display, data in runner.run(_largest_first(misses), progress, done=done, total=total):
        if run_cache is not None and display in keys:
            run_cache.record(keys[display], data)
        yield display, data


def _worker_start() -> None:
    """What a worker inherits (modules, rule tables) is never garbage: keep it out of the
    worker's collections, so they only look at the objects of the file at hand. The parent
    forked it with the collector paused (`_gc_paused`): between files it runs again."""
    gc.freeze()
    gc.enable()


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

            import dynalint.fixes.providers  # noqa: F401  (imported once here, shared by the forks)
            import dynalint.lint.analyzer  # noqa: F401
            import dynalint.lint.rules  # noqa: F401

            ctx = mp.get_context("fork") if hasattr(os, "fork") else None
            self.pool = cf.ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx, initializer=_worker_start)
        return self.pool

    def run(self, work: list[WorkItem], progress: Optional[Callable[[int, int], None]] = None, done: int = 0, total: int = 0):
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


def _largest_first(work: list[WorkItem]) -> list[WorkItem]:
    """Big files first, so that no worker is left alone with a big one at the end."""

    def size(item: WorkItem) -> int:
        if item.text is not None:
            return len(item.text)
        try:
            return os.stat(item.path).st_size
        except OSError:
            return 0

    return sorted(work, key=size, reverse=True) if len(work) > 1 else work


def analyze_files(
    files: list[SourceFile],
    config: Config,
    jobs: int = 0,
    cache_dir: Optional[Path] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    trace: Optional[dict] = None,
    known_keys: Optional[dict[str, str]] = None,
):
    """Summaries of `files` after the cross-file rounds. `trace`, when given, is filled with
    what `dynalint.run.incremental` keeps to redo a later run file by file: each file's first-pass
    key and entry, and for each later round the facts it got, its key and entry; the rounds then
    run even when the run record could skip them. `known_keys`: first-pass keys of files known
    to be unchanged (display -> key), used instead of reading and hashing them."""
    from dynalint.lint import target
    from dynalint.lint.regions import Visited
    from dynalint.lint.summary import FileSummary

    target.configure(config.target_torch)
    target.configure_floor(config.min_torch)  # before any worker is forked
    compiling = tuple(config.is_compiling_functions)
    cache_arg = str(cache_dir) if cache_dir else None
    work = [_work_item(f, compiling, cache_arg, tuple(config.extra_roots)) for f in files]
    _resolved_dir.cache_clear()  # the memos serve one run's file list; a long-lived process
    _package_parts.cache_clear()  # (the language server) must see new folders and packages
    _folder_module_parts.cache_clear()
    with _gc_paused():
        from dynalint.run.cache import RunCache

        run_cache = RunCache(cache_dir, [w.display for w in work]) if cache_dir is not None else None
        results, misses, keys = _cached_results(work, run_cache, known_keys)
    if progress and results:
        progress(len(results), len(work))
    # Every file's first-pass key known: the cross-file part of the run is a function of them.
    record = _RunRecord(run_cache, keys) if run_cache is not None and len(keys) == len(work) else None
    final_keys = dict(keys)
    project = None
    with _Runner(jobs) as runner:
        results.update(_analyze_missing(runner, misses, keys, run_cache, progress, len(results), len(work)))
        with _gc_paused():
            summaries = record.summaries() if record is not None and not misses and trace is None else None
            if summaries is None:
                if trace is not None:
                    trace.update(keys=dict(keys), first=dict(results), rounds={})
                summaries = [FileSummary.from_cache(results[f.display]) for f in files]
                rounds = trace["rounds"] if trace is not None else None
                visited = trace.setdefault("visited", Visited()) if trace is not None else None
                summaries, project = _apply_external_hints(
                    summaries, work, runner, run_cache, final_keys, trace=rounds, visited=visited, progress=progress
                )
                if record is not None:
                    record.store_final([final_keys[f.display] for f in files])
    if run_cache is not None:
        run_cache.save()
    out = record.attach(summaries) if record is not None else Summaries(summaries)
    out.project = project
    return out


class Summaries(list):
    """The summaries of a run, with the record (cached runs) that lets `select_findings` reuse
    the compile regions the last identical run computed, and the project its cross-file rounds
    resolved names with (None when they did not run), which the reachability walk reuses."""

    record: Optional["_RunRecord"] = None
    project = None


class _RunRecord:
    """What one set of file keys (contents, names, options: every input of the per-file phase)
    led to last time: which entry each file ended with after the cross-file rounds, and the
    functions reachable from compile roots (per set of extra roots). Same keys, same results:
    a warm run with nothing changed skips the rounds and the reachability walk; any change
    makes other keys, so the record is never stale. Kept in `runs/` of the cache, one small file
    per key set, written atomically."""

    def __init__(self, run_cache: RunCache, keys: dict[str, str]):
        import hashlib

        self.run_cache = run_cache
        digest = hashlib.sha256()
        for display in sorted(keys):
            digest.update(f"{display}\0{keys[display]}\0".encode("utf-8", "surrogatepass"))
        self.name = digest.hexdigest()[:32]
        self.data = run_cache.cache.load_record(self.name)
        self.members: tuple = ()

    def summaries(self) -> Optional[list]:
        from dynalint.lint.summary import FileSummary

        final = self.data.get("final")
        if not final:
            return None
        entries = [self.run_cache.get(k) for k in final]
        if any(e is None for e in entries):
            return None
        return [FileSummary.from_cache(e) for e in entries]

    def store_final(self, final_keys: list[str]) -> None:
        self.data = {"final": final_keys, "live": {}}
        self.run_cache.cache.save_record(self.name, self.data)

    def attach(self, summaries: list) -> Summaries:
        out = Summaries(summaries)
        out.record = self
        self.members = tuple(summaries)
        return out

    def live(self, summaries: list, roots: tuple) -> Optional[set]:
        if len(summaries) != len(self.members) or any(a is not b for a, b in zip(summaries, self.members)):
            return None  # not the list this record was made for
        found = self.data.get("live", {}).get(repr(roots))
        return set(found) if found is not None else None

    def store_live(self, roots: tuple, live: set) -> None:
        self.data.setdefault("live", {})[repr(roots)] = sorted(live)
        self.run_cache.cache.save_record(self.name, self.data)


# Set by one-shot commands (`dynalint check`): objects alive after loading summaries stay alive
# until the process ends, so they are moved out of the collector's view (`gc.freeze`) instead
# of being scanned when it comes back on. A long-lived process (the language server) keeps this
# off, so that everything it drops can still be collected.
FREEZE_AFTER_LOAD = False


@contextlib.contextmanager
def _gc_paused():
    """Summaries are millions of small acyclic objects (dicts, lists, strings) made in a burst:
    with the cycle collector on, loading a warm tree's cache spent most of its time in it.
    Never around analyses: those may leave cycles for the collector."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if FREEZE_AFTER_LOAD:
            gc.freeze()  # else the first allocation after enabling scans them all once
        if was_enabled:
            gc.enable()


def _apply_external_hints(
    summaries: list,
    work: list,
    runner: "_Runner",
    run_cache: Optional[RunCache] = None,
    final_keys: Optional[dict] = None,
    rounds: int = 3,
    trace: Optional[dict] = None,
    visited: Optional[set] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> list:
    """Analyse again the files that learn from other files: tensors passed to their functions,
    tensors returned by the functions they import; a few rounds cover helpers calling helpers.
    Each round's facts come from the summaries at its start, so its files run in parallel.
    `trace` gets, per file analysed again, [(facts, key, entry), ...] in round order; `visited`,
    every name the rounds' resolution looked at. Returns the summaries and the project of the
    last round when it still serves them (`Project.replace`), for the reachability walk."""
    from dynalint.lint.summary import FileSummary
    from dynalint.lint.hints import cross_file_facts
    from dynalint.lint.regions import Project

    item_of = {w.display: w for w in work}
    index = {s.filename: i for i, s in enumerate(summaries)}
    used: dict[str, dict] = {}
    project: Optional[Project] = None
    for round_number in range(1, rounds + 1):
        batch = []
        with _gc_paused():
            if project is None:
                project = Project(summaries, visited=visited)
            facts = cross_file_facts(summaries, visited, project=project)
        for filename, hints in sorted(facts.items()):
            if used.get(filename) == hints or filename not in item_of:
                continue
            used[filename] = hints
            batch.append(replace(item_of[filename], facts=hints))
        if not batch:
            break
        with _gc_paused():
            results, misses, keys = _cached_results(batch, run_cache)
        if final_keys is not None:
            final_keys.update(keys)
        if progress is not None and hasattr(progress, "phase"):
            # A cold run on a big tree analyses hundreds of files again here: say so.
            progress.phase(f"dynalint: cross-file round {round_number}")
        results.update(_analyze_missing(runner, misses, keys, run_cache, progress if misses else None))
        with _gc_paused():
            for item in batch:
                i = index[item.display]
                new = FileSummary.from_cache(results[item.display])
                if project is not None and not project.replace(summaries[i], new):
                    project = None  # names changed: the next round builds a project anew
                summaries[i] = new
                if trace is not None:
                    trace.setdefault(item.display, []).append((item.facts, keys.get(item.display), results[item.display]))
    return summaries, project


# How many functions the last whole-tree phase 2 of this process found in compile regions (None:
# none ran); `dynalint check` says so when a run checked nothing at all.
LAST_LIVE_COUNT: Optional[int] = None
# The `extra-roots` entries that named no function or module class of the linted files, in the
# last run that resolved them (None: not resolved in this process, e.g. a warm run's record).
LAST_UNRESOLVED_ROOTS: Optional[list] = None


def live_functions(summaries, config: Config, extra_roots: Iterable[str] = (), walk: Optional[dict] = None) -> set[str]:
    """Phase 2: the functions reachable from compile roots (the run record's, when it has them).
    `walk`: always walk, and fill it as `Project.reachable` does, plus the project ("project")."""
    from dynalint.lint.regions import Project

    roots = tuple(config.extra_roots) + tuple(extra_roots)
    record = getattr(summaries, "record", None)
    live = record.live(summaries, roots) if record is not None and walk is None else None
    if live is None:
        visited = walk.get("visited") if walk is not None else None
        project = getattr(summaries, "project", None)
        if project is None or project.visited is not visited or not project.serves(summaries):
            project = Project(summaries, visited=visited)
        project.extra_roots = list(roots)
        live = project.reachable(walk)
        global LAST_UNRESOLVED_ROOTS
        LAST_UNRESOLVED_ROOTS = list(project.unresolved_roots)
        if walk is not None:
            walk["project"] = project
        if record is not None and record.members:
            record.store_live(roots, live)
    global LAST_LIVE_COUNT
    # Counted only where some file uses torch: a run over plain Python has nothing to compile.
    uses_torch = live or any(v == "torch" or v.startswith("torch.") for s in summaries for v in s.imports.values())
    LAST_LIVE_COUNT = len(live) if uses_torch else None
    return live


def select_findings(summaries, config: Config, extra_roots: Iterable[str] = (), live: Optional[set] = None) -> list[Finding]:
    """Phase 2 and 3: keep findings in reachable functions (`live`, else computed), enabled, not
    suppressed by noqa."""
    if live is None:
        live = live_functions(summaries, config, extra_roots)
    return enabled_findings(summaries, config, live)


def enabled_findings(summaries, config: Config, live: Optional[set] = None) -> list[Finding]:
    """Phase 3: findings enabled for their file and not suppressed by noqa, sorted; with `live`,
    only those in live functions (else the summaries hold only such findings)."""
    enabled: dict[tuple[str, str], bool] = {}  # (code, file): looking up a file's config resolves paths
    out: list[Finding] = []
    for s in summaries:
        for f in s.findings:
            if live is not None and f.scope and f.scope not in live:
                continue
            key = (f.code, f.filename)
            if key not in enabled:
                enabled[key] = config.is_enabled(f.code, f.filename)
            if not enabled[key]:
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


def analyze_with_facts(file: SourceFile, config: Config, facts: Optional[dict] = None):
    """One file's summary, analysed with what other files told about it in a whole-project run
    (`lint/hints.py`): how `--fix` re-lints a file it changed without re-analysing the rest."""
    from dynalint.lint.summary import FileSummary

    item = _work_item(file, tuple(config.is_compiling_functions), None, tuple(config.extra_roots))
    _display, data = _analyze_one(replace(item, facts=facts) if facts else item)
    return FileSummary.from_cache(data)


def lint_source(source: str, filename: str = "<stdin>", config: Optional[Config] = None, context: Iterable[SourceFile] = ()) -> list[Finding]:
    """Lint one in-memory source (editors, tests). `context` files help resolve bases and calls."""
    config = config or Config()
    path = Path(filename)
    module, is_package = module_name_for(path, [Path(s) for s in config.src]) if filename != "<stdin>" else ("__main__", False)
    target = SourceFile(path=path, display=filename, module=module, is_package=is_package, text=source)
    others = [f for f in context if f.display != filename]
    summaries = analyze_files([target, *others], config, jobs=1)
    return [f for f in select_findings(summaries, config) if f.filename == filename]

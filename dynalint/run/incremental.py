"""Re-lint a tree after a few files changed without redoing what crosses files.

Everything that crosses files (the cross-file facts of `lint/hints.py`, the compile regions of
`lint/regions.py`) reads only the *interface* of each file's summary: its imports, classes,
functions with their call edges, compile targets and call hints, never its findings or noqa
comments. So after a full run this module keeps, per set of linted files and options, a *state*:
each file's first-pass key, the facts it got in each later round with the key it ended with, a
fingerprint of the interface each of those analyses produced, the file's findings, and the
functions that were reachable.

The next run hashes every file whose size or modification time changed (or was too recent to
trust, as git treats "racily clean" files); a file whose key is unchanged keeps its findings.
A changed file is analysed again, alone and with the same facts as in each round last time (a
big file's analyses side by side in forked workers); if each analysis gives the interface it
gave last time, every other file's facts, analyses and reachability are the same as last time
by induction over the rounds, so only the changed file's findings are new.

An interface that changed may still change nothing that other files see: a new helper called
only from the file's own functions, a new import, calls between the file's functions. The
whole-tree run also keeps, per file, its entry points (live functions that are roots or called
from other files) with the functions of other files their calls reach, the resolved targets of
its live functions' calls, and the names under its module that resolution looked at
(`lint.regions.boundaries`, the ".res" state); `_local_change` proves such an edit local from
those and the file's new analyses alone, and walks the file's new calls from its entry points
for its live functions. Otherwise (a class or base changed, a call of another file's function
was added, a file appeared), the run falls back to the whole-tree path, which writes a new
state.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Optional

from dynalint.config import Config
from dynalint.findings import Finding
from dynalint.lint.regions import ClassResolver
from dynalint.lint.summary import ClassInfo, interface_fingerprint

FORMAT = "s5"
# More changed files than this: the whole-tree path (its rounds run in parallel workers).
MAX_CHANGED = 16
# A file modified this recently (seconds) may change again within the same timestamp tick
# without changing its size: its stat is not trusted, its text is hashed.
RACY_SECONDS = 2.0


def _stat(path: str) -> Optional[list]:
    """[mtime_ns, size, inode] when they may stand for the file's content next time, else None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_mtime_ns > time.time_ns() - RACY_SECONDS * 1e9:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _local(entry: dict, live: set) -> list:
    """What output needs of an entry: its findings in live functions, noqa lines, facts."""
    findings = [f for f in entry["findings"] if not f["scope"] or f["scope"] in live]
    return [findings, entry["noqa"], entry.get("facts")]


def _state_name(cache, names: list[str], options: tuple) -> str:
    return f"{cache.pack_name(names)}-{hashlib.sha256(repr(options).encode()).hexdigest()[:8]}"


def lint_tree(
    files: list,
    config: Config,
    jobs: int = 0,
    cache_dir: Optional[Path] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> list[Finding]:
    """Findings for `files`, as `select_findings(analyze_files(...))` gives them, redoing only the
    changed files when the last run's state allows it."""
    from dynalint.run import engine
    from dynalint.lint import target

    if cache_dir is None:
        return engine.select_findings(engine.analyze_files(files, config, jobs=jobs, progress=progress), config)
    from dynalint.run.cache import Cache

    target.configure(config.target_torch)
    target.configure_floor(config.min_torch)
    cache = Cache(Path(cache_dir))
    compiling = tuple(config.is_compiling_functions)
    work = [engine._work_item(f, compiling, str(cache_dir), tuple(config.extra_roots)) for f in files]
    roots = repr(tuple(config.extra_roots))
    name = _state_name(cache, [w.display for w in work], (compiling, roots, target.target_text()))
    with engine._gc_paused():  # ~100,000 small acyclic objects
        state = cache.load_state(name)
    known_keys: dict[str, str] = {}  # of files found unchanged, for the whole-tree path
    if state.get("format") == FORMAT:
        found = _relint_changed(state, work, cache, config, name, known_keys, jobs)
        if found is not None:
            # The changed files kept their interfaces (else the whole-tree path ran): the same
            # functions are live as in the run that saved the state.
            engine.LAST_LIVE_COUNT = state.get("live_count")
            engine.LAST_UNRESOLVED_ROOTS = state.get("unresolved_roots")
            findings, changed = found
            if changed:
                cache.save_state(name, state)
            return findings
    stats = {w.display: _stat(w.path) for w in work}  # before the files are read: see _stat
    trace: dict = {}
    summaries = engine.analyze_files(
        files, config, jobs=jobs, cache_dir=Path(cache_dir), progress=progress, trace=trace, known_keys=known_keys
    )
    walk = {"visited": trace.get("visited", set())}  # the names the rounds looked at, and more
    # The walk and the states are acyclic containers, made in a burst (`engine._gc_paused`).
    with engine._gc_paused():
        live = engine.live_functions(summaries, config, walk=walk)
        new_state = _state_from_trace(trace, summaries, live, stats)
        if new_state is not None:
            # For the warm runs' summary: "No compile region found" when nothing was live.
            new_state["live_count"] = engine.LAST_LIVE_COUNT
            new_state["unresolved_roots"] = engine.LAST_UNRESOLVED_ROOTS
            # Three files, each written atomically, the state last: the run id pairs them, so
            # that a run reading the state of one concurrent run and the others of another
            # notices.
            live_in = {s.filename: [q for q in s.functions if q in live] for s in summaries}
            cache.save_state(name + ".live", {"run": new_state["run"], "files": live_in})
            res = _boundaries_state(new_state["run"], summaries, walk, live, config.extra_roots)
            cache.save_state(name + ".res", res)
            cache.save_state(name, new_state)
    return engine.select_findings(summaries, config, live=live)


def _boundaries_state(run: str, summaries: list, walk: dict, live: set, extra_roots: Iterable[str] = ()) -> dict:
    """Per file, what proves an edit of its interface local (`lint.regions.boundaries`), each
    file's part marshalled on its own: a run loads the whole, then decodes the changed files'."""
    from dynalint.lint.regions import boundaries, called_names

    per_file = boundaries(walk["project"], live, walk, walk["visited"])
    return {
        "run": run,
        "tops": sorted({s.module.split(".")[0] for s in summaries}),
        "entry_points": sorted(e for b in per_file.values() for e in b["entries"]),
        "called_names": sorted(called_names(summaries, extra_roots)),
        "files": {f: marshal.dumps(b) for f, b in per_file.items()},
    }


def _state_from_trace(trace: dict, summaries: list, live: set, stats: dict) -> Optional[dict]:
    keys, first, rounds = trace.get("keys"), trace.get("first"), trace.get("rounds")
    if keys is None or len(keys) != len(summaries):
        return None  # an unreadable file, or the run record served the summaries: no state
    files: dict[str, list] = {}
    for display, key in keys.items():
        chain = [(facts, k, interface_fingerprint(entry)) for facts, k, entry in rounds.get(display, [])]
        if any(k is None for _, k, _ in chain):
            return None
        final = rounds[display][-1][2] if chain else first[display]
        files[display] = [key, interface_fingerprint(first[display]), chain, _local(final, live), stats.get(display)]
    return {"format": FORMAT, "run": os.urandom(8).hex(), "files": files}


def _relint_changed(state: dict, work: list, cache, config: Config, name: str, known_keys: dict, jobs: int = 0):
    """(findings, state changed) when the changed files kept their interfaces, else None.
    Fills `known_keys` with the keys of the files whose stat says they did not change."""
    from dynalint.run import engine

    known = state["files"]
    if len(known) != len(work):
        return None
    changed = []
    stats_changed = False
    for item in work:
        entry = known.get(item.display)
        if entry is None:
            return None
        path, text = item.path, item.text
        stat = _stat(path) if text is None else None
        if stat is not None and stat == entry[4]:
            known_keys[item.display] = entry[0]
            continue  # same size, time and inode as when its key was computed
        entry[4] = stat
        if text is None:
            try:
                text = engine.read_source(Path(path))
            except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
                return None  # the whole-tree path reports it
            item = replace(item, text=text)
        key = engine._cache_key(cache, item, text)
        if key != entry[0]:
            changed.append((item, key))
        elif stat is not None:
            stats_changed = True
    if len(changed) > MAX_CHANGED:
        return None
    live_in = {}  # live functions of each file, from the same run as the state
    if changed:
        live_file = cache.load_state(name + ".live")
        if live_file.get("run") != state.get("run"):
            return None
        live_in = live_file["files"]
    res = None  # what proves a changed interface local: loaded for the first one
    modules = {w.module for w in work}
    for item, key in changed:
        if item.display not in live_in:
            return None
        entry = known[item.display]
        # The file alone, then with the facts of each cross-file round it took part in; only the
        # last analysis's findings are kept, so the ones before it run no rules.
        analyses = [item] + [replace(item, facts=facts) for facts, _old_key, _fp in entry[2]]
        expected = [entry[1]] + [fingerprint for _facts, _old_key, fingerprint in entry[2]]
        datas = list(_analyze_all(analyses, jobs))
        fingerprints = [interface_fingerprint(d) for d in datas]
        live = set(live_in[item.display])
        if fingerprints != expected:
            if res is None:
                res = cache.load_state(name + ".res")
                if res.get("run") != state.get("run") or "files" not in res:
                    return None
            blob = res["files"].get(item.display)
            if blob is None:
                return None
            boundary = marshal.loads(blob)
            old_keys = [entry[0]] + [old_key for _facts, old_key, _fp in entry[2]]
            live = _local_change(item.module, boundary, old_keys, datas, cache, res, modules)
            if live is None:
                return None
            res["files"][item.display] = marshal.dumps(boundary)  # names the new calls look at
            live_in[item.display] = sorted(live)
        chain = [
            (facts, engine._cache_key(cache, replace(item, facts=facts), item.text), fingerprint)
            for (facts, _old_key, _fp), fingerprint in zip(entry[2], fingerprints[1:])
        ]
        known[item.display] = [key, fingerprints[0], chain, _local(datas[-1], live), entry[4]]
    if res is not None:
        # Interfaces changed: a new run id for the three files, the state (saved by the caller)
        # last, so that a run that reads them while they are written sees a mismatch.
        state["run"] = res["run"] = os.urandom(8).hex()
        cache.save_state(name + ".live", {"run": state["run"], "files": live_in})
        cache.save_state(name + ".res", res)
    with engine._gc_paused():
        summaries = [_local_summary(item, known[item.display][3]) for item in work]
    return engine.enabled_findings(summaries, config), bool(changed) or stats_changed  # all live


def _local_change(
    module: str, boundary: dict, old_keys: list[str], datas: list[dict], cache, res: dict, modules: set
) -> Optional[set]:
    """The file's live functions when its changed interface provably changes nothing in other
    files (see `lint.regions.boundaries`), else None. `datas`: its new analyses (alone, then with
    each round's facts), `old_keys`: the cache keys of the analyses they replace.

    Allowed, in every analysis: new or removed functions under names no resolution looked at
    (not roots), other calls made inside the file, and new imports under such names. Not
    allowed: a changed class or compile target; tensors passed to, or calls of, other files'
    functions that it did not make before (its facts would change); a changed return kind of a
    function other files may call. Then, walking the new calls from each entry point of the
    file, the calls that leave the file must still reach what they reached before, and
    otherwise only entry points of other files (`res["entry_points"]`, from the last whole-tree
    run, whose own edits keep them so): then every other file keeps its live functions."""
    from dynalint.run import engine
    from dynalint.lint.regions import memo_key, outside_base_is_module, referenced_names, walk_within

    visited = set(boundary["visited"])
    foreign = set(boundary.get("foreign", visited))  # a state before "foreign": all of them
    prefix = module + "."
    tops = set(res["tops"])
    # Classes added or changed by edits since the last whole-tree run (`_new_classes`): with
    # bases outside the linted files, or (subclasses) with some base a class of this file.
    own_classes = set(boundary.get("own_classes", ()))
    subclasses = set(boundary.get("local_subclasses", ()))
    called = set(res["called_names"]) if "called_names" in res else None  # None: a state before them
    versions = []  # each analysis's classes, old and new, with a resolver within the file
    for old_key, new in zip(old_keys, datas):
        old = cache.get(old_key) or cache.get(old_key + engine.INTERFACE_ONLY)
        added = None if old is None else _new_classes(old["classes"], new["classes"], visited, tops, called)
        if added is None or not _same_outside(old, new, prefix, visited, tops, foreign):
            return None
        own_classes |= added[0]
        subclasses |= added[1]
        versions += [_FileClasses(old, modules), _FileClasses(new, modules)]
    if not _exits_known(boundary, old):
        return None
    own_classes -= subclasses  # a class that subclassed one of the file's in some version
    final = datas[-1]["functions"]
    classes = datas[-1]["classes"]
    memo = boundary["memo"]
    # Subclasses of the file's classes: their methods resolve within the file (`_FileClasses`).
    # They change no other resolution while no live method of a class above them calls through
    # self a method name they define, and they add no root but their own forward.
    try:
        for version in versions:
            for cls in subclasses & version.classes.keys():
                above = version.mro(cls)[1:]
                if own_classes.intersection(above):
                    return None  # an own class's calls are resolved as if it had no subclass
                names = version.classes[cls].methods
                if any(memo_key(c, ("self", m)) in memo for c in above for m in names):
                    return None
                forward = version.find_method(cls, "forward") if version.is_module(cls) else None
                if forward is not None and forward != f"{cls}.forward":
                    # Inherited: a root without this class only if its class is a module.
                    if not version.is_module(forward.rpartition(".")[0]):
                        return None
    except LookupError:
        return None
    resolver = versions[-1]

    def targets_of(fn: dict, edge: tuple) -> list:
        if edge[0] != "name" and fn["cls"] in subclasses:
            return resolver.method_targets(fn["cls"], edge)
        if edge[0] != "name" and fn["cls"] in own_classes:  # before the memo: it may have changed
            return _own_class_targets(classes[fn["cls"]], edge)
        found = memo.get(memo_key(fn["cls"], edge))
        if found is not None:
            return found
        if edge[0] == "name" and edge[1] in final:
            return [edge[1]]  # a function of this file: its own name, nothing to follow
        if edge[0] != "name" and fn["cls"] is None:
            return []
        raise LookupError(edge)  # a call only the whole project can resolve

    live: set = set()
    entry_points: Optional[set] = None
    # The entry points of a class out of sight can only be its forward as a root: found again.
    own_prefixes = tuple(cls + "." for cls in own_classes | subclasses)
    entries = {q: exits for q, exits in boundary["entries"].items() if not q.startswith(own_prefixes)}
    for cls in sorted(own_classes):  # held to what it reached at the last whole-tree run, if any
        info = classes.get(cls)
        if info is not None and "forward" in info["methods"] and any(outside_base_is_module(b) for b in info["bases"]):
            entries[f"{cls}.forward"] = boundary["entries"].get(f"{cls}.forward", [])
    for q, exits in boundary["entries"].items():
        if q.startswith(own_prefixes) and q not in entries and exits:
            return None  # no root any more: what only it reached may no longer be live
    for cls in sorted(subclasses & classes.keys()):
        if "forward" in classes[cls]["methods"] and resolver.is_module(cls):
            entries[f"{cls}.forward"] = boundary["entries"].get(f"{cls}.forward", [])
    try:
        for start, exits in entries.items():
            if start not in final:
                return None
            inside, reached = walk_within(final, start, targets_of)
            if not reached.issuperset(exits):
                return None  # what only this call reached may no longer be live
            if len(reached) > len(exits):
                if entry_points is None:
                    entry_points = set(res["entry_points"])
                if not reached <= entry_points:
                    return None
            live |= inside
    except LookupError:
        return None
    boundary["own_classes"] = sorted(own_classes)
    boundary["local_subclasses"] = sorted(subclasses)
    for new in datas:  # what resolving the new calls looks at, for the next edit
        visited.update(n for n in referenced_names(new) if n.startswith(prefix))
    boundary["visited"] = sorted(visited)
    return live


def _exits_known(boundary: dict, final: dict) -> bool:
    """Fill in the exits of the file's entry points that the whole-tree run left for later
    (`lint.regions.boundaries`): walked in `final`, the file's last analysis of that run (or a
    later one with the same interface), through the resolutions kept in the memo. False when
    a call is missing from the memo."""
    from dynalint.lint.regions import memo_key, walk_within

    entries = boundary["entries"]
    pending = [q for q, exits in entries.items() if exits is None]
    if not pending:
        return True
    functions, memo = final["functions"], boundary["memo"]
    try:
        for q in pending:
            _, exits = walk_within(functions, q, lambda fn, edge: memo[memo_key(fn["cls"], edge)])
            entries[q] = sorted(exits)
    except KeyError:
        return False
    return True


def _new_classes(before: dict, after: dict, visited: set, tops: set, called: Optional[set] = None) -> Optional[tuple[set, set]]:
    """The classes added, changed or removed from `before` to `after` (a file's classes in two
    analyses), None unless each of them is out of every other file's sight, before and after:
    no resolution looked at its name or a name under it (no file imports, subclasses, stores
    or calls it by name). Returned in two sets: those whose bases are all outside the linted
    files (own classes: their methods resolve within them, `_own_class_targets`; only their
    forward can be a root, and they are modules exactly when a base outside says so), and
    those with a base that may be a class of the linted files (subclasses: `_local_change`
    resolves them with `_FileClasses`, which gives up on a class of another file).

    A class other files do name may still gain or lose methods under names no call or
    resolution of the last whole-tree run looked up (`called`, `lint.regions.called_names`):
    no resolution of a call changes, and a new call of such a method is one the file's stored
    resolutions lack, which sends the run to the whole tree."""
    own, subclasses = set(), set()
    for q in after.keys() | before.keys():
        info, was = after.get(q), before.get(q)
        if info == was:
            continue
        if _looked_at(q, visited):
            if not _only_uncalled_methods(was, info, called):
                return None
            continue
        versions = [v for v in (info, was) if v is not None]
        linted_base = any(b.partition(".")[0] in tops for v in versions for b in v["bases"])
        (subclasses if linted_base else own).add(q)
    return own, subclasses


def _only_uncalled_methods(was: Optional[dict], info: Optional[dict], called: Optional[set]) -> bool:
    """Do two versions of a class differ only in methods nobody looks up? `forward` (a root
    when added) and dunder methods (called by Python itself) never count as uncalled."""
    if was is None or info is None or called is None:
        return False
    if any(was.get(k) != info.get(k) for k in was.keys() | info.keys() if k != "methods"):
        return False
    changed = set(was["methods"]) ^ set(info["methods"])
    return not any(m in called or m == "forward" or m.startswith("__") for m in changed)


def _looked_at(name: str, visited: set) -> bool:
    """Did resolution look at `name` or at a name under it (`pkg.mod.Class.method`)?"""
    under = name + "."
    return name in visited or any(n.startswith(under) for n in visited)


class _FileClasses(ClassResolver):
    """`lint.regions.ClassResolver` over one file's analysis, for classes nobody outside the file
    names: every linted class met on the way must be one of the file's (a name under a linted
    module otherwise raises LookupError: only the whole project resolves it), any other name is
    a class outside the linted files. Names are resolved as the file wrote them."""

    def __init__(self, entry: dict, modules: set):
        super().__init__()
        self.classes = {q: ClassInfo(**c) for q, c in entry["classes"].items()}
        self.functions = entry["functions"]
        self.registries = entry.get("registries", {})
        self.modules = modules
        self._subclasses = {}
        for q, c in self.classes.items():
            for b in c.bases:
                self._subclasses.setdefault(b, []).append(q)

    def _in_file(self, name: str) -> bool:
        if name in self.classes or name in self.functions:
            return True
        head = name
        while "." in head:
            head = head.rpartition(".")[0]
            if head in self.modules:
                raise LookupError(name)
        return False

    def _is_class(self, name: str) -> bool:
        return self._in_file(name) and name in self.classes

    def registry(self, name: str) -> list[str]:
        if name not in self.registries:
            raise LookupError(name)  # another file's dict: only the whole project knows it
        return self.registries[name]

    def _is_function(self, name: str) -> bool:
        return self._in_file(name) and name in self.functions


def _own_class_targets(info: dict, edge: tuple) -> list:
    """`Project.resolve_edge` for a method of a class whose bases are all outside the linted
    files and which has no subclasses (`_new_classes`): its MRO is itself."""
    kind = edge[0]
    if kind == "self":
        if edge[1] in info["methods"]:
            return [f"{info['qualname']}.{edge[1]}"]
        if info["attr_types"].get(edge[1]) or info.get("attr_callables", {}).get(edge[1]):
            raise LookupError(edge)  # a submodule of another file's class, a stored function
        return []
    if kind == "selfattr":
        if info["attr_types"].get(edge[1]):
            raise LookupError(edge)
        return []
    if kind == "super":
        return []
    if kind == "prop":  # `self.initialized` of a property: its own method, or nothing
        return [f"{info['qualname']}.{edge[1]}"] if edge[1] in info["methods"] else []
    raise LookupError(edge)


def _same_outside(old: dict, new: dict, prefix: str, visited: set, tops: set, foreign: Optional[set] = None) -> bool:
    """Whether two analyses of one file show the other files the same thing (`_local_change`);
    their classes are compared by `_new_classes`. A function may be removed when no other
    file's resolution looked at it (`foreign`): calls of it from the file itself either go
    with it (an unknown name makes no call edge) or are new calls, which the walk from the
    file's entry points cannot resolve from the stored ones."""
    if old["compile_targets"] != new["compile_targets"] or old.get("registries") != new.get("registries"):
        return False
    if old["imports"] != new["imports"]:
        for local in old["imports"].keys() | new["imports"].keys():
            if old["imports"].get(local) != new["imports"].get(local):
                if _looked_at(prefix + local, visited):
                    return False
    if _project_part(old["call_hints"], tops) != _project_part(new["call_hints"], tops):
        return False
    before, after = old["functions"], new["functions"]
    for q in before.keys() - after.keys():  # removed: under a name no other file looked at
        if before[q]["compile_root"] or q in (visited if foreign is None else foreign):
            return False
    for q, fn in after.items():
        was = before.get(q)
        if was is None:
            if fn["compile_root"] or q in visited:
                return False
        elif was != fn:
            if any(was[k] != fn[k] for k in ("cls", "name", "compile_root", "disabled", "wraps")):
                return False
            if was["returns_tensor"] != fn["returns_tensor"] and q in visited:
                return False
            if was.get("passthrough") != fn.get("passthrough") and q in visited:
                return False
    return _external_calls(old, tops) == _external_calls(new, tops)


def _project_part(hints: dict, tops: set) -> dict:
    """Call hints for names that may resolve to a linted file (`torch.*`, `einops.*` never do)."""
    return {k: v for k, v in hints.items() if k.partition(".")[0] in tops}


def _external_calls(entry: dict, tops: set) -> set:
    """Names called that may resolve to another linted file: the file's "returns" facts are
    read off these."""
    own = entry["functions"].keys() | entry["classes"].keys()
    return {
        e[1]
        for fn in entry["functions"].values()
        for e in fn["edges"]
        if e[0] == "name" and e[1] not in own and e[1].partition(".")[0] in tops
    }


# Below this size a changed file's analyses run one after the other: starting a worker costs
# about what analysing a 1,000-line file does.
PARALLEL_MIN_CHARS = 40_000


def _analyze_all(analyses: list, jobs: int) -> Iterable[dict]:
    """The entries of one file's analyses (work items that differ only in their facts), in order.
    All but the last are interface-only. A big file's analyses run side by side in forked
    workers, which inherit the tree parsed and the module level scanned here (the analyzer keeps
    the last two texts')."""
    from dynalint.run import engine

    last = len(analyses) - 1
    jobs = jobs or os.cpu_count() or 1
    text = analyses[0].text
    if last == 0 or jobs < 2 or text is None or len(text) < PARALLEL_MIN_CHARS or not hasattr(os, "fork"):
        return [engine._analyze_one(a, interface_only=i < last)[1] for i, a in enumerate(analyses)]
    import concurrent.futures as cf
    import multiprocessing as mp

    from dynalint.lint.analyzer import prepare

    prepare(text, analyses[0].display, analyses[0].module, analyses[0].is_package)
    with cf.ProcessPoolExecutor(max_workers=min(jobs - 1, last), mp_context=mp.get_context("fork")) as pool:
        futures = [pool.submit(engine._analyze_one, a, True) for a in analyses[:last]]
        final = engine._analyze_one(analyses[last])[1]  # the one with rules, here meanwhile
        return [f.result()[1] for f in futures] + [final]


def _local_summary(item, local: list):
    """A summary holding what output reads (findings, noqa, facts) and no interface."""
    from dynalint.lint.summary import FileSummary

    findings, noqa, facts = local
    return FileSummary.from_cache({
        "filename": item.display, "module": item.module, "imports": {}, "classes": {}, "functions": {},
        "compile_targets": [], "findings": findings, "noqa": noqa, "facts": facts,
    })

"""Phase 2 of linting: across all files, which functions run under torch.compile.

Roots are `forward` of every nn.Module subclass (bases resolved across the linted files),
functions decorated with `@torch.compile`, functions passed to `torch.compile(...)`, and
configured extra roots. Everything reachable from a root through the call edges each file
recorded is in the compile region. Cheap: no parsing, only dictionaries.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Optional

from .options import is_root_pattern, matches_root_pattern, meant_for
from .summary import STAR_PREFIX, ClassInfo, FileSummary, FunctionInfo
from .kinds import (
    AUTOGRAD_FUNCTION_BASES, DISTRIBUTION_TRANSFORM_METHODS, DISTRIBUTION_TRANSFORMS, NON_MODULE_BASE_PREFIXES,
    NON_MODULE_BASES, RNN_BASES,
)


class Visited(set):
    """Every name resolution looked at (the set itself), and in `foreign` those looked at while
    resolving something of a file other than the one the name is under: a file's own calls of
    its own functions are kept in its memo (`boundaries`), other files' only show here."""

    def __init__(self) -> None:
        super().__init__()
        self.foreign: set[str] = set()


# The asker of lookups made for configuration (extra roots): no file, so every name is foreign.
_NO_FILE = "\0"


# A class named so, or with such a base, is an exception (built to be raised).
_EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning")


class ClassResolver:
    """Class resolution over linted classes: MRO, module-ness, methods (with the subclasses that
    override them), submodule types, and the targets of a method's calls. The one
    implementation: `Project` resolves across every linted file, `dynalint.run.incremental`
    within one file's analysis. A subclass fills `classes` (qualname -> ClassInfo), `functions`
    and `_subclasses` (class -> the classes naming it as a base, in class order), and says what
    a name resolves to (`canonical`) and whether a resolved name is one of its classes or
    functions (`_is_class`, `_is_function`). Answers are memoised: classes and methods never
    change under a resolver (`Project.replace` keeps them)."""

    classes: dict[str, ClassInfo]
    functions: dict
    _subclasses: dict[str, list[str]]

    registries: dict[str, list[str]] = {}  # `FileSummary.registries` of the files resolved

    def __init__(self) -> None:
        self._module_cache: dict[str, bool] = {}
        self._mro_cache: dict[str, list[str]] = {}
        self._method_cache: dict[tuple[str, str], Optional[str]] = {}
        self._subclass_cache: dict[str, list[str]] = {}

    def canonical(self, name: str) -> str:
        return name

    def _own(self, cls: str) -> str:
        """The name a class asked about by its own name resolves to."""
        return cls

    def _is_class(self, name: str) -> bool:
        return name in self.classes

    def _is_function(self, name: str) -> bool:
        return name in self.functions

    # -- module-ness --------------------------------------------------------------------------
    def is_module(self, cls: str, depth: int = 0) -> bool:
        cls = self._own(cls)
        if cls in self._module_cache:
            return self._module_cache[cls]
        self._module_cache[cls] = False  # cycles
        result = False
        if cls.startswith("torch.nn."):
            result = True
        elif self._is_class(cls) and depth < 50:
            result = any(self._base_is_module(b, depth) for b in self.classes[cls].bases)
        self._module_cache[cls] = result
        return result

    def _wraps_module_call(self, qual: str) -> bool:
        info = self.functions.get(qual)
        return info is not None and any(
            tuple(e[:2]) in (("super", "__call__"), ("super", "forward"), ("self", "forward")) for e in info.edges
        )

    def _mro_bases(self, cls: str):
        """The resolved names of the bases of every class in `cls`'s MRO (those outside the linted
        files among them)."""
        return (self.canonical(b) for c in self.mro(cls) for b in self.classes[c].bases)

    def _is_distribution_transform(self, cls: str) -> bool:
        """A class of the linted files with `torch.distributions`' Transform among its bases' bases."""
        return any(b in DISTRIBUTION_TRANSFORMS for b in self._mro_bases(cls))

    def _derives_from_torch_nn(self, cls: str) -> bool:
        """A class of the linted files with a `torch.nn` class among its bases' bases."""
        return any(b.startswith("torch.nn.") for b in self._mro_bases(cls))

    def _base_is_module(self, base: str, depth: int) -> bool:
        b = self.canonical(base)
        if self._is_class(b):
            return self.is_module(b, depth + 1)
        return outside_base_is_module(b)

    def mro(self, cls: str) -> list[str]:
        # Memoised: reachability asks for the same classes' MROs tens of thousands of times.
        cached = self._mro_cache.get(cls)
        if cached is None:
            cached = self._mro_cache[cls] = self._compute_mro(cls)
        return cached

    def _compute_mro(self, cls: str) -> list[str]:
        out, queue, seen = [], [self._own(cls)], set()
        while queue:
            c = queue.pop(0)
            if c in seen or not self._is_class(c):
                continue
            seen.add(c)
            out.append(c)
            queue.extend(self.canonical(b) for b in self.classes[c].bases)
        return out

    def find_method(self, cls: str, name: str) -> Optional[str]:
        key = (cls, name)
        if key in self._method_cache:
            return self._method_cache[key]
        found = None
        for c in self.mro(cls):
            if name in self.classes[c].methods:
                found = f"{c}.{name}"
                break
        self._method_cache[key] = found
        return found

    def subclasses(self, cls: str) -> list[str]:
        cached = self._subclass_cache.get(cls)
        if cached is None:
            cached = self._subclass_cache[cls] = self._find_subclasses(cls)
        return cached

    def _find_subclasses(self, cls: str) -> list[str]:
        out, queue, seen = [], [cls], set()
        while queue:
            c = queue.pop()
            for s in self._subclasses.get(c, ()):
                if s not in seen:
                    seen.add(s)
                    out.append(s)
                    queue.append(s)
        return out

    def attr_types(self, cls: str, attr: str) -> list[str]:
        for c in self.mro(cls):
            types = self.classes[c].attr_types.get(attr)
            if types:
                return [self.canonical(t) for t in types]
        return []

    def attr_callables(self, cls: str, attr: str) -> list[str]:
        for c in self.mro(cls):
            stored = self.classes[c].attr_callables.get(attr)
            if stored:
                return stored
        return []

    def registry(self, name: str) -> list[str]:
        return self.registries.get(self.canonical(name), [])

    def _stored_callable_targets(self, cls: str, stored: str) -> list[str]:
        """The functions a call of a function stored on self runs (`ClassInfo.attr_callables`)."""
        if stored.startswith("self:"):
            found = self.find_method(cls, stored[5:])
            return [found] if found else []
        names = self.registry(stored[:-2]) if stored.endswith("[]") else [stored]
        return [t for t in map(self.canonical, names) if self._is_function(t)]

    # -- call targets -----------------------------------------------------------------------------
    def _callable_targets(self, name: str) -> list[str]:
        """What calling a resolved name runs: the function, or a module class's forward."""
        if self._is_function(name):
            return [name]
        if self._is_class(name):
            fwd = self.find_method(name, "forward")
            return [fwd] if fwd else []
        head, _, last = name.rpartition(".")
        if last == "apply" and self._is_class(head) and self.is_autograd_function(head):
            # `Solve.apply(x)`: Dynamo traces the custom function's forward, and its backward
            return [m for m in (self.find_method(head, "forward"), self.find_method(head, "backward")) if m]
        return []

    def _constructor_targets(self, cls: str) -> list[str]:
        """What constructing a plain class runs: its own `__init__` and a dataclass's own
        `__post_init__` (Dynamo traces both where compiled code builds the object; sbi's mixture
        record validating its tensors). Not modules (their `__init__` builds submodules; one
        built in forward is rare and traced), exceptions (built to be raised), or methods a class
        inherits (transformers' output records run `ModelOutput.__post_init__`, which Dynamo
        models itself)."""
        if not self._is_class(cls) or self.is_module(cls) or self.is_autograd_function(cls) or any(
            self.canonical(b).endswith(_EXCEPTION_SUFFIXES) for c in self.mro(cls) for b in [c, *self.classes[c].bases]
        ):
            return []
        methods = self.classes[cls].methods
        return [f"{cls}.{m}" for m in ("__init__", "__post_init__") if m in methods]

    def is_rnn_class(self, cls: str) -> bool:
        return any(b in RNN_BASES for b in self._mro_bases(cls))

    def is_autograd_function(self, cls: str) -> bool:
        return any(b in AUTOGRAD_FUNCTION_BASES for b in self._mro_bases(cls))

    def _method_and_overrides(self, cls: str, meth: str) -> list[str]:
        """`meth` as `cls` has it (its own or inherited) and the subclasses' overrides of it."""
        found = self.find_method(cls, meth)
        return ([found] if found else []) + [f"{sub}.{meth}" for sub in self.subclasses(cls)
                                              if meth in self.classes[sub].methods]

    def method_targets(self, cls: str, edge: tuple) -> list[str]:
        """The targets of a call edge through `self` or `super()` in a method of `cls`."""
        kind = edge[0]
        if kind == "self":
            meth = edge[1]
            out = self._method_and_overrides(cls, meth)
            if not out:  # self.block(x): a submodule stored on self
                for t in self.attr_types(cls, meth):
                    out += self._callable_targets(t)
            if not out:  # self.backend_fn(x): a function stored on self
                for stored in self.attr_callables(cls, meth):
                    out += self._stored_callable_targets(cls, stored)
            if not out:  # a method a subclass passed up to `super().__init__(meth=self.method)`
                for sub in self.subclasses(cls):
                    for stored in self.classes[sub].attr_callables.get(meth, ()):
                        out += self._stored_callable_targets(sub, stored)
            return out
        if kind == "selfattr":
            attr, meth = edge[1], edge[2]
            out = []
            for t in self.attr_types(cls, attr):
                m = self.find_method(t, meth)
                if m:
                    out.append(m)
            return out
        if kind == "prop":
            # `self.initialized` read in compiled code: the getter of a property (moshi's codebook
            # reads its init flag with `.item()` there); a method read as a value runs where it
            # is called, which the same edge stands for. Plain attributes resolve to nothing.
            return self._method_and_overrides(cls, edge[1])
        if kind == "super":
            meth = edge[1]
            for base in self.mro(cls)[1:]:
                if meth in self.classes[base].methods:
                    return [f"{base}.{meth}"]
            return []
        return []


class Project(ClassResolver):
    """Every linted file's classes and functions, names resolved across them (imports and
    re-exports followed): the roots of the compile regions and what they reach."""

    def __init__(self, summaries: Iterable[FileSummary], extra_roots: Iterable[str] = (), visited: Optional[set] = None):
        super().__init__()
        self.summaries = list(summaries)
        self.classes: dict[str, ClassInfo] = {}
        self.functions: dict[str, FunctionInfo] = {}
        self.aliases: dict[str, str] = {}
        self.star_modules: dict[str, list[str]] = {}  # module -> the modules it star-imports
        self._star_lookups: set[str] = set()  # names being looked up in star imports (cycles)
        self.modules: set[str] = set()
        self.registries = {}
        for s in self.summaries:
            self.modules.add(s.module)
            self.classes.update(s.classes)
            self.functions.update(s.functions)
            self.registries.update(s.registries)
            for local, target in s.imports.items():
                if local.startswith(STAR_PREFIX):
                    self.star_modules.setdefault(s.module, []).append(target)
                else:
                    self.aliases[f"{s.module}.{local}"] = target
        self.extra_roots = list(extra_roots)
        self.unresolved_roots: list[str] = []  # extra roots that named nothing (`roots`)
        self._canonical_cache: dict[str, str] = {}
        # When a set: gets every name a canonical() walk looks at (`boundaries` reads it); when
        # a `Visited`, also which of them were looked at for another file than their own: the
        # lookups say for which file they are made (`asker`: its module and a dot; None: any).
        self.visited = visited
        self._foreign: Optional[set] = getattr(visited, "foreign", None)
        self._chains: dict[str, tuple] = {}
        self._asked_by: dict[Optional[str], set[str]] = {}  # asker -> names whose chain it recorded
        self.asker = None
        self._file_of: Optional[dict[str, str]] = None
        self._class_file_of: Optional[dict[str, str]] = None
        self.facts_memo: dict = {}  # `lint.hints.cross_file_facts`'s parts per file
        self._home: dict[str, str] = {}  # class or function -> its file's module and a dot
        if self._foreign is not None:
            for s in self.summaries:
                home = s.module + "."
                self._home.update(dict.fromkeys(s.classes, home))
                self._home.update(dict.fromkeys(s.functions, home))
        self._subclasses: dict[str, list[str]] = {}
        for c in self.classes.values():
            self.asker = self._home.get(c.qualname)
            for b in c.bases:
                rb = self.canonical(b)
                self._subclasses.setdefault(rb, []).append(c.qualname)
        self.asker = None
        self._position = {id(s): i for i, s in enumerate(self.summaries)}

    def replace(self, old: FileSummary, new: FileSummary) -> bool:
        """Put `new` in the place of `old` (the same file analysed again, with other facts) when
        both give resolution the same names: imports, classes with their bases and methods,
        functions. Every memo (aliases, MROs, module-ness, subclasses) stays valid then, so the
        cross-file rounds and the reachability walk share one project. False, changing
        nothing, otherwise: the caller builds a new project."""
        i = self._position.get(id(old))
        if i is None or self.summaries[i] is not old:
            return False
        if (
            old.module != new.module
            or old.imports != new.imports
            or old.registries != new.registries
            or old.functions.keys() != new.functions.keys()
            or old.classes.keys() != new.classes.keys()
            or any(
                c.bases != new.classes[q].bases or c.methods != new.classes[q].methods
                for q, c in old.classes.items()
            )
        ):
            return False
        self.classes.update(new.classes)
        self.functions.update(new.functions)
        self.summaries[i] = new
        del self._position[id(old)]
        self._position[id(new)] = i
        return True

    def serves(self, summaries: list) -> bool:
        """Whether this project was built (or kept up to date) for exactly these summaries."""
        return len(summaries) == len(self.summaries) and all(a is b for a, b in zip(summaries, self.summaries))

    @property
    def asker(self) -> Optional[str]:
        """For which file the lookups that follow are made: its module and a dot (None: any)."""
        return self._asker

    @asker.setter
    def asker(self, value: Optional[str]) -> None:
        self._asker = value
        self._asked = self._asked_by.setdefault(value, set())

    def class_file_of(self) -> dict[str, str]:
        """Class qualname -> the file defining it."""
        if self._class_file_of is None:
            self._class_file_of = {q: s.filename for s in self.summaries for q in s.classes}
        return self._class_file_of

    def file_of(self) -> dict[str, str]:
        """Function qualname -> the file defining it (names do not change: `replace`)."""
        if self._file_of is None:
            self._file_of = {q: s.filename for s in self.summaries for q in s.functions}
        return self._file_of

    # -- names ------------------------------------------------------------------------------
    def canonical(self, name: str) -> str:
        """Follow re-exports (`pkg.f` imported in pkg/__init__ from pkg.ops) to the definition."""
        cached = self._canonical_cache.get(name)  # memoised: asked ~100 times per name
        if cached is None:
            cached = self._canonical_cache[name] = self._follow_aliases(name)
        if self._foreign is not None and name not in self._asked:
            # Once per name and asker: the cross-file rounds ask the same names again.
            self._asked.add(name)
            asker = self._asker
            for n in self._chains[name]:
                if asker is None or not n.startswith(asker):
                    self._foreign.add(n)
        return cached

    def _follow_aliases(self, name: str) -> str:
        start = name
        seen = set()
        while name not in self.classes and name not in self.functions and name not in seen:
            seen.add(name)
            if name in self.aliases:
                name = self.aliases[name]
                continue
            # pkg.mod.Class.method where pkg.mod.Class is an alias
            head, _, last = name.rpartition(".")
            if head and head in self.aliases:
                name = f"{self.aliases[head]}.{last}"
                continue
            # pkg.mod.Block where pkg.mod star-imports the module defining it (or re-exporting
            # it): the first such module, in the file's order.
            found = self._star_import_of(head, last) if head in self.star_modules else None
            if found is not None:
                name = found
                continue
            break
        if self.visited is not None:
            self.visited.update(seen)
            self.visited.add(name)
            if self._foreign is not None:
                self._chains[start] = (*seen, name)
        return name

    def _star_import_of(self, module: str, last: str) -> Optional[str]:
        """The class or function `module.last` is, when `module` has it from a star import."""
        key = f"{module}.{last}"
        if key in self._star_lookups:  # modules star-importing each other
            return None
        self._star_lookups.add(key)
        try:
            for source in self.star_modules[module]:
                found = self.canonical(f"{source}.{last}")
                if found in self.classes or found in self.functions:
                    return found
        finally:
            self._star_lookups.discard(key)
        return None

    def _own(self, cls: str) -> str:
        """`canonical(cls)`, but a class of the linted files asked about itself (the roots
        enumerating classes, a method resolving its calls) is no name looked at: `visited`
        keeps the names that resolution reached from somewhere else."""
        return cls if cls in self.classes else self.canonical(cls)

    # -- roots and reachability ------------------------------------------------------------------
    def roots(self) -> list[str]:
        roots = []
        for cls in self.classes:
            self.asker = self._home.get(cls)
            if self.is_module(cls):
                fwd = self.find_method(cls, "forward")
                if fwd is not None:
                    roots.append(fwd)
                # A module list's own `__iter__` runs in its owner's `for layer in self.layers:`
                # (fairseq's LayerDropModuleList draws there which layers run).
                if "__iter__" in self.classes[cls].methods:
                    roots.append(f"{cls}.__iter__")
                # A module's own `__call__` runs wherever the module is called, before forward
                # (pytorch-tabular's ModuleWithInit: data-aware initialisation on the first call).
                # Only a class known to derive from torch.nn: a base from outside the linted
                # files counts as a module for `forward`, but not here (transformers' feature
                # extractors and processors define `__call__` and are no modules).
                # And only a `__call__` that goes on to the module call (`super().__call__(...)`,
                # `self.forward(...)`): ultralytics' `Model.__call__` is its predict API instead.
                if "__call__" in self.classes[cls].methods and self._wraps_module_call(f"{cls}.__call__") \
                        and self._derives_from_torch_nn(cls):
                    roots.append(f"{cls}.__call__")
            # A `torch.distributions` transform (pyro's splines, flows): a compiled model's
            # `log_prob` / `rsample` runs these through the transform's `__call__` and `inv`.
            if self._is_distribution_transform(cls):
                roots.extend(m for m in (self.find_method(cls, name) for name in DISTRIBUTION_TRANSFORM_METHODS) if m)
        for f in self.functions.values():
            if f.compile_root:
                roots.append(f.qualname)
        for s in self.summaries:
            self.asker = s.module + "."
            for t in s.compile_targets:
                roots.extend(self._callable_targets(self.canonical(t)))
        self.asker = _NO_FILE
        self.unresolved_roots = []
        linted = {s.module for s in self.summaries}
        for r in self.extra_roots:
            if is_root_pattern(r):
                found = [q for q in self.functions if matches_root_pattern(q, r)]
            else:
                found = self._callable_targets(self.canonical(r))
            roots.extend(found)
            # Named wrongly: a bare name, or one meant for a linted module that has no such thing
            # (`options.meant_for`).
            if not found and ("." not in r or any(meant_for(r, m) for m in linted)):
                self.unresolved_roots.append(r)
        self.asker = None
        return roots

    def resolve_edge(self, fn: FunctionInfo, edge: tuple) -> list[str]:
        kind = edge[0]
        if kind == "name":
            if edge[1].endswith("@"):  # a decorator: followed where it returns a wrapper
                name = self.canonical(edge[1][:-1])
                return [t for t in self._callable_targets(name) if self.functions[t].wraps]
            if edge[1].endswith("[]"):  # a call of an item of a registry dict
                return [t for name in self.registry(edge[1][:-2]) for t in self._callable_targets(self.canonical(name))]
            name = self.canonical(edge[1])
            return self._callable_targets(name) + self._constructor_targets(name)
        if fn.cls is None:
            return []
        return self.method_targets(fn.cls, edge)

    def reachable(self, walk: Optional[dict] = None) -> set[str]:
        """The live functions. `walk`, when given, gets the roots ("roots") and, per live
        function, its edges with their targets ("calls", for `boundaries`)."""
        seen: set[str] = set()
        roots = self.roots()
        calls: Optional[dict] = None
        if walk is not None:
            walk["roots"] = roots
            calls = walk["calls"] = {}
        queue = deque(roots)
        while queue:
            q = queue.popleft()
            if q in seen or q not in self.functions:
                continue
            fn = self.functions[q]
            if fn.disabled:
                continue
            seen.add(q)
            self.asker = self._home.get(q)
            resolved = calls.setdefault(q, []) if calls is not None else None
            for edge in fn.edges:
                targets = self.resolve_edge(fn, edge)
                if resolved is not None:
                    resolved.append((edge, targets))
                for target in targets:
                    if target not in seen:
                        queue.append(target)
        self.asker = None
        return seen


def outside_base_is_module(base: str) -> bool:
    """Whether a base class that is not a class of the linted files makes an nn.Module."""
    if base.startswith("torch.nn."):
        return True
    if base in NON_MODULE_BASES or base.split(".")[-1] in NON_MODULE_BASES:
        return False
    if base.startswith(("torch.", *NON_MODULE_BASE_PREFIXES)):
        return False
    # A base from outside the linted files (PreTrainedModel, LightningModule, ...): treat it as a
    # module; only classes with a forward become roots, so config/data classes stay out.
    return "." in base


def referenced_names(entry: dict) -> Iterable[str]:
    """Every dotted name a summary entry (`FileSummary.to_cache`) asks the project to resolve."""
    return _names_resolved(
        entry["compile_targets"],
        entry.get("call_hints", ()),
        ((c["bases"], {**c["attr_types"], **_stored_names(c.get("attr_callables"))}) for c in entry["classes"].values()),
        (f["edges"] for f in entry["functions"].values()),
    )


def _names_resolved(compile_targets, call_hints, classes, edge_lists) -> Iterable[str]:
    """The dotted names resolution looks up for one file: its compile targets, the callees of
    its call hints, each class's bases and stored types ((bases, attr_types) pairs), and the
    targets of its calls by name (one list of edges per function)."""
    yield from compile_targets
    yield from call_hints
    for bases, attr_types in classes:
        yield from bases
        for types in attr_types.values():
            yield from types
    for edges in edge_lists:
        for e in edges:
            if e[0] == "name":
                yield e[1].removesuffix("[]").removesuffix("@")


def _stored_names(attr_callables: Optional[dict]) -> dict[str, list[str]]:
    """The names resolution looks up for functions stored on self (`ClassInfo.attr_callables`):
    the function or registry, or the method's name (its last part is what `called_names` keeps)."""
    return {f"\0{attr}": [n[5:] if n.startswith("self:") else n.removesuffix("[]") for n in stored]
            for attr, stored in (attr_callables or {}).items()}


def called_names(summaries: Iterable[FileSummary], extra_roots: Iterable[str] = ()) -> set[str]:
    """Every method or function name a resolution of the project may look up in a class: the
    methods of `self.m()`, `self.sub.m()`, `super().m()` calls, and the last part of every dotted
    name the project resolves (`pkg.mod.Class.m`, bases, stored types, compile targets, roots).
    A method whose name is not among them changes no resolution when added to a class or
    removed from it (`dynalint.run.incremental._new_classes`)."""
    names = set(extra_roots)  # dotted names, cut to their last part at the end
    last_parts: set[str] = set()  # methods of the self/selfattr/super calls
    for s in summaries:
        names.update(
            _names_resolved(
                s.compile_targets,
                s.call_hints,
                ((c.bases, {**c.attr_types, **_stored_names(c.attr_callables)}) for c in s.classes.values()),
                (f.edges for f in s.functions.values()),
            )
        )
        last_parts.update(e[-1] for f in s.functions.values() for e in f.edges if e[0] != "name")
    last_parts.update(n.rpartition(".")[2] for n in names)
    if "apply" in last_parts:  # `Fn.apply` resolves to Fn's forward and backward
        last_parts.update(("forward", "backward"))
    return last_parts


def memo_key(cls: Optional[str], edge) -> tuple:
    """The key of an edge's resolved targets in a file's memo (`boundaries`): a call by name
    resolves the same from any function, the others depend on the caller's class."""
    return (None if edge[0] == "name" else cls, tuple(edge))


def boundaries(project: Project, live: set[str], walk: dict, visited: Iterable[str]) -> dict[str, dict]:
    """What `dynalint.run.incremental` needs, per file, to prove that an edit of that file alone
    changes nothing in any other file. `walk`: what `project.reachable(walk)` recorded;
    `visited`: every name the run's projects (cross-file rounds and reachability) looked at.

    - "entries": the file's live functions that are roots or called from live functions of
      other files, each with the functions of other files that the calls made inside the file
      from it reach ("exits"). While each entry reaches at least those, and otherwise only
      other entries, the rest of the project sees the file as before: every other file keeps
      its live functions. The exits are None here: walking every file costs the whole-tree run
      a tenth of its time, and only a file edited later needs them, so
      `dynalint.run.incremental` walks them then, from the file's analysis and its memo.
    - "memo": the resolved targets of the calls its live functions make ((class, edge) ->
      targets), so that the file's new call graph can be walked without the other files.
    - "visited": the names under the file's module that resolution looked at. A function
      added or removed under a name nobody looked at changes no resolution.
    - "foreign": those of them looked at for other files (all of them when `visited` is no
      `Visited`). A function removed under a name no other file looked at leaves the others'
      resolution alone; the file's own calls of it are walked again from its memo.
    """
    file_of = project.file_of()
    out: dict[str, dict] = {s.filename: {"entries": {}, "memo": {}, "visited": [], "foreign": []} for s in project.summaries}
    starts: dict[str, set[str]] = {}
    for r in walk["roots"]:
        if r in live:
            starts.setdefault(file_of[r], set()).add(r)
    for q in live:
        fn = project.functions[q]
        home = file_of[q]
        memo = out[home]["memo"]
        for edge, targets in walk["calls"][q]:
            memo[memo_key(fn.cls, edge)] = targets
            for t in targets:
                if t in live and file_of[t] != home:
                    starts.setdefault(file_of[t], set()).add(t)
    for filename, entries in starts.items():
        out[filename]["entries"] = dict.fromkeys(sorted(entries))
    module_file = {s.module: s.filename for s in project.summaries}
    foreign = getattr(visited, "foreign", visited)
    for name in visited:
        head = name
        while "." in head:
            head = head.rpartition(".")[0]
            if head in module_file:
                part = out[module_file[head]]
                part["visited"].append(name)
                if name in foreign:
                    part["foreign"].append(name)
                break
    return out


def walk_within(functions: dict, start: str, targets_of) -> tuple[set[str], set[str]]:
    """(functions of one file reached from `start` through calls inside it, the other files'
    functions those calls reach), skipping disabled functions as `Project.reachable` does.
    `functions`: the file's functions (FunctionInfo or their dicts); `targets_of(fn, edge)`:
    an edge's resolved targets."""
    inside: set[str] = set()
    exits: set[str] = set()
    queue = [start]
    while queue:
        q = queue.pop()
        if q in inside:
            continue
        fn = functions[q]
        if (fn["disabled"] if isinstance(fn, dict) else fn.disabled):
            continue
        inside.add(q)
        for edge in fn["edges"] if isinstance(fn, dict) else fn.edges:
            for t in targets_of(fn, edge):
                if t in functions:
                    queue.append(t)
                else:
                    exits.add(t)
    return inside, exits

"""File-level analysis: what one file defines (classes and their attributes, functions, imports,
loggers, locks, torch.compile targets) and the walk of each of its functions (`lint.walk`), two
cheap probe passes first, then the one that runs the rules; findings get their positions last."""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from dynalint.findings import Finding, Fix

from . import fastcst
from . import kinds as K
from .annotations import annotation_kind
from .callgraph import submodule_types
from .inference import torch_non_tensor
from .nodes import decorator_target, dotted, iter_code_nodes, self_dict_key
from .options import AnalyzerOptions, is_root_pattern, matches_root_pattern
from .parsing import module_scans
from .summary import BUILTIN_NAMES, STAR_PREFIX, ClassInfo, FileSummary, FunctionInfo
from .walk import _LITERAL_DEFAULTS, FunctionContext, _combine_truth, _is_logical


def _torch_tensor_call(q: Optional[str]) -> bool:
    """A torch function that makes a tensor (not a module class, not a non-tensor helper)."""
    return q is not None and q.startswith("torch.") and not torch_non_tensor(q) and not q.startswith("torch.nn.")


def _store_callable(info: ClassInfo, attr: str, stored: Optional[str]) -> None:
    """Record what `self.<attr>` may hold and be called as (`FileAnalyzer._stored_callable`)."""
    if stored is not None and stored not in info.attr_callables.get(attr, ()):
        info.attr_callables.setdefault(attr, []).append(stored)


_CALLABLE_TYPES = frozenset({"typing.Callable", "collections.abc.Callable", "Callable"})


def _names_callable(annotation: cst.BaseExpression, fa: "FileAnalyzer") -> bool:
    """`Callable[...]`, `Optional[Callable[...]]`, `Callable[...] | None`."""
    for node in iter_code_nodes(annotation):
        if type(node) in (cst.Name, cst.Attribute) and fa.qualname(node) in _CALLABLE_TYPES:
            return True
    return False


def _numpy_math(value: cst.BaseExpression, fa: "FileAnalyzer") -> Optional[str]:
    """`np.prod(...)` (as it is, not converted by `int()`) -> "prod"; else None."""
    if type(value) is not cst.Call:
        return None
    q = fa.qualname(value.func)
    if q is not None and q.startswith("numpy.") and q.count(".") == 1 and q[6:] in K.NUMPY_MATH_EQUIVALENT:
        return q[6:]
    return None


# Decorators from torch and the standard library: no function of the linted files.
_NOT_PROJECT_DECORATORS = ("torch.", "functools.", "typing.", "abc.", "contextlib.", "dataclasses.", "numpy.", "self.")


def _defines_a_wrapper(fn: cst.FunctionDef) -> bool:
    """`def cached(m): @wraps(m) def g(self, *args, **kwargs): ...; return g`, or a factory
    holding such a decorator: a nested function decorated with `wraps` or taking `*args`. Not
    `def deprecated(why): def deco(fn): warnings.warn(...); return fn`, whose nested body runs at
    import."""
    for node in fastcst.iter_nodes(fn.body):
        if type(node) is cst.FunctionDef and (type(node.params.star_arg) is cst.Param or any(
                dotted(decorator_target(d)) in ("wraps", "functools.wraps")
                for d in node.decorators)):
            return True
    return False


def wrapper_functions(module: cst.Module) -> frozenset:
    """The module-level functions that return a wrapper: those defining one, and those returning
    what one of those returns (gpytorch's `cached` -> `return _cached(method, name)`)."""
    functions = [s for s in module.body if type(s) is cst.FunctionDef]
    defining = {f.name.value for f in functions if _defines_a_wrapper(f)}
    delegating = {
        f.name.value for f in functions
        if any(type(n) is cst.Return and type(n.value) is cst.Call and type(n.value.func) is cst.Name
               and n.value.func.value in defining for n in fastcst.iter_nodes(f.body))
    }
    return frozenset(defining | delegating)


class FileAnalyzer:
    def __init__(self, module: cst.Module, filename: str, module_name: str, is_package: bool, options: AnalyzerOptions):
        from .rules import rules_by_node_type

        self.module = module
        self._wrappers: Optional[frozenset] = None  # module-level functions returning a wrapper
        self.filename = filename
        self.options = options
        self.summary = FileSummary(filename=filename, module=module_name)
        self.is_package = is_package
        self.rules_by_type = rules_by_node_type(options.rule_codes)
        self.pending: list[tuple[cst.CSTNode, str, str, dict, Optional[Fix], str]] = []
        self.local_functions: dict[str, cst.FunctionDef] = {}
        # Modules this file star-imports (`from .layers import *`): a name bound nowhere else may
        # come from them (`global_name`); the project looks it up there.
        self.star_modules: list[str] = []
        self.returns_tensor: dict[str, bool] = {}
        self.returns_bool: dict[str, bool] = {}  # functions of the file returning boolean tensors only
        # Methods a subclass must provide (`raise NotImplementedError`): what they return is unknown here.
        self.abstract_methods: set[str] = set()
        self.logger_names: set[str] = set()
        self.tensor_attrs: dict[str, set[str]] = {}  # class qualname -> attrs holding tensors
        self.buffer_attrs: dict[str, set[str]] = {}  # class qualname -> attrs set to nn.Buffer(...)
        self.all_attrs: dict[str, set[str]] = {}  # class qualname -> attrs assigned in __init__
        # class qualname -> attrs assigned a lambda or `functools.partial`: plain callables, not submodules
        self.callable_attrs: dict[str, set[str]] = {}
        self.rnn_attrs: dict[str, set[str]] = {}  # class qualname -> attrs holding nn.LSTM/GRU/RNN
        self.rnn_classes: set[str] = set()  # classes of this file deriving from them
        self._non_rnn_modules: dict[str, set[str]] = {}  # class -> attrs also built as another class
        self._records: Optional[dict[str, dict[str, str]]] = None  # `record_fields`, found once per file
        # class qualname -> attrs assigned a module in __init__ (`nn.Conv2d(...)`, `Block(...)`)
        self.module_attrs: dict[str, set[str]] = {}
        self.lock_attrs: dict[str, set[str]] = {}  # class qualname -> attrs holding threading locks
        # class qualname -> attrs holding Python sequences (a list or tuple display, `nn.ModuleList`)
        self.sequence_attrs: dict[str, set[str]] = {}
        self.lock_names: set[str] = set()  # module-level names bound to threading locks
        self._subclasses: Optional[dict[str, list[str]]] = None  # base -> classes of this file
        self.compile_called_names: set[str] = set()
        # function qualname -> {parameter position or name: kind of the tensor passed there}
        self.param_hints: dict[str, dict] = {}
        # function qualname -> parameters with a `None` default that its body uses as tensors
        # (a tensor method on them, `~mask`, arithmetic with a tensor, an argument of a torch op).
        self.param_evidence: dict[str, frozenset] = {}
        # method key -> {call site node id -> {attr: truth}}: what the `if` tests around each
        # `self.method()` call say about `self.<attr>` (see FunctionContext._entry_facts).
        self.call_guards: dict[str, dict[int, dict[str, bool]]] = {}
        # method key -> {call site node id -> what it passes (see callgraph._passed_arguments)}:
        # parameters every call leaves at a None/True/False default hold it in the method.
        self.call_passed: dict[str, dict[int, tuple]] = {}
        # classes of this file deriving from torch.autograd.Function: their `forward(ctx, ...)`
        # runs from `.apply(...)` (lint.regions), with `ctx` no tensor and no module's forward.
        self.autograd_functions: set[str] = set()
        self.class_decorators: dict[str, tuple] = {}  # class -> its decorators, where it has some
        # class -> (attribute, string key) of dicts on self whose item a method sets to a tensor
        self.tensor_items: dict[str, set[tuple[str, str]]] = {}
        self._method_owners: Optional[dict] = None
        # class -> attribute -> the NumPy math function a method sets it with (`np.prod`)
        self.numpy_attrs: dict[str, dict[str, str]] = {}
        # function qualname -> the parameters some `return` gives back as they came in
        # (`def default(val, d): return val if exists(val) else d`), as (position, name, kind of
        # the default): a call's value is then its arguments' kinds, not a tensor for all callers.
        self.passthrough: dict[str, tuple] = {}
        self.returns_tuple: dict[str, Optional[tuple]] = {}  # see FunctionContext.returned_tuple_kinds
        # (scan, id of a function node) -> the parameters the scan finds: only ever used as ints
        # (inference.int_only_params), passed as sizes (size_params), tested for a list
        # (container_tested_params); see FunctionContext._params_by.
        self._int_only: dict = {}
        # The text `module` was parsed from, when known: lets positions and scans skip work.
        self.source: Optional[str] = None
        # id of a function that reported -> {id: statement of its body whose walk reported}, or
        # None when a report came from outside its body's statements (see note_part).
        self.reported_parts: dict[int, Optional[dict]] = {}
        # (walk class, probe only) -> what its walks do with each node type (FunctionContext._plan).
        self.walk_plans: dict = {}

    def is_distribution_transform(self, cls: str, depth: int = 0) -> bool:
        """Does the class derive from a `torch.distributions` transform (named `...Transform` or
        `...TransformModule`, pyro's), directly or through classes of this file?"""
        info = self.summary.classes.get(cls)
        if info is None or depth > 20:
            return False
        return any(
            b.rsplit(".", 1)[-1].endswith(("Transform", "TransformModule"))
            or self.is_distribution_transform(b, depth + 1)
            for b in info.bases
        )

    def rnn_attrs_with_subclasses(self, cls: str) -> set[str]:
        """RNN attributes of `cls` and of its subclasses in this file: a base class's forward
        calling `self.rnn_v(x)` runs with the subclass that made `self.rnn_v` an `nn.LSTM`."""
        if not self.rnn_attrs:  # most files: no RNN attribute anywhere
            return set()
        # Asked once per function: the subclasses of each class, mapped once (looping over every
        # class for each function made a file of many classes cost their square).
        if self._subclasses is None:
            self._subclasses = {}
            for name, info in self.summary.classes.items():
                for base in info.bases:
                    self._subclasses.setdefault(base, []).append(name)
        out = set(self.rnn_attrs.get(cls, set()))
        family, todo = {cls}, [cls]
        while todo:
            for name in self._subclasses.get(todo.pop(), ()):
                if name not in family:
                    family.add(name)
                    todo.append(name)
                    out |= self.rnn_attrs.get(name, set())
        return out

    # -- names ----------------------------------------------------------------------------
    def resolve(self, name: str) -> str:
        """Local dotted name -> fully qualified dotted name (through imports and local defs)."""
        head, _, rest = name.partition(".")
        imports = self.summary.imports
        if head in imports:
            base = imports[head]
        elif head in self.local_functions or head in self._class_names:
            base = f"{self.summary.module}.{head}"
        else:
            return name
        return f"{base}.{rest}" if rest else base

    def qualname(self, node: cst.BaseExpression) -> Optional[str]:
        d = dotted(node)
        return self.resolve(d) if d is not None else None

    def global_name(self, q: str) -> str:
        """A resolved name as the project looks it up: a bare name bound nowhere in a file with
        star imports is the module's own (`pkg.a.Block` after `from .layers import *` in pkg.a;
        the project finds it in the star-imported modules). Builtins stay as they are. Only for
        names that leave the file (call edges, bases, submodule types): rules keep `resolve`."""
        if self.star_modules and "." not in q and q not in BUILTIN_NAMES:
            return f"{self.summary.module}.{q}"
        return q

    def _relative(self, level: int, module: Optional[str]) -> str:
        parts = self.summary.module.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        base = ".".join(parts)
        if module:
            return f"{base}.{module}" if base else module
        return base

    def collect_imports(self) -> None:
        imports = self.summary.imports
        for node in _walk_imports(self.module):
            if type(node) is cst.Import:
                for alias in node.names:
                    full = dotted(alias.name)
                    if full is None:
                        continue
                    if alias.asname is not None and type(alias.asname.name) is cst.Name:
                        imports[alias.asname.name.value] = full
                    else:
                        head = full.split(".")[0]
                        imports[head] = head
            elif type(node) is cst.ImportFrom:
                mod = dotted(node.module) if node.module is not None else None
                level = len(node.relative)
                base = self._relative(level, mod) if level else (mod or "")
                if type(node.names) is cst.ImportStar:
                    if base and base not in self.star_modules:
                        self.star_modules.append(base)
                        # Kept with the imports (a key no name can be): the project reads it there,
                        # and a changed star import changes the file's interface.
                        imports[STAR_PREFIX + base] = base
                    continue
                for alias in node.names:
                    name = alias.name.value if type(alias.name) is cst.Name else dotted(alias.name)
                    if name is None:
                        continue
                    local = (
                        alias.asname.name.value
                        if alias.asname is not None and type(alias.asname.name) is cst.Name
                        else name
                    )
                    imports[local] = f"{base}.{name}" if base else name

    # -- main -------------------------------------------------------------------------------
    def run(self) -> FileSummary:
        self.scan_module_level()
        self.defs: list[tuple[cst.FunctionDef, str, Optional[str]]] = []
        for stmt in self.module.body:
            self._declare(stmt, prefix=self.summary.module, cls=None)
        # Two cheap passes that only infer kinds: which functions return tensors, and which
        # parameters receive tensors at call sites in this file (helpers called from forward).
        # In the second pass, a function whose first walk read the facts it would read now
        # would read and write exactly what it did (the hint writes are idempotent merges), so
        # only its return kind is written again, in its turn.
        probes: list[Optional[FunctionContext]] = [None] * len(self.defs)
        for _ in range(2):
            for i, (fn, prefix, cls) in enumerate(self.defs):
                key = f"{prefix}.{fn.name.value}"
                ctx = probes[i]
                if ctx is None or not ctx.read_facts_unchanged():
                    ctx = probes[i] = FunctionContext(self, fn, key, cls, probe_only=True)
                    ctx.walk()
                self.returns_tensor[key] = ctx.returns_tensor
                # A mask helper (e2-tts' `mask_from_frac_lengths`: `return (a >= lo) & (a < hi)`):
                # its calls in this file are boolean tensors, masks for DYN130.
                self.returns_bool[key] = ctx.returns_tensor and ctx.returns_only_bool
                self.returns_tuple[key] = ctx.returned_tuple_kinds()
                self.passthrough[key] = ctx.passthrough_slots()
                if ctx.evidence:
                    self.param_evidence[key] = self.param_evidence.get(key, frozenset()) | ctx.evidence
        for fn, prefix, cls in self.defs:
            self._visit_function(fn, prefix, cls)
        for qual, info in self.summary.functions.items():
            info.returns_tensor = bool(self.returns_tensor.get(qual))
            info.passthrough = [list(slot) for slot in self.passthrough.get(qual) or ()]
        self._resolve_positions()
        return self.summary

    def scan_module_level(self) -> None:
        """Names defined and imported at module level, loggers, torch.compile targets."""
        self._class_names = {s.name.value for s in self.module.body if type(s) is cst.ClassDef}
        for stmt in self.module.body:
            if type(stmt) is cst.FunctionDef:
                self.local_functions[stmt.name.value] = stmt
        self.collect_imports()
        self._collect_rnn_classes()
        self._collect_apply_aliases()
        self._collect_registries()
        self._collect_class_aliases()
        self._collect_module_level()
        self._collect_module_locks()

    def _collect_rnn_classes(self) -> None:
        """Classes of this file deriving from nn.LSTM / GRU / RNN (pytorch-forecasting's `class
        LSTM(RNN, nn.LSTM)`): Dynamo refuses them as it refuses their bases."""
        classes = [s for s in self.module.body if type(s) is cst.ClassDef]
        changed = True
        while changed:
            changed = False
            for node in classes:
                qual = f"{self.summary.module}.{node.name.value}"
                if qual in self.rnn_classes:
                    continue
                bases = {self.qualname(a.value) for a in node.bases if a.keyword is None}
                if bases & RNN_BASES or bases & self.rnn_classes:
                    self.rnn_classes.add(qual)
                    changed = True

    def _collect_apply_aliases(self) -> None:
        """`pscan = PScan.apply` at module level: calls of `pscan(...)` are calls of the custom
        autograd function (lint.regions follows them into its forward and backward)."""
        imports = self.summary.imports
        for stmt in self.module.body:
            if type(stmt) is not cst.SimpleStatementLine or len(stmt.body) != 1 or type(stmt.body[0]) is not cst.Assign:
                continue
            assign = stmt.body[0]
            value = assign.value
            if (
                len(assign.targets) == 1 and type(assign.targets[0].target) is cst.Name
                and type(value) is cst.Attribute and value.attr.value == "apply"
                and type(value.value) is cst.Name and value.value.value in self._class_names
            ):
                imports.setdefault(assign.targets[0].target.value, f"{self.summary.module}.{value.value.value}.apply")

    def _collect_class_aliases(self) -> None:
        """`MyModule = torch.nn.Module` at module level (rwkv: `torch.jit.ScriptModule` in one
        branch of an `if`, `torch.nn.Module` in the other): a base class named through it is
        that class. Where branches differ, `torch.nn` wins (ScriptModule derives from it)."""
        self.class_aliases: dict[str, str] = {}
        stack = list(self.module.body)
        while stack:
            stmt = stack.pop()
            if type(stmt) in (cst.If, cst.Try):
                blocks = [stmt.body] + ([stmt.orelse.body] if getattr(stmt, "orelse", None) is not None else [])
                stack += [s for b in blocks if type(b) is cst.IndentedBlock for s in b.body]
                if type(stmt) is cst.If and type(stmt.orelse) is cst.If:
                    stack.append(stmt.orelse)
                continue
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                    d = dotted(small.value)
                    if d is None or "." not in d:
                        continue
                    name, q = small.targets[0].target.value, self.resolve(d)
                    if not q[q.rfind(".") + 1:][:1].isupper():
                        continue  # a class by its capital
                    if name not in self.class_aliases or q.startswith("torch.nn."):
                        self.class_aliases[name] = q

    def _collect_registries(self) -> None:
        """`REGISTRY = {"vanilla": slstm_forward, ...}` at module level, every value a function or
        class the file names: a method storing `REGISTRY[key]` on self and calling it runs one of
        them (lint.regions follows such calls, in this file or in files importing the dict)."""
        self.registry_names: set[str] = set()
        for stmt in self.module.body:
            if type(stmt) is not cst.SimpleStatementLine or len(stmt.body) != 1:
                continue
            small = stmt.body[0]
            if type(small) is cst.Assign and len(small.targets) == 1:
                target = small.targets[0].target
            elif type(small) is cst.AnnAssign:
                target = small.target
            else:
                continue
            value = small.value
            if type(target) is not cst.Name or type(value) is not cst.Dict or not value.elements:
                continue
            names = self._registry_values(value)
            if names is not None:
                self.registry_names.add(target.value)
                self.summary.registries[f"{self.summary.module}.{target.value}"] = list(dict.fromkeys(names))

    def _registry_values(self, value: cst.Dict, depth: int = 0) -> Optional[list[str]]:
        """The functions and classes a registry dict names: each value a name the file defines or
        imports, `partial(f, ...)` of one, or such a dict itself (geomloss' `routines[loss][backend]`);
        None when one value is anything else."""
        names = []
        for element in value.elements:
            if type(element) is not cst.DictElement:
                return None
            item = element.value
            if type(item) is cst.Dict and depth < 2 and item.elements:
                inner = self._registry_values(item, depth + 1)
                if inner is None:
                    return None
                names += inner
                continue
            if type(item) is cst.Call and item.args and self.qualname(item.func) == "functools.partial":
                item = item.args[0].value
            if type(item) not in (cst.Name, cst.Attribute):
                return None
            q = self.qualname(item)
            if q is None or q == dotted(item):  # not a name the file defines or imports
                return None
            names.append(q)
        return names

    def _rnn_by_name(self, value: cst.Call) -> bool:
        """`getattr(nn, rnn_type.upper())(...)` (asteroid's SingleRNN): an `nn` class picked by a
        name that says it is an RNN (`rnn_type`, `"LSTM"`)."""
        func = value.func
        if not (type(func) is cst.Call and self.qualname(func.func) == "getattr" and len(func.args) >= 2
                and self.qualname(func.args[0].value) == "torch.nn"):
            return False
        words = [n.value for n in fastcst.iter_nodes(func.args[1].value) if type(n) in (cst.Name, cst.SimpleString)]
        return any(w in text.lower() for text in words for w in ("rnn", "lstm", "gru"))

    def _builds_rnn(self, q: Optional[str]) -> bool:
        """Is `q` nn.LSTM / GRU / RNN or a class deriving from one (of this file or another)?"""
        return q in RNN_MODULES or q in self.rnn_classes or q in self.options.external_rnn_types

    def _stored_callable(self, value: cst.BaseExpression, params: set) -> Optional[str]:
        """What `self.<attr> = value` stores when it may be a plain function called through the
        attribute: a function the file defines or imports, a method of self, or an item of a
        registry (`_collect_registries`, or a name imported from another file)."""
        if type(value) is cst.Name:
            if value.value in params:
                return None
            q = self.qualname(value)
            return q if q != value.value else None
        if type(value) is cst.Attribute and type(value.value) is cst.Name:
            if value.value.value == "self":
                return f"self:{value.attr.value}"
            return None
        if type(value) is cst.Subscript and type(value.value) is cst.Name:
            name = value.value.value
            if name in params:
                return None
            if name in self.registry_names:
                return f"{self.summary.module}.{name}[]"
            imported = self.summary.imports.get(name)
            return f"{imported}[]" if imported else None
        return None

    def record_fields(self, name: str) -> dict[str, str]:
        """Kinds of the annotated fields of a module-level `NamedTuple` subclass or `@dataclass` of
        the file (`distances: Tensor` -> T); empty for any other name."""
        records = self._records
        if records is None:
            records = self._records = {}
            for stmt in self.module.body:
                if type(stmt) is not cst.ClassDef or type(stmt.body) is not cst.IndentedBlock:
                    continue
                bases = {(self.qualname(a.value) or "").rsplit(".", 1)[-1] for a in stmt.bases}
                decorators = {(self.qualname(decorator_target(d)) or "").rsplit(".", 1)[-1]
                              for d in stmt.decorators}
                if "NamedTuple" not in bases and "dataclass" not in decorators:
                    continue
                fields = {}
                for line in stmt.body.body:
                    if type(line) is cst.SimpleStatementLine and len(line.body) == 1 and type(line.body[0]) is cst.AnnAssign:
                        ann = line.body[0]
                        if type(ann.target) is cst.Name:
                            fields[ann.target.value] = annotation_kind(ann.annotation)
                records[stmt.name.value] = fields
        return records.get(name, {})

    def _collect_module_locks(self) -> None:
        """`_lock = threading.Lock()` at module level (Dynamo cannot enter such a lock)."""
        for stmt in self.module.body:
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                if type(small) is cst.Assign and type(small.value) is cst.Call and self.qualname(small.value.func) in LOCK_TYPES:
                    self.lock_names.update(t.target.value for t in small.targets if type(t.target) is cst.Name)

    def _collect_module_level(self) -> None:
        """Loggers and torch.compile(fn) targets anywhere in the file: a function of the tree and
        the module name only, so the analyses of one text with different facts share it."""
        scans = module_scans(self.module)
        found = scans.get(self.summary.module)
        if found is not None:
            self.logger_names, self.compile_called_names = set(found[0]), set(found[2])
            self.summary.compile_targets = list(found[1])
            return
        collector = _ModuleScan(self)
        if self.source is not None and not _COMPILE_WORD.search(self.source):
            # A call of torch.compile needs the word `compile` in the file; loggers are assigned in
            # statements, so without it only statement bodies need walking (most files).
            for node in fastcst.iter_nodes(self.module, descend=fastcst.STATEMENT_CONTAINERS):
                if type(node) is cst.Assign:
                    collector.visit_Assign(node)
        else:
            fastcst.visit(self.module, collector)
        scans[self.summary.module] = (
            tuple(self.logger_names), tuple(self.summary.compile_targets), tuple(self.compile_called_names)
        )

    def _declare(self, stmt: cst.CSTNode, prefix: str, cls: Optional[str]) -> None:
        if type(stmt) is cst.ClassDef:
            self._declare_class(stmt, prefix)
        elif type(stmt) is cst.FunctionDef:
            self.defs.append((stmt, prefix, cls))
        elif type(stmt) in (cst.If, cst.Try):  # `if TYPE_CHECKING:` / version switches
            for s in stmt.body.body if type(stmt.body) is cst.IndentedBlock else ():
                self._declare(s, prefix, cls)

    def _declare_class(self, node: cst.ClassDef, prefix: str) -> None:
        qual = f"{prefix}.{node.name.value}"
        bases = []
        for arg in node.bases:
            if arg.keyword is not None:
                continue
            expr = arg.value
            if type(expr) is cst.Subscript:  # Generic[T], nn.ModuleList[...]
                expr = expr.value
            q = self.qualname(expr)
            if type(expr) is cst.Name and q == expr.value:
                q = self.global_name(self.class_aliases.get(q, q))
            if q is not None:
                bases.append(q)
        body = node.body.body if type(node.body) is cst.IndentedBlock else ()
        methods = [s.name.value for s in body if type(s) is cst.FunctionDef]
        info = ClassInfo(qualname=qual, bases=bases, methods=methods)
        self.summary.classes[qual] = info
        if node.decorators:
            self.class_decorators[qual] = node.decorators
        if any(b in K.AUTOGRAD_FUNCTION_BASES or b in self.autograd_functions for b in bases):
            self.autograd_functions.add(qual)
        self.tensor_attrs[qual] = set()
        self.all_attrs[qual] = set()
        # __init__ (and other non-forward methods) tell which attributes are tensors or submodules.
        for s in body:
            if type(s) is cst.FunctionDef and s.name.value != "forward":
                self._scan_attr_assignments(s, qual, info)
        # An attribute built as an RNN in one branch of __init__ and as another module in
        # another (recbole's DIEN: nn.GRU or its own DynamicRNN) may be either: not an RNN.
        # Unless the parameters' defaults pick the RNN's branch (stanza's PackedLSTM: nn.LSTM
        # when `rec_dropout == 0`, its default).
        others = self._non_rnn_modules.pop(qual, None)
        if others and qual in self.rnn_attrs:
            init = next((s for s in body if type(s) is cst.FunctionDef and s.name.value == "__init__"), None)
            by_default = _default_path_attrs(init, self._builds_rnn, self.qualname) if init is not None else set()
            self.rnn_attrs[qual] -= others - by_default
        for s in body:
            if type(s) is cst.FunctionDef:
                self.defs.append((s, qual, qual))
                if _is_abstract(s):
                    self.abstract_methods.add(f"{qual}.{s.name.value}")
            elif type(s) is cst.ClassDef:
                self._declare_class(s, qual)

    def _built_by(self, value: cst.BaseExpression) -> tuple[cst.BaseExpression, Optional[str]]:
        """(the call a value comes from, its dotted name): `torch.zeros(n).to(self.device)`,
        `.float()`, `.cuda()` are the tensor they convert (recbole builds every tensor attribute so)."""
        while (type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in K.TENSOR_CONVERSIONS
               and type(value.func.value) is cst.Call):
            value = value.func.value
        return value, (self.qualname(value.func) if type(value) is cst.Call else None)

    def _makes_tensor(self, value: cst.BaseExpression) -> bool:
        """A torch call that returns a tensor (`torch.zeros(n)`, `torch.bernoulli(p).to(device)`)."""
        return _torch_tensor_call(self._built_by(value)[1])

    def _scan_attr_assignments(self, fn: cst.FunctionDef, cls: str, info: ClassInfo) -> None:
        tensor_attrs = self.tensor_attrs[cls]
        all_attrs = self.all_attrs[cls]
        params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
        # parameters annotated as plain callables (`check_conv_fn: Callable[[int, dict, dict], bool]`,
        # deepinv): stored on self, they are no submodules
        callables = {
            p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)
            if p.annotation is not None and _names_callable(p.annotation.annotation, self)
        }
        for node in iter_code_nodes(fn.body):
            if type(node) in (cst.Assign, cst.AnnAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                value = node.value
                for tgt in targets:
                    key = self_dict_key(tgt)
                    if key is not None and value is not None and self._makes_tensor(value):
                        # `self.transform_parameters["should_apply"] = torch.bernoulli(...)`
                        self.tensor_items.setdefault(cls, set()).add(key)
                        continue
                    if type(tgt) is cst.Attribute and type(tgt.value) is cst.Name and tgt.value.value == "self":
                        attr = tgt.attr.value
                        all_attrs.add(attr)
                        numpy_math = _numpy_math(value, self) if value is not None else None
                        if numpy_math is not None:
                            # `self.hop_length = np.prod(encoder_rates)` (DAC): a tensor under Dynamo
                            self.numpy_attrs.setdefault(cls, {})[attr] = numpy_math
                            continue
                        if value is None:
                            continue
                        if type(value) is cst.Lambda or (
                            type(value) is cst.Call and self.qualname(value.func) == "functools.partial"
                        ) or (type(value) is cst.Name and value.value in callables):
                            self.callable_attrs.setdefault(cls, set()).add(attr)
                            continue
                        if is_sequence_display(value):
                            self.sequence_attrs.setdefault(cls, set()).add(attr)
                        if type(value) is not cst.Call:
                            _store_callable(info, attr, self._stored_callable(value, params))
                            continue
                        value, q = self._built_by(value)
                        if q in SEQUENCE_BUILDERS:
                            self.sequence_attrs.setdefault(cls, set()).add(attr)
                        if q is not None and q.rsplit(".", 1)[-1][:1].isupper() and not self._builds_rnn(q):
                            self._non_rnn_modules.setdefault(cls, set()).add(attr)
                        if q is not None and (
                            q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Buffer")
                            or _torch_tensor_call(q)
                        ):
                            tensor_attrs.add(attr)
                            if q in ("torch.nn.Buffer", "torch.nn.parameter.Buffer"):
                                self.buffer_attrs.setdefault(cls, set()).add(attr)
                        elif self._builds_rnn(q) or self._rnn_by_name(value):
                            self.rnn_attrs.setdefault(cls, set()).add(attr)

                        elif q in LOCK_TYPES:
                            self.lock_attrs.setdefault(cls, set()).add(attr)
                        elif q is not None:
                            types = submodule_types(value, self)
                            if types:
                                info.attr_types[attr] = types
                            if types or (q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper()):
                                self.module_attrs.setdefault(cls, set()).add(attr)
            elif type(node) is cst.Call:
                func = node.func
                if (type(func) is cst.Attribute and func.attr.value == "__init__" and type(func.value) is cst.Call
                        and type(func.value.func) is cst.Name and func.value.func.value == "super"):
                    # `super().__init__(state_fallback=self.initial_state)` (norse's LIFCell): the base
                    # presumably stores it under the keyword's name and calls `self.state_fallback(x)`.
                    for arg in node.args:
                        stored = self._stored_callable(arg.value, params) if arg.keyword is not None else None
                        if stored is not None and stored.startswith("self:"):
                            _store_callable(info, arg.keyword.value, stored)
                    continue
                if (
                    type(func) is cst.Attribute
                    and func.attr.value in ("register_buffer", "register_parameter")
                    and node.args
                    and type(node.args[0].value) is cst.SimpleString
                ):
                    name = node.args[0].value.evaluated_value
                    if isinstance(name, str):
                        tensor_attrs.add(name)
                        all_attrs.add(name)

    def _visit_function(self, node: cst.FunctionDef, prefix: str, cls: Optional[str]) -> None:
        qual = f"{prefix}.{node.name.value}"
        info = FunctionInfo(qualname=qual, cls=cls, name=node.name.value)
        if cls is None and prefix == self.summary.module:
            if self._wrappers is None:
                self._wrappers = wrapper_functions(self.module)
            info.wraps = node.name.value in self._wrappers
        if qual in self.options.extra_roots or any(
            matches_root_pattern(qual, r) for r in self.options.extra_roots if is_root_pattern(r)
        ):
            info.compile_root = True  # named in `extra-roots`: compiled by the user, like `@torch.compile`
        for dec in node.decorators:
            target = decorator_target(dec)
            q = self.qualname(target)
            if q in K.COMPILE_DECORATORS:
                info.compile_root = True
            if q in K.DISABLE_DECORATORS or (q is not None and q.rpartition(".")[2] in K.CUSTOM_OP_REGISTRATIONS):
                info.disabled = True
            # functools.partial(torch.compile, ...) style decorators are rare enough to skip.
            if not info.compile_root and not info.disabled:
                edge = self._decorator_edge(target)
                if edge is not None:
                    # The wrapper a decorator of the project returns runs in place of the function
                    # (gpytorch's `@cached` pickles its cache key there): the decorator is walked
                    # as called, its nested wrapper with it.
                    info.edges.append(edge)
        self.summary.functions[qual] = info
        if info.disabled:
            return
        ctx = FunctionContext(self, node, qual, cls, info=info)
        ctx.walk()

    def _decorator_edge(self, expr: cst.BaseExpression) -> Optional[tuple]:
        """A call edge to a decorator that may be a function of the linted files: one of this
        file, or a lower-case name imported (a dotted one through an imported module). Marked
        `name@`: it resolves only to a function that `wraps` (`lint.regions`)."""
        if type(expr) is cst.Name:
            name = expr.value
            if name in self.local_functions or (name in self.summary.imports and not name[:1].isupper()):
                return ("name", self.resolve(name) + "@")
            return None
        if type(expr) is cst.Attribute and not expr.attr.value[:1].isupper():
            q = self.qualname(expr)
            if q is not None and not q.startswith(_NOT_PROJECT_DECORATORS):
                return ("name", q + "@")
        return None

    # -- reporting --------------------------------------------------------------------------
    def add_finding(self, node: cst.CSTNode, code: str, message: str, scope: str, data: dict, fix) -> None:
        self.pending.append((node, code, message, data, fix, scope))

    def method_owners(self) -> dict:
        """Method name -> the file's classes defining it (built on first use)."""
        if self._method_owners is None:
            owners: dict = {}
            for qual, info in self.summary.classes.items():
                for meth in info.methods:
                    owners.setdefault(meth, []).append(qual)
            self._method_owners = owners
        return self._method_owners

    def note_part(self, fn: cst.FunctionDef, stmt: Optional[cst.CSTNode]) -> None:
        """The statement of `fn`'s body whose walk reported (None: not known, so the whole
        function is positioned): big files position those statements first (`fastcst.Enclosing`)."""
        parts = self.reported_parts.get(id(fn), {})
        if parts is None:
            return
        if stmt is None:
            self.reported_parts[id(fn)] = None
        else:
            parts[id(stmt)] = stmt
            self.reported_parts[id(fn)] = parts

    def _statements_with_findings(self) -> Optional[set]:
        """Top-level statements holding the functions that reported (positions are only computed
        there; other nodes are positioned on demand). None: position everything."""
        scopes = {scope for *_, scope in self.pending}
        functions = [fn for fn, prefix, _ in self.defs if f"{prefix}.{fn.name.value}" in scopes]
        if not scopes <= {f"{prefix}.{fn.name.value}" for fn, prefix, _ in self.defs}:
            return None
        return fastcst.enclosing_statements(self.module, functions, self.reported_parts)

    def _resolve_positions(self) -> None:
        if not self.pending:
            return
        seen = set()
        for entries, positions in self._placement_batches(self._statements_with_findings()):
            self._place(entries, positions, seen)
        self.summary.findings.sort(key=Finding.sort_key)

    def _placement_batches(self, within: Optional[set]):
        """(pending findings, the positions to place them with), in the order of `pending`. In a
        big file, one top-level statement's findings at a time with that statement's positions
        only, dropped after (all of them at once set a big file's peak memory); else all at once."""
        batches = None
        statements = fastcst.StatementPositions.for_file(self.module, self.source, within)
        if statements is not None:
            batches = self._statement_runs(within)
        if batches is None:
            yield self.pending, fastcst.positions(self.module, self.source, within)
            return
        for stmt, entries in batches:
            yield entries, statements.of(stmt)

    def _statement_runs(self, within) -> Optional[list]:
        """`pending` cut into runs of findings in one top-level statement, or None when a
        finding's function cannot be told apart or the runs interleave much."""
        stmt_of_fn = {id(fn): stmt for stmt, pieces in within.functions.items() for fn, _ in pieces}
        stmt_of_scope: dict = {}
        for fn, prefix, _ in self.defs:
            stmt = stmt_of_fn.get(id(fn))
            if stmt is not None and stmt_of_scope.setdefault(f"{prefix}.{fn.name.value}", stmt) is not stmt:
                return None  # one name, functions in two statements
        runs: list = []
        for entry in self.pending:
            stmt = stmt_of_scope.get(entry[-1])
            if stmt is None:
                return None
            if runs and runs[-1][0] is stmt:
                runs[-1][1].append(entry)
            else:
                runs.append((stmt, [entry]))
        if len(runs) > 2 * len(within) + 8:
            return None
        return runs

    def _place(self, entries: list, positions, seen: set) -> None:
        for node, code, message, data, fix, scope in entries:
            pos = positions[node]
            key = (code, pos.start.line, pos.start.column, pos.end.line, pos.end.column)
            if key in seen:
                continue
            seen.add(key)
            if callable(fix):
                try:
                    fix = fix(positions, self.module)
                except Exception:  # a fix generator bug must never lose the finding
                    fix = None
            self.summary.findings.append(
                Finding(
                    code=code,
                    message=message,
                    filename=self.filename,
                    row=pos.start.line,
                    column=pos.start.column + 1,
                    end_row=pos.end.line,
                    end_column=pos.end.column + 1,
                    fix=fix,
                    scope=scope,
                    data=data,
                )
            )


RNN_MODULES, RNN_BASES = K.RNN_MODULES, K.RNN_BASES


# Locks Dynamo cannot enter ("Unsupported context manager"; probed on torch 2.13: DYN109).
LOCK_TYPES = frozenset({"threading.Lock", "threading.RLock"})

# Calls that build a Python sequence (indexing one with a tensor reads the tensor back as an int).
SEQUENCE_BUILDERS = frozenset({
    "list", "tuple", "range", "torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ParameterList",
})


def is_sequence_display(value: cst.BaseExpression) -> bool:
    """`[a, b]`, `(a, b)`, `[f(i) for i in ...]`, `[x] * n`."""
    while type(value) is cst.BinaryOperation and type(value.operator) is cst.Multiply:
        value = value.left
    return type(value) in (cst.List, cst.Tuple, cst.ListComp)


def _walk_imports(module: cst.Module):
    # Imports are statements: only statement bodies are entered (same order, far fewer nodes).
    for node in fastcst.iter_nodes(module, descend=fastcst.STATEMENT_CONTAINERS):
        if type(node) in (cst.Import, cst.ImportFrom):
            yield node


_COMPILE_WORD = re.compile(r"\bcompile\b")


class _ModuleScan(cst.CSTVisitor):
    def __init__(self, fa: FileAnalyzer):
        self.fa = fa

    def visit_Assign(self, node: cst.Assign) -> None:
        if type(node.value) is cst.Call:
            q = self.fa.qualname(node.value.func) or ""
            if q.endswith(("getLogger", "get_logger")):
                for t in node.targets:
                    d = dotted(t.target)
                    if d:
                        self.fa.logger_names.add(d)

    def visit_Call(self, node: cst.Call) -> None:
        q = self.fa.qualname(node.func)
        if q == "torch.compile" and node.args and node.args[0].keyword is None:
            target = node.args[0].value
            if type(target) is cst.Call:  # torch.compile(Model(...))
                target = target.func
            t = self.fa.qualname(target)
            if t is not None:
                self.fa.summary.compile_targets.append(t)
                self.fa.compile_called_names.add(t.rsplit(".", 1)[-1])


def _is_abstract(fn: cst.FunctionDef) -> bool:
    """A body of only a docstring and `raise NotImplementedError(...)`."""
    body = fn.body.body if type(fn.body) is cst.IndentedBlock else ()
    stmts = [s for s in body if not (type(s) is cst.SimpleStatementLine and type(s.body[0]) is cst.Expr
                                     and type(s.body[0].value) in (cst.SimpleString, cst.ConcatenatedString))]
    if len(stmts) != 1 or type(stmts[0]) is not cst.SimpleStatementLine:
        return False
    small = stmts[0].body[0]
    if type(small) is not cst.Raise or small.exc is None:
        return False
    exc = small.exc.func if type(small.exc) is cst.Call else small.exc
    return type(exc) is cst.Name and exc.value == "NotImplementedError"


def _literal(node: cst.BaseExpression, defaults: dict):
    """(known, value) of a literal or of a parameter with a literal default."""
    if type(node) is cst.Name:
        if node.value in defaults:
            return True, defaults[node.value]
        if node.value in _LITERAL_DEFAULTS:
            return True, _LITERAL_DEFAULTS[node.value]
        return False, None
    if type(node) in (cst.Integer, cst.Float, cst.SimpleString):
        try:
            return True, ast.literal_eval(node.value)
        except (ValueError, SyntaxError):
            return False, None
    return False, None


def _test_under_defaults(test: cst.BaseExpression, defaults: dict):
    """The value of an `if` test over parameters left at their literal defaults, or None."""
    if _is_logical(test):
        operands = (test.left, test.right) if type(test) is cst.BooleanOperation else (test.expression,)
        return _combine_truth(test, [_test_under_defaults(o, defaults) for o in operands])
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        (ka, a), (kb, b) = _literal(test.left, defaults), _literal(test.comparisons[0].comparator, defaults)
        if not (ka and kb):
            return None
        op = type(test.comparisons[0].operator)
        ops = {cst.Equal: lambda: a == b, cst.NotEqual: lambda: a != b, cst.Is: lambda: a is b, cst.IsNot: lambda: a is not b}
        return ops[op]() if op in ops else None
    known, value = _literal(test, defaults)
    return bool(value) if known else None


def _default_path_attrs(init: cst.FunctionDef, builds_rnn, qualname) -> set:
    """Attributes `__init__` sets to an RNN on the path its parameters' defaults take through
    `if` statements whose tests read only them (`if rec_dropout == 0:` with `rec_dropout=0`).
    Not a parameter `__init__` keeps on self (recbole's DIEN: `self.gru = gru`, and forward
    picks its code by `self.gru`): its value is the caller's, and so is the module's kind."""
    kept = {
        small.value.value
        for node in iter_code_nodes(init.body) if type(node) is cst.SimpleStatementLine
        for small in node.body if type(small) is cst.Assign and type(small.value) is cst.Name
    }
    defaults = {}
    for p in (*init.params.params, *init.params.kwonly_params):
        if p.default is not None and p.name.value not in kept:
            known, value = _literal(p.default, {})
            if known:
                defaults[p.name.value] = value
    found: set = set()

    def walk(statements) -> None:
        for stmt in statements:
            if type(stmt) is cst.If:
                branch = stmt
                while branch is not None:
                    if type(branch) is cst.Else:
                        walk(branch.body.body)
                        break
                    value = _test_under_defaults(branch.test, defaults)
                    if value is None:
                        break  # not decided by the defaults: neither branch is the default path
                    if value:
                        walk(branch.body.body)
                        break
                    branch = branch.orelse
            elif type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Assign and type(small.value) is cst.Call and builds_rnn(qualname(small.value.func)):
                        for t in small.targets:
                            if type(t.target) is cst.Attribute and type(t.target.value) is cst.Name and t.target.value.value == "self":
                                found.add(t.target.attr.value)

    if type(init.body) is cst.IndentedBlock:
        walk(init.body.body)
    return found

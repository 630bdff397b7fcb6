"""Phase 1 of linting: one file, no knowledge of other files.

`analyze_source` parses a file with libcst and returns a `FileSummary`: what the file defines
(classes with their bases, functions, imports), the calls each function makes (edges, resolved
to dotted names where the file alone allows it), and the candidate findings in every function.
Which functions really run under torch.compile is decided later across all files
(`lint.regions`), so a summary depends only on the file's text and can be cached by content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from dynalint.findings import NOQA, Finding, Fix

from . import fastcst
from . import kinds as K
from .nodes import dotted, is_none
from .kinds import B, N, P, S, T, U, TENSORISH
# The summary data (plain, JSON-able) lives apart, so that cached runs need no libcst.
from .summary import ClassInfo, FileSummary, FunctionInfo


@dataclass
class AnalyzerOptions:
    is_compiling_functions: frozenset[str] = frozenset()
    rule_codes: Optional[frozenset[str]] = None  # None: all rules
    # function qualname -> {parameter position (as str) or name: kind}: tensors that callers in
    # other files pass (computed by the engine from the other files' `call_hints`).
    external_hints: Optional[dict[str, dict[str, str]]] = None
    # qualnames of functions in other files that return tensors (`h = rms_normalize(x)`).
    external_returns: frozenset[str] = frozenset()
    # qualnames of functions in other files returning some of their parameters as they came
    # (`default(val, d)`) -> ((position, name, kind of the default), ...)
    external_passthrough: Optional[dict[str, tuple]] = None


# --------------------------------------------------------------------------------------------
# Helpers on libcst nodes


def _terminates(block: cst.BaseSuite) -> bool:
    """Does this block always leave the function (return/raise as its last statement)?"""
    if type(block) is cst.IndentedBlock:
        if not block.body:
            return False
        last = block.body[-1]
    else:
        last = block
    if type(last) in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
        return any(type(s) in (cst.Return, cst.Raise) for s in last.body)
    return False


def _param_names(params: cst.Parameters) -> list[cst.Param]:
    return list(params.posonly_params) + list(params.params) + list(params.kwonly_params)


TENSOR_TYPE_NAMES = frozenset(
    {"Tensor", "FloatTensor", "LongTensor", "BoolTensor", "IntTensor", "HalfTensor", "DoubleTensor",
     "ByteTensor", "BFloat16Tensor", "Parameter", "Buffer"}
)


def _union_members(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`A | B`, `Optional[A]`, `Union[A, B]` -> [A, B] (None dropped); anything else -> [node]."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:
        return _union_members(node.left) + _union_members(node.right)
    if type(node) is cst.Subscript:
        head = dotted(node.value) or ""
        if head.split(".")[-1] in ("Optional", "Union"):
            out = []
            for el in node.slice:
                if type(el.slice) is cst.Index:
                    out += _union_members(el.slice.value)
            return out
    if type(node) is cst.Name and node.value == "None":
        return []
    if type(node) is cst.SimpleString:
        try:
            return _union_members(cst.parse_expression(node.evaluated_value))
        except Exception:
            return [node]
    return [node]


def annotation_kind(ann: Optional[cst.Annotation]) -> Optional[str]:
    """T for `Tensor` / `Optional[Tensor]`, P for `int | Tensor`, N for anything else
    (`list[Tensor]` is a list), None when there is no annotation."""
    if ann is None:
        return None
    members = _union_members(ann.annotation)
    tensors = [m for m in members if (dotted(m) or "").split(".")[-1] in TENSOR_TYPE_NAMES]
    if not tensors:
        return N
    return T if len(tensors) == len(members) else P


_TYPE_COMMENT = re.compile(r"#\s*type:\s*\((.*)\)\s*->")


def type_comment_kinds(fn: cst.FunctionDef) -> Optional[list[Optional[str]]]:
    """Kinds of the parameters from a signature type comment (TorchScript-era code:
    `# type: (Tensor, int) -> Tensor`, on the `def` line or first in the body), in order, `self`
    not included; None when the function has none."""
    texts = []
    header = getattr(fn.body, "header", None)
    if header is not None and header.comment is not None:
        texts.append(header.comment.value)
    body = getattr(fn.body, "body", ())
    if body:
        texts += [line.comment.value for line in getattr(body[0], "leading_lines", ()) if line.comment is not None]
    for text in texts:
        m = _TYPE_COMMENT.match(text.strip())
        if m is None:
            continue
        params = m.group(1).strip()
        if not params:
            return []
        try:  # the parameter list read as a tuple of type expressions: `(Tensor, dict[str, int],)`
            types = cst.parse_expression(f"({params},)")
        except cst.ParserSyntaxError:
            return None
        if type(types) is not cst.Tuple:
            return None
        return [annotation_kind(cst.Annotation(e.value)) for e in types.elements]
    return None


# --------------------------------------------------------------------------------------------
# File-level analysis


class FileAnalyzer:
    def __init__(self, module: cst.Module, filename: str, module_name: str, is_package: bool, options: AnalyzerOptions):
        from .rules import rules_by_node_type

        self.module = module
        self.filename = filename
        self.options = options
        self.summary = FileSummary(filename=filename, module=module_name)
        self.is_package = is_package
        self.rules_by_type = rules_by_node_type(options.rule_codes)
        self.pending: list[tuple[cst.CSTNode, str, str, dict, Optional[Fix], str]] = []
        self.local_functions: dict[str, cst.FunctionDef] = {}
        self.returns_tensor: dict[str, bool] = {}
        # Methods a subclass must provide (`raise NotImplementedError`): what they return is unknown here.
        self.abstract_methods: set[str] = set()
        self.logger_names: set[str] = set()
        self.tensor_attrs: dict[str, set[str]] = {}  # class qualname -> attrs holding tensors
        self.buffer_attrs: dict[str, set[str]] = {}  # class qualname -> attrs set to nn.Buffer(...)
        self.all_attrs: dict[str, set[str]] = {}  # class qualname -> attrs assigned in __init__
        self.rnn_attrs: dict[str, set[str]] = {}  # class qualname -> attrs holding nn.LSTM/GRU/RNN
        self.lock_attrs: dict[str, set[str]] = {}  # class qualname -> attrs holding threading locks
        self.lock_names: set[str] = set()  # module-level names bound to threading locks
        self._subclasses: Optional[dict[str, list[str]]] = None  # base -> classes of this file
        self.compile_called_names: set[str] = set()
        # function qualname -> {parameter position or name: kind of the tensor passed there}
        self.param_hints: dict[str, dict] = {}
        # function qualname -> parameters with a `None` default that its body uses as tensors
        # (a tensor method on them, `~mask`, arithmetic with a tensor, an argument of a torch op).
        self.param_evidence: dict[str, frozenset] = {}
        # function qualname -> the parameters some `return` gives back as they came in
        # (`def default(val, d): return val if exists(val) else d`), as (position, name, kind of
        # the default): a call's value is then its arguments' kinds, not a tensor for all callers.
        self.passthrough: dict[str, tuple] = {}
        # id of a function node -> its parameters only ever used as ints (`range(n)`, `n == 1`).
        self._int_only: dict[int, frozenset] = {}
        # The text `module` was parsed from, when known: lets positions and scans skip work.
        self.source: Optional[str] = None

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
        self._collect_module_level()
        self._collect_module_locks()

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
        scans = _scans_of(self.module)
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
            if q is not None:
                bases.append(q)
        body = node.body.body if type(node.body) is cst.IndentedBlock else ()
        methods = [s.name.value for s in body if type(s) is cst.FunctionDef]
        info = ClassInfo(qualname=qual, bases=bases, methods=methods)
        self.summary.classes[qual] = info
        self.tensor_attrs[qual] = set()
        self.all_attrs[qual] = set()
        # __init__ (and other non-forward methods) tell which attributes are tensors or submodules.
        for s in body:
            if type(s) is cst.FunctionDef and s.name.value != "forward":
                self._scan_attr_assignments(s, qual, info)
        for s in body:
            if type(s) is cst.FunctionDef:
                self.defs.append((s, qual, qual))
                if _is_abstract(s):
                    self.abstract_methods.add(f"{qual}.{s.name.value}")
            elif type(s) is cst.ClassDef:
                self._declare_class(s, qual)

    def _scan_attr_assignments(self, fn: cst.FunctionDef, cls: str, info: ClassInfo) -> None:
        tensor_attrs = self.tensor_attrs[cls]
        all_attrs = self.all_attrs[cls]
        for node in _iter_nodes(fn.body):
            if type(node) in (cst.Assign, cst.AnnAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                value = node.value
                for tgt in targets:
                    if type(tgt) is cst.Attribute and type(tgt.value) is cst.Name and tgt.value.value == "self":
                        attr = tgt.attr.value
                        all_attrs.add(attr)
                        if value is None:
                            continue
                        q = self.qualname(value.func) if type(value) is cst.Call else None
                        if q is not None and (
                            q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Buffer")
                            or (q.startswith("torch.") and not _torch_non_tensor(q) and not q.startswith("torch.nn."))
                        ):
                            tensor_attrs.add(attr)
                            if q in ("torch.nn.Buffer", "torch.nn.parameter.Buffer"):
                                self.buffer_attrs.setdefault(cls, set()).add(attr)
                        elif q in RNN_MODULES:
                            self.rnn_attrs.setdefault(cls, set()).add(attr)
                        elif q in LOCK_TYPES:
                            self.lock_attrs.setdefault(cls, set()).add(attr)
                        elif q is not None:
                            types = _submodule_types(value, self)
                            if types:
                                info.attr_types[attr] = types
            elif type(node) is cst.Call:
                func = node.func
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
        for dec in node.decorators:
            expr = dec.decorator
            q = self.qualname(expr.func if type(expr) is cst.Call else expr)
            if q in K.COMPILE_DECORATORS:
                info.compile_root = True
            if q in K.DISABLE_DECORATORS:
                info.disabled = True
            # functools.partial(torch.compile, ...) style decorators are rare enough to skip.
        self.summary.functions[qual] = info
        if info.disabled:
            return
        ctx = FunctionContext(self, node, qual, cls, info=info)
        ctx.walk()

    # -- reporting --------------------------------------------------------------------------
    def add_finding(self, node: cst.CSTNode, code: str, message: str, scope: str, data: dict, fix) -> None:
        self.pending.append((node, code, message, data, fix, scope))

    def _statements_with_findings(self) -> Optional[set]:
        """Top-level statements holding the functions that reported (positions are only computed
        there; other nodes are positioned on demand). None: position everything."""
        scopes = {scope for *_, scope in self.pending}
        functions = [fn for fn, prefix, _ in self.defs if f"{prefix}.{fn.name.value}" in scopes]
        if not scopes <= {f"{prefix}.{fn.name.value}" for fn, prefix, _ in self.defs}:
            return None
        return fastcst.enclosing_statements(self.module, functions)

    def _resolve_positions(self) -> None:
        if not self.pending:
            return
        positions = fastcst.positions(self.module, self.source, self._statements_with_findings())
        seen = set()
        for node, code, message, data, fix, scope in self.pending:
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
        self.summary.findings.sort(key=Finding.sort_key)


RNN_MODULES = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"})
# Locks Dynamo cannot enter ("Unsupported context manager"; probed on torch 2.13: DYN109).
LOCK_TYPES = frozenset({"threading.Lock", "threading.RLock"})


def _torch_non_tensor(q: str) -> bool:
    if q.startswith(K.TORCH_NON_TENSOR_PREFIXES):
        return True
    # The C API gives flags and state (`torch._C._get_tracing_state()`, dispatch keys), except
    # its operator namespaces, which are the tensor ops behind `F.*`, `torch.linalg.*`, ...
    if q.startswith("torch._C.") and not q.startswith(K.TORCH_C_TENSOR_PREFIXES):
        return True
    last = q.rsplit(".", 1)[-1]
    # `torch.is_autocast_cpu_enabled()`, `torch.get_autocast_dtype()`: flags and settings.
    return q.count(".") == 1 and (last in K.TORCH_NON_TENSOR_FUNCS or last.startswith(("is_", "get_autocast")))


def _submodule_types(value: cst.BaseExpression, fa: FileAnalyzer) -> list[str]:
    """`Block(...)` -> [Block]; `nn.ModuleList([Block(...) for _ in ...])` -> [Block]."""
    if type(value) is not cst.Call:
        return []
    q = fa.qualname(value.func)
    if q is None:
        return []
    if q in ("torch.nn.ModuleList", "torch.nn.Sequential"):
        out = []
        for arg in value.args:
            v = arg.value
            if type(v) in (cst.ListComp, cst.GeneratorExp):
                out += _submodule_types(v.elt, fa)
            elif type(v) in (cst.List, cst.Tuple):
                for el in v.elements:
                    out += _submodule_types(el.value, fa)
            else:
                out += _submodule_types(v, fa)
        return out
    if q.startswith("torch."):
        return []
    last = q.rsplit(".", 1)[-1]
    return [q] if last[:1].isupper() else []


def _walk_imports(module: cst.Module):
    # Imports are statements: only statement bodies are entered (same order, far fewer nodes).
    for node in fastcst.iter_nodes(module, descend=fastcst.STATEMENT_CONTAINERS):
        if type(node) in (cst.Import, cst.ImportFrom):
            yield node


def _iter_nodes(root: cst.CSTNode):
    """All statement-level and expression nodes under root (children first order not needed)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        # Same nodes as .children without rebuilding them, minus whitespace and punctuation.
        stack.extend(c for c in fastcst.children(node) if type(c) not in fastcst.TRIVIA)


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


# --------------------------------------------------------------------------------------------
# Function-level walk: the code Dynamo would trace, with value kinds


def _is_logical(node: cst.CSTNode) -> bool:
    """`and` / `or` / `not`: the nodes static_truth combines its leaves' values through."""
    return type(node) is cst.BooleanOperation or (type(node) is cst.UnaryOperation and type(node.operator) is cst.Not)


def _combine_truth(node: cst.CSTNode, truths: list) -> Optional[bool]:
    if type(node) is cst.UnaryOperation:  # `not`
        return None if truths[0] is None else not truths[0]
    left, right = truths
    if type(node.operator) is cst.And:
        if left is False or right is False:
            return False
        if left is True and right is True:
            return True
    else:
        if left is True or right is True:
            return True
        if left is False and right is False:
            return False
    return None


class FunctionContext(cst.CSTVisitor):
    """Walks one function's live code in order, tracking which names hold tensors, and runs rules."""

    def __init__(
        self,
        fa: FileAnalyzer,
        fn: cst.FunctionDef,
        qualname: str,
        cls: Optional[str],
        info: Optional[FunctionInfo] = None,
        probe_only: bool = False,
    ):
        super().__init__()
        self.fa = fa
        self.fn = fn
        self.qual = qualname
        self.cls = cls
        self.info = info
        self.probe_only = probe_only  # only infer whether the function returns a tensor
        # What a probe walk read of the file's facts: return kinds (key -> truth) and the hints
        # for its own parameters (see FileAnalyzer.run).
        self.returns_read: dict[str, bool] = {}
        self.passthrough_read: dict[str, tuple] = {}
        self.hints_read: Optional[dict] = None
        self.evidence_read: frozenset = frozenset()
        # Parameters still bound to what the caller passed, and those with a `None` default whose
        # use as a tensor this walk saw (see FileAnalyzer.param_evidence).
        self.param_origin: set[str] = set()
        self.optional_params: set[str] = set()
        self.evidence: frozenset = frozenset()
        # name -> (position without self, kind of the default) of each parameter
        self.param_slots: dict[str, tuple] = {}
        self.return_params: set[str] = set()  # parameters returned as they came in
        self.env: dict[str, str] = {}
        self.local_types: dict[str, tuple] = {}  # loop vars over submodule lists -> edge ref
        self.returns_tensor = False
        self.storing = False  # inside an assignment target
        self.is_forward = fn.name.value == "forward" and cls is not None
        self.tensor_attrs = fa.tensor_attrs.get(cls, set()) if cls else set()
        self.buffer_attrs = fa.buffer_attrs.get(cls, set()) if cls else set()
        self.all_attrs = fa.all_attrs.get(cls, set()) if cls else set()
        self.rnn_attrs = fa.rnn_attrs_with_subclasses(cls) if cls else set()
        self.lock_attrs = fa.lock_attrs.get(cls, set()) if cls else set()
        self.lock_names = fa.lock_names
        self._rule_state: dict[str, dict] = {}  # see rule_state
        self.class_info = fa.summary.classes.get(cls) if cls else None
        self.nested_defs: set[str] = set()
        self.numpy_names: set[str] = set()  # names bound to NumPy values
        # Ancestors of the node being checked, outermost first (statements included), so that a
        # fix can find the statement and block around a finding.
        self.stack: list[cst.CSTNode] = []
        # Tests of the `if` statements whose body is being walked, outermost first.
        self.branch_tests: list[cst.BaseExpression] = []
        self._truth_memo: Optional[dict] = None  # static_truth of the `and` / `or` being visited
        # Whitespace/punctuation node types no rule or hook looks at: the walk steps over them.
        self.skip_types = fastcst.skippable(type(self), fa.rules_by_type)

    # -- public helpers for rules --------------------------------------------------------
    @property
    def filename(self) -> str:
        return self.fa.filename

    @property
    def module(self) -> cst.Module:
        return self.fa.module

    def qualname(self, node: cst.BaseExpression) -> Optional[str]:
        d = dotted(node)
        if d is None:
            return None
        head = d.split(".")[0]
        if head in self.env or head in self.nested_defs:
            return None  # a local variable shadows any import
        return self.fa.resolve(d)

    def call_name(self, node: cst.Call) -> Optional[str]:
        return self.qualname(node.func)

    def self_attr(self, node: cst.BaseExpression) -> Optional[str]:
        """`attr` when node is `self.attr` (the method's own instance), else None."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name and self.env.get(node.value.value) == "SELF":
            return node.attr.value
        return None

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.kind(node) in TENSORISH

    def is_numpy(self, node: cst.BaseExpression) -> bool:
        """Does the value come from NumPy (`np.random.rand(1)`, a name bound to one, an index of
        one)? Dynamo traces these as tensors, but a fix must not turn them into torch tensors."""
        while True:
            if type(node) is cst.Call:
                q = self.qualname(node.func)
                if q is not None and q.startswith("numpy."):
                    return True
                if type(node.func) is not cst.Attribute:
                    return False
                node = node.func.value
            elif type(node) in (cst.Attribute, cst.Subscript):
                node = node.value
            elif type(node) is cst.Name:
                return node.value in self.numpy_names
            elif type(node) in (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation):
                # `x.shape[-1] % n` with n from NumPy is a NumPy number; with a torch tensor
                # operand the result is a torch tensor.
                parts = operator_operands(node)
                numpy = [self.is_numpy(p) for p in parts]
                return any(numpy) and not any(self.is_tensor(p) and not n for p, n in zip(parts, numpy))
            else:
                return False

    def is_numpy_of_numbers(self, node: cst.BaseExpression) -> bool:
        """`np.ceil(h / 2)`, `np.sqrt(x.shape[0])`: NumPy math on Python numbers (sizes,
        constants; anything not known to be a tensor or an array). Dynamo traces the result as a 0-d tensor (an `if` on it breaks), but
        `int()` / `float()` of it does not break (probed on torch 2.13); NumPy's integer
        reductions (`np.lcm`, `np.prod`, ...) are DYN106's."""
        if type(node) is not cst.Call:
            return False
        q = self.qualname(node.func)
        if q is None or not q.startswith("numpy.") or q.count(".") != 1 or q.rsplit(".", 1)[1] in K.NUMPY_INT_REDUCTIONS:
            return False
        return bool(node.args) and all(
            not a.star and (self.kind(a.value) not in TENSORISH or self.is_numpy_of_numbers(a.value)) for a in node.args
        )

    def is_definite_tensor(self, node: cst.BaseExpression) -> bool:
        """A tensor for sure: not merely an unannotated parameter (see kinds.P)."""
        return self.kind(node) in (T, B)

    def is_logger(self, node: cst.BaseExpression) -> bool:
        d = dotted(node)
        if d is None:
            return False
        if d in self.fa.logger_names:
            return True
        q = self.qualname(node)
        return q in ("logging", "logging.root") or (d.split(".")[-1] in ("logger", "_logger", "LOGGER", "log"))

    def rule_state(self, code: str) -> dict:
        """A rule's scratch space for the function being walked (memos a rule keeps between
        the nodes of one function), so no rule stores attributes on the context."""
        state = self._rule_state.get(code)
        if state is None:
            state = self._rule_state[code] = {}
        return state

    def report(self, rule, node: cst.CSTNode, message: str, data: Optional[dict] = None, fix=None) -> None:
        if self.probe_only:
            return
        self.fa.add_finding(node, rule.code, message, self.qual, data or {}, fix)

    def _returns_tensor(self, key: str) -> bool:
        found = bool(self.fa.returns_tensor.get(key))
        if self.probe_only:
            self.returns_read[key] = found
        return found

    def _passthrough(self, key: str) -> tuple:
        found = self.fa.passthrough.get(key) or ()
        if self.probe_only:
            self.passthrough_read[key] = found
        return found

    def passthrough_slots(self) -> tuple:
        return tuple(sorted((self.param_slots[n][0], n, self.param_slots[n][1]) for n in self.return_params))

    def read_facts_unchanged(self) -> bool:
        """Would this probe walk read the same facts now?"""
        fa = self.fa
        return (
            self.hints_read == fa.param_hints.get(self.qual, {})
            and self.evidence_read == fa.param_evidence.get(self.qual, frozenset())
            and all(bool(fa.returns_tensor.get(key)) == seen for key, seen in self.returns_read.items())
            and all((fa.passthrough.get(key) or ()) == seen for key, seen in self.passthrough_read.items())
        )

    # -- walking --------------------------------------------------------------------------
    def walk(self) -> None:
        self._bind_params()
        self._walk_block(self.fn.body)

    def _bind_params(self) -> None:
        params = _param_names(self.fn.params)
        is_method = self.cls is not None and not any(
            dotted(d.decorator) == "staticmethod" for d in self.fn.decorators
        )
        tensor_by_default = self.is_forward or (self.info is not None and self.info.compile_root) or (
            self.cls is None and self.fn.name.value in self.fa.compile_called_names
        )
        hints = dict(self.fa.param_hints.get(self.qual, {}))
        evidence = self.fa.param_evidence.get(self.qual, frozenset())
        if self.probe_only:
            self.hints_read = dict(hints)
            self.evidence_read = evidence
        for slot, k in ((self.fa.options.external_hints or {}).get(self.qual) or {}).items():
            slot = int(slot) if slot.isdigit() else slot
            hints[slot] = P if P in (k, hints.get(slot)) else k
        commented = type_comment_kinds(self.fn)
        if commented is not None and len(commented) != len(params) - (1 if is_method else 0):
            commented = None  # does not describe these parameters
        for i, p in enumerate(params):
            name = p.name.value
            if i == 0 and is_method:
                self.env[name] = "SELF" if name == "self" else N
                continue
            ak = annotation_kind(p.annotation)
            pos = i - 1 if is_method else i
            self.param_origin.add(name)
            self.param_slots[name] = (pos, U if p.default is None else self.kind(p.default))
            optional = p.default is not None and is_none(p.default)
            if optional and ak is None:
                self.optional_params.add(name)
            if ak is None and commented is not None:
                ak = commented[pos]
            if ak is not None:
                self.env[name] = ak
            elif (pos in hints or name in hints) and (p.default is None or optional):
                hinted = hints.get(pos) or hints.get(name)
                self.env[name] = N if hinted == P and K.names_a_config_value(name) else hinted
            elif tensor_by_default and (p.default is None or optional):
                self.env[name] = N if K.names_a_config_value(name) else P
            elif p.default is not None and not optional:
                self.env[name] = N
            else:
                self.env[name] = U
            if self.env[name] == P:
                # A presumed tensor needs evidence when it may well be a flag or a number: a
                # `None` default (`mask=None`, `causal=None`) takes a use as a tensor in the
                # body; a parameter only ever used as an int (`range(n)`, `n == 1`) is one.
                if optional and name not in evidence:
                    self.env[name] = U
                elif name in self._int_only_params():
                    self.env[name] = N
        for star in (self.fn.params.star_arg, self.fn.params.star_kwarg):
            if type(star) is cst.Param:
                self.env[star.name.value] = N

    def _int_only_params(self) -> frozenset:
        """Parameters of this function whose every use is one only an int has here: an argument
        of `range()`, compared with int literals, a `dim=` / `axis=` keyword, an index of
        `.shape`. A tensor used so would break the graph on every call, so code that runs
        compiled does not do it: such a parameter is a Python number."""
        key = id(self.fn)
        found = self.fa._int_only.get(key)
        if found is None:
            found = self.fa._int_only[key] = _int_only_params(self.fn)
        return found

    def _walk_block(self, suite: cst.BaseSuite) -> bool:
        """Walk statements in order; returns True if the block surely left the function."""
        stmts = suite.body if type(suite) is cst.IndentedBlock else [suite]
        for stmt in stmts:
            if self._walk_stmt(stmt):
                return True
        return False

    def _walk_stmt(self, stmt: cst.CSTNode) -> bool:
        if type(stmt) in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
            self.stack.append(stmt)
            try:
                for small in stmt.body:
                    small.visit(self)
                    if type(small) in (cst.Return, cst.Raise):
                        return True
            finally:
                self.stack.pop()
            return False
        if type(stmt) is cst.If:
            return self._walk_if(stmt)
        if type(stmt) is cst.FunctionDef:
            self.nested_defs.add(stmt.name.value)
            saved = dict(self.env)
            for p in _param_names(stmt.params):
                self.env[p.name.value] = T if annotation_kind(p.annotation) == T else U
            was_returns = self.returns_tensor
            self._walk_block(stmt.body)
            self.returns_tensor = was_returns
            self.env = saved
            return False
        if type(stmt) is cst.ClassDef:
            return False
        stmt.visit(self)
        return False

    def _walk_if(self, node: cst.If) -> bool:
        static = self.static_truth(node.test)
        if static is True:
            return self._walk_block(node.body)
        if static is False:
            if node.orelse is None:
                return False
            if type(node.orelse) is cst.If:
                return self._walk_if(node.orelse)
            return self._walk_block(node.orelse.body)
        self.stack.append(node)
        self._dispatch(node)
        node.test.visit(self)
        self.stack.pop()
        before = dict(self.env)
        self.branch_tests.append(node.test)
        try:
            body_exits = self._walk_block(node.body)
        finally:
            self.branch_tests.pop()
        after_body = self.env
        self.env = dict(before)
        else_exits = False
        if node.orelse is not None:
            if type(node.orelse) is cst.If:
                else_exits = self._walk_if(node.orelse)
            else:
                else_exits = self._walk_block(node.orelse.body)
        self.env = _merge(after_body, self.env) if not body_exits else self.env
        return body_exits and else_exits

    def static_truth(self, test: cst.BaseExpression, memo: Optional[dict] = None) -> Optional[bool]:
        """Value of a test while Dynamo traces: True/False for is_compiling-style guards, else None.
        `memo`: results for the `and` / `or` / `not` nodes of one expression, by id (see
        visit_BooleanOperation: each node of an N-term chain asks about its left side, which
        without it walks that side again, N squared in all). Worked out with a stack of its own,
        not recursion: such a chain nests N deep."""
        if not _is_logical(test):
            return self._leaf_truth(test)
        values = memo if memo is not None else {}
        stack = [test]
        while stack:
            node = stack[-1]
            found = values.get(id(node))
            if found is not None and found[0] is node:
                stack.pop()
                continue
            operands = (node.left, node.right) if type(node) is cst.BooleanOperation else (node.expression,)
            pending = [o for o in operands if _is_logical(o) and (values.get(id(o)) or (None,))[0] is not o]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            truths = [values[id(o)][1] if _is_logical(o) else self._leaf_truth(o) for o in operands]
            values[id(node)] = (node, _combine_truth(node, truths))
        return values[id(test)][1]

    def _leaf_truth(self, test: cst.BaseExpression) -> Optional[bool]:
        if type(test) is cst.Call and not test.args:
            q = self.qualname(test.func)
            if q is None:
                return None
            last = q.rsplit(".", 1)[-1]
            if q in K.IS_COMPILING_NAMES or last in K.IS_COMPILING_HELPER_NAMES or last in self.fa.options.is_compiling_functions or q in self.fa.options.is_compiling_functions:
                return True
            if q in K.IS_SCRIPTING_NAMES:
                return False
        return None

    # -- visitor hooks ----------------------------------------------------------------------
    def _dispatch(self, node: cst.CSTNode) -> None:
        if self.probe_only:
            return
        for rule in self.fa.rules_by_type.get(type(node), ()):
            rule.check(node, self)

    def on_visit(self, node: cst.CSTNode) -> bool:
        node_type = type(node)  # concrete libcst classes: cheaper than isinstance on their ABCs
        if node_type is cst.FunctionDef or node_type is cst.ClassDef or node_type is cst.Lambda:
            return False
        if node_type is cst.If:
            self._walk_if(node)
            return False
        if node_type is cst.IndentedBlock:
            # Compound statements other than If: walk their blocks statement by statement.
            self._walk_block(node)
            return False
        self._dispatch(node)
        self.stack.append(node)
        visit_hook = fastcst.hook(type(self), type(node), "visit")
        if visit_hook is not None and visit_hook(self, node) is False:
            self.stack.pop()
            return False
        # Visit the children here, in libcst's order, and tell libcst not to: its traversal
        # rebuilds every node it passes through, which cost most of the analysis time.
        skip_types = self.skip_types
        for child in fastcst.children(node):
            if type(child) in skip_types:
                continue
            self.on_visit(child)  # always False: it has walked the child's children itself
            self.on_leave(child)
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.stack and self.stack[-1] is original_node:
            self.stack.pop()
        leave_hook = fastcst.hook(type(self), type(original_node), "leave")
        if leave_hook is not None:
            leave_hook(self, original_node)

    @property
    def statement(self) -> Optional[cst.CSTNode]:
        """The innermost simple statement line (or compound statement header) being checked."""
        for node in reversed(self.stack):
            if type(node) in (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.If, cst.While, cst.For):
                return node
        return None

    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        value_kind = self.kind(node.value)
        for t in node.targets:
            self._bind(t.target, node.value, value_kind)
            self._visit_target(t.target)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is not None:
            node.value.visit(self)
            self._bind(node.target, node.value, self.kind(node.value))
        self._visit_target(node.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        node.value.visit(self)
        if type(node.target) is cst.Name:
            self.param_origin.discard(node.target.value)
            vk = self.kind(node.value)
            cur = self.env.get(node.target.value, U)
            if vk in TENSORISH or cur in TENSORISH:
                self.env[node.target.value] = T
        self._visit_target(node.target)
        return False

    def _visit_target(self, target: cst.BaseExpression) -> None:
        self.storing = True
        try:
            target.visit(self)
        finally:
            self.storing = False

    def visit_For(self, node: cst.For) -> bool:
        node.iter.visit(self)
        it = node.iter
        elem = U
        ik = self.kind(it)
        if ik in TENSORISH:
            elem = T
        self._bind(node.target, None, elem)
        self._bind_zipped(node.target, it)
        ref = self._submodule_list_ref(it)
        if ref is not None and type(node.target) is cst.Name:
            self.local_types[node.target.value] = ref
        if type(it) is cst.Call and self.qualname(it.func) == "enumerate" and it.args:
            ref = self._submodule_list_ref(it.args[0].value)
            if ref is not None and type(node.target) is cst.Tuple and len(node.target.elements) == 2:
                t2 = node.target.elements[1].value
                if type(t2) is cst.Name:
                    self.local_types[t2.value] = ref
        before = dict(self.env)
        self._walk_block(node.body)
        self.env = _merge(before, self.env)
        if node.orelse is not None:
            self._walk_block(node.orelse.body)
        return False

    def _bind_zipped(self, target: cst.BaseExpression, it: cst.BaseExpression) -> None:
        """`for a, b in zip(x, y)` / `for i, row in enumerate(x)`: iterating a tensor yields
        tensors (its rows), so each name taken from a tensor is one; a presumed tensor gives a
        presumed one. Other sources (lists, ranges) stay unknown."""
        if not (type(it) is cst.Call and type(target) in (cst.Tuple, cst.List)):
            return
        q = self.qualname(it.func)
        names = [e.value for e in target.elements]
        if q == "zip" and len(it.args) == len(names) and not any(a.star for a in it.args):
            pairs = [(n, a.value) for n, a in zip(names, it.args)]
        elif q == "enumerate" and it.args and len(names) == 2 and not it.args[0].star:
            pairs = [(names[1], it.args[0].value)]
        else:
            return
        for name, source in pairs:
            k = self.kind(source)
            if type(name) is cst.Name and k in TENSORISH:
                self._bind(name, None, P if k == P else T)

    def visit_While(self, node: cst.While) -> bool:
        node.test.visit(self)
        before = dict(self.env)
        self._walk_block(node.body)
        self.env = _merge(before, self.env)
        if node.orelse is not None:
            self._walk_block(node.orelse.body)
        return False

    def visit_With(self, node: cst.With) -> bool:
        for item in node.items:
            item.item.visit(self)
            if item.asname is not None:
                self._bind(item.asname.name, item.item, U)
        self._walk_block(node.body)
        return False

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        for part in _return_parts(node.value):
            if type(part) is cst.Name and part.value in self.param_origin:
                self.return_params.add(part.value)  # its kind is the caller's argument's
                continue
            k = self.kind(part)
            if k in TENSORISH:
                self.returns_tensor = True
            elif type(part) is cst.Tuple and any(self.is_tensor(e.value) for e in part.elements):
                self.returns_tensor = True

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        static = self.static_truth(node.test)
        if static is True:
            node.body.visit(self)
            return False
        if static is False:
            node.orelse.visit(self)
            return False
        return True

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        # One memo per outermost `and` / `or` (the stack's top is node itself): the nodes of an
        # expression keep their values while it is visited (no statement runs in between).
        if len(self.stack) < 2 or type(self.stack[-2]) is not cst.BooleanOperation or self._truth_memo is None:
            self._truth_memo = {}
        left = self.static_truth(node.left, self._truth_memo)
        if (left is False and type(node.operator) is cst.And) or (left is True and type(node.operator) is cst.Or):
            return False  # right side never runs while compiling
        return True

    def visit_CompFor(self, node: cst.CompFor) -> None:
        node.iter.visit(self)
        elem = T if self.is_tensor(node.iter) else U
        self._bind(node.target, None, elem)

    def _note_evidence(self, node: cst.BaseExpression) -> None:
        if type(node) is cst.Name and node.value in self.optional_params and node.value in self.param_origin:
            self.evidence = self.evidence | {node.value}

    def visit_Subscript(self, node: cst.Subscript) -> None:
        # `mask[:, None, :, None]`, `bias[..., 0]`: indexing only arrays and tensors allow
        if self.optional_params and len(node.slice) >= 2:
            for el in node.slice:
                inner = el.slice
                if type(inner) is cst.Slice or (
                    type(inner) is cst.Index and (is_none(inner.value) or type(inner.value) is cst.Ellipsis)
                ):
                    self._note_evidence(node.value)
                    return

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if type(node.operator) is cst.BitInvert:  # `~mask`
            self._note_evidence(node.expression)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # `keep & mask`, `attn @ bias` with a tensor for sure (not `x * scale`: numbers do that)
        if self.optional_params and type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor, cst.MatrixMultiply):
            if self.kind(node.right) in (T, B):
                self._note_evidence(node.left)
            if self.kind(node.left) in (T, B):
                self._note_evidence(node.right)

    def _note_call_evidence(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Attribute:
            if func.attr.value in K.TENSOR_EVIDENCE_METHODS:
                self._note_evidence(func.value)  # `mask.float()`, `bias.masked_fill(...)`
            if func.attr.value in K.TENSOR_ARG_METHODS and node.args and self.kind(func.value) in TENSORISH:
                self._note_evidence(node.args[0].value)  # `x.masked_fill(mask, 0.0)`
                return
        q = self.qualname(func)
        if q is not None and q.startswith("torch.") and not _torch_non_tensor(q) and (
            not q.startswith("torch.nn.") or q.startswith("torch.nn.functional.")
        ):
            # the input of a torch op (`torch.where(mask, ...)`, `F.pad(mask, ...)`), or a
            # tensor keyword (`attn_mask=mask`); not other positions, often numbers (`p`, `dim`)
            for i, arg in enumerate(node.args):
                if (i == 0 and arg.keyword is None) or (
                    arg.keyword is not None and arg.keyword.value in ("input", "mask", "condition", "attn_mask")
                ):
                    self._note_evidence(arg.value)

    def visit_Call(self, node: cst.Call) -> None:
        if self.optional_params:
            self._note_call_evidence(node)
        if self.probe_only:
            self._record_call_site(node)
            return
        if self.info is None:
            return
        edge = self._edge_for(node)
        if edge is not None and edge not in self.info.edges:
            self.info.edges.append(edge)

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def _record_call_site(self, node: cst.Call) -> None:
        func = node.func
        key = None
        method = self.self_attr(func)
        if method is not None:
            if self.class_info is not None and method in self.class_info.methods:
                key = f"{self.cls}.{method}"
        elif type(func) is cst.Name and func.value in self.fa.local_functions and func.value not in self.env:
            key = f"{self.fa.summary.module}.{func.value}"
        else:
            self._record_external_call_site(node)
            return
        for i, arg in enumerate(node.args):
            if arg.star:
                break
            k = self.kind(arg.value)
            if k in TENSORISH:
                hints = self.fa.param_hints.setdefault(key, {})
                slot = arg.keyword.value if arg.keyword is not None else i
                # A definite tensor at one call site and a presumed one at another: presumed.
                hints[slot] = P if P in (k, hints.get(slot)) else T

    def _record_external_call_site(self, node: cst.Call) -> None:
        """`clamp_outliers(h)` with `clamp_outliers` imported from a linted file: remember which
        arguments are tensors so that file's analysis can treat those parameters as tensors."""
        edge = self._edge_for(node)
        if edge is None or edge[0] != "name":
            return
        dotted_callee = edge[1]
        if dotted_callee.startswith(f"{self.fa.summary.module}."):
            return  # local classes: their forward's parameters are presumed tensors already
        for i, arg in enumerate(node.args):
            if arg.star:
                break
            k = self.kind(arg.value)
            if k in TENSORISH:
                hints = self.fa.summary.call_hints.setdefault(dotted_callee, {})
                slot = arg.keyword.value if arg.keyword is not None else str(i)
                hints[slot] = P if P in (k, hints.get(slot)) else T

    # -- edges ------------------------------------------------------------------------------
    def _submodule_list_ref(self, it: cst.BaseExpression) -> Optional[tuple]:
        if type(it) is cst.Attribute and type(it.value) is cst.Name and it.value.value == "self":
            return ("selfattr", it.attr.value, "forward")
        return None

    def _edge_for(self, node: cst.Call) -> Optional[tuple]:
        func = node.func
        if type(func) is cst.Name:
            name = func.value
            if name in self.local_types:
                return self.local_types[name]
            if name in self.env or name in self.nested_defs:
                return None
            if name in self.fa.local_functions or name in self.fa.summary.imports or name in self.fa._class_names:
                return ("name", self.fa.resolve(name))
            return None
        if type(func) is cst.Attribute:
            recv = func.value
            meth = func.attr.value
            if self.self_attr(func) is not None:
                return ("self", meth)
            submodule = self.self_attr(recv)
            if submodule is not None:
                return ("selfattr", submodule, meth)
            if type(recv) is cst.Call and type(recv.func) is cst.Name and recv.func.value == "super":
                return ("super", meth)
            q = self.qualname(func)
            if q is not None and not q.startswith(("torch.", "numpy.", "math.")):
                head = q.split(".")[0]
                if head in self.fa.summary.imports.values() or "." in q:
                    return ("name", q)
            return None
        if type(func) is cst.Subscript:
            ref = self._submodule_list_ref(func.value)
            return ref
        return None

    # -- binding and kinds ------------------------------------------------------------------
    def _bind(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], value_kind: str) -> None:
        if type(target) is cst.Name:
            self.env[target.value] = value_kind
            self.param_origin.discard(target.value)
            self.local_types.pop(target.value, None)
            if value is not None and self.is_numpy(value):
                self.numpy_names.add(target.value)
            else:
                self.numpy_names.discard(target.value)
        elif type(target) in (cst.Tuple, cst.List):
            elems = [e.value for e in target.elements]
            if type(value) in (cst.Tuple, cst.List) and len(value.elements) == len(elems):
                for t, v in zip(elems, value.elements):
                    self._bind(t, v.value, self.kind(v.value))
            else:
                # `b, n, _ = x.shape`, `h, w = x.size()[-2:]`: sizes; `q, k = x.chunk(2)`: tensors
                k = value_kind if value_kind == S or (value_kind in (T, B) and self._unpacks_tensors(value)) else U
                if k == B:
                    k = T
                for t in elems:
                    self._bind(t, None, k)
        elif type(target) is cst.StarredElement:
            self._bind(target.value, None, U)

    def _unpacks_tensors(self, value: Optional[cst.BaseExpression]) -> bool:
        """`q, k = x.chunk(2)` / `vals, idx = torch.topk(...)` hold tensors; tuples returned by
        helpers or submodules (`early_exit, mask, ... = prepare(...)`) mix flags and tensors."""
        if value is None:
            return True
        if type(value) is cst.Call:
            q = self.qualname(value.func)
            if q is not None and q.startswith("torch."):
                return True
            if type(value.func) is cst.Attribute:
                return self.kind(value.func.value) in TENSORISH
            return False
        return type(value) is not cst.Subscript or self.kind(value.value) in (T, B, P)

    def kind(self, node: cst.BaseExpression) -> str:
        if type(node) is cst.Name:
            v = node.value
            if v in ("True", "False", "None"):
                return N
            k = self.env.get(v, U)
            return U if k == "SELF" else k
        if type(node) in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
            return N
        if type(node) is cst.Attribute:
            attr = node.attr.value
            base = node.value
            if type(base) is cst.Name and self.env.get(base.value) == "SELF":
                if attr in self.tensor_attrs:
                    return T
                if attr == "training":
                    return N
                return U
            bk = self.kind(base)
            if bk in TENSORISH:
                if attr in K.SHAPE_ATTRS:
                    return S
                if attr in K.NON_TENSOR_ATTRS:
                    return N
                if attr in K.TENSOR_ATTRS:
                    return T if bk != P else P
                return U
            return U
        if type(node) is cst.Call:
            return self._call_kind(node)
        if type(node) is cst.Subscript:
            bk = self.kind(node.value)
            if bk in TENSORISH:
                return bk
            if bk == S:
                return S
            return U
        if type(node) is cst.BinaryOperation:
            lk, rk = self.kind(node.left), self.kind(node.right)
            if lk in TENSORISH or rk in TENSORISH:
                if type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor) and B in (lk, rk):
                    return B
                return T if (lk in (T, B) or rk in (T, B)) else P
            if S in (lk, rk) and all(k in (S, N) for k in (lk, rk)):
                return S
            if lk == N and rk == N:
                return N
            return U
        if type(node) is cst.UnaryOperation:
            if type(node.operator) is cst.Not:
                return N
            return self.kind(node.expression)
        if type(node) is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot) for c in node.comparisons):
                return N
            if is_none(node.left) or any(is_none(c.comparator) for c in node.comparisons):
                return N  # `mem == None`: Dynamo answers it like `is None`, a Python bool
            if any(type(c.operator) in (cst.In, cst.NotIn) for c in node.comparisons):
                # `t in [1, 2]` compares the tensor with each item and takes bool() of each.
                return B if self.kind(node.left) in (T, B) else N
            kinds_ = [self.kind(node.left)] + [self.kind(c.comparator) for c in node.comparisons]
            if any(k in (T, B) for k in kinds_):
                return B
            if P in kinds_:
                # `self.bias.shape[-1] >= j`: a presumed tensor compared with a size is a size
                # (research code passes sizes to `forward(self, i, j)`)
                return "SB" if S in kinds_ else B
            if S in kinds_:
                return "SB"
            return N if all(k == N for k in kinds_) else U
        if type(node) is cst.BooleanOperation:
            lk, rk = self.kind(node.left), self.kind(node.right)
            if lk in TENSORISH or rk in TENSORISH:
                return T
            return U
        if type(node) is cst.IfExp:
            return _join(self.kind(node.body), self.kind(node.orelse))
        if type(node) in (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp):
            return N
        return U

    def _call_kind(self, node: cst.Call) -> str:
        func = node.func
        q = self.qualname(func)
        if q is not None:
            if "." not in q and q in K.NON_TENSOR_BUILTINS:
                if q == "len" and node.args and self.is_tensor(node.args[0].value):
                    return S
                if q == "int" and node.args and self.kind(node.args[0].value) == S:
                    return S
                return N
            if q.startswith("torch."):
                if q in ("torch.nn.functional", ) or _torch_non_tensor(q):
                    return N
                if q.startswith("torch.nn.") and not q.startswith("torch.nn.functional."):
                    return U  # building modules
                last = q.rsplit(".", 1)[-1]
                if last in K.BOOL_TORCH_FUNCS:
                    return B
                if last in ("is_tensor", "is_floating_point", "is_complex", "is_nonzero"):
                    return N
                return T
            if q.startswith(("math.", "time.", "random.", "os.", "warnings.", "logging.")):
                return N
            slots = (self.fa.options.external_passthrough or {}).get(q)
            if slots:
                return self._passthrough_kind(node, slots, q in self.fa.options.external_returns)
            if q in self.fa.options.external_returns:
                return T
            if q.startswith("numpy."):
                # Dynamo traces NumPy through torch: its results are tensors while compiling, so
                # `if np.sqrt(2.0) > 1:` breaks the graph like any tensor condition (probed).
                return N if q.rsplit(".", 1)[-1] in K.NUMPY_NON_ARRAY_FUNCS else T
        if type(func) is cst.Attribute:
            recv = func.value
            meth = func.attr.value
            if self.self_attr(func) is not None:
                methods = self.class_info.methods if self.class_info else []
                if meth in methods:
                    key = f"{self.cls}.{meth}"
                    slots = self._passthrough(key)
                    if slots:
                        return self._passthrough_kind(node, slots, self._returns_tensor(key))
                    if self._returns_tensor(key):
                        return T
                    # `h = self.mix(h)` with `mix` left to subclasses: presumably a tensor in, a tensor out.
                    if key in self.fa.abstract_methods and any(self.kind(a.value) in TENSORISH for a in node.args):
                        return P
                    return U
                if meth in self.all_attrs and meth not in self.tensor_attrs:
                    return T  # a submodule call
                return U
            submodule = self.self_attr(recv)
            if (
                submodule is not None
                and self.class_info is not None
                and submodule in self.class_info.attr_types
                and submodule not in self.tensor_attrs
                and any(self.kind(a.value) in TENSORISH for a in node.args)
            ):
                # `self.pe_layer.forward_with_coords(points, size)`: another method of a
                # submodule, given a tensor: presumably a tensor
                return P
            rk = self.kind(recv)
            if rk in TENSORISH:
                if meth in K.SIZE_METHODS:
                    return S
                if meth in K.NON_TENSOR_METHODS:
                    return N
                if meth in K.BOOL_METHODS:
                    return B
                if rk == P and meth not in K.TENSOR_METHODS:
                    return U  # `cache.get_seq_length()`: a presumed tensor that is not one
                return T
            if rk == S and meth in ("numel",):
                return S
            return U
        if type(func) is cst.Name:
            name = func.value
            if name in self.local_types:
                return T
            if name in self.fa.local_functions:
                key = f"{self.fa.summary.module}.{name}"
                slots = self._passthrough(key)
                if slots:
                    return self._passthrough_kind(node, slots, self._returns_tensor(key))
                return T if self._returns_tensor(key) else U
            return U
        if type(func) is cst.Subscript:
            if self._submodule_list_ref(func.value) is not None:
                return T
        return U


    def _passthrough_kind(self, node: cst.Call, slots: tuple, other_tensor: bool) -> str:
        """Kind of a call of a function returning some of its parameters as they came: the
        arguments' kinds there, joined (with a tensor when its other returns give one)."""
        out = T if other_tensor else None
        positional = []
        for arg in node.args:
            if arg.star:
                return T if other_tensor else U
            if arg.keyword is None:
                positional.append(arg.value)
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        for pos, name, default_kind in slots:
            if name in keywords:
                k = self.kind(keywords[name])
            elif pos < len(positional):
                k = self.kind(positional[pos])
            else:
                k = default_kind
            out = k if out is None else _join(out, k)
        return out or U


def _return_parts(node: cst.BaseExpression) -> list:
    """The values a `return` may give: both sides of `a if c else b` and of `a or b`."""
    if type(node) is cst.IfExp:
        return _return_parts(node.body) + _return_parts(node.orelse)
    if type(node) is cst.BooleanOperation and type(node.operator) is cst.Or:
        return _return_parts(node.left) + _return_parts(node.right)
    return [node]


_INT_KEYWORDS = frozenset({"dim", "axis", "dims", "dim0", "dim1", "start_dim", "end_dim", "num_classes", "chunks", "groups"})


def _int_only_params(fn: cst.FunctionDef) -> frozenset:
    """Parameters of `fn` used at least once and only where an int is meant (see
    FunctionContext._int_only_params)."""
    names = {p.name.value for p in _param_names(fn.params)}
    uses: dict[str, int] = {}
    int_uses: dict[str, int] = {}

    def int_use(node) -> None:
        if type(node) is cst.Name and node.value in names:
            int_uses[node.value] = int_uses.get(node.value, 0) + 1

    for node in _iter_nodes(fn.body):
        t = type(node)
        if t is cst.Name:
            if node.value in names:
                uses[node.value] = uses.get(node.value, 0) + 1
        elif t is cst.Call:
            if type(node.func) is cst.Name and node.func.value == "range":
                for arg in node.args:
                    int_use(arg.value)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in _INT_KEYWORDS:
                    int_use(arg.value)
        elif t in (cst.If, cst.While, cst.IfExp):
            # `if n == 1:` (a tensor there would break the graph); not `mask = x > 0`
            tests = [node.test]
            while tests:
                test = tests.pop()
                if type(test) is cst.BooleanOperation:
                    tests += [test.left, test.right]
                elif type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
                    tests.append(test.expression)
                elif type(test) is cst.Comparison:
                    operands = [test.left] + [c.comparator for c in test.comparisons]
                    if all(type(o) in (cst.Integer, cst.Name) for o in operands) and any(
                        type(o) is cst.Integer for o in operands
                    ) and not any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in test.comparisons):
                        for o in operands:
                            int_use(o)
        elif t is cst.Subscript:
            if type(node.value) is cst.Attribute and node.value.attr.value == "shape":
                for el in node.slice:
                    if type(el.slice) is cst.Index:
                        int_use(el.slice.value)
        elif t in (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For):
            # a parameter assigned to is another value from there on: not judged here
            targets = [tt.target for tt in node.targets] if t is cst.Assign else [node.target]
            for tgt in targets:
                for sub in _iter_nodes(tgt):
                    if type(sub) is cst.Name and sub.value in names:
                        uses[sub.value] = uses.get(sub.value, 0) + 1000
    return frozenset(n for n, c in int_uses.items() if c == uses.get(n))


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


def _syntax_error_summary(source: str, filename: str, module_name: str, exc: Exception) -> FileSummary:
    """DYN001 at the position Python itself reports (libcst's position is often a line late).
    When Python compiles the file and only libcst refuses it (odd `\\r` or `\\f` whitespace, say),
    the message says so: the file is valid Python that dynalint cannot check."""
    summary = FileSummary(filename=filename, module=module_name)
    row, col = getattr(exc, "raw_line", 1) or 1, (getattr(exc, "raw_column", 0) or 0) + 1
    msg = "SyntaxError: invalid syntax"
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as err:
        msg = f"SyntaxError: {err.msg or 'invalid syntax'}"
        row, col = err.lineno or row, err.offset or col
    except (ValueError, RecursionError, MemoryError):
        pass
    else:
        detail = (getattr(exc, "message", None) or str(exc) or "").strip().splitlines()
        msg = "libcst cannot parse this file (Python can, so it was not checked)"
        if detail:
            msg += f": {detail[0]}"
    summary.findings.append(Finding("DYN001", msg, filename, row, col, row, col))
    return summary


def _join(a: str, b: str) -> str:
    """Kind of a value that is either a or b (two branches)."""
    if a == b:
        return a
    if a in (T, B) or b in (T, B):
        return T  # a tensor on one path: `if mask is None: mask = torch.ones(...)`
    if a == P or b == P:
        return P  # a presumed tensor stays presumed (`flag if flag is not None else config.flag`)
    return U


def _merge(a: dict[str, str], b: dict[str, str]) -> dict[str, str]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _join(out[k], v) if k in out else v
    return out


# --------------------------------------------------------------------------------------------
# Noqa


def parse_noqa(source: str) -> dict[int, Optional[list[str]]]:
    out: dict[int, Optional[list[str]]] = {}
    if "noqa" not in source:
        return out
    for row, line in enumerate(source.splitlines(), start=1):
        if "#" not in line:
            continue
        m = NOQA.search(line)
        if m:
            codes = m.group("codes")
            out[row] = None if not codes else [c.upper() for c in re.split(r"[,\s]+", codes) if c]
    return out


# --------------------------------------------------------------------------------------------
# Entry point


# The last few texts parsed in this process: the engine's cross-file rounds analyse a file again
# with what other files told it (`lint/hints.py`), and a file changed in a warm tree goes through
# up to three such analyses in one run; libcst trees are immutable, so they can be shared.
# Each with its module-level scans (module name -> what `_collect_module_level` found).
_PARSED: list[tuple[str, cst.Module, dict]] = []


def parse_unvalidated(source: str) -> cst.Module:
    """`cst.parse_module` without each node's `_validate` (a fifth of the parse): libcst's
    parser only builds nodes its grammar allows, and validation exists for trees built by hand,
    such as the ones fix generators make (those keep it: it is off only during this call)."""
    base = cst.CSTNode
    had_own = "__post_init__" in base.__dict__
    saved = base.__dict__.get("__post_init__")
    base.__post_init__ = _no_validation
    try:
        return cst.parse_module(source)
    finally:
        if had_own:
            base.__post_init__ = saved
        else:  # pragma: no cover - libcst always defines it
            del base.__post_init__


def _no_validation(self) -> None:
    pass


def _parse_module(source: str) -> cst.Module:
    for text, module, _scans in _PARSED:
        if text == source:
            return module
    module = parse_unvalidated(source)
    _PARSED.append((source, module, {}))
    del _PARSED[:-2]
    return module


def _scans_of(module: cst.Module) -> dict:
    """The module-level scans kept with a tree `_PARSED` holds (a throwaway dict otherwise)."""
    for _text, kept, scans in _PARSED:
        if kept is module:
            return scans
    return {}


def prepare(source: str, filename: str, module_name: str, is_package: bool) -> None:
    """Parse `source` and scan its module level as `analyze_source` would, keeping both for the
    analyses of the same text that follow (forked workers inherit them)."""
    from .deep import call_deep, python_rejects

    if python_rejects(source) is not None:
        return  # the analysis reports it
    try:
        call_deep(_prepare, source, filename, module_name, is_package)
    except (cst.ParserSyntaxError, RecursionError):
        return  # the analysis reports it


def _prepare(source: str, filename: str, module_name: str, is_package: bool) -> None:
    module = _parse_module(source)
    fa = FileAnalyzer(module, filename, module_name, is_package, AnalyzerOptions())
    fa.source = source
    fa.scan_module_level()


def analyze_source(
    source: str,
    filename: str,
    module_name: str = "__main__",
    is_package: bool = False,
    options: Optional[AnalyzerOptions] = None,
) -> FileSummary:
    """One file's summary. Deep but valid code is analysed on a large-stack thread
    (`lint.deep`); what Python itself refuses as too deep is DYN001 before libcst sees it."""
    from .deep import call_deep, python_rejects

    options = options or AnalyzerOptions()
    reason = python_rejects(source)
    if reason is not None:
        return _file_finding_summary(filename, module_name, reason)
    try:
        return call_deep(_analyze_parsed, source, filename, module_name, is_package, options)
    except RecursionError:
        # Deeper than even the large stack allows: Python's parser usually refuses such a file
        # too, and says why; else the file is reported, not analysed.
        reason = _python_syntax_error(source)
        if reason is not None:
            return _file_finding_summary(filename, module_name, reason)
        reason = "cannot analyse file: nested too deeply (RecursionError)"
        return _file_finding_summary(filename, module_name, reason, code="DYN002")


def _analyze_parsed(source: str, filename: str, module_name: str, is_package: bool, options: AnalyzerOptions) -> FileSummary:
    try:
        module = _parse_module(source)
    except cst.ParserSyntaxError as exc:
        return _syntax_error_summary(source, filename, module_name, exc)
    fa = FileAnalyzer(module, filename, module_name, is_package, options)
    fa.source = source
    summary = fa.run()
    summary.noqa = parse_noqa(source)
    return summary


def _python_syntax_error(source: str) -> Optional[str]:
    """Why Python's own parser refuses source, or None when it accepts it."""
    import ast

    try:
        compile(source, "<dynalint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg}"
    except (RecursionError, MemoryError) as exc:
        return f"Python cannot parse it: nested too deeply ({type(exc).__name__} during parsing)"
    except ValueError as exc:
        return f"SyntaxError: {str(exc).splitlines()[0] if str(exc) else 'invalid source'}"
    return None


def _file_finding_summary(filename: str, module_name: str, reason: str, code: str = "DYN001") -> FileSummary:
    summary = FileSummary(filename=filename, module=module_name)
    summary.findings.append(Finding(code, reason, filename, 1, 1, 1, 1))
    return summary


def operator_operands(node: cst.BaseExpression) -> Optional[list]:
    """The operands of a comparison, binary or unary operation; None for other expressions."""
    if type(node) is cst.BinaryOperation:
        return [node.left, node.right]
    if type(node) is cst.Comparison:
        return [node.left] + [c.comparator for c in node.comparisons]
    if type(node) is cst.UnaryOperation:
        return [node.expression]
    return None

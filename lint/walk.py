"""The function walk: one function's live code in order (the eager side of is-compiling guards
skipped), names bound to kinds as it goes, rules called for the node types they name. Kind
inference (`lint.inference`) and call edges (`lint.callgraph`) are mixed into the walker."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Optional

import libcst as cst

from . import fastcst
from . import kinds as K
from .annotations import annotation_kind, holds_tensors, names_numbers, type_comment_kinds
from .callgraph import CallEdges
from .inference import KindInference, container_tested_params, int_only_params, join_kinds, merge_kinds, size_params, torch_non_tensor
from .kinds import B, C, N, P, S, T, U, TENSORISH
from .nodes import decorator_target, dotted, is_docstring, is_none, param_list
from .rule import offer_fix
from .summary import FunctionInfo
from .variables import rebound_names, returns_one_value

if TYPE_CHECKING:  # pragma: no cover
    from .filefacts import FileAnalyzer


def _is_logical(node: cst.CSTNode) -> bool:
    """`and` / `or` / `not`: the nodes static_truth combines its leaves' values through."""
    return type(node) is cst.BooleanOperation or (type(node) is cst.UnaryOperation and type(node.operator) is cst.Not)


def _record_annotation(ann: cst.BaseExpression) -> Optional[str]:
    """`Cache`, `Cache | None`, `Optional[Cache]`: the class name an annotation names."""
    if type(ann) is cst.BinaryOperation and type(ann.operator) is cst.BitOr:
        sides = [s for s in (ann.left, ann.right) if not is_none(s)]
        return _record_annotation(sides[0]) if len(sides) == 1 else None
    if type(ann) is cst.Subscript and dotted(ann.value) in ("Optional", "typing.Optional") and len(ann.slice) == 1 \
            and type(ann.slice[0].slice) is cst.Index:
        return _record_annotation(ann.slice[0].slice.value)
    return ann.value if type(ann) is cst.Name else None


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


def _return_parts(node: cst.BaseExpression) -> list:
    """The values a `return` may give: both sides of `a if c else b` and of `a or b`."""
    if type(node) is cst.IfExp:
        return _return_parts(node.body) + _return_parts(node.orelse)
    if type(node) is cst.BooleanOperation and type(node.operator) is cst.Or:
        return _return_parts(node.left) + _return_parts(node.right)
    return [node]


def _join_tuple_kinds(a, b):
    if type(a) is tuple and type(b) is tuple:
        return tuple(_join_tuple_kinds(x, y) for x, y in zip(a, b)) if len(a) == len(b) else U
    if type(a) is tuple or type(b) is tuple:
        return U
    return join_kinds(a, b)


# What the walk does with a node (FunctionContext._plan).
_NODE, _SKIP, _IF, _BLOCK, _LAMBDA = "node", "skip", "if", "block", "lambda"


# Calls that apply their first argument, a function, in the frame.
_MAPPING_CALLS = frozenset({"map", "filter", "functools.reduce", "reduce", "itertools.starmap", "starmap"})
# Builtin types an `isinstance` test can prove a value to be instead of a tensor.
_PYTHON_TYPES = frozenset({"list", "tuple", "dict", "set", "int", "float", "str", "bool", "complex"})
# Errors tensor code raises when it runs (in the compiled graph), not while Dynamo traces.
_RUNTIME_ERRORS = frozenset({
    "RuntimeError", "MemoryError", "torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError",
})
_LITERAL_DEFAULTS = {"None": None, "True": True, "False": False}
# Where a search for the statement around a node stops: expressions nest in statements, never the
# other way round (lambdas, which could, are not walked into).
_STATEMENT_LEVEL = frozenset(
    c for c in vars(cst).values()
    if isinstance(c, type) and issubclass(c, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.BaseSuite,
                                              cst.SimpleStatementLine, cst.Else, cst.ExceptHandler,
                                              cst.ExceptStarHandler, cst.Finally, cst.MatchCase, cst.Module))
)
_STATEMENT_LINES = (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.If, cst.While, cst.For)
_NUMBER_TYPES = frozenset({"int", "float", "str", "bool", "complex"})
_CONTAINER_TYPES = frozenset({"list", "tuple", "dict", "set"})
_NARROWING_OPERANDS = 8  # operands of an `and` / `or` read for isinstance tests


def _training_test(test: cst.BaseExpression, ctx) -> Optional[bool]:
    """True for `self.training` (`is True`, `== True`), False for `self.training is False` (`==
    False`); None for any other test (`not` is left to the caller)."""
    if ctx.self_attr(test) == "training":
        return True
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and ctx.self_attr(test.left) == "training":
        op, value = test.comparisons[0].operator, test.comparisons[0].comparator
        if type(op) in (cst.Is, cst.Equal) and type(value) is cst.Name and value.value in ("True", "False"):
            return value.value == "True"
    return None


class FunctionContext(KindInference, CallEdges, cst.CSTVisitor):
    """Walks one function's live code in order, tracking which names hold tensors, and runs rules.
    What rules may use of it is `lint.rule.RuleContext`; the rest is the walk's own."""

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
        self.tuples_read: dict[str, Optional[tuple]] = {}
        self.hints_read: Optional[dict] = None
        self.evidence_read: frozenset = frozenset()
        # Parameters still bound to what the caller passed.
        self.param_origin: set[str] = set()
        # Parameters whose use as a tensor is looked for: those with a `None` default, and those
        # presumed tensors (`Kind.PRESUMED`), which such a use makes tensors for sure.
        self.evidence_params: set[str] = set()
        self.evidence: frozenset = frozenset()
        # name -> (position without self, kind of the default) of each parameter
        self.param_slots: dict[str, tuple] = {}
        self.return_params: set[str] = set()  # parameters returned as they came in
        self.env: dict[str, str] = {}
        self.local_types: dict[str, tuple] = {}  # loop vars over submodule lists -> edge ref
        self.returns_tensor = False
        self.returns_only_bool = True  # every `return` gives a boolean tensor (`a >= lo & a < hi`)
        # The kinds of the tuples its `return`s give, position by position (nested tuples as
        # tuples), or None when some `return` gives another value (see returned_tuple_kinds).
        self.returned_tuples: Optional[list] = []
        self.storing = False  # inside an assignment target
        # A custom autograd function's `forward(ctx, ...)` / `backward(ctx, ...)`, run from `.apply`.
        self.in_autograd_function = cls is not None and cls in fa.autograd_functions
        self.is_forward = fn.name.value == "forward" and cls is not None and not self.in_autograd_function
        # forward or a compiled function: where compiling starts (never a helper to run eagerly)
        self.is_root = self.is_forward or bool(info is not None and info.compile_root) or (
            cls is None and fn.name.value in fa.compile_called_names
        )
        self.tensor_params: frozenset = frozenset()  # parameters bound to a (presumed) tensor
        self.tensor_attrs = fa.tensor_attrs.get(cls, set()) if cls else set()
        self.tensor_items = fa.tensor_items.get(cls, set()) if cls else set()
        # (attribute, key) -> kind of the items of a dict this function stored on self
        # (`self.params = {"should_apply": dist.sample(...).to(dtype=torch.bool)}`)
        self.self_items: dict[tuple[str, str], str] = {}
        self.buffer_attrs = fa.buffer_attrs.get(cls, set()) if cls else set()
        self.all_attrs = fa.all_attrs.get(cls, set()) if cls else set()
        self.callable_attrs = fa.callable_attrs.get(cls, set()) if cls else set()
        self.module_attrs = fa.module_attrs.get(cls, set()) if cls else set()
        self.rnn_attrs = fa.rnn_attrs_with_subclasses(cls) if cls else set()
        self.in_rnn_class = cls is not None and cls in fa.rnn_classes
        self.lock_attrs = fa.lock_attrs.get(cls, set()) if cls else set()
        self.sequence_attrs = fa.sequence_attrs.get(cls, set()) if cls else set()
        self.lock_names = fa.lock_names
        self._rule_state: dict[str, dict] = {}  # see rule_state
        self.class_info = fa.summary.classes.get(cls) if cls else None
        self.nested_defs: set[str] = set()
        self.container_demoted: set[str] = set()  # see _bind_params
        self.record_params: dict[str, str] = {}  # parameter -> the file's NamedTuple / dataclass it is annotated with
        self.numpy_names: set[str] = set()  # names bound to NumPy values
        # Parameters annotated as containers of tensors (`x: dict[str, Tensor]`): their items are tensors.
        self.tensor_containers: set[str] = set()
        self.call_values: set[str] = set()  # names bound to a submodule's or helper's value (see _len_of_tensor)
        # Ancestors of the node being checked, outermost first (statements included), so that a
        # fix can find the statement and block around a finding.
        self.stack: list[cst.CSTNode] = []
        self._statement_memo: dict[int, tuple] = {}  # see _statement_index
        # Tests of the `if` statements whose body is being walked, outermost first.
        self.branch_tests: list[cst.BaseExpression] = []
        # Names an `if self.training:` block (without else) rebound: their kinds in eval mode
        # (DAC's `n_quantizers`, a tensor only in training), until bound again.
        self.eval_kinds: dict[str, str] = {}
        self._truth_memo: Optional[dict] = None  # static_truth of the `and` / `or` being visited
        # What the walk does with each node type (`_plan`), shared by the file's walks of this
        # kind; whitespace/punctuation node types no rule or hook looks at are stepped over.
        key = (type(self), probe_only)
        shared = fa.walk_plans.get(key)
        if shared is None:
            skip = fastcst.skippable(type(self), fa.rules_by_type)
            shared = fa.walk_plans[key] = ({}, skip, fastcst.children_without(skip))
        self._plans, self.skip_types, self._kids = shared
        self._dispatching: Optional[cst.CSTNode] = None  # the node whose rules are running
        self._part: Optional[cst.CSTNode] = None  # the statement of the body being walked
        self._call_name_memo: Optional[tuple] = None
        self._entry_facts: Optional[dict] = None  # see _facts_at_entry
        self._defaults_held: dict = {}  # see _defaults_left_by_callers

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
        head = d.partition(".")[0]
        if head in self.env or head in self.nested_defs:
            return None  # a local variable shadows any import
        return self.fa.resolve(d)

    def call_name(self, node: cst.Call) -> Optional[str]:
        # The rules of one node ask in turn, with nothing bound in between: the first answer
        # serves them all (`_visit` clears it before and after them).
        memo = self._call_name_memo
        if memo is not None and memo[0] is node:
            return memo[1]
        name = self.qualname(node.func)
        if self._dispatching is node:
            self._call_name_memo = (node, name)
        return name

    def is_parameter(self, name: str) -> bool:
        return name in self.param_origin

    def self_attr(self, node: cst.BaseExpression) -> Optional[str]:
        """`attr` when node is `self.attr` (the method's own instance), else None."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name and self.env.get(node.value.value) == "SELF":
            return node.attr.value
        return None

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
        if fix is None:
            # A break in a host-side helper: the helper can run outside the graph (fixes/disable_helper).
            fix = offer_fix("disable_helper", self, rule.code, node)
        self.fa.add_finding(node, rule.code, message, self.qual, data or {}, fix)
        self.fa.note_part(self.fn, self._part)

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
            and all(fa.returns_tuple.get(key) == seen for key, seen in self.tuples_read.items())
        )

    # -- walking --------------------------------------------------------------------------
    def walk(self) -> None:
        self._bind_params()
        body = self.fn.body
        if type(body) is not cst.IndentedBlock:
            self._walk_block(body)
            return
        # `_walk_block(body)`, noting the statement of the body being walked: findings are
        # positioned by those statements when they can be (`FileAnalyzer.note_part`).
        self._entry_facts = self._facts_at_entry()
        self._defaults_held = self._defaults_left_by_callers()
        self._dispatch(self.fn)  # rules on the function itself: its decorators and signature
        for stmt in body.body:
            self._part = stmt
            exits = self._walk_stmt(stmt)
            if not is_docstring(stmt):
                self._entry_facts = None  # they hold for the first statement only
            if exits:
                break
        self._part = None

    def _bind_params(self) -> None:
        params = param_list(self.fn.params)
        is_method = self.cls is not None and not any(
            dotted(d.decorator) == "staticmethod" for d in self.fn.decorators
        )
        tensor_by_default = self.is_forward or (self.info is not None and self.info.compile_root) or (
            self.cls is None and self.fn.name.value in self.fa.compile_called_names
        ) or (self.cls is not None and self.fn.name.value in K.DISTRIBUTION_TRANSFORM_METHODS and self.fa.is_distribution_transform(self.cls))
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
            if i == 0 and self.in_autograd_function:
                self.env[name] = N  # ctx
                continue
            ak = annotation_kind(p.annotation)
            record = _record_annotation(p.annotation.annotation) if p.annotation is not None else None
            if record is not None and self.fa.record_fields(record):
                # `cache: DecodeCache | None` (timesfm): its fields' annotations give their kinds
                self.record_params[name] = record
            pos = i - 1 if is_method else i
            self.param_origin.add(name)
            self.param_slots[name] = (pos, U if p.default is None else self.kind(p.default))
            optional = p.default is not None and is_none(p.default)
            if ak is None and (p.default is None or optional):
                self.evidence_params.add(name)  # may be presumed a tensor (here or in the final walk)
            if ak is None and commented is not None:
                ak = commented[pos]
            if ak is not None:
                self.env[name] = ak
                if ak == P and (hints.get(pos) or hints.get(name)) == T:
                    # `t_span: Union[List, Tensor]` given a tensor by its callers (torchdyn's odeint)
                    self.env[name] = T
                if ak == N and holds_tensors(p.annotation):
                    self.env[name] = C
                    self.tensor_containers.add(name)
                elif ak == N and names_numbers(p.annotation) and (hints.get(pos) or hints.get(name)) == T:
                    # `_init_freq(self, max_len: int)` called with `seq_id.max() + 1` (uni2ts): the
                    # value is a tensor whatever the annotation says, and a branch on it breaks
                    self.env[name] = T
            elif (pos in hints or name in hints) and (p.default is None or optional):
                hinted = hints.get(pos) or hints.get(name)
                if hinted == T and name in self._container_tested_params():
                    hinted = P  # the function takes a list there too: callers' tensor is no proof
                    self.container_demoted.add(name)  # a tensor again where the test says no list
                self.env[name] = N if hinted == P and K.names_a_config_value(name) else C if hinted == P and K.names_a_collection(name) else hinted
            elif tensor_by_default and (p.default is None or optional):
                self.env[name] = N if K.names_a_config_value(name) else C if K.names_a_collection(name) else P
            elif p.default is not None and not optional:
                self.env[name] = N
            else:
                self.env[name] = U
            if self.env[name] == P:
                # A presumed tensor needs evidence when it may well be a flag or a number: a
                # `None` default (`mask=None`, `causal=None`) takes a use as a tensor in the
                # body; a parameter only ever used as an int (`range(n)`, `n == 1`) is one; one
                # used as only a tensor can be (`grid_thw[:, 0]`, `grid_thw.prod(-1)`) is a tensor
                # for sure, so that `int()` / `range()` of it are reported.
                if optional and name not in evidence:
                    self.env[name] = U
                elif name in self._int_only_params():
                    self.env[name] = N
                elif name in evidence:
                    self.env[name] = T
                elif name in self._size_params():
                    self.env[name] = N
        for star in (self.fn.params.star_arg, self.fn.params.star_kwarg):
            if type(star) is cst.Param:
                self.env[star.name.value] = N
        self.tensor_params = frozenset(name for name in self.param_slots if self.env.get(name) in TENSORISH)

    def _params_by(self, scan) -> frozenset:
        """`scan(self.fn)`, once per function and scan (the probe passes and the final walk ask)."""
        key = (scan, id(self.fn))
        found = self.fa._int_only.get(key)
        if found is None:
            found = self.fa._int_only[key] = scan(self.fn)
        return found

    def _int_only_params(self) -> frozenset:
        """Parameters of this function whose every use is one only an int has here: an argument
        of `range()`, compared with int literals, a `dim=` / `axis=` keyword, an index of
        `.shape`. A tensor used so would break the graph on every call, so code that runs
        compiled does not do it: such a parameter is a Python number."""
        return self._params_by(int_only_params)

    def _container_tested_params(self) -> frozenset:
        return self._params_by(container_tested_params)

    def _size_params(self) -> frozenset:
        return self._params_by(size_params)

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
                    self._visit(small)
                    if type(small) in (cst.Return, cst.Raise):
                        return True
            finally:
                self.stack.pop()
            return False
        if type(stmt) is cst.If:
            return self._walk_if(stmt)
        if type(stmt) is cst.FunctionDef:
            self.nested_defs.add(stmt.name.value)
            if any(self.qualname(decorator_target(d)) in K.DISABLE_DECORATORS for d in stmt.decorators):
                # `@torch.compiler.disable` on a helper defined in forward (doctr): its body runs
                # eagerly; the call is the one break, by design
                return False
            saved = dict(self.env)
            for p in param_list(stmt.params):
                self.env[p.name.value] = T if annotation_kind(p.annotation) == T else U
            was_returns, was_tuples, was_bool = self.returns_tensor, self.returned_tuples, self.returns_only_bool
            self._walk_block(stmt.body)
            self.returns_tensor, self.returned_tuples, self.returns_only_bool = was_returns, was_tuples, was_bool
            self.env = saved
            return False
        if type(stmt) is cst.ClassDef:
            return False
        self._visit(stmt)
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
        self._visit(node.test)
        self.stack.pop()
        before = dict(self.env)
        inside, outside = self._isinstance_narrowing(node.test)
        self.env.update(inside)
        self.branch_tests.append(node.test)
        try:
            body_exits = self._walk_block(node.body)
        finally:
            self.branch_tests.pop()
        after_body = self.env
        self.env = dict(before)
        self.env.update(outside)
        else_exits = False
        if node.orelse is not None:
            if type(node.orelse) is cst.If:
                else_exits = self._walk_if(node.orelse)
            else:
                else_exits = self._walk_block(node.orelse.body)
        self.env = merge_kinds(after_body, self.env) if not body_exits else self.env
        if node.orelse is None and not body_exits and _training_test(node.test, self) is True:
            for name, kind in before.items():
                if after_body.get(name) != kind:
                    self.eval_kinds[name] = kind
        return body_exits and else_exits

    def _isinstance_narrowing(self, test: cst.BaseExpression) -> tuple[dict, dict]:
        """Kinds a test settles for the branch it guards and for the other one:
        `isinstance(ref, torch.Tensor)` (or `torch.is_tensor(ref)`) makes `ref` a tensor inside
        and not one outside (demucs' `center_trim(t, ref: Union[Tensor, int])`);
        `isinstance(masks, list)` makes `masks` no tensor inside; `not` swaps the two; every
        operand of an `and` holds inside it (`isinstance(proto, tuple) and len(proto) == 2`),
        every operand of an `or` fails outside it."""
        if type(test) is cst.BooleanOperation:
            # The operands of one operator, a few at most: an N-term chain (libcst nests it N
            # deep) is asked about at every level, so reading all of it would cost N squared.
            op = type(test.operator)
            operands, todo = [], [test]
            while todo:
                node = todo.pop()
                if type(node) is cst.BooleanOperation and type(node.operator) is op:
                    todo += [node.right, node.left]
                    if len(todo) + len(operands) > _NARROWING_OPERANDS:
                        return {}, {}
                elif type(node) is not cst.BooleanOperation:
                    operands.append(node)
            side = 0 if op is cst.And else 1
            settled = {}
            for operand in operands:
                settled.update(self._isinstance_narrowing(operand)[side])
            return (settled, {}) if op is cst.And else ({}, settled)
        negated = False
        while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test, negated = test.expression, not negated
        training = _training_test(test, self) if self.eval_kinds else None
        if training is not None:
            # `self.training is False and i >= n`: n as eval mode leaves it
            evaluating = dict(self.eval_kinds)
            inside, outside = ({}, evaluating) if training else (evaluating, {})
            return (outside, inside) if negated else (inside, outside)
        if type(test) is not cst.Call or not test.args or type(test.args[0].value) is not cst.Name:
            return {}, {}
        name = test.args[0].value.value
        if name not in self.env:
            return {}, {}
        q = self.qualname(test.func)
        if q == "torch.is_tensor" and len(test.args) == 1:
            types = ["torch.Tensor"]
        elif q == "isinstance" and len(test.args) == 2:
            cls = test.args[1].value
            elements = [e.value for e in cls.elements] if type(cls) is cst.Tuple else [cls]
            types = [self.qualname(e) for e in elements]
        else:
            return {}, {}
        if any(t is None for t in types):
            return {}, {}
        if all(t in ("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter") for t in types):
            # outside: not a tensor, but maybe a tuple of them (PyG's `edge_index`)
            inside, outside = {name: T}, {name: C}
        elif all(t in _NUMBER_TYPES for t in types):
            inside, outside = {name: N}, {}
        elif all(t in _PYTHON_TYPES for t in types):
            # Not a list where callers pass a tensor: the tensor (llava-next's
            # `if not isinstance(image_size, (list, tuple)): image_size = image_size.tolist()`).
            restored = name in self.container_demoted and self.is_parameter(name) and all(t in _CONTAINER_TYPES for t in types)
            inside, outside = {name: C}, ({name: T} if restored else {})
            before = self.env.get(name)
            if before == N or (before == P and all(t == "dict" for t in types)):
                # a value known to be no tensor (`getattr(config, "rope_parameters", None)`:
                # transformer-lens), or only presumed one and found to be a dict (pina's
                # `value["n"] - 6`): a container of settings as often as of tensors, unknown
                inside = {name: U}
        else:
            return {}, {}
        return (outside, inside) if negated else (inside, outside)

    @contextlib.contextmanager
    def assuming(self, test: cst.BaseExpression, holds: bool = True):
        """Kinds as they are where `test` held (or failed), for a rule judging the right side of
        an `and` / `or` from the `if` around it."""
        inside, outside = self._isinstance_narrowing(test)
        settled = inside if holds else outside
        if not settled:
            yield
            return
        saved = dict(self.env)
        self.env.update(settled)
        try:
            yield
        finally:
            self.env = saved

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

    def _facts_at_entry(self) -> Optional[dict]:
        """What every `self.<method>()` call of this method in the file asserts about
        `self.<attr>` (peft's `unmerge()`, called only under `if self.merged:`, so its `if not
        self.merged: warnings.warn(...); return` never runs there). Not for a compile root
        (Dynamo enters it directly) or a method called no other way seen here."""
        if self.is_root or self.cls is None or self.probe_only:
            return None
        sites = self.fa.call_guards.get(self.qual)
        if not sites:
            return None
        facts = None
        for site in sites.values():
            facts = dict(site) if facts is None else {a: v for a, v in facts.items() if site.get(a) == v}
        return facts or None

    def _defaults_left_by_callers(self) -> dict:
        """Parameters with a None/True/False default that every `self.<method>()` call of this
        method in the file leaves out, and that its body never rebinds: they hold the default
        throughout (sb3's `extract_features(obs)`, whose `if features_extractor is not None:
        warnings.warn(...)` never runs there; peft's `merge()` and its `if safe_merge:` checks).
        Same limits as _facts_at_entry: callers in other files are not seen."""
        if self.is_root or self.cls is None or self.probe_only:
            return {}
        sites = self.fa.call_passed.get(self.qual)
        if not sites:
            return {}
        params = self.fn.params
        positional = [p.name.value for p in (*params.posonly_params, *params.params)]
        if positional and (self.in_autograd_function or not any(dotted(d.decorator) == "staticmethod" for d in self.fn.decorators)):
            positional = positional[1:]  # self / cls / ctx, not passed at a `self.m(...)` / `.apply(...)` call
        held = {}
        for p in param_list(params):
            d = p.default
            if type(d) is not cst.Name or d.value not in _LITERAL_DEFAULTS:
                continue
            name = p.name.value
            pos = positional.index(name) if name in positional else None
            if all(not star and name not in kws and (pos is None or npos <= pos) for npos, kws, star in sites.values()):
                held[name] = _LITERAL_DEFAULTS[d.value]
        if held:
            for name in rebound_names(self.fn.body):
                held.pop(name, None)
        return held

    def _leaf_truth(self, test: cst.BaseExpression) -> Optional[bool]:
        held = self._defaults_held
        if held:
            t = type(test)
            if t is cst.Name and test.value in held:
                return bool(held[test.value])
            if t is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Name and test.left.value in held:
                op, other = test.comparisons[0].operator, test.comparisons[0].comparator
                if is_none(other) and type(op) in (cst.Is, cst.IsNot):
                    return (held[test.left.value] is None) == (type(op) is cst.Is)
        if self._entry_facts:
            attr = self.self_attr(test)
            if attr is not None and attr in self._entry_facts:
                return self._entry_facts[attr]
        if type(test) is cst.Call and not test.args:
            q = self.qualname(test.func)
            if q is None:
                return None
            last = q.rsplit(".", 1)[-1]
            if q in K.IS_COMPILING_NAMES or last in K.IS_COMPILING_HELPER_NAMES or last in self.fa.options.is_compiling_functions or q in self.fa.options.is_compiling_functions:
                return True
            if q in K.IS_SCRIPTING_NAMES or last in K.IS_SCRIPTING_HELPER_NAMES:
                return False
        return None

    # -- visitor hooks ----------------------------------------------------------------------
    def _dispatch(self, node: cst.CSTNode) -> None:
        if self.probe_only:
            return
        rules = self.fa.rules_by_type.get(type(node), ())
        if rules:
            self._run_rules(node, rules)

    def _run_rules(self, node: cst.CSTNode, rules: tuple) -> None:
        self._dispatching, self._call_name_memo = node, None
        try:
            for rule in rules:
                rule.check(node, self)
        finally:
            self._dispatching = self._call_name_memo = None

    def _plan(self, node: cst.CSTNode) -> tuple:
        """(what to do, rules to run, visit hook, leave hook, children function) for node's
        type: found once per type for the file's walks of this kind."""
        node_type = type(node)  # concrete libcst classes: cheaper than isinstance on their ABCs
        if node_type is cst.FunctionDef or node_type is cst.ClassDef:
            mode = _SKIP
        elif node_type is cst.Lambda:
            mode = _SKIP if self.probe_only else _LAMBDA
        elif node_type is cst.If:
            mode = _IF
        elif node_type is cst.IndentedBlock:
            # Compound statements other than If: walk their blocks statement by statement.
            mode = _BLOCK
        else:
            mode = _NODE
        rules = () if self.probe_only else self.fa.rules_by_type.get(node_type, ())
        plan = (
            mode,
            rules,
            fastcst.hook(type(self), node_type, "visit"),
            fastcst.hook(type(self), node_type, "leave"),
            fastcst.kids_of(self._kids, self.skip_types, node),
        )
        self._plans[node_type] = plan
        return plan

    def _visit(self, node: cst.CSTNode) -> None:
        """`node.visit(self)` (on_visit, then on_leave) without libcst's traversal: it rebuilds
        every node it passes through, which cost most of the analysis time. Children are
        visited here, in libcst's order."""
        plan = self._plans.get(node.__class__)
        if plan is None:
            plan = self._plan(node)
        mode, rules, visit_hook, leave_hook, kids = plan
        stack = self.stack
        if mode is _NODE:
            if rules:
                self._run_rules(node, rules)
            stack.append(node)
            if visit_hook is not None and visit_hook(self, node) is False:
                stack.pop()
            else:
                for child in kids(node):
                    self._visit(child)
        elif mode is _IF:
            self._walk_if(node)
        elif mode is _BLOCK:
            self._walk_block(node)
        elif mode is _LAMBDA:
            self._walk_lambda(node)
        if stack and stack[-1] is node:
            stack.pop()
        if leave_hook is not None:
            leave_hook(self, node)

    def _lambda_runs_here(self, node: cst.Lambda) -> bool:
        """A lambda mapped (`map(lambda u: ..., xs)`, `filter`, `functools.reduce`), a sort key,
        or bound to a local name: called in the frame. Not one given to another function (a
        check's message, `torch._check(ok, lambda: f"... {int(n)}")`, is called only on failure;
        a hook runs in the backward pass)."""
        parent = self.stack[-1] if self.stack else None
        if type(parent) is cst.Assign:
            return all(type(t.target) is cst.Name for t in parent.targets)
        if type(parent) is not cst.Arg or len(self.stack) < 2:
            return False
        call = self.stack[-2]
        if type(call) is not cst.Call:
            return False
        name = dotted(call.func) or ""
        if parent.keyword is not None:
            return parent.keyword.value == "key" and (name in ("sorted", "min", "max") or name.endswith(".sort"))
        return name in _MAPPING_CALLS and call.args[0] is parent

    def _walk_lambda(self, node: cst.Lambda) -> None:
        """A lambda's body runs where the lambda is called, in compiled code (`map(lambda u:
        u[:, mask], ...)`, x-clip): walked with its parameters of unknown kind and the names it
        closes over as they are here."""
        if not self._lambda_runs_here(node):
            return
        saved = dict(self.env)
        for p in param_list(node.params):
            self.env[p.name.value] = U
        self.stack.append(node)
        try:
            self._visit(node.body)
        finally:
            self.stack.pop()
            self.env = saved

    def on_visit(self, node: cst.CSTNode) -> bool:
        """libcst's entry point (`node.visit(self)`): the walk is `_visit`'s."""
        plan = self._plans.get(node.__class__)
        if plan is None:
            plan = self._plan(node)
        mode, rules, visit_hook, _leave_hook, kids = plan
        if mode is _IF:
            self._walk_if(node)
        elif mode is _BLOCK:
            self._walk_block(node)
        elif mode is _LAMBDA:
            self._walk_lambda(node)
        elif mode is _NODE:
            if rules:
                self._run_rules(node, rules)
            self.stack.append(node)
            if visit_hook is not None and visit_hook(self, node) is False:
                self.stack.pop()
                return False
            for child in kids(node):
                self._visit(child)
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.stack and self.stack[-1] is original_node:
            self.stack.pop()
        leave_hook = fastcst.hook(type(self), type(original_node), "leave")
        if leave_hook is not None:
            leave_hook(self, original_node)

    def _statement_index(self, top: Optional[int] = None) -> int:
        """Index in the stack of the innermost statement-level node at or below `top` (the top of
        the stack by default), -1 if none. Remembered for each expression node passed (with its
        place in the stack, checked on reuse): in a chain of N nested expressions (`a and b and
        ...`, `x + x + ...`) each node's search would otherwise walk the whole chain again."""
        stack, memo = self.stack, self._statement_memo
        i = len(stack) - 1 if top is None else top
        passed = []
        found = -1
        while i >= 0:
            node = stack[i]
            if type(node) in _STATEMENT_LEVEL:
                found = i
                break
            hit = memo.get(id(node))
            if hit is not None and hit[0] is node and hit[1] == i and (hit[2] < 0 or stack[hit[2]] is hit[3]):
                found = hit[2]
                break
            passed.append(i)
            i -= 1
        statement = stack[found] if found >= 0 else None
        for k in passed:
            memo[id(stack[k])] = (stack[k], k, found, statement)
        return found

    def innermost_statement(self) -> Optional[cst.CSTNode]:
        index = self._statement_index()
        return self.stack[index] if index >= 0 else None

    @property
    def statement(self) -> Optional[cst.CSTNode]:
        """The innermost simple statement line (or compound statement header) being checked."""
        index = self._statement_index()
        while index >= 0:
            if type(self.stack[index]) in _STATEMENT_LINES:
                return self.stack[index]
            index = self._statement_index(index - 1)
        return None

    def in_assignment_target(self) -> bool:
        return self.storing

    def is_augmented_target(self, node: cst.CSTNode) -> bool:
        # Only the innermost statement can be that assignment: a target holds no statement.
        around = self.innermost_statement()
        return type(around) is cst.AugAssign and around.target is node

    def enclosing_tests(self) -> tuple:
        return tuple(self.branch_tests)

    def ancestors(self) -> tuple:
        return tuple(self.stack)

    def iter_ancestors(self):
        return reversed(self.stack)

    @property
    def file_classes(self) -> dict:
        return self.fa.summary.classes

    @property
    def numpy_attrs(self) -> dict:
        return self.fa.numpy_attrs.get(self.cls, {}) if self.cls is not None else {}

    @property
    def class_decorators(self) -> tuple:
        return self.fa.class_decorators.get(self.cls, ()) if self.cls is not None else ()

    def visit_Assign(self, node: cst.Assign) -> bool:
        self._visit(node.value)
        if self.info is not None and not self.probe_only:
            self._add_edges(self._assigned_method_edges(node.value))
        value_kind = self.kind(node.value)
        for t in node.targets:
            self._bind(t.target, node.value, value_kind)
            self._visit_target(t.target)
            attr = self.self_attr(t.target)
            if attr is not None:
                self._store_items(attr, node.value)
        return False

    def _store_items(self, attr: str, value: cst.BaseExpression) -> None:
        """`self.<attr> = {...}`: the kinds of its string-keyed tensor items, until rebound."""
        for key in [k for k in self.self_items if k[0] == attr]:
            del self.self_items[key]
        if type(value) is not cst.Dict:
            return
        for el in value.elements:
            if type(el) is cst.DictElement and type(el.key) is cst.SimpleString:
                key = el.key.evaluated_value
                k = self.kind(el.value)
                if isinstance(key, str) and k in (T, B):
                    self.self_items[(attr, key)] = k

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is not None:
            self._visit(node.value)
            declared = annotation_kind(node.annotation) == T and not is_none(node.value)
            self._bind(node.target, node.value, T if declared else self.kind(node.value))
            if declared and type(node.target) is cst.Name:
                # `obs: torch.Tensor = to_torch(batch.obs)`: a tensor, not a helper's maybe-tuple
                self.call_values.discard(node.target.value)
        self._visit_target(node.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self._visit(node.value)
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
            self._visit(target)
        finally:
            self.storing = False

    def visit_For(self, node: cst.For) -> bool:
        self._visit(node.iter)
        it = node.iter
        elem = U
        ik = self.kind(it)
        if ik in (T, B):
            elem = T
        elif ik == P:
            elem = P
        elif ik == C:
            elem = T if self._tensor_container(it) else P
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
        self._walk_loop(node)
        return False

    def _walk_loop(self, node: cst.For | cst.While) -> None:
        """A loop's body runs any number of times: what it binds joins what held before it
        (`merge_kinds`); then its `else` block."""
        before = dict(self.env)
        self._walk_block(node.body)
        self.env = merge_kinds(before, self.env)
        if node.orelse is not None:
            self._walk_block(node.orelse.body)

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
            if k not in TENSORISH:
                continue
            if type(name) is cst.Name:
                self._bind(name, None, P if k == P else T)
            elif type(name) in (cst.Tuple, cst.List):
                # `for i, (h, w) in enumerate(aspect_ratio)`: a row unpacked into its elements,
                # 0-d tensors (torchtune's tile embeddings)
                for el in name.elements:
                    if type(el.value) is cst.Name:
                        self._bind(el.value, None, P if k == P else T)

    def visit_While(self, node: cst.While) -> bool:
        self._visit(node.test)
        self._walk_loop(node)
        return False

    def visit_With(self, node: cst.With) -> bool:
        for item in node.items:
            self._visit(item.item)
            if item.asname is not None:
                self._bind(item.asname.name, item.item, U)
        self._walk_block(node.body)
        return False

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> bool:
        """A handler of runtime errors only (`except RuntimeError as e: if "out of memory" in
        str(e): logger.warning(...)`) whose `try` raises nothing itself: errors of tensor code come
        from the compiled graph when it runs, never while Dynamo traces, so Dynamo never traces
        the handler (measured: a failing `view` in such a `try` is a compile error, not a jump to
        the handler). Its code is not walked."""
        if node.type is None or len(self.stack) < 2 or type(self.stack[-2]) is not cst.Try:
            return True
        caught = node.type.elements if type(node.type) is cst.Tuple else None
        types = [e.value for e in caught] if caught is not None else [node.type]
        if not all(self.qualname(t) in _RUNTIME_ERRORS for t in types):
            return True
        return any(type(n) is cst.Raise for n in fastcst.iter_nodes(self.stack[-2].body))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is None:
            self.returned_tuples = None
            self.returns_only_bool = False
            return
        for part in _return_parts(node.value):
            if self.returned_tuples is not None:
                if type(part) is cst.Tuple and not any(type(e) is cst.StarredElement for e in part.elements):
                    self.returned_tuples.append(self._tuple_kinds(part))
                else:
                    self.returned_tuples = None
            if type(part) is cst.Name and part.value in self.param_origin:
                self.return_params.add(part.value)  # its kind is the caller's argument's
                self.returns_only_bool = False
                continue
            k = self.kind(part)
            if k != B:
                self.returns_only_bool = False
            if k in TENSORISH:
                self.returns_tensor = True
            elif type(part) is cst.Tuple and any(self.is_tensor(e.value) for e in part.elements):
                self.returns_tensor = True

    def _tuple_kinds(self, node: cst.Tuple) -> tuple:
        """Kinds of a returned tuple's items; a parameter given back as it came is unknown here
        (its kind is the caller's argument's)."""
        out = []
        for e in node.elements:
            v = e.value
            if type(v) is cst.Tuple and not any(type(x) is cst.StarredElement for x in v.elements):
                out.append(self._tuple_kinds(v))
            elif type(v) is cst.Name and v.value in self.param_origin:
                out.append(U)
            else:
                out.append(self.kind(v))
        return tuple(out)

    def returned_tuple_kinds(self) -> Optional[tuple]:
        """What every `return` gives when each gives a tuple of one length: the kinds of its
        items, joined position by position (`return fg_mask, loss` with `fg_mask` a boolean
        tensor in every one). None otherwise."""
        if not self.returned_tuples or len({len(t) for t in self.returned_tuples}) != 1:
            return None
        merged = self.returned_tuples[0]
        for other in self.returned_tuples[1:]:
            merged = _join_tuple_kinds(merged, other)
        return merged

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        static = self.static_truth(node.test)
        if static is True:
            self._visit(node.body)
            return False
        if static is False:
            self._visit(node.orelse)
            return False
        inside, outside = self._isinstance_narrowing(node.test)
        if not inside and not outside:
            return True
        # `feats[i].shape[2:] if isinstance(feats, list) else int(feats[i][0])`: each side with
        # what the test settles for it.
        self._visit(node.test)
        with self.assuming(node.test, holds=True):
            self._visit(node.body)
        with self.assuming(node.test, holds=False):
            self._visit(node.orelse)
        return False

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        # One memo per outermost `and` / `or` (the stack's top is node itself): the nodes of an
        # expression keep their values while it is visited (no statement runs in between).
        if len(self.stack) < 2 or type(self.stack[-2]) is not cst.BooleanOperation or self._truth_memo is None:
            self._truth_memo = {}
        left = self.static_truth(node.left, self._truth_memo)
        if (left is False and type(node.operator) is cst.And) or (left is True and type(node.operator) is cst.Or):
            return False  # right side never runs while compiling
        inside, outside = self._isinstance_narrowing(node.left)
        if not (inside if type(node.operator) is cst.And else outside):
            return True
        # The right side runs only where the left held (`and`) or failed (`or`).
        self._visit(node.left)
        with self.assuming(node.left, holds=type(node.operator) is cst.And):
            self._visit(node.right)
        return False

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._visit(node.iter)
        self._bind_comp_for(node)

    def _bind_comp_for(self, node: cst.CompFor) -> None:
        ik = self.kind(node.iter)
        # Rows of a tensor are tensors; items of a presumed one (a list as often) only presumed.
        elem = T if ik in (T, B) else P if ik in (P, C) else U
        self._bind(node.target, None, elem)
        self._bind_zipped(node.target, node.iter)  # `[l for l, drop in zip(layers, to_drop) if not drop]`

    def bind_comprehension(self, node: cst.BaseExpression) -> None:
        comp_for = getattr(node, "for_in", None)
        while comp_for is not None:
            self._bind_comp_for(comp_for)
            comp_for = comp_for.inner_for_in

    def _visit_comprehension(self, node) -> bool:
        # Its loops bind names before its element reads them (libcst's order is the element first).
        self._visit(node.for_in)
        if type(node) is cst.DictComp:
            self._visit(node.key)
            self._visit(node.value)
        else:
            self._visit(node.elt)
        return False

    visit_GeneratorExp = visit_ListComp = visit_SetComp = visit_DictComp = _visit_comprehension

    def _note_evidence(self, node: cst.BaseExpression) -> None:
        if type(node) is cst.Name and node.value in self.evidence_params and node.value in self.param_origin:
            self.evidence = self.evidence | {node.value}

    def visit_Subscript(self, node: cst.Subscript) -> None:
        # `mask[:, None, :, None]`, `bias[..., 0]`: indexing only arrays and tensors allow
        if self.evidence_params and len(node.slice) >= 2:
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
        if self.evidence_params and type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor, cst.MatrixMultiply):
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
        if q is not None and q.startswith("torch.") and not torch_non_tensor(q) and q not in K.TORCH_FACTORIES and (
            not q.startswith("torch.nn.") or q.startswith("torch.nn.functional.")
        ):
            # the input of a torch op (`torch.where(mask, ...)`, `F.pad(mask, ...)`), or a
            # tensor keyword (`attn_mask=mask`); not other positions, often numbers (`p`, `dim`)
            for i, arg in enumerate(node.args):
                if (i == 0 and arg.keyword is None) or (
                    arg.keyword is not None and arg.keyword.value in ("input", "mask", "condition", "attn_mask")
                ):
                    self._note_evidence(arg.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        """`self.<name>` read, not called (a property getter; a method taken as a value): an
        edge that resolves to the method of that name, if any. Not attributes the class
        assigns, nor the attribute of a call's `self.m(...)` (its own edge)."""
        if self.info is None or self.probe_only or self.cls is None:
            return
        value = node.value
        if type(value) is not cst.Name or value.value != "self":
            return
        name = node.attr.value
        if name in self.all_attrs or name in self.tensor_attrs or name == "training":
            return
        stack = self.stack
        parent = stack[-2] if len(stack) > 1 else None
        if (type(parent) is cst.Call and parent.func is node) or type(parent) is cst.Arg or self.in_assignment_target():
            return  # a call's own edge; an argument is `_passed_function_edges`' (not to hooks)
        self._add_edges((("prop", name),))

    def visit_Call(self, node: cst.Call) -> None:
        if self.evidence_params:
            self._note_call_evidence(node)
        if self.probe_only:
            self._record_call_site(node)
            return
        if self.info is None:
            return
        self._add_edges((self._edge_for(node),))
        if node.args:
            self._add_edges(self._passed_function_edges(node))

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    # -- binding and kinds ------------------------------------------------------------------
    def _tensor_container(self, node: cst.BaseExpression) -> bool:
        """A parameter annotated as a container of tensors, not rebound since."""
        return type(node) is cst.Name and node.value in self.tensor_containers and node.value in self.param_origin

    def from_module_call(self, node: cst.BaseExpression) -> bool:
        if type(node) is cst.Name:
            return node.value in self.call_values
        return type(node) is cst.Call and self._module_or_helper_call(node)

    def _module_or_helper_call(self, call: cst.Call) -> bool:
        """A call of a submodule, a method or a helper (`self.miner(x)`, `self.layers[i](x)`,
        `prepare(x)`), whose value may be a tuple; not a torch function or a tensor method."""
        func = call.func
        if type(func) is cst.Attribute:
            if self.self_attr(func) is not None:
                return True
            owner = self.self_attr(func.value)
            return owner is not None and owner not in self.tensor_attrs
        if type(func) is cst.Name:
            local = self.fa.local_functions.get(func.value)
            if local is not None and func.value not in self.env and returns_one_value(local):
                return False  # a helper of the file whose returns are single values, not tuples
            return not (self.qualname(func) or "").startswith("torch.")
        return type(func) is cst.Subscript

    def _returns_tensor_tuple(self, value: Optional[cst.BaseExpression]) -> bool:
        """A call of a function of the file declared `-> tuple[Tensor, Tensor]` (torchani's
        `count, cumcount = count_atoms_in_buckets(...)`)."""
        if type(value) is not cst.Call or type(value.func) is not cst.Name or value.func.value in self.env:
            return False
        fn = self.fa.local_functions.get(value.func.value)
        return fn is not None and holds_tensors(fn.returns)

    def _bind_returned_tuple(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> bool:
        """`(fg_mask, idx), loss = self.assign(preds)`: the items take the kinds the method or
        function of this file returns at their positions (see returned_tuple_kinds)."""
        key = self._local_callee(value) if type(value) is cst.Call else None
        kinds = self._returns_tuple(key) if key is not None else None
        if kinds is None or len(kinds) != len(target.elements):
            return False

        def bind(tgt, k) -> None:
            if type(tgt) in (cst.Tuple, cst.List) and type(k) is tuple and len(k) == len(tgt.elements):
                for e, ek in zip(tgt.elements, k):
                    bind(e.value, ek)
            elif type(tgt) is cst.StarredElement or type(k) is tuple:
                self._bind(tgt.value if type(tgt) is cst.StarredElement else tgt, None, U)
            else:
                self._bind(tgt, None, k)

        bind(target, kinds)
        return True

    def _local_callee(self, call: cst.Call) -> Optional[str]:
        """The key of the method (`self.m(...)`) or module-level function of this file a call runs."""
        func = call.func
        if type(func) is cst.Attribute and self.self_attr(func) is not None:
            meth = func.attr.value
            if self.class_info is not None and meth in self.class_info.methods:
                return f"{self.cls}.{meth}"
            return None
        if type(func) is cst.Name and func.value not in self.env and func.value in self.fa.local_functions:
            return f"{self.fa.summary.module}.{func.value}"
        return None

    def _bind(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], value_kind: str) -> None:
        if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in K.PYTHON_BOOL_COMPARISONS:
            # `eq = torch.equal(a, b)` holds a Python bool: the call breaks (DYN110 / DYN120 report
            # it there), a later `if eq:` adds nothing (gpytorch's kernels)
            value_kind = N
        if type(target) is cst.Name:
            self.env[target.value] = value_kind
            self.eval_kinds.pop(target.value, None)
            self.param_origin.discard(target.value)
            self.record_params.pop(target.value, None)
            self.local_types.pop(target.value, None)
            if value is not None and self.is_numpy(value):
                self.numpy_names.add(target.value)
            else:
                self.numpy_names.discard(target.value)
            if value_kind in (T, P) and type(value) is cst.Call and self._module_or_helper_call(value):
                self.call_values.add(target.value)
            else:
                self.call_values.discard(target.value)
        elif type(target) in (cst.Tuple, cst.List):
            elems = [e.value for e in target.elements]
            if type(value) in (cst.Tuple, cst.List) and len(value.elements) == len(elems):
                for t, v in zip(elems, value.elements):
                    self._bind(t, v.value, self.kind(v.value))
            elif self._bind_returned_tuple(target, value):
                pass
            else:
                # `b, n, _ = x.shape`, `h, w = x.size()[-2:]`: sizes; `q, k = x.chunk(2)`: tensors
                k = value_kind if value_kind == S or (value_kind in (T, B) and self._unpacks_tensors(value)) else U
                if k == B or k == U and self._returns_tensor_tuple(value):
                    k = T
                for t in elems:
                    self._bind(t, None, k)
                if value is not None and self.is_numpy(value):
                    # `y, x = np.ogrid[...]`, `q, r = np.divmod(a, b)`: NumPy values each
                    self.numpy_names.update(t.value for t in elems if type(t) is cst.Name)
        elif type(target) is cst.StarredElement:
            self._bind(target.value, None, U)

"""Fast read-only traversal of libcst trees, visiting exactly what libcst's own traversal visits.

libcst's `node.visit(visitor)` and `node.children` rebuild every node they pass through
(`_visit_and_replace_children` calls each node's constructor and validation), which made tree
walking most of dynalint's run time. For read-only visitors that work is thrown away. This module
learns, once per node class, the order in which libcst visits that class's fields (from the code
of its `_visit_and_replace_children`) and then reads those fields directly. The order, the children and the
visit/leave calls are the same as libcst's; tests/test_engine.py checks it node by node.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Optional

import libcst as cst
from libcst import MaybeSentinel
from libcst._nodes.internal import CodegenState

_FIELD_ORDER: dict[type, tuple[str, ...]] = {}
_NEWLINE_RE = re.compile(r"\r\n?|\n")  # libcst's line breaks (position_provider.NEWLINE_RE)
_SENTINEL = MaybeSentinel.DEFAULT
# Nodes whose children can be statements (imports, assignments, definitions live only there).
STATEMENT_CONTAINERS = (
    cst.Module,
    cst.SimpleStatementLine,
    cst.BaseCompoundStatement,
    cst.BaseSuite,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Else,
    cst.Finally,
    cst.MatchCase,
)


def _fields_from_code(cls: type) -> Optional[tuple[str, ...]]:
    """Field names in the order `cls._visit_and_replace_children` visits them: each
    `visit_*(self, "field", ...)` call names its field by a string constant, and a code
    object's constants are listed in the order the compiler met them, i.e. source order
    (conditional visits included). Reading them costs microseconds; reading the source with
    `inspect` cost ~35 ms per process, a tenth of a one-file run."""
    import dataclasses

    code = getattr(cls._visit_and_replace_children, "__code__", None)
    if code is None or not dataclasses.is_dataclass(cls):
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    order: list[str] = []

    def collect(co) -> None:
        for const in co.co_consts:
            if isinstance(const, str) and const in names and const not in order:
                order.append(const)
            elif hasattr(const, "co_consts"):  # a nested lambda or comprehension
                collect(const)

    collect(code)
    return tuple(order)


class _FieldRecorder(cst.CSTVisitor):
    """Records which fields libcst visits on one node, in order, without descending."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        return None

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


def _learn(node: cst.CSTNode) -> tuple[str, ...]:
    cls = type(node)
    order = _fields_from_code(cls)
    if order is None:  # no code object (a compiled libcst): record one traversal instead
        recorder = _FieldRecorder()
        node._visit_and_replace_children(recorder)
        order = tuple(dict.fromkeys(recorder.fields))
    _FIELD_ORDER[cls] = order
    return order


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Same nodes, same order as `node.children`, without rebuilding `node`."""
    fn = _CHILDREN.get(node.__class__)
    if fn is None:
        fn = _CHILDREN[node.__class__] = _compile_children(node, frozenset())
    return fn(node)


_CHILDREN: dict[type, Callable] = {}
_CHILDREN_WITHOUT: dict[frozenset, dict[type, Callable]] = {}


def children_without(skip: frozenset) -> dict[type, Callable]:
    """node type -> function giving `[c for c in children(node) if type(c) not in skip]`, for a
    walk that steps over the trivia types `skip`; filled on first use of each type (`kids_of`)."""
    table = _CHILDREN_WITHOUT.get(skip)
    if table is None:
        table = _CHILDREN_WITHOUT[skip] = {}
    return table


def kids_of(table: dict, skip: frozenset, node: cst.CSTNode) -> Callable:
    """The function of `children_without(skip)` for node's type."""
    fn = table.get(node.__class__)
    if fn is None:
        fn = table[node.__class__] = _compile_children(node, skip)
    return fn


def _hint_classes(hint) -> Optional[set]:
    """The classes a field's type hint allows (None, MaybeSentinel, str and literals included);
    None when the hint is not understood."""
    import typing

    out: set = set()
    stack = [hint]
    while stack:
        h = stack.pop()
        origin = typing.get_origin(h)
        if origin is typing.Literal:
            out.add(str)
        elif origin is not None:
            args = typing.get_args(h)
            if not args:
                return None
            stack.extend(args)
        elif h is None or h is type(None):
            out.add(type(None))
        elif isinstance(h, type):
            out.add(h)
        else:
            return None
    return out


def _all_subclasses(cls: type) -> set:
    out, stack = {cls}, [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in out:
                out.add(sub)
                stack.append(sub)
    return out


_HINTS: dict[type, dict] = {}


def _field_plan(cls: type, name: str, skip: frozenset) -> str:
    """How the children of field `name` of node class `cls` are read for a walk that steps over
    `skip`: "drop" when its type hint allows only skipped nodes (and None / MaybeSentinel),
    "all" when it allows no skipped node, else "check" (each value's type is tested)."""
    if not skip:
        return "all"
    import typing

    hints = _HINTS.get(cls)
    if hints is None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # pragma: no cover - an annotation libcst's own module cannot resolve
            hints = {}
        _HINTS[cls] = hints
    hint = hints.get(name)
    classes = _hint_classes(hint) if hint is not None else None
    if classes is None:
        return "check"
    nodes = set()
    for c in classes:
        if c in (type(None), MaybeSentinel):
            continue
        if not issubclass(c, cst.CSTNode):
            return "check"
        nodes |= _all_subclasses(c)
    if nodes <= skip:
        return "drop"
    if not nodes & skip:
        return "all"
    return "check"


def _compile_children(node: cst.CSTNode, skip: frozenset) -> Callable:
    """A function reading the children of one node class field by field, in libcst's order
    (`_FIELD_ORDER`), as `children` did with `getattr` on each name (this is about twice as
    fast); with `skip`, fields that can hold only skipped types are not read and the other
    values of skipped types are left out."""
    cls = node.__class__
    order = _FIELD_ORDER.get(cls)
    if order is None:
        order = _learn(node)
    lines = ["def _children(node):", "    out = []"]
    for name in order:
        plan = _field_plan(cls, name, skip)
        if plan == "drop":
            continue
        lines += [
            f"    v = node.{name}",
            "    if v is not None and v is not _S:",
            "        c = v.__class__",
            "        if c is tuple or c is list:",
        ]
        if plan == "all":
            lines += ["            out += v", "        else:", "            out.append(v)"]
        else:
            lines += [
                "            out += [x for x in v if x.__class__ not in _skip]",
                "        elif c not in _skip:",
                "            out.append(v)",
            ]
    lines.append("    return out")
    namespace = {"_S": _SENTINEL, "_skip": skip}
    exec(compile("\n".join(lines), f"<children of {cls.__name__}>", "exec"), namespace)
    return namespace["_children"]


def iter_nodes(root: cst.CSTNode, descend: Optional[tuple] = None):
    """Every node under root, depth first (the order of the old `.children`-based walk).
    With `descend`, only the children of nodes of those types are entered."""
    stack = [root]
    if descend is None:
        while stack:
            node = stack.pop()
            yield node
            stack.extend(children(node))
        return
    enters = type_test(descend)
    while stack:
        node = stack.pop()
        yield node
        if enters(type(node)):
            stack.extend(children(node))


_TYPE_TESTS: dict[tuple, Callable[[type], bool]] = {}


def type_test(classes: tuple) -> Callable[[type], bool]:
    """`isinstance(node, classes)` as a function of `type(node)`, memoised per type: libcst's
    node classes are ABCs, whose `isinstance` takes a slow path for every miss."""
    test = _TYPE_TESTS.get(classes)
    if test is None:
        memo: dict[type, bool] = {}

        def test(node_type: type) -> bool:
            found = memo.get(node_type)
            if found is None:
                found = memo[node_type] = issubclass(node_type, classes)
            return found

        _TYPE_TESTS[classes] = test
    return test


def _trivia_types() -> frozenset:
    """Whitespace, comments, punctuation and operator nodes: they hold nothing but each other,
    so a walk that looks for code can step over them (tests check this on real trees)."""
    bases = (
        cst.BaseParenthesizableWhitespace,
        cst.Newline,
        cst.EmptyLine,
        cst.TrailingWhitespace,
        cst.Comment,
        cst.BaseBinaryOp,
        cst.BaseBooleanOp,
        cst.BaseCompOp,
        cst.BaseUnaryOp,
        cst.BaseAugOp,
        cst.Comma,
        cst.Dot,
        cst.Colon,
        cst.AssignEqual,
        cst.Semicolon,
        cst.ImportStar,
        cst.Asynchronous,
        cst.LeftParen,
        cst.RightParen,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
    )
    out = set()
    stack = list(bases)
    while stack:
        cls = stack.pop()
        out.add(cls)
        stack.extend(cls.__subclasses__())
    return frozenset(out)


TRIVIA = _trivia_types()


def _leaf_types() -> frozenset:
    """Node classes with no children but trivia: every field libcst visits holds only trivia
    by its type hint (`Name`, `Integer`, `SimpleString`, `Pass`...). Worked out in tests, which
    check `LEAVES` against it (here it would cost ~35 ms per process)."""
    out = set()
    for cls in _all_subclasses(cst.CSTNode) - TRIVIA:
        if cls.__abstractmethods__ if hasattr(cls, "__abstractmethods__") else False:
            continue
        order = _fields_from_code(cls)
        if order is not None and all(_field_plan(cls, name, TRIVIA) == "drop" for name in order):
            out.add(cls)
    return frozenset(out)

_HOOKS: dict[tuple[type, type, str], Optional[Callable]] = {}


def hook(visitor_cls: type, node_cls: type, prefix: str) -> Optional[Callable]:
    """`visit_<Node>` / `leave_<Node>` of a visitor class, looked up once per pair; None when
    the class only inherits libcst's empty default."""
    key = (visitor_cls, node_cls, prefix)
    try:
        return _HOOKS[key]
    except KeyError:
        name = f"{prefix}_{node_cls.__name__}"
        fn = getattr(visitor_cls, name, None)
        if fn is not None and fn is getattr(cst.CSTVisitor, name, None):
            fn = None
        _HOOKS[key] = fn
        return fn


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` for a read-only CSTVisitor that defines no attribute hooks."""
    cls = type(visitor)
    if cls.on_visit is cst.CSTVisitor.on_visit and cls.on_leave is cst.CSTVisitor.on_leave:
        _visit_hooks(node, visitor, cls, skippable(cls, ()))
    else:
        _visit_any(node, visitor)


def _visit_any(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    if visitor.on_visit(node):
        for child in children(node):
            _visit_any(child, visitor)
    visitor.on_leave(node)


def _visit_hooks(node: cst.CSTNode, visitor: cst.CSTVisitor, cls: type, skip: frozenset) -> None:
    """What libcst's default on_visit/on_leave do (call `visit_<Node>`, descend unless it
    returned False, call `leave_<Node>`), stepping over trivia the visitor has no hooks for."""
    node_cls = type(node)
    visit_hook = hook(cls, node_cls, "visit")
    if visit_hook is None or visit_hook(visitor, node) is not False:
        for child in children(node):
            if type(child) not in skip:
                _visit_hooks(child, visitor, cls, skip)
    leave_hook = hook(cls, node_cls, "leave")
    if leave_hook is not None:
        leave_hook(visitor, node)


class Positions(dict):
    """libcst `PositionProvider` positions (node -> CodeRange), computed for some pieces of the
    module first; any other node makes it compute the whole module on first access.

    Pieces keep raw `(start line, start column, end line, end column)` tuples, computed as if
    the piece started on line 1; a node's `CodeRange` is built, on its real line, only when it
    is looked up (most nodes never are)."""

    def __init__(self, module: cst.Module, fallback: Optional["Positions"] = None) -> None:
        super().__init__()
        self.module = module
        self.complete = False
        # Where nodes outside the pieces are looked up (`StatementPositions`): one whole-module
        # Positions shared by all, instead of each positioning the whole module.
        self.fallback = fallback
        # Raw positions of every positioned node (from line 1 of its piece) and the lines to add
        # to them, merged over the pieces: one lookup per node, however many pieces (a list of
        # pieces searched in turn made a file with thousands of them cost their square).
        self.raw: dict = {}
        self.delta: dict = {}

    def add_piece(self, computed: dict, delta: int) -> None:
        self.raw.update(computed)
        self.delta.update(dict.fromkeys(computed, delta))

    def __missing__(self, node: cst.CSTNode):
        raw = self.raw.get(node)
        if raw is not None:
            rng = _code_range(raw, self.delta.get(node, 0))
            self[node] = rng
            return rng
        if self.fallback is not None:
            return self.fallback[node]
        if self.complete:
            raise KeyError(node)
        self.position_whole_module()
        return self[node]

    def position_whole_module(self) -> None:
        """Every node of the module, in place of the pieces."""
        self.complete = True
        self.raw = _module_positions(self.module)
        self.delta = {}  # nothing to add


def _code_range(raw: tuple, delta: int):
    from libcst._position import CodePosition, CodeRange

    return CodeRange(CodePosition(raw[0] + delta, raw[1]), CodePosition(raw[2] + delta, raw[3]))


class _Syntactic:
    """`record_syntactic_position` as a plain context manager (libcst's is a generator)."""

    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __init__(self, state, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.line, self.column = self.state.line, self.state.column

    def __exit__(self, *exc) -> None:
        state = self.state
        computed = state.computed
        if self.start_node is not None:
            start = computed[self.start_node][:2]
        else:
            start = (self.line, self.column)
        if self.end_node is not None:
            end = computed[self.end_node][2:]
        else:
            end = (state.line, state.column)
        computed[self.node] = start + end


class _PositionState(CodegenState):
    """libcst's `PositionProvidingCodegenState`, same positions, at a third of its cost: tuples
    instead of `CodePosition`s, a newline test before splitting a token, no generator-based
    context manager (tests/test_engine.py compares the two node by node on real code)."""

    def __init__(self, module: cst.Module, indents: tuple = ()) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.indent_tokens = list(indents)
        self.line = 1
        self.column = 0
        self.starts: list[tuple[int, int]] = []
        self.computed: dict = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node) -> None:
        start = self.starts.pop()
        if node not in self.computed:
            self.computed[node] = start + (self.line, self.column)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


def _module_positions(module: cst.Module) -> dict:
    """Raw positions of every node, as `PositionProvider` computes them (without the metadata
    wrapper's overhead: it also walks and rebuilds the whole tree)."""
    state = _PositionState(module)
    module._codegen(state)
    return state.computed


# The text the last few positioned modules were parsed from (libcst round-trips it exactly), so
# fix generators, which run right after `positions`, need not regenerate it with `module.code`.
# libcst nodes take no weak references: a short list holds the modules themselves.
_SOURCES: list[tuple[cst.Module, str]] = []


def _remember_source(module: cst.Module, source: str) -> None:
    _SOURCES.append((module, source))
    del _SOURCES[:-4]


def source_of(module: cst.Module) -> str:
    """`module.code`, from the text it was parsed from when `positions` was given it."""
    for known, text in reversed(_SOURCES):
        if known is module:
            return text
    return module.code


def positions(module: cst.Module, source: Optional[str] = None, within: Optional[set] = None) -> Positions:
    """Positions of the nodes inside the top-level statements `within` (all when None).

    When `within` came from `enclosing_statements`, only the functions it names are positioned
    (a big class with one reporting method costs one method); otherwise each whole top-level
    statement. Either piece starts at column 0 of some line; that line is found by locating the
    piece's own code in `source` (the text the module was parsed from), and the piece is then
    positioned exactly as the whole-module generator would, starting from that line with the
    same indentation. A piece whose code is not found exactly once falls back to its whole
    top-level statement, and that to the whole module. Nodes outside the positioned pieces are
    positioned on first access (the whole module, once).
    """
    if source is not None:
        _remember_source(module, source)
    if within is not None and source is not None and getattr(within, "parts", None):
        # First only the statements of the functions' bodies that reported, each when found
        # once in the file; any other node is looked up in the positions the rest of this
        # function gives, computed on first need.
        rest = _Deferred(module, lambda into: _positions_within(module, source, within, into), None)
        out = Positions(module, fallback=rest)
        if _position_parts(module, source, within, out):
            return out
    out = Positions(module)
    if within is None or source is None or not _positions_within(module, source, within, out):
        out.position_whole_module()
    return out


def _position_parts(module: cst.Module, source: str, within: "Enclosing", out: Positions) -> bool:
    """Position the reported statements of every function of `within` (`Enclosing.parts`);
    False if a function has none known or one is not found exactly once."""
    parts = within.parts
    lines = _SourceLines(source)
    for stmt in module.body:
        if stmt not in within:
            continue
        pieces = within.functions.get(stmt)
        if not pieces:
            return False
        for node, _ in pieces:
            found = parts.get(id(node))
            if found is None:
                return False
            for part, indents in _with_indents(found):
                if _position_piece(module, source, part, indents, 0, len(source), out, lines) is None:
                    return False
    return True


def _positions_within(module: cst.Module, source: str, within: set, out: Positions) -> bool:
    functions = getattr(within, "functions", {})
    lines = _SourceLines(source)
    windows = _statement_windows(module, source, lines) if len(source) >= _WINDOWED_SIZE else None
    cursor = 0
    for index, stmt in enumerate(module.body):
        if stmt not in within:
            continue
        lo, hi = windows[index] if windows is not None else (cursor, len(source))
        pieces = functions.get(stmt)
        if pieces is not None and all(
            _position_piece(module, source, node, indents, lo, hi, out, lines) is not None for node, indents in pieces
        ):
            continue
        end = _position_piece(module, source, stmt, (), max(lo, cursor), hi, out, lines)
        if end is None:
            return False
        cursor = end
    return True


class StatementPositions:
    """Positions one top-level statement at a time (`of`), for a big file whose findings are
    placed statement by statement so that only one statement's positions live at once (those of
    every reporting function at once were the peak of a big file's memory: 1.5 GB of a 200,000-line
    file's). The line table, the statement windows and one whole-module Positions, for nodes
    outside the statement, are shared; the positions are those `positions` gives."""

    def __init__(self, module: cst.Module, source: str, within: "Enclosing", windows: list) -> None:
        self.module, self.source, self.within, self.windows = module, source, within, windows
        _remember_source(module, source)
        self.lines = _SourceLines(source)
        self.index = {id(stmt): i for i, stmt in enumerate(module.body)}
        self.whole = Positions(module)  # positioned on first access

    @classmethod
    def for_file(cls, module: cst.Module, source: Optional[str], within: Optional[set]) -> Optional["StatementPositions"]:
        """None unless the file is big enough to search each statement within its window (then
        `positions` serves, all at once)."""
        if source is None or not isinstance(within, Enclosing) or len(source) < _WINDOWED_SIZE:
            return None
        windows = _statement_windows(module, source, _SourceLines(source))
        if windows is None:
            return None
        return cls(module, source, within, windows)

    def of(self, stmt: cst.CSTNode) -> Positions:
        lo, hi = self.windows[self.index[id(stmt)]]
        pieces = self.within.functions.get(stmt)
        parts = self.within.parts
        if pieces and all(id(node) in parts for node, _ in pieces):
            # Only the statements of the functions' bodies that reported, when each is found
            # once in the window; any other node is looked up in the functions' positions,
            # computed on first need (`_Deferred`), as they would have been without this step.
            out = Positions(self.module, fallback=_Deferred(self.module, lambda into: self._fill(stmt, into), self.whole))
            if all(
                _position_piece(self.module, self.source, part, indents, lo, hi, out, self.lines) is not None
                for node, _ in pieces
                for part, indents in _with_indents(parts[id(node)])
            ):
                return out
        out = Positions(self.module, fallback=self.whole)
        return out if self._fill(stmt, out) else self.whole

    def _fill(self, stmt: cst.CSTNode, out: Positions) -> bool:
        """Position stmt's reporting functions into `out`, else stmt whole; False if neither is
        found once in its window."""
        lo, hi = self.windows[self.index[id(stmt)]]
        pieces = self.within.functions.get(stmt)
        if pieces is not None and all(
            _position_piece(self.module, self.source, node, indents, lo, hi, out, self.lines) is not None for node, indents in pieces
        ):
            return True
        return _position_piece(self.module, self.source, stmt, (), lo, hi, out, self.lines) is not None


def _with_indents(parts: tuple) -> Iterable[tuple]:
    statements, indents = parts
    return ((s, indents) for s in statements)


class _Deferred(Positions):
    """Positions that `fill(self)` computes on the first lookup (False: it found nothing, so
    every lookup goes to `fallback`)."""

    def __init__(self, module: cst.Module, fill: Callable, fallback: Positions) -> None:
        super().__init__(module, fallback=fallback)
        self._fill: Optional[Callable] = fill

    def __missing__(self, node: cst.CSTNode):
        fill = self._fill
        if fill is not None:
            self._fill = None
            if not fill(self):
                self.raw, self.delta = {}, {}
                if self.fallback is None:  # as `positions` does when the pieces fail
                    self.position_whole_module()
            return self[node]
        return super().__missing__(node)


def _position_piece(
    module: cst.Module, source: str, node: cst.CSTNode, indents: tuple, cursor: int, limit: int, out: Positions, lines: "_SourceLines"
) -> Optional[int]:
    """Position `node` (a statement starting a line, inside blocks indented by `indents`) if its
    code occurs exactly once in `source[cursor:limit]`; returns the offset after it, else None."""
    state = _PositionState(module, indents)
    node._codegen(state)  # as if it started on line 1; moved to its real line on lookup
    text = "".join(state.tokens)
    start = source.find(text, cursor, limit)
    if start < 0 or source.find(text, start + 1, limit) >= 0:
        return None
    if start and source[start - 1] not in "\r\n":
        return None
    out.add_piece(state.computed, lines.line_of(start) - 1)
    return start + len(text)


# From this size on, each top-level statement is searched for only between its neighbours
# (`_statement_windows`): searching the rest of the file for every positioned piece made a file
# with thousands of them cost their square (a 50,000-line model file: most of its run).
_WINDOWED_SIZE = 200_000


def _statement_windows(module: cst.Module, source: str, lines: "_SourceLines") -> Optional[list[tuple[int, int]]]:
    """For each top-level statement, a span of `source` that holds its code: from the end of
    the statement before it to the start of the one after it, with line numbers from Python's
    own parser (a tenth of libcst's parse). None when the two parsers' statements do not
    line up (then the whole file is searched, as for small files)."""
    from .parsing import statement_spans

    body = statement_spans(source)
    if body is None:
        return None
    spans: list[tuple[int, int]] = []  # (first line, last line) of each libcst statement
    k = 0
    for stmt in module.body:
        n = len(stmt.body) if type(stmt) is cst.SimpleStatementLine else 1
        group = body[k : k + n]
        k += n
        if len(group) != n:
            return None
        spans.append((group[0][0], max(last for _first, last in group)))
    if k != len(body):
        return None
    windows = []
    for i in range(len(spans)):
        lo = spans[i - 1][1] + 1 if i else 1  # leading blank lines and comments come before
        hi = spans[i + 1][0] if i + 1 < len(spans) else lines.count + 1
        windows.append((lines.offset(min(lo, spans[i][0])), lines.offset(hi + 1)))
    return windows


def _line_of(source: str, offset: int) -> int:
    """1-based line at offset, counting line breaks as libcst does (\\r\\n, \\r, \\n)."""
    head = source[:offset]
    if "\r" not in head:
        return head.count("\n") + 1
    from libcst.metadata.position_provider import NEWLINE_RE

    return len(NEWLINE_RE.findall(head)) + 1


class _SourceLines:
    """Offsets of the starts of lines of a text (line breaks as libcst counts them), found
    once, so that each piece's line is a binary search instead of a count from the top."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._starts: Optional[list[int]] = None

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in _NEWLINE_RE.finditer(self.source)]
        return self._starts

    @property
    def count(self) -> int:
        return len(self.starts)

    def line_of(self, offset: int) -> int:
        """1-based line at offset."""
        if offset < 4096:  # early in the file: counting is cheaper than the table
            return _line_of(self.source, offset)
        import bisect

        return bisect.bisect_right(self.starts, offset)

    def offset(self, line: int) -> int:
        """Offset of the start of 1-based `line` (the end of the text past the last line)."""
        starts = self.starts
        return starts[line - 1] if 1 <= line <= len(starts) else len(self.source)


class Enclosing(set):
    """Top-level statements, plus for each the function definitions inside it that matter, with
    the indentation of the blocks around each (what `positions` needs to position them alone)."""

    def __init__(self) -> None:
        super().__init__()
        self.functions: dict[cst.CSTNode, list[tuple[cst.CSTNode, tuple[str, ...]]]] = {}
        # id of a function -> the statements of its body that hold its findings, in order, with
        # the indentation of that body (StatementPositions positions them before the function).
        self.parts: dict[int, tuple[list[cst.CSTNode], tuple[str, ...]]] = {}


def enclosing_statements(module: cst.Module, functions: Iterable[cst.CSTNode], parts: Optional[dict] = None) -> Optional[set]:
    """The top-level statements that contain the given function definitions (found through
    statement bodies only, never through expressions); None if one of them is not found.
    `parts`: id of a function -> {id: statement of its body} (`FileAnalyzer.reported_parts`)."""
    wanted = {id(f) for f in functions}
    contains_statements = type_test(STATEMENT_CONTAINERS)
    table = children_without(TRIVIA)  # statements and functions are code
    default = module.default_indent
    out = Enclosing()
    found: set = set()
    for stmt in module.body:
        stack: list[tuple[cst.CSTNode, tuple[str, ...]]] = [(stmt, ())]
        while stack:
            node, indents = stack.pop()
            if id(node) in wanted:
                found.add(id(node))
                out.add(stmt)
                out.functions.setdefault(stmt, []).append((node, indents))
                wanted_parts = (parts or {}).get(id(node))
                body = node.body
                if wanted_parts and type(body) is cst.IndentedBlock:
                    inner = indents + (default if body.indent is None else body.indent,)
                    out.parts[id(node)] = ([s for s in body.body if id(s) in wanted_parts], inner)
            if contains_statements(type(node)):
                inner = indents
                if type(node) is cst.IndentedBlock:
                    inner = indents + (default if node.indent is None else node.indent,)
                kids = table.get(node.__class__)
                if kids is None:
                    kids = kids_of(table, TRIVIA, node)
                stack.extend((child, inner) for child in kids(node))
    return out if found == wanted else None


_SKIPPABLE: dict[tuple, frozenset] = {}


def skippable(visitor_cls: type, wanted_types) -> frozenset:
    """Node types a walk with this visitor may step over: trivia, and leaves (`LEAVES`: names,
    numbers, strings), that no hook of the visitor and none of `wanted_types` (the node types
    rules asked for) names. Visiting a leaf nobody looks at does nothing."""
    key = (visitor_cls, frozenset(wanted_types))
    found = _SKIPPABLE.get(key)
    if found is None:
        found = frozenset(
            t
            for t in TRIVIA | LEAVES
            if t not in key[1] and hook(visitor_cls, t, "visit") is None and hook(visitor_cls, t, "leave") is None
        )
        _SKIPPABLE[key] = found
    return found


# Node classes whose children are all trivia (tests/test_engine.py checks them with _leaf_types).
LEAVES = frozenset(
    getattr(cst, name)
    for name in (
        "Name", "Integer", "Float", "Imaginary", "SimpleString", "Ellipsis", "Pass", "Break", "Continue",
        "FormattedStringText", "TemplatedStringText", "ParamSlash", "ParamStar",
    )
    if hasattr(cst, name)
)

"""What every fix generator shares: the source behind a parsed module, and text edits from CST positions.

A fix is a list of minimal text edits (`Edit`, 1-based rows and columns), computed from libcst
positions and the file's own text, so everything around the edited span (comments, blank lines,
quote style, newline style) stays byte-for-byte as it was.

Fix generators are built by rules while the analyzer walks a function (`make(ctx, node)`), and
evaluated lazily by the analyzer with `(positions, module)` once the whole file was walked. They
never raise: a generator bug is recorded in `FIX_ERRORS` (tests assert it stays empty) and the
finding simply gets no fix.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import libcst as cst

from dynalint.findings import Edit, Fix
from dynalint.lint import fastcst

# Fix generator failures seen in this process: (rule code, repr of the exception).
FIX_ERRORS: list[tuple[str, str]] = []

_NEWLINES = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where Python (and libcst) end a line.

    str.splitlines() also splits on form feeds, \\x1c-\\x1e, \\x85 and \\u2028, which would shift
    every row after such a character against libcst's positions.
    """
    lines = []
    start = 0
    for m in _NEWLINES.finditer(text):
        lines.append(text[start : m.end()])
        start = m.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


@dataclass
class SourceInfo:
    """Lazily computed facts about one parsed module, shared by all fix generators of a file."""

    module: cst.Module
    # What rules told fix generators while walking the file (e.g. which statements need a guard).
    registry: dict = field(default_factory=dict)
    # Parents of the statements of the module and of the nodes inside the functions fix
    # generators were made for (`cover`); of every node once one outside them is asked about.
    _parents: dict = field(default_factory=dict)
    _covered: set = field(default_factory=set)  # ids of the functions mapped so far
    _complete: bool = False
    _stripped: dict = field(default_factory=dict)  # line(row), by row

    @functools.cached_property
    def lines(self) -> list[str]:
        return split_lines(fastcst.source_of(self.module))  # the parsed text, not a regeneration

    def cover(self, function: cst.CSTNode) -> "SourceInfo":
        """Fixes will ask for parents inside `function`: map it, not the whole module (a model
        file's parent map cost a tenth of its analysis)."""
        if not self._complete and id(function) not in self._covered:
            if not self._covered:  # the first function: map the statements around it too
                self._map(self.module, descend=fastcst.STATEMENT_CONTAINERS)
            self._covered.add(id(function))
            self._map(function)
        return self

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        found = self._parents.get(id(node))
        if found is None and not self._complete:
            self._map(self.module)
            self._complete = True
            found = self._parents.get(id(node))
        return found

    def _map(self, root: cst.CSTNode, descend: Optional[tuple] = None) -> None:
        """Parents of the nodes under root; with `descend`, only of those under nodes of these types."""
        parents = self._parents
        stack: list[cst.CSTNode] = [root]
        while stack:
            node = stack.pop()
            # fastcst.children: the same child nodes as `.children`, without libcst rebuilding `node`.
            for child in fastcst.children(node):
                parents[id(child)] = node
                if descend is None or isinstance(child, descend):
                    stack.append(child)

    @property
    def newline(self) -> str:
        return self.module.default_newline

    @property
    def indent_unit(self) -> str:
        return self.module.default_indent

    def line(self, row: int) -> str:
        """Line `row` (1-based) without its line ending (remembered: the texts of N operands on
        one long line would otherwise copy that line N times)."""
        found = self._stripped.get(row)
        if found is None:
            # split_lines leaves one ending at most, at the end: `\r\n`, `\r` or `\n`
            found = self.lines[row - 1].rstrip("\r\n") if 1 <= row <= len(self.lines) else ""
            self._stripped[row] = found
        return found

    def indentation(self, row: int) -> str:
        text = self.line(row)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def text(self, positions, node: cst.CSTNode) -> str:
        """The exact source text of a node (without its own parentheses, as libcst positions it)."""
        rng = positions[node]
        return self.span(rng.start.line, rng.start.column, rng.end.line, rng.end.column)

    def span(self, row: int, col: int, end_row: int, end_col: int) -> str:
        """Text between two libcst positions (1-based rows, 0-based columns)."""
        if row == end_row:
            return self.line(row)[col:end_col]
        parts = [self.lines[row - 1][col:]]
        parts += self.lines[row : end_row - 1]
        parts.append(self.line(end_row)[:end_col])
        return "".join(parts)


# One module is analyzed at a time per process; keeping the last one avoids recomputing its
# lines and parent map for every finding (libcst modules cannot be weak-referenced).
_last: list = [None, None]


def source_info(module: cst.Module, function: Optional[cst.CSTNode] = None) -> SourceInfo:
    """The module's SourceInfo; `function`: the one a fix generator is made for (see `cover`)."""
    if _last[0] is not module:
        _last[0], _last[1] = module, SourceInfo(module)
    return _last[1].cover(function) if function is not None else _last[1]


# --------------------------------------------------------------------------------------------
# Edits (our rows and columns are 1-based; libcst columns are 0-based)


def replace_node(positions, node: cst.CSTNode, content: str) -> Edit:
    rng = positions[node]
    return Edit(content, rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)


def insert_at(row: int, col0: int, content: str) -> Edit:
    """Insert before the character at libcst position (row, col0)."""
    return Edit(content, row, col0 + 1, row, col0 + 1)


def insert_line_before(row: int, content: str) -> Edit:
    return Edit(content, row, 1, row, 1)


def delete_lines(row: int, end_row: int) -> Edit:
    """Delete whole lines row..end_row, line endings included."""
    return Edit("", row, 1, end_row + 1, 1)


def make_fix(applicability: str, message: str, edits: Iterable[Edit]) -> Optional[Fix]:
    edits = tuple(sorted(set(edits), key=lambda e: (e.row, e.column, e.end_row, e.end_column)))
    return Fix(applicability, message, edits) if edits else None


def guarded(code: str, generator: Callable) -> Callable:
    """Wrap a `(positions, module) -> Fix | None` generator so that a bug costs only the fix."""

    def fix(positions, module):
        try:
            return generator(positions, module)
        except Exception as exc:  # noqa: BLE001 - a generator bug must never lose the finding
            if len(FIX_ERRORS) < 100:
                FIX_ERRORS.append((code, f"{type(exc).__name__}: {exc}"))
            return None

    return fix


# --------------------------------------------------------------------------------------------
# Small CST helpers


def is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def single_small_statement(stmt: cst.CSTNode) -> Optional[cst.BaseSmallStatement]:
    """The only small statement of a one-statement line, else None."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        return stmt.body[0]
    return None


def block_statements(block: cst.CSTNode) -> Optional[list]:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else None


def statement_of(info: SourceInfo, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The innermost statement (simple line, suite or compound) containing node."""
    cur: Optional[cst.CSTNode] = node
    while cur is not None and not isinstance(cur, (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.BaseCompoundStatement)):
        cur = info.parent(cur)
    return cur


def comments_within(positions, root: cst.CSTNode, start, end, skip: Iterable[cst.CSTNode] = ()) -> list[str]:
    """Comment texts inside root between two positions, leaving out those inside `skip` subtrees."""
    skip_ids = {id(n) for n in skip}
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in skip_ids:
            continue
        if isinstance(node, cst.Comment):
            p = positions[node].start
            if (start.line, start.column) <= (p.line, p.column) < (end.line, end.column):
                out.append((p.line, p.column, node.value))
            continue
        stack.extend(node.children)
    return [value for _, _, value in sorted(out)]


ATOMIC = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
)


def atom_text(info: SourceInfo, positions, node: cst.CSTNode) -> str:
    """Source text of an expression that can take `.method()` or stand as an operand."""
    text = info.text(positions, node)
    if isinstance(node, ATOMIC) or getattr(node, "lpar", ()):
        return text if not getattr(node, "lpar", ()) else f"({text})"
    return f"({text})"

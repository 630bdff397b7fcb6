"""What every fix generator shares: the source behind a parsed module (`lint.sourceinfo`), and
text edits from CST positions.

A fix is a list of minimal text edits (`Edit`, 1-based rows and columns), computed from libcst
positions and the file's own text, so everything around the edited span (comments, blank lines,
quote style, newline style) stays byte-for-byte as it was.

Fix generators are built by rules while the analyzer walks a function (`make(ctx, node)`), and
evaluated lazily by the analyzer with `(positions, module)` once the whole file was walked. They
never raise: a generator bug is recorded in `FIX_ERRORS` (tests assert it stays empty) and the
finding simply gets no fix.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

import libcst as cst

from dynalint.findings import Edit, Fix
from dynalint.lint.sourceinfo import SourceInfo, source_info, split_lines  # noqa: F401  (shared with the rules)

# Fix generator failures seen in this process: (rule code, repr of the exception).
FIX_ERRORS: list[tuple[str, str]] = []


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


def enclosing_class(info: SourceInfo, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    """The innermost class around node, or None."""
    cur = info.parent(node)
    while cur is not None and not isinstance(cur, cst.ClassDef):
        cur = info.parent(cur)
    return cur


def class_methods(info: SourceInfo, fn: cst.CSTNode) -> dict[str, cst.FunctionDef]:
    """The methods of the class around fn, by name (empty outside a class)."""
    cls = enclosing_class(info, fn)
    if cls is None:
        return {}
    return {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}


def comments_within(positions, root: cst.CSTNode, start, end, skip: Iterable[cst.CSTNode] = ()) -> list[str]:
    """Comment texts inside root between two positions, leaving out those inside `skip` subtrees."""
    return [text for _, text in comment_rows(positions, root, start, end, skip)]


def comment_rows(positions, root: cst.CSTNode, start, end, skip: Iterable[cst.CSTNode] = ()) -> list[tuple[int, str]]:
    """(row, text) of the comments inside root between two positions, in source order."""
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
    return [(row, value) for row, _, value in sorted(out)]


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

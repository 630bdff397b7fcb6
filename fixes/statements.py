"""Statement-level edits: delete statements (leaving `pass` where a block would become empty) and
re-indent a run of lines without touching the inside of multi-line strings."""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from dynalint.findings import Edit
from dynalint.lint import fastcst

from .base import SourceInfo, delete_lines, insert_at, replace_node


def delete_statements(info: SourceInfo, positions, stmts: Iterable[cst.CSTNode]) -> Optional[list[Edit]]:
    """Edits deleting whole statement lines; a block left empty keeps one `pass`.

    Only lines holding nothing but the statement are deleted (a `SimpleStatementLine` with one
    small statement, or one whose small statements are all being deleted). Returns None when a
    statement cannot be deleted cleanly (it shares its line with code that stays).
    """
    stmts = list(stmts)
    by_block: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
    for stmt in stmts:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        block = info.parent(stmt)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        by_block.setdefault(id(block), (block, []))[1].append(stmt)
    edits: list[Edit] = []
    for block, doomed in by_block.values():
        doomed_ids = {id(s) for s in doomed}
        keeps_something = any(id(s) not in doomed_ids for s in block.body)
        for i, stmt in enumerate(sorted(doomed, key=lambda s: positions[s].start.line)):
            rng = positions[stmt]
            if i == 0 and not keeps_something and isinstance(block, cst.IndentedBlock):
                # The block would be empty: the first deleted statement becomes `pass`.
                edits.append(_replace_line_with(info, positions, stmt, "pass"))
            else:
                edits.append(delete_lines(rng.start.line, _end_with_blank(info, rng.start.line, rng.end.line)))
    return edits


def _end_with_blank(info: SourceInfo, row: int, end_row: int) -> int:
    """The last row to delete: a statement between two blank lines takes the one after it along,
    so that `a\n\nbreakpoint()\n\nb` becomes `a\n\nb`, not `a\n\n\nb`."""
    def blank(r: int) -> bool:
        return 1 <= r <= len(info.lines) and not info.line(r).strip()

    return end_row + 1 if blank(row - 1) and blank(end_row + 1) else end_row


def _replace_line_with(info: SourceInfo, positions, stmt: cst.CSTNode, content: str) -> Edit:
    """Replace a statement (and its trailing comment) by `content`, keeping the line's indentation."""
    rng = positions[stmt]
    end_line = info.line(rng.end.line)
    return Edit(content, rng.start.line, rng.start.column + 1, rng.end.line, len(end_line) + 1)


def replace_small_statement_with_pass(positions, small: cst.CSTNode) -> Edit:
    return replace_node(positions, small, "pass")


def string_continuation_rows(positions, root: cst.CSTNode) -> set[int]:
    """Rows that start inside a multi-line string token under root: re-indenting them would change
    the string's value."""
    rows: set[int] = set()
    is_string = fastcst.type_test((cst.SimpleString, cst.FormattedString))
    table = _CODE_CHILDREN  # strings are code: whitespace and punctuation hold none
    stack = [root]
    while stack:
        node = stack.pop()
        if is_string(node.__class__):
            rng = positions[node]
            if rng.end.line > rng.start.line:
                rows.update(range(rng.start.line + 1, rng.end.line + 1))
            continue
        kids = table.get(node.__class__)
        if kids is None:
            kids = fastcst.kids_of(table, fastcst.TRIVIA, node)
        stack += kids(node)  # the nodes of `.children`, without libcst rebuilding `node`
    return rows


_CODE_CHILDREN = fastcst.children_without(fastcst.TRIVIA)


def indent_rows(info: SourceInfo, rows: Iterable[int], unit: str, skip: set[int]) -> list[Edit]:
    """Insert `unit` at the start of each row, except blank rows and rows in `skip`."""
    edits = []
    for row in rows:
        if row in skip or not info.line(row).strip():
            continue
        edits.append(insert_at(row, 0, unit))
    return edits

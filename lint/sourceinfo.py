"""The source behind a parsed module, for whoever needs more than the walk gives: parents of
nodes, exact line texts. Fix generators share one per file (`source_info`), and so do the rules
that look around a node (DYN106)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from . import fastcst

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
            self._map(self.module, trivia=True)
            self._complete = True
            found = self._parents.get(id(node))
        return found

    def _map(self, root: cst.CSTNode, descend: Optional[tuple] = None, trivia: bool = False) -> None:
        """Parents of the nodes under root; with `descend`, only of those under nodes of these
        types. Whitespace and punctuation (`fastcst.TRIVIA`, which hold nothing else) only with
        `trivia`, the whole-module map a node not mapped yet asks for: fixes ask about code."""
        parents = self._parents
        table = _ALL_CHILDREN if trivia else _CODE_CHILDREN
        skip = frozenset() if trivia else fastcst.TRIVIA
        enters = fastcst.type_test(descend) if descend is not None else None
        stack: list[cst.CSTNode] = [root]
        while stack:
            node = stack.pop()
            # the same child nodes as `.children`, without libcst rebuilding `node`
            kids = table.get(node.__class__)
            if kids is None:
                kids = fastcst.kids_of(table, skip, node)
            for child in kids(node):
                parents[id(child)] = node
                if enters is None or enters(child.__class__):
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


_CODE_CHILDREN = fastcst.children_without(fastcst.TRIVIA)
_ALL_CHILDREN = fastcst.children_without(frozenset())

"""Parsing a file's text: libcst without node validation, the last few trees kept for the
analyses of the same text that follow, `# noqa` comments, and the summaries of files that cannot
be parsed (DYN001) or analysed (DYN002)."""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Optional

import libcst as cst

from dynalint.findings import NOQA, Finding

# The summary data (plain, JSON-able) lives apart, so that cached runs need no libcst.
from .summary import FileSummary


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
        module = parse_in_pieces(source) if len(source) >= PIECES_FROM else None
        return module if module is not None else cst.parse_module(source)
    finally:
        if had_own:
            base.__post_init__ = saved
        else:  # pragma: no cover - libcst always defines it
            del base.__post_init__


def _no_validation(self) -> None:
    pass


# Files from this size on are parsed in pieces of about PIECE_LINES lines, cut between top-level
# statements, and the pieces joined into one tree: libcst's parse of a whole file grows faster
# than the file (200,000 lines: 73 CPU s whole, 30 s in 2,000-line pieces).
PIECES_FROM = 200_000  # characters
PIECE_LINES = 2_000


def parse_in_pieces(source: str, piece_lines: int = PIECE_LINES) -> Optional[cst.Module]:
    """The tree `cst.parse_module(source)` gives (`deep_equals`, same code), built from the
    parses of pieces of the text cut between top-level statements; None when in any doubt (then
    the caller parses the whole text): Python's parser refuses the file, a piece fails to parse,
    the text holds a form feed or a `\r` outside `\r\n`, the pieces detect different indents or
    newlines, or there is nothing to cut.

    Where a cut goes: before the first line of a statement (its first decorator), never between
    two statements on one line, and only where every line since the end of the statement before
    is blank or a comment. Those lines stay at the end of the piece before, so libcst's parse of
    that piece gives the indented ones to the blocks they close (`IndentedBlock.footer`, as the
    whole parse does) and the rest to the piece's `Module.footer`: in the joined tree, those are
    the leading lines of the statement after the cut (which the piece after it parses with none,
    and no header)."""
    if "\f" in source or ("\r" in source and source.count("\r") != source.count("\r\n")):
        return None
    spans = statement_spans(source)
    if spans is None or len(spans) < 2:
        return None
    lines = source.split("\n")
    cuts = [0]  # 0-based line where each piece starts
    tails = []  # 0-based first line of the statement that ends each piece but the last
    prev_first, prev_end = spans[0]
    for first, last in spans[1:]:
        if first <= prev_end:  # `a; b`: one statement for libcst
            prev_end = max(prev_end, last)
            continue
        if first - 1 - cuts[-1] >= piece_lines and _can_cut(lines, prev_end, first - 1):
            cuts.append(first - 1)
            tails.append(prev_first - 1)
        prev_first, prev_end = first, last
    if len(cuts) < 2:
        return None
    line_offsets = [0, *accumulate(len(line) + 1 for line in lines)]
    del lines
    bounds = [line_offsets[row] for row in cuts] + [len(source)]
    pieces = []
    for index, (start, end) in enumerate(zip(bounds, bounds[1:])):
        text = source[start:end]
        try:
            piece = cst.parse_module(text)
        except cst.ParserSyntaxError:
            return None
        # libcst's parse of a text can lose a blank line at its very end (after a dedent, before
        # a line indented less than the block): the end of each piece must regenerate exactly.
        if index < len(tails) and not _tail_round_trips(piece, text[line_offsets[tails[index]] - start :]):
            return None
        pieces.append(piece)
    head = pieces[0]
    for piece in pieces[1:]:
        if (
            piece.header
            or piece.body[0].leading_lines
            or piece.default_indent != head.default_indent
            or piece.default_newline != head.default_newline
            or piece.encoding != head.encoding
        ):
            return None
    body = list(head.body)
    for before, piece in zip(pieces, pieces[1:]):
        body.append(piece.body[0].with_changes(leading_lines=before.footer))
        body.extend(piece.body[1:])
    tail = pieces[-1]
    return cst.Module(
        body=tuple(body),
        header=head.header,
        footer=tail.footer,
        encoding=head.encoding,
        default_indent=head.default_indent,
        default_newline=head.default_newline,
        has_trailing_newline=tail.has_trailing_newline,
    )


def _tail_round_trips(piece: cst.Module, tail: str) -> bool:
    """Whether the piece's last statement (without its leading lines) and its footer regenerate
    `tail`, the piece's text from that statement's first line."""
    if not piece.body:
        return False
    last = piece.body[-1].with_changes(leading_lines=())
    code = piece.code_for_node(last) + "".join(piece.code_for_node(line) for line in piece.footer)
    return code == tail


def _can_cut(lines: list[str], gap_start: int, first: int) -> bool:
    """Whether a piece may start at 0-based line `first`: it starts a statement at column 0, and
    the lines from 0-based `gap_start` up to it are blank or comments."""
    head = lines[first][:1]
    if not head or head in " \t#\r" or lines[gap_start - 1].rstrip("\r").endswith("\\"):
        return False
    for i in range(gap_start, first):
        text = lines[i].lstrip(" \t")
        if text and text[0] != "#" and text != "\r":
            return False
    return True


# The top-level statement spans of the last text asked about: the parse in pieces needs them and
# so do the positions of a big file (`fastcst._statement_windows`).
_last_spans: list = [None, None]


def statement_spans(source: str) -> Optional[list[tuple[int, int]]]:
    """(first line, last line) of each top-level statement of source, from Python's own parser
    (the first line is that of its first decorator); None when Python refuses the text."""
    if _last_spans[0] is source:
        return _last_spans[1]
    import ast

    try:
        tree = compile(source, "<dynalint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        spans = None
    else:
        spans = []
        for stmt in tree.body:
            decorators = getattr(stmt, "decorator_list", None)
            first = min([stmt.lineno] + [d.lineno for d in decorators]) if decorators else stmt.lineno
            spans.append((first, stmt.end_lineno or stmt.lineno))
        del tree
    _last_spans[:] = [source, spans]
    return spans


def parse_cached(source: str) -> cst.Module:
    for text, module, _scans in _PARSED:
        if text == source:
            return module
    module = parse_unvalidated(source)
    _PARSED.append((source, module, {}))
    del _PARSED[:-2]
    return module


def module_scans(module: cst.Module) -> dict:
    """The module-level scans kept with a tree `_PARSED` holds (a throwaway dict otherwise)."""
    for _text, kept, scans in _PARSED:
        if kept is module:
            return scans
    return {}


def python_syntax_error(source: str) -> Optional[str]:
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


def syntax_error_summary(source: str, filename: str, module_name: str, exc: Exception) -> FileSummary:
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


def file_finding_summary(filename: str, module_name: str, reason: str, code: str = "DYN001") -> FileSummary:
    summary = FileSummary(filename=filename, module=module_name)
    summary.findings.append(Finding(code, reason, filename, 1, 1, 1, 1))
    return summary

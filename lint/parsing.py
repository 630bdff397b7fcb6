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
# than the file (200,000 lines: 73 CPU s whole, 30 s in 2,000-line pieces), and its memory far
# faster (5.2 GB whole, bounded by a piece in pieces). Python's parser, which checks each cut, reads
# the pieces too: its tree of the whole 200,000-line file alone took 1.1 GB and 10 s.
PIECES_FROM = 200_000  # characters
PIECE_LINES = 2_000
# A cut that Python's parser refuses (in a string, in brackets, after a decorator) moves on to the
# next line that may start a statement, ten times, then 2, 4, 8... lines further (past a long
# string); after this many moves for one piece (a syntax error), the whole file is parsed as one.
_MAX_MOVES = 30
# Lines at column 0 that continue the statement before them.
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b|[)\]}]")


def parse_in_pieces(source: str, piece_lines: int = PIECE_LINES) -> Optional[cst.Module]:
    """The tree `cst.parse_module(source)` gives (`deep_equals`, same code), built from the
    parses of pieces of the text cut between top-level statements; None when in any doubt (then
    the caller parses the whole text): a piece that Python's parser or libcst refuses however
    its end is moved, a form feed or a `\r` outside `\r\n` in the text, pieces that detect
    different indents or newlines, a piece whose end does not regenerate, nothing to cut.

    Where a cut goes: at the first line after `piece_lines` more that starts at column 0 with
    code (not `else`/`elif`/`except`/`finally` or a closing bracket), if Python's parser accepts
    the piece it ends (so the cut is outside strings, brackets and continuation lines, and not
    after a decorator; Python reads the text from the start, so a piece it accepts ends where a
    statement of the whole file ends) and every line since the piece's last statement is blank
    or a comment; else at the next such line (ten times; then 2, 4, 8... lines further). Those lines stay at the end of the piece, so libcst's
    parse of it gives the indented ones to the blocks they close (`IndentedBlock.footer`, as the
    whole parse does) and the rest to the piece's `Module.footer`: in the joined tree, those are
    the leading lines of the statement after the cut (which the next piece parses with none,
    and no header). The statements' line spans are kept for `statement_spans`."""
    if "\f" in source or ("\r" in source and source.count("\r") != source.count("\r\n")):
        return None
    lines = source.split("\n")
    count = len(lines)
    offsets = [0, *accumulate(len(line) + 1 for line in lines)]
    spans: list[tuple[int, int]] = []
    pieces: list[cst.Module] = []
    start = 0
    while start < count:
        end = _next_cut(lines, start + piece_lines)
        for move in range(_MAX_MOVES + 1):
            text = source[offsets[start] : offsets[end]] if end < count else source[offsets[start] :]
            found = _piece_spans(text, start)
            if found and (end == count or _can_cut(lines, found[-1][1], end)):
                break
            if end == count:
                return None
            end = _next_cut(lines, end + (1 << max(0, move - 10)))  # past a long string too
        else:
            return None
        try:
            piece = cst.parse_module(text)
        except cst.ParserSyntaxError:
            return None
        # libcst's parse of a text can lose a blank line at its very end (after a dedent, before
        # a line indented less than the block): the end of each piece must regenerate exactly.
        if end < count and not _tail_round_trips(piece, source[offsets[_last_statement_line(found)] : offsets[end]]):
            return None
        if pieces and (piece.header or piece.body[0].leading_lines):
            return None
        spans.extend(found)
        pieces.append(piece)
        start = end
    if len(pieces) < 2:
        return None
    head = pieces[0]
    for piece in pieces[1:]:
        if (
            piece.default_indent != head.default_indent
            or piece.default_newline != head.default_newline
            or piece.encoding != head.encoding
        ):
            return None
    body = list(head.body)
    for before, piece in zip(pieces, pieces[1:]):
        body.append(piece.body[0].with_changes(leading_lines=before.footer))
        body.extend(piece.body[1:])
    tail = pieces[-1]
    _last_spans[:] = [source, spans]
    return cst.Module(
        body=tuple(body),
        header=head.header,
        footer=tail.footer,
        encoding=head.encoding,
        default_indent=head.default_indent,
        default_newline=head.default_newline,
        has_trailing_newline=tail.has_trailing_newline,
    )


def _next_cut(lines: list[str], row: int) -> int:
    """The first 0-based line from `row` on that may start a top-level statement (len(lines) if
    none)."""
    for index in range(row, len(lines)):
        line = lines[index]
        if line[:1] not in ("", " ", "\t", "#", "\r") and not _CONTINUES.match(line):
            return index
    return len(lines)


def _piece_spans(text: str, first_row: int) -> Optional[list[tuple[int, int]]]:
    """`statement_spans` of a piece starting at 0-based line first_row, in the whole text's
    1-based lines; None when Python's parser refuses the piece or it holds no statement."""
    found = _spans(text)
    if not found:
        return None
    return [(first + first_row, last + first_row) for first, last in found]


def _last_statement_line(spans: list[tuple[int, int]]) -> int:
    """0-based first line of the last libcst statement (`a; b` on one line is one)."""
    index = len(spans) - 1
    while index and spans[index][0] <= spans[index - 1][1]:
        index -= 1
    return spans[index][0] - 1


def _tail_round_trips(piece: cst.Module, tail: str) -> bool:
    """Whether the piece's last statement (without its leading lines) and its footer regenerate
    `tail`, the piece's text from that statement's first line."""
    if not piece.body:
        return False
    last = piece.body[-1].with_changes(leading_lines=())
    code = piece.code_for_node(last) + "".join(piece.code_for_node(line) for line in piece.footer)
    return code == tail


def _can_cut(lines: list[str], last_row: int, cut: int) -> bool:
    """Whether a piece may start at 0-based line `cut` when the statement before it ends on
    1-based line `last_row`: the lines between are blank or comments, and that statement's
    last line does not end with a backslash."""
    if lines[last_row - 1].rstrip("\r").endswith("\\"):
        return False
    for i in range(last_row, cut):
        text = lines[i].lstrip(" \t")
        if text and text[0] != "#" and text != "\r":
            return False
    return True


# The top-level statement spans of the last text asked about: the positions of a big file need
# them (`fastcst._statement_windows`); the parse in pieces leaves them here.
_last_spans: list = [None, None]


def statement_spans(source: str) -> Optional[list[tuple[int, int]]]:
    """(first line, last line) of each top-level statement of source, from Python's own parser
    (the first line is that of its first decorator); None when Python refuses the text."""
    if _last_spans[0] is source:
        return _last_spans[1]
    spans = _spans(source)
    _last_spans[:] = [source, spans]
    return spans


def _spans(source: str) -> Optional[list[tuple[int, int]]]:
    import ast

    try:
        tree = compile(source, "<dynalint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans = []
    for stmt in tree.body:
        decorators = getattr(stmt, "decorator_list", None)
        first = min([stmt.lineno] + [d.lineno for d in decorators]) if decorators else stmt.lineno
        spans.append((first, stmt.end_lineno or stmt.lineno))
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

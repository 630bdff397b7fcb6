"""Parsing a file's text: libcst without node validation, the last few trees kept for the
analyses of the same text that follow, `# noqa` comments, and the summaries of files that cannot
be parsed (DYN001) or analysed (DYN002)."""

from __future__ import annotations

import re
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
        return cst.parse_module(source)
    finally:
        if had_own:
            base.__post_init__ = saved
        else:  # pragma: no cover - libcst always defines it
            del base.__post_init__


def _no_validation(self) -> None:
    pass


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

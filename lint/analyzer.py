"""Phase 1 of linting: one file, no knowledge of other files.

`analyze_source` parses a file with libcst and returns a `FileSummary`: what the file defines
(classes with their bases, functions, imports), the calls each function makes (edges, resolved
to dotted names where the file alone allows it), and the candidate findings in every function.
Which functions really run under torch.compile is decided later across all files
(`lint.regions`), so a summary depends only on the file's text and can be cached by content.

The work is split by concern: `lint.parsing` (parse cache, noqa), `lint.options`
(`AnalyzerOptions`), `lint.filefacts` (`FileAnalyzer`: what the file defines), `lint.walk`
(`FunctionContext`: the walk of one function, which runs the rules), `lint.inference` (value
kinds), `lint.callgraph` (call edges), `lint.annotations`. This module is the entry point and
keeps the names other modules import from it.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .filefacts import FileAnalyzer
from .nodes import operator_operands
from .options import AnalyzerOptions
from .parsing import (
    _PARSED,
    file_finding_summary,
    parse_cached,
    parse_noqa,
    parse_unvalidated,
    python_syntax_error,
    syntax_error_summary,
)
from .summary import FileSummary
from .walk import FunctionContext

__all__ = [
    "AnalyzerOptions",
    "FileAnalyzer",
    "FunctionContext",
    "_PARSED",
    "analyze_source",
    "operator_operands",
    "parse_noqa",
    "parse_unvalidated",
    "prepare",
]


def prepare(source: str, filename: str, module_name: str, is_package: bool) -> None:
    """Parse `source` and scan its module level as `analyze_source` would, keeping both for the
    analyses of the same text that follow (forked workers inherit them)."""
    from .deep import call_deep, rejects

    if rejects(source) is not None:
        return  # the analysis reports it
    try:
        call_deep(_prepare, source, filename, module_name, is_package)
    except (cst.ParserSyntaxError, RecursionError):
        return  # the analysis reports it


def _prepare(source: str, filename: str, module_name: str, is_package: bool) -> None:
    module = parse_cached(source)
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
    (`lint.deep`); what Python itself refuses as too deep is DYN001 before libcst sees it, and
    an `and`/`or` chain deeper than libcst's tree can be analysed is DYN002, also before."""
    from .deep import call_deep, rejects

    options = options or AnalyzerOptions()
    rejected = rejects(source)
    if rejected is not None:
        return file_finding_summary(filename, module_name, rejected[1], code=rejected[0])
    try:
        return call_deep(_analyze_parsed, source, filename, module_name, is_package, options)
    except RecursionError:
        # Deeper than even the large stack allows: Python's parser usually refuses such a file
        # too, and says why; else the file is reported, not analysed.
        reason = python_syntax_error(source)
        if reason is not None:
            return file_finding_summary(filename, module_name, reason)
        reason = "cannot analyse file: nested too deeply (RecursionError)"
        return file_finding_summary(filename, module_name, reason, code="DYN002")


def _analyze_parsed(source: str, filename: str, module_name: str, is_package: bool, options: AnalyzerOptions) -> FileSummary:
    try:
        module = parse_cached(source)
    except cst.ParserSyntaxError as exc:
        return syntax_error_summary(source, filename, module_name, exc)
    fa = FileAnalyzer(module, filename, module_name, is_package, options)
    fa.source = source
    summary = fa.run()
    summary.noqa = parse_noqa(source)
    return summary

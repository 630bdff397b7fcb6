"""DYN102: delete a debugger call (`breakpoint()`, `pdb.set_trace()`, ...) and the debugger import
it leaves unused. Unsafe: it removes behaviour the author asked for (stopping in a debugger).
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import SourceInfo, guarded, make_fix, source_info
from .imports import debugger_import_lines, debugger_import_names, name_uses, unused_debugger_imports
from .statements import delete_statements, replace_small_statement_with_pass

REGISTRY = "debugger"


def debugger_fix(ctx: RuleContext, call: cst.Call, code: str = "DYN102"):
    stmt = ctx.statement
    if not isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return None
    small = next((s for s in stmt.body if isinstance(s, cst.Expr) and s.value is call), None)
    if small is None:
        return None
    info = source_info(ctx.module, ctx.fn)
    info.registry.setdefault(REGISTRY, set()).add(id(small))
    return guarded(code, lambda positions, module: _delete(info, positions, stmt, small))


def _line_is_only_debugging(info: SourceInfo, stmt: cst.CSTNode) -> bool:
    """`import pdb; pdb.set_trace()`: every small statement is a debugger call or import."""
    calls = info.registry.get(REGISTRY, set())
    for small in stmt.body:
        if id(small) in calls:
            continue
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            fake = cst.SimpleStatementLine(body=[small])
            names = debugger_import_names(fake)
            if names and all(name_uses(info.module, n, skip=[stmt]) == 0 for n in names):
                continue
        return False
    return True


def _delete(info: SourceInfo, positions, stmt: cst.CSTNode, small: cst.CSTNode):
    message = "Remove the debugger call"
    if isinstance(stmt, cst.SimpleStatementSuite):
        # `if debug: breakpoint()`: the one-line body becomes `pass`.
        if len(stmt.body) != 1:
            return None
        return make_fix(UNSAFE, message, [replace_small_statement_with_pass(positions, small)])
    if len(stmt.body) > 1 and not _line_is_only_debugging(info, stmt):
        return None
    doomed = [stmt] + unused_debugger_imports(info, [stmt])
    edits = delete_statements(info, positions, doomed)
    if edits is None:
        return None
    return make_fix(UNSAFE, message, edits)


def remove_unused_debugger_imports(original: str, text: str) -> str:
    """After several debugger calls were deleted in one run, drop the debugger imports that were
    used in `original` and are unused in `text` (each single fix kept them while another call
    still used them)."""
    try:
        module = cst.parse_module(text)
        before = cst.parse_module(original)
    except cst.ParserSyntaxError:
        return text
    info = SourceInfo(module)
    doomed = []
    for stmt in unused_debugger_imports_in(info):
        names = debugger_import_names(stmt) or set()
        if any(name_uses(before, n) > 0 for n in names):
            doomed.append(stmt)
    if not doomed:
        return text
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    edits = delete_statements(info, positions, doomed)
    if not edits:
        return text
    from .apply import apply_text_edits

    return apply_text_edits(text, edits)


def unused_debugger_imports_in(info: SourceInfo) -> list[cst.SimpleStatementLine]:
    """Debugger-only import lines whose names are not used anywhere in the module."""
    return [
        stmt for stmt, names in debugger_import_lines(info) if all(name_uses(info.module, n) == 0 for n in names)
    ]

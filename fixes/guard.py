"""DYN101 / DYN103 / DYN104: guard print, logging and warnings with `if not torch.compiler.is_compiling():`.

In eager mode `is_compiling()` is False, so the statement runs exactly as before; while Dynamo
traces, the branch is dropped and the graph stays whole. Safe, except where the project supports
torch < 2.3 (`min-torch`, else the torch floor of its pyproject's `[project] dependencies`); no
fix on a path the file keeps for torch < 2.3. A file that imports no torch at module level may be
one that must work without torch (POT's NumPy users, transformers' import_utils): its guard asks
`sys.modules` instead, `if not (sys.modules.get("torch") and
sys.modules["torch"].compiler.is_compiling()):` (torch never imported: not compiling), and
imports nothing but `sys`. The rules declare "safe or unsafe".

Adjacent statements that need the guard go into one block: every finding of such a run gets the
same edits, so applying them together writes one `if`. A run that directly follows an existing
`if not torch.compiler.is_compiling():` block (no blank line between) joins that block instead.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from dynalint.findings import NOQA, SAFE, UNSAFE
from dynalint.lint.rule import RuleContext
from dynalint.lint.target import torch_floor

from .base import SourceInfo, guarded, insert_at, insert_line_before, make_fix, source_info
from .imports import bound_module_name, imports_torch, is_compiling_helper, torch_reference
from .statements import string_continuation_rows

IS_COMPILING_LAST_NAMES = frozenset({"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling"})
REGISTRY = "guard"


def guard_fix(ctx: RuleContext, call: cst.Call, code: str):
    """Fix generator for a print / logging / warnings call; None when the call is not a statement
    of its own in an indented block (`x = print(...)`, `if c: print(...)` on one line)."""
    stmt = ctx.statement
    if not _is_call_statement(stmt, call):
        return None
    info = source_info(ctx.module, ctx.fn)
    if not isinstance(info.parent(stmt), cst.IndentedBlock):
        return None
    info.registry.setdefault(REGISTRY, {}).setdefault(id(stmt), set()).add(code)
    return guarded(code, lambda positions, module: guard_statements(info, positions, stmt))


def _is_call_statement(stmt: Optional[cst.CSTNode], call: cst.Call) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and stmt.body[0].value is call
    )


def _needs_guard(info: SourceInfo, stmt: cst.CSTNode, positions, registry: str = REGISTRY) -> bool:
    codes = info.registry.get(registry, {}).get(id(stmt))
    if not codes:
        return False
    m = NOQA.search(info.line(positions[stmt].start.line))
    if m is None:
        return True
    suppressed = m.group("codes")
    if not suppressed:
        return False
    listed = {c.upper() for c in re.split(r"[,\s]+", suppressed) if c}
    return not codes <= listed


def _has_blank_leading_line(stmt: cst.SimpleStatementLine) -> bool:
    return any(line.comment is None for line in stmt.leading_lines)


def _run_around(info: SourceInfo, positions, stmt: cst.CSTNode, registry: str = REGISTRY) -> list[cst.CSTNode]:
    """The adjacent statements of stmt's block that also need the guard (a blank line ends a run)."""
    body = list(info.parent(stmt).body)
    i = next(k for k, s in enumerate(body) if s is stmt)
    start = i
    while start > 0 and not _has_blank_leading_line(body[start]) and _needs_guard(info, body[start - 1], positions, registry):
        start -= 1
    end = i
    while end + 1 < len(body) and not _has_blank_leading_line(body[end + 1]) and _needs_guard(info, body[end + 1], positions, registry):
        end += 1
    return body[start : end + 1]


def is_compiling_guard(node: cst.CSTNode) -> bool:
    """`if not <...>.is_compiling():` with no else: a block that Dynamo never traces."""
    if not isinstance(node, cst.If) or node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
        return False
    test = node.test
    if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
        return False
    call = test.expression
    if not isinstance(call, cst.Call) or call.args:
        return False
    func = call.func
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return last in IS_COMPILING_LAST_NAMES


def is_compiling_call(info: SourceInfo, positions, stmt: cst.CSTNode, indent: str) -> Optional[tuple[str, str, list, str]]:
    """(test, lines to write before the guard, edits elsewhere, applicability): the file's own is-compiling helper when it imports one
    (transformers' `is_torchdynamo_compiling()`, which also works on old torch), else
    `torch.compiler.is_compiling()`. A file that binds no `torch` at module level may be one
    that must import without torch (transformers' import_utils, which decides whether torch is
    there): `import torch` then goes inside the function, just above the guard, and the fix is
    unsafe (where torch is absent, the function would now fail). None: no fix, for a statement
    on a path the file keeps for torch without `torch.compiler.is_compiling` (< 2.3)."""
    helper = is_compiling_helper(info.module)
    if helper is not None:
        return f"{helper}()", "", [], SAFE
    if _reserved_for_old_torch(info, stmt):
        return None
    if imports_torch(info.module):  # `import torch` next to the file's own torch imports
        torch, import_edits = torch_reference(info, positions)
        # A project that still supports torch < 2.3 (its `min-torch`, or `torch>=1.13` in its
        # pyproject) would raise AttributeError there where the guarded line runs: unsafe.
        floor = torch_floor()
        return f"{torch}.compiler.is_compiling()", "", import_edits, UNSAFE if floor is not None and floor < (2, 3) else SAFE
    # Without torch at module level, ask `sys.modules`: torch not imported means not compiling,
    # and the file still imports and runs without torch (POT's NumPy-only users).
    floor = torch_floor()
    sys_name = bound_module_name(info.module, "sys")
    local = "" if sys_name is not None else f"{indent}import sys{info.newline}"
    sys_name = sys_name or "sys"
    test = f'({sys_name}.modules.get("torch") and {sys_name}.modules["torch"].compiler.is_compiling())'
    return test, local, [], UNSAFE if floor is not None and floor < (2, 3) else SAFE


# What a test names when it tells torch versions with `torch.compiler.is_compiling` (2.3 and
# later) from those without it: the function itself, `torch.compiler`, a version; and what a
# `try` body calls when its `except` is the fallback for torch without it.
_OLD_TORCH_TEST = re.compile(r"is_compiling|torch\.compiler|\b_dynamo\b|version|VERSION")
_OLD_TORCH_TRY = re.compile(r"is_compiling|torch\.compiler|\b_dynamo\b")


def _reserved_for_old_torch(info: SourceInfo, stmt: cst.CSTNode) -> bool:
    """Is stmt inside a branch chosen by a torch-version test (`if is_torch_version("<", "2.3"):`,
    `if hasattr(torch.compiler, "is_compiling"):`, either branch) or inside the `except` of a
    `try` that calls `torch.compiler.is_compiling` / `torch._dynamo`? Such a file keeps that path
    for torch versions where the guard's own call does not exist."""
    node = stmt
    while True:
        parent = info.parent(node)
        if parent is None or isinstance(parent, cst.Module):
            return False
        if isinstance(parent, cst.If) and node is not parent.test and _names(info, parent.test, _OLD_TORCH_TEST):
            return True
        if isinstance(parent, cst.ExceptHandler):
            owner = info.parent(parent)
            if isinstance(owner, cst.Try) and _names(info, owner.body, _OLD_TORCH_TRY):
                return True
        node = parent


def _names(info: SourceInfo, node: cst.CSTNode, pattern: re.Pattern) -> bool:
    return pattern.search(info.module.code_for_node(node)) is not None


def guard_statements(info: SourceInfo, positions, stmt: cst.CSTNode, registry: str = REGISTRY, unsafe_why: str = ""):
    """The guard of stmt and the statements around it registered under `registry`; `unsafe_why`
    makes the fix unsafe and says why in its message."""
    run = _run_around(info, positions, stmt, registry)
    first, last = run[0], run[-1]
    row, end_row = positions[first].start.line, positions[last].end.line
    indent = info.indentation(row)
    skip = set()
    for s in run:
        skip |= string_continuation_rows(positions, s)

    body = list(info.parent(stmt).body)
    k = next(i for i, s in enumerate(body) if s is first)
    previous = body[k - 1] if k > 0 else None
    unit = None
    edits = []
    if previous is not None and is_compiling_guard(previous) and not first.leading_lines:
        inner_row = positions[previous.body.body[0]].start.line
        inner = info.indentation(inner_row)
        if inner.startswith(indent) and len(inner) > len(indent):
            unit = inner[len(indent) :]
            message = "Move into the `is_compiling()` guard above"
    applicability = SAFE
    if unit is None:
        unit = info.indent_unit
        call = is_compiling_call(info, positions, stmt, indent)
        if call is None:
            return None
        test, local_import, import_edits, applicability = call
        edits += import_edits
        edits.append(insert_line_before(row, f"{local_import}{indent}if not {test}:{info.newline}"))
        message = f"Guard with `if not {test}:`"
        if local_import:
            message += " (importing torch inside the function: the file does not import it)"
    if unsafe_why:
        applicability, message = UNSAFE, f"{message} ({unsafe_why})"
    for r in range(row, end_row + 1):
        if r in skip or not info.line(r).strip():
            continue
        col = len(indent) if info.line(r).startswith(indent) else 0
        edits.append(insert_at(r, col, unit))
    return make_fix(applicability, message, edits)

"""DYN140: `t.requires_grad = True` right after `t = torch.zeros(...)`. Safe fix: create the tensor
with `requires_grad=` instead, which Dynamo traces.

    t = torch.zeros(n, device=d)              t = torch.zeros(n, device=d, requires_grad=True)
    t.requires_grad = True              ->

    t = torch.zeros(n, device=d)              t = torch.zeros(n, device=d, requires_grad=bool(cond))
    if cond:                            ->
        t.requires_grad = True

The same program: a factory's `requires_grad=True` makes the same leaf as setting the flag on the
fresh tensor before anything reads it (an integer dtype raises the same error either way). Only
when the statements are adjacent, the factory has no `requires_grad=` yet, and the condition and
the value have no side effects (they are evaluated before the factory runs instead of after).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import SAFE
from dynalint.lint.rule import RuleContext

from .base import delete_lines, guarded, insert_at, make_fix, source_info
from .purity import pure
from .statements import delete_statements

# torch factories that take `requires_grad=` (the `_like` ones too).
FACTORIES = frozenset(
    """
    zeros ones empty full rand randn randint arange linspace logspace eye tensor zeros_like ones_like
    empty_like full_like rand_like randn_like randint_like empty_strided
    """.split()
)


def requires_grad_fix(ctx: RuleContext, assign: cst.Assign, code: str = "DYN140"):
    if len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
        return None
    name = target.value.value
    info = source_info(ctx.module, ctx.fn)
    stmt = info.parent(assign)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    value = assign.value
    condition = None
    removed: cst.CSTNode = stmt
    block = info.parent(stmt)
    holder = info.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if isinstance(holder, cst.If) and holder.orelse is None and len(block.body) == 1:
        # `if cond: t.requires_grad = True`: the flag becomes `requires_grad=bool(cond)`.
        if not (isinstance(value, cst.Name) and value.value == "True"):
            return None
        condition, removed = holder.test, holder
    factory = _factory_before(info, ctx, removed, name)
    if factory is None:
        return None
    if not pure(value, ctx) or (condition is not None and not pure(condition, ctx)):
        return None
    return guarded(code, lambda positions, module: _fix(info, positions, factory, value, condition, removed))


def _factory_before(info, ctx: RuleContext, stmt: cst.CSTNode, name: str) -> Optional[cst.Call]:
    """The `torch.<factory>(...)` call of `name = ...` in the statement just before `stmt`."""
    block = info.parent(stmt)
    body = list(getattr(block, "body", ()))
    idx = next((i for i, s in enumerate(body) if s is stmt), None)
    if not idx:
        return None
    prev = body[idx - 1]
    if not (isinstance(prev, cst.SimpleStatementLine) and len(prev.body) == 1):
        return None
    small = prev.body[0]
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    if not (isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name):
        return None
    call = small.value
    if not isinstance(call, cst.Call) or not call.args:
        return None
    q = ctx.call_name(call)
    if q is None or not q.startswith("torch.") or q.rsplit(".", 1)[-1] not in FACTORIES or q.count(".") != 1:
        return None
    if any(a.star or (a.keyword is not None and a.keyword.value in ("requires_grad", "out")) for a in call.args):
        return None
    return call


def _flag_text(info, positions, value: cst.BaseExpression, condition: Optional[cst.BaseExpression]) -> str:
    if condition is None:
        return info.text(positions, value)
    text = info.text(positions, condition)
    if isinstance(condition, cst.Comparison) or (
        isinstance(condition, cst.UnaryOperation) and isinstance(condition.operator, cst.Not)
    ):
        return text
    return f"bool({text})"


def _fix(info, positions, factory: cst.Call, value, condition, removed: cst.CSTNode):
    last = factory.args[-1]
    end = positions[last.value].end
    flag = _flag_text(info, positions, value, condition)
    if isinstance(last.comma, cst.Comma) and positions[factory].end.line > end.line and not info.line(end.line)[end.column:].strip(" ,"):
        # One argument per line, trailing comma: the flag gets its own line, like its neighbours.
        row = positions[last].start.line
        edits = [insert_at(end.line + 1, 0, f"{info.indentation(row)}requires_grad={flag},{info.newline}")]
    else:
        edits = [insert_at(end.line, end.column, f", requires_grad={flag}")]
    if isinstance(removed, cst.SimpleStatementLine):
        deleted = delete_statements(info, positions, [removed])
        if deleted is None:
            return None
        edits += deleted
    else:
        rng = positions[removed]
        if info.line(rng.start.line)[: rng.start.column].strip():
            return None
        edits.append(delete_lines(rng.start.line, rng.end.line))
    return make_fix(SAFE, "Create the tensor with `requires_grad=` (traced) instead of setting the flag", edits)

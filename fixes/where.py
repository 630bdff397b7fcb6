"""DYN120: a branch on a tensor's value with simple tensor branches becomes `torch.where`. Unsafe:
both branches are now evaluated (a `log` of a negative value in the untaken branch is computed,
gradients flow through `where`), and a one-element condition broadcasts against the branches.

Shapes handled, when both branches are side-effect-free tensor expressions (or a number):
    if c: v = A            ->  v = torch.where(c, A, B)
    else: v = B
    if c: v = A            ->  v = torch.where(c, A, v)      (v already a tensor)
    if c: return A         ->  return torch.where(c, A, B)
    return B   (or else: return B)
    A if c else B          ->  torch.where(c, A, B)
`if not c` swaps the branches. A condition that is not a comparison (`if t.sum():`) becomes
`t.sum().bool()`, which is what Python's truth test of a one-element tensor computes.
Branches with other work get no fix: that is `torch.cond`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE, Edit

from .base import SourceInfo, atom_text, comments_within, guarded, make_fix, source_info
from .imports import torch_reference
from .purity import is_number, pure
from .variables import may_be_none, variable_names


@dataclass
class WherePlan:
    condition: cst.BaseExpression
    condition_is_bool: bool
    when_true: "cst.BaseExpression | str"  # a str is a variable name (the no-else form)
    when_false: "cst.BaseExpression | str"
    replaced: list  # nodes whose span (first start .. last end) is replaced
    prefix: str  # "v = " / "return " / "" (expression form)
    keep: list  # subtrees copied verbatim (their comments travel with them)


def where_fix(ctx, reported: cst.BaseExpression, code: str = "DYN120"):
    if ctx.probe_only or _mentions_numpy(reported, ctx):
        return None  # torch.where needs a torch tensor condition, not a NumPy value
    info = source_info(ctx.module, ctx.fn)
    plan = _plan(info, ctx, reported)
    if plan is None:
        return None
    return guarded(code, lambda positions, module: _rewrite(info, positions, plan))


def _mentions_numpy(node: cst.BaseExpression, ctx) -> bool:
    if isinstance(node, cst.Comparison):
        return any(_mentions_numpy(n, ctx) for n in [node.left] + [c.comparator for c in node.comparisons])
    if isinstance(node, cst.BinaryOperation):
        return _mentions_numpy(node.left, ctx) or _mentions_numpy(node.right, ctx)
    if isinstance(node, cst.UnaryOperation):
        return _mentions_numpy(node.expression, ctx)
    return ctx.is_numpy(node)


def _plan(info: SourceInfo, ctx, reported: cst.BaseExpression) -> Optional[WherePlan]:
    negated = False
    test: cst.CSTNode = reported
    owner = info.parent(reported)
    if isinstance(owner, cst.UnaryOperation) and isinstance(owner.operator, cst.Not) and owner.expression is reported:
        negated, test, owner = True, owner, info.parent(owner)
    if isinstance(owner, cst.IfExp) and owner.test is test:
        branches = (owner.body, owner.orelse)
        replaced, prefix = [owner], ""
    elif isinstance(owner, cst.If) and owner.test is test:
        found = _if_branches(info, ctx, owner)
        if found is None:
            return None
        branches, replaced, prefix = found
    else:
        return None
    a, b = branches
    nodes = [x for x in (a, b) if not isinstance(x, str)]
    if not all(_simple_branch(x, ctx) for x in nodes) or not any(ctx.is_tensor(x) for x in nodes):
        return None
    # Both branches are now evaluated: a variable that may be None (`if mask is None: ...`,
    # an Optional parameter) would raise in the branch that eager code never ran.
    names = {n for n in (a, b) if isinstance(n, str)}
    for x in nodes:
        names |= variable_names(x)
    if any(may_be_none(ctx.fn, n) for n in names):
        return None
    if negated:
        a, b = b, a
    return WherePlan(reported, ctx.kind(reported) == "B", a, b, replaced, prefix, [reported, *nodes])


def _simple_branch(node: cst.BaseExpression, ctx) -> bool:
    return (ctx.is_tensor(node) or is_number(node)) and pure(node, ctx)


def _only_small(block: cst.BaseSuite) -> Optional[cst.BaseSmallStatement]:
    if isinstance(block, cst.SimpleStatementSuite):
        return block.body[0] if len(block.body) == 1 else None
    if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
        line = block.body[0]
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line.body[0]
    return None


def _assigned_name(small) -> Optional[str]:
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


def _if_branches(info: SourceInfo, ctx, node: cst.If):
    """((A, B), replaced nodes, prefix) for the statement shapes this fix rewrites."""
    parent = info.parent(node)
    if isinstance(parent, cst.If) and parent.orelse is node:
        return None  # an `elif`: rewriting it would need restructuring the chain
    if not isinstance(parent, (cst.IndentedBlock, cst.Module)):
        return None
    body = _only_small(node.body)
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        return None
    other = _only_small(orelse.body) if isinstance(orelse, cst.Else) else None
    if orelse is not None and other is None:
        return None
    name = _assigned_name(body)
    if name is not None:
        if other is None:
            # `if c: v = A` keeps v's old value otherwise; v must already hold a tensor.
            if ctx.kind(cst.Name(name)) not in ("T", "B", "P"):
                return None
            return (body.value, name), [node], f"{name} = "
        if _assigned_name(other) != name:
            return None
        return (body.value, other.value), [node], f"{name} = "
    if isinstance(body, cst.Return) and body.value is not None:
        if other is not None:
            if isinstance(other, cst.Return) and other.value is not None:
                return (body.value, other.value), [node], "return "
            return None
        siblings = list(parent.body)
        i = next(k for k, s in enumerate(siblings) if s is node)
        if i + 1 < len(siblings):
            nxt = siblings[i + 1]
            small = nxt.body[0] if isinstance(nxt, cst.SimpleStatementLine) and len(nxt.body) == 1 else None
            if isinstance(small, cst.Return) and small.value is not None:
                return (body.value, small.value), [node, nxt], "return "
    return None


def _rewrite(info: SourceInfo, positions, plan: WherePlan):
    torch, import_edits = torch_reference(info, positions)
    cond = info.text(positions, plan.condition)
    if not plan.condition_is_bool:
        cond = f"{atom_text(info, positions, plan.condition)}.bool()"
    a = _argument(info, positions, plan.when_true)
    b = _argument(info, positions, plan.when_false)
    call = f"{torch}.where({cond}, {a}, {b})"
    first, last = plan.replaced[0], plan.replaced[-1]
    start, end = positions[first].start, positions[last].end
    comments = comments_within(positions, first, start, end, skip=plan.keep)
    if len(plan.replaced) > 1:
        comments += comments_within(positions, last, start, end, skip=plan.keep)
    if plan.prefix:
        indent = info.indentation(start.line)
        lead = "".join(f"{c}{info.newline}{indent}" for c in comments)
        content = f"{lead}{plan.prefix}{call}"
    else:
        if comments:
            return None  # a comment inside an expression has nowhere to go
        content = call
    edit = Edit(content, start.line, start.column + 1, end.line, end.column + 1)
    return make_fix(UNSAFE, f"Replace the branch with `{torch}.where`", import_edits + [edit])


def _argument(info: SourceInfo, positions, node) -> str:
    return node if isinstance(node, str) else info.text(positions, node)

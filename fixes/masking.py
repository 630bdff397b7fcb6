"""DYN130: a boolean-mask selection that is only summed becomes masking arithmetic.

    x[x > 0].sum()                    ->  torch.where(x > 0, x, 0).sum()
    torch.masked_select(x, x > 0).sum()  ->  torch.where(x > 0, x, 0).sum()

Provably the same value: the mask is an elementwise comparison of the very expression being
selected with a Python number, so mask and values have the same shape; the selected elements are
summed either way and the rest contribute exact zeros (NaN compares False, so it is dropped in
both). Unsafe all the same: the float summation order differs, so the last bits may too.

Everything else gets no fix: `x[mask]` where the mask comes from elsewhere may index leading
dimensions only (broadcasting would differ), `.mean()` divides by the selected count, and the
indices from one-argument `torch.where` / `nonzero` feed indexing whose result length is the
data-dependent count itself, which no static-shape arithmetic reproduces.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE

from .base import SourceInfo, guarded, make_fix, replace_node, source_info
from .imports import torch_reference
from .purity import is_number, pure

ELEMENTWISE = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def mask_fix(ctx, node: cst.CSTNode, code: str = "DYN130"):
    if ctx.probe_only:
        return None
    info = source_info(ctx.module)
    picked = _selection(ctx, node)
    if picked is None or not _only_summed(info, node):
        return None
    values, mask = picked
    if not _elementwise_mask_of(ctx, mask, values) or not pure(values, ctx):
        return None
    return guarded(code, lambda positions, module: _rewrite(info, positions, node, values, mask))


def _selection(ctx, node: cst.CSTNode) -> Optional[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(values, mask) of `values[mask]` or `torch.masked_select(values, mask)`."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        el = node.slice[0].slice
        if isinstance(el, cst.Index) and el.star is None:
            return node.value, el.value
        return None
    if isinstance(node, cst.Call) and ctx.call_name(node) == "torch.masked_select" and len(node.args) == 2:
        if all(a.keyword is None and not a.star for a in node.args):
            return node.args[0].value, node.args[1].value
    return None


def _only_summed(info: SourceInfo, node: cst.CSTNode) -> bool:
    """node is the receiver of a full `.sum()` (no dim, no dtype)."""
    attr = info.parent(node)
    if not (isinstance(attr, cst.Attribute) and attr.value is node and attr.attr.value == "sum"):
        return False
    call = info.parent(attr)
    return isinstance(call, cst.Call) and call.func is attr and not call.args


def _same_code(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return a.deep_equals(b)


def _elementwise_mask_of(ctx, mask: cst.BaseExpression, values: cst.BaseExpression) -> bool:
    """`values <op> number` or `number <op> values`: same shape as values, by construction."""
    if not (isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1):
        return False
    comp = mask.comparisons[0]
    if not isinstance(comp.operator, ELEMENTWISE):
        return False
    left, right = mask.left, comp.comparator
    for this, other in ((left, right), (right, left)):
        if _same_code(this, values) and (is_number(other) or ctx.kind(other) == "N"):
            return ctx.is_tensor(values)
    return False


def _rewrite(info: SourceInfo, positions, node, values, mask):
    torch, import_edits = torch_reference(info, positions)
    text = f"{torch}.where({info.text(positions, mask)}, {info.text(positions, values)}, 0)"
    return make_fix(UNSAFE, f"Sum with `{torch}.where(mask, x, 0)` instead of selecting", import_edits + [replace_node(positions, node, text)])

"""DYN130: a boolean-mask selection that is only summed becomes masking arithmetic.

    x[x > 0].sum()                           ->  torch.where(x > 0, x, 0).sum()
    torch.masked_select(x, x > 0).sum()      ->  torch.where(x > 0, x, 0).sum()
    x[torch.where(x > 0)].sum()              ->  torch.where(x > 0, x, 0).sum()
    x[(x > 0).nonzero(as_tuple=True)].sum()  ->  torch.where(x > 0, x, 0).sum()

The indices of one-argument `torch.where(m)` / `nonzero(m, as_tuple=True)` select exactly the
elements `x[m]` selects, in the same order, so they are the same case.

Provably the same value: the mask is an elementwise comparison of the very expression being
selected with a Python number, so mask and values have the same shape; the selected elements are
summed either way and the rest contribute exact zeros (NaN compares False, so it is dropped in
both). Unsafe all the same: the float summation order differs, so the last bits may too.

A full `.mean()` of such a selection becomes the masked sum over the mask's count,
`torch.where(x > 0, x, 0).sum() / (x > 0).sum()`; an empty selection gives nan either way (0 / 0).
Unsafe besides the summation order: an integer `x` makes `x[m].mean()` raise, the rewrite returns
a float; in float16 the sum can overflow where the mean would not. `.max()` / `.min()` get no fix: of an empty selection they raise, a filled reduction
would return the fill value.

Everything else gets no fix: `x[mask]` where the mask comes from elsewhere may index leading
dimensions only (broadcasting would differ),
`x[m.nonzero()]` (no `as_tuple`) indexes rows, and indices used any other way (MoE routing,
`index_add`, gathers) have a length that is the data-dependent count itself, which no
static-shape arithmetic reproduces.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.kinds import Kind
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import target_names, variable_names

from .base import SourceInfo, atom_text, guarded, make_fix, replace_node, source_info
from .imports import torch_reference
from .purity import is_number, pure
from .where import may_blow_up, occurs_in

ELEMENTWISE = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def mask_fix(ctx: RuleContext, node: cst.CSTNode, code: str = "DYN130"):
    info = source_info(ctx.module, ctx.fn)
    node = _indexed_by(info, ctx, node) or node
    picked = _selection(ctx, node)
    reduction = _reduction(info, node)
    if picked is None or reduction is None:
        return None
    values, mask = picked
    if not _elementwise_mask_of(ctx, mask, values) or not pure(values, ctx):
        return None
    if reduction == "sum":
        return guarded(code, lambda positions, module: _rewrite(info, positions, node, values, mask))
    return guarded(code, lambda positions, module: _rewrite_mean(info, positions, node, values, mask))


def _selection(ctx: RuleContext, node: cst.CSTNode) -> Optional[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(values, mask) of `values[mask]` or `torch.masked_select(values, mask)`."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        el = node.slice[0].slice
        if isinstance(el, cst.Index) and el.star is None:
            return node.value, _index_mask(ctx, el.value) or el.value
        return None
    if isinstance(node, cst.Call) and ctx.call_name(node) == "torch.masked_select" and len(node.args) == 2:
        if all(a.keyword is None and not a.star for a in node.args):
            return node.args[0].value, node.args[1].value
    return None


def _index_mask(ctx: RuleContext, call: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """The mask of `torch.where(m)`, `torch.nonzero(m, as_tuple=True)` or `m.nonzero(as_tuple=True)`:
    a tuple of index tensors that selects exactly what `x[m]` selects."""
    if not isinstance(call, cst.Call) or any(a.star for a in call.args):
        return None
    positional = [a.value for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    as_tuple = keywords.get("as_tuple")
    tuple_form = isinstance(as_tuple, cst.Name) and as_tuple.value == "True"
    name = ctx.call_name(call)
    if name == "torch.where" and len(positional) == 1 and not keywords:
        return positional[0]
    if name == "torch.nonzero" and len(positional) == 1 and tuple_form and len(keywords) == 1:
        return positional[0]
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "nonzero" and not positional and tuple_form and len(keywords) == 1:
        return func.value if ctx.is_tensor(func.value) else None
    return None


def _indexed_by(info: SourceInfo, ctx: RuleContext, call: cst.CSTNode) -> Optional[cst.Subscript]:
    """`x[torch.where(m)]` reported on the inner call: the subscript it is the only index of,
    rewritten as if it were `x[m]` (the same elements in the same order)."""
    mask = _index_mask(ctx, call)
    index = info.parent(call)
    element = info.parent(index) if isinstance(index, cst.Index) and index.star is None else None
    subscript = info.parent(element) if isinstance(element, cst.SubscriptElement) else None
    if mask is None or not isinstance(subscript, cst.Subscript) or len(subscript.slice) != 1:
        return None
    return subscript if subscript.slice[0] is element else None


def _reduction(info: SourceInfo, node: cst.CSTNode) -> Optional[str]:
    """"sum" / "mean" when node is the receiver of a full `.sum()` / `.mean()` (no dim, no dtype)."""
    attr = info.parent(node)
    if not (isinstance(attr, cst.Attribute) and attr.value is node and attr.attr.value in ("sum", "mean")):
        return None
    call = info.parent(attr)
    if isinstance(call, cst.Call) and call.func is attr and not call.args:
        return attr.attr.value
    return None


def _same_code(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return a.deep_equals(b)


def _elementwise_mask_of(ctx: RuleContext, mask: cst.BaseExpression, values: cst.BaseExpression) -> bool:
    """`values <op> number` or `number <op> values`: same shape as values, by construction."""
    if not (isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1):
        return False
    comp = mask.comparisons[0]
    if not isinstance(comp.operator, ELEMENTWISE):
        return False
    left, right = mask.left, comp.comparator
    for this, other in ((left, right), (right, left)):
        if _same_code(this, values) and (is_number(other) or ctx.kind(other) == Kind.NOT_TENSOR):
            return ctx.is_tensor(values)
    return False


def _rewrite(info: SourceInfo, positions, node, values, mask):
    torch, import_edits = torch_reference(info, positions)
    text = f"{torch}.where({info.text(positions, mask)}, {info.text(positions, values)}, 0)"
    return make_fix(UNSAFE, f"Sum with `{torch}.where(mask, x, 0)` instead of selecting", import_edits + [replace_node(positions, node, text)])


def _rewrite_mean(info: SourceInfo, positions, node, values, mask):
    """`x[m].mean()` -> `torch.where(m, x, 0).sum() / (m).sum()`: the sum of the selected values
    over their count; an empty selection gives 0 / 0 = nan, as the mean of nothing does."""
    torch, import_edits = torch_reference(info, positions)
    call = info.parent(info.parent(node))
    m = info.text(positions, mask)
    text = f"{torch}.where({m}, {info.text(positions, values)}, 0).sum() / ({m}).sum()"
    if not isinstance(info.parent(call), (cst.Assign, cst.Return, cst.Arg, cst.AnnAssign)):
        text = f"({text})"
    return make_fix(UNSAFE, f"Average with `{torch}.where(mask, x, 0)` over the mask's count instead of selecting", import_edits + [replace_node(positions, call, text)])


# `x[mask] op= v` -> `x.copy_(torch.where(mask, x op v, x))`
_AUGMENTED = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/"}


def mask_update_fix(ctx: RuleContext, node: cst.Subscript, code: str = "DYN130"):
    """`x[mask] += v` reads `x[mask]` (a data-dependent shape) to write it back: the same update,
    in place, is `x.copy_(torch.where(mask, x + v, x))`, with the mask given trailing unit
    dimensions when it indexes only x's leading ones (`mask.reshape(mask.shape + (1,) * ...)`).

    Offered when x and v are side-effect free (x is evaluated three times), the operator is one of
    `+= -= *= /=`, and v neither reads x nor selects by a mask itself: its shape then does not
    depend on the number of selected elements, so where it broadcasts against `x[mask]` it
    broadcasts against x alike. Not offered for a division by a tensor or an update calling
    `log` / `sqrt` and their kin: computed for every element, an infinite value where the mask is
    not set is discarded from the values but makes the gradient there NaN. Unsafe: `x op v` is
    computed for every element, and the float results are those of the same operation, so equal."""
    info = source_info(ctx.module, ctx.fn)
    aug = info.parent(node)
    if not (isinstance(aug, cst.AugAssign) and aug.target is node and type(aug.operator) in _AUGMENTED):
        return None
    line = info.parent(aug)
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return None
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index) or node.slice[0].slice.star is not None:
        return None
    mask, values, update = node.slice[0].slice.value, node.value, aug.value
    if not (pure(values, ctx) and pure(mask, ctx) and pure(update, ctx)):
        return None
    if occurs_in(values, update) or _selects(update, ctx) or variable_names(update) & compact_names(ctx, ctx.fn):
        return None
    if may_blow_up(update) or (type(aug.operator) is cst.DivideAssign and not is_number(update)):
        # Computed for every element, an infinite value where the mask is not set gives NaN
        # gradients through `torch.where` (0 times infinity), though the values stay right.
        return None
    same_shape = _elementwise_mask_of(ctx, mask, values)
    mask_name = None
    if not same_shape and not isinstance(mask, cst.Name):
        taken = variable_names(ctx.fn)
        mask_name = next((n for n in ("update_mask", "selected", "update_mask_2") if n not in taken), None)
        if mask_name is None:
            return None
    op = _AUGMENTED[type(aug.operator)]

    def generate(positions, module):
        torch, import_edits = torch_reference(info, positions)
        x = atom_text(info, positions, values)
        m = info.text(positions, mask)
        edits = list(import_edits)
        if same_shape:
            cond = m
        else:
            name = m if mask_name is None else mask_name
            cond = f"{name}.reshape({name}.shape + (1,) * ({x}.dim() - {name}.dim()))"
        v = atom_text(info, positions, update)
        text = f"{x}.copy_({torch}.where({cond}, {x} {op} {v}, {x}))"
        if mask_name is not None:
            indent = info.indentation(positions[line].start.line)
            text = f"{mask_name} = {m}{info.newline}{indent}{text}"
        edits.append(replace_node(positions, aug, text))
        return make_fix(UNSAFE, f"Update in place through `{torch}.where` instead of reading the selection", edits)

    return guarded(code, generate)


def _selects(root: cst.CSTNode, ctx: RuleContext) -> bool:
    """root indexes something with a boolean mask or calls a data-dependent-shape operator."""
    for n in iter_nodes(root):
        if isinstance(n, cst.Subscript) and any(
            isinstance(el.slice, cst.Index) and ctx.kind(el.slice.value) == Kind.BOOL_TENSOR for el in n.slice
        ):
            return True
        if isinstance(n, cst.Call):
            name = ctx.call_name(n) or ""
            if name.rsplit(".", 1)[-1] in ("nonzero", "masked_select", "argwhere", "where", "unique", "bincount"):
                return True
    return False


def compact_names(ctx: RuleContext, fn: cst.FunctionDef) -> set[str]:
    """Names the function binds (anywhere) to a value that selects by a mask or holds a
    data-dependent shape, or that is computed from such a name: `dV = V[active] * 0.1`, then
    `dP = dV - P[active]` (botorch's Penicillin). Such a value has the compacted shape of the
    selection, so it cannot stand for full rows in `torch.where(mask, x + dV, x)`."""
    compact: set[str] = set()
    derived: list[tuple[set, set]] = []  # (names bound, names read) of the other bindings
    for n in iter_nodes(fn.body):
        if isinstance(n, cst.Assign):
            names, value = set().union(*(target_names(t.target) for t in n.targets)), n.value
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)) and n.value is not None:
            names, value = target_names(n.target), n.value
        else:
            continue
        if _selects(value, ctx):
            compact |= names
        else:
            derived.append((names, variable_names(value)))
    changed = True
    while changed:
        changed = False
        for names, reads in derived:
            if names - compact and reads & compact:
                compact |= names
                changed = True
    return compact

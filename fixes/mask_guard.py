"""DYN120: a test that a boolean mask has an element set, guarding only updates through that mask
with a number, is dropped: each update changes nothing where the mask is empty. Unsafe fix.

    if pad_mask.any():                             ll.masked_fill_(pad_mask, 0.0)
        ll.masked_fill_(pad_mask, 0.0)       ->    smooth_obj.masked_fill_(pad_mask, 0.0)
        smooth_obj.masked_fill_(pad_mask, 0.0)

Branching on `mask.any()` breaks the graph; the updates themselves keep every shape (a write
through a boolean mask, `masked_fill`), so without the test the code compiles to one graph
(probed on torch 2.11, 2.13 and 2.14.1). Read from the code: the test is `m.any()`,
`torch.any(m)`, `m.sum() > 0`, `m.sum() != 0` or `m.sum()` on a name `m` the linter knows to be a
boolean tensor (an integer index tensor would write where its values point, empty test or not);
the `if` has no `else`; every statement of its body is `x[m] = v` (also through a view,
`x[1:][m] = v`), `x.masked_fill_(m, v)` or `x = x.masked_fill(m, v)`, with `v` a number
(`0.0`, `-1`, `float("-inf")`, `math.inf`). A value with rows (`x[m] = y`) is refused: with an
empty mask it would have to be empty too.

Unsafe: the updates now always run. With an empty mask they change no value, but an in-place
update still counts as a modification for autograd (a tensor saved for backward and updated here
makes backward raise, where the original skipped the update), `x = x.masked_fill(m, v)` binds a
copy, and each costs a pass over the tensor.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import CodePosition

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.kinds import Kind
from dynalint.lint.rule import RuleContext

from .base import comment_rows, guarded, make_fix, single_small_statement, source_info
from .purity import is_number, plain_chain
from .statements import string_continuation_rows


def mask_guard_fix(ctx: RuleContext, test: cst.BaseExpression, code: str = "DYN120"):
    """test: the reported condition of an `if`."""
    fn = ctx.fn
    if fn is None:
        return None
    info = source_info(ctx.module, fn)
    stmt = info.parent(test)
    if not (isinstance(stmt, cst.If) and stmt.test is test and stmt.orelse is None
            and isinstance(stmt.body, cst.IndentedBlock)):
        return None
    mask = _tested_mask(ctx, test)
    if mask is None or not all(_masked_update(s, mask) for s in stmt.body.body):
        return None

    def generate(positions, module):
        if any(string_continuation_rows(positions, s) for s in stmt.body.body):
            return None  # re-indenting would change a multi-line string's value
        rng = positions[stmt]
        first, last = rng.start.line, rng.end.line
        new = unwrapped_if(info, positions, stmt, [info.line(row) for row in range(first, last + 1)])
        return make_fix(
            UNSAFE,
            f"Drop the test: each update through `{mask}` changes nothing when it is empty (one graph; the "
            "updates always run, in-place ones count as modifications for autograd)",
            [Edit(info.newline.join(new), first, rng.start.column + 1, last, len(info.line(last)) + 1)],
        )

    return guarded(code, generate)


def unwrapped_if(info, positions, stmt: cst.If, lines: list[str]) -> list[str]:
    """The rows of `stmt` (`lines`, from its `if` row to its last, possibly edited already) without
    the `if` line: its own comment stays on a line of its own, the body is dedented to the `if`'s
    level, and the first row loses its indentation (the edit starts at the `if`'s column)."""
    first = positions[stmt].start.line
    indent = info.indentation(first)
    inner = info.indentation(positions[stmt.body.body[0]].start.line)
    head = [f"{indent}{c}" for _, c in comment_rows(positions, stmt, CodePosition(first, 0), CodePosition(first + 1, 0))]
    body = [indent + line[len(inner):] if line.startswith(inner) else line.strip() and line for line in lines[1:]]
    new = head + body
    new[0] = new[0][len(indent):]
    return new


def _tested_mask(ctx: RuleContext, test: cst.BaseExpression) -> Optional[str]:
    """The boolean tensor name `m` of `m.any()`, `torch.any(m)`, `m.sum() > 0`, `m.sum() != 0`,
    `m.sum()`; None for anything else."""
    operand = test
    if isinstance(test, cst.Comparison):
        if len(test.comparisons) != 1:
            return None
        comparison = test.comparisons[0]
        zero = comparison.comparator
        if not (isinstance(comparison.operator, (cst.GreaterThan, cst.NotEqual))
                and isinstance(zero, (cst.Integer, cst.Float)) and float(zero.value) == 0.0):
            return None
        operand = test.left
    name = _reduced_name(ctx, operand, "sum") if operand is not test else (
        _reduced_name(ctx, operand, "any") or _reduced_name(ctx, operand, "sum"))
    if name is None or ctx.kind(name) != Kind.BOOL_TENSOR:
        return None
    return name.value


def _reduced_name(ctx: RuleContext, node: cst.BaseExpression, reduction: str) -> Optional[cst.Name]:
    """`m.<reduction>()` or `torch.<reduction>(m)` with no other argument: the Name `m`."""
    if not isinstance(node, cst.Call) or node.lpar:
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == reduction and not node.args:
        value = func.value
    elif ctx.call_name(node) == f"torch.{reduction}" and len(node.args) == 1 and node.args[0].keyword is None \
            and not node.args[0].star:
        value = node.args[0].value
    else:
        return None
    return value if isinstance(value, cst.Name) else None


def _masked_update(stmt: cst.CSTNode, mask: str) -> bool:
    """`x[m] = v` (through views too), `x.masked_fill_(m, v)`, `x = x.masked_fill(m, v)`: v a number."""
    small = single_small_statement(stmt)
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Subscript):
            index = _only_index(target)
            return (isinstance(index, cst.Name) and index.value == mask and plain_chain(target.value)
                    and _number(small.value))
        if isinstance(target, cst.Name):
            call = small.value
            return (_masked_fill(call, "masked_fill", mask) and isinstance(call.func.value, cst.Name)
                    and call.func.value.value == target.value)
        return False
    if isinstance(small, cst.Expr):
        return _masked_fill(small.value, "masked_fill_", mask) and plain_chain(small.value.func.value)
    return False


def _masked_fill(call: cst.BaseExpression, method: str, mask: str) -> bool:
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == method):
        return False
    args = call.args
    if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
        return False
    return isinstance(args[0].value, cst.Name) and args[0].value.value == mask and _number(args[1].value)


def _only_index(sub: cst.Subscript) -> Optional[cst.BaseExpression]:
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index) or sub.slice[0].slice.star:
        return None
    return sub.slice[0].slice.value


def _number(node: cst.BaseExpression) -> bool:
    """`0.0`, `-1`, `float("-inf")`, `math.inf`, `-math.inf`."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    if is_number(node):
        return True
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "float"
            and len(node.args) == 1 and isinstance(node.args[0].value, cst.SimpleString)):
        return node.args[0].value.evaluated_value.strip().lower() in ("inf", "-inf", "+inf", "nan", "infinity", "-infinity")
    return (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "math"
            and node.attr.value in ("inf", "nan"))

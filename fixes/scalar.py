"""DYN110: `.item()` / `int(t)` / `float(t)` in compiled code. Unsafe fixes:

- the value is unused (`t.item()` as a statement, or `v = t.item()` with `v` never read): delete
  the statement when the receiver has no side effects, else drop only the conversion;
- the value only feeds tensor arithmetic (`x / t.item()`, or `m = t.item()` with every use of
  `m` an operand next to a tensor): keep it a tensor, dropping `.item()` / `float()` (`int(t)`
  becomes `t.long()`, which truncates toward zero like `int`). Semantics may shift: the result
  takes tensor type promotion (dtype) instead of Python-scalar promotion.

- the value is one side of the single comparison an `assert` tests (`assert lengths.max().item()
  <= slen`, XLM): assert the tensor comparison, which Dynamo keeps in the graph. Eager, the same
  AssertionError; compiled, a failure raises RuntimeError; the comparison takes the tensor's dtype
  (`float()` of a float32 tensor compared in float32, not float64);
- the value is what an `assert` tests (`assert torch.all(ids >= 0).item(), msg`, ProphetNet and
  UDOP; `assert bool(t)`): assert the tensor (probed on torch 2.13: 2 graphs -> 1).

Anything else (an index, a shape, a condition, logging) gets no fix: the value really is needed
on the host, and the way out is to return the tensor from the compiled region.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext
from dynalint.lint.nodes import is_string_literal
from dynalint.lint.variables import variable_reads

from .base import SourceInfo, atom_text, guarded, make_fix, replace_node, source_info
from .purity import ARITHMETIC, pure
from .statements import delete_statements

COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def item_fix(ctx: RuleContext, call: cst.Call, code: str = "DYN110"):
    conversion = _conversion(call)
    if conversion is None:
        return None
    receiver, kind = conversion
    info = source_info(ctx.module, ctx.fn)
    stmt = ctx.statement
    unused = _unused_statement(info, ctx, stmt, call)
    # `.item()` is also reported on NumPy values; only a tensor may stay what it is.
    is_tensor = ctx.is_definite_tensor(receiver) and not ctx.is_numpy(receiver)
    if unused is not None:
        deletable = pure(receiver, ctx)
        if not (deletable or is_tensor):
            return None
        return guarded(code, lambda positions, module: _delete_or_drop(info, positions, unused, call, receiver, kind, deletable))
    if not is_tensor:
        return None
    if kind in ("item", "bool") and isinstance(info.parent(call), cst.Assert) and info.parent(call).test is call \
            and _literal_message(info.parent(call)):
        # `assert torch.all(ids >= 0).item(), msg` (ProphetNet, UDOP): a one-element tensor's truth
        # is its value's.
        return guarded(code, lambda positions, module: _drop(info, positions, call, receiver, kind, asserted="tensor"))
    if kind == "bool":
        return None
    if kind in ("item", "float") and _asserted_comparison(info, call):
        return guarded(code, lambda positions, module: _drop(info, positions, call, receiver, kind, asserted="comparison"))
    if not _feeds_tensor_arithmetic(info, ctx, call):
        return None
    return guarded(code, lambda positions, module: _drop(info, positions, call, receiver, kind))


def _conversion(call: cst.Call) -> Optional[tuple[cst.BaseExpression, str]]:
    """(receiver tensor, "item" | "int" | "float" | "bool") for `t.item()` / `float(t)`."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not call.args:
        return func.value, "item"
    if isinstance(func, cst.Name) and func.value in ("int", "float", "bool") and len(call.args) == 1:
        arg = call.args[0]
        if arg.keyword is None and not arg.star:
            return arg.value, func.value
    return None


def _replacement(info: SourceInfo, positions, receiver: cst.BaseExpression, kind: str) -> str:
    text = atom_text(info, positions, receiver)
    return f"{text}.long()" if kind == "int" else text


def _drop(info: SourceInfo, positions, call: cst.Call, receiver: cst.BaseExpression, kind: str,
          asserted: Optional[str] = None):
    what = "`.item()`" if kind == "item" else f"`{kind}()`"
    edit = replace_node(positions, call, _replacement(info, positions, receiver, kind))
    if asserted:
        return make_fix(UNSAFE, f"Assert on the tensor {'comparison ' if asserted == 'comparison' else ''}(drop {what}): "
                                "Dynamo keeps it in the graph; compiled, a failure raises RuntimeError instead of "
                                "AssertionError", [edit])
    return make_fix(UNSAFE, f"Keep the value a tensor (drop {what})", [edit])


def _asserted_comparison(info: SourceInfo, call: cst.Call) -> bool:
    """Is the conversion one side of a single comparison that is a whole `assert`'s test
    (`assert lengths.max().item() <= slen`)? Asserting the tensor comparison keeps the check in
    the graph (probed on torch 2.11, 2.13, 2.14.1); a chained comparison or an `and` would take
    the tensor's truth in Python and break again."""
    comparison = info.parent(call)
    if isinstance(comparison, cst.ComparisonTarget):
        comparison = info.parent(comparison)
    if not (isinstance(comparison, cst.Comparison) and len(comparison.comparisons) == 1):
        return False
    target = comparison.comparisons[0]
    if not (comparison.left is call or target.comparator is call):
        return False
    if not isinstance(target.operator, COMPARISONS):
        return False
    statement = info.parent(comparison)
    return isinstance(statement, cst.Assert) and statement.test is comparison and _literal_message(statement)


def _literal_message(statement: cst.Assert) -> bool:
    """Dynamo keeps `assert t` / `assert t, "text"` in the graph; any other message makes the
    tensor assert a branch, a break again (escnn's `assert err.item() < 1e-7, err.item()`)."""
    return statement.msg is None or is_string_literal(statement.msg)


def _delete_or_drop(info, positions, stmt, call, receiver, kind, deletable: bool):
    if deletable:
        edits = delete_statements(info, positions, [stmt])
        if edits is not None:
            return make_fix(UNSAFE, "Remove the unused conversion", edits)
    return _drop(info, positions, call, receiver, kind)


# --------------------------------------------------------------------------------------------
# Where the value goes


def _unused_statement(info: SourceInfo, ctx: RuleContext, stmt, call: cst.Call) -> Optional[cst.SimpleStatementLine]:
    """The statement to delete when the conversion's value is thrown away."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Expr) and small.value is call:
        return stmt
    if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name) and not variable_reads(ctx.fn, target.value, skip=[target]):
            return stmt
    return None


def _arithmetic_top(info: SourceInfo, ctx: RuleContext, node: cst.CSTNode) -> tuple[cst.CSTNode, bool]:
    """Climb from node through arithmetic; (highest node reached, met a tensor operand on the way)."""
    cur = node
    while True:
        parent = info.parent(cur)
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, ARITHMETIC):
            other = parent.right if parent.left is cur else parent.left
            if ctx.is_tensor(other):
                return parent, True
            cur = parent
        elif isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, (cst.Minus, cst.Plus)):
            cur = parent
        elif isinstance(parent, cst.Comparison) and len(parent.comparisons) == 1 and isinstance(
            parent.comparisons[0].operator, COMPARISONS
        ):
            other = parent.comparisons[0].comparator if parent.left is cur else parent.left
            return parent, ctx.is_tensor(other)
        else:
            return cur, False


def _feeds_tensor_arithmetic(info: SourceInfo, ctx: RuleContext, call: cst.Call) -> bool:
    top, ok = _arithmetic_top(info, ctx, call)
    if ok:
        return True
    # `m = t.item()` (or `s = 1 / t.item()`): every later read of `m` must be tensor arithmetic.
    assign = info.parent(top)
    if not (isinstance(assign, cst.Assign) and assign.value is top and len(assign.targets) == 1):
        return False
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    uses = variable_reads(ctx.fn, target.value, skip=[target])
    if not uses:
        return False
    return all(_arithmetic_top(info, ctx, use)[1] and _after(info, use, assign) for use in uses)


def _after(info: SourceInfo, use: cst.CSTNode, assign: cst.CSTNode) -> bool:
    """Is `use` inside a statement that follows the assignment's statement in the same block, and
    not in a nested scope? (A use before it, in a loop, would read the previous iteration's value.)"""
    stmt = info.parent(assign)
    block = info.parent(stmt) if stmt is not None else None
    siblings = list(getattr(block, "body", ()))
    idx = next((i for i, s in enumerate(siblings) if s is stmt), None)
    if idx is None:
        return False
    later = {id(s) for s in siblings[idx + 1 :]}
    cur = use
    while cur is not None:
        if isinstance(cur, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if id(cur) in later:
            return True
        cur = info.parent(cur)
    return False

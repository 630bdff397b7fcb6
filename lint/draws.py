"""Uniform random draws compared with a probability (LayerDrop's `torch.rand([]) < p`).

A `torch.rand` draw lies in [0, 1): `draw < p` is False whenever `p <= 0`, so `p > 0 and draw < p`
is the same test, one that Dynamo decides from the Python number `p` when it is 0 (the default
`layerdrop` of BART-style models). DYN120's safe fix (fixes/uniform_draw.py) writes it. The guarded
test (by `and` or by an enclosing `if self.training and self.layerdrop > 0.0:`, as transformers
writes it) still breaks when the probability is positive (M2M100's default 0.05): DYN120 reports
it with a message of its own, and with the unsafe select of fixes/layer_drop.py where the loop has
a shape it knows.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .kinds import TENSORISH
from .nodes import param_list
from .variables import target_names

UNIFORM_DRAWS = frozenset({"torch.rand", "torch.rand_like"})


def is_python_uniform_draw(ctx, call: cst.Call) -> bool:
    """`random.random()` or `random.uniform(0, 1)`: Python's uniform draw in [0, 1) (uniform(0, 1)
    is `0 + 1 * random()`). Whether Dynamo draws it itself depends on the torch version (DYN105)."""
    q = ctx.call_name(call)
    if q == "random.random":
        return not call.args
    if q != "random.uniform" or len(call.args) != 2:
        return False
    low, high = (a.value for a in call.args)
    return (all(a.keyword is None and not a.star for a in call.args)
            and type(low) in (cst.Integer, cst.Float) and float(low.value) == 0.0
            and type(high) in (cst.Integer, cst.Float) and float(high.value) == 1.0)


def drawn_side(ctx, test: cst.BaseExpression) -> Optional[tuple]:
    """(the compared side, probability) when `test` is `x < p` or `p > x`, `p` a plain name,
    attribute or number the linter does not know to be a tensor; whether `x` is a draw is the
    caller's question (a name bound to draws here, a draw made in the test in fixes/layer_drop.py)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    op = test.comparisons[0].operator
    if type(op) is cst.LessThan:
        draw, probability = test.left, test.comparisons[0].comparator
    elif type(op) is cst.GreaterThan:
        draw, probability = test.comparisons[0].comparator, test.left
    else:
        return None
    if not plain(probability) or ctx.kind(probability) in TENSORISH:
        return None
    return draw, probability


def comparison_with_draw(ctx, test: cst.BaseExpression, python: bool = False) -> Optional[tuple]:
    """(draw name, probability) when `test` is `draw < p` or `p > draw` (`drawn_side`): `draw` a
    local name every assignment in the function binds to `torch.rand(...)` / `torch.rand_like(...)`
    (with `python`, or each to Python's `random.random()` / `random.uniform(0, 1)`)."""
    found = drawn_side(ctx, test)
    if found is None or type(found[0]) is not cst.Name or not bound_to_draws(ctx, found[0].value, python):
        return None
    return found


def is_probability_guard(node: cst.BaseExpression, probability: cst.BaseExpression) -> bool:
    """Is `node` `p > 0` (or `p > 0.0`) for this probability `p`?"""
    if type(node) is not cst.Comparison or len(node.comparisons) != 1:
        return False
    c = node.comparisons[0]
    zero = c.comparator
    return (
        type(c.operator) is cst.GreaterThan
        and type(zero) in (cst.Integer, cst.Float)
        and float(zero.value) == 0.0
        and node.left.deep_equals(probability)
    )


def guarded_probability(ctx, test: cst.BaseExpression, probability: cst.BaseExpression,
                        parent: Optional[cst.CSTNode] = None) -> bool:
    """Is `test` only evaluated when `probability > 0`: the left side of the `and` it is the right
    operand of (`parent`, or an ancestor of the node being checked), or an enclosing `if` /
    `while` test, says so?"""
    for anc in ([parent] if parent is not None else []) + list(reversed(ctx.ancestors())):
        if type(anc) is cst.BooleanOperation and type(anc.operator) is cst.And and anc.right is test:
            if any(is_probability_guard(o, probability) for o in and_operands(anc.left)):
                return True
    return any(
        is_probability_guard(o, probability) for t in ctx.enclosing_tests() for o in and_operands(t)
    )


def and_operands(node: cst.BaseExpression) -> list:
    """`a and (b and c)` -> [a, b, c]: an `and` in parentheses is split too (the same evaluation); a
    stack of its own, not recursion: an N-term chain nests N deep."""
    out, stack = [], [node]
    while stack:
        top = stack.pop()
        if type(top) is cst.BooleanOperation and type(top.operator) is cst.And:
            stack.extend((top.right, top.left))
        else:
            out.append(top)
    return out


def plain(node: cst.BaseExpression) -> bool:
    """A name, an attribute chain of names, or a number: evaluated twice without side effects."""
    if type(node) in (cst.Integer, cst.Float):
        return not node.lpar
    while type(node) is cst.Attribute:
        node = node.value
    return type(node) is cst.Name


def bound_to_draws(ctx: RuleContext, name: str, python: bool = False) -> bool:
    """Is every binding of `name` in the function an assignment of a uniform draw (torch's, or with
    `python` Python's: one kind for all) and is there at least one, so the name is no parameter?"""
    fn = ctx.fn
    memo = ctx.rule_state("python_draws" if python else "draws")
    if name in memo:
        return memo[name]
    if name in {p.name.value for p in param_list(fn.params)}:
        memo[name] = False
        return False
    draws = other = 0

    # Statements whose `.target` binds names: anything but a draw assignment disqualifies `name`.
    target_holders = (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr)

    class Bindings(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal draws, other
            kind = type(node)
            if kind is cst.Assign:
                for target in node.targets:
                    if type(target.target) is cst.Name and target.target.value == name:
                        single_draw = len(node.targets) == 1 and type(node.value) is cst.Call
                        if single_draw and (is_python_uniform_draw(ctx, node.value) if python
                                            else ctx.call_name(node.value) in UNIFORM_DRAWS):
                            draws += 1
                        else:
                            other += 1
                    elif name in target_names(target.target):
                        other += 1
            elif kind in target_holders:
                other += name in target_names(node.target)
            elif kind is cst.AsName:
                other += isinstance(node.name, cst.BaseExpression) and name in target_names(node.name)
            elif kind in (cst.Global, cst.Nonlocal):
                other += any(n.name.value == name for n in node.names)
            return True

    fn.body.visit(Bindings())
    memo[name] = found = draws > 0 and other == 0
    return found

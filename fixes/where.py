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
Branches with other work get no fix: that is `torch.cond`'s job. Nor do branches that may differ
in shape (fixes/shapes.py): `torch.where` broadcasts them, so `F.pad(x, ..)` against `x` would
raise and `x.sum(-1, keepdim=True)` against `x` would silently take x's shape; both branches must
be elementwise (or shape-keeping) work on the same tensors, and both or neither a mask. Nor do
branches that divide by a tensor or call `log`, `sqrt` and their kin: the branch not selected
still runs, and where its gradient is infinite (`num / denom` with `denom == 0`, which the test
was there to avoid) `torch.where`'s backward turns it into NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import keyword

import libcst as cst

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.nodes import operator_operands
from dynalint.lint.kinds import PYTHON_BOOL_COMPARISONS, Kind, TENSORISH
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import identifiers, may_be_none, variable_names

from .base import SourceInfo, atom_text, comments_within, guarded, make_fix, source_info
from .imports import torch_reference
from .purity import LITERALS, is_number, pure
from .shapes import same_shape_and_dtype


@dataclass
class WherePlan:
    condition: cst.BaseExpression
    condition_is_bool: bool
    when_true: "cst.BaseExpression | str"  # a str is a variable name (the no-else form)
    when_false: "cst.BaseExpression | str"
    replaced: list  # nodes whose span (first start .. last end) is replaced
    prefix: str  # "v = " / "return " / "" (expression form)
    keep: list  # subtrees copied verbatim (their comments travel with them)
    # Calls both branches make, evaluated once before the `where`: (variable, call in when_true,
    # the same call in when_false), in evaluation order; the condition is then bound first.
    hoisted: list = field(default_factory=list)
    condition_name: str = ""


def where_fix(ctx: RuleContext, reported: cst.BaseExpression, code: str = "DYN120"):
    if _mentions_numpy(reported, ctx):
        return None  # torch.where needs a torch tensor condition, not a NumPy value
    info = source_info(ctx.module, ctx.fn)
    plan = _plan(info, ctx, reported)
    if plan is None:
        return None
    return guarded(code, lambda positions, module: _rewrite(info, positions, plan))


# Calls whose value or gradient is infinite somewhere in their domain.
_BLOWS_UP = frozenset(
    """
    log log2 log10 log1p sqrt rsqrt reciprocal div divide true_divide floor_divide remainder fmod
    acos asin atanh arccos arcsin arctanh xlogy digamma lgamma polygamma
    norm vector_norm matrix_norm cdist pdist dist
    """.split()
)
# (A norm's gradient at the zero vector is 0/0: torchmd-net masks zero vectors out of `norm` for
# that reason, and a force loss's double backward through `torch.where` came out NaN.)


def may_blow_up(node: cst.CSTNode) -> bool:
    """A division by something other than a number, a power that is not a whole number, or a call
    with a pole (`log`, `sqrt`, a norm, ...)."""
    for n in iter_nodes(node):
        if type(n) is cst.BinaryOperation and type(n.operator) in (cst.Divide, cst.FloorDivide, cst.Modulo):
            if not is_number(n.right):
                return True
        elif type(n) is cst.BinaryOperation and type(n.operator) is cst.Power:
            # `x ** 0.5`, `x ** -1`, `x ** p`: an infinite gradient at 0; `x ** 2` has none
            if not (type(n.right) is cst.Integer):
                return True
        elif type(n) is cst.Call:
            func = n.func
            name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
            if name in _BLOWS_UP and not (name == "norm" and type(func) is cst.Attribute
                                          and type(func.value) is cst.Name and func.value.value == "self"):
                return True  # (`self.norm(h)` is a normalisation layer, not a vector norm)
            if name in ("pow", "float_power"):
                # `x.pow(0.5)`, `torch.pow(x, e)`: the exponent is the last positional argument
                exponent = [a for a in n.args if a.keyword is None][-1:] or [a for a in n.args if a.keyword is not None
                                                                             and a.keyword.value == "exponent"]
                if not exponent or type(exponent[0].value) is not cst.Integer:
                    return True
    return False


def _mentions_numpy(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    parts = operator_operands(node)
    if parts is not None:
        return any(_mentions_numpy(n, ctx) for n in parts)
    return ctx.is_numpy(node)


def _plan(info: SourceInfo, ctx: RuleContext, reported: cst.BaseExpression) -> Optional[WherePlan]:
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
    hoisted: list = []
    if not all(_simple_branch(x, ctx) for x in nodes):
        if not prefix or len(nodes) != 2 or not all(ctx.is_tensor(x) or is_number(x) for x in nodes):
            return None
        shared = _shared_calls(ctx, a, b)
        if shared is None:
            return None
        taken = identifiers(ctx.fn)
        condition_name = _fresh("condition", taken)
        hoisted = [(_fresh(_call_stem(x), taken), x, y) for x, y in shared]
    if not any(ctx.is_tensor(x) for x in nodes):
        return None
    # Both branches are now evaluated: a variable that may be None (`if mask is None: ...`,
    # an Optional parameter) would raise in the branch that eager code never ran.
    names = {n for n in (a, b) if isinstance(n, str)}
    for x in nodes:
        names |= variable_names(x)
    if any(may_be_none(ctx.fn, n) for n in names):
        return None
    # `torch.where` broadcasts its branches: `F.pad(x, ..)` against `x` raises, `x.sum(-1,
    # keepdim=True)` against `x` silently takes x's shape. A Python number broadcasts to the
    # other branch, where eager code had the number.
    if not (is_number(a) or is_number(b) or same_shape_and_dtype(a, b, ctx)):
        return None
    # The branch `torch.where` does not select still runs, and its gradient is multiplied by 0:
    # where it is inf (`num / denom` with `denom == 0`, `log(0)`), 0 * inf gives NaN gradients
    # (pytorch-metric-learning's `0 if s.sum() == 0 else num / denom`), poisoning training while
    # the forward value is right. Such branches are left to a human (a safe denominator).
    if any(may_blow_up(x) for x in nodes):
        return None
    if negated:
        a, b = b, a
        hoisted = [(name, y, x) for name, x, y in hoisted]
    plan = WherePlan(reported, ctx.kind(reported) == Kind.BOOL_TENSOR, a, b, replaced, prefix, [reported, *nodes])
    if hoisted:
        plan.hoisted, plan.condition_name = hoisted, condition_name
    return plan


# --------------------------------------------------------------------------------------------
# Calls both branches make: `if c: return self.h(x) + 1 else: return self.h(x) - 1`.
#
# Either branch evaluates `self.h(x)` exactly once, after the condition and before anything else
# with an effect (the rest of each branch must be side-effect free). So
#     condition = c; h_out = self.h(x); return torch.where(condition, h_out + 1, h_out - 1)
# evaluates the condition, then the call once, in the same order: the same calls with the same
# inputs and the same random draws (dropout inside the module draws after the condition, as
# before). The condition is bound first because the call might change what it reads (a module
# that updates a buffer in place). Not required of the call: being pure; it runs once either way.


def _shared_calls(ctx: RuleContext, a: cst.BaseExpression, b: cst.BaseExpression) -> Optional[list]:
    """Pairs of equal calls, one in each branch, in evaluation order, such that replacing them
    with variables leaves both branches side-effect free; None when there are none such."""
    calls_a, calls_b = _calls_to_hoist(a, b, ctx), _calls_to_hoist(b, a, ctx)
    if not calls_a or calls_b is None or len(calls_a) != len(calls_b):
        return None
    if not all(x.deep_equals(y) for x, y in zip(calls_a, calls_b)):
        return None  # another order: hoisting would reorder one branch's calls
    if any(x.deep_equals(y) for i, x in enumerate(calls_a) for y in calls_a[i + 1 :]):
        return None  # the same call twice in one branch runs twice: one variable would run it once
    if not all(ctx.is_tensor(x) for x in calls_a):
        return None
    if not (pure(a, ctx, frozenset(map(id, calls_a))) and pure(b, ctx, frozenset(map(id, calls_b)))):
        return None
    return list(zip(calls_a, calls_b))


def _calls_to_hoist(expr: cst.BaseExpression, other: cst.BaseExpression, ctx: RuleContext) -> Optional[list]:
    """The outermost impure calls of expr that also occur in other, in evaluation order; None where
    an impure part is evaluated conditionally (`and`, `or`, `if`), which no hoisting keeps."""
    if pure(expr, ctx):
        return []
    if isinstance(expr, cst.Call) and occurs_in(expr, other):
        return [expr]
    parts = _evaluated_parts(expr)
    if parts is None:
        return None
    out: list = []
    for part in parts:
        found = _calls_to_hoist(part, other, ctx)
        if found is None:
            return None
        out += found
    return out


def _evaluated_parts(node: cst.BaseExpression) -> Optional[list]:
    """Sub-expressions that Python evaluates, all of them and in this order, to evaluate node."""
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    if isinstance(node, cst.Comparison):
        return [node.left] + [c.comparator for c in node.comparisons]
    if isinstance(node, cst.Attribute):
        return [node.value]
    if isinstance(node, cst.Call):
        if any(arg.star for arg in node.args):
            return None
        return [node.func] + [arg.value for arg in node.args]
    if isinstance(node, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        return [e.value for e in node.elements]
    if isinstance(node, cst.Subscript):
        parts = [node.value]
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Index):
                parts.append(s.value)
            else:
                parts += [p for p in (s.lower, s.upper, s.step) if p is not None]
        return parts
    if isinstance(node, (cst.Name, *LITERALS)):
        return []
    return None


def occurs_in(node: cst.CSTNode, root: cst.CSTNode) -> bool:
    """Is an expression equal to node (same code) somewhere under root?"""
    stack = [root]
    while stack:
        cur = stack.pop()
        if type(cur) is type(node) and cur.deep_equals(node):
            return True
        stack.extend(cur.children)
    return False


def _call_stem(call: cst.Call) -> str:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else "call"
    return f"{name.strip('_') or 'call'}_out"


def _fresh(stem: str, taken: set) -> str:
    name, n = stem, 2
    while name in taken or keyword.iskeyword(name):
        name, n = f"{stem}_{n}", n + 1
    taken.add(name)
    return name


def _simple_branch(node: cst.BaseExpression, ctx: RuleContext) -> bool:
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


def _if_branches(info: SourceInfo, ctx: RuleContext, node: cst.If):
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
            if ctx.kind(cst.Name(name)) not in TENSORISH:
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
    before = []  # statements that the hoisting puts before the `where`
    if plan.hoisted:
        if any(_has_comment(call) for _, x, y in plan.hoisted for call in (x, y)):
            return None  # one copy of each call is dropped: its comments would go with it
        before.append(f"{plan.condition_name} = {info.text(positions, plan.condition)}")
        before += [f"{name} = {info.text(positions, x)}" for name, x, _ in plan.hoisted]
        cond = plan.condition_name if plan.condition_is_bool else f"{plan.condition_name}.bool()"
        a = _text_with(info, positions, plan.when_true, [(x, name) for name, x, _ in plan.hoisted])
        b = _text_with(info, positions, plan.when_false, [(y, name) for name, _, y in plan.hoisted])
    call = f"{torch}.where({cond}, {a}, {b})"
    first, last = plan.replaced[0], plan.replaced[-1]
    start, end = positions[first].start, positions[last].end
    comments = comments_within(positions, first, start, end, skip=plan.keep)
    if len(plan.replaced) > 1:
        comments += comments_within(positions, last, start, end, skip=plan.keep)
    if plan.prefix:
        indent = info.indentation(start.line)
        lead = "".join(f"{line}{info.newline}{indent}" for line in comments + before)
        content = f"{lead}{plan.prefix}{call}"
    else:
        if comments:
            return None  # a comment inside an expression has nowhere to go
        content = call
    edit = Edit(content, start.line, start.column + 1, end.line, end.column + 1)
    if plan.hoisted:
        message = f"Evaluate the call both branches make once and select with `{torch}.where`"
    else:
        message = f"Replace the branch with `{torch}.where`"
    return make_fix(UNSAFE, message, import_edits + [edit])


def _has_comment(node: cst.CSTNode) -> bool:
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Comment):
            return True
        stack.extend(cur.children)
    return False


def _text_with(info: SourceInfo, positions, node: cst.CSTNode, replacements: list) -> str:
    """node's source text with each (subtree, name) replacement's subtree written as the name."""
    rng = positions[node]
    row, col = rng.start.line, rng.start.column
    pieces = []
    for sub, name in sorted(replacements, key=lambda r: (positions[r[0]].start.line, positions[r[0]].start.column)):
        at = positions[sub]
        pieces += [info.span(row, col, at.start.line, at.start.column), name]
        row, col = at.end.line, at.end.column
    pieces.append(info.span(row, col, rng.end.line, rng.end.column))
    return "".join(pieces)


def _argument(info: SourceInfo, positions, node) -> str:
    return node if isinstance(node, str) else info.text(positions, node)


# Methods of tensors (not of Python numbers or sequences): calling one on a presumed tensor is
# the author's evidence that it is a tensor.
TENSOR_EVIDENCE_METHODS = frozenset(
    """
    any all sum mean max min amax amin std var abs isnan isinf isfinite isneginf isposinf norm
    float long int bool half bfloat16 to eq ne gt lt ge le logical_not logical_and logical_or diff
    prod cumsum argmax argmin count_nonzero
    """.split()
)


# `torch._assert_async(torch.equal(a, b))` raises TypeError: see kinds.PYTHON_BOOL_COMPARISONS.


def _python_bool_comparison(node: cst.CSTNode, ctx: RuleContext) -> bool:
    if type(node) is not cst.Call:
        return False
    func = node.func
    if type(func) is not cst.Attribute or func.attr.value not in PYTHON_BOOL_COMPARISONS:
        return False
    q = ctx.qualname(func)
    return q is None or q == f"torch.{func.attr.value}" or q.startswith("torch.Tensor.")


def definite_tensor_test(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """Is node computed from a tensor for sure: a value the lint knows to be a tensor (not merely
    a presumed one, an unannotated parameter: kinds.P), a torch function of a tensor, or a tensor
    method called on it? A fix that wraps the test in a torch call must not fire on Python numbers
    (`if no_recycles < 0: raise`, an aspect ratio of ints), nor on `torch.equal(a, b)` and other
    comparisons that give a Python bool."""
    if any(_python_bool_comparison(n, ctx) for n in iter_nodes(node)):
        return False
    return _definite_tensor_test(node, ctx)


def _definite_tensor_test(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    parts = operator_operands(node)
    if parts is not None:
        return any(_definite_tensor_test(n, ctx) for n in parts)
    if ctx.is_definite_tensor(node) and (isinstance(node, cst.Name) or not ctx.is_numpy(node)):
        return True
    if isinstance(node, (cst.Subscript, cst.Attribute)):
        return _definite_tensor_test(node.value, ctx)
    if isinstance(node, cst.Call):
        func = node.func
        q = ctx.qualname(func) or ""
        if q.startswith("torch."):
            return any(ctx.is_tensor(a.value) for a in node.args)
        if isinstance(func, cst.Attribute):
            if func.attr.value in TENSOR_EVIDENCE_METHODS and ctx.is_tensor(func.value):
                return True
            return _definite_tensor_test(func.value, ctx)
    return False

"""DYN120: a branch on a tensor's value whose branches do other work becomes `torch.cond`.

    if not torch.isfinite(h).all():             def h_if_true(h):
        limit = torch.finfo(h.dtype).max - 1000      return h.clone()
        h = torch.clamp(h, -limit, limit)       def h_if_false(h):
                                                    limit = torch.finfo(h.dtype).max - 1000
                                                    h = torch.clamp(h, -limit, limit)
                                                    return h
                                                h = torch.cond(torch.isfinite(h).all(), h_if_true, h_if_false, (h,))

Each branch becomes a local function returning what the code after the `if` reads: the variables
the branches assign that are read anywhere else in the function (a branch that leaves one alone
returns a copy of its value), or the value both branches return. A variable a branch reads and
then assigns is passed in as an operand, so the function does not see it unbound. The condition is
the `if`'s own tensor: `torch.cond` takes its truth as `if` does (one element, any dtype).

Applied only when each branch is plain assignments to names (and, in the return form, a final
`return`): no in-place methods, augmented assignments, attribute or item stores, prints, nested
statements or `.item()`-style calls; outputs are tensors never None, and each output is
provably of one shape in both branches (fixes/shapes.py: elementwise or shape-keeping work on the
same tensors, `self.a(x) * 2` against `self.a(x) - 1`, never `F.pad(x, ..)` against `x`). `torch.cond` (probed on torch
2.13) traces calls of submodules, dropout and closures, and rejects a branch output that is its
input or a view of it: such outputs are returned as `.clone()`.

Unsafe: both branches are traced (not run) when compiled; `torch.cond` requires both branches to
return tensors of the same shape, dtype, device and stride order (probed: a transposed output
against a contiguous one is refused) and raises at the first call otherwise, which `dynalint
verify` shows; outputs are new tensors rather than the objects the branch returned.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.kinds import TENSORISH
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import identifiers, may_be_none, variable_names

from .base import SourceInfo, guarded, make_fix, source_info
from .imports import torch_reference
from .purity import IMPURE_METHODS
from .shapes import same_shape_and_dtype, signature
from .where import _fresh, _mentions_numpy, definite_tensor_test

TENSOR_KINDS = TENSORISH
NOT_IN_BRANCHES = frozenset(
    "print breakpoint input exec eval setattr delattr int float bool complex round str repr format".split()
)
# Results that are new tensors: outputs of any other expression may alias an input (`x.view(..)`,
# an `nn.Identity` or eval-mode dropout call returns its input) and are cloned.
FRESH_OPERATORS = (cst.BinaryOperation, cst.UnaryOperation)
VIEW_FUNCTIONS = frozenset(
    """
    view view_as reshape reshape_as flatten unflatten squeeze unsqueeze transpose permute t T mT
    narrow select expand expand_as unbind split chunk tensor_split movedim moveaxis swapaxes
    swapdims as_strided diagonal unfold contiguous to type type_as float half double bfloat16 int
    long bool detach alias real imag view_as_real view_as_complex
    """.split()
)


def cond_fix(ctx: RuleContext, reported: cst.BaseExpression, code: str = "DYN120"):
    if _mentions_numpy(reported, ctx) or not definite_tensor_test(reported, ctx):
        return None
    info = source_info(ctx.module, ctx.fn)
    plan = _plan(info, ctx, reported)
    if plan is None:
        return None
    return guarded(code, lambda positions, module: _rewrite(info, positions, ctx, plan))


class Plan:
    def __init__(self, node, test, negated, arms, outputs, operands, returns):
        self.node = node  # the `if` statement (and, in the return form, a following `return`)
        self.test = test
        self.negated = negated
        self.arms = arms  # [(statements of the true branch), (of the false branch)]
        self.outputs = outputs  # variable names (assignment form)
        self.operands = operands
        self.returns = returns  # the return form


def _plan(info: SourceInfo, ctx: RuleContext, reported) -> Optional[Plan]:
    test, negated = reported, False
    owner = info.parent(reported)
    if isinstance(owner, cst.UnaryOperation) and isinstance(owner.operator, cst.Not) and owner.expression is reported:
        test, negated, owner = owner, True, info.parent(owner)
    if not isinstance(owner, cst.If) or owner.test is not test:
        return None
    parent = info.parent(owner)
    if isinstance(parent, cst.If) and parent.orelse is owner:
        return None  # an `elif`
    if not isinstance(parent, cst.IndentedBlock) or isinstance(owner.orelse, cst.If):
        return None
    if not isinstance(owner.body, cst.IndentedBlock):
        return None
    body = list(owner.body.body)
    other = None
    if isinstance(owner.orelse, cst.Else):
        if not isinstance(owner.orelse.body, cst.IndentedBlock):
            return None
        other = list(owner.orelse.body.body)
    replaced = [owner]
    returns = _ends_in_return(body)
    if returns and other is None:
        siblings = list(parent.body)
        i = next(k for k, s in enumerate(siblings) if s is owner)
        if i + 1 >= len(siblings) or not _ends_in_return(siblings[i + 1 : i + 2]):
            return None
        other = [siblings[i + 1]]
        replaced.append(siblings[i + 1])
    arms = [body, other or []]
    if returns != (other is not None and _ends_in_return(other)):
        return None
    if not all(_plain_arm(ctx, arm, returns) for arm in arms):
        return None
    # Both branches are traced: a variable that may be None (an Optional parameter) would fail in
    # the branch that eager code never ran.
    read = set().union(*(variable_names(stmt) for arm in arms for stmt in arm))
    if any(may_be_none(ctx.fn, name) for name in read):
        return None
    if returns:
        values = [_return_value(arm) for arm in arms]
        shapes = [len(v.elements) if isinstance(v, cst.Tuple) else None for v in values]
        if shapes[0] != shapes[1]:
            return None
        for arm, value in zip(arms, values):
            local = _local_tensors(ctx, arm)
            leaves = value.elements if isinstance(value, cst.Tuple) else [cst.Element(value)]
            if not all(_is_tensor(ctx, e.value, local) for e in leaves):
                return None
        outputs: list = []
    else:
        assigned = [_assigned(arm) for arm in arms]
        used_after = identifiers(ctx.fn.body, skip=owner)
        outputs = sorted((assigned[0] | assigned[1]) & used_after)
        if not outputs:
            return None
        locals_ = [_local_tensors(ctx, arm) for arm in arms]
        for name in outputs:
            if may_be_none(ctx.fn, name):
                return None
            for a, local in zip(assigned, locals_):
                if name in a and name not in local:
                    return None  # not known to be a tensor
                if name not in a and (ctx.kind(cst.Name(name)) not in TENSOR_KINDS or not _bound_before(info, ctx, name, owner)):
                    return None
    operands = sorted(set().union(*(_read_then_assigned(arm) for arm in arms)))
    for name in operands:
        if ctx.kind(cst.Name(name)) not in TENSOR_KINDS or may_be_none(ctx.fn, name) or not _bound_before(info, ctx, name, owner):
            return None
    if not _same_outputs(ctx, arms, outputs, returns):
        return None
    if negated:
        arms = arms[::-1]
    return Plan(replaced, reported, negated, arms, outputs, operands, returns)


def _same_outputs(ctx: RuleContext, arms: list, outputs: list, returns: bool) -> bool:
    """Do both branches provably return tensors of one shape and dtype (fixes/shapes.py)?
    `torch.cond` raises at the first call otherwise."""
    envs = [_signatures(ctx, arm[:-1] if returns else arm) for arm in arms]
    if returns:
        values = [_return_value(arm) for arm in arms]
        pairs = [(values[0], values[1])]
        if isinstance(values[0], cst.Tuple):
            pairs = [(x.value, y.value) for x, y in zip(values[0].elements, values[1].elements)]
    else:
        pairs = [(name, name) for name in outputs]
    return all(same_shape_and_dtype(x, y, ctx, envs[0], envs[1]) for x, y in pairs)


def _signatures(ctx: RuleContext, arm: list) -> dict:
    """Signatures (fixes/shapes.py) of the names an arm assigns, after its statements (None for
    names unpacked from a tuple: unknown)."""
    env: dict = {}
    for stmt in arm:
        small = stmt.body[0]
        found = signature(small.value, ctx, env)  # the value is evaluated before the binding
        single = isinstance(small, cst.AnnAssign) or all(isinstance(t.target, cst.Name) for t in small.targets)
        for name in _assigned_by(stmt):
            env[name] = found if single else None
    return env


# Tensor methods whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    """
    size dim ndimension numel nelement element_size stride item tolist data_ptr is_contiguous
    get_device is_floating_point is_complex storage_offset untyped_storage numpy
    """.split()
)


def _is_tensor(ctx: RuleContext, value: cst.BaseExpression, local: set) -> bool:
    """A tensor: as the lint knows it, or computed from a tensor the branch assigned."""
    if ctx.is_tensor(value):
        return True
    if isinstance(value, cst.Name):
        return value.value in local
    if isinstance(value, cst.BinaryOperation):
        return _is_tensor(ctx, value.left, local) or _is_tensor(ctx, value.right, local)
    if isinstance(value, cst.UnaryOperation) and not isinstance(value.operator, cst.Not):
        return _is_tensor(ctx, value.expression, local)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        return value.func.attr.value not in NON_TENSOR_METHODS and _is_tensor(ctx, value.func.value, local)
    if isinstance(value, cst.Subscript):
        return _is_tensor(ctx, value.value, local)
    return False


def _local_tensors(ctx: RuleContext, arm: list) -> set:
    """Names an arm's assignments leave holding tensors (by the assigned expressions)."""
    local: set = set()
    for stmt in arm:
        small = stmt.body[0]
        if isinstance(small, cst.Assign):
            for t in small.targets:
                if isinstance(t.target, cst.Name):
                    if _is_tensor(ctx, small.value, local):
                        local.add(t.target.value)
                    else:
                        local.discard(t.target.value)
                else:
                    local -= set(_targets(t.target))
        elif isinstance(small, cst.AnnAssign):
            if _is_tensor(ctx, small.value, local):
                local.add(small.target.value)
            else:
                local.discard(small.target.value)
    return local


def _ends_in_return(stmts: list) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    return (
        isinstance(last, cst.SimpleStatementLine)
        and len(last.body) == 1
        and isinstance(last.body[0], cst.Return)
        and last.body[0].value is not None
    )


def _return_value(arm: list) -> cst.BaseExpression:
    return arm[-1].body[0].value


def _plain_arm(ctx: RuleContext, arm: list, returns: bool) -> bool:
    """Assignments to names only (and a final return in the return form), nothing with effects."""
    for k, stmt in enumerate(arm):
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        if isinstance(small, cst.Return):
            if not (returns and k == len(arm) - 1):
                return False
            value = small.value
        elif isinstance(small, cst.Assign):
            if not all(_names_only(t.target) for t in small.targets):
                return False
            value = small.value
        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
            value = small.value
        else:
            return False
        if not _effect_free_calls(ctx, value):
            return False
    return True


def _names_only(target) -> bool:
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(not isinstance(e, cst.StarredElement) and _names_only(e.value) for e in target.elements)
    return False


def _effect_free_calls(ctx: RuleContext, value: cst.CSTNode) -> bool:
    """No in-place or host-side calls, no tensor tests, no lambdas or generators under value."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr, cst.GeneratorExp, cst.ListComp, cst.DictComp, cst.SetComp)):
            return False
        if isinstance(node, (cst.IfExp, cst.BooleanOperation)):
            test = node.test if isinstance(node, cst.IfExp) else node.left
            if ctx.is_tensor(test):
                return False
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not) and ctx.is_tensor(node.expression):
            return False
        if isinstance(node, cst.Call):
            func = node.func
            # Conversions to Python values are `.item()` calls inside the branch (an error there).
            if isinstance(func, cst.Name) and func.value in NOT_IN_BRANCHES:
                return False
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method.endswith("_") and not method.startswith("_") or method in IMPURE_METHODS or ctx.is_logger(func.value):
                    return False
            q = ctx.qualname(func) or ""
            if q.startswith(("warnings.", "logging.", "builtins.print")):
                return False
            if any(a.keyword is not None and a.keyword.value in ("out", "inplace") for a in node.args):
                return False
        stack.extend(node.children)
    return True


def _targets(target) -> list:
    if isinstance(target, cst.Name):
        return [target.value]
    return [n for e in target.elements for n in _targets(e.value)]


def _assigned_by(stmt) -> list:
    small = stmt.body[0]
    if isinstance(small, cst.Assign):
        return [n for t in small.targets for n in _targets(t.target)]
    if isinstance(small, cst.AnnAssign):
        return [small.target.value]
    return []


def _assigned(arm: list) -> set:
    return {n for stmt in arm for n in _assigned_by(stmt)}


def _read_then_assigned(arm: list) -> set:
    """Names the arm reads before (or without) assigning them and also assigns: inside a local
    function they would be unbound, so they become parameters."""
    assigned_here = _assigned(arm)
    seen: set = set()
    out: set = set()
    for stmt in arm:
        small = stmt.body[0]
        value = small.value
        out |= (variable_names(value) & assigned_here) - seen
        seen |= set(_assigned_by(stmt))
    return out


def _bound_before(info: SourceInfo, ctx: RuleContext, name: str, node: cst.CSTNode) -> bool:
    """A parameter, or a name some statement before node (in source order) binds."""
    params = ctx.fn.params
    if any(p.name.value == name for p in [*params.posonly_params, *params.params, *params.kwonly_params]):
        return True
    stack: list = [ctx.fn.body]
    while stack:
        cur = stack.pop()
        if cur is node:
            continue
        if isinstance(cur, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For)):
            targets = [t.target for t in cur.targets] if isinstance(cur, cst.Assign) else [cur.target]
            if any(name in identifiers(t) for t in targets) and _before(info, cur, node):
                return True
        stack.extend(cur.children)
    return False


def _before(info: SourceInfo, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """a comes before b among the function's statements (by a walk in source order)."""
    order = info.registry.setdefault("cond_order", {})
    key = id(info.module)
    if order.get("key") != key:
        order.clear()
        order["key"] = key
        index = {}
        stack = [info.module]
        n = 0
        while stack:
            cur = stack.pop()
            index[id(cur)] = n
            n += 1
            stack.extend(reversed(list(cur.children)))
        order["index"] = index
    index = order["index"]
    return index.get(id(a), 1 << 60) < index.get(id(b), -1)


def _fresh_value(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """value is a new tensor, never an input or a view of one."""
    if isinstance(value, FRESH_OPERATORS):
        return True
    if isinstance(value, cst.Call):
        func = value.func
        q = ctx.qualname(func) or ""
        last = q.rsplit(".", 1)[-1] if q else (func.attr.value if isinstance(func, cst.Attribute) else "")
        if last in VIEW_FUNCTIONS or not last:
            return False
        if q.startswith("torch.") and not q.startswith("torch.nn."):  # F.dropout(x, training=False) is x
            return True
        # a tensor method that is not a view (`x.relu()`, `x.sum(-1)`)
        return isinstance(func, cst.Attribute) and not q and ctx.is_tensor(func.value) and ctx.self_attr(func.value) is None
    return False


def _last_values(arm: list) -> dict:
    """For each name an arm assigns: the expression last assigned to it whole (None if it comes
    from unpacking)."""
    out: dict = {}
    for stmt in arm:
        small = stmt.body[0]
        if isinstance(small, cst.Assign):
            for t in small.targets:
                if isinstance(t.target, cst.Name):
                    out[t.target.value] = small.value
                else:
                    for n in _targets(t.target):
                        out[n] = None
        elif isinstance(small, cst.AnnAssign):
            out[small.target.value] = small.value
    return out


def _rewrite(info: SourceInfo, positions, ctx: RuleContext, plan: Plan):
    torch, import_edits = torch_reference(info, positions)
    first, last = plan.node[0], plan.node[-1]
    start, end = positions[first].start, positions[last].end
    indent = info.indentation(start.line)
    inner = indent + info.indent_unit
    nl = info.newline
    taken = identifiers(ctx.fn)
    stem = f"{plan.outputs[0]}_" if plan.outputs else ""
    names = [_fresh(f"{stem}if_true", taken), _fresh(f"{stem}if_false", taken)]
    params = ", ".join(plan.operands)
    kept_rows: set = set()
    lines: list = []
    for name, arm in zip(names, plan.arms):
        lines.append(f"{indent}def {name}({params}):")
        body = arm[:-1] if plan.returns else arm
        for stmt in body:
            lines += _statement_lines(info, positions, stmt, inner, kept_rows)
        if plan.returns:
            value = _return_value(arm)
            lines.append(f"{inner}return {_output_text(info, positions, ctx, value)}")
            kept_rows |= set(range(positions[value].start.line, positions[value].end.line + 1))
        else:
            last_values = _last_values(arm)
            outs = []
            for out in plan.outputs:
                value = last_values.get(out, "missing")
                fresh = isinstance(value, cst.BaseExpression) and _fresh_value(value, ctx)
                outs.append(out if fresh else f"{out}.clone()")
            lines.append(f"{inner}return {outs[0] if len(outs) == 1 else ', '.join(outs)}")
    comments = _comments_outside(positions, plan.node, kept_rows, plan.test)
    cond = info.text(positions, plan.test)
    operands = f"({params},)" if plan.operands else "()"
    call = f"{torch}.cond({cond}, {names[0]}, {names[1]}, {operands})"
    if plan.returns:
        result = f"{indent}return {call}"
    else:
        result = f"{indent}{', '.join(plan.outputs)} = {call}"
    text = [f"{indent}{c}" for c in comments] + lines + [result]
    content = nl.join(text)[len(indent) :]
    edit = Edit(content, start.line, start.column + 1, end.line, end.column + 1)
    return make_fix(UNSAFE, f"Replace the branch with `{torch}.cond` over local functions", import_edits + [edit])


def _output_text(info: SourceInfo, positions, ctx: RuleContext, value: cst.BaseExpression) -> str:
    if isinstance(value, cst.Tuple):
        parts = [_output_text(info, positions, ctx, e.value) for e in value.elements]
        return ", ".join(parts) + ("," if len(parts) == 1 else "")
    text = info.text(positions, value)
    if _fresh_value(value, ctx):
        return text
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or getattr(value, "lpar", ()):
        text = f"({text})"
    return f"{text}.clone()"


def _statement_lines(info: SourceInfo, positions, stmt, inner: str, kept_rows: set) -> list:
    """The statement's source lines, re-indented to `inner` (arm statements of an `if` body
    already are; a following `return` is one level less)."""
    rng = positions[stmt]
    first_line = info.line(rng.start.line)
    own = first_line[: len(first_line) - len(first_line.lstrip(" \t"))]
    out = []
    for row in range(rng.start.line, rng.end.line + 1):
        kept_rows.add(row)
        text = info.line(row)
        out.append(inner + text[len(own) :] if text.startswith(own) else text)
    return out


def _comments_outside(positions, nodes: list, kept_rows: set, test) -> list:
    """Comments of the replaced statements that are not on a copied line (the `if` line, `else:`,
    comment lines between statements): they go before the new code."""
    found = []
    for root in nodes:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Comment):
                p = positions[node].start
                if p.line not in kept_rows:
                    found.append((p.line, p.column, node.value))
                continue
            stack.extend(node.children)
    return [v for _, _, v in sorted(found)]

"""DYN120: an `if` on a tensor at the head of an `if` / `elif` / `else` chain whose arms only
assign the same variables or attributes. Unsafe fix: compute the first arm's values, run the rest
of the chain as it was (its tests are Python values), then select with `torch.where`.

    if self.lo.min() > -1e-5 and self.hi.max() < 1e-5:
        self.lo = self.lo + lo
        self.hi = self.hi + hi
    elif self.momentum == -1:
        self.lo = torch.min(self.lo, lo)
        self.hi = torch.max(self.hi, hi)
    else:
        self.lo = self.lo * self.momentum + lo * (1 - self.momentum)
        self.hi = self.hi * self.momentum + hi * (1 - self.momentum)
->
    taken = (self.lo.min() > -1e-5) & (self.hi.max() < 1e-5)
    lo_if_taken = self.lo + lo
    hi_if_taken = self.hi + hi
    if self.momentum == -1:
        ... (the rest of the chain, unchanged)
    self.lo = torch.where(taken, lo_if_taken, self.lo)
    self.hi = torch.where(taken, hi_if_taken, self.hi)

The test and the first arm's values are computed first, from the values the targets had; the
rest of the chain then runs as it was (a lone `else:` arm's body is dedented in place); every arm
assigns every target of the first arm, so each is bound after the chain, and `torch.where` keeps
that value where the tensor test is false. Comments travel with their lines.

Offered only when: the test is a tensor condition or an `and` / `or` of tensor conditions (each a
comparison or a tensor; `and` becomes `&`, `or` becomes `|`; all evaluated, so they must be pure);
every arm is a list of single-target assignments to names or `self.<attr>` with pure values, and
the first arm's values do not read what it assigns earlier; the other tests are pure and not
tensors; each target's values in all arms provably have one shape and dtype (fixes/shapes.py).
Unsafe: the whole chain runs on every call (more work, and the other arms' arithmetic happens even
where the first arm is taken), and gradients flow through `torch.where`.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import variable_names

from .base import atom_text, comments_within, guarded, make_fix, source_info
from .imports import torch_reference
from .purity import pure
from .shapes import same_shape_and_dtype
from .where import definite_tensor_test


# Tests of more operands get no fix (each operand is reported and would walk the whole chain).
MAX_OPERANDS = 8


def chain_select_fix(ctx: RuleContext, reported: cst.BaseExpression, code: str = "DYN120"):
    if ctx.fn is None:
        return None
    info = source_info(ctx.module, ctx.fn)
    node, parent = reported, info.parent(reported)
    for _ in range(MAX_OPERANDS):  # each operand of a long chain would climb it: bounded
        if not isinstance(parent, cst.BooleanOperation):
            break
        node, parent = parent, info.parent(parent)
    if not (isinstance(parent, cst.If) and parent.test is node):
        return None
    stmt = parent
    if isinstance(info.parent(stmt), cst.If):
        return None  # an `elif` itself: its test only runs when the ones before are false
    operands = _operands(stmt.test)
    if operands is None or not all(_tensor_condition(o, ctx) and pure(o, ctx) for o in operands):
        return None
    first = _assignments(stmt.body)
    if not first:
        return None
    targets = [_target_key(a) for a in first]
    if None in targets or len(set(targets)) != len(targets):
        return None
    # The first arm's values are computed together, before the chain: none may read a target.
    if any(_reads(a.value, targets[:i]) for i, a in enumerate(first)):
        return None
    if not all(pure(a.value, ctx) for a in first):
        return None
    rest = _rest_arms(stmt.orelse, ctx)
    if not rest:
        return None
    for arm in rest:
        last = {}
        for a in arm:
            key = _target_key(a)
            if key is None or not pure(a.value, ctx):
                return None
            last[key] = a
        if not set(targets) <= set(last):
            return None
        for a, key in zip(first, targets):
            other = last[key]
            # Values computed from names the arm assigned before are not comparable: refuse.
            if _reads(other.value, [_target_key(x) for x in arm[: arm.index(other)]]):
                return None
            if not same_shape_and_dtype(a.value, other.value, ctx):
                return None
    used = variable_names(ctx.fn)
    names = {}
    for key in targets + ["taken"]:
        stem = key.split(".")[-1].lstrip("_") or "value"
        wanted = "taken" if key == "taken" else f"{stem}_if_taken"
        candidate, n = wanted, 2
        while candidate in used or candidate in names.values():
            candidate, n = f"{wanted}_{n}", n + 1
        names[key] = candidate
    def generate(positions, module):
        torch, import_edits = torch_reference(info, positions)
        rng = positions[stmt]
        indent = info.indentation(rng.start.line)
        nl = info.newline
        if isinstance(stmt.test, cst.BooleanOperation):
            joiner = " & " if isinstance(stmt.test.operator, cst.And) else " | "
            condition = joiner.join(atom_text(info, positions, o) for o in operands)
        else:
            condition = info.text(positions, stmt.test)
        # The comment of the `if` line stays on the test's line, the first arm's go above.
        body_start = positions[stmt.body.body[0]].start
        on_if_line = comments_within(positions, stmt, rng.start, body_start)
        head = comments_within(positions, stmt, body_start, positions[stmt.body.body[-1]].end)
        head += [f"{names['taken']} = {condition}" + "".join(f"  {c}" for c in on_if_line)]
        head += [f"{names[key]} = {info.text(positions, a.value)}" for a, key in zip(first, targets)]
        rest = _rest_lines(info, positions, stmt, indent)
        tail = [f"{indent}{key} = {torch}.where({names['taken']}, {names[key]}, {key}){nl}" for key in targets]
        text = "".join(f"{indent}{line}{nl}" for line in head) + "".join(rest) + "".join(tail)
        edit = Edit(text, rng.start.line, 1, rng.end.line + 1, 1)
        return make_fix(
            UNSAFE,
            f"Run the rest of the chain, then select the first arm's values with `{torch}.where` "
            "(every arm is computed on every call)",
            import_edits + [edit],
        )

    return guarded(code, generate)


def _operands(test: cst.BaseExpression) -> Optional[list]:
    """The operands of a chain of one boolean operator (or the test itself)."""
    if not isinstance(test, cst.BooleanOperation):
        return [test]
    op = type(test.operator)
    out, stack = [], [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BooleanOperation) and not node.lpar:
            if type(node.operator) is not op:
                return None
            stack += [node.right, node.left]
        elif isinstance(node, (cst.BooleanOperation, cst.UnaryOperation)):
            return None
        else:
            out.append(node)
    return out


def _tensor_condition(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    if isinstance(node, cst.Comparison):
        return len(node.comparisons) == 1 and definite_tensor_test(node, ctx)
    return definite_tensor_test(node, ctx) and ctx.is_tensor(node)


def _assignments(block: cst.BaseSuite) -> Optional[list]:
    """The single-target assignments an indented block consists of, else None."""
    if not isinstance(block, cst.IndentedBlock):
        return None
    out = []
    for stmt in block.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        for small in stmt.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
                return None
            out.append(small)
    return out


def _target_key(assign: cst.Assign) -> Optional[str]:
    target = assign.targets[0].target
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        return f"self.{target.attr.value}"
    return None


def _reads(node: cst.CSTNode, keys) -> bool:
    keys = set(k for k in keys if k)
    for n in iter_nodes(node):
        if isinstance(n, cst.Name) and n.value in keys:
            return True
        if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self" and f"self.{n.attr.value}" in keys:
            return True
    return False


def _rest_arms(orelse, ctx: RuleContext) -> Optional[list]:
    """Each remaining arm's assignments; the `elif` tests must be pure Python values."""
    blocks = []
    while isinstance(orelse, cst.If):
        if ctx.is_tensor(orelse.test) or not pure(orelse.test, ctx):
            return None
        blocks.append(orelse.body)
        orelse = orelse.orelse
    if orelse is None:
        return None  # no final `else`: a target may keep no value at all
    arms = [_assignments(block) for block in blocks + [orelse.body]]
    return arms if all(arms) else None


def _rest_lines(info, positions, stmt: cst.If, indent: str) -> list:
    """The lines after the first arm, as statements of their own: `elif c:` becomes `if c:`; a
    final `else:` arm's body (the only other arm) is dedented to the `if`'s column. Comment lines
    between the arms travel with them."""
    after = positions[stmt.body.body[-1]].end.line + 1
    end = positions[stmt].end.line
    lines = [line if line.endswith(("\n", "\r")) else line + info.newline for line in info.lines[after - 1 : end]]
    orelse = stmt.orelse
    row = positions[orelse].start.line - after
    if isinstance(orelse, cst.If):
        col = positions[orelse].start.column
        if lines[row][col : col + 4] != "elif":
            raise ValueError("elif not where expected")
        lines[row] = lines[row][:col] + lines[row][col + 2 :]
        return lines
    # `else:` alone: drop its line, dedent its body by the difference of the two indents.
    if lines[row].strip() != "else:":
        raise ValueError("else line with more on it")
    body = lines[row + 1 :]
    inner = info.indentation(positions[orelse.body.body[0]].start.line)
    if not inner.startswith(indent) or inner == indent:
        raise ValueError("unexpected indentation")
    cut = len(inner) - len(indent)
    out = lines[:row]
    for line in body:
        if line.strip() and not line.startswith(inner[: len(indent) + cut]):
            raise ValueError("a line of the else arm is indented less than its block")
        out.append(line[cut:] if line.strip() else line)
    return out

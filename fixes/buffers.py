"""DYN142: `self.buf = self.buf.to(...)` on an `nn.Buffer` in forward. Unsafe fix: convert into a
local variable and read that for the rest of the function, so the module is not re-registered.

    self.pos_encoding = self.pos_encoding.to(dtype=x.dtype)      pos_encoding = self.pos_encoding.to(dtype=x.dtype)
    pos = self.pos_encoding[ids]                           ->    pos = pos_encoding[ids]

This call's outputs are the same. What changes: the module keeps the unconverted buffer, so the
conversion runs on every call (a copy when it really converts: move the model once instead), and
code outside this function that reads the attribute sees the old tensor. Offered only when the
assignment is a statement of the function's own body (not in a loop or branch), the function
neither stores the attribute again nor reads it in a nested function, and no other method of the
class reads it (a subclass elsewhere may: hence unsafe).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import variable_names

from .base import guarded, make_fix, replace_node, source_info

_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def _self_attr(node: cst.CSTNode, attr: str) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == attr
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    )


def _attr_nodes(root: cst.CSTNode, attr: str, skip_scopes: bool):
    """`self.<attr>` nodes under root; (nodes, found one inside a nested scope)."""
    found, nested = [], False
    stack = [(root, False)]
    while stack:
        node, inside = stack.pop()
        if _self_attr(node, attr):
            if inside:
                nested = True
            found.append(node)
            continue
        deeper = inside or (skip_scopes and node is not root and isinstance(node, _SCOPES))
        stack.extend((child, deeper) for child in node.children)
    return found, nested


def buffer_local_fix(ctx: RuleContext, assign: cst.Assign, attr: str, code: str = "DYN142"):
    if len(assign.targets) != 1:
        return None
    fn = ctx.fn
    info = source_info(ctx.module, fn)
    stmt = info.parent(assign)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    statements = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []
    index = next((i for i, s in enumerate(statements) if s is stmt), None)
    if index is None:
        return None  # in a loop or a branch: later reads may see either tensor
    later = statements[index + 1 :]
    reads = []
    for s in later:
        nodes, nested = _attr_nodes(s, attr, skip_scopes=True)
        if nested:
            return None  # a closure may run after the function returned
        reads += nodes
    if not reads or _stores_attr(fn, attr, assign) or _other_methods_read(info, fn, attr):
        return None
    local = _free_name(fn, attr)
    if local is None:
        return None

    def generate(positions, module):
        edits = [replace_node(positions, assign.targets[0].target, local)]
        edits += [replace_node(positions, r, local) for r in reads]
        return make_fix(
            UNSAFE,
            f"Convert into a local `{local}` instead of re-assigning the buffer (runs on every call; "
            "the module keeps the unconverted buffer)",
            edits,
        )

    return guarded(code, generate)


def store_targets(root: cst.CSTNode):
    """The assignment, deletion and loop targets under root."""
    for node in iter_nodes(root):
        if isinstance(node, cst.Assign):
            yield node, [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.Del, cst.For, cst.CompFor)):
            yield node, [node.target]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            yield node, [node.asname.name]


def _stores_attr(fn: cst.FunctionDef, attr: str, assign: cst.Assign) -> bool:
    """fn stores or deletes `self.<attr>` anywhere but in `assign`."""
    return any(
        node is not assign and any(_self_attr(t, attr) for t in targets) for node, targets in store_targets(fn)
    )


def _other_methods_read(info, fn: cst.FunctionDef, attr: str) -> bool:
    """Another function of fn's class reads `self.<attr>` (it may run after this call)."""
    block = info.parent(fn)
    cls = info.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(cls, cst.ClassDef):
        return True  # not a method: who else reads it is unknown
    for other in iter_nodes(cls.body):
        if other is fn or not isinstance(other, cst.FunctionDef):
            continue
        stored = {id(t) for node, targets in store_targets(other) if not isinstance(node, cst.AugAssign) for t in targets}
        if any(id(n) not in stored for n in _attr_nodes(other, attr, skip_scopes=False)[0]):
            return True
    return False


def _free_name(fn: cst.FunctionDef, attr: str) -> Optional[str]:
    used = variable_names(fn)  # parameter names included
    for candidate in (attr.lstrip("_") or attr, f"{attr.lstrip('_')}_local"):
        if candidate.isidentifier() and candidate not in used:
            return candidate
    return None

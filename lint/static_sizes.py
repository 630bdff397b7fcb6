"""Sizes Dynamo keeps static: those of parameters and buffers (its defaults
force_parameter_static_shapes and force_nn_module_property_static_shapes), and of tensors computed
only from them (peft's BOFT: `b = torch.bmm(self.boft_R, self.boft_P.permute(0, 2, 1))`, then
`for i in range(1, b.shape[0])`). A test or loop on such a size adds no guard that a new input
could fail, so DYN201 and DYN202 leave it alone."""

from __future__ import annotations

import libcst as cst

from .fastcst import iter_nodes
from .rule import RuleContext

_LITERALS = (cst.Integer, cst.Float, cst.SimpleString)
_NAME_CONSTANTS = frozenset({"True", "False", "None"})
_VALUE_SIZED = frozenset({
    "nonzero", "masked_select", "argwhere", "bincount", "unique", "unique_consecutive", "repeat_interleave",
})


def _is_constant(node: cst.BaseExpression) -> bool:
    t = type(node)
    if t in _LITERALS:
        return True
    if t is cst.Name:
        return node.value in _NAME_CONSTANTS
    if t is cst.UnaryOperation:
        return _is_constant(node.expression)
    if t in (cst.Tuple, cst.List):
        return all(_is_constant(e.value) for e in node.elements)
    return False


def _index_is_plain(node: cst.Subscript, ctx: RuleContext, static: set) -> bool:
    """`b[0]`, `b[i]` (i no tensor), `b[:, 1:]`: the result's size follows from b's."""
    for el in node.slice:
        s = el.slice
        if type(s) is cst.Slice:
            parts = [p for p in (s.lower, s.upper, s.step) if p is not None]
        else:
            parts = [s.value]
        for p in parts:
            if not (_is_constant(p) or static_size(p, ctx, static) or (type(p) is cst.Name and not ctx.is_tensor(p))):
                return False
    return True


def _module_tensor(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    attr = ctx.self_attr(node)
    return attr is not None and attr in ctx.tensor_attrs


def static_tensor(node: cst.BaseExpression, ctx: RuleContext, static: set) -> bool:
    """A parameter or buffer of the module, a name bound only to such tensors (`static`), or an
    expression of them and constants: torch functions, tensor methods, arithmetic, indexing."""
    t = type(node)
    if t is cst.Name:
        return node.value in static
    if t is cst.Attribute:
        if _module_tensor(node, ctx):
            return True
        return node.attr.value in ("T", "mT", "H", "mH") and static_tensor(node.value, ctx, static)
    if t is cst.Subscript:
        return static_tensor(node.value, ctx, static) and _index_is_plain(node, ctx, static)
    if t is cst.BinaryOperation:
        sides = (node.left, node.right)
        return any(static_tensor(s, ctx, static) for s in sides) and all(
            static_tensor(s, ctx, static) or _is_constant(s) for s in sides
        )
    if t is cst.UnaryOperation:
        return static_tensor(node.expression, ctx, static)
    if t is cst.Call:
        func = node.func
        name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
        if name in _VALUE_SIZED or (name == "where" and len(node.args) == 1):
            return False  # sizes that follow from the values (DYN130's operators)
        operands = [a.value for a in node.args]
        if type(func) is cst.Attribute and static_tensor(func.value, ctx, static):
            pass  # a method of a static tensor
        else:
            if not (ctx.qualname(func) or "").startswith("torch.") or not operands:
                return False
            if not static_tensor(operands[0], ctx, static) and not (
                type(operands[0]) in (cst.List, cst.Tuple) and operands[0].elements
                and all(static_tensor(e.value, ctx, static) for e in operands[0].elements)
            ):
                return False
            operands = operands[1:]
        return all(static_tensor(o, ctx, static) or _is_constant(o) or static_size(o, ctx, static) for o in operands)
    return False


def static_size(node: cst.BaseExpression, ctx: RuleContext, static: set) -> bool:
    """`t.shape`, `t.shape[0]`, `t.size(1)`, `t.ndim`, `len(t)` of a static tensor, a name bound
    only to such sizes (in `static` too), or arithmetic of them and ints."""
    t = type(node)
    if t is cst.Name:
        return node.value in static
    if t is cst.Integer:
        return True
    if t is cst.BinaryOperation:
        sides = (node.left, node.right)
        return any(type(s) is not cst.Integer for s in sides) and all(static_size(s, ctx, static) for s in sides)
    while type(node) is cst.Subscript:
        node = node.value
    if type(node) is cst.Attribute and node.attr.value in ("shape", "ndim"):
        return static_tensor(node.value, ctx, static)
    if type(node) is cst.Call:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in ("size", "dim"):
            return static_tensor(func.value, ctx, static)
        if type(func) is cst.Name and func.value == "len" and len(node.args) == 1:
            return static_tensor(node.args[0].value, ctx, static)
    return False


def static_names(ctx: RuleContext) -> set:
    """Names the walked function binds only to static tensors or static sizes (each `=` binding
    them; names bound any other way, by a loop, `+=` or a parameter, are left out), worked out
    once per function."""
    state = ctx.rule_state("static-sizes")
    if state.get("fn") is ctx.fn:
        return state["names"]
    bindings: dict[str, list] = {}
    other: set[str] = set()
    for node in iter_nodes(ctx.fn.body):
        t = type(node)
        if t is cst.Assign:
            for target in node.targets:
                tt = target.target
                if type(tt) is cst.Name:
                    bindings.setdefault(tt.value, []).append(node.value)
                elif type(tt) in (cst.Tuple, cst.List) and all(type(e.value) is cst.Name for e in tt.elements):
                    # `sa, sm = self.sha.shape`: each a size when the right side is a static shape
                    for e in tt.elements:
                        bindings.setdefault(e.value.value, []).append(
                            node.value if type(node.value) is cst.Attribute and node.value.attr.value == "shape" else None
                        )
                else:
                    other.update(n.value for n in iter_nodes(tt) if type(n) is cst.Name)
        elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr):
            other.update(n.value for n in iter_nodes(node.target) if type(n) is cst.Name)
        elif t is cst.Param:
            other.add(node.name.value)
    static: set[str] = set()
    changed = True
    while changed:  # names defined from other static names: a few rounds at most
        changed = False
        for name, values in bindings.items():
            if name in static or name in other:
                continue
            if all(v is not None and (static_tensor(v, ctx, static) or static_size(v, ctx, static)) for v in values):
                static.add(name)
                changed = True
    state["fn"], state["names"] = ctx.fn, static
    return static

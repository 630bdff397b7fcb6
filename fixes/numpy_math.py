"""DYN106: NumPy math on Python numbers -> `math` / builtins. Unsafe fix:

    np.lcm(a, b) -> math.lcm(a, b)      np.gcd(a, b) -> math.gcd(a, b)
    np.prod(seq) -> math.prod(seq)      np.sum(seq)  -> sum(seq)

adding `import math` when the file has none. Same values on Python ints and sequences of them;
the result is a Python number instead of a NumPy scalar, which is what lets Dynamo keep it a
constant.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, make_fix, replace_node, source_info
from .imports import bound_module_name, import_module_edit
from .variables import variable_reads

# numpy function -> its Python equivalent on Python numbers, and how many positional arguments.
MATH_EQUIVALENT = {"lcm": "math.lcm", "gcd": "math.gcd", "prod": "math.prod", "sum": "sum"}
_ARITY = {"lcm": 2, "gcd": 2, "prod": 1, "sum": 1}

# Callables whose arguments must be Python numbers (sizes, counts, ranges).
NUMBER_TAKERS = frozenset({"range", "int", "float", "bool", "len", "divmod", "round"})
SIZE_FUNCS = frozenset({"zeros", "ones", "empty", "full", "arange", "eye", "randn", "rand", "randint", "linspace", "tile"})
SIZE_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "new_full", "narrow", "split",
     "chunk", "unflatten", "tile", "resize_", "index_select"}
)


def python_values(call: cst.Call, name: str, ctx: RuleContext) -> bool:
    """Are the call's arguments plain Python values by all the linter knows (no tensor, no NumPy
    array), in the shape the Python equivalent takes?"""
    args = call.args
    if len(args) != _ARITY[name] or any(a.keyword is not None or a.star for a in args):
        return False
    for a in args:
        values = [a.value]
        if isinstance(a.value, (cst.List, cst.Tuple)):
            if any(isinstance(e, cst.StarredElement) for e in a.value.elements):
                return False
            values += [e.value for e in a.value.elements]
        for v in values:
            if ctx.is_tensor(v) or ctx.is_numpy(v):
                return False
    return True


def _climb(info, ctx: RuleContext, node: cst.CSTNode) -> cst.CSTNode:
    """Up through arithmetic on non-tensors and through tuple/list elements."""
    cur = node
    while True:
        parent = info.parent(cur)
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if parent.left is cur else parent.left
            if ctx.is_tensor(other):
                return cur
            cur = parent
        elif isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, (cst.Minus, cst.Plus)):
            cur = parent
        elif isinstance(parent, cst.Element) and isinstance(info.parent(parent), (cst.Tuple, cst.List)):
            cur = info.parent(parent)
        else:
            return cur


def _used_as_number(info, ctx: RuleContext, node: cst.CSTNode, depth: int = 0) -> bool:
    top = _climb(info, ctx, node)
    parent = info.parent(top)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.Index, cst.Slice)):
        return True
    if isinstance(parent, (cst.If, cst.While)) and parent.test is top:
        return True
    if isinstance(parent, cst.IfExp) and parent.test is top:
        return True
    if isinstance(parent, cst.Return):
        return True
    if isinstance(parent, cst.Arg):
        call = info.parent(parent)
        if isinstance(call, cst.Call) and parent in call.args:
            q = ctx.call_name(call) or ""
            last = q.rsplit(".", 1)[-1]
            if q in NUMBER_TAKERS or (q.startswith(("torch.", "numpy.")) and last in SIZE_FUNCS and q.count(".") == 1):
                return True
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in SIZE_METHODS and ctx.is_tensor(func.value):
                return True
        return False
    if isinstance(parent, cst.Assign) and parent.value is top and depth < 2 and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name):
            return any(_used_as_number(info, ctx, use, depth + 1) for use in variable_reads(ctx.fn, target.value, skip=[target]))
    return False


def number_use(call: cst.Call, ctx: RuleContext) -> bool:
    info = source_info(ctx.module, ctx.fn)
    return _used_as_number(info, ctx, call)


def numpy_math_fix(ctx: RuleContext, call: cst.Call, name: str, code: str = "DYN106"):
    info = source_info(ctx.module, ctx.fn)
    return guarded(code, lambda positions, module: _fix(info, positions, call, name))


def _fix(info, positions, call: cst.Call, name: str) -> Optional[object]:
    replacement = MATH_EQUIVALENT[name]
    edits = []
    if replacement.startswith("math."):
        local = bound_module_name(info.module, "math")
        if local is None:
            edits.append(import_module_edit(info, positions, "math"))
            local = "math"
        replacement = f"{local}.{replacement.split('.', 1)[1]}"
    edits.append(replace_node(positions, call.func, replacement))
    what = MATH_EQUIVALENT[name]
    return make_fix(UNSAFE, f"Use `{what}()` on Python numbers (a constant while compiling)", edits)

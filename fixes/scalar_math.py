"""DYN110: a tensor built from a Python number only to do math on it and read it back becomes
Python math. Unsafe fix.

    2 ** float(torch.tensor(approx_scale).log2().round())         ->  2 ** float(round(math.log2(approx_scale)))
    -torch.log2(torch.tensor(s, dtype=torch.float32)).item()       ->  -math.log2(s)

Reading the tensor back (`.item()`, `float()`, `int()`) is the graph break; Python math on
numbers Dynamo knows is folded while tracing. Offered when the whole value is a chain of
`torch.tensor(number)` (or `torch.as_tensor` / `torch.scalar_tensor`; dtype float32, float64 or
none, no `requires_grad`), unary functions with a Python counterpart (log, log2, log10, exp, sqrt,
abs, neg, round, floor, ceil, trunc, as methods or `torch.` functions) and arithmetic with
numbers. The number must not be a tensor (the lint's kinds say so) nor a list.

Unsafe: torch computes in float32 where Python uses float64, so the last bits may differ (a
`round`, `floor` or `ceil` on top almost always hides that); `round` / `floor` / `ceil` /
`trunc` give a Python int where `.item()` of a float tensor gives a float with the same value.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import atom_text, guarded, make_fix, replace_node, source_info
from .imports import bound_module_name, import_module_edit

# torch function / tensor method -> (Python function, needs `math.`)
FUNCTIONS = {
    "log": ("log", True),
    "log2": ("log2", True),
    "log10": ("log10", True),
    "exp": ("exp", True),
    "sqrt": ("sqrt", True),
    "floor": ("floor", True),
    "ceil": ("ceil", True),
    "trunc": ("trunc", True),
    "abs": ("abs", False),
    "round": ("round", False),
}
FACTORIES = ("torch.tensor", "torch.as_tensor", "torch.scalar_tensor")
FLOAT_DTYPES = ("torch.float32", "torch.float", "torch.float64", "torch.double")
ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)


def python_math_fix(ctx: RuleContext, call: cst.Call, code: str = "DYN110"):
    """call: `E.item()`, `float(E)` or `int(E)`; E rebuilt as Python math, or no fix."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "item":
        value, replaced = call.func.value, call
    elif isinstance(call.func, cst.Name) and call.func.value in ("float", "int") and len(call.args) == 1:
        value, replaced = call.args[0].value, call.args[0].value
    else:
        return None
    plan = _plan(ctx, value)
    if plan is None or not plan["factories"]:
        return None
    info = source_info(ctx.module, ctx.fn)

    def generate(positions, module):
        local = bound_module_name(info.module, "math")
        edits = []
        if local is None and plan["needs_math"]:
            local = "math"
            edits.append(import_module_edit(info, positions, "math"))
        text = _render(info, positions, value, plan["calls"], local or "math")
        return make_fix(UNSAFE, "Do the math in Python instead of on a one-number tensor", edits + [replace_node(positions, replaced, text)])

    return guarded(code, generate)


def _plan(ctx: RuleContext, node: cst.BaseExpression) -> Optional[dict]:
    """What each call of node is, by id: ("factory", its number) or (function, operand); None
    when node is not all numbers, factories, listed functions and arithmetic."""
    plan = {"factories": 0, "needs_math": False, "calls": {}}

    def walk(n) -> bool:
        if isinstance(n, (cst.Integer, cst.Float)):
            return True
        if isinstance(n, cst.UnaryOperation) and isinstance(n.operator, (cst.Minus, cst.Plus)):
            return walk(n.expression)
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, ARITHMETIC):
            return walk(n.left) and walk(n.right)
        if not isinstance(n, cst.Call) or any(a.star for a in n.args):
            return False
        name = ctx.call_name(n) or ""
        if name in FACTORIES:
            if not _number_factory(ctx, n):
                return False
            plan["factories"] += 1
            plan["calls"][id(n)] = ("factory", next(a.value for a in n.args if a.keyword is None))
            return True
        if name.startswith("torch.") and name[6:] in FUNCTIONS and len(n.args) == 1 and n.args[0].keyword is None:
            func, operand = name[6:], n.args[0].value  # torch.log2(x)
        elif isinstance(n.func, cst.Attribute) and n.func.attr.value in (*FUNCTIONS, "neg") and not n.args:
            func, operand = n.func.attr.value, n.func.value  # x.log2(), x.neg()
        else:
            return False
        plan["needs_math"] |= func != "neg" and FUNCTIONS[func][1]
        plan["calls"][id(n)] = (func, operand)
        return walk(operand)

    return plan if walk(node) else None


def _number_factory(ctx: RuleContext, call: cst.Call) -> bool:
    positional = [a for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if len(positional) != 1 or set(keywords) - {"dtype", "device"}:
        return False
    if "dtype" in keywords and (ctx.qualname(keywords["dtype"]) or "") not in FLOAT_DTYPES:
        return False
    number = positional[0].value
    if isinstance(number, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Set, cst.Dict)):
        return False
    return not ctx.is_tensor(number) and not ctx.is_numpy(number)


def _render(info, positions, n, calls: dict, math: str) -> str:
    """Python text for n (calls: `_plan`'s); operands of operators are parenthesised unless atomic."""
    if isinstance(n, (cst.Integer, cst.Float)):
        return info.text(positions, n)
    if isinstance(n, cst.UnaryOperation):
        return ("-" if isinstance(n.operator, cst.Minus) else "+") + _operand(info, positions, n.expression, calls, math)
    if isinstance(n, cst.BinaryOperation):
        op = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.Power: "**"}[type(n.operator)]
        return f"{_operand(info, positions, n.left, calls, math)} {op} {_operand(info, positions, n.right, calls, math)}"
    func, operand = calls[id(n)]
    if func == "factory":
        return info.text(positions, operand)
    if func == "neg":
        return "-" + _operand(info, positions, operand, calls, math)
    name, in_math = FUNCTIONS[func]
    return f"{math + '.' if in_math else ''}{name}({_render(info, positions, operand, calls, math)})"


ATOMS = (cst.Name, cst.Attribute, cst.Subscript, cst.Integer, cst.Float, cst.Call)


def _operand(info, positions, n, calls: dict, math: str) -> str:
    """n's text as an operand: parenthesised unless it renders to an atom or a call (`-x` and a
    factory's non-atomic number, `torch.tensor(a - b)`, are not)."""
    text = _render(info, positions, n, calls, math)
    if isinstance(n, (cst.BinaryOperation, cst.UnaryOperation)):
        return f"({text})"
    if isinstance(n, cst.Call):
        func, operand = calls[id(n)]
        if func == "neg" or func == "factory" and not isinstance(operand, ATOMS):
            return f"({text})"
    return text

"""DYN145: a custom `autograd.Function` whose `forward` / `backward` are classmethods.

## What it does
Finds `MyFunction.apply(...)` in compiled code, where `MyFunction` is a `torch.autograd.Function`
subclass of the same file whose `forward` or `backward` is decorated `@classmethod` instead of
`@staticmethod` (the entmax / sparsemax implementations copied into many packages:
pytorch-tabular's `Entmax15Function`).

## Why it breaks the graph
With gradients on (a model's parameters in train mode), Dynamo traces a custom Function's
forward and backward as a higher-order operator, and it binds the arguments of a classmethod
wrongly ("Argument mismatch when attempting to trace function forward"): on torch 2.13 the graph
breaks at every `.apply` (in a loop Dynamo skips the whole frame: pytorch-tabular's DANet, 9
graphs), on 2.14.1 Dynamo gives up on the calling function and runs it eagerly ("Failed to
handle graph break gracefully"; `explain` counts no break there, its log does). The same
Function with `@staticmethod` traces (probed on both).

## Example
```python
class Entmax15Function(Function):
    @classmethod
    def forward(cls, ctx, X, dim=0, k=None):
        ...
```

## Use instead
`@staticmethod`, with the `cls` parameter dropped, as PyTorch documents custom Functions.

## Fix (safe)
Where the method never reads `cls`, the autofix writes `@staticmethod` and drops the parameter:
`Function.apply` calls `forward(ctx, *args)` either way, so the program is the same. A method that
reads `cls`, or calls a zero-argument `super()` (which needs it), is reported without a fix.
"""

from typing import Optional

import libcst as cst

from ..fastcst import iter_nodes
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix
from .dyn141_autograd_function_duplicate_input import applied_function


def classmethod_methods(module: cst.Module, qualname: str) -> list:
    """`forward` / `backward` of the file's top-level class `qualname` decorated `@classmethod`."""
    name = qualname.rsplit(".", 1)[-1]
    for stmt in module.body:
        if type(stmt) is cst.ClassDef and stmt.name.value == name and type(stmt.body) is cst.IndentedBlock:
            return [
                s for s in stmt.body.body
                if type(s) is cst.FunctionDef and s.name.value in ("forward", "backward")
                and any(type(d.decorator) is cst.Name and d.decorator.value == "classmethod" for d in s.decorators)
            ]
    return []


def reads_first_parameter(fn: cst.FunctionDef) -> Optional[bool]:
    """Does the method's body read its first parameter (`cls`)? None when it has none. A
    zero-argument `super()` reads it too (with the `__class__` cell): entmax's losses'
    `return super().forward(ctx, X, ...)` fails in a staticmethod."""
    params = fn.params.params
    if not params:
        return None
    first = params[0].name.value
    return any(type(n) is cst.Name and n.value == first for n in iter_nodes(fn.body)) or calls_bare_super(fn)


def calls_bare_super(fn: cst.FunctionDef) -> bool:
    return any(
        (type(n) is cst.Call and type(n.func) is cst.Name and n.func.value == "super" and not n.args)
        or (type(n) is cst.Name and n.value == "__class__")
        for n in iter_nodes(fn.body)
    )


class AutogradFunctionClassmethod(Rule):
    code = "DYN145"
    name = "autograd-function-classmethod"
    summary = "custom autograd.Function with classmethod forward/backward breaks the graph"
    fixable = "safe"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB7312", "failed to bind arguments when attempting to inline"),
    )  # torch 2.14.1 gives GB0088 ("Failed to handle graph break gracefully"), another type on 2.13
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        owner = applied_function(node, ctx)
        if owner is None:
            return
        methods = classmethod_methods(ctx.module, owner)
        if not methods:
            return
        names = " and ".join(f"`{m.name.value}`" for m in methods)
        if any(calls_bare_super(m) for m in methods):
            # entmax's losses: measured, an internal error with gradients off too
            message = (f"`{owner.rsplit('.', 1)[-1]}` declares {names} with `@classmethod` and calls `super()` there: "
                       "Dynamo fails on `.apply` (an internal error, with gradients on or off); make them "
                       "`@staticmethod` and call the base's method by name (`Base.forward(ctx, ...)`)")
        else:
            message = (f"`{owner.rsplit('.', 1)[-1]}` declares {names} with `@classmethod`: Dynamo cannot bind its "
                       "arguments and breaks the graph at `.apply` with gradients on; use `@staticmethod`")
        ctx.report(self, node, message, fix=offer_fix("function_staticmethod", ctx, methods, self.code))

    _source = """
            import torch

            class Double(torch.autograd.Function):
                @{kind}
                def forward({first}ctx, x, dim=-1):
                    ctx.save_for_backward(x)
                    return x.clamp(min=0) * 2

                @{kind}
                def backward({first}ctx, g):
                    (x,) = ctx.saved_tensors
                    return g * 2 * (x > 0), None

            @torch.compile
            def f(x):
                return Double.apply(x, -1) + 1{mark}
            """
    _grad_input = "(torch.randn(4, requires_grad=True),)"
    _broken = Example(
        _source.format(kind="classmethod", first="cls, ", mark="  # expect: DYN145"),
        dynamo=BREAKS, inputs=_grad_input,
        fixed=_source.format(kind="staticmethod", first="", mark="  # expect: DYN145"),
    )
    invalid = (_broken,)
    valid = (Example(_source.format(kind="staticmethod", first="", mark=""), dynamo=CLEAN, inputs=_grad_input),)


RULE = AutogradFunctionClassmethod

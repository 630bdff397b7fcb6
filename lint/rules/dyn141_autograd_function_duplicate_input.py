"""DYN141: the same tensor passed twice to a custom `autograd.Function`.

## What it does
Finds `MyFunction.apply(a, a, ...)` in compiled code, where `MyFunction` is a
`torch.autograd.Function` subclass of the same file and one tensor variable is passed as two
of its arguments.

## Why it breaks the graph
Dynamo traces a custom autograd.Function's forward and backward into the graph, but not when
one tensor is two of its inputs and gradients are on: it breaks with "autograd.Function.apply:
duplicate tensor input" (in a model's forward, parameters make gradients on). Under
`torch.no_grad()` the same call traces.

## Example
```python
context = YosoCumulation.apply(attention_mask, attention_mask, query, key, value, config)
```

## Use instead
Pass a copy as the second argument, `Fn.apply(mask, mask.clone(), ...)`: a different tensor
with the same values, and gradients still reach `mask` through both. Or change the Function to
take the tensor once.

## Fix (unsafe)
Appends `.clone()` to the second occurrence. The values and the gradients that reach the tensor
are the same; the call makes one more copy, and a Function that compares its inputs by identity
or modifies one in place sees two tensors (no fix is offered in a file that calls
`ctx.mark_dirty`).
"""

from typing import Optional

import libcst as cst

from ..nodes import dotted
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

FUNCTION_BASES = frozenset(
    {"torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction"}
)


def is_autograd_function(classes: dict, qualname: str) -> bool:
    """qualname is a class of this file deriving from torch.autograd.Function (through other
    classes of the file too)."""
    seen = set()
    todo = [qualname]
    while todo:
        name = todo.pop()
        info = classes.get(name)
        if info is None or name in seen:
            continue
        seen.add(name)
        if FUNCTION_BASES.intersection(info.bases):
            return True
        todo.extend(info.bases)
    return False


def applied_function(node: cst.Call, ctx: RuleContext) -> Optional[str]:
    """The class of `MyFunction.apply(...)` when it is a custom autograd.Function of this file."""
    func = node.func
    if not (type(func) is cst.Attribute and func.attr.value == "apply"):
        return None
    owner = ctx.qualname(func.value)
    return owner if owner is not None and is_autograd_function(ctx.file_classes, owner) else None


class AutogradFunctionDuplicateInput(Rule):
    code = "DYN141"
    name = "autograd-function-duplicate-input"
    summary = "one tensor passed twice to a custom autograd.Function breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB6297", "autograd.Function.apply: duplicate tensor input"),
    )
    node_types = (cst.Call,)
    fixable = "unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        if applied_function(node, ctx) is None:
            return
        func = node.func
        seen = set()
        for arg in node.args:
            if arg.keyword is not None or arg.star:
                continue
            name = dotted(arg.value)
            if name is None or not ctx.is_tensor(arg.value):
                continue
            if name in seen:
                ctx.report(
                    self,
                    node,
                    f"`{name}` is passed twice to `{dotted(func)}()`: a custom autograd.Function with a duplicate tensor input breaks the graph; pass `{name}.clone()` the second time",
                    fix=offer_fix("duplicate_input", ctx, arg, self.code),
                )
                return
            seen.add(name)

    invalid = (
        Example(
            """
            import torch
            from torch import nn


            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b

                @staticmethod
                def backward(ctx, grad):
                    a, b = ctx.saved_tensors
                    return grad * b, grad * a


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    return Scale.apply(h, h)  # expect: DYN141
            """,
            dynamo=BREAKS,
            fixed="""
            import torch
            from torch import nn


            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b

                @staticmethod
                def backward(ctx, grad):
                    a, b = ctx.saved_tensors
                    return grad * b, grad * a


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    return Scale.apply(h, h.clone())  # expect: DYN141
            """,
        ),
        Example(
            """
            from torch import nn
            from torch.autograd import Function


            class Gate(Function):
                @staticmethod
                def forward(ctx, mask, other, x):
                    return x * mask * other

                @staticmethod
                def backward(ctx, grad):
                    return None, None, grad


            class MaskedGate(Gate):
                pass


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    mask = (x > 0).float()
                    return MaskedGate.apply(mask, mask, self.proj(x))  # expect: DYN141
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            """
            import torch
            from torch import nn


            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b

                @staticmethod
                def backward(ctx, grad):
                    a, b = ctx.saved_tensors
                    return grad * b, grad * a


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    return Scale.apply(h, h.clone()) + Scale.apply(h, x)
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn


            class Pair:
                @staticmethod
                def apply(a, b):
                    return a + b


            class M(nn.Module):
                def forward(self, x, scale: float = 2.0):
                    return Pair.apply(x, x) * scale
            """,
            dynamo=CLEAN,
        ),
    )


RULE = AutogradFunctionDuplicateInput

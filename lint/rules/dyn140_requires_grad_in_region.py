"""DYN140: creating a new leaf parameter (`nn.Parameter`, `.requires_grad_()`) in compiled code.

## What it does
Finds `nn.Parameter(...)`, `.requires_grad_()` calls and `t.requires_grad = True` assignments in
a compile region. (Factory calls
with `requires_grad=True` are traced by current Dynamo and are not reported.)

## Why it breaks the graph
A new leaf that needs gradients cannot be created inside a traced graph: AOTAutograd would have
to treat it as a graph input. Dynamo breaks ("Attempted to use `torch.nn.Parameter()`
constructor with Dynamo", "requires_grad_() intermediate leaked as output").

## Example
```python
def forward(self, x):
    w = nn.Parameter(torch.ones(x.shape[-1]))
    return x * w
```

## Use instead
Create parameters in `__init__` (`self.w = nn.Parameter(torch.ones(n))`) and use them in forward.
A fresh tensor that needs gradients can be made with the factory's `requires_grad=` argument,
which Dynamo traces: the safe autofix rewrites `t = torch.zeros(...)` followed by
`t.requires_grad = True` (or `if cond: t.requires_grad = True`, T5-style position biases under
gradient checkpointing) into `torch.zeros(..., requires_grad=True)` (`requires_grad=bool(cond)`).
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix


class RequiresGradInRegion(Rule):
    code = "DYN140"
    name = "parameter-created-in-region"
    summary = "New `nn.Parameter` / `requires_grad_()` in compiled code"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0206", "setattr() on Tensor.requires_grad"),
        ("GB0264", "Attempted to use `torch.nn.Parameter()` constructor with Dynamo"),
        ("GB8985", "requires_grad_() intermediate leaked as output"),
    )
    node_types = (cst.Call, cst.Assign)
    fixable = "safe"

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Assign:
            for t in node.targets:
                tgt = t.target
                if type(tgt) is cst.Attribute and tgt.attr.value == "requires_grad" and ctx.is_tensor(tgt.value):
                    ctx.report(
                        self,
                        node,
                        "setting `.requires_grad` in compiled code breaks the graph; create the tensor with "
                        "`requires_grad=` (traced) or set it before calling the compiled model",
                        fix=offer_fix("requires_grad", ctx, node, self.code),
                    )
            return
        q = ctx.call_name(node)
        if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            ctx.report(self, node, "`nn.Parameter()` created in compiled code breaks the graph; create it in `__init__`")
        elif (
            type(node.func) is cst.Attribute
            and node.func.attr.value == "requires_grad_"
            and ctx.is_tensor(node.func.value)
        ):
            ctx.report(self, node, "`.requires_grad_()` in compiled code breaks the graph; create parameters in `__init__`")

    invalid = (
        Example(
            """
            import torch
            from torch import nn

            @torch.compile
            def f(x):
                w = nn.Parameter(torch.ones(4))  # expect: DYN140
                return (x * w).sum() + x
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                w = torch.ones(4).requires_grad_()  # expect: DYN140
                return y * w
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x[:, None] * 2
                y.requires_grad = True  # expect: DYN140
                return y + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x, checkpointing=True):
                bias = torch.zeros(
                    (1, x.shape[-1]),
                    dtype=x.dtype,
                )
                if checkpointing:
                    bias.requires_grad = True  # expect: DYN140
                return x + bias
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x, checkpointing=True):
                    bias = torch.zeros(
                        (1, x.shape[-1]),
                        dtype=x.dtype,
                        requires_grad=bool(checkpointing),
                    )
                    return x + bias
            """,
        ),
    )
    valid = (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = nn.Parameter(torch.ones(4))

                def forward(self, x):
                    scale = torch.ones(4, requires_grad=True)
                    return x * self.w * scale
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x, checkpointing=True):
                bias = torch.zeros((1, x.shape[-1]), dtype=x.dtype, requires_grad=bool(checkpointing))
                return x + bias
            """,
            dynamo=CLEAN,
        ),
    )


RULE = RequiresGradInRegion

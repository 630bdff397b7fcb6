"""DYN144: `ctx.saved_variables` in a custom autograd function.

## What it does
Finds `ctx.saved_variables` in compiled code: the `backward` of a custom `torch.autograd.Function`
that a compiled model calls through `.apply` (Dynamo traces the backward too).

## Why it breaks the graph
`saved_variables` is the deprecated name of `saved_tensors`. Dynamo's model of `ctx` has only
the new name: reading the old one raises an AttributeError while tracing ("Observed exception",
a graph break), and since it sits in the backward Dynamo traces while
compiling the forward, it makes Dynamo give up on the calling frame, which then runs eagerly
(probed on torch 2.13 and 2.14.1: explain counts no break, the graph-break log names this line;
spandrel's OmniSR layer norm in train mode: 12 graphs instead of 1).

## Example
```python
class LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def backward(ctx, grad_output):
        y, var, weight = ctx.saved_variables
        ...
```

## Use instead
`ctx.saved_tensors`, the same tuple (the autofix, safe).
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix


class SavedVariables(Rule):
    code = "DYN144"
    name = "saved-variables"
    summary = "`ctx.saved_variables` (deprecated) breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0088", "Observed exception"),  # the AttributeError Dynamo raises for the old name
    )
    node_types = (cst.Attribute,)
    fixable = "safe"

    def check(self, node: cst.Attribute, ctx: RuleContext) -> None:
        if node.attr.value != "saved_variables" or ctx.in_assignment_target():
            return
        ctx.report(self, node, "`ctx.saved_variables` (the deprecated name of `saved_tensors`) breaks the graph: "
                               "Dynamo traces only `ctx.saved_tensors`; read that",
                   fix=offer_fix("saved_tensors", ctx, node, self.code))

    invalid = (
        Example(
            """
            import torch
            from torch import nn

            class Square(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x * x

                @staticmethod
                def backward(ctx, grad):
                    (x,) = ctx.saved_variables  # expect: DYN144
                    return 2 * x * grad

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    return Square.apply(self.proj(x)).sum(-1)
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn

                class Square(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        ctx.save_for_backward(x)
                        return x * x

                    @staticmethod
                    def backward(ctx, grad):
                        (x,) = ctx.saved_tensors  # expect: DYN144
                        return 2 * x * grad

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.proj = nn.Linear(4, 4)

                    def forward(self, x):
                        return Square.apply(self.proj(x)).sum(-1)
            """,
        ),
    )
    valid = (
        Example(
            """
            import torch
            from torch import nn

            class Square(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x * x

                @staticmethod
                def backward(ctx, grad):
                    (x,) = ctx.saved_tensors
                    return 2 * x * grad

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    return Square.apply(self.proj(x)).sum(-1)
            """,
            dynamo=CLEAN,
        ),
    )


RULE = SavedVariables

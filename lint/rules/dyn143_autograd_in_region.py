"""DYN143: gradients computed inside compiled code (`torch.autograd.grad`, `.backward()`).

## What it does
Finds `torch.autograd.grad(...)`, `torch.autograd.backward(...)` and `t.backward()` on a tensor
in a compile region: the Jacobians and log-determinants of normalizing flows and physics models
(`torch.autograd.grad(y, x, create_graph=True)` in `forward`), a training step compiled whole.

## Why it breaks the graph
By default Dynamo does not trace autograd calls: `torch.autograd.grad` breaks with "using
`torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`" (GB9186),
`t.backward()` with "Unsupported Tensor.backward() call" (GB0123) and
`torch.autograd.backward` is a skipped function (GB0007). Probed on torch 2.13 and 2.14.1.

## Example
```python
def forward(self, x):
    with torch.enable_grad():
        x = x.clone().requires_grad_()
        y = self.net(x)
    jac = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    return y, jac
```

## Use instead
Compute gradients with `torch.func` (`torch.func.grad`, `jacrev`, `vjp`, `jvp`), which Dynamo
traces; or compile only the forward computation and call `backward()` / `autograd.grad` outside
the compiled function. On torch versions that have it (2.13 and 2.14.1 do),
`torch._dynamo.config.trace_autograd_ops = True` makes Dynamo trace `torch.autograd.grad`
(probed: the call no longer breaks).
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

AUTOGRAD_CALLS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})


class AutogradInRegion(Rule):
    code = "DYN143"
    name = "autograd-in-compiled-region"
    summary = "`torch.autograd.grad()` / `.backward()` breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB9186", "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`"),
        ("GB0123", "Unsupported Tensor.backward() call"),
        ("GB0007", "Attempted to call function marked as skipped"),
    )
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        q = ctx.call_name(node)
        if q in AUTOGRAD_CALLS:
            ctx.report(self, node, f"`{q}()` breaks the graph (Dynamo does not trace autograd calls by default); "
                                   "use `torch.func` (grad, jacrev, vjp) or compute gradients outside the compiled region")
            return
        func = node.func
        if (
            type(func) is cst.Attribute
            and func.attr.value == "backward"
            and ctx.self_attr(func) is None
            and ctx.is_definite_tensor(func.value)
        ):
            ctx.report(self, node, "`.backward()` breaks the graph (Dynamo does not trace it); "
                                   "call it outside the compiled function")

    invalid = (
        Example(
            # A Jacobian in forward (normalizing flows, physics-informed models).
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.net = nn.Linear(4, 4)

                def forward(self, x):
                    y = self.net(x).tanh()
                    jac = torch.autograd.grad(y.sum(), self.net.weight, create_graph=True)[0]  # expect: DYN143
                    return y + jac.sum()
            """,
            dynamo=BREAKS,
        ),
        Example(
            # A training step compiled whole.
            """
            import torch

            w = torch.nn.Parameter(torch.randn(4))

            @torch.compile
            def f(x):
                loss = (x @ w).square().mean()
                loss.backward()  # expect: DYN143
                return loss.detach() * 2
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # torch.func's transforms are traced.
            """
            import torch

            @torch.compile
            def f(x):
                return torch.func.grad(lambda t: t.sin().sum())(x) * 2
            """,
            dynamo=CLEAN,
        ),
    )


RULE = AutogradInRegion

"""DYN110: `Tensor.item()`, or `int()` / `float()` / `bool()` of a tensor, in compiled code.

## What it does
Finds `.item()` calls (on tensors, and on NumPy arrays, which Dynamo traces as tensors) and `int(t)`, `float(t)`, `bool(t)` where `t` is a tensor, in a compile
region. `.item()` in a training loop outside any compiled region is not reported.

## Why it breaks the graph
Turning a tensor into a Python number needs its value, which does not exist while tracing.
With the default `capture_scalar_outputs=False` Dynamo breaks the graph ("Unsupported
Tensor.item() call"); on GPU the read is also a device-to-host sync.

## Example
```python
def forward(self, x):
    scale = x.abs().max().item()
    return x / scale
```

## Use instead
Keep the value a tensor: `x / x.abs().max()` (the unsafe autofix drops `.item()` when the value
only feeds tensor arithmetic). To report a number, return the tensor and call `.item()` outside
the compiled model.

A tensor built from a Python number only to do math on it and be read back
(`2 ** float(torch.tensor(s).log2().round())`, `-torch.log2(torch.tensor(s)).item()`) gets an
unsafe fix that does the math in Python (`2 ** float(round(math.log2(s)))`): Dynamo folds it
while tracing. Python computes in float64 where the tensor was float32, so the last bits may
differ.

An `assert` whose test is one comparison with the read value (`assert lengths.max().item() <=
slen`, XLM) gets an unsafe fix that asserts the tensor comparison (`assert lengths.max() <=
slen`): Dynamo keeps it in the graph (probed on torch 2.11, 2.13 and 2.14.1). Eager runs raise the
same AssertionError; compiled, a failure raises RuntimeError; the comparison is done in the
tensor's dtype.
"""

import libcst as cst

from ..kinds import Kind
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix


class ItemCall(Rule):
    code = "DYN110"
    name = "tensor-to-python-scalar"
    summary = "`.item()` / `int(tensor)` breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0033", "Data dependent operator"),
        ("GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False"),
    )
    node_types = (cst.Call,)
    fixable = "unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "item" and not node.args:
            recv_kind = ctx.kind(func.value)
            if recv_kind in (Kind.NOT_TENSOR, Kind.SIZE):
                return
            ctx.report(
                self,
                node,
                "`.item()` reads a tensor value and breaks the graph; keep it a tensor or return it",
                fix=offer_fix("python_math", ctx, node, self.code) or offer_fix("item", ctx, node, self.code),
            )
            return
        if type(func) is cst.Name and func.value in ("int", "float", "bool") and len(node.args) == 1:
            arg = node.args[0].value
            if ctx.call_name(node) == func.value and ctx.is_tensor(arg) and not ctx.is_numpy_of_numbers(arg):
                ctx.report(
                    self,
                    node,
                    f"`{func.value}()` of a tensor reads its value and breaks the graph; keep it a tensor",
                    fix=offer_fix("python_math", ctx, node, self.code) or offer_fix("item", ctx, node, self.code),
                )

    invalid = (
        Example(
            # XLM's input check: asserting the tensor comparison keeps it in the graph.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    h = x * 2
                    lengths = (h > 0).sum(dim=1)
                    assert lengths.max().item() <= x.shape[1]  # expect: DYN110
                    return h + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def forward(self, x):
                        h = x * 2
                        lengths = (h > 0).sum(dim=1)
                        assert lengths.max() <= x.shape[1]  # expect: DYN110
                        return h + 1
            """,
        ),
        Example(
            """
            import torch
            from torch import nn

            def paste(mask, box, h, w):
                # type: (Tensor, Tensor, int, int) -> Tensor
                width = int(box[2] - box[0] + 1)  # expect: DYN110
                return mask[:, :width] * h

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.boxes = [torch.tensor([0, 0, 3, 3])]

                def forward(self, x):
                    # `box` is a tensor by the TorchScript type comment alone.
                    return paste(x, self.boxes[0], 4, 4)
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                m = x.mean().item()  # expect: DYN110
                return x - m
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    m = x.mean()  # expect: DYN110
                    return x - m
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                n = int(x.sum())  # expect: DYN110
                return x * n
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                eps = np.random.rand(1).item()  # expect: DYN110
                return y + eps
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                i = x.argmax().item()  # expect: DYN110
                return x.flatten()[i]
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                return x - x.mean()

            def train_step(x):
                loss = f(x).sum()
                return loss.item()  # outside the compiled region
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                n = int(x.shape[0])
                return x * n
            """,
            dynamo=CLEAN,
        ),
    )


RULE = ItemCall

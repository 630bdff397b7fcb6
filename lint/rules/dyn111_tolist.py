"""DYN111: `Tensor.tolist()` in compiled code.

## What it does
Finds `.tolist()` calls on tensors in a compile region.

## Why it breaks the graph
A Python list of the tensor's values needs the data, which tracing does not have: Dynamo breaks
("Tensor.tolist() with non-integer tensor", or "Data dependent operator" for integer tensors).

## Example
```python
def forward(self, x, lengths):
    for n in lengths.tolist():
        ...
```

## Use instead
Stay in tensor land (masks instead of per-row Python loops), or compute the list before calling
the compiled model and pass it in. For an integer tensor, `torch._dynamo.config.
capture_scalar_outputs = True` lets Dynamo trace the values as symbolic integers: sizes from
`lengths.tolist()` given to `torch.split` then compile to one graph (probed on torch 2.11, 2.13
and 2.14.1); `dynalint verify --try-settings` tries the setting on your model and suggests it
only where the breaks go down with outputs equal.
"""

import libcst as cst

from ..kinds import Kind
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext


class TolistCall(Rule):
    code = "DYN111"
    name = "tensor-tolist"
    summary = "`.tolist()` breaks the graph"
    fixable = "unsafe"  # in a loop that runs outside the graph (fixes/disable_loop.py)
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0033", "Data dependent operator"),
        ("GB0109", "Tensor.tolist() with non-integer tensor"),
    )
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "tolist" and not node.args:
            if ctx.kind(func.value) in (Kind.NOT_TENSOR, Kind.SIZE):
                return
            ctx.report(self, node, "`.tolist()` reads tensor values and breaks the graph; keep them in a tensor "
                                   "(masks instead of a Python loop over the values), pass the list in from outside "
                                   "the compiled region, or, for an integer tensor, set `torch._dynamo.config."
                                   "capture_scalar_outputs = True` (`dynalint verify --try-settings` checks it)")

    invalid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                sizes = (x > 0).int().sum(0).tolist()  # expect: DYN111
                return x * len(sizes)
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                vals = x.sum(0).tolist()  # expect: DYN111
                return x * vals[0]
            """,
            dynamo=BREAKS,
        ),
        # In a loop that calls a function Dynamo traces as a frame of its own: the loop runs
        # outside the graph (fixes/disable_loop.py), one break at its call.
        Example(
            """
            import torch
            from torch import nn


            def positive(row):
                return row[torch.nonzero(row > 0).squeeze(1)]  # expect: DYN130


            class M(nn.Module):
                def forward(self, x):
                    h = x * 2
                    totals = []
                    for row in h:
                        totals.append(sum(positive(row).tolist()))  # expect: DYN111
                    return h + 1, totals
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                def positive(row):
                    return row[torch.nonzero(row > 0).squeeze(1)]  # expect: DYN130


                class M(nn.Module):
                    def forward(self, x):
                        h = x * 2
                        totals = []
                        self._forward_loop_outside_graph(h, totals)
                        return h + 1, totals

                    @torch.compiler.disable
                    def _forward_loop_outside_graph(self, h, totals):
                        for row in h:
                            totals.append(sum(positive(row).tolist()))  # expect: DYN111
            """,
            fixed_graphs=2,
        ),
    )
    valid = (
        Example(
            # doctr's post-processing: a helper defined in forward and disabled runs eagerly; its
            # call is a break by design (the one Dynamo reports), its body is not compiled code.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)

                def forward(self, x):
                    y = self.lin(x)

                    @torch.compiler.disable
                    def post(t):
                        return t.argmax(-1).tolist()

                    return y, post(y)
            """,
            dynamo=None,
            why="the disabled helper's call is a break by design; the example checks that its body is not linted",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                return x.sum(0)

            def report(x):
                return f(x).tolist()
            """,
            dynamo=CLEAN,
        ),
    )


RULE = TolistCall

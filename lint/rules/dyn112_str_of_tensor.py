"""DYN112: `str()` / `repr()` of a tensor in compiled code.

## What it does
Finds `str(t)` and `repr(t)` where `t` is a tensor, in a compile region. f-strings are traced
by current Dynamo and are not reported.

## Why it breaks the graph
Formatting a tensor prints its values; Dynamo cannot trace the builtin on a tensor ("Failed to
trace builtin operator") and breaks the graph.

## Example
```python
def forward(self, x):
    self.last = str(x)
    return x
```

## Use instead
Format outside the compiled region, or format metadata only (`str(x.shape)`).
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext


class StrOfTensor(Rule):
    code = "DYN112"
    name = "str-of-tensor"
    summary = "`str()`/`repr()` of a tensor breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13 and 2.14.1).
    gb_types = (
        ("GB0059", "Failed to trace builtin operator"),
        ("GB0569", "repr() on tensor"),  # torch 2.14.1
    )
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if type(func) is cst.Name and func.value in ("str", "repr") and len(node.args) == 1:
            # A definite tensor: `str(name)` of an unannotated parameter is rarely one.
            if ctx.call_name(node) == func.value and ctx.is_definite_tensor(node.args[0].value):
                ctx.report(self, node, f"`{func.value}()` of a tensor breaks the graph")

    invalid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = torch.relu(x)
                s = str(y)  # expect: DYN112
                return y + len(s)
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x, name):
                key = str(name)
                return x * len(key)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4, 4), 'scale')",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                s = str(y.shape)
                return y + len(s)
            """,
            dynamo=CLEAN,
        ),
    )


RULE = StrOfTensor

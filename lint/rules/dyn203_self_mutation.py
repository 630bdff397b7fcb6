"""DYN203: counter-style mutation of a module attribute in forward (recompile hint).

## What it does
Finds `self.steps += 1` and `self.count = self.count + 1` on attributes that are not tensors,
in a compile region.

## Why it matters
Dynamo treats Python attributes of the module as constants and guards on their values. A value
that changes on every call fails the guard every time: the model recompiles on each call until
it hits the recompile limit and runs eagerly.

## Example
```python
def forward(self, x):
    self.num_calls += 1
    return self.fc(x)
```

## Use instead
Keep counters as buffers (`self.register_buffer("num_calls", torch.zeros((), dtype=torch.long))`
and `self.num_calls.add_(1)`), or count outside the model.
"""

import libcst as cst

from .. import fastcst
from ..rule import NO_RECOMPILE, RECOMPILES, Example, Rule, RuleContext


class SelfMutation(Rule):
    code = "DYN203"
    name = "module-attribute-mutation"
    summary = "Mutating a Python attribute of the module (recompiles)"
    severity = "warning"
    node_types = (cst.AugAssign, cst.Assign)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.AugAssign:
            attr = ctx.self_attr(node.target)
            if attr is not None and attr not in ctx.tensor_attrs and not ctx.is_tensor(node.value):
                ctx.report(self, node, f"`self.{attr}` changes on every call: Dynamo guards on it and recompiles")
            return
        for t in node.targets:
            attr = ctx.self_attr(t.target)
            if attr is None or attr in ctx.tensor_attrs:
                continue
            reads = [n for n in _attrs_in(node.value) if ctx.self_attr(n) == attr]
            if reads and not ctx.is_tensor(node.value):
                ctx.report(self, node, f"`self.{attr}` changes on every call: Dynamo guards on it and recompiles")

    invalid = (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.steps = 0

                def forward(self, x):
                    self.steps += 1  # expect: DYN203
                    return x * 2
            """,
            dynamo=RECOMPILES,
            calls=3,
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
                    self.register_buffer("steps", torch.zeros((), dtype=torch.long))

                def forward(self, x):
                    self.steps += 1
                    return x * 2
            """,
            dynamo=NO_RECOMPILE,
            calls=3,
        ),
    )


def _attrs_in(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Attribute:
            yield n
        stack.extend(fastcst.children(n))  # same nodes as .children, without rebuilding n


RULE = SelfMutation

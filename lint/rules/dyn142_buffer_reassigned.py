"""DYN142: an `nn.Buffer` attribute set to its own `.to(...)` / `.float()` in compiled code.

## What it does
Finds `self.pe = self.pe.to(...)` (or `.float()`, `.half()`, `.cuda()`, `.contiguous()`, ...)
in a compile region, where `self.pe` was declared with `self.pe = nn.Buffer(...)`.

## Why it breaks the graph
These conversions return the buffer itself when there is nothing to convert (same dtype, same
device, already contiguous). Assigning an `nn.Buffer` object to a module attribute makes
`Module.__setattr__` re-register it and read its `persistent` flag, which Dynamo cannot do: it
breaks with "Unsupported python_type() call". Buffers made with `register_buffer`, and new
tensors (`self.pe * 2`, `.clone()`), do not break.

## Example
```python
def forward(self, input_ids):
    self.pos_encoding = self.pos_encoding.to(device=input_ids.device, dtype=self.dtype)
```

## Use instead
Convert into a local variable (`pos_encoding = self.pos_encoding.to(...)`) and use that; moving
the model with `model.to(device, dtype)` already moves its buffers.

## Fix (unsafe)
Assigns the conversion to a local variable named after the buffer and reads that local for the
rest of the function. This call computes the same values, but the module keeps the unconverted
buffer: the conversion (a copy, when it really converts) runs on every call, and code outside
the function that reads the attribute sees the old tensor. Offered only when the assignment is a
statement of the function's own body (not in a loop or a branch), the function stores the
attribute nowhere else and no nested function or other method of the class reads it.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

# Tensor methods that return the tensor itself when they have nothing to do.
SELF_RETURNING = frozenset(
    {"to", "type", "float", "half", "double", "bfloat16", "int", "long", "bool", "cpu", "cuda", "contiguous"}
)


def _checks_buffer(test: cst.BaseExpression, attr: str, ctx: RuleContext) -> bool:
    """test compares `self.<attr>.device` / `.dtype` with something (`if self.pe.device != x.device:`)."""
    if type(test) is not cst.Comparison:
        return False
    for side in (test.left, *(c.comparator for c in test.comparisons)):
        if type(side) is cst.Attribute and side.attr.value in ("device", "dtype") and ctx.self_attr(side.value) == attr:
            return True
    return False


class BufferReassigned(Rule):
    code = "DYN142"
    name = "buffer-reassigned-in-region"
    summary = "`self.buf = self.buf.to(...)` on an `nn.Buffer` breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB4841", "Unsupported python_type() call"),
        ("GB0170", "Data-dependent branching"),  # torch 2.11
    )
    node_types = (cst.Assign,)
    fixable = "unsafe"

    def check(self, node: cst.Assign, ctx: RuleContext) -> None:
        value = node.value
        if not (type(value) is cst.Call and type(value.func) is cst.Attribute):
            return
        if value.func.attr.value not in SELF_RETURNING:
            return
        source = ctx.self_attr(value.func.value)
        if source is None or source not in ctx.buffer_attrs:
            return
        if any(_checks_buffer(test, source, ctx) for test in ctx.enclosing_tests()):
            return  # runs only when there is something to convert: a new tensor, no break
        for t in node.targets:
            if ctx.self_attr(t.target) == source:
                method = value.func.attr.value
                ctx.report(
                    self,
                    node,
                    f"`self.{source} = self.{source}.{method}(...)` re-registers an `nn.Buffer` and breaks the graph; assign the result to a local variable",
                    fix=offer_fix("buffer_local", ctx, node, source, self.code),
                )
                return

    invalid = (
        Example(
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pos_encoding = nn.Buffer(torch.zeros(4), persistent=False)

                def forward(self, x):
                    self.pos_encoding = self.pos_encoding.to(device=x.device, dtype=x.dtype)  # expect: DYN142
                    return x + self.pos_encoding
            """,
            dynamo=BREAKS,
            fixed="""
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pos_encoding = nn.Buffer(torch.zeros(4), persistent=False)

                def forward(self, x):
                    pos_encoding = self.pos_encoding.to(device=x.device, dtype=x.dtype)  # expect: DYN142
                    return x + pos_encoding
            """,
        ),
        Example(
            """
            import torch
            from torch import nn
            from torch.nn import Buffer


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.table = Buffer(torch.ones(4))

                def forward(self, x):
                    self.table = self.table.float()  # expect: DYN142
                    return x * self.table
            """,
            dynamo=BREAKS,
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
                    self.pos_encoding = nn.Buffer(torch.zeros(4), persistent=False)

                def forward(self, x):
                    pos_encoding = self.pos_encoding.to(device=x.device, dtype=x.dtype)
                    return x + pos_encoding
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("pos_encoding", torch.zeros(4), persistent=False)

                def forward(self, x):
                    self.pos_encoding = self.pos_encoding.to(dtype=x.dtype)
                    return x + self.pos_encoding
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.table = nn.Buffer(torch.ones(4, dtype=torch.float64))

                def forward(self, x):
                    if self.table.dtype != x.dtype:  # converts: a new tensor, not the buffer
                        self.table = self.table.to(x.dtype)
                    return x * self.table
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scale = nn.Buffer(torch.ones(4))

                def forward(self, x):
                    self.scale = self.scale.clone()
                    return x * self.scale
            """,
            dynamo=CLEAN,
        ),
    )


RULE = BufferReassigned

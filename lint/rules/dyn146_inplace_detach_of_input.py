"""DYN146: in-place `detach_()` of a parameter, buffer or input in compiled code.

## What it does
Finds `.detach_()` called in compiled code on a tensor the graph receives from outside: a
parameter or buffer of the module (`self.scale`, `self.proj.weight`, `self.proj.bias`) or a
parameter of `forward` (or of a compiled function) still holding what the caller passed.

## Why it breaks the graph
Dynamo does not trace an in-place view operation on a graph input ("Unsupported function call
(delayed)": "Getting an inplace view on a graph input is not supported"): the graph breaks at
the call on every run, and `fullgraph=True` fails. `explain` may count no break for it; Dynamo's
log names it. The same call on a tensor computed inside the graph traces (probed on torch 2.13
and 2.14.1).

## Example
```python
def forward(self, x):
    self.to_kv.weight.detach_()
    return self.to_kv(x)
```

## Use instead
`detach_()` on a parameter turns its gradient off for good: do it once, outside the compiled
forward (`module.requires_grad_(False)` at setup). To stop gradients for one computation, use an
out-of-place `detach()` on the value (`F.linear(x, self.to_kv.weight.detach())`).

No autofix: the out-of-place form changes what the module's other users see.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

_PARAMETER_ATTRS = frozenset({"weight", "bias"})


def _graph_input(node: cst.BaseExpression, ctx: RuleContext) -> str:
    """What the receiver is when the graph gets it from outside ("parameter", "buffer", "input"),
    else ""."""
    attr = ctx.self_attr(node)
    if attr is not None:
        if attr in ctx.buffer_attrs:
            return "buffer"
        return "parameter or buffer" if attr in ctx.tensor_attrs else ""
    if type(node) is cst.Attribute and node.attr.value in _PARAMETER_ATTRS and ctx.self_attr(node.value) is not None:
        return "parameter"  # `self.proj.weight`
    if type(node) is cst.Name and ctx.is_root and ctx.is_parameter(node.value) and ctx.is_tensor(node):
        return "input"
    return ""


class InplaceDetachOfInput(Rule):
    code = "DYN146"
    name = "inplace-detach-of-input"
    summary = "in-place `detach_()` of a parameter, buffer or input breaks the graph"
    fixable = None
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (("GB0148", "Unsupported function call (delayed)"),)
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value != "detach_" or node.args:
            return
        what = _graph_input(func.value, ctx)
        if not what:
            return
        ctx.report(
            self, node,
            f"in-place `detach_()` of a {what} the graph receives from outside breaks the graph (Dynamo does not "
            "trace an in-place view of a graph input); turn gradients off once outside the compiled code, or "
            "use an out-of-place `.detach()` where the value is used",
        )

    _source = """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    {line}
                    return h * 2
            """
    invalid = (
        Example(_source.format(line="self.proj.weight.detach_()  # expect: DYN146"), dynamo=BREAKS),
        Example(_source.format(line="x.detach_()  # expect: DYN146"), dynamo=BREAKS),
    )
    # A tensor computed in the graph detaches in place.
    valid = (Example(_source.format(line="h.detach_()"), dynamo=CLEAN),)


RULE = InplaceDetachOfInput

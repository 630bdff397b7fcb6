"""DYN117: `assert self.<submodule>` in compiled code.

## What it does
Finds an `assert` whose test is a submodule of the module (`assert self.out_norm`, moshi's
language model checking that an optional head exists), where the class sets that attribute to
a module in `__init__`.

## Why it breaks the graph
Dynamo turns `assert t` into an assertion inside the graph, which takes a tensor; given a module
it fails ("Failed to convert args/kwargs to proxy") and breaks the graph, and inside a loop it
runs the whole function eagerly (probed on 2.13.0 and 2.14.1). `if not self.norm:` and
`assert self.norm is not None` trace.

## Example
```python
def forward(self, x):
    assert self.out_norm
    return self.out_norm(x)
```

## Use instead
`assert self.out_norm is not None` (the unsafe autofix). A module is always true, unless its
class defines `__len__` or `__bool__`: a `ModuleList` or `Sequential` is false when empty, so for
those the fix is `assert len(self.layers) > 0`. Unsafe because a class from another file may
define either method.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix


class AssertModule(Rule):
    code = "DYN117"
    name = "assert-on-module"
    summary = "`assert` on a submodule breaks the graph"
    fixable = "unsafe"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (("GB0055", "Failed to convert args/kwargs to proxy"),)
    node_types = (cst.Assert,)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        attr = ctx.self_attr(node.test)
        if attr is None or attr not in ctx.module_attrs or attr in ctx.tensor_attrs:
            return
        container = attr in ctx.sequence_attrs
        replacement = f"len(self.{attr}) > 0" if container else f"self.{attr} is not None"
        ctx.report(self, node.test, f"`assert self.{attr}` on a module breaks the graph (Dynamo asserts tensors "
                                    f"only); write `assert {replacement}`",
                   fix=offer_fix("assert_module", ctx, node.test, replacement, self.code))

    invalid = (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.norm = nn.LayerNorm(4)
                    self.layers = nn.ModuleList([nn.Linear(4, 4)])

                def forward(self, x):
                    assert self.norm  # expect: DYN117
                    assert self.layers, "no layers"  # expect: DYN117
                    return self.norm(self.layers[0](x))
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 4),)",
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.norm = nn.LayerNorm(4)
                        self.layers = nn.ModuleList([nn.Linear(4, 4)])

                    def forward(self, x):
                        assert self.norm is not None  # expect: DYN117
                        assert len(self.layers) > 0, "no layers"  # expect: DYN117
                        return self.norm(self.layers[0](x))
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
                    self.norm = nn.LayerNorm(4)
                    self.enabled = True

                def forward(self, x):
                    assert self.enabled
                    assert self.norm is not None
                    if not self.norm:
                        return x
                    return self.norm(x)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 4),)",
        ),
    )


RULE = AssertModule

"""DYN101: `print()` inside code that runs under torch.compile.

## What it does
Finds calls to the builtin `print` in a compile region: `forward` of an `nn.Module`, a function
decorated with `@torch.compile`, and everything they call.

## Why it breaks the graph
Dynamo cannot put I/O into an FX graph. At `print` it stops the graph, runs the print eagerly and
starts a new graph after it ("Failed to trace builtin operator"), so one forward becomes two
graphs and the compiler cannot fuse across the print.

## Example
```python
def forward(self, x):
    y = self.proj(x)
    print("y", y.shape)
    return y.relu()
```

## Use instead
Guard debugging output so it only runs eagerly (the autofix does this):
```python
    if not torch.compiler.is_compiling():
        print("y", y.shape)
```
or use `torch._logging` / a forward hook outside the compiled region. To keep the print under
compile, let Dynamo call it after the graph instead of breaking:
`torch._dynamo.config.reorderable_logging_functions.add(print)` before compiling (probed on
torch 2.13 and 2.14.1: one graph, and the print still shows the value; a global setting, so it
is advice, not an autofix).

"""

import libcst as cst

from ..rule import BREAKS, CLEAN, GUARD_FIX_DOC, Example, Rule, RuleContext, offer_fix

__doc__ += GUARD_FIX_DOC


class PrintCall(Rule):
    code = "DYN101"
    name = "print-in-compiled-region"
    summary = "`print()` call breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0059", "Failed to trace builtin operator"),
    )
    node_types = (cst.Call,)
    fixable = "safe or unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.call_name(node) == "print":
            ctx.report(
                self,
                node,
                "`print()` breaks the graph; guard it with `if not torch.compiler.is_compiling():`",
                fix=offer_fix("guard", ctx, node, self.code),
            )

    invalid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                print("y", y.shape)  # expect: DYN101
                return y + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    y = x * 2
                    if not torch.compiler.is_compiling():
                        print("y", y.shape)  # expect: DYN101
                    return y + 1
            """,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    y = x.relu()
                    self.debug(y)
                    return y * 2

                def debug(self, y):
                    print(y.sum())  # expect: DYN101
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
                y = x * 2
                if not torch.compiler.is_compiling():
                    print("y", y.shape)
                return y + 1
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    return x * 2

            def train(model, x):
                print("loss", model(x).sum())  # eager code, never compiled
            """,
            dynamo=CLEAN,
        ),
    )


RULE = PrintCall

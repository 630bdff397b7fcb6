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
or use `torch._logging` / a forward hook outside the compiled region.

## Fix (safe or unsafe, by file)
The autofix puts the call (and the adjacent calls that need it) under
`if not torch.compiler.is_compiling():`, or under the file's own `is_torchdynamo_compiling()`
when it imports that helper. Eager runs are unchanged, so the fix is **safe** in a file that
imports torch (or a part of it) at module level. A file that does not may have to import without
torch (a library's import helpers, a module shared with non-torch backends): the guard then
imports torch inside the function, just above the `if`, and the fix is **unsafe** (where torch is
absent, that function now fails). A call on a path the file keeps for torch before 2.3 (a branch
of a torch-version or `is_compiling` test, the `except` of a `try` that calls `is_compiling`)
gets no fix: `torch.compiler.is_compiling` does not exist there.
"""

import libcst as cst

from dynalint.fixes.guard import guard_fix

from ..rule import BREAKS, CLEAN, Example, Rule


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

    def check(self, node, ctx):
        if ctx.call_name(node) == "print":
            ctx.report(
                self,
                node,
                "`print()` breaks the graph; guard it with `if not torch.compiler.is_compiling():`",
                fix=guard_fix(ctx, node, self.code),
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

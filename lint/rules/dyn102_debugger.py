"""DYN102: debugger call (`breakpoint()`, `pdb.set_trace()`, ...) in compiled code.

## What it does
Finds `breakpoint()`, `pdb.set_trace()`, `ipdb.set_trace()`, `pudb.set_trace()`,
`IPython.embed()` and `code.interact()` in a compile region.

## Why it breaks the graph
A debugger needs a real Python frame. Dynamo cannot trace into it and breaks the graph there
(and the debugger then stops in Dynamo's resumed frame, not in your code).

## Example
```python
def forward(self, x):
    breakpoint()
    return self.fc(x)
```

## Use instead
Remove it before compiling (the unsafe autofix deletes it), or debug the eager model:
`torch.compile` with `backend="eager"` keeps breaks visible while you debug.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

DEBUGGER_CALLS = frozenset(
    {
        "breakpoint",
        "pdb.set_trace",
        "pdb.post_mortem",
        "pdb.pm",
        "ipdb.set_trace",
        "ipdb.post_mortem",
        "pudb.set_trace",
        "IPython.embed",
        "IPython.core.debugger.set_trace",
        "code.interact",
    }
)


class DebuggerCall(Rule):
    code = "DYN102"
    name = "debugger-in-compiled-region"
    summary = "Debugger call breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0059", "Failed to trace builtin operator"),
    )
    node_types = (cst.Call,)
    fixable = "unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        q = ctx.call_name(node)
        if q in DEBUGGER_CALLS:
            ctx.report(
                self,
                node,
                f"`{q}()` breaks the graph; remove the debugger call from compiled code",
                fix=offer_fix("debugger", ctx, node, self.code),
            )

    invalid = (
        Example(
            """
            import pdb
            import torch

            @torch.compile
            def f(x):
                y = x + 1
                pdb.set_trace()  # expect: DYN102
                return y * 2
            """,
            dynamo=None,
            why="would stop the test run in a debugger; Dynamo's skip-file list covers pdb",
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    y = x + 1
                    return y * 2
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x + 1
                breakpoint()  # expect: DYN102
                return y * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(4, 4),)",
        ),
    )
    valid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                return x + 1

            def debug_eagerly(x):
                breakpoint()
                return f(x)
            """,
            dynamo=CLEAN,
        ),
    )


RULE = DebuggerCall

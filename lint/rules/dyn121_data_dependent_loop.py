"""DYN121: Python loop whose trip count comes from tensor values.

## What it does
Finds `range(t)` where `t` is a tensor value (`for i in range(x.max())`,
`list(range(n - 1, n))` with `n` a NumPy or tensor value), and `for` loops (and comprehensions) over the result of an operator whose length depends on data
(`for c in torch.unique(labels)`, `x.nonzero()`, boolean-mask indexing), in a compile region.
Loops over `range(5)` or `range(x.size(0))` are unrolled by Dynamo and are not reported here.

## Why it breaks the graph
Dynamo unrolls Python loops, so it must know how many iterations there are while tracing. When
that number is a tensor's value, it has to leave the graph to read it.

## Example
```python
def forward(self, x, labels):
    out = []
    for c in torch.unique(labels):
        out.append(x[labels == c].mean(0))
    return torch.stack(out)
```

## Use instead
Vectorise over the classes (`scatter_reduce`, `index_add_`, one-hot matmul) with a static
number of classes, or do the grouping outside the compiled region.

## Fix (unsafe)
Only in a host-side helper (index planning on Python and NumPy values, as DYN105 describes): the
autofix puts `@torch.compiler.disable` on the helper where every call reaches the loop, or moves
what the helper does after an early `return` into a disabled function (BigBird's random-attention
planning, whose `range()` bounds are NumPy numbers). Elsewhere a human has to vectorise.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

DATA_DEPENDENT_LENGTH = frozenset(
    {"unique", "unique_consecutive", "nonzero", "masked_select", "argwhere", "bincount"}
)


class DataDependentLoop(Rule):
    code = "DYN121"
    name = "data-dependent-loop"
    summary = "Loop length comes from tensor values"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13 and 2.14.1).
    gb_types = (
        ("GB0036", "Dynamic shape operator"),
        ("GB0059", "Failed to trace builtin operator"),
        ("GB0033", "Data dependent operator"),  # torch 2.14.1
        ("GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False"),  # torch 2.14.1
    )
    node_types = (cst.For, cst.CompFor, cst.Call)
    fixable = "unsafe"  # in host-side helpers only (fixes/disable_helper.py, fixes/disable_tail.py)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Call:
            # `range(t)` anywhere, not only as a loop's iterable: `list(range(n - 1, n))` breaks too.
            # A definite tensor: `range(steps)` of an unannotated parameter counts a Python int far
            # more often than a tensor.
            if ctx.call_name(node) == "range" and any(ctx.is_definite_tensor(a.value) for a in node.args):
                ctx.report(self, node, "`range()` of a tensor value needs the value while tracing and breaks the "
                                       "graph; take the count from a shape or a Python number, or loop over the largest "
                                       "count a shape gives and mask the steps past the value")
            return
        it = node.iter
        if type(it) is cst.Call and ctx.call_name(it) == "range":
            return  # reported as a call
        if type(it) is cst.Call and ctx.is_tensor(it):
            name = it.func.attr.value if type(it.func) is cst.Attribute else None
            if name in DATA_DEPENDENT_LENGTH:
                ctx.report(self, it, f"loop over `{name}()`: its length depends on tensor values and breaks the graph")

    invalid = (
        Example(
            # Index planning on NumPy numbers: the helper runs outside the graph, one break per call.
            """
            import numpy as np
            import torch


            def plan(n):
                counts = np.array([n, n + 1])
                picked = []
                for i in range(counts[0]):  # expect: DYN121
                    picked.append(i * 2 % n)
                return np.array(picked)


            @torch.compile
            def f(x):
                h = x * 2
                idx = torch.from_numpy(plan(x.shape[-1]))
                return h[:, idx]
            """,
            dynamo=BREAKS,
            fixed="""
                import numpy as np
                import torch


                @torch.compiler.disable
                def plan(n):
                    counts = np.array([n, n + 1])
                    picked = []
                    for i in range(counts[0]):  # expect: DYN121
                        picked.append(i * 2 % n)
                    return np.array(picked)


                @torch.compile
                def f(x):
                    h = x * 2
                    idx = torch.from_numpy(plan(x.shape[-1]))
                    return h[:, idx]
            """,
            fixed_graphs=2,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                out = x
                for _ in range(x.sum().int()):  # expect: DYN121
                    out = out + 1
                return out
            """,
            dynamo=BREAKS,
            inputs="(torch.ones(2, 2),)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                labels = (x > 0).long()
                total = x.sum() * 0
                for c in torch.unique(labels):  # expect: DYN121
                    total = total + x[labels == c].mean()  # expect: DYN130
                return total
            """,
            dynamo=BREAKS,
        ),
    )
    invalid = invalid + (
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x, lengths):
                ends = np.cumsum(lengths)  # a NumPy array: a tensor while Dynamo traces
                end = ends[0]
                blocks = list(range(end - 1, end))  # expect: DYN121
                return x + len(blocks)
            """,
            dynamo=BREAKS,
            inputs="(torch.ones(3), np.array([3, 4]))",
        ),
    )
    valid = (
        Example(
            # An unannotated parameter counting steps: a Python int, not evidence of a tensor.
            """
            import torch

            @torch.compile
            def f(x, steps):
                for _ in range(steps):
                    x = x * 0.5 + 1
                return x
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4, 4), 3)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                out = x
                for i in range(5):
                    out = out + i
                return out
            """,
            dynamo=CLEAN,
        ),
    )


RULE = DataDependentLoop

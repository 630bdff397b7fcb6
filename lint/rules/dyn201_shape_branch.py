"""DYN201: branch on a tensor's shape (recompile hint).

## What it does
Finds `if` / `while` / conditional expressions that compare sizes taken from tensors
(`x.shape[1] == 16`, `x.size(0) > 1`, `len(x)`), in a compile region. `x.dim()` and `x.ndim` are
fixed per graph anyway and are not reported.

## Why it matters
This does not break the graph: Dynamo guards on the comparison. But with dynamic shapes an
equality specialises the size to one value, so every new size compiles a new graph (and after
`recompile_limit` graphs, falls back to eager). Inequalities add a guard that recompiles when the
outcome flips.

## Example
```python
def forward(self, x):
    if x.shape[1] == 16:
        x = self.small(x)
    return x
```

## Use instead
Decide by configuration rather than by the input's size, or make both paths the same graph
(padding, `torch.where`); mark the dimension static with `torch._dynamo.mark_static` if it
really never changes.
"""

import libcst as cst

from ..rule import NO_RECOMPILE, RECOMPILES, Example, Rule, RuleContext


class ShapeBranch(Rule):
    code = "DYN201"
    name = "shape-branch"
    summary = "Branch on a tensor's size (recompiles per shape)"
    severity = "warning"
    node_types = (cst.If, cst.While, cst.IfExp)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        tests = [node.test]
        while tests:
            t = tests.pop()
            if type(t) is cst.BooleanOperation:
                tests += [t.left, t.right]
                continue
            if type(t) is cst.UnaryOperation:
                tests.append(t.expression)
                continue
            if type(t) is cst.Comparison and ctx.kind(t) == "SB":
                ctx.report(self, t, "branch on a tensor's size: Dynamo guards on it and recompiles for other sizes")

    invalid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                if x.shape[1] == 4:  # expect: DYN201
                    return x * 2
                return x - 1
            """,
            dynamo=RECOMPILES,
        ),
    )
    valid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                if x.dim() == 2:
                    return x * 2
                return x - 1
            """,
            dynamo=NO_RECOMPILE,
        ),
    )


RULE = ShapeBranch

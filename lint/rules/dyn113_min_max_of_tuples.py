"""DYN113: `min()` / `max()` of a generator of tuples.

## What it does
Finds `min(...)` and `max(...)` whose one argument is a generator expression yielding tuples, in
compiled code: `min((cost(p), p) for p in itertools.permutations(range(n)))`, pykeen's
contraction planning, which picks the cheapest order of a product of tensors.

## Why it breaks the graph
Dynamo does not model the builtin `min` / `max` over a generator object whose items are tuples
("Dynamo does not know how to trace builtin operator `min` with argument types ['generator']",
then "Generator reconstruction with mutations"): the graph breaks there, and where the generator
reads variables of the frame Dynamo gives up on the whole function (pykeen: 5 to 11 breaks in
every scoring call; probed on torch 2.13.0 and 2.14.1). Over numbers (`min(x * x for x in xs)`)
and over a list it traces.

## Example
```python
cost, order = min((estimate(shapes, p), p) for p in itertools.permutations(range(3)))
```

## Use instead
A list comprehension: `min([(estimate(shapes, p), p) for p in ...])`.

## Fix (safe)
The autofix writes the generator as a list comprehension: the same items in the same order, so
the same result (ties included: the first smallest item wins either way); the list is built in
full first, which costs memory only for very long generators.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix


class MinMaxOfTuples(Rule):
    code = "DYN113"
    name = "min-max-of-tuple-generator"
    summary = "`min()` / `max()` of a generator of tuples breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0059", "Failed to trace builtin operator"),
        ("GB8335", "Generator reconstruction with mutations"),
    )
    node_types = (cst.Call,)
    fixable = "safe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        q = ctx.call_name(node)
        if q not in ("min", "max") or len(node.args) != 1:
            return
        arg = node.args[0]
        gen = arg.value
        if arg.keyword is not None or arg.star or type(gen) is not cst.GeneratorExp or type(gen.elt) is not cst.Tuple:
            return
        ctx.report(self, node, f"`{q}()` of a generator of tuples breaks the graph (Dynamo does not trace the builtin "
                               f"over a generator); pass a list: `{q}([...])`",
                   fix=offer_fix("list_of_generator", ctx, gen, self.code))

    invalid = (
        Example(
            # pykeen's `_get_optimal_sequence`: the cheapest order of a product, by permutations.
            """
            import itertools
            import torch

            @torch.compile
            def f(x):
                shapes = ((4, 8), (1, 8), (4, 1))
                y = x * 2
                cost, order = min((sum(shapes[i][0] * k for k, i in enumerate(p)), p) for p in itertools.permutations(range(3)))  # expect: DYN113
                return y * len(order) + cost
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3),)",
            fixed="""
                import itertools
                import torch

                @torch.compile
                def f(x):
                    shapes = ((4, 8), (1, 8), (4, 1))
                    y = x * 2
                    cost, order = min([(sum(shapes[i][0] * k for k, i in enumerate(p)), p) for p in itertools.permutations(range(3))])  # expect: DYN113
                    return y * len(order) + cost
            """,
        ),
    )
    valid = (
        Example(
            # Over numbers, or over a list of tuples, Dynamo traces the builtin.
            """
            import torch

            @torch.compile
            def f(x):
                y = x + 1
                smallest = min(i * i for i in range(3))
                cost, k = max([(i % 2, i) for i in range(4)])
                return y * smallest + cost + k
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(3),)",
        ),
    )


RULE = MinMaxOfTuples

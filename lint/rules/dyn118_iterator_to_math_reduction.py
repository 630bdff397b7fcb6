"""DYN118: `math.prod()` / `math.fsum()` of a generator or another iterator.

## What it does
Finds `math.prod(...)` and `math.fsum(...)` (also as `from math import prod`) in compiled code
whose iterable is a generator expression or a lazy iterator: `map(...)`, `filter(...)`,
`reversed(...)` or an `itertools` function. botorch's safe log-mean-exp counts the reduced
elements this way: `math.prod(X.shape[i] for i in dim)`.

## Why it breaks the graph
Dynamo runs `math.prod` and `math.fsum` itself only on values it can hand over whole: a
generator or iterator object is not one ("Failed to convert args/kwargs to proxy", GB0055, then
"Generator reconstruction with mutations", GB8335). For a generator expression Dynamo gives up
on the whole function, which then runs eagerly (no graph at all); for `map(...)` the graph breaks
at the call (probed on torch 2.13.0 and 2.14.1). Over a list or a tuple, or over `x.shape`
itself, both are traced and folded to a constant.

## Example
```python
n = math.prod(x.shape[i] for i in dims)
```

## Use instead
A list comprehension, or `list(...)` around the iterator:
`math.prod([x.shape[i] for i in dims])`, `math.fsum(list(map(float, sizes)))`.

## Fix (safe)
The autofix writes the generator as a list comprehension, or wraps the iterator in `list(...)`:
the same items in the same order, so the same product or sum.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

REDUCTIONS = ("math.prod", "math.fsum")
# Builtins that return lazy iterators (zip / enumerate yield tuples: no product of them is a number).
LAZY_BUILTINS = ("map", "filter", "reversed")


class IteratorToMathReduction(Rule):
    code = "DYN118"
    name = "iterator-to-math-reduction"
    summary = "`math.prod()` / `math.fsum()` of a generator or iterator breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0055", "Failed to convert args/kwargs to proxy"),
        ("GB8335", "Generator reconstruction with mutations"),
    )
    node_types = (cst.Call,)
    fixable = "safe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        q = ctx.call_name(node)
        if q not in REDUCTIONS or not node.args:
            return
        arg = node.args[0]
        if arg.keyword is not None or arg.star:
            return
        value = arg.value
        short = q.rpartition(".")[2]
        if type(value) is cst.GeneratorExp:
            ctx.report(self, node, f"`math.{short}()` of a generator breaks the graph (Dynamo cannot hand a generator to "
                                   f"it and runs the whole function eagerly); pass a list: `math.{short}([...])`",
                       fix=offer_fix("list_of_generator", ctx, value, self.code))
            return
        if type(value) is not cst.Call:
            return
        inner = ctx.call_name(value)
        if inner is None or not (inner in LAZY_BUILTINS or inner.startswith("itertools.")):
            return
        ctx.report(self, node, f"`math.{short}()` of an iterator (`{inner}(...)`) breaks the graph (Dynamo cannot hand "
                               f"the iterator to it); pass a list: `math.{short}(list({inner}(...)))`",
                   fix=offer_fix("list_of_iterator_call", ctx, value, self.code))

    invalid = (
        Example(
            # botorch's `logmeanexp`: the number of reduced elements.
            """
            import math
            import torch

            @torch.compile
            def f(x, dim=(-2, -1)):
                n = math.prod(x.shape[i] for i in dim)  # expect: DYN118
                return torch.logsumexp(x, dim=dim) - math.log(n)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4),)",
            fixed="""
                import math
                import torch

                @torch.compile
                def f(x, dim=(-2, -1)):
                    n = math.prod([x.shape[i] for i in dim])  # expect: DYN118
                    return torch.logsumexp(x, dim=dim) - math.log(n)
            """,
        ),
        Example(
            """
            from math import fsum
            import torch

            @torch.compile
            def f(x):
                y = x.sin()
                total = fsum(map(float, x.shape))  # expect: DYN118
                return y * total
            """,
            dynamo=BREAKS,
            fixed="""
                from math import fsum
                import torch

                @torch.compile
                def f(x):
                    y = x.sin()
                    total = fsum(list(map(float, x.shape)))  # expect: DYN118
                    return y * total
            """,
        ),
    )
    valid = (
        Example(
            # Over a list, a tuple or a shape both are traced; `sum` and `max` take a generator.
            """
            import math
            import torch

            @torch.compile
            def f(x, dim=(0, 1)):
                a = math.prod([x.shape[i] for i in dim])
                b = math.prod(x.shape)
                c = math.fsum((1.0, 2.0))
                d = sum(x.shape[i] for i in dim) + max(x.shape[i] for i in dim)
                return x * (a + b + c + d)
            """,
            dynamo=CLEAN,
        ),
    )


RULE = IteratorToMathReduction

"""DYN105: call that Dynamo cannot trace (`time.time()`, Python's `random`, RNG state, ...).

## What it does
Finds calls into modules Dynamo skips: `time.time()`, `time.perf_counter()`, `time.monotonic()`,
Python's `random.*`, `torch.get_rng_state()` / `torch.set_rng_state()`, `input()`, `open()`.

## Why it breaks the graph
These functions live in files Dynamo does not trace ("Attempted to call function marked as
skipped"). The graph ends before the call and a new one starts after it. Note that NumPy's random
functions and `math.*` *are* traced and are not reported.

## Example
```python
def forward(self, x):
    t0 = time.perf_counter()
    y = self.body(x)
    self.elapsed = time.perf_counter() - t0
    return y
```

## Use instead
Time and seed outside the compiled region (around the call of the compiled model); use
`torch.rand` instead of `random.random()` for randomness inside the model.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule

UNTRACEABLE = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.process_time",
        "time.sleep",
        "torch.get_rng_state",
        "torch.set_rng_state",
        "input",
        "open",
    }
)
# Python's random module: every function in it.
RANDOM_PREFIX = "random."


class UntraceableCall(Rule):
    code = "DYN105"
    name = "untraceable-call"
    summary = "Call into a module Dynamo skips"
    node_types = (cst.Call,)

    def check(self, node, ctx):
        q = ctx.call_name(node)
        if q is None:
            return
        if q in UNTRACEABLE or (q.startswith(RANDOM_PREFIX) and q.count(".") == 1):
            ctx.report(self, node, f"`{q}()` cannot be traced by Dynamo and breaks the graph; call it outside the compiled region")

    invalid = (
        Example(
            """
            import time
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                t0 = time.perf_counter()  # expect: DYN105
                return y + t0
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import random
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                return y * random.random()  # expect: DYN105
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                state = torch.get_rng_state()  # expect: DYN105
                return y + state.float().mean()
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            """
            import math
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                return x * math.sqrt(x.shape[0]) + np.sqrt(2.0)
            """,
            dynamo=CLEAN,
        ),
    )


RULE = UntraceableCall

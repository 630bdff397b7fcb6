"""DYN105: call that Dynamo cannot trace (`time.time()`, Python's `random`, RNG state, ...).

## What it does
Finds calls into modules Dynamo skips: `time.time()`, `time.perf_counter()`, `time.monotonic()`,
Python's `random.*`, NumPy random functions Dynamo cannot map to torch (`np.random.permutation`)
or maps to code that reads a tensor value (`np.random.choice`),
`torch.get_rng_state()` / `torch.set_rng_state()`, `input()`, `open()`, and
calls of `nn.LSTM` / `nn.GRU` / `nn.RNN` submodules (Dynamo does not trace cuDNN RNNs).

## Why it breaks the graph
These functions live in files Dynamo does not trace ("Attempted to call function marked as
skipped"). The graph ends before the call and a new one starts after it. `math.*` and the NumPy
random functions that `torch._numpy` implements (`np.random.rand`, `randn`, `randint`, `uniform`,
`normal`, `shuffle`, ...) *are* traced and are not reported; others, such as
`np.random.permutation`, are "unsupported by PyTorch" and break. `np.random.choice` is
implemented there too, but its implementation reads a sampled tensor value, so it breaks
("Data dependent operator") whatever its arguments (wav2vec2's SpecAugment masking).

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

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

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
# NumPy's random functions that torch._numpy implements without reading tensor values (Dynamo
# traces these); any other `numpy.random.*` call (`permutation`, `default_rng`, ...) is
# "unsupported by PyTorch", and `choice` is a "Data dependent operator": both break.
NUMPY_RANDOM_TRACED = frozenset(
    {"normal", "rand", "randint", "randn", "random", "random_sample", "sample", "seed", "shuffle", "uniform"}
)


class UntraceableCall(Rule):
    code = "DYN105"
    name = "untraceable-call"
    summary = "Call into a module Dynamo skips"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0007", "Attempted to call function marked as skipped"),
        ("GB0014", "Attempted to wrap RNN, GRU, or LSTM"),
        ("GB0033", "Data dependent operator"),
        ("GB0294", "attempted to trace numpy function unsupported by PyTorch"),
    )
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if ctx.self_attr(func) in ctx.rnn_attrs:
            ctx.report(self, node, f"`self.{func.attr.value}` is an RNN module: Dynamo does not trace it and breaks the graph")
            return
        q = ctx.call_name(node)
        if q is None:
            return
        untraced_numpy = q.startswith("numpy.random.") and q.count(".") == 2 and q.rsplit(".", 1)[1] not in NUMPY_RANDOM_TRACED
        if q in UNTRACEABLE or (q.startswith(RANDOM_PREFIX) and q.count(".") == 1) or untraced_numpy:
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
            from random import random

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self.layer_dropout = 0.5

                def forward(self, x):
                    # Layer dropout drawn with Python's random (x_transformers): breaks on 2.13.
                    x = self.proj(x)
                    if random() < self.layer_dropout:  # expect: DYN105
                        x = x * 2
                    return x + 1
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
    invalid = invalid + (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self.rnn = nn.LSTM(4, 4, batch_first=True)

                def forward(self, x):
                    y = self.proj(x)
                    out, _ = self.rnn(y)  # expect: DYN105
                    return self.proj(out)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4),)",
        ),
        Example(
            """
            import torch
            from torch import nn

            class RNNBase(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.Identity()

                def forward(self, x):
                    out, _ = self.rnn(x)  # expect: DYN105
                    return out

            class M(RNNBase):  # the subclass makes `self.rnn` an LSTM
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.GRU(4, 4, batch_first=True)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4),)",
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                order = np.random.permutation(np.arange(4))  # expect: DYN105
                return x + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                keep = np.random.choice(np.arange(8), 3, replace=False)  # expect: DYN105
                return x * 2 + 1
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
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                noise = np.random.rand(3)  # traced through torch._numpy
                return x + 1
            """,
            dynamo=CLEAN,
        ),
    )


RULE = UntraceableCall

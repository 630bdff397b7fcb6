"""DYN106: NumPy math on Python numbers (`np.lcm(a, b)`, `np.prod(x.shape)`) used as a number.

## What it does
Finds `np.lcm`, `np.gcd`, `np.prod` and `np.sum` called on Python values (numbers, shapes, lists;
no tensor and no NumPy array among the arguments) in a compile region, when the result is used as
a number: in an `if` / `while` test or a comparison, in `range()` / `int()`, as a size (`np.zeros`,
`torch.zeros`, `x.reshape`, `x.new_zeros`, ...), as an index, or returned from a helper that
compiled code calls.

## Why it breaks the graph
Dynamo traces NumPy through `torch._numpy`: while compiling, `np.lcm(4, 6)` is a 0-d tensor, not
a number. Using it where Python needs a value breaks the graph: "generic_jump
NumpyNdarrayVariable" (a branch on it), "Data dependent operator" (a size), "torch.* op returned
non-Tensor" (`int()` of it). NumPy math feeding only tensor arithmetic is traced and not reported.

## Example
```python
def forward(self, input_ids):
    chunk = np.lcm(self.config.lsh_chunk_length, self.config.local_chunk_length)
    if input_ids.shape[-1] % chunk != 0:
        ...
```

## Use instead
The `math` module or a builtin on Python numbers: `math.lcm`, `math.gcd`, `math.prod`, `sum`
(the unsafe autofix). Unsafe because the result becomes a Python `int` instead of `np.int64`,
and because the linter cannot prove the arguments are not NumPy arrays (on an array `math.lcm`
raises and `sum` adds along the first axis only).
"""

import libcst as cst

from dynalint.fixes.numpy_math import MATH_EQUIVALENT, number_use, numpy_math_fix, python_values

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext


class NumpyScalarMath(Rule):
    code = "DYN106"
    name = "numpy-math-on-python-numbers"
    summary = "NumPy math on Python numbers is a tensor under Dynamo"
    gb_types = (
        ("GB0033", "Data dependent operator"),
        ("GB0170", "Data-dependent branching"),
        ("GB0208", "torch.* op returned non-Tensor"),
        ("GB0059", "Failed to trace builtin operator"),
    )
    node_types = (cst.Call,)
    fixable = "unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        q = ctx.call_name(node)
        if q is None or not q.startswith("numpy.") or q[len("numpy."):] not in MATH_EQUIVALENT:
            return
        short = q[len("numpy."):]
        if not python_values(node, short, ctx) or not number_use(node, ctx):
            return
        ctx.report(
            self,
            node,
            f"`np.{short}()` of Python numbers is a tensor while compiling and breaks the graph where it is "
            f"used as a number; use `{MATH_EQUIVALENT[short]}()`",
            fix=numpy_math_fix(ctx, node, short, self.code),
        )

    invalid = (
        Example(
            """
            import numpy as np
            import torch
            from torch import nn


            class M(nn.Module):
                def forward(self, x, sizes=(1, 2, 3)):
                    width = np.sum(list(sizes))  # expect: DYN106
                    return x.new_zeros((x.shape[0], width)) + x.sum()
            """,
            dynamo=BREAKS,
            fixed="""
                import numpy as np
                import torch
                from torch import nn


                class M(nn.Module):
                    def forward(self, x, sizes=(1, 2, 3)):
                        width = sum(list(sizes))  # expect: DYN106
                        return x.new_zeros((x.shape[0], width)) + x.sum()
            """,
        ),
        Example(
            """
            import numpy as np
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.a, self.b = 4, 6

                def forward(self, x):
                    n = int(np.lcm(self.a, self.b))  # expect: DYN106, DYN110
                    return x.repeat(1, n)
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
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.a, self.b = 4, 6

                def forward(self, x):
                    n = math.lcm(self.a, self.b)
                    return x.repeat(1, n) * np.lcm(self.a, self.b)
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                steps = np.arange(1, 4)
                return x * np.prod(steps)
            """,
            dynamo=CLEAN,
        ),
    )


RULE = NumpyScalarMath

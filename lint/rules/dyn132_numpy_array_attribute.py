"""DYN132: `.dtype` or `.strides` of a NumPy array in compiled code.

## What it does
Finds `a.dtype` and `a.strides` in a compile region where `a` is a NumPy array: a value NumPy
made (`np.zeros(...)`, a name bound to one), or a value whose `.dtype` is compared with a NumPy
type (`t.dtype != np.float32`, doctr's check of its training targets).

## Why it breaks the graph
Dynamo traces NumPy arrays as tensors through `torch._numpy`, which has no `ndarray.dtype`:
"Unsupported ndarray attribute access" (GB0157). Dynamo then gives up on the whole frame, which
runs eagerly (probed on torch 2.13.0 and 2.14.1: zero graphs). `.strides` breaks the graph
("Unsupported python_type() call"). `.shape`, `.ndim`, `.itemsize` and `.astype()` trace.

## Example
```python
def forward(self, x, boxes):
    if boxes.dtype != np.float32:
        raise TypeError("boxes must be float32")
    return x * torch.from_numpy(boxes).sum()
```

## Use instead
Check or convert the arrays before the compiled call (in the data pipeline), or make them torch
tensors first (`torch.as_tensor(boxes)`) and test `tensor.dtype == torch.float32`.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

_ATTRIBUTES = frozenset({"dtype", "strides"})


class NumpyArrayAttribute(Rule):
    code = "DYN132"
    name = "numpy-array-attribute"
    summary = "`.dtype` / `.strides` of a NumPy array in compiled code"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (("GB0157", "Unsupported ndarray attribute access"),)
    node_types = (cst.Attribute, cst.Comparison)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Attribute:
            if self._array_attribute(node, ctx):
                self._report(node, ctx)
            return
        sides = [node.left] + [c.comparator for c in node.comparisons]
        if not any(self._numpy_type(s, ctx) for s in sides):
            return
        for side in sides:
            # `t.dtype != np.float32`: a torch tensor's dtype never equals a NumPy type, so `t` is
            # an array (an array made by NumPy is reported as an attribute already)
            if (type(side) is cst.Attribute and side.attr.value == "dtype" and not self._array_attribute(side, ctx)
                    and not ctx.is_definite_tensor(side.value) and not self._numpy_type(side, ctx)):
                self._report(side, ctx)

    def _report(self, node: cst.Attribute, ctx: RuleContext) -> None:
        what = node.attr.value
        ctx.report(self, node, f"`ndarray.{what}` is not traced by Dynamo"
                               + (" (it skips the whole frame)" if what == "dtype" else "")
                               + "; check or convert NumPy arrays before the compiled call, or use a torch tensor's "
                                 "`dtype`")

    @staticmethod
    def _array_attribute(node: cst.Attribute, ctx: RuleContext) -> bool:
        if node.attr.value not in _ATTRIBUTES or ctx.in_assignment_target():
            return False
        q = ctx.qualname(node)
        return not (q and q.startswith("numpy.")) and ctx.is_numpy(node.value)

    @staticmethod
    def _numpy_type(node: cst.BaseExpression, ctx: RuleContext) -> bool:
        """`np.float32`, `numpy.int64`, `np.dtype("float32")`."""
        if type(node) is cst.Call:
            node = node.func
        q = ctx.qualname(node) if type(node) in (cst.Attribute, cst.Name) else None
        return bool(q) and q.startswith("numpy.") and q.count(".") == 1

    invalid = (
        Example(
            # doctr's DBNet target check, run in forward while training.
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x, target):
                for t in target:
                    if t.dtype != np.float32:  # expect: DYN132
                        raise AssertionError("expected float32 boxes")
                return x * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3), [np.zeros((2, 4), dtype=np.float32)])",
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                grid = np.zeros((3,), dtype=np.float32)
                scale = torch.tensor(1.0, dtype=torch.float64 if grid.dtype == np.float64 else torch.float32)  # expect: DYN132
                return x * scale
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # A torch tensor's dtype, and the shape of an array, trace.
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                grid = np.zeros((3, 4), dtype=np.float32)
                if x.dtype == torch.float32:
                    return x * grid.shape[0]
                return x
            """,
            dynamo=CLEAN,
        ),
    )


RULE = NumpyArrayAttribute

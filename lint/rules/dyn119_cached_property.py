"""DYN119: a `functools.cached_property` read in compiled code (Python before 3.12).

## What it does
Finds `self.<name>` read in a compile region where the class defines `<name>` with
`@functools.cached_property` (uni2ts' attention projection reads its split sizes this way), when
the linter runs on Python 3.11 or older.

## Why it breaks the graph
Before Python 3.12, `cached_property.__get__` computes the value under `with self.lock:`, a
`threading.RLock` Dynamo cannot enter ("Unsupported context manager", GB0142). Dynamo gives up
on the whole frame: `forward` runs eagerly, and it keeps skipping that frame on later calls
although the value is cached by then (probed on torch 2.13.0 and 2.14.1 with Python 3.11: zero
graphs over three calls). Python 3.12 dropped the lock, and the read traces.

## Example
```python
class Projection(nn.Module):
    @cached_property
    def split_sizes(self):
        return tuple(self.parts)

    def forward(self, x):
        q, k = self.proj(x).split(self.split_sizes, dim=-1)
```

## Use instead
Compute the value in `__init__` (`self.split_sizes = tuple(parts)`), or read it once before
compiling; a plain `@property` traces too (it is recomputed on every read).
"""

import sys

import libcst as cst

from ..nodes import class_of, dotted
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

# The lock went away in Python 3.12 (functools.cached_property no longer takes it).
LOCKED = sys.version_info < (3, 12)
_CACHED_PROPERTY = frozenset({"cached_property", "functools.cached_property"})


def _cached_properties(ctx: RuleContext) -> frozenset:
    state = ctx.rule_state("DYN119")
    key = id(ctx.fn)
    found = state.get(key)
    if found is None:
        cls = class_of(ctx.module, ctx.fn)
        found = frozenset(
            stmt.name.value
            for stmt in (cls.body.body if cls is not None else ())
            if type(stmt) is cst.FunctionDef and any(dotted(d.decorator) in _CACHED_PROPERTY for d in stmt.decorators)
        )
        state[key] = found
    return found


class CachedPropertyRead(Rule):
    code = "DYN119"
    name = "cached-property-in-compiled-code"
    summary = "`functools.cached_property` read in compiled code: Dynamo skips the frame (Python < 3.12)"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (("GB0142", "Unsupported context manager"),)
    node_types = (cst.Attribute,)

    def check(self, node: cst.Attribute, ctx: RuleContext) -> None:
        if not LOCKED or ctx.fn is None or ctx.in_assignment_target():
            return
        value = node.value
        if type(value) is not cst.Name or value.value != "self" or node.attr.value not in _cached_properties(ctx):
            return
        ctx.report(self, node, f"`self.{node.attr.value}` is a `cached_property`: before Python 3.12 its read takes a lock "
                               "Dynamo cannot trace, and the whole frame runs eagerly on every call; compute it in "
                               "`__init__`, or use a plain `@property`")

    invalid = (
        Example(
            # uni2ts' attention projection.
            """
            from functools import cached_property
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(8, 8)
                    self.parts = (4, 4)

                @cached_property
                def split_sizes(self):
                    return tuple(self.parts)

                def forward(self, x):
                    a, b = self.lin(x).split(self.split_sizes, dim=-1)  # expect: DYN119
                    return a * b
            """,
            dynamo=BREAKS if LOCKED else None,
            why="" if LOCKED else "Python 3.12 and later read a cached_property without a lock",
            inputs="(torch.randn(2, 8),)",
        ),
    ) if LOCKED else ()
    valid = (
        Example(
            # A plain property, or the value computed in __init__, traces.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(8, 8)
                    self.split_sizes = (4, 4)

                @property
                def half(self):
                    return self.split_sizes[0]

                def forward(self, x):
                    a, b = self.lin(x).split(self.split_sizes, dim=-1)
                    return a * b * self.half
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 8),)",
        ),
    )


RULE = CachedPropertyRead

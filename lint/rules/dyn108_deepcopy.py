"""DYN108: `copy.deepcopy()` / `copy.copy()` in compiled code.

## What it does
Finds `copy.deepcopy(...)` (also as `from copy import deepcopy`) in a compile region: of a tensor
or of the module itself on every torch version, of anything else where the code targets a torch
before 2.12 (`target-torch` in `[tool.dynalint]`, else the installed torch read from its package
metadata; with neither, it reports what breaks on any probed version). And `copy.copy(...)` of
anything: Dynamo skips the shallow copy (of a dict or list: "Attempted to call function marked as
skipped", GB0007; of a tensor GB0208; probed on 2.13.0 and 2.14.1), where the value's own
`.copy()` (or `dict(d)`, `list(xs)`, `t.clone()`) traces.

## Why it breaks the graph
Before torch 2.12 Dynamo does not trace `copy.deepcopy` at all ("copy.deepcopy()", GB0179):
copying a config or a dict of settings in `forward` ends the graph there (transformers copies a
config this way when an encoder-decoder model builds its cache, the most common remaining break
of M2M100, MVP and Blenderbot on torch 2.11). From 2.12 Dynamo inlines the `copy` module, so
plain Python values are copied while tracing (probed on 2.13 and 2.14.1; 2.12 read from its
Dynamo source), but a tensor still cannot be deep-copied ("Attempted to copy.deepcopy a tensor",
GB4198): nor can a module or a container that holds one, which the linter cannot see unless the
value is a tensor or `self`.

## Example
```python
def forward(self, x):
    cfg = copy.deepcopy(self.config)     # breaks before torch 2.12
    cfg.scale = 2.0
    snapshot = copy.deepcopy(x)          # breaks on every version
    return self.body(x, cfg) + snapshot
```

## Use instead
Copy configs once, outside the compiled region (in `__init__`, or before calling the compiled
model), and pass the copy in; or target torch 2.12 or later. For a tensor, `x.clone()` (or
`x.detach().clone()`) is traced and gives the same values.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext
from ..target import installed_torch, target_torch

TRACED_SINCE = (2, 12)  # Dynamo inlines the `copy` module from torch 2.12 (BUILTIN_INLINE_WHEN_CALLED)
# Does the installed torch trace `copy.deepcopy` of plain values? (Which examples hold: see below.)
_TRACES_DEEPCOPY = (installed_torch() or (0, 0)) >= TRACED_SINCE


class DeepcopyInRegion(Rule):
    code = "DYN108"
    name = "deepcopy-in-compiled-region"
    summary = "`copy.deepcopy()` (of a tensor always; of anything before torch 2.12) or `copy.copy()` breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0179", "copy.deepcopy()"),
        ("GB4198", "Attempted to copy.deepcopy a tensor"),
        ("GB0007", "Attempted to call function marked as skipped"),
        ("GB0208", "torch.* op returned non-Tensor"),
    )
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        q = ctx.call_name(node)
        if q == "copy.copy" and node.args and node.args[0].keyword is None:
            # pina's LabelTensor: `copy(self._labels)` of a dict (GB0007 on 2.13.0 and 2.14.1; of a
            # tensor, GB0208): Dynamo skips the shallow copy whatever it copies
            ctx.report(self, node, "`copy.copy()` is a function Dynamo skips, and breaks the graph; use the value's own "
                                   "copy (`d.copy()`, `dict(d)`, `list(xs)`, `t.clone()`)")
            return
        if q != "copy.deepcopy" or not node.args or node.args[0].keyword is not None:
            return
        value = node.args[0].value
        is_self = type(value) is cst.Name and value.value == "self"
        if is_self or ctx.is_definite_tensor(value):
            what = "the module" if is_self else "a tensor"
            ctx.report(self, node, f"`copy.deepcopy()` of {what} breaks the graph on every torch version; "
                                   "use `.clone()` for a tensor, or copy outside the compiled region")
            return
        target = target_torch()
        if target is not None and target >= TRACED_SINCE:
            return  # plain values are copied while tracing; what the value holds is not known
        ctx.report(self, node, "`copy.deepcopy()` is not traced by Dynamo before torch 2.12 and breaks the graph; "
                               "copy once outside the compiled region (in `__init__`) and pass the copy in")

    invalid = (
        Example(
            """
            import copy
            import torch

            @torch.compile
            def f(x):
                y = torch.sin(x)
                z = copy.deepcopy(y)  # expect: DYN108
                return z + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            from copy import deepcopy
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.linear = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.linear(x)
                    twin = deepcopy(self)  # expect: DYN108
                    return twin.linear(h)
            """,
            dynamo=BREAKS,
        ),
        Example(
            # pina's LabelTensor copies its labels with `copy(self._labels)`.
            """
            from copy import copy
            import torch

            @torch.compile
            def f(x):
                labels = {"a": 1, "b": 2}
                kept = copy(labels)  # expect: DYN108
                return x * kept["a"]
            """,
            dynamo=BREAKS,
        ),
    )
    # A config-like object: not traced (a break) before torch 2.12, copied while tracing from 2.12.
    # The linter follows the installed torch (no `target-torch`), so the example is invalid or valid by it.
    _config_copy = """
            import copy
            import torch


            class Settings:
                def __init__(self):
                    self.scale = 2.0
                    self.names = {{"a": [1, 2]}}


            SETTINGS = Settings()


            @torch.compile
            def f(x):
                y = x * 2
                settings = copy.deepcopy(SETTINGS){mark}
                settings.scale = 3.0
                return y * settings.scale
            """
    if _TRACES_DEEPCOPY:
        _config_examples = (Example(_config_copy.format(mark=""), dynamo=CLEAN),)
    else:
        invalid = invalid + (Example(_config_copy.format(mark="  # expect: DYN108"), dynamo=BREAKS),)
        _config_examples = ()
    valid = (
        Example(
            """
            import copy
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                return y.clone() + 1

            def snapshot(model):
                return copy.deepcopy(model)  # outside the compiled region
            """,
            dynamo=CLEAN,
        ),
        Example(
            # The value's own copy traces.
            """
            import torch

            @torch.compile
            def f(x):
                labels = {"a": 1, "b": 2}
                kept = labels.copy()
                return x * kept["a"]
            """,
            dynamo=CLEAN,
        ),
    ) + _config_examples


RULE = DeepcopyInRegion

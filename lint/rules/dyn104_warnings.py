"""DYN104: `warnings.warn` in compiled code.

## What it does
Finds `warnings.warn(...)` and `warnings.warn_explicit(...)` in a compile region.

## Why it breaks the graph
Dynamo marks the `warnings` module as skipped ("Attempted to call function marked as
skipped"): the call splits the graph, every time forward runs.

## Example
```python
def forward(self, x):
    if self.deprecated_flag:
        warnings.warn("flag is deprecated")
    return x
```

## Use instead
Warn once at construction time (`__init__`), or guard the call with
`if not torch.compiler.is_compiling():` (the autofix does this).

"""

import libcst as cst

from ..rule import BREAKS, CLEAN, GUARD_FIX_DOC, Example, Rule, RuleContext, offer_fix

__doc__ += GUARD_FIX_DOC


class WarningsWarn(Rule):
    code = "DYN104"
    name = "warnings-in-compiled-region"
    summary = "`warnings.warn()` breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0007", "Attempted to call function marked as skipped"),
    )
    node_types = (cst.Call,)
    fixable = "safe or unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        q = ctx.call_name(node)
        if q in ("warnings.warn", "warnings.warn_explicit"):
            ctx.report(
                self,
                node,
                f"`{q}()` breaks the graph; warn in `__init__` or guard with `if not torch.compiler.is_compiling():`",
                fix=offer_fix("guard", ctx, node, self.code),
            )

    invalid = (
        Example(
            """
            import warnings
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                warnings.warn("careful")  # expect: DYN104
                return y + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import warnings
                import torch

                @torch.compile
                def f(x):
                    y = x * 2
                    if not torch.compiler.is_compiling():
                        warnings.warn("careful")  # expect: DYN104
                    return y + 1
            """,
        ),
        Example(
            # The same method, called once with the argument: the warning runs there.
            """
            import warnings

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.features = nn.Linear(4, 4)

                def extract_features(self, obs, features_extractor=None):
                    if features_extractor is not None:
                        warnings.warn("features_extractor is deprecated")  # expect: DYN104
                    return self.features(obs)

                def forward(self, obs):
                    return self.extract_features(obs, self.features).relu()
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # peft's LoRA layers: `unmerge()` warns when nothing is merged, but forward calls it
            # only under `if self.merged:`, so the warning never runs while compiling.
            """
            import warnings

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.base = nn.Linear(4, 4)
                    self.merged = False
                    self.disable_adapters = True

                def unmerge(self):
                    \"\"\"Unmerge the adapter weights.\"\"\"
                    if not self.merged:
                        warnings.warn("Already unmerged. Nothing to do.")
                        return
                    self.merged = False

                def forward(self, x):
                    if self.disable_adapters:
                        if self.merged:
                            self.unmerge()
                    return self.base(x)
            """,
            dynamo=CLEAN,
        ),
        Example(
            # stable-baselines3's `extract_features(obs, features_extractor=None)`: every call
            # leaves the parameter at its default, so the deprecation warning never runs.
            """
            import warnings

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.features = nn.Linear(4, 4)

                def extract_features(self, obs, features_extractor=None):
                    if features_extractor is not None:
                        warnings.warn("features_extractor is deprecated", DeprecationWarning)
                    return self.features(obs)

                def forward(self, obs):
                    return self.extract_features(obs).relu()
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import warnings
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    warnings.warn("built once, eagerly")

                def forward(self, x):
                    return x * 2
            """,
            dynamo=CLEAN,
        ),
    )


RULE = WarningsWarn

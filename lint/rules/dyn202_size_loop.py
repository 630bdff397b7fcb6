"""DYN202: loop whose trip count is a tensor's size (recompile hint).

## What it does
Finds `for i in range(x.size(0))`, `for i in range(x.shape[0])` and `for row in x` in a compile
region.

## Why it matters
Dynamo unrolls the loop, which needs a concrete trip count: the size is specialised, so with
dynamic shapes each new size compiles a new graph, and long loops make large graphs.

## Example
```python
def forward(self, x):
    out = []
    for i in range(x.size(0)):
        out.append(self.cell(x[i]))
    return torch.stack(out)
```

## Use instead
Vectorise over the dimension (batch the call), or use a fixed trip count from the config.
"""

import libcst as cst

from ..kinds import Kind
from ..rule import NO_RECOMPILE, RECOMPILES, Example, Rule, RuleContext
from ..static_sizes import static_names, static_size, static_tensor


def _unbound(it: cst.Call, ctx: RuleContext):
    """The tensor of `x.unbind(0)` / `torch.unbind(x, 1)` (or of `enumerate()` of one), which
    gives one tensor per index of a dimension, as `for row in x`; else None."""
    if ctx.qualname(it.func) == "enumerate" and len(it.args) == 1 and type(it.args[0].value) is cst.Call:
        it = it.args[0].value
    func = it.func
    if ctx.qualname(func) == "torch.unbind":
        source = it.args[0].value if it.args else None
    elif type(func) is cst.Attribute and func.attr.value == "unbind":
        source = func.value
    else:
        return None
    return source if source is not None and ctx.is_tensor(source) else None


class SizeLoop(Rule):
    code = "DYN202"
    name = "loop-over-size"
    summary = "Loop over a tensor's size (recompiles per size)"
    severity = "warning"
    node_types = (cst.For,)

    def check(self, node: cst.For, ctx: RuleContext) -> None:
        it = node.iter
        if type(it) is cst.Call and ctx.call_name(it) == "range":
            sizes = [a.value for a in it.args if ctx.kind(a.value) == Kind.SIZE]
            if sizes and not all(static_size(s, ctx, static_names(ctx)) for s in sizes):
                ctx.report(self, it, "loop over a tensor's size is unrolled per size: recompiles when the size changes")
            return
        # (recbole's `for W in parameters:` over a list whose length never changes: a bare
        # parameter is no tensor here)
        rows = it if type(it) is not cst.Call and ctx.is_tensor_value(it) else _unbound(it, ctx) if type(it) is cst.Call else None
        if rows is not None and not ctx.from_module_call(rows) and not static_tensor(rows, ctx, static_names(ctx)):
            ctx.report(self, it, "loop over a tensor's rows is unrolled per size: recompiles when the size changes")

    invalid = (
        Example(
            # tianshou's BCQ: a helper's value declared a tensor is one (not a maybe-tuple).
            """
            import torch

            def to_torch(x):
                return torch.as_tensor(x) * 1

            @torch.compile
            def f(batch):
                obs_group: torch.Tensor = to_torch(batch)
                out = obs_group[0] * 0
                for obs in obs_group:  # expect: DYN202
                    out = out + obs
                return out
            """,
            dynamo=RECOMPILES,
            inputs="(torch.randn(3, 4),)",
            inputs2="(torch.randn(6, 4),)",
        ),
        Example(
            # xlstm's vanilla backend: a loop over `unbind()`, one step per time index.
            """
            import torch

            @torch.compile
            def f(x):
                h = x[0] * 0
                for xt in x.unbind(0):  # expect: DYN202
                    h = torch.tanh(h + xt)
                return h
            """,
            dynamo=RECOMPILES,
            inputs="(torch.randn(3, 4),)",
            inputs2="(torch.randn(6, 4),)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                out = x[0] * 0
                for i in range(x.size(0)):  # expect: DYN202
                    out = out + x[i]
                return out
            """,
            dynamo=RECOMPILES,
        ),
    )
    valid = (
        Example(
            # neuralforecast's TimeMixer (`season_list`) and gluonts' TFT (a submodule returning
            # `torch.chunk(...)`): loops over lists of tensors, whose length never changes.
            """
            import torch
            from torch import nn

            class Split(nn.Module):
                def forward(self, x):
                    return torch.chunk(x, 2, dim=-1)

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mix = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                    self.split = Split()

                def forward(self, season_list, x):
                    out = season_list[0]
                    for i in range(len(season_list) - 1):
                        out = self.mix[i](out) + season_list[i + 1]
                    parts = self.split(x)
                    for part in parts:
                        out = out + part.sum(-1, keepdim=True)
                    return out
            """,
            dynamo=NO_RECOMPILE,
            inputs="([torch.randn(3, 4) for _ in range(3)], torch.randn(3, 4))",
            inputs2="([torch.randn(6, 4) for _ in range(3)], torch.randn(6, 4))",
        ),
        Example(
            # peft's BOFT: a loop over the sizes of parameters and buffers, and of a tensor
            # computed only from them. Dynamo keeps those sizes static: no guard, no recompile.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rotations = nn.Parameter(torch.randn(3, 4, 4))
                    self.register_buffer("perm", torch.eye(4).repeat(3, 1, 1))

                def forward(self, x):
                    for i in range(self.rotations.shape[0]):
                        x = x @ self.rotations[i]
                    chain = torch.bmm(self.rotations, self.perm.permute(0, 2, 1))
                    m = chain[0]
                    for i in range(1, chain.shape[0]):
                        m = chain[i] @ m
                    return x @ m
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 4),)",
            inputs2="(torch.randn(6, 4),)",
        ),
        Example(
            # lightly's apply_masks: a tensor wrapped into a list is looped over as a list.
            """
            import torch

            def apply_masks(x, masks: torch.Tensor | list[torch.Tensor]):
                if not isinstance(masks, list):
                    masks = [masks]
                out = []
                for m in masks:
                    out.append(x * m)
                return torch.cat(out, 0)

            @torch.compile
            def f(x):
                return apply_masks(x, x > 0)
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 4),)",  # not square: duck shaping would give both sizes one symbol
            inputs2="(torch.randn(6, 4),)",
        ),
        Example(
            # ultralytics' make_anchors: its caller's annotation says tensor, the function itself
            # tests for a list (and is given one): `len()` of a list of levels.
            """
            import torch
            from torch import nn

            def anchors(feats, strides):
                out = []
                for i in range(len(feats)):
                    h = feats[i].shape[2] if isinstance(feats, list) else feats.shape[2]
                    out.append(torch.arange(h).float() * strides[i])
                return torch.cat(out)

            class M(nn.Module):
                def forward(self, x: dict[str, torch.Tensor]):
                    return anchors(x["feats"], (8, 16))
            """,
            dynamo=NO_RECOMPILE,
            inputs="({'feats': [torch.randn(1, 3, 5, 7), torch.randn(1, 3, 9, 11)]},)",  # no two sizes alike
            inputs2="({'feats': [torch.randn(1, 3, 6, 8), torch.randn(1, 3, 10, 12)]},)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                out = x[0] * 0
                for i in range(3):
                    out = out + x[i]
                return out
            """,
            dynamo=NO_RECOMPILE,
        ),
    )


RULE = SizeLoop

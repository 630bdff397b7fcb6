"""DYN130: operator whose output shape depends on tensor values.

## What it does
Finds `torch.nonzero` / `Tensor.nonzero()`, one-argument `torch.where(cond)`,
`torch.masked_select`, `torch.argwhere`, `torch.bincount`, `torch.unique` (and
`unique_consecutive`; a loop over it is DYN121's), `torch.repeat_interleave` /
`x.repeat_interleave` with tensor repeats (or `torch.repeat_interleave(counts)`, its
one-argument form) and no `output_size=` (with it the length is known, and Dynamo traces it), indexing with a boolean mask (`x[x > 0]`, also as one index of several and through
`.view()` / `.reshape()` / `.flatten()`: `x[:, mask.view(-1)]`) and
`torchvision.ops.nms` / `batched_nms`, `torch.linalg.lstsq` (its rank and residuals, on CPU
tensors) and `F.ctc_loss` in a compile region. Assigning through a mask
(`x[mask] = 0`) and three-argument `torch.where` keep their shape and are not reported; an
in-place update through a mask (`x[mask] += 1`) reads `x[mask]` first, and is.

## Why it breaks the graph
The number of elements these produce is only known at run time. With the default
`capture_dynamic_output_shape_ops=False` Dynamo breaks the graph ("Dynamic shape operator").

## Example
```python
def forward(self, x):
    return x[x > 0].sum()
```

## Use instead
Keep the shape static with masking arithmetic: `(x * (x > 0)).sum()` or
`torch.where(x > 0, x, 0).sum()`; `torch.nonzero_static(x, size=k)` when an upper bound is known.
The unsafe autofix rewrites a full `.sum()` or `.mean()` of `x[x > 0]` (a mask comparing the
selected values with a number): `torch.where(x > 0, x, 0).sum()`, and for the mean divided by
`(x > 0).sum()` (an empty selection is nan either way). `x[mask] = v` is not reported: Dynamo
traces assignment through a mask (probed on torch 2.13).

An in-place update through a mask, `x[mask] += v` (also `-=`, `*=`, `/=`), becomes the same
update in place without reading the selection: `x.copy_(torch.where(mask, x + v, x))`, the mask
given trailing unit dimensions when it indexes only x's leading ones. Offered when `v` does not
depend on the selection (so its shape broadcasts against x as against `x[mask]`); unsafe because
`x + v` is now computed for every element.

A mixture-of-experts loop that gathers each expert's tokens with `torch.where(mask)` and
scatters them back with `index_add_` (the Mixtral / Switch Transformers loop, over `range(n)` or
over `hit.nonzero()`) gets an unsafe fix too: dense dispatch, each expert run on all tokens and
its output weighted by the token's routing weights for it (zero for the others). One graph, but
every expert does the work for every token, so it pays where the graph breaks cost more than the
extra expert compute (small expert counts, short sequences); verify times it. Measured on an
H100 with Switch Transformers (8 experts, top-1) and its other fixes: 2.2-2.7x faster where the
breaks left the GPU idle most of the time (d_model 512, 4 layers, batch 4 x 512), 1.8x slower
where it was already busy (d_model 1024, 8 layers, batch 8 x 1024). It is the same sum only for experts that treat tokens
one by one (MLPs) and give finite outputs for every token; on a GPU the expert matrix products
run on other shapes, so float32 results differ in the last bits (2e-05 there).

Rows picked by a mask, run through some work and written back through the same mask
(`out[mask] = expert(x[mask])`: top-1 experts in research code, X-MOD's language adapters,
through names too: `picked = x[mask]; y = adapter(picked); out[mask] = y`) get the same kind of
unsafe fix: the work runs on all rows and `out.copy_(torch.where(mask, y, out))` keeps its result
where the mask is set (the mask given trailing unit dimensions; `probs[mask, i]` becomes
`probs.select(mask.dim(), i)`), and an `if mask.any():` holding only that is dropped. The rows
keep their values only if each step treats rows independently (no dropout, batch statistics or
attention across the selected rows): the fix trusts submodules (not those `__init__` builds as
`BatchNorm*`, attention, Transformer layers, RNNs or a softmax over a leading dimension) and torch
operations whose dimensions allow it, and is not offered through plain functions (PyG's `softmax(src, index)`
groups rows), along a leading dimension, or where selected values index another tensor. X-MOD
with 4 languages on an H100: 6 graphs to 1, 1.30-1.45x faster.
"""

import libcst as cst

from ..kinds import Kind
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

DYNAMIC_FUNCS = frozenset(
    {
        "torch.nonzero",
        "torch.masked_select",
        "torch.argwhere",
        "torch.bincount",
        "torch.unique",
        "torch.unique_consecutive",
        "torchvision.ops.nms",
        "torchvision.ops.batched_nms",
        "torchvision.ops.boxes.nms",
        "torchvision.ops.boxes.batched_nms",
        "torch.ops.torchvision.nms",  # the operator behind them (torchvision's own code calls it)
    }
)
DYNAMIC_METHODS = frozenset({"nonzero", "masked_select", "argwhere", "bincount", "unique", "unique_consecutive"})
UNIQUE = frozenset({"torch.unique", "torch.unique_consecutive", "unique", "unique_consecutive"})


def _iterated_by_loop(node: cst.Call, ctx) -> bool:
    """`for c in torch.unique(labels):` is one break, DYN121's (a loop of data-dependent length)."""
    parent = next(ctx.iter_ancestors(), None)
    return type(parent) in (cst.For, cst.CompFor) and parent.iter is node
# What a human can do where no autofix applies.
ADVICE = (
    "; keep shapes static: mask instead (`torch.where(mask, x, 0)`), `torch.nonzero_static(m, size=k)` "
    "with a known bound, or for expert routing run each expert on all tokens weighted by its mask"
)


def _fix(ctx, node, code):
    """Dense dispatch for an expert loop, else masking arithmetic for a selection that is summed."""
    return offer_fix("experts", ctx, node, code) or offer_fix("mask", ctx, node, code)


def _file_functions(ctx) -> frozenset:
    """Names of the functions the file defines at module level (asked per function walked)."""
    state = ctx.rule_state("DYN130")
    names = state.get("file_functions")
    if names is None:
        names = state["file_functions"] = frozenset(
            stmt.name.value for stmt in ctx.module.body if type(stmt) is cst.FunctionDef)
    return names


# Receivers a boolean mask may index: tensors, and values of unknown kind (only a tensor takes a
# boolean tensor as an index).
_MASKABLE = (Kind.TENSOR, Kind.BOOL_TENSOR, Kind.PRESUMED, Kind.UNKNOWN)


def _boolean_index(index: cst.BaseExpression, ctx) -> bool:
    """A boolean tensor, or a tensor for sure named as a mask (ultralytics' `fg_mask: Tensor`
    parameters, whose dtype no annotation says)."""
    if ctx.kind(index) == Kind.BOOL_TENSOR:
        return True
    # Only while it holds the parameter: `fg_mask = fg_mask.nonzero(as_tuple=True)` makes indices.
    return (type(index) is cst.Name and "mask" in index.value.lower() and ctx.is_parameter(index.value)
            and ctx.is_definite_tensor(index))


def _repeats_from_tensor(node: cst.Call, q, ctx) -> bool:
    """`torch.repeat_interleave(x, repeats)` with tensor repeats, `torch.repeat_interleave(counts)`
    (one argument: the repeats, always a tensor) or `x.repeat_interleave(counts)` with a tensor
    for sure; none with `output_size=`."""
    if any(a.keyword is not None and a.keyword.value == "output_size" for a in node.args):
        return False
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    if q == "torch.repeat_interleave":
        if len(node.args) == 1 and len(positional) == 1:
            return ctx.kind(positional[0]) not in (Kind.NOT_TENSOR, Kind.SIZE)
        return len(node.args) >= 2 and ctx.is_tensor(node.args[1].value)
    func = node.func
    return (type(func) is cst.Attribute and func.attr.value == "repeat_interleave" and len(positional) >= 1
            and ctx.is_tensor(func.value) and ctx.is_definite_tensor(positional[0]))


class DynamicShapeOp(Rule):
    code = "DYN130"
    name = "data-dependent-output-shape"
    summary = "Operator with a data-dependent output shape"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0036", "Dynamic shape operator"),
    )
    node_types = (cst.Call, cst.Subscript)
    fixable = "unsafe"

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Call:
            q = ctx.call_name(node)
            # A wrapper defined in this very file (torchvision's own `nms()` in ops/boxes.py) is
            # linted too: the operator inside it is reported there, not each call of the wrapper.
            method = node.func.attr.value if type(node.func) is cst.Attribute else None
            if (q in UNIQUE or method in UNIQUE) and _iterated_by_loop(node, ctx):
                return
            if q in DYNAMIC_FUNCS and not (type(node.func) is cst.Name and node.func.value in _file_functions(ctx)):
                ctx.report(self, node, f"`{q}()` has a data-dependent output shape and breaks the graph{ADVICE}", fix=_fix(ctx, node, self.code))
            elif _repeats_from_tensor(node, q, ctx):
                # `output_size=` gives the length: traced (probed on torch 2.11, 2.13 and 2.14.1).
                ctx.report(self, node, "`repeat_interleave()` with tensor repeats has a data-dependent output "
                                       "shape and breaks the graph; pass `output_size=` (the total, where a shape or a "
                                       "Python number gives it) or set `torch._dynamo.config."
                                       "capture_dynamic_output_shape_ops = True` (`dynalint verify --try-settings` "
                                       "checks it)")
            elif q == "torch.nn.functional.ctc_loss":
                # doctr's CRNN loss (probed on 2.13.0 and 2.14.1: "Dynamic shape operator"
                # `aten._ctc_loss.Tensor`, with tensor or list lengths)
                ctx.report(self, node, "`ctc_loss()` is a dynamic-shape operator for Dynamo and breaks the graph; "
                                       "compute the loss outside the compiled region (return the log-probabilities)")
            elif q == "torch.linalg.lstsq":
                # pypots' Koopa (probed on 2.13.0 and 2.14.1, CPU tensors; `driver="gels"` too)
                ctx.report(self, node, "`torch.linalg.lstsq()` has data-dependent output shapes (rank, residuals: "
                                       "measured on CPU tensors) and breaks the graph; for a full-rank system "
                                       "`torch.linalg.pinv(A) @ B` or `torch.linalg.solve(A.mT @ A, A.mT @ B)` traces")
            elif q == "torch.where" and len(node.args) == 1:
                ctx.report(self, node, "one-argument `torch.where()` has a data-dependent output shape and breaks the graph; use the three-argument form", fix=_fix(ctx, node, self.code))
            elif (
                type(node.func) is cst.Attribute
                and node.func.attr.value in DYNAMIC_METHODS
                and (ctx.is_tensor(node.func.value)
                     # only tensors have it (NumPy arrays and pandas have `nonzero` / `unique`)
                     or (node.func.attr.value == "masked_select" and ctx.kind(node.func.value) != Kind.NOT_TENSOR))
            ):
                ctx.report(self, node, f"`.{node.func.attr.value}()` has a data-dependent output shape and breaks the graph{ADVICE}", fix=_fix(ctx, node, self.code))
            return
        # x[mask] with a boolean tensor mask, read (not assigned); `x[mask] += v` reads it first.
        storing = ctx.in_assignment_target()
        updated = storing and ctx.is_augmented_target(node)
        if (storing and not updated) or ctx.kind(node.value) not in _MASKABLE:
            return
        for el in node.slice:
            if type(el.slice) is cst.Index and _boolean_index(el.slice.value, ctx) and (
                ctx.is_tensor(node.value) or ctx.kind(el.slice.value) == Kind.BOOL_TENSOR
            ):
                # a value of unknown kind indexed by a boolean tensor is a tensor (roma's `q1`
                # from a helper's tuple: `q1[cos_omega < 0, :] *= -1`)
                if updated:
                    ctx.report(
                        self,
                        node,
                        "`x[mask] op= v` reads `x[mask]` (a data-dependent shape) and breaks the graph; use `x = torch.where(mask, x op v, x)`",
                        fix=offer_fix("mask_update", ctx, node, self.code),
                    )
                    return
                ctx.report(
                    self,
                    node,
                    "indexing with a boolean mask has a data-dependent output shape and breaks the graph; use `torch.where(mask, x, 0)`",
                    fix=offer_fix("mask", ctx, node, self.code) or offer_fix("dispatch", ctx, node, self.code),
                )
                return

    invalid = (
        Example(
            # x-clip's contrastive loss: the off-diagonal similarities taken in a mapped lambda.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, t):
                    off_diag = ~torch.eye(t.shape[1], dtype=torch.bool)
                    a, b = map(lambda u: torch.einsum("b i d, b j d -> b i j", u, u)[:, off_diag], (t, t * 2))  # expect: DYN130
                    return a.sum() + b.sum()
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(1, 4, 8),)",
        ),
        Example(
            # torchmultimodal's FLAVA: positive pairs, or a one-element mask when there are none.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, labels):
                    pos = labels.ne(0)
                    pos = torch.where(pos.any(), pos, pos.new([True]))
                    return x[pos].sum()  # expect: DYN130
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(4), torch.tensor([0, 1, 1, 0]))",
        ),
        Example(
            # doctr's CRNN: the CTC loss in the model's forward.
            """
            import torch
            import torch.nn.functional as F

            @torch.compile
            def f(log_probs, targets, input_lengths, target_lengths):
                y = log_probs * 2
                return F.ctc_loss(y, targets, input_lengths, target_lengths)  # expect: DYN130
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(10, 2, 5).log_softmax(2), torch.randint(1, 5, (2, 4)), torch.full((2,), 10), torch.full((2,), 4))",
        ),
        Example(
            # x-clip's contrastive loss: the off-diagonal similarities, a mask made as booleans.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, t):
                    off_diag = ~torch.eye(t.shape[1], dtype=torch.bool)
                    sim = torch.einsum("b i d, b j d -> b i j", t, t)
                    return sim[:, off_diag].sum()  # expect: DYN130
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(1, 4, 8),)",
        ),
        Example(
            # pypots' Koopa: the Koopman operator fitted by least squares in forward.
            """
            import torch

            @torch.compile
            def f(x, y):
                k = torch.linalg.lstsq(x, y).solution  # expect: DYN130
                return x @ k
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(6, 3), torch.randn(6, 2))",
        ),
        Example(
            # torchani: a field declared `distances: Tensor` in a NamedTuple of the file.
            """
            from typing import NamedTuple

            import torch
            from torch import Tensor, nn

            class Neighbors(NamedTuple):
                indices: Tensor
                distances: Tensor

            class M(nn.Module):
                def forward(self, x, neighbors: Neighbors):
                    closer = (neighbors.distances <= 2.0).nonzero().flatten()  # expect: DYN130
                    return x * 2 + closer.sum()
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3), __import__('collections').namedtuple('Neighbors', 'indices distances')(torch.arange(4), torch.rand(4) * 4))",
        ),
        Example(
            # spandrel's HVI-CIDNet: a method (not forward) of a submodule class of the file,
            # given the input: its parameter is a tensor.
            """
            import torch
            from torch import nn

            class HVITransform(nn.Module):
                def hvi(self, img):
                    hue = torch.zeros(img.shape[0], img.shape[2], img.shape[3])
                    value = img.max(1)[0]
                    ratio = (img[:, 0] - img[:, 1]) / (value + 1e-8)
                    hue[img[:, 2] == value] = 4.0 + ratio[img[:, 2] == value]  # expect: DYN130
                    return hue

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.trans = HVITransform()

                def forward(self, x):
                    return self.trans.hvi(x) * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.rand(1, 3, 4, 4),)",
        ),
        Example(
            # vit-pytorch's adaptive token sampling. `torch.unique` of a graph input looks traced
            # (explain counts one graph: the break comes before any op); of a computed tensor it breaks.
            """
            import torch

            @torch.compile
            def f(x):
                labels = (x > 0).long()
                classes = torch.unique(labels, sorted=True)  # expect: DYN130
                return classes * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                mask = x > 0
                x[mask] += 1.0  # expect: DYN130
                x[mask] = 0.0  # assignment alone keeps the shape
                return x * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.offsets = [0.0, 1.0]

                def forward(self, x):
                    out = []
                    # Rows of a tensor, taken through zip(), are tensors.
                    for row, offset in zip(x.softmax(-1), self.offsets):
                        out.append(row[row > 0.1].sum() + offset)  # expect: DYN130
                    return out
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 8),)",
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.offsets = [0.0, 1.0]

                    def forward(self, x):
                        out = []
                        # Rows of a tensor, taken through zip(), are tensors.
                        for row, offset in zip(x.softmax(-1), self.offsets):
                            out.append(torch.where(row > 0.1, row, 0).sum() + offset)  # expect: DYN130
                        return out
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                idx = torch.nonzero(x > 0)  # expect: DYN130
                return idx.float().sum() + x
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                return y[y > 0].sum()  # expect: DYN130
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                rows, cols = torch.where(x > 0)  # expect: DYN130
                return x[rows, cols] * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                return torch.masked_select(x, x > 0) * 2  # expect: DYN130
            """,
            dynamo=BREAKS,
        ),
        Example(
            # equiformer: `.masked_select()` on a value of unknown kind (an einops result there):
            # only tensors have the method.
            """
            import torch

            TABLES = {"offsets": torch.arange(4.0)}

            @torch.compile
            def f(x):
                offsets = TABLES["offsets"]
                return offsets.masked_select(x > 0) * 2  # expect: DYN130
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                counts = torch.bincount((y > 0).long().flatten())  # expect: DYN130
                return counts.sum() + y
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

                def forward(self, x):
                    weights, chosen = x[:, :3].softmax(-1).topk(2, dim=-1)
                    mask = nn.functional.one_hot(chosen, 3).permute(2, 1, 0)
                    out = torch.zeros_like(x)
                    for e in range(3):
                        slot, tok = torch.where(mask[e])  # expect: DYN130
                        y = self.experts[e](x[tok]) * weights[tok, slot, None]
                        out.index_add_(0, tok, y)
                    return out
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(6, 4),)",
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

                    def forward(self, x):
                        weights, chosen = x[:, :3].softmax(-1).topk(2, dim=-1)
                        mask = nn.functional.one_hot(chosen, 3).permute(2, 1, 0)
                        out = torch.zeros_like(x)
                        for e in range(3):
                            routing_mask = mask[e] != 0  # expect: DYN130
                            y = self.experts[e](x) * torch.einsum("tk...,kt->t...", weights, routing_mask.to(weights.dtype))[:, None]
                            out.add_(y)
                        return out
            """,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

                def forward(self, x):
                    # LongCat-Flash: the expert's number taken out of each row of nonzero()
                    weights, chosen = x[:, :3].softmax(-1).topk(2, dim=-1)
                    mask = nn.functional.one_hot(chosen, num_classes=3).permute(2, 1, 0)
                    out = torch.zeros_like(x)
                    hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero(as_tuple=False)  # expect: DYN130
                    for row in hit:  # expect: DYN202
                        e = int(row.item())  # expect: DYN110
                        slot, tok = torch.where(mask[e])  # expect: DYN130
                        y = self.experts[e](x[tok]) * weights[tok, slot, None]
                        out.index_add_(0, tok, y)
                    return out
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(6, 4),)",
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

                    def forward(self, x):
                        # LongCat-Flash: the expert's number taken out of each row of nonzero()
                        weights, chosen = x[:, :3].softmax(-1).topk(2, dim=-1)
                        mask = nn.functional.one_hot(chosen, num_classes=3).permute(2, 1, 0)
                        out = torch.zeros_like(x)
                        hit = torch.greater(mask.sum(dim=(-1, -2)), 0)  # expect: DYN130
                        for e in range(hit.shape[0]):  # expect: DYN202
                            routing_mask = mask[e] != 0  # expect: DYN130
                            y = self.experts[e](x) * torch.einsum("tk...,kt->t...", weights, routing_mask.to(weights.dtype))[:, None]
                            out.add_(y)
                        return out
            """,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.adapters = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

                def forward(self, hidden, lang_ids: torch.Tensor):
                    # X-MOD: each sequence goes through its language's adapter
                    out = torch.zeros_like(hidden)
                    for i, adapter in enumerate(self.adapters):
                        lang_mask = lang_ids == i
                        picked = hidden[lang_mask]  # expect: DYN130
                        adapted = adapter(picked)
                        out[lang_mask] = adapted
                    return out + hidden
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(4, 3, 8), torch.tensor([0, 1, 1, 0]))",
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.adapters = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

                    def forward(self, hidden, lang_ids: torch.Tensor):
                        # X-MOD: each sequence goes through its language's adapter
                        out = torch.zeros_like(hidden)
                        for i, adapter in enumerate(self.adapters):
                            lang_mask = lang_ids == i
                            picked = hidden  # expect: DYN130
                            adapted = adapter(picked)
                            out.copy_(torch.where(lang_mask.reshape(lang_mask.shape + (1,) * (out.dim() - lang_mask.dim())), adapted, out))
                        return out + hidden
            """,
        ),
        Example(
            # ultralytics' rotated-box loss: a foreground mask handed in as a tensor.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, pred: torch.Tensor, target: torch.Tensor, fg_mask: torch.Tensor):
                    weight = target.sum(-1)[fg_mask].unsqueeze(-1)  # expect: DYN130
                    loss = (pred[fg_mask] - target[fg_mask]).abs().mul(weight).sum()  # expect: DYN130 DYN130
                    fg_mask = fg_mask.nonzero(as_tuple=True)  # expect: DYN130
                    return loss + pred[fg_mask].sum()  # indices now: a gather, no mask
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(6, 4), torch.randn(6, 4), torch.tensor([True, False, True, True, False, True]))",
        ),
        Example(
            # A comprehension's loop binds its names before its element reads them.
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                return [row[row > 0].sum() for row in y]  # expect: DYN130
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3, 4),)",
        ),
        Example(
            # torchani's neighbour list: pair indices from per-atom counts, and a mask reshaped
            # to index the second dimension.
            """
            import torch

            @torch.compile
            def f(x, counts):
                pair_sizes = (counts * (counts - 1)).div(2, rounding_mode="floor")
                pair_indices = torch.repeat_interleave(pair_sizes)  # expect: DYN130
                mask = torch.arange(4) < pair_sizes.view(-1, 1)
                local = x.repeat(1, pair_sizes.shape[0])[:, mask.view(-1)]  # expect: DYN130
                return pair_indices.sum() + local.sum()
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(4, 4), torch.tensor([2, 3, 1, 4]))",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                counts = (x > 0).sum(-1)
                return x.repeat_interleave(counts, dim=0).sum()  # expect: DYN130
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(4, 3),)",
        ),
    )
    valid = (
        Example(
            # `n_rep` may be a number (transformers' repeat_kv): the method form needs a tensor for sure.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, n_rep):
                    return x.repeat_interleave(n_rep, dim=1) * 2
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 3), 2)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x.clone()
                y[y < 0] = 0.0
                idx = torch.tensor([0, 2])
                return torch.where(y > 0, y, 0.0).sum() + y[idx].sum()
            """,
            dynamo=CLEAN,
        ),
        Example(
            # `output_size=` gives the length: no data-dependent shape.
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                repeats = torch.full((x.shape[0],), 2)
                return torch.repeat_interleave(y, repeats, dim=0, output_size=2 * x.shape[0]) + 1
            """,
            dynamo=CLEAN,
        ),
    )


RULE = DynamicShapeOp

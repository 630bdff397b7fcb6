"""DYN110: `Tensor.item()`, or `int()` / `float()` / `bool()` of a tensor, in compiled code.

## What it does
Finds `.item()` calls (on tensors, and on NumPy arrays, which Dynamo traces as tensors) and `int(t)`, `float(t)`, `bool(t)` where `t` is a tensor, in a compile
region. `.item()` in a training loop outside any compiled region is not reported.

## Why it breaks the graph
Turning a tensor into a Python number needs its value, which does not exist while tracing.
With the default `capture_scalar_outputs=False` Dynamo breaks the graph ("Unsupported
Tensor.item() call"); on GPU the read is also a device-to-host sync.

## Example
```python
def forward(self, x):
    scale = x.abs().max().item()
    return x / scale
```

## Use instead
Keep the value a tensor: `x / x.abs().max()` (the unsafe autofix drops `.item()` when the value
only feeds tensor arithmetic). To report a number, return the tensor and call `.item()` outside
the compiled model. A value that decides a Python branch (read in an `if`/`while` test, a
`bool()`, an `.any()`/`.all()` flag such as Longformer's `is_global_attn`, or a name a test of
the function reads) breaks either way: without `.item()` the branch on the tensor breaks
instead. Compute the flag outside the compiled region and pass it in as a Python value (Dynamo
guards on it), or keep both paths as tensors and select with `torch.where`; the message says so.

A tensor built from a Python number only to do math on it and be read back
(`2 ** float(torch.tensor(s).log2().round())`, `-torch.log2(torch.tensor(s)).item()`) gets an
unsafe fix that does the math in Python (`2 ** float(round(math.log2(s)))`): Dynamo folds it
while tracing. Python computes in float64 where the tensor was float32, so the last bits may
differ.

`x.new_full(size, t)` with a tensor fill value reads it the same way (an implicit `.item()`;
in ultralytics' `make_anchors` loop over the strides, Dynamo gives up on the whole function):
the unsafe fix writes `torch.full(size, t, dtype=x.dtype, device=x.device)`, which keeps a 0-d
tensor fill value in the graph (probed).

`torch.allclose(a, b)` / `torch.equal(a, b)` (and the methods) read tensor values into a Python
bool the same way, wherever they are (an `assert` with a literal message too; as an `if` test,
DYN120 reports them).

A tensor passed where a function takes a Python number is read the same way: `F.huber_loss(...,
delta=t)` (mace's conditional Huber loss), `F.leaky_relu(x, t)`, `F.dropout(x, p=t)`,
`F.pad(x, pad, value=t)`, `torch.full_like(x, t)` and the other parameters in
`NUMBER_PARAMETERS`, each probed with a 0-d tensor on torch 2.13 and 2.14.1 ("Data dependent
operator"). Pass a Python number or write the formula with tensor ops; no autofix.

An `assert` whose test is one comparison with the read value (`assert lengths.max().item() <=
slen`, XLM) gets an unsafe fix that asserts the tensor comparison (`assert lengths.max() <=
slen`): Dynamo keeps it in the graph (probed on torch 2.11, 2.13 and 2.14.1). Eager runs raise the
same AssertionError; compiled, a failure raises RuntimeError; the comparison is done in the
tensor's dtype. An `assert` whose test is the read value itself (`assert torch.all(ids >=
0).item(), msg`, ProphetNet and UDOP; `assert bool(t)`) asserts the tensor instead, with the same
trade.
"""

import libcst as cst

from ..fastcst import iter_nodes
from ..kinds import Kind
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix
from ..variables import target_names, variable_names
from .dyn106_numpy_scalar_math import numpy_math_of_numbers

# Without a fix, a value that decides a Python branch gets advice that fits it: dropping `.item()`
# only moves the break to the branch on the tensor.
BRANCH_MESSAGE = (
    "{what} reads a tensor value that decides a Python branch and breaks the graph (without it the "
    "branch on the tensor breaks instead): compute the flag outside the compiled region and pass it "
    "in as a Python value, or keep both paths as tensors and select with `torch.where`"
)
FLAG_REDUCTIONS = frozenset(("any", "all"))


def _in_raise(ctx: RuleContext) -> bool:
    return type(ctx.innermost_statement()) is cst.Raise



# Functions with a parameter that must be a Python number (`delta: float`): a tensor there is read
# back with `.item()` ("Data dependent operator", probed on torch 2.13 and 2.14.1 with a 0-d
# tensor computed in the graph). name -> {parameter: position}.
NUMBER_PARAMETERS = {
    "torch.nn.functional.huber_loss": {"delta": 3},
    "torch.nn.functional.smooth_l1_loss": {"beta": 5},
    "torch.nn.functional.leaky_relu": {"negative_slope": 1},
    "torch.nn.functional.elu": {"alpha": 1},
    "torch.nn.functional.celu": {"alpha": 1},
    "torch.nn.functional.softplus": {"beta": 1, "threshold": 2},
    "torch.nn.functional.hardtanh": {"min_val": 1, "max_val": 2},
    "torch.nn.functional.dropout": {"p": 1},
    "torch.nn.functional.alpha_dropout": {"p": 1},
    "torch.nn.functional.threshold": {"threshold": 1, "value": 2},
    "torch.nn.functional.normalize": {"p": 1},
    "torch.nn.functional.pad": {"value": 3},
    "torch.nn.functional.margin_ranking_loss": {"margin": 3},
    "torch.nn.functional.triplet_margin_loss": {"margin": 3},
    "torch.nn.functional.cosine_embedding_loss": {"margin": 3},
    "torch.nn.functional.cross_entropy": {"label_smoothing": 7},
    "torch.nn.functional.softshrink": {"lambd": 1},
    "torch.nn.functional.hardshrink": {"lambd": 1},
    "torch.nn.functional.layer_norm": {"eps": 4},
    "torch.full_like": {"fill_value": 1},
}


def _value_comparison(node: cst.Call, ctx: RuleContext):
    """`torch.allclose(a, b)`, `torch.equal(a, b)`, `a.equal(b)`, `a.allclose(b)` of tensors: the
    name to show, else None. Probed on 2.13.0 and 2.14.1: a break at the call wherever it is (an
    `assert` with a literal message too)."""
    q = ctx.call_name(node)
    if q in ("torch.allclose", "torch.equal"):
        return q
    func = node.func
    if type(func) is cst.Attribute and func.attr.value in ("allclose", "equal") and ctx.is_definite_tensor(func.value):
        return f".{func.attr.value}"
    return None


def _branch_test(node: cst.Call, ctx: RuleContext) -> bool:
    """Is the call (or `not` of it) the whole test of the `if` / `while` / conditional around it?"""
    for a in ctx.iter_ancestors():
        if type(a) is cst.UnaryOperation and type(a.operator) is cst.Not:
            continue
        if type(a) in (cst.If, cst.While, cst.IfExp):
            test = a.test
            while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
                test = test.expression
            return test is node
        return False
    return False


def _number_arguments(node: cst.Call, params: dict) -> list:
    """(parameter, value) of the arguments a call passes to its number parameters."""
    by_position = {i: name for name, i in params.items()}
    out = []
    for i, arg in enumerate(node.args):
        if arg.star:
            break
        name = arg.keyword.value if arg.keyword is not None else by_position.get(i)
        if name in params:
            out.append((name, arg.value))
    return out


class ItemCall(Rule):
    code = "DYN110"
    name = "tensor-to-python-scalar"
    summary = "`.item()` / `int(tensor)` breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0033", "Data dependent operator"),
        ("GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False"),
    )
    node_types = (cst.Call,)
    fixable = "unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        if _in_raise(ctx):
            return  # `raise ValueError(f"... {ids.max().item()}")`: runs only on the error path
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "item" and not node.args:
            recv_kind = ctx.kind(func.value)
            if recv_kind in (Kind.NOT_TENSOR, Kind.SIZE):
                return
            self._report(node, ctx, "`.item()`", "`.item()` reads a tensor value and breaks the graph; keep it a "
                         "tensor or return it")
            return
        if type(func) is cst.Attribute and func.attr.value == "new_full" and ctx.is_tensor(func.value):
            fill = next((value for _, value in _number_arguments(node, {"fill_value": 1})), None)
            if fill is not None and ctx.is_definite_tensor(fill):
                # ultralytics' make_anchors: `feats[0].new_full((h * w, 1), stride)` with a row of
                # the strides tensor, in a loop: Dynamo gives up on the whole function.
                ctx.report(self, node, "`new_full()` with a tensor fill value reads it as a Python number (`.item()`) "
                                       "and breaks the graph; `torch.full(size, value, dtype=..., device=...)` keeps "
                                       "it in the graph", fix=offer_fix("new_full", ctx, node, self.code))
            return
        comparison = _value_comparison(node, ctx)
        if comparison is not None:
            if not _branch_test(node, ctx):  # as an `if` / `while` test, DYN120 reports it
                ctx.report(self, node, f"`{comparison}()` compares tensor values into a Python bool and breaks the "
                                       "graph (Dynamo: data-dependent operator); keep the comparison a tensor "
                                       "(`torch.isclose(a, b).all()`, `(a == b).all()`) or compare outside the "
                                       "compiled region")
            return
        params = NUMBER_PARAMETERS.get(ctx.call_name(node) or "")
        if params is not None:
            for name, value in _number_arguments(node, params):
                # mace's conditional Huber loss: `delta=factors[0]`, a row of `h * torch.tensor([...])`
                if ctx.is_definite_tensor(value) and not ctx.is_numpy(value):
                    short = (ctx.call_name(node) or "").rsplit(".", 1)[-1]
                    ctx.report(self, value, f"a tensor as `{short}()`'s `{name}`, which takes a Python number, is read "
                                            "with `.item()` and breaks the graph; pass a Python number (compute it "
                                            "outside the compiled region) or write the formula with tensor ops")
            return
        if type(func) is cst.Name and func.value in ("int", "float", "bool") and len(node.args) == 1:
            arg = node.args[0].value
            # A definite tensor: `int(n * (1 - p))` with `p` an unannotated parameter converts a
            # number as often as a tensor (vit-pytorch's and MONAI's token dropout).
            if (
                ctx.call_name(node) == func.value and ctx.is_definite_tensor(arg) and not ctx.is_numpy_of_numbers(arg)
                and not numpy_math_of_numbers(arg, ctx)
            ):
                what = f"`{func.value}()` of a tensor"
                self._report(node, ctx, what, f"{what} reads its value and breaks the graph; keep it a tensor")

    def _report(self, node: cst.Call, ctx: RuleContext, what: str, message: str) -> None:
        """The finding with its fix; without one, a value that decides a branch gets BRANCH_MESSAGE."""
        fix = offer_fix("python_math", ctx, node, self.code) or offer_fix("item", ctx, node, self.code)
        if fix is None and _decides_a_branch(node, ctx):
            message = BRANCH_MESSAGE.format(what=what)
        ctx.report(self, node, message, fix=fix)

    invalid = (
        Example(
            # ultralytics' make_anchors on its export path: the sizes come as a tensor, read
            # where the test says the value is no list.
            """
            import torch
            from torch import nn

            def sizes(feats):
                return feats[0].shape[2:] if isinstance(feats, list) else (int(feats[0][0]), int(feats[0][1]))  # expect: DYN110, DYN110

            class M(nn.Module):
                def forward(self, x: dict[str, torch.Tensor]):
                    h, w = sizes(x["feats"])
                    return x["feats"] * h * w
            """,
            dynamo=BREAKS,
            inputs="({'feats': torch.tensor([[3, 4]])},)",
        ),
        Example(
            # escnn's batch norm check: `allclose` breaks whatever the assert's message.
            """
            import torch

            @torch.compile
            def f(x):
                y = x.sin()
                assert torch.allclose(y, y * 1.0), "rounding"  # expect: DYN110
                return y + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            # mace's conditional Huber loss: the deltas are rows of a tensor.
            """
            import torch
            import torch.nn.functional as F

            @torch.compile
            def f(ref, pred):
                factors = 0.01 * torch.tensor([1.0, 0.7], dtype=ref.dtype)
                near = F.huber_loss(ref, pred, reduction="none", delta=factors[0])  # expect: DYN110
                return near.mean() + F.huber_loss(ref, pred, delta=0.01)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(6, 3), torch.randn(6, 3))",
        ),
        Example(
            # torchani's cell list: a helper of the file declared `-> Tuple[Tensor, Tensor]`.
            """
            from typing import Tuple

            import torch
            from torch import Tensor

            def buckets(idx: Tensor, n: int) -> Tuple[Tensor, Tensor]:
                count = torch.bincount(idx, minlength=n)  # expect: DYN130
                return count, count.cumsum(0)

            @torch.compile
            def f(x, idx):
                count, cumcount = buckets(idx, 8)
                largest = int(count.max())  # expect: DYN110
                return x * largest + cumcount.sum()
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3), torch.tensor([0, 1, 1, 3]))",
        ),
        Example(
            # ultralytics' make_anchors: a row of the strides tensor as new_full's fill value.
            """
            import torch

            @torch.compile
            def f(feats: list[torch.Tensor], strides: torch.Tensor):
                out = []
                for i in range(len(feats)):
                    stride = strides[i]
                    h, w = feats[i].shape[2:]
                    out.append(feats[0].new_full((h * w, 1), stride, dtype=feats[0].dtype))  # expect: DYN110
                return torch.cat(out)
            """,
            dynamo=BREAKS,
            inputs="([torch.randn(1, 2, 4, 4), torch.randn(1, 2, 2, 2)], torch.tensor([8.0, 16.0]))",
            fixed="""
                import torch

                @torch.compile
                def f(feats: list[torch.Tensor], strides: torch.Tensor):
                    out = []
                    for i in range(len(feats)):
                        stride = strides[i]
                        h, w = feats[i].shape[2:]
                        out.append(torch.full((h * w, 1), stride, dtype=feats[0].dtype, device=feats[0].device))  # expect: DYN110
                    return torch.cat(out)
            """,
        ),
        Example(
            # pytorch-forecasting: a batch as `Dict[str, torch.Tensor]`, whose items are tensors.
            """
            from typing import Dict

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x: Dict[str, torch.Tensor]):
                    lengths = x["encoder_lengths"]
                    max_len = int(lengths.max())  # expect: DYN110
                    return self.proj(x["cont"][:, :max_len])
            """,
            dynamo=BREAKS,
            inputs="({'encoder_lengths': torch.tensor([3, 2]), 'cont': torch.randn(2, 4, 4)},)",
        ),
        Example(
            # An unannotated parameter indexed as only arrays and tensors can be is a tensor for
            # sure, so `int()` of it is reported (transformers' MiniCPM-V `int(grid_thw[0])`).
            """
            import torch

            @torch.compile
            def f(x, grid):
                rows = grid[:, 0]
                n = int(rows[0])  # expect: DYN110
                return x[:n]
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(8, 4), torch.tensor([[3, 4], [2, 2]]))",
        ),
        Example(
            # ProphetNet's and UDOP's input check: asserting the tensor keeps it in the graph.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    h = x * 2
                    assert torch.all(h > -100).item(), "out of range"  # expect: DYN110
                    return h + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def forward(self, x):
                        h = x * 2
                        assert torch.all(h > -100), "out of range"  # expect: DYN110
                        return h + 1
            """,
        ),
        Example(
            # XLM's input check: asserting the tensor comparison keeps it in the graph.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    h = x * 2
                    lengths = (h > 0).sum(dim=1)
                    assert lengths.max().item() <= x.shape[1]  # expect: DYN110
                    return h + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def forward(self, x):
                        h = x * 2
                        lengths = (h > 0).sum(dim=1)
                        assert lengths.max() <= x.shape[1]  # expect: DYN110
                        return h + 1
            """,
        ),
        Example(
            """
            import torch
            from torch import nn

            def paste(mask, box, h, w):
                # type: (Tensor, Tensor, int, int) -> Tensor
                width = int(box[2] - box[0] + 1)  # expect: DYN110
                return mask[:, :width] * h

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.boxes = [torch.tensor([0, 0, 3, 3])]

                def forward(self, x):
                    # `box` is a tensor by the TorchScript type comment alone.
                    return paste(x, self.boxes[0], 4, 4)
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                m = x.mean().item()  # expect: DYN110
                return x - m
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    m = x.mean()  # expect: DYN110
                    return x - m
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                n = int(x.sum())  # expect: DYN110
                return x * n
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                eps = np.random.rand(1).item()  # expect: DYN110
                return y + eps
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                i = x.argmax().item()  # expect: DYN110
                return x.flatten()[i]
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # transformers' checks: a message lambda runs only when the check fails.
            """
            import torch
            from torch import nn

            def compilable_check(cond, message):
                torch._check(cond, message)

            class M(nn.Module):
                def forward(self, ids, features):
                    n = (ids == 3).sum()
                    compilable_check(n == features.shape[0], lambda: f"{int(n)} placeholders")
                    return features * 2
            """,
            dynamo=None,
            why="lint-only: a lambda given to another function is not walked",
        ),
        Example(
            # MONAI's Bessel series: NumPy math on Python numbers, and arithmetic on it, is folded.
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x, n: int):
                terms = int(2 * (n + np.floor(np.sqrt(40.0 * n))))
                return x * terms
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4, 4), 5)",
        ),
        Example(
            # vit-pytorch's and MONAI's NaViT token dropout: the fraction comes from a lambda stored
            # on the module (not a submodule), the count from a size.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self, prob=0.25):
                    super().__init__()
                    self.calc_token_dropout = lambda height, width: prob

                def forward(self, x):
                    frac = self.calc_token_dropout(*x.shape[-2:])
                    keep = max(1, int(x.shape[0] * (1 - frac)))
                    return x[:keep] * 2
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(8, 4, 4),)",
        ),
        Example(
            # An unannotated parameter converted by `float()` is a number as often as a tensor.
            """
            import torch

            @torch.compile
            def f(x, scale):
                return x * float(scale)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4, 4), 2)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                return x - x.mean()

            def train_step(x):
                loss = f(x).sum()
                return loss.item()  # outside the compiled region
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                n = int(x.shape[0])
                return x * n
            """,
            dynamo=CLEAN,
        ),
    )


RULE = ItemCall


def _decides_a_branch(node: cst.Call, ctx: RuleContext) -> bool:
    """Is the value read a branch's deciding flag: inside an `if`/`while`/conditional test, a
    `bool()` or an `.any()`/`.all()` read back (Longformer's `is_global_attn = ....any().item()`),
    or bound to a name that a test of the function reads?"""
    chain = (*ctx.ancestors(), node)
    if any(type(a) in (cst.If, cst.While, cst.IfExp) and chain[i + 1] is a.test for i, a in enumerate(chain[:-1])):
        return True
    func = node.func
    if type(func) is cst.Name and func.value == "bool":
        return True
    receiver = func.value if type(func) is cst.Attribute else node.args[0].value
    if type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and receiver.func.attr.value in FLAG_REDUCTIONS:
        return True
    statement = ctx.statement
    if type(statement) is cst.SimpleStatementLine and type(statement.body[0]) is cst.Assign:
        assign = statement.body[0]
        if assign.value is node:
            bound = set().union(*(target_names(t.target) for t in assign.targets))
            return bool(bound & _tested_names(ctx))
    return False


def _tested_names(ctx: RuleContext) -> set:
    """Names the function's `if`/`while`/conditional tests read by value (memoized per function)."""
    state = ctx.rule_state("DYN110")
    found = state.get("tested_names")
    if found is None:
        found = state["tested_names"] = set()
        for n in iter_nodes(ctx.fn):
            if type(n) in (cst.If, cst.While, cst.IfExp):
                found |= variable_names(n.test) - _none_checked(n.test)
    return found


def _none_checked(test) -> set:
    """Names a test only compares by identity (`max_len is None`: that decides nothing by value)."""
    checked = set()
    for n in iter_nodes(test):
        if type(n) is cst.Comparison and all(type(c.operator) in (cst.Is, cst.IsNot) for c in n.comparisons):
            checked |= {p.value for p in (n.left, *(c.comparator for c in n.comparisons)) if type(p) is cst.Name}
    return checked


"""DYN201: branch on a tensor's shape (recompile hint).

## What it does
Finds `if` / `while` / conditional expressions that compare sizes taken from tensors
(`x.shape[1] == 16`, `x.size(0) > 1`, `len(x)`), in a compile region. `x.dim()` and `x.ndim` are
fixed per graph anyway and are not reported.

## Why it matters
This does not break the graph: Dynamo guards on the comparison, and a call where the comparison
comes out the other way compiles another graph (an equality that holds also specialises the
size to that value). Measured on torch 2.13 with sizes 4, 8, 16, 32, 64: `if x.size(1) > 6` costs
one more graph than no branch; with `dynamic=True`, `== 4` or `> 6` two graphs where none would
need one.

Also `(n / k).is_integer()` and `n % k != 0` on sizes (padding to a multiple): Dynamo guards on
the exact value, so each new length compiles again (reformer-pytorch's auto-padder: 6 lengths,
6 graphs).

Not reported, because they cost nothing: a comparison of a size with 0 or 1 (Dynamo assumes a dynamic size
is at least 2 and specialises sizes 0 and 1 anyway, so the test is decided without a guard), and
an `if` whose body only raises (a program that runs never takes it, so the outcome never flips).
Nor an equality test of a size against 2, 3 or 4 (`reference_points.shape[-1] == 4`,
`position_ids.shape[0] == 3`): a layout test (box coordinates, points, colour channels, rotary
position axes) of a size the model fixes, which never changes between calls, so the graph
Dynamo specialised to it is never compiled again (audits of detectors and multimodal models: no
recompile came from such a test).

## Example
```python
def forward(self, x):
    if x.shape[1] == 16:
        x = self.small(x)
    return x
```

## Use instead
Decide by configuration rather than by the input's size, or make both paths the same graph
(padding, `torch.where`); mark the dimension static with `torch._dynamo.mark_static` if it
really never changes.
"""

import contextlib

import libcst as cst

from ..nodes import dotted
from ..rule import NO_RECOMPILE, RECOMPILES, Example, Rule, RuleContext
from ..static_sizes import static_names, static_size


class ShapeBranch(Rule):
    code = "DYN201"
    name = "shape-branch"
    summary = "Branch on a tensor's size (recompiles when it flips)"
    severity = "warning"
    node_types = (cst.If, cst.While, cst.IfExp)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.If and _only_raises(node.body):
            return  # an input check: its outcome never flips in a program that runs
        tests = [(node.test, ())]
        while tests:
            t, known = tests.pop()  # known: (test, held) pairs that hold where t is evaluated
            if type(t) is cst.BooleanOperation:
                # `isinstance(proto, tuple) and len(proto) == 2`: the right side sees the left
                tests += [(t.left, known), (t.right, known + ((t.left, type(t.operator) is cst.And),))]
                continue
            if type(t) is cst.UnaryOperation:
                tests.append((t.expression, known))
                continue
            with contextlib.ExitStack() as stack:
                for test, held in known:
                    stack.enter_context(ctx.assuming(test, held))
                self._check_operand(t, ctx)

    def _check_operand(self, t: cst.BaseExpression, ctx: RuleContext) -> None:
        if type(t) is cst.Call and ctx.kind(t) == "SB" and not _static_sizes_only(t, ctx):
            # `(n / k).is_integer()` (reformer-pytorch's padding helper): Dynamo guards on the
            # exact size, so every new length compiles again
            ctx.report(self, t, "test on a tensor's size: Dynamo guards on it, and calls where it comes out "
                       "the other way compile another graph")
        elif (
            type(t) is cst.Comparison
            and ctx.kind(t) == "SB"
            and not _against_zero_or_one(t)
            and not _layout_test(t)
            and not _against_empty_shape(t)
            and not _reads_range_counter(t, ctx)
            and not _static_sizes_only(t, ctx)
        ):
            ctx.report(self, t, "branch on a tensor's size: Dynamo guards on it, and calls where it "
                       "comes out the other way compile another graph")

    invalid = (
        Example(
            # reformer-pytorch / routing-transformer: pad the length to a multiple of the bucket
            """
            import torch

            @torch.compile
            def f(x):
                n = x.shape[1]
                if (n / 4).is_integer():  # expect: DYN201
                    return x * 2
                if x.shape[1] % 3 != 0:  # expect: DYN201
                    return x + 1
                return x
            """,
            dynamo=RECOMPILES,
        ),
        Example(
            # demucs: the counter of a loop over a size is compared with that size: no guard of
            # its own (the loop is DYN202's), so only the other test is reported.
            """
            import torch

            @torch.compile
            def f(x):
                n = x.shape[0]
                for k in range(n):  # expect: DYN202
                    if k == n - 1:
                        x = x * 2
                if x.shape[1] > 3:  # expect: DYN201
                    return x + 1
                return x
            """,
            dynamo=RECOMPILES,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                if x.shape[1] == 8:  # expect: DYN201
                    return x * 2
                return x - 1
            """,
            dynamo=RECOMPILES,
        ),
        Example(
            # a size compared for order with a small number is no layout test
            """
            import torch

            @torch.compile
            def f(x):
                if x.shape[0] > 4:  # expect: DYN201
                    return x * 2
                return x - 1
            """,
            dynamo=RECOMPILES,
            inputs="(torch.randn(3, 4),)",
            inputs2="(torch.randn(8, 4),)",
        ),
    )
    valid = (
        Example(
            # rfdetr / Deformable DETR: reference points hold 2 (points) or 4 (boxes) coordinates,
            # fixed by the model: the batch and the queries vary, the test never flips.
            """
            import torch

            @torch.compile
            def f(x, reference_points):
                if reference_points.shape[-1] == 2:
                    return x + reference_points.sum(-1, keepdim=True)
                elif reference_points.shape[-1] == 4:
                    return x * reference_points[..., 2:].sum(-1, keepdim=True)
                return x
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 5, 1), torch.randn(3, 5, 4))",
            inputs2="(torch.randn(6, 7, 1), torch.randn(6, 7, 4))",
        ),
        Example(
            # neuraloperator's GNO block: a size compared with -1 (never a size) adds no guard.
            """
            import torch

            @torch.compile
            def f(x):
                if x.ndim == 3 and x.shape[0] == -1:
                    return x.sum(0)
                return x * 2
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 4, 2),)",
            inputs2="(torch.randn(5, 4, 2),)",
        ),
        Example(
            # pytorch_wavelets: `x.shape == torch.Size([])` tests the rank only.
            """
            import torch

            @torch.compile
            def f(x, y):
                if y.shape == torch.Size([]):
                    return x * y
                return x + y.sum()
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 4), torch.randn(5))",
            inputs2="(torch.randn(6, 4), torch.randn(7))",
        ),
        Example(
            # ultralytics' segmentation loss: `len()` of what an isinstance test made a tuple.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, preds: dict[str, torch.Tensor]):
                    proto = preds["proto"]
                    if isinstance(proto, tuple) and len(proto) == 2:
                        proto, semantic = proto
                    return proto * 2
            """,
            dynamo=NO_RECOMPILE,
            inputs="({'proto': torch.randn(3, 4)},)",
            inputs2="({'proto': torch.randn(6, 4)},)",
        ),
        Example(
            # pytorch-metric-learning's CrossBatchMemory: a miner (a submodule) returns a tuple
            # of index tensors, and `len()` tells which kind: no tensor's size is read.
            """
            import torch
            from torch import nn

            class Miner(nn.Module):
                def forward(self, x):
                    a = torch.arange(x.shape[0])
                    return a, a, a

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.miner = Miner()

                def forward(self, x):
                    indices_tuple = self.miner(x)
                    if len(indices_tuple) == 3:
                        return x[indices_tuple[0]] * 2
                    return x
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 4),)",
            inputs2="(torch.randn(6, 4),)",
        ),
        Example(
            # e3nn's S2 grid: a buffer's size is static, so a test on it adds no guard.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("grid", torch.ones(5, 9))

                def forward(self, x):
                    rows, cols = self.grid.shape
                    if rows >= cols:
                        x = x * 2
                    return x + 1
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 4),)",
            inputs2="(torch.randn(6, 4),)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                if x.shape[0] == 1:
                    return x * 2
                return x - 1
            """,
            dynamo=NO_RECOMPILE,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                if x.shape[1] != 4:
                    raise ValueError("expected 4 features")
                return x - 1
            """,
            dynamo=NO_RECOMPILE,
            inputs="(torch.randn(3, 4),)",  # not 4 rows: duck shaping would give both sizes one symbol
            inputs2="(torch.randn(8, 4),)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                if x.dim() == 2:
                    return x * 2
                return x - 1
            """,
            dynamo=NO_RECOMPILE,
        ),
    )


def _only_raises(body: cst.BaseSuite) -> bool:
    """The block ends in a `raise` (`msg = f"..."; raise ValueError(msg)` too) and holds only
    simple statements: an error path."""
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return (
        bool(lines)
        and all(isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) for line in lines)
        and bool(lines[-1].body)
        and type(lines[-1].body[-1]) is cst.Raise
    )


def _static_sizes_only(test: cst.Comparison | cst.Call, ctx: RuleContext) -> bool:
    """Every size the test reads is one Dynamo keeps static (`lint.static_sizes`): e3nn's
    `sa, sm = self.sha.shape; if sa >= sm` on a buffer."""
    static = static_names(ctx)
    if type(test) is cst.Call:
        return type(test.func) is cst.Attribute and static_size(test.func.value, ctx, static)
    return all(static_size(s, ctx, static) for s in [test.left] + [c.comparator for c in test.comparisons])


def _reads_range_counter(test: cst.Comparison, ctx: RuleContext) -> bool:
    """`elif k == n - 1:` in `for k in range(n):` (demucs): the loop, unrolled per size, is
    DYN202's; the counter is a constant in each step, so this test adds no guard of its own."""
    counters = {
        a.target.value
        for a in ctx.ancestors()
        if type(a) is cst.For and type(a.target) is cst.Name and type(a.iter) is cst.Call
        and type(a.iter.func) is cst.Name and a.iter.func.value == "range"
    }
    if not counters:
        return False
    sides = [test.left] + [c.comparator for c in test.comparisons]
    return any(type(side) is cst.Name and side.value in counters for side in sides)


def _against_literal(test: cst.Comparison, literal, operators=None) -> bool:
    """A single comparison (of an operator in `operators`, any if None) between a side that
    `literal` accepts and sides none of which is arithmetic."""
    if len(test.comparisons) != 1 or (operators is not None and type(test.comparisons[0].operator) not in operators):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(literal(side) for side in sides) and not any(type(side) is cst.BinaryOperation for side in sides)


def _against_zero_or_one(test: cst.Comparison) -> bool:
    """`x.size(0) == 1`, `len(x) > 0`: decided by Dynamo's assumption that a dynamic size is at
    least 2 (sizes 0 and 1 are specialised whatever the code does), so no guard is added."""
    # Not arithmetic on sizes against 0: `n % k != 0` is no size Dynamo assumes anything about.
    # A negative number (`f_y.shape[0] == -1`, neuraloperator) is never a size: decided the same.
    return _against_literal(test, lambda side: _integer_in(side, ("0", "1")) or _negative_integer(side))


def _layout_test(test: cst.Comparison) -> bool:
    """`reference_points.shape[-1] == 4`, `num_coordinates != 2`: equality with 2, 3 or 4 tests
    a layout the model fixes (coordinates, channels, position axes), not a size that varies."""
    return _against_literal(test, lambda side: _integer_in(side, ("2", "3", "4")), (cst.Equal, cst.NotEqual))


def _integer_in(node: cst.BaseExpression, values: tuple) -> bool:
    return type(node) is cst.Integer and node.value in values


def _negative_integer(node: cst.BaseExpression) -> bool:
    return type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus and type(node.expression) is cst.Integer


def _empty_shape(node: cst.BaseExpression) -> bool:
    """`()`, `[]`, `torch.Size([])`, `torch.Size(())`."""
    if type(node) in (cst.Tuple, cst.List):
        return not node.elements
    return (type(node) is cst.Call and dotted(node.func) in ("torch.Size", "Size") and len(node.args) == 1
            and _empty_shape(node.args[0].value))


def _against_empty_shape(test: cst.Comparison) -> bool:
    """`x.shape == torch.Size([])` (pytorch_wavelets): a test of the rank only, which Dynamo
    always knows; no size is guarded."""
    if len(test.comparisons) != 1 or type(test.comparisons[0].operator) not in (cst.Equal, cst.NotEqual):
        return False
    return _empty_shape(test.left) or _empty_shape(test.comparisons[0].comparator)


RULE = ShapeBranch

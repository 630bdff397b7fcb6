"""DYN140: creating a new leaf that needs gradients (`nn.Parameter`, `.requires_grad_()`, `requires_grad=True`) in compiled code.

## What it does
Finds `nn.Parameter(...)`, `.requires_grad_()` calls, `t.requires_grad = True` assignments and
torch factory calls given `requires_grad=` (anything but `False`) in a compile region.

## Why it breaks the graph
A new leaf that needs gradients cannot be created inside a traced graph: AOTAutograd would have
to treat it as a graph input. Dynamo breaks ("Attempted to use `torch.nn.Parameter()`
constructor with Dynamo", "setattr() on Tensor.requires_grad", "Unsupported Tensor.requires_grad_()
call", "requires_grad_() intermediate leaked as output", and for `torch.zeros(..., requires_grad=True)` "Attempted to use tensor
creation function with requires_grad=True"; probed on torch 2.13 and 2.14.1). Moving the flag
into the factory call does not help: the factory form breaks too, even as the function's first
statement (explain counts no break there, since no graph comes before it, but Dynamo's log names
the break and `fullgraph=True` fails).

## Example
```python
def forward(self, x):
    w = nn.Parameter(torch.ones(x.shape[-1]))
    return x * w
```

## Use instead
Create parameters in `__init__` (`self.w = nn.Parameter(torch.ones(n))`) and use them in forward,
or create the tensor outside the compiled region and pass it in. A flag set only for gradient
checkpointing (T5-style `position_bias.requires_grad = True`, so that reentrant checkpointing
sees an input that needs gradients) can go with non-reentrant checkpointing
(`torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`), which does not need it.

## Fix (unsafe)
The flag is skipped while Dynamo traces: `t.requires_grad = True` goes under
`if not torch.compiler.is_compiling():`, `.requires_grad_()` becomes
`.requires_grad_(not torch.compiler.is_compiling())` and a factory's `requires_grad=flag` becomes
`requires_grad=flag and not torch.compiler.is_compiling()` (the file's own
`is_torchdynamo_compiling()` where it imports that). Eager runs are unchanged. Compiled, the
tensor does not need gradients, so results computed from it need them only through their other
inputs (parameters do). An input flagged for reentrant checkpointing is not needed under Dynamo,
which traces `torch.utils.checkpoint.checkpoint` as one operator: the checkpointed layers'
gradients are the same. Offered only where the flagged tensor stays inside the function: not a
parameter, not returned or yielded as it is (a name bound again first, `h = layer(h)`, is fine),
not stored, aliased or appended, not itself an alias of module state (`t = self.buf`), and
neither the function nor a function or method of the file given the tensor does gradient work
(`grad(...)`, `.backward()`, `.grad`, an optimizer, `nn.Parameter`): an explainer's mask returned
with `requires_grad=True` is there for its gradient. `nn.Parameter(...)` itself has no fix.
"""

import libcst as cst

from ..kinds import Kind

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

# torch factories that take `requires_grad=` (the `_like` ones too).
FACTORIES = frozenset(
    """
    zeros ones empty full rand randn randint arange linspace logspace eye tensor zeros_like ones_like
    empty_like full_like rand_like randn_like randint_like empty_strided
    """.split()
)


class RequiresGradInRegion(Rule):
    code = "DYN140"
    name = "parameter-created-in-region"
    summary = "New `nn.Parameter` / tensor needing gradients created in compiled code"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0125", "Unsupported Tensor.requires_grad_() call"),
        ("GB0206", "setattr() on Tensor.requires_grad"),
        ("GB0225", "Attempted to use tensor creation function with requires_grad=True"),
        ("GB0264", "Attempted to use `torch.nn.Parameter()` constructor with Dynamo"),
        ("GB8985", "requires_grad_() intermediate leaked as output"),
    )
    node_types = (cst.Call, cst.Assign)
    fixable = "unsafe"

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Assign:
            for t in node.targets:
                tgt = t.target
                # Any value: Dynamo breaks on the setattr itself, `= False` too (probed).
                # Only tensors have a `requires_grad` to set, so an unknown value counts too
                # (MONAI's `self.ref_grid.requires_grad = False`), but not the module itself.
                if (
                    type(tgt) is cst.Attribute
                    and tgt.attr.value == "requires_grad"
                    and ctx.kind(tgt.value) not in (Kind.NOT_TENSOR, Kind.SIZE)
                    and not (type(tgt.value) is cst.Name and tgt.value.value == "self")
                ):
                    ctx.report(
                        self,
                        node,
                        "setting `.requires_grad` in compiled code breaks the graph (so does the factory's "
                        "`requires_grad=`); freeze or unfreeze parameters once, outside the compiled forward; "
                        "create a new tensor outside the compiled region; for gradient checkpointing use "
                        "`use_reentrant=False`, which needs no such input",
                        fix=offer_fix("requires_grad", ctx, node, self.code),
                    )
            return
        q = ctx.call_name(node)
        if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            ctx.report(self, node, "`nn.Parameter()` created in compiled code breaks the graph; create it in `__init__`")
        elif (
            type(node.func) is cst.Attribute
            and node.func.attr.value == "requires_grad_"
            and ctx.is_tensor(node.func.value)
            and not (node.args and _false_while_compiling(node.args[0].value, ctx))
        ):
            ctx.report(
                self,
                node,
                "`.requires_grad_()` in compiled code breaks the graph; create parameters in `__init__`, "
                "and take gradients of inputs with `torch.func` (grad, jacrev, vjp) or outside the compiled region",
                fix=offer_fix("requires_grad", ctx, node, self.code),
            )
        elif (
            q is not None
            and q.count(".") == 1
            and q.startswith("torch.")
            and q[6:] in FACTORIES
            and _requires_grad_given(node, ctx)
        ):
            ctx.report(
                self,
                node,
                "a tensor created with `requires_grad=` in compiled code breaks the graph; create it outside the "
                "compiled region (or in `__init__` as a parameter) and pass it in",
                fix=offer_fix("requires_grad", ctx, node, self.code),
            )

    invalid = (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = nn.Parameter(torch.ones(4))

                def forward(self, x):
                    # The first statement: explain counts no break (no graph before it); the log names one.
                    scale = torch.ones(4, requires_grad=True)  # expect: DYN140
                    return x * self.w * scale
            """,
            dynamo=BREAKS,
        ),
        Example(
            # MONAI's Warp block caches its grid on the module; only tensors have `requires_grad`.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.grid = None

                def forward(self, x):
                    self.grid = x.new_ones(x.shape[-1])
                    self.grid.requires_grad = False  # expect: DYN140
                    return x + self.grid
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch import nn

            @torch.compile
            def f(x):
                w = nn.Parameter(torch.ones(4))  # expect: DYN140
                return (x * w).sum() + x
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                w = torch.ones(4).requires_grad_()  # expect: DYN140
                return y * w
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    y = x * 2
                    w = torch.ones(4).requires_grad_(not torch.compiler.is_compiling())  # expect: DYN140
                    return y * w
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x[:, None] * 2
                y.requires_grad = True  # expect: DYN140
                return y + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    y = x[:, None] * 2
                    if not torch.compiler.is_compiling():
                        y.requires_grad = True  # expect: DYN140
                    return y + 1
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x, checkpointing=True):
                h = x * 2
                bias = torch.zeros(
                    (1, x.shape[-1]),
                    dtype=x.dtype,
                )
                if checkpointing:
                    bias.requires_grad = True  # expect: DYN140
                return h + bias
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x, checkpointing=True):
                    h = x * 2
                    bias = torch.zeros(
                        (1, x.shape[-1]),
                        dtype=x.dtype,
                    )
                    if checkpointing:
                        if not torch.compiler.is_compiling():
                            bias.requires_grad = True  # expect: DYN140
                    return h + bias
            """,
        ),
        Example(
            # The flag moved into the factory: still a break (GB0225), so no fix moves it there.
            """
            import torch

            @torch.compile
            def f(x, checkpointing=True):
                h = x * 2
                bias = torch.zeros((1, x.shape[-1]), dtype=x.dtype, requires_grad=bool(checkpointing))  # expect: DYN140
                return h + bias
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x, checkpointing=True):
                    h = x * 2
                    bias = torch.zeros((1, x.shape[-1]), dtype=x.dtype, requires_grad=bool(checkpointing) and not torch.compiler.is_compiling())  # expect: DYN140
                    return h + bias
            """,
        ),
        Example(
            # Gradient checkpointing's input flag (wav2vec2-style): Dynamo traces the checkpoint
            # as one operator, which computes the layer's gradients without it.
            """
            import torch
            from torch import nn
            from torch.utils.checkpoint import checkpoint

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv1d(1, 4, 3)

                def forward(self, x):
                    h = x[:, None]
                    if self.training:
                        h.requires_grad = True  # expect: DYN140
                    return checkpoint(self.conv, h, use_reentrant=True)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 16),)",
            fixed="""
                import torch
                from torch import nn
                from torch.utils.checkpoint import checkpoint

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.conv = nn.Conv1d(1, 4, 3)

                    def forward(self, x):
                        h = x[:, None]
                        if self.training:
                            if not torch.compiler.is_compiling():
                                h.requires_grad = True  # expect: DYN140
                        return checkpoint(self.conv, h, use_reentrant=True)
            """,
        ),
    )
    valid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                h = x * 2
                bias = torch.zeros((1, x.shape[-1]), dtype=x.dtype, requires_grad=False)
                return h + bias
            """,
            dynamo=CLEAN,
        ),
    )


def _requires_grad_given(call: cst.Call, ctx: RuleContext) -> bool:
    """`requires_grad=` given and not False (nor False while Dynamo traces)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "requires_grad":
            return not _false_while_compiling(arg.value, ctx)
    return False


def _false_while_compiling(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """The literal `False`, or a flag such as `flag and not torch.compiler.is_compiling()`."""
    return (type(value) is cst.Name and value.value == "False") or ctx.static_truth(value) is False


RULE = RequiresGradInRegion

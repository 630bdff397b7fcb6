"""DYN203: counter-style mutation of a module attribute in forward (recompile hint).

## What it does
Finds `self.steps += 1` and `self.count = self.count + 1` on attributes that are not tensors,
in a compile region.

## Why it matters
Dynamo treats Python attributes of the module as constants and guards on their values. A value
that changes on every call fails the guard every time: the model recompiles on each call until
it hits the recompile limit and runs eagerly. A float attribute costs one recompile: Dynamo then
makes it dynamic (measured on torch 2.13: 2 compiles for 6 calls, against 6 for an int).

## Example
```python
def forward(self, x):
    self.num_calls += 1
    return self.fc(x)
```

A submodule converted in forward, `self.classifier = self.classifier.to(self.dtype)`, is reported
too: `Module.to()` returns the module itself, but runs the conversion on every call, and on
torch 2.11 each call builds `nn.Parameter`s, a graph break per parameter (2.13 and 2.14.1 trace
it). The unsafe fix converts only when a floating-point parameter or buffer has another dtype
(`if any(t.is_floating_point() and t.dtype != self.dtype for t in [*self.classifier.parameters(),
*self.classifier.buffers()]):`), which skips exactly the no-op conversions.

## Use instead
Keep counters as buffers (`self.register_buffer("num_calls", torch.zeros((), dtype=torch.long))`
and `self.num_calls.add_(1)`), or count outside the model.
"""

import libcst as cst

from .. import fastcst
from ..kinds import Kind
from ..nodes import class_of, is_none
from ..rule import NO_RECOMPILE, RECOMPILES, Example, Rule, RuleContext, offer_fix


def _tests_dtypes_of(test: cst.CSTNode, attr: str, ctx) -> bool:
    """The test reads `.dtype` and `self.<attr>.parameters()` or `.buffers()`."""
    nodes = list(fastcst.iter_nodes(test))
    reads_dtype = any(type(n) is cst.Attribute and n.attr.value == "dtype" for n in nodes)
    return reads_dtype and any(
        type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in ("parameters", "buffers")
        and ctx.self_attr(n.func.value) == attr
        for n in nodes
    )


# Methods that convert a tensor or module and return it unchanged once it is converted.
CONVERSIONS = frozenset({"to", "type_as", "type", "float", "half", "double", "bfloat16", "cuda", "cpu", "contiguous"})


def _converts_itself(value: cst.BaseExpression, attr: str, ctx) -> bool:
    """`self.grid = self.grid.to(device=x.device)`, `self.w = self.w.type_as(x)`: the same object
    from the second call on (MONAI's RegUNet head, ESM's positional embedding), not a counter;
    also under a None test (CLIP's `self.attn_mask.to(...) if self.attn_mask is not None else None`)."""
    if type(value) is cst.IfExp:
        branches = (value.body, value.orelse)
        converted = [_converts_itself(v, attr, ctx) for v in branches]
        return any(converted) and all(
            c or is_none(v) or ctx.self_attr(v) == attr for c, v in zip(converted, branches)
        )
    return (
        type(value) is cst.Call
        and type(value.func) is cst.Attribute
        and value.func.attr.value in CONVERSIONS
        and ctx.self_attr(value.func.value) == attr
    )


def _paired(target: cst.BaseExpression, value: cst.BaseExpression) -> list:
    """(target, value) pairs of an assignment, item by item for `self.a, self.b = 0., x`."""
    if type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List) \
            and len(target.elements) == len(value.elements):
        return [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
    return [(target, value)]


def _opaque_call(value: cst.BaseExpression, attr: str, ctx) -> bool:
    """A call of something other than a method of the attribute itself, whose result is of
    unknown kind (no number, size or container)."""
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and ctx.self_attr(func.value) == attr:
        return False  # `self.m.to(dtype)`, `self.items.copy()`
    return ctx.kind(value) not in (Kind.NOT_TENSOR, Kind.SIZE, Kind.CONTAINER)


def _float_attrs(ctx) -> frozenset:
    """Attributes the method's class sets to a float literal in `__init__` (`self.nfe = 0.`)."""
    state = ctx.rule_state("DYN203")
    key = id(ctx.fn)
    found = state.get(key)
    if found is None:
        found = frozenset()
        cls = class_of(ctx.module, ctx.fn)
        init = next((f for f in cls.body.body if type(f) is cst.FunctionDef and f.name.value == "__init__"), None) \
            if cls is not None else None
        if init is not None:
            found = frozenset(
                target.attr.value
                for line in init.body.body if type(line) is cst.SimpleStatementLine
                for small in line.body if type(small) is cst.Assign
                for t in small.targets
                for target, value in _paired(t.target, small.value)
                if type(value) is cst.Float and ctx.self_attr(target) is not None
            )
        state[key] = found
    return found


def _adds_a_call_result(value: cst.BaseExpression, ctx) -> bool:
    """`self.log_prior += self.prior.log_prior(w) / n` (blitz): what a submodule, method or
    helper returns is as often a tensor (then the attribute is one: no guard on its value)."""
    while type(value) is cst.BinaryOperation:
        if _adds_a_call_result(value.right, ctx):
            return True
        value = value.left
    return ctx.from_module_call(value)


_CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__"})


class SelfMutation(Rule):
    code = "DYN203"
    name = "module-attribute-mutation"
    summary = "Mutating a Python attribute of the module (recompiles)"
    severity = "warning"
    node_types = (cst.AugAssign, cst.Assign)
    fixable = "unsafe"

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if ctx.fn is not None and ctx.fn.name.value in _CONSTRUCTORS:
            return  # the attributes of an object being built (a record compiled code constructs)
        if type(node) is cst.AugAssign:
            attr = ctx.self_attr(node.target)
            if attr is not None and attr not in ctx.tensor_attrs and not ctx.is_tensor(node.value) \
                    and not _adds_a_call_result(node.value, ctx):
                if type(node.value) is cst.Float or attr in _float_attrs(ctx):
                    # torchdyn's `self.nfe += 1` on `self.nfe = 0.`: measured, one recompile, then
                    # Dynamo makes the float dynamic
                    ctx.report(self, node, f"`self.{attr}` (a float) changes on every call: Dynamo recompiles once, "
                                           "then treats it as dynamic; keep it as a buffer or count outside the model")
                else:
                    ctx.report(self, node, f"`self.{attr}` changes on every call: Dynamo guards on it and recompiles")
            return
        for t in node.targets:
            attr = ctx.self_attr(t.target)
            if attr is None or attr in ctx.tensor_attrs:
                continue
            reads = [n for n in _attrs_in(node.value) if ctx.self_attr(n) == attr]
            if any(_tests_dtypes_of(test, attr, ctx) for test in ctx.enclosing_tests()):
                continue  # converted only when a dtype differs: no change on later calls
            if reads and _opaque_call(node.value, attr, ctx):
                # `self.mem = self.state_quant(self.mem)` (snntorch): a function of the value, not a
                # counter; what it returns is unknown here (a tensor: no guard on its value).
                continue
            if reads and not ctx.is_tensor(node.value):
                fix = offer_fix("module_to", ctx, node, self.code)
                if fix is not None:  # `self.m = self.m.to(dtype)` on a submodule
                    ctx.report(self, node, f"`self.{attr} = self.{attr}.to(...)` runs the conversion on every call (on some torch versions a graph break per parameter); convert only when a dtype differs, or once outside forward", fix=fix)
                elif not _converts_itself(node.value, attr, ctx):
                    ctx.report(self, node, f"`self.{attr}` changes on every call: Dynamo guards on it and recompiles")

    invalid = (
        Example(
            """
            import torch
            from torch import nn

            class Router(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.dtype = torch.float32
                    self.classifier = nn.Linear(8, 4)

                def forward(self, x):
                    self.classifier = self.classifier.to(self.dtype)  # expect: DYN203
                    return self.classifier(x.to(self.dtype)).softmax(-1)
            """,
            dynamo=None,
            why="breaks on torch 2.11 (an nn.Parameter() constructor per parameter and call); 2.13 and 2.14.1 trace it",
            inputs="(torch.randn(3, 8),)",
            fixed="""
                import torch
                from torch import nn

                class Router(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.dtype = torch.float32
                        self.classifier = nn.Linear(8, 4)

                    def forward(self, x):
                        if any(t.is_floating_point() and t.dtype != self.dtype for t in [*self.classifier.parameters(), *self.classifier.buffers()]):
                            self.classifier = self.classifier.to(self.dtype)  # expect: DYN203
                        return self.classifier(x.to(self.dtype)).softmax(-1)
            """,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.steps = 0

                def forward(self, x):
                    self.steps += 1  # expect: DYN203
                    return x * 2
            """,
            dynamo=RECOMPILES,
            calls=3,
        ),
    )
    valid = (
        Example(
            # blitz's Bayesian layers: a log-prior accumulated from what a submodule's method returns
            # (a tensor: no guard on its value, one compile over the calls).
            """
            import torch
            from torch import nn

            class Prior(nn.Module):
                def log_prob(self, w):
                    return -(w ** 2).sum()

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = nn.Parameter(torch.randn(4, 4))
                    self.prior = Prior()
                    self.log_prior = 0

                def forward(self, x):
                    self.log_prior = self.prior.log_prob(self.w)
                    self.log_prior += self.prior.log_prob(self.w) / x.shape[1]
                    return x @ self.w
            """,
            dynamo=NO_RECOMPILE,
            calls=3,
            inputs="(torch.randn(2, 4),)",
            inputs2="(torch.randn(2, 4),)",
        ),
        Example(
            # CLIP's residual attention block: the mask moved to the input's dtype and device,
            # under a None test: the same tensor from the second call on.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self, attn_mask=torch.ones(4, 4).triu()):
                    super().__init__()
                    self.attn_mask = attn_mask

                def forward(self, x):
                    self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None
                    return x @ self.attn_mask
            """,
            dynamo=NO_RECOMPILE,
            calls=3,
            inputs="(torch.randn(2, 4),)",
            inputs2="(torch.randn(3, 4),)",
        ),
        Example(
            # spandrel's SPAN re-parameterises on every call: tensors built from a submodule's
            # parameters, stored on the module: no guard on their values, no recompile.
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.sk = nn.Conv2d(4, 4, 1)
                    self.conv = nn.Conv2d(4, 4, 3, padding=1)
                    self.weight_concat = self.conv.weight.data.clone()
                    self.bias_concat = self.conv.bias.data.clone()

                def update_params(self):
                    sk_w = F.pad(self.sk.weight.data.clone().detach(), [1, 1, 1, 1])
                    sk_b = self.sk.bias.data.clone().detach()
                    self.weight_concat = self.conv.weight + sk_w
                    self.bias_concat = self.bias_concat + sk_b

                def forward(self, x):
                    self.update_params()
                    return F.conv2d(x, self.weight_concat, self.bias_concat, padding=1)
            """,
            dynamo=NO_RECOMPILE,
            calls=3,
            inputs="(torch.randn(1, 4, 8, 6),)",
            inputs2="(torch.randn(1, 4, 12, 6),)",
        ),
        Example(
            # MONAI's RegUNet head and ESM's positional embedding: a tensor attribute moved to the
            # input's device or dtype is the same tensor from the second call on.
            """
            import torch
            from torch import nn

            def reference_grid(n):
                return torch.linspace(-1, 1, n)

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.grid = reference_grid(4)

                def forward(self, x):
                    self.grid = self.grid.to(device=x.device)
                    self.grid = self.grid.type_as(x)
                    return x + self.grid
            """,
            dynamo=NO_RECOMPILE,
            calls=3,
            inputs2="(torch.randn(4, 4),)",
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("steps", torch.zeros((), dtype=torch.long))

                def forward(self, x):
                    self.steps += 1
                    return x * 2
            """,
            dynamo=NO_RECOMPILE,
            calls=3,
        ),
    )


def _attrs_in(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Attribute:
            yield n
        stack.extend(fastcst.children(n))  # same nodes as .children, without rebuilding n


RULE = SelfMutation

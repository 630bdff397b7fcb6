"""DYN106: NumPy math on Python numbers (`np.lcm(a, b)`, `np.prod(x.shape)`) used as a number.

## What it does
Finds `np.lcm`, `np.gcd`, `np.prod`, `np.sum` and the one-number functions (`np.log`, `np.log2`,
`np.log10`, `np.sqrt`, `np.exp`, `np.ceil`, `np.floor`, `np.trunc`) called on Python values
(numbers, shapes, lists; no tensor and no NumPy array among the arguments) in a compile region,
when the result is used as
a number: in an `if` / `while` test or a comparison, in `range()` / `int()` / `math.ceil()`, as a size (`np.zeros`,
`torch.zeros`, `x.reshape`, `x.new_zeros`, ...), as an index, or returned from a helper that
compiled code calls.

An attribute set to such a value outside forward (`self.hop_length = np.prod(rates)` in
`__init__`, DAC) is reported where forward uses it as a number; its fix changes the assignment.
`int()` / `float()` of a one-number function's result, or returning it, is traced (probed) and
not reported.

## Why it breaks the graph
Dynamo traces NumPy through `torch._numpy`: while compiling, `np.lcm(4, 6)` is a 0-d tensor, not
a number. Using it where Python needs a value breaks the graph: "generic_jump
NumpyNdarrayVariable" (a branch on it), "Data dependent operator" (a size), "torch.* op returned
non-Tensor" (`int()` of it). NumPy math feeding only tensor arithmetic is traced and not reported.

## Example
```python
def forward(self, input_ids):
    chunk = np.lcm(self.config.lsh_chunk_length, self.config.local_chunk_length)
    if input_ids.shape[-1] % chunk != 0:
        ...
```

## Use instead
The `math` module or a builtin on Python numbers: `math.lcm`, `math.gcd`, `math.prod`, `sum`,
`math.log2`, `math.ceil`, ... (the unsafe autofix). Unsafe because the result becomes a Python
number instead of a NumPy one (`math.ceil` gives an `int` where `np.ceil` gives a float; `math.log(0)`
and `math.sqrt(-1)` raise where NumPy gives `-inf` and `nan`), and because the linter cannot prove
the arguments are not NumPy arrays (on an array `math.lcm` raises and `sum` adds along the first
axis only).
"""

import libcst as cst

from ..fastcst import iter_nodes
from ..kinds import NUMPY_MATH_EQUIVALENT, Kind
from ..nodes import class_of
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix
from ..sourceinfo import source_info
from ..variables import variable_reads

# numpy function -> its Python equivalent on Python numbers, and how many positional arguments.
MATH_EQUIVALENT = NUMPY_MATH_EQUIVALENT
_ARITY = {"lcm": 2, "gcd": 2}  # the others take one argument

# Callables whose arguments must be Python numbers (sizes, counts, ranges).
NUMBER_TAKERS = frozenset({"range", "int", "float", "bool", "len", "divmod", "round", "math.ceil", "math.floor", "math.trunc"})
SIZE_FUNCS = frozenset({"zeros", "ones", "empty", "full", "arange", "eye", "randn", "rand", "randint", "linspace", "tile"})
SIZE_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "new_full", "narrow", "split",
     "chunk", "unflatten", "tile", "resize_", "index_select"}
)


def python_values(call: cst.Call, name: str, ctx: RuleContext) -> bool:
    """Are the call's arguments plain Python values by all the linter knows (no tensor, no NumPy
    array), in the shape the Python equivalent takes?"""
    args = call.args
    if len(args) != _ARITY.get(name, 1) or any(a.keyword is not None or a.star for a in args):
        return False
    for a in args:
        values = [a.value]
        if isinstance(a.value, (cst.List, cst.Tuple)):
            if any(isinstance(e, cst.StarredElement) for e in a.value.elements):
                return False
            values += [e.value for e in a.value.elements]
        for v in values:
            if ctx.is_tensor(v) or ctx.is_numpy(v):
                return False
    return True


def numpy_math_of_numbers(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`np.prod(x.shape[1:])`, `np.log2(n)`: a call this rule reports where it is used as a number
    (with the fix that removes the break); DYN110's `int()` of it and DYN120's test of it leave it
    to this rule."""
    if type(node) is not cst.Call:
        return False
    q = ctx.call_name(node)
    short = q[len("numpy."):] if q is not None and q.startswith("numpy.") else None
    return short in MATH_EQUIVALENT and python_values(node, short, ctx)


def only_numpy_math_of_numbers(test: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A test whose only tensors (under Dynamo) are such calls: `np.sqrt(n) > 1`, `np.lcm(a, b) * 2 > n`."""
    found = False
    stack = [test]
    while stack:
        cur = stack.pop()
        if numpy_math_of_numbers(cur, ctx):
            found = True
        elif type(cur) is cst.Comparison:
            stack += [cur.left, *(c.comparator for c in cur.comparisons)]
        elif type(cur) is cst.BinaryOperation:
            stack += [cur.left, cur.right]
        elif type(cur) is cst.UnaryOperation and type(cur.operator) is not cst.Not:
            stack.append(cur.expression)
        elif ctx.is_tensor(cur) or ctx.is_numpy(cur):
            return False
    return found


def _climb(info, ctx: RuleContext, node: cst.CSTNode) -> cst.CSTNode:
    """Up through arithmetic on non-tensors and through tuple/list elements."""
    cur = node
    while True:
        parent = info.parent(cur)
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if parent.left is cur else parent.left
            # Arithmetic with a tensor is traced: a name bound after the call counts by what it
            # is bound to (its kind is asked here, at the call: spikingjelly's `var * fan_in` with
            # `var = torch.var(...)` on the next line).
            if ctx.is_tensor(other) or _bound_to_a_tensor_later(other, ctx):
                return cur
            cur = parent
        elif isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, (cst.Minus, cst.Plus)):
            cur = parent
        elif isinstance(parent, cst.Element) and isinstance(info.parent(parent), (cst.Tuple, cst.List)):
            cur = info.parent(parent)
        else:
            return cur


def _bound_to_a_tensor_later(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A name of unknown kind here that the function assigns a tensor to somewhere."""
    if type(node) is not cst.Name or ctx.kind(node) != Kind.UNKNOWN:
        return False
    return any(
        type(n) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == node.value for t in n.targets)
        and ctx.is_tensor(n.value)
        for n in iter_nodes(ctx.fn.body)
    )


# One-number functions give NumPy floats: `int()` / `float()` of one is traced (probed on 2.13.0:
# `int(np.ceil(n / 2))` compiles whole, `int(np.lcm(4, n))` breaks), and so is returning one.
FLOAT_RESULTS = frozenset({"log", "log2", "log10", "sqrt", "exp", "ceil", "floor", "trunc"})
_FLOAT_CONVERSIONS = frozenset({"int", "float"})


def _used_as_number(info, ctx: RuleContext, node: cst.CSTNode, depth: int = 0, floating: bool = False) -> bool:
    top = _climb(info, ctx, node)
    parent = info.parent(top)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.Index, cst.Slice)):
        return True
    if isinstance(parent, (cst.If, cst.While)) and parent.test is top:
        return True
    if isinstance(parent, cst.IfExp) and parent.test is top:
        return True
    if isinstance(parent, cst.Return):
        return not floating
    if isinstance(parent, cst.Arg):
        call = info.parent(parent)
        if isinstance(call, cst.Call) and parent in call.args:
            q = ctx.call_name(call) or ""
            last = q.rsplit(".", 1)[-1]
            # NumPy's `arange` / `linspace` bounds are traced (nnAudio's `np.arange(2, np.ceil(n / 2) * 2, 2)`,
            # probed clean); its shapes are sizes
            if floating and q in _FLOAT_CONVERSIONS:
                return False
            if q in NUMBER_TAKERS or (q.startswith(("torch.", "numpy.")) and last in SIZE_FUNCS and q.count(".") == 1
                                      and not (q.startswith("numpy.") and last in ("arange", "linspace"))):
                return True
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in SIZE_METHODS and ctx.is_tensor(func.value):
                return True
        return False
    if isinstance(parent, cst.Assign) and parent.value is top and depth < 2 and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name):
            return any(_used_as_number(info, ctx, use, depth + 1, floating)
                       for use in variable_reads(ctx.fn, target.value, skip=[target]))
    return False


def number_use(call: cst.Call, ctx: RuleContext, short: str) -> bool:
    info = source_info(ctx.module, ctx.fn)
    return _used_as_number(info, ctx, call, floating=short in FLOAT_RESULTS)


def _setting_call(ctx: RuleContext, attr: str, short: str):
    """The one `np.<short>(...)` call the class sets `self.<attr>` to (snac's `self.hop_length =
    np.prod(strides)` in `__init__`), where its fix is made; None if several or `np.sum` (which
    adds an array along one axis where `sum` would differ)."""
    if short == "sum":
        return None
    state = ctx.rule_state("DYN106").setdefault("setters", {})
    key = (id(ctx.fn), attr)
    if key not in state:
        cls = class_of(ctx.module, ctx.fn)
        found = [
            n.value for n in (iter_nodes(cls.body) if cls is not None else ())
            if type(n) is cst.Assign and len(n.targets) == 1 and ctx.self_attr(n.targets[0].target) == attr
            and type(n.value) is cst.Call and ctx.call_name(n.value) == f"numpy.{short}"
        ]
        state[key] = found[0] if len(found) == 1 else None
    return state[key]


class NumpyScalarMath(Rule):
    code = "DYN106"
    name = "numpy-math-on-python-numbers"
    summary = "NumPy math on Python numbers is a tensor under Dynamo"
    gb_types = (
        ("GB0033", "Data dependent operator"),
        ("GB0170", "Data-dependent branching"),
        ("GB0208", "torch.* op returned non-Tensor"),
        ("GB0059", "Failed to trace builtin operator"),
    )
    node_types = (cst.Call, cst.Attribute)
    fixable = "unsafe"

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Attribute:
            attr = ctx.self_attr(node)
            short = ctx.numpy_attrs.get(attr) if attr is not None else None
            if short is not None and not ctx.in_assignment_target() and number_use(node, ctx, short):
                setter = _setting_call(ctx, attr, short)
                ctx.report(self, node, f"`self.{attr}` holds `np.{short}()` of Python numbers (set outside forward): a "
                                       "tensor while compiling, which breaks the graph where it is used as a number; "
                                       f"set it with `{MATH_EQUIVALENT[short]}()` (or `int(...)`)",
                           fix=offer_fix("numpy_math", ctx, setter, short, self.code) if setter is not None else None)
            return
        q = ctx.call_name(node)
        if q is None or not q.startswith("numpy.") or q[len("numpy."):] not in MATH_EQUIVALENT:
            return
        short = q[len("numpy."):]
        if not python_values(node, short, ctx) or not number_use(node, ctx, short):
            return
        ctx.report(
            self,
            node,
            f"`np.{short}()` of Python numbers is a tensor while compiling and breaks the graph where it is "
            f"used as a number; use `{MATH_EQUIVALENT[short]}()`",
            fix=offer_fix("numpy_math", ctx, node, short, self.code),
        )

    invalid = (
        Example(
            # pypots' FEDformer: wavelet levels from a size.
            """
            import math
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                B, N = x.shape
                levels = math.floor(np.log2(N))  # expect: DYN106
                return x * levels
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3, 16),)",
            fixed="""
                import math
                import numpy as np
                import torch

                @torch.compile
                def f(x):
                    B, N = x.shape
                    levels = math.floor(math.log2(N))  # expect: DYN106
                    return x * levels
            """,
        ),
        Example(
            # DAC: the hop length set in `__init__` with `np.prod`, used to pad the input.
            """
            import math
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.hop_length = np.prod([2, 4])

                def forward(self, x):
                    length = x.shape[-1]
                    pad = math.ceil(length / self.hop_length) * 8 - length  # expect: DYN106
                    return nn.functional.pad(x, (0, pad))
            """,
            dynamo=BREAKS,
            inputs="(torch.rand(2, 13),)",
            fixed="""
                import math
                import numpy as np
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.hop_length = math.prod([2, 4])

                    def forward(self, x):
                        length = x.shape[-1]
                        pad = math.ceil(length / self.hop_length) * 8 - length  # expect: DYN106
                        return nn.functional.pad(x, (0, pad))
            """,
        ),
        Example(
            # Research code's flatten size: reported once, here (DYN110 leaves the `int()` to it).
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                n = int(np.prod(x.shape[1:]))  # expect: DYN106
                return x.reshape(x.shape[0], n) * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3, 4, 5),)",
            fixed="""
                import numpy as np
                import torch
                import math

                @torch.compile
                def f(x):
                    n = int(math.prod(x.shape[1:]))  # expect: DYN106
                    return x.reshape(x.shape[0], n) * 2
            """,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                # Reformer pads to a multiple of the chunk lengths' least common multiple
                chunk = np.lcm(4, 6)  # expect: DYN106
                if x.shape[-1] % chunk != 0:  # expect: DYN120
                    x = torch.nn.functional.pad(x, (0, 2))
                return x * 2
            """,
            dynamo=BREAKS,
            fixed="""
            import numpy as np
            import torch
            import math

            @torch.compile
            def f(x):
                # Reformer pads to a multiple of the chunk lengths' least common multiple
                chunk = math.lcm(4, 6)  # expect: DYN106
                if x.shape[-1] % chunk != 0:  # expect: DYN120
                    x = torch.nn.functional.pad(x, (0, 2))
                return x * 2
            """,
        ),
        Example(
            """
            import numpy as np
            import torch
            from torch import nn


            class M(nn.Module):
                def forward(self, x, sizes=(1, 2, 3)):
                    width = np.sum(list(sizes))  # expect: DYN106
                    return x.new_zeros((x.shape[0], width)) + x.sum()  # expect: DYN131
            """,
            dynamo=BREAKS,
            fixed="""
                import numpy as np
                import torch
                from torch import nn


                class M(nn.Module):
                    def forward(self, x, sizes=(1, 2, 3)):
                        width = sum(list(sizes))  # expect: DYN106
                        return x.new_zeros((x.shape[0], width)) + x.sum()  # expect: DYN131
            """,
        ),
        Example(
            """
            import numpy as np
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.a, self.b = 4, 6

                def forward(self, x):
                    n = int(np.lcm(self.a, self.b))  # expect: DYN106
                    return x.repeat(1, n)
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # doctr's Gaussian kernel: `np.exp` of arrays from `np.ogrid` (no Python numbers: no
            # finding, and `math.exp` would raise TypeError on them).
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                y, z = np.ogrid[-2:3, -2:3]
                h = np.exp(-(y * y + z * z) / 2.0)
                return x * torch.from_numpy(h).sum()
            """,
            dynamo=None,
            why="Dynamo runs NumPy's index trick as a skipped call (GB0008, no graph break); the example checks the lint",
        ),
        Example(
            # attention's scale: NumPy math on a size feeding tensor arithmetic is traced.
            """
            import numpy as np
            import torch

            @torch.compile
            def f(q, k):
                return (q @ k.transpose(-1, -2)) / np.sqrt(q.shape[-1])
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 4, 8), torch.randn(2, 4, 8))",
        ),
        Example(
            # spikingjelly's weight standardisation: the fan-in only scales a tensor computed on
            # the next line (traced).
            """
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Linear):
                def __init__(self):
                    super().__init__(6, 4)

                def get_weight(self):
                    fan_in = np.prod(self.weight.shape[1:])
                    var = torch.var(self.weight, dim=1, keepdim=True)
                    return self.weight / ((var * fan_in + 1e-4) ** 0.5)

                def forward(self, x):
                    return nn.functional.linear(x, self.get_weight(), self.bias)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 6),)",
        ),
        Example(
            """
            import math

            import numpy as np
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.a, self.b = 4, 6

                def forward(self, x):
                    n = math.lcm(self.a, self.b)
                    return x.repeat(1, n) * np.lcm(self.a, self.b)
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                steps = np.arange(1, 4)
                return x * np.prod(steps)
            """,
            dynamo=CLEAN,
        ),
    )


RULE = NumpyScalarMath

"""DYN131: tensor value used where a Python int is needed.

## What it does
Finds tensors passed as sizes or counts in a compile region: `F.one_hot(t, num_classes=t.max() + 1)`,
factory sizes such as `torch.zeros(n)` / `torch.arange(n)` with `n` a tensor, sizes of tensor
methods (`x.new_zeros(b, n)`, `x.view(n, -1)`, `x.expand(...)`, `x.repeat(...)`), a tensor as
the Python-number `alpha=` / `value=` of `torch.add` / `sub` / `addcmul` / `addcdiv` (and their
methods; not the in-place ones, which trace it), slices
with tensor bounds (`x[:n]`), and indexes that are 0-d tensors (`x[torch.argmax(s)]`, effdet's
soft-NMS; `perm[i]` of `perm = torch.randperm(n)`; a 1-d index tensor is advanced indexing, which
traces), and Python lists, tuples or
`nn.ModuleList`s indexed by a tensor (`self.experts[choice]` with `choice` drawn by
`torch.randint`), which Python reads back through `__index__`.

## Why it breaks the graph
A size must be known while tracing; taking it from a tensor's data forces Dynamo to read the
value ("Unsupported Tensor.item() call" or a data-dependent guard), which breaks the graph.

## Example
```python
def forward(self, labels):
    return F.one_hot(labels, num_classes=labels.max() + 1)
```

The autofix (safe) indexes with a 1-element tensor instead of a 0-d one, which selects the same
values: `x[i] = v` -> `x[i.view(1)] = v`, and a read `x[i]` -> `x[i.view(1)].squeeze(0)`.

## Use instead
Pass static sizes from the config (`num_classes=self.num_classes`), or sizes taken from shapes
(`x.shape[0]`), which Dynamo tracks symbolically.
"""

import libcst as cst

from ..filefacts import SEQUENCE_BUILDERS, is_sequence_display
from ..kinds import TENSORISH
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

# Factories and which of their arguments are Python ints: positions (None: every positional
# argument) and keywords. `torch.full`'s fill value and `linspace`'s start and end are traced as
# tensors (probed); `randint(low=0, high=t)` reads `t` back (torchlibrosa's DropStripes).
INT_ARGUMENTS = {
    "zeros": (None, {"size"}), "ones": (None, {"size"}), "empty": (None, {"size"}),
    "rand": (None, {"size"}), "randn": (None, {"size"}), "full": ((0,), {"size"}),
    "arange": (None, {"start", "end", "step"}), "eye": ((0, 1), {"n", "m"}),
    "randint": (None, {"low", "high", "size"}), "linspace": ((2,), {"steps"}), "logspace": ((2,), {"steps"}),
    "randperm": ((0,), {"n"}),
}
FACTORIES = frozenset(INT_ARGUMENTS)
# Tensor methods whose arguments are sizes (`new_full`: its first only).
SIZE_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "view", "reshape", "expand", "repeat"})


def _factory(q: str | None) -> str | None:
    """`torch.zeros` / `numpy.arange` -> "zeros" / "arange": a factory of INT_ARGUMENTS."""
    if q is None or not q.startswith(("torch.", "numpy.")) or q.count(".") != 1:
        return None
    name = q.split(".")[1]
    return name if name in FACTORIES else None


def _int_arguments(call: cst.Call, factory: str) -> list:
    positions, keywords = INT_ARGUMENTS[factory]
    out = []
    for i, a in enumerate(call.args):
        if a.star:
            break
        if a.keyword is not None:
            if a.keyword.value in keywords:
                out.append(a)
        elif positions is None or i in positions:
            out.append(a)
    return out


# Factories whose result is always 1-d: an element of it, `perm[i]`, is a 0-d tensor.
VECTOR_FACTORIES = frozenset({"torch.randperm", "torch.arange"})


def _scalar_index(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`torch.argmax(t)` / `t.argmin()` with no `dim`, or an element `perm[i]` of a name bound to
    `torch.randperm()` / `torch.arange()`: a 0-d tensor of a position."""
    if type(node) is cst.Subscript:
        return (type(node.value) is cst.Name and node.value.value in ctx.rule_state("DYN131").get("vectors", ())
                and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index
                and not ctx.is_tensor(node.slice[0].slice.value))
    if type(node) is not cst.Call:
        return False
    func = node.func
    if type(func) is cst.Attribute and func.attr.value in ("argmax", "argmin") and ctx.is_tensor(func.value):
        return not node.args
    q = ctx.call_name(node)
    return q in ("torch.argmax", "torch.argmin") and len(node.args) == 1 and node.args[0].keyword is None


# Functions and tensor methods with a Scalar-only keyword (`alpha=`, `value=`); the in-place
# methods (`add_`) trace with a tensor there (probed), the others read it back.
SCALAR_KEYWORDS = {"add": "alpha", "sub": "alpha", "subtract": "alpha", "addcmul": "value", "addcdiv": "value"}


def _scalar_keyword_tensor(call: cst.Call, ctx: RuleContext):
    """The `alpha=` / `value=` argument of `torch.add(...)`, `x.sub(...)`, `torch.addcmul(...)` when
    it is a tensor for sure; else None."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in SCALAR_KEYWORDS:
        return None
    name = func.attr.value
    if not (ctx.call_name(call) == f"torch.{name}" or ctx.is_tensor(func.value)):
        return None
    for a in call.args:
        if a.keyword is not None and a.keyword.value == SCALAR_KEYWORDS[name] and ctx.is_definite_tensor(a.value):
            return a
    return None


def _computed_tensor(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A tensor computed from a tensor, for sure (`lengths.max()`, `mask.sum() + 1`): not a torch
    function of Python numbers (`torch.div(x.size(1), 4, rounding_mode="trunc")`, which Dynamo
    folds: Longformer's chunk count is no break as a size, measured), not NumPy math on numbers
    (DYN106's), not a name unpacked from a tuple (whose items' kinds are guesses)."""
    if type(value) is cst.BinaryOperation:
        return _computed_tensor(value.left, ctx) or _computed_tensor(value.right, ctx)
    if type(value) is not cst.Call or not ctx.is_definite_tensor(value) or ctx.is_numpy_of_numbers(value):
        return False
    q = ctx.call_name(value)
    if q is not None and q.startswith("torch.") and not any(ctx.kind(a.value) in TENSORISH for a in value.args):
        return False
    return True


def _tensor_size(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A size argument that is a tensor value: computed here (`_computed_tensor`), or a name this
    function bound to one."""
    if type(value) is cst.Name:
        return value.value in ctx.rule_state("DYN131").get("tensor_values", ())
    if type(value) is cst.BinaryOperation:
        return _tensor_size(value.left, ctx) or _tensor_size(value.right, ctx)
    return _computed_tensor(value, ctx)


def _builds_sequence(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    if is_sequence_display(value):
        return True
    return type(value) is cst.Call and ctx.call_name(value) in SEQUENCE_BUILDERS


class TensorAsInt(Rule):
    code = "DYN131"
    name = "tensor-used-as-size"
    summary = "Tensor value used as a Python size"
    fixable = "safe or unsafe"  # the 1-element index (safe); a loop moved out of the graph (fixes/disable_loop.py)
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0033", "Data dependent operator"),
        ("GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False"),
    )
    node_types = (cst.Call, cst.Subscript, cst.Assign)

    @staticmethod
    def _python_sequence(value: cst.BaseExpression, ctx: RuleContext) -> bool:
        """A list, tuple or ModuleList: a display, a local bound to one, an attribute the class
        sets to one."""
        if type(value) is cst.Name:
            bound = ctx.rule_state("DYN131").get("sequences", {}).get(value.value)
            if bound is None:
                return False
            assign, after, before = bound
            return before if any(a is assign for a in ctx.iter_ancestors()) else after
        attr = ctx.self_attr(value)
        if attr is not None:
            return attr in ctx.sequence_attrs and attr not in ctx.tensor_attrs
        return is_sequence_display(value)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Call:
            func = node.func
            scaled = _scalar_keyword_tensor(node, ctx)
            if scaled is not None:
                # torchode's step-size control: `torch.add(self.atol, y.abs(), alpha=self.rtol)` with
                # `rtol` a buffer (probed: "Data dependent operator" on 2.13.0 and 2.14.1)
                ctx.report(self, scaled.value, f"`{scaled.keyword.value}=` takes a Python number: a tensor there is read "
                                               "back with `.item()` and breaks the graph; multiply instead "
                                               "(`a + b * alpha`)")
                return
            star = next((a for a in node.args if a.star == "*" and ctx.is_definite_tensor(a.value)), None)
            if star is not None and (
                (type(func) is cst.Attribute and func.attr.value in SIZE_METHODS | {"permute"} and ctx.is_tensor(func.value))
                or _factory(ctx.call_name(node)) is not None
            ):
                # compressai's entropy models: `x.permute(*perm)` with `perm = torch.cat(...)`:
                # each element is read back with `.item()` (GB0033, probed on 2.13.0 and 2.14.1)
                ctx.report(self, star.value, "unpacking a tensor into sizes or dims reads each element back as an int "
                                             "and breaks the graph; build them as a Python list or tuple of ints")
                return
            if type(func) is cst.Attribute and func.attr.value in SIZE_METHODS and ctx.is_tensor(func.value):
                # GLiNER's `token_embeds.new_zeros(B, max_len, D)` with `max_len = lengths.max()`
                args = node.args[:1] if func.attr.value == "new_full" else node.args
                for a in args:
                    if a.star or (a.keyword is not None and a.keyword.value not in ("size", "shape")):
                        continue
                    sizes = a.value.elements if type(a.value) in (cst.Tuple, cst.List) else [a]
                    if any(_tensor_size(el.value, ctx) for el in sizes):
                        ctx.report(self, a.value, f"a size of `.{func.attr.value}()` from a tensor value breaks the "
                                                  "graph; use a shape or a constant")
                        return
                return
            q = ctx.call_name(node)
            if q is None:
                return
            if q == "slice":
                # neuralop's `segment_csr`: `from_idx = slice(indptr[i], indptr[i + 1])`, then `src[from_idx]`
                for a in node.args:
                    if a.keyword is None and not a.star and ctx.is_definite_tensor(a.value):
                        ctx.report(self, a.value, "slice bound from a tensor value breaks the graph; use a shape-derived "
                                                  "int, or select with tensor ops (`index_select`, a mask)")
                        return
                return
            if q in ("torch.nn.functional.one_hot",):
                for a in node.args[1:]:
                    if ctx.is_definite_tensor(a.value):
                        ctx.report(self, a.value, "`num_classes` from a tensor value breaks the graph; use a static number")
                return
            factory = _factory(q)
            if factory is not None:
                for a in _int_arguments(node, factory):
                    sizes = a.value.elements if type(a.value) in (cst.Tuple, cst.List) else [a]
                    if q.startswith("numpy.") and all(ctx.is_numpy_of_numbers(el.value) or not ctx.is_definite_tensor(el.value)
                                                      for el in sizes):
                        # `np.arange(h, np.ceil(len(x) / h) * h, h)` (nnAudio): NumPy math on sizes
                        # feeds a NumPy factory without a break (probed on 2.13.0 and 2.14.1)
                        continue
                    if any(ctx.is_definite_tensor(el.value) for el in sizes):
                        what = f"`{a.keyword.value}` of `{q}()`" if a.keyword is not None else f"size of `{q}()`"
                        ctx.report(self, a.value, f"{what} from a tensor value breaks the graph; use a shape or a constant")
                        return
            return
        if type(node) is cst.Assign:
            # names bound to a 0-d index (`top_idx = torch.argmax(scores)`) or to a Python
            # sequence (`outs = [a, b]`), until rebound
            state = ctx.rule_state(self.code)
            scalars = state.setdefault("scalars", set())
            # name -> (the assignment binding it last, whether it holds a sequence after it, and
            # before it: the value of `x = [x[i] for i in idx]` still reads the earlier `x`)
            sequences = state.setdefault("sequences", {})
            for t in node.targets:
                if type(t.target) is cst.Name:
                    name = t.target.value
                    (scalars.add if _scalar_index(node.value, ctx) else scalars.discard)(name)
                    vectors = state.setdefault("vectors", set())
                    vector = type(node.value) is cst.Call and ctx.call_name(node.value) in VECTOR_FACTORIES
                    (vectors.add if vector else vectors.discard)(name)
                    sequences[name] = (node, _builds_sequence(node.value, ctx), self._python_sequence(t.target, ctx))
                    values = state.setdefault("tensor_values", set())
                    (values.add if _computed_tensor(node.value, ctx) else values.discard)(name)
            return
        if self._python_sequence(node.value, ctx):
            if len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index \
                    and ctx.is_definite_tensor(node.slice[0].slice.value):
                # pyro's `x[idx]` on a list in `for idx in perm`; a layer picked by a drawn index
                ctx.report(self, node.slice[0].slice.value,
                           "a Python list, tuple or ModuleList indexed by a tensor reads the index back as an int "
                           "(`.item()`) and breaks the graph; index with a Python int (`.tolist()` the indices "
                           "once, outside compiled code), or stack the items and index the tensor")
            return
        for el in node.slice:
            if type(el.slice) is cst.Slice:
                # whatever is sliced (a tensor, a list, a value of unknown kind: torchcde's
                # `x[:first_non_nan_index] = ...` in a helper), a tensor bound is read as an int
                for bound in (el.slice.lower, el.slice.upper):
                    if bound is not None and ctx.is_definite_tensor(bound):
                        ctx.report(self, bound, "slice bound from a tensor value breaks the graph; use a shape-derived int")
                        return
        if not ctx.is_tensor(node.value):
            return
        scalars = ctx.rule_state(self.code).get("scalars", ())
        for el in node.slice:
            if type(el.slice) is cst.Index and (
                _scalar_index(el.slice.value, ctx) or (type(el.slice.value) is cst.Name and el.slice.value.value in scalars)
            ):
                # effdet's soft-NMS: `idxs[top_idx]` with `top_idx = torch.argmax(scores_remain)`
                ctx.report(self, el.slice.value, "index from a 0-d tensor (`argmax()` without `dim`, an element of "
                                                 "`randperm()`) is read as a Python int and breaks the graph; "
                                                 "index with a 1-element tensor (`x[i.view(1)]`), or select with "
                                                 "tensor ops (`torch.gather`, `scatter`)",
                           fix=self._one_element_index_fix(node, el, ctx))
                return

    def _one_element_index_fix(self, node: cst.Subscript, el: cst.SubscriptElement, ctx: RuleContext):
        """`x[i] = v` -> `x[i.view(1)] = v` (the value broadcasts over the new leading 1), and a read
        `x[i]` -> `x[i.view(1)].squeeze(0)`: the same values, indexed by a 1-element tensor, which
        Dynamo traces. Only for reads of a single index: mixed with other indexes, a read's result
        would keep a dimension of 1 somewhere else."""
        around = ctx.innermost_statement()
        store = (type(around) is cst.AugAssign and around.target is node) or (
            type(around) is cst.Assign and any(t.target is node for t in around.targets))
        if not store and (ctx.in_assignment_target() or len(node.slice) != 1 or not ctx.is_definite_tensor(node.value)):
            return None
        return offer_fix("one_element_index", ctx, node, el.slice.value, not store, self.code)

    invalid = (
        Example(
            # torchcde's missing-value fill, in a helper whose `x` has no annotation: the bound is
            # a tensor whatever `x` is.
            """
            import torch

            def fill_leading(x):
                first = torch.isnan(x).cumsum(0).argmin(0)
                x[:first] = 0.0  # expect: DYN131
                return x

            @torch.compile
            def f(x):
                return fill_leading(x.clone()) * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.tensor([float('nan'), 1.0, 2.0]),)",
        ),
        Example(
            # neuralop's `segment_csr`: rows between the offsets of a CSR index.
            """
            import torch

            @torch.compile
            def f(src: torch.Tensor, indptr: torch.Tensor):
                out = []
                for i in range(3):
                    rows = slice(indptr[i], indptr[i + 1])  # expect: DYN131
                    out.append(src[rows].sum(0))
                return torch.stack(out)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(6, 2), torch.tensor([0, 2, 4, 6]))",
        ),
        Example(
            # torchode's error bounds: tolerances kept as buffers, given as `alpha=`.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("atol", torch.tensor(1e-6))
                    self.register_buffer("rtol", torch.tensor(1e-3))

                def forward(self, y):
                    bound = torch.add(self.atol, y.abs(), alpha=self.rtol)  # expect: DYN131
                    return y / bound
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3),)",
        ),
        Example(
            # GLiNER's word embeddings: a buffer as long as the longest text, from the lengths.
            """
            import torch

            @torch.compile
            def f(x, lengths):
                longest = lengths.max()
                return x.new_zeros(x.shape[0], longest, x.shape[-1]) + 1  # expect: DYN131
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 5, 3), torch.tensor([3, 5]))",
        ),
        Example(
            # A layer picked by a drawn index; pyro's list of columns indexed in a loop over a
            # permutation tensor.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

                def forward(self, x):
                    choice = torch.randint(0, 3, ())
                    scales = [1.0, 2.0, 3.0]
                    pick = (x > 0).sum() % 3
                    return self.experts[choice](x) * scales[pick]  # expect: DYN131, DYN131
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 4),)",
        ),
        Example(
            # effdet's soft-NMS: the best box's position, a 0-d tensor, indexes the boxes.
            """
            import torch

            @torch.compile
            def f(scores):
                top_idx = torch.argmax(scores)
                best = scores[top_idx]  # expect: DYN131
                return best * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.rand(8),)",
            fixed="""
                import torch

                @torch.compile
                def f(scores):
                    top_idx = torch.argmax(scores)
                    best = scores[top_idx.view(1)].squeeze(0)  # expect: DYN131
                    return best * 2
            """,
        ),
        Example(
            # compressai's entropy bottleneck: the channel axis moved first with a tensor of dims.
            """
            import torch

            @torch.compile
            def f(x):
                perm = torch.cat((torch.tensor([1, 0]), torch.arange(2, x.dim())))
                return x.permute(*perm) * 2  # expect: DYN131
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4),)",
        ),
        Example(
            # doctr's PARSeq attention masks: an element of a permutation is a 0-d tensor, and a
            # store through it is read back as an int (GB0033).
            """
            import torch

            @torch.compile
            def f(x):
                perm = torch.randperm(x.shape[0])
                mask = torch.ones(x.shape[0], x.shape[0])
                q = perm[1]
                mask[q, perm[2:]] = 0.0  # expect: DYN131
                mask[torch.argmin(x[:, 0])] += 1.0  # expect: DYN131
                return x * mask.sum()
            """,
            dynamo=BREAKS,
            inputs="(torch.rand(6, 6),)",
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    perm = torch.randperm(x.shape[0])
                    mask = torch.ones(x.shape[0], x.shape[0])
                    q = perm[1]
                    mask[q.view(1), perm[2:]] = 0.0  # expect: DYN131
                    mask[torch.argmin(x[:, 0]).view(1)] += 1.0  # expect: DYN131
                    return x * mask.sum()
            """,
        ),
        Example(
            # builtin max() of a tensor and an int is a tensor (Dynamo traces it as one).
            """
            import torch
            import torch.nn.functional as F

            @torch.compile
            def f(x):
                labels = (x > 0).long().sum(1)
                return F.one_hot(labels, max(labels.max() + 1, 4))[..., :4].float()  # expect: DYN131
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            import torch.nn.functional as F

            @torch.compile
            def f(x):
                labels = (x > 0).long().sum(1)
                return F.one_hot(labels, num_classes=labels.max() + 1).float()  # expect: DYN131
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                n = (x > 0).sum()
                return torch.zeros(n) + 1  # expect: DYN131
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
                z = np.zeros((2, np.sum([1, 2])))  # expect: DYN131, DYN106
                return y + z.sum()
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                n = (x > 0).sum()
                return x[:n] * 2  # expect: DYN131
            """,
            dynamo=BREAKS,
        ),
        Example(
            # torchlibrosa's DropStripes: a drawn width bounds the next draw.
            """
            import torch

            @torch.compile
            def f(x):
                distance = torch.randint(low=0, high=3, size=(1,))[0]
                start = torch.randint(low=0, high=x.shape[0] - distance, size=(1,))  # expect: DYN131
                return x * start
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # The same bound with the tolerance multiplied in; `alpha=` of a Python number.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("atol", torch.tensor(1e-6))
                    self.register_buffer("rtol", torch.tensor(1e-3))

                def forward(self, y):
                    bound = self.atol + y.abs() * self.rtol
                    return torch.add(y, bound, alpha=0.5) / bound
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(3),)",
        ),
        Example(
            # Python ints index the ModuleList and the list; a tensor indexes a tensor.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                    self.scales = [1.0, 2.0, 3.0]

                def forward(self, x):
                    for i in range(len(self.layers)):
                        x = self.layers[i](x) * self.scales[i]
                    rows = torch.arange(x.shape[0])
                    return x[rows] + self.scales[x.shape[0] - 1]
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 4),)",
        ),
        Example(
            # norse's population encoding: a tensor as `linspace`'s end is traced; `steps` is the size.
            """
            import torch

            @torch.compile
            def f(x):
                return torch.linspace(0, x.max(), 5) * 2
            """,
            dynamo=CLEAN,
            inputs="(torch.rand(2, 8),)",
        ),
        Example(
            # nnAudio's CFP: NumPy math on a length feeds a NumPy factory; Dynamo traces it.
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                t = np.arange(2, np.ceil(len(x) / 2.0) * 2, 2)
                return x + t.sum()
            """,
            dynamo=CLEAN,
            inputs="(torch.rand(6),)",
        ),
        Example(
            # GLM-Image: a tensor as `torch.full`'s fill value is traced; only its size must be static.
            """
            import torch

            @torch.compile
            def f(x):
                pos = (x > 0).sum() + 1
                return torch.full((x.shape[0],), pos, dtype=torch.long) + x.long()
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            import torch.nn.functional as F

            @torch.compile
            def f(x):
                labels = (x > 0).long().sum(1)
                n = x.shape[0]
                return F.one_hot(labels, num_classes=5).float().sum() + torch.zeros(n) + x[: n // 2].sum()
            """,
            dynamo=CLEAN,
        ),
    )


RULE = TensorAsInt

"""DYN107: a `None` default filled in only outside torch.compile, then used as a value.

## What it does
Finds a parameter with a `None` default that the function fills in only in code Dynamo skips
(`if mask is None and not is_torchdynamo_compiling(): mask = torch.ones(...)`, or the body of
`if not torch.compiler.is_compiling():`), and that is then used as if it held a value on the
compiled path: subscripted (`mask[:, None]`), an attribute or method of it (`mask.sum()`),
`len(mask)`, iterated (`for s in mask`), or an operand of arithmetic (`1.0 - mask`).

Not reported: uses under a test of the parameter (`if mask is not None:`, `m if mask is None
else ...`, `mask is not None and mask.any()`), uses inside a `try` (Dynamo handles the
exception there), a parameter assigned anywhere else in the function, and passing it on to another
function (which may accept `None`).

## Why it breaks the graph
Under torch.compile the guarded branch is skipped, so when the caller leaves the argument out
it is still `None`: `None[:, None]` raises `TypeError` while Dynamo traces, with no handler in
the compiled function. Dynamo reports "Observed exception" and runs the whole function eagerly
(where the branch runs and nothing fails), so nothing of it is compiled. As an operand of tensor
arithmetic (`x * mask`) it is worse: compiling fails with a `TorchRuntimeError`.

Exceptions themselves are not the problem: probed on torch 2.13 and 2.14.1, `try`/`except`
around a failing dict lookup, `int("...")`, `next()` of an empty iterator, a custom exception
raised in a helper, `raise ... from ...` and `except Exception` all compile to one graph. Still
breaking there: an `assert` that fails inside `try` ("Data-dependent assertion failed"), an
`import` of a missing module ("Import failure"), and, on 2.13 only, a tensor operation that
raises inside `try` (2.14.1 traces it).

## Example
```python
def forward(self, hidden_states, attention_mask=None):
    if attention_mask is None and not is_torchdynamo_compiling():
        attention_mask = torch.ones(hidden_states.shape[:2])
    extended = attention_mask[:, None, None, :]   # None under torch.compile
```

## Use instead
Build the default on the compiled path too (drop the `not is_compiling()` condition), or test
the parameter where it is used (`if attention_mask is not None:`).

## Fix (unsafe)
When the filling `if` is `if mask is None and not is_compiling():` (no `else`), the fix drops the
`not is_compiling()` test, so the default is built on the compiled path too, as eager code does.
Whatever the library skipped under compile (a mask a fused attention path would not need) is now
computed in the graph.
"""

import libcst as cst

from .. import fastcst
from ..nodes import is_none
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

ITERATING_BUILTINS = frozenset({"len", "iter", "list", "tuple", "sorted", "sum", "max", "min", "enumerate", "zip"})
ASSIGNING = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName)


def _none_default_params(fn: cst.FunctionDef) -> set[str]:
    out = set()
    for p in (*fn.params.params, *fn.params.kwonly_params):
        if is_none(p.default):
            out.add(p.name.value)
    return out


def _assigned_names(root: cst.CSTNode) -> set[str]:
    """Plain names bound under root (assignment targets, loop and `as` names, walrus)."""
    out = set()
    for node in fastcst.iter_nodes(root):
        t = type(node)
        if t is cst.Assign:
            targets = [tg.target for tg in node.targets]
        elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr):
            targets = [node.target]
        elif t is cst.AsName:
            targets = [node.name]
        else:
            continue
        for tg in targets:
            for sub in fastcst.iter_nodes(tg):
                if type(sub) is cst.Name:
                    out.add(sub.value)
    return out


def _dead_blocks(ctx, stmt: cst.If) -> list[cst.BaseSuite]:
    """Blocks of an if/elif/else chain that Dynamo skips (an `is_compiling()` test decides)."""
    dead = []
    node = stmt
    while node is not None:
        truth = ctx.static_truth(node.test)
        if truth is False:
            dead.append(node.body)
        elif truth is True:
            rest = node.orelse
            if rest is not None:
                dead.append(rest if type(rest) is cst.If else rest.body)
            break
        orelse = node.orelse
        node = orelse if type(orelse) is cst.If else None
        if node is None and orelse is not None and truth is False:
            break
    return dead


def _scan(ctx) -> dict:
    """{name: index of the top-level statement after which it is None on the compiled path}."""
    fn = ctx.fn
    params = _none_default_params(fn)
    if not params or type(fn.body) is not cst.IndentedBlock:
        return {}
    body = fn.body.body
    filled: dict[str, int] = {}
    dead_ids: set[int] = set()
    for i, stmt in enumerate(body):
        if type(stmt) is not cst.If:
            continue
        for block in _dead_blocks(ctx, stmt):
            dead_ids.add(id(block))
            for name in _assigned_names(block) & params:
                filled.setdefault(name, i)
    if not filled:
        return {}
    # A parameter also bound on the compiled path is not None there.
    live_assigned: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if id(node) in dead_ids:
            continue
        t = type(node)
        if t in ASSIGNING:
            live_assigned |= _assigned_names(node)
        stack.extend(fastcst.children(node))
    return {name: i for name, i in filled.items() if name not in live_assigned}


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(type(n) is cst.Name and n.value == name for n in fastcst.iter_nodes(node))


class NoneUnderCompile(Rule):
    code = "DYN107"
    name = "none-under-compile"
    summary = "`None` default filled in only outside torch.compile, then used"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0088", "Observed exception"),
    )
    node_types = (cst.Subscript, cst.Attribute, cst.Call, cst.For, cst.CompFor, cst.BinaryOperation)
    fixable = "unsafe"

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        state = ctx.rule_state(self.code)
        names = state.get("names")
        if names is None:
            names = state["names"] = _scan(ctx)
        if not names:
            return
        t = type(node)
        if t is cst.Subscript or t is cst.Attribute:
            used = node.value
        elif t is cst.Call:
            used = node.args[0].value if (type(node.func) is cst.Name and node.func.value in ITERATING_BUILTINS
                                          and node.args) else None
        elif t is cst.For or t is cst.CompFor:
            used = node.iter
        else:  # BinaryOperation
            used = node.left if type(node.left) is cst.Name and node.left.value in names else node.right
        if type(used) is not cst.Name or used.value not in names:
            return
        name = used.value
        if any(_mentions(test, name) for test in ctx.enclosing_tests()):
            return
        for anc in ctx.ancestors():
            ta = type(anc)
            if ta is cst.Try or ta is cst.TryStar:
                return
            if (ta is cst.IfExp or ta is cst.BooleanOperation) and _mentions(anc.test if ta is cst.IfExp else anc, name):
                return
        if not self._after(ctx, node, names[name], state):
            return
        if self._asserted_between(ctx, name, names[name], node, state):
            return  # `assert coords is not None` first (torchani): a clear error, the author's choice
        if t is cst.Subscript:
            what = f"`{name}[...]`"
        elif t is cst.Attribute:
            what = f"`{name}.{node.attr.value}`"
        elif t is cst.Call:
            what = f"`{node.func.value}({name})`"
        elif t is cst.BinaryOperation:
            what = f"arithmetic on `{name}`"
        else:
            what = f"iterating `{name}`"
        ctx.report(self, node, f"`{name}` is filled in only when not compiling, so under torch.compile it is still "
                               f"None here when the caller leaves it out: {what} raises while Dynamo traces and "
                               "the whole function runs eagerly; build the default on the compiled path too",
                   fix=offer_fix("compile_default", ctx, ctx.fn.body.body[names[name]], self.code))

    @staticmethod
    def _asserted_between(ctx, name: str, index: int, node, state: dict) -> bool:
        """Is there a top-level `assert <name> is not None` after the fill-in and before node?"""
        top = state.get("top") or {}
        at = top.get(id(node), -1)
        for i, stmt in enumerate(ctx.fn.body.body[index + 1:at], start=index + 1):
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    test = small.test if type(small) is cst.Assert else None
                    if (type(test) is cst.Comparison and type(test.left) is cst.Name and test.left.value == name
                            and len(test.comparisons) == 1 and type(test.comparisons[0].operator) is cst.IsNot):
                        return True
        return False

    @staticmethod
    def _after(ctx, node, index: int, state: dict) -> bool:
        """Is node in a top-level statement after the one at index?"""
        top = state.get("top")
        if top is None:
            top = state["top"] = {}
            for i, stmt in enumerate(ctx.fn.body.body):
                for sub in fastcst.iter_nodes(stmt):
                    top[id(sub)] = i
        return top.get(id(node), -1) > index

    invalid = (
        Example(
            """
            import torch
            from torch import nn
            from torch.compiler import is_compiling

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self.is_decoder = False

                def forward(self, x, attention_mask=None):
                    h = self.proj(x)
                    if attention_mask is None and not is_compiling():
                        attention_mask = torch.ones(x.shape[0], x.shape[1])
                    if self.is_decoder:
                        mask = None
                    else:
                        mask = attention_mask[:, None, :]  # expect: DYN107
                        mask = (1.0 - mask) * -1e4
                    return h + mask.sum()
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn
                from torch.compiler import is_compiling

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.proj = nn.Linear(4, 4)
                        self.is_decoder = False

                    def forward(self, x, attention_mask=None):
                        h = self.proj(x)
                        if attention_mask is None:
                            attention_mask = torch.ones(x.shape[0], x.shape[1])
                        if self.is_decoder:
                            mask = None
                        else:
                            mask = attention_mask[:, None, :]  # expect: DYN107
                            mask = (1.0 - mask) * -1e4
                        return h + mask.sum()
            """,
        ),
        Example(
            """
            import torch
            from torch.compiler import is_compiling

            @torch.compile
            def f(x, mask=None):
                y = x * 2
                if mask is None and not is_compiling():
                    mask = torch.ones_like(x)
                return torch.where(mask.bool(), y, 0.0)  # expect: DYN107
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x, scales=None):
                y = x * 2
                if not torch.compiler.is_compiling():
                    if scales is None:
                        scales = [1.0, 2.0]
                for s in scales:  # expect: DYN107
                    y = y * s
                return y
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch.compiler import is_compiling

            @torch.compile
            def f(x, lengths=None):
                y = x * 2
                if is_compiling():
                    pass
                elif lengths is None:
                    lengths = [4, 4, 4, 4]
                return y * len(lengths)  # expect: DYN107
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch.compiler import is_compiling

            @torch.compile
            def f(x, mask=None):
                y = x * 2
                if mask is None and not is_compiling():
                    mask = torch.ones_like(x)
                return y * mask  # expect: DYN107
            """,
            dynamo=None,
            why="compiling fails outright (TorchRuntimeError: `mul` of a tensor and None), not a graph break",
        ),
    )
    valid = (
        Example(
            # torchani's AEV computer: the old tuple call is unpacked only when not compiling, and
            # the author asserts the value before using it (compiled, that call fails loudly).
            """
            import torch
            from torch import nn
            from torch.compiler import is_compiling

            class M(nn.Module):
                def forward(self, species, coords=None):
                    if coords is None and not is_compiling():
                        species, coords = species
                    assert coords is not None
                    return coords.sum(-1) * 2
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 3), torch.randn(2, 3))",
        ),
        Example(
            """
            import torch
            from torch.compiler import is_compiling

            @torch.compile
            def f(x, mask=None):
                y = x * 2
                if mask is None and not is_compiling():
                    mask = torch.ones_like(x)
                if mask is not None:  # tested where it is used
                    y = y * mask
                return y
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x, mask=None):
                y = x * 2
                if mask is None:  # filled in on the compiled path too
                    mask = torch.ones_like(x)
                return y * mask[0]
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch

            class MyError(Exception):
                pass

            def check(x):
                if x.shape[0] == 4:
                    raise MyError("four rows")
                return x

            @torch.compile
            def f(x):
                # Exceptions raised and caught inside the compiled code are traced.
                y = x * 2
                try:
                    y = check(y)
                except MyError:
                    y = y + 1
                try:
                    scale = {"a": 1}["b"]
                except KeyError:
                    scale = 3
                it = iter([])
                try:
                    first = next(it)
                except StopIteration:
                    first = 1
                return y * scale * first
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch.compiler import is_compiling

            @torch.compile
            def f(x, mask=None):
                y = x * 2
                if mask is None and not is_compiling():
                    mask = torch.ones_like(x)
                try:
                    m = mask[0]
                except TypeError:  # Dynamo handles the exception inside the try
                    m = 1.0
                return y * m
            """,
            dynamo=CLEAN,
        ),
    )


RULE = NoneUnderCompile

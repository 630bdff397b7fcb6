"""DYN114: a runtime type checker (`@beartype`, `@jaxtyped(typechecker=beartype)`) on compiled code.

## What it does
Finds a function or `forward` that runs under `torch.compile` and is decorated (itself, or its
class) with `beartype`, directly, through `jaxtyped(typechecker=beartype)`, or through a
module-level alias of either (`typecheck = jaxtyped(typechecker=beartype)`), where its signature
has a hint that beartype cannot check without help Dynamo does not trace:
- a variable-length container, `List[...]` / `list[...]` / `Sequence[...]` / `Iterable[...]` /
  `MutableSequence[...]` / `Tuple[X, ...]` (anywhere in the signature, `Optional[...]` included);
- a jaxtyping array, `Float[Tensor, "b n"]` (`Int`, `Bool`, `Shaped`, ...), on a parameter
  without a default or as the return hint.

## Why it breaks the graph
beartype checks one random item of a container in O(1): its wrapper draws the index with
`random.getrandbits` on every call, whatever is passed, and Dynamo does not trace that builtin
(GB0007, "Attempted to call function marked as skipped"). A jaxtyping hint is checked by
`isinstance` against a class with a custom `__instancecheck__`, which Dynamo does not trace either
("builtin isinstance() with custom type check on tensor" on 2.14.1; on 2.13 the check
goes wrong instead: the compiled call fails with a false type error). The wrapper is the compiled frame's first code: a decorated `forward` of the top module
falls back to eager for the checks (`fullgraph=True` and `torch.export` fail), and a decorated
submodule or helper splits its caller's graph at every call.

## Example
```python
@beartype
def mix(x: Tensor, memories: List[Tensor]) -> Tensor:
    return x + sum(memories)
```

## Use instead
Check types at an entry point that is not compiled (the training step, the data loader), or turn
beartype off on compiled code: `@beartype(conf=BeartypeConf(strategy=BeartypeStrategy.O0))`.
Hints that beartype checks without a draw (`Tensor`, `Optional[Tensor]`, `Tuple[Tensor, Tensor]`,
`Dict[str, Tensor]`, plain `list`) trace.

No autofix: every rewrite that removes the break also removes checks the author asked for.
"""

from typing import Optional

import libcst as cst

from ..fastcst import iter_nodes
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

_TYPING_MODULES = ("typing", "typing_extensions", "beartype.typing", "collections.abc")
# Containers beartype checks by drawing one item at random (probed: each breaks fullgraph=True).
_SAMPLED = frozenset({"List", "Sequence", "MutableSequence", "Iterable"})
_TUPLES = frozenset({"Tuple"})
_JAXTYPING_ARRAYS = frozenset({
    "Shaped", "Num", "Real", "Inexact", "Float", "Complex", "Integer", "Int", "UInt", "Bool", "Key",
    "BFloat16", "Float16", "Float32", "Float64", "Complex64", "Complex128",
    "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
})
_BEARTYPE = "beartype.beartype"


def _typing_name(qualname: Optional[str], names: frozenset) -> bool:
    if qualname is None:
        return False
    module, _, last = qualname.rpartition(".")
    return last in names and module in _TYPING_MODULES


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _checks_off(call: cst.Call) -> bool:
    """`beartype(conf=BeartypeConf(strategy=BeartypeStrategy.O0))`: no checks, nothing drawn."""
    conf = _keyword(call, "conf")
    return conf is not None and any(type(n) is cst.Name and n.value == "O0" for n in iter_nodes(conf))


class _FileFacts:
    """Module-level aliases of the file: checker decorators and jaxtyping array types."""

    def __init__(self, module: cst.Module, ctx: RuleContext):
        self.module = module
        self.checkers: set = set()
        self.arrays: set = set()
        for stmt in module.body:
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
                    continue
                name, value = small.targets[0].target.value, small.value
                if self.is_checker(value, ctx):
                    self.checkers.add(name)
                elif type(value) is cst.Call and any(self.is_array_type(a.value, ctx) for a in value.args):
                    self.arrays.add(name)  # `Float = TorchTyping(jaxtyping.Float)`

    def is_checker(self, expr: cst.BaseExpression, ctx: RuleContext) -> bool:
        if type(expr) is cst.Name and expr.value in self.checkers:
            return True
        if type(expr) is cst.Call:
            func = ctx.qualname(expr.func)
            if func == _BEARTYPE:
                return not _checks_off(expr)
            if func == "jaxtyping.jaxtyped":
                checker = _keyword(expr, "typechecker")
                return checker is not None and self.is_checker(checker, ctx)
            return False
        return ctx.qualname(expr) == _BEARTYPE

    def is_array_type(self, expr: cst.BaseExpression, ctx: RuleContext) -> bool:
        if type(expr) is cst.Name and expr.value in self.arrays:
            return True
        q = ctx.qualname(expr)
        return q is not None and q.startswith("jaxtyping.") and q.rpartition(".")[2] in _JAXTYPING_ARRAYS


_FACTS: list = [None]  # the last file's facts (files are analysed one at a time)


def _file_facts(ctx: RuleContext) -> _FileFacts:
    facts = _FACTS[0]
    if facts is None or facts.module is not ctx.module:
        facts = _FACTS[0] = _FileFacts(ctx.module, ctx)
    return facts


def sampled_container(annotation: cst.BaseExpression, ctx: RuleContext) -> Optional[str]:
    """The text of a hint inside `annotation` that beartype checks by a random draw, or None."""
    for node in iter_nodes(annotation):
        if type(node) is not cst.Subscript:
            continue
        q = ctx.qualname(node.value)
        if q == "list" or _typing_name(q, _SAMPLED):
            return ctx.module.code_for_node(node.value)
        if (q == "tuple" or _typing_name(q, _TUPLES)) and node.slice and type(node.slice[-1].slice) is cst.Index \
                and type(node.slice[-1].slice.value) is cst.Ellipsis:
            return f"{ctx.module.code_for_node(node.value)}[..., ...]"
    return None


def _array_hint(annotation: cst.BaseExpression, facts: _FileFacts, ctx: RuleContext) -> Optional[str]:
    """The jaxtyping array type of a hint that is one (not inside `Optional` / `| None`)."""
    if type(annotation) is cst.Subscript and facts.is_array_type(annotation.value, ctx):
        return ctx.module.code_for_node(annotation.value)
    return None


class RuntimeTypeChecker(Rule):
    code = "DYN114"
    name = "runtime-type-checker"
    summary = "beartype / jaxtyping checks on compiled code break the graph"
    fixable = None
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0007", "Attempted to call function marked as skipped"),
        ("GB0156", "Unsupported method call"),
    )
    node_types = (cst.FunctionDef,)

    def check(self, node: cst.FunctionDef, ctx: RuleContext) -> None:
        if not node.decorators and not ctx.class_decorators:
            return  # most functions: the file's aliases need not be read
        facts = _file_facts(ctx)
        checker = next((d for d in node.decorators if facts.is_checker(d.decorator, ctx)), None)
        if checker is None and node.name.value == "forward":
            # The class's decorator checks every method: reported once, from its forward.
            checker = next((d for d in ctx.class_decorators if facts.is_checker(d.decorator, ctx)), None)
        if checker is None:
            return
        params = node.params
        every = (*params.posonly_params, *params.params, *params.kwonly_params)
        if type(params.star_arg) is cst.Param:
            every += (params.star_arg,)
        if params.star_kwarg is not None:
            every += (params.star_kwarg,)
        hints = [p.annotation.annotation for p in every if p.annotation is not None]
        if node.returns is not None:
            hints.append(node.returns.annotation)
        why = None
        for hint in hints:
            container = sampled_container(hint, ctx)
            if container is not None:
                why = (f"beartype checks `{container}[...]` by drawing a random item with `random.getrandbits`, "
                       "which Dynamo does not trace")
                break
        if why is None:
            required = [p.annotation.annotation for p in every if p.annotation is not None and p.default is None]
            if node.returns is not None:
                required.append(node.returns.annotation)
            array = next((a for a in (_array_hint(h, facts, ctx) for h in required) if a is not None), None)
            if array is None:
                return
            why = (f"the jaxtyping hint `{array}[...]` is checked with a custom `isinstance`, "
                   "which Dynamo does not trace (torch 2.13 even fails the check under compile)")
        ctx.report(
            self, checker,
            f"runtime type checks on compiled code: {why}; the graph breaks at every call of "
            f"`{node.name.value}` (`fullgraph=True` fails). Check types outside the compiled code, or "
            "turn beartype off there (`BeartypeConf(strategy=BeartypeStrategy.O0)`)",
        )

    _source = """
            import torch
            from typing import List, Tuple
            from beartype import beartype

            @beartype{mark}
            def mix(x: torch.Tensor, extra: {hint}) -> torch.Tensor:
                return x * 2 + extra[0]

            @torch.compile
            def f(x):
                return mix(x.sin(), {arg}) + 1
            """
    _jax = """
            import torch
            from beartype import beartype
            from jaxtyping import Float, jaxtyped

            typecheck = jaxtyped(typechecker=beartype)

            class Scale(torch.nn.Module):
                @typecheck{mark}
                def forward(self, x: Float[torch.Tensor, "b n"]) -> Float[torch.Tensor, "b n"]:
                    return x * 2

            class M(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scale = Scale()

                def forward(self, x):
                    return self.scale(x.sin()) + 1
            """
    _needs = ("beartype", "jaxtyping")
    invalid = (
        Example(_source.format(mark="  # expect: DYN114", hint="List[torch.Tensor]", arg="[x]"), dynamo=BREAKS, needs=_needs),
        Example(_source.format(mark="  # expect: DYN114", hint="Tuple[torch.Tensor, ...]", arg="(x, x)"), dynamo=BREAKS, needs=_needs),
        Example(_jax.format(mark="  # expect: DYN114"), dynamo=None, needs=_needs, why=(
            "not one verdict across versions: torch 2.14.1 breaks (3 graphs), torch 2.13 raises a false type "
            "error under compile; tests/test_probes.py checks that it never compiles cleanly")),
    )
    valid = (
        # A fixed-length tuple is checked item by item: nothing drawn.
        Example(_source.format(mark="", hint="Tuple[torch.Tensor, torch.Tensor]", arg="(x, x)"), dynamo=CLEAN, needs=_needs),
        # Checks turned off on the compiled function.
        Example(_source.format(mark="", hint="List[torch.Tensor]", arg="[x]").replace(
            "from beartype import beartype", "from beartype import beartype, BeartypeConf, BeartypeStrategy").replace(
            "@beartype\n", "@beartype(conf=BeartypeConf(strategy=BeartypeStrategy.O0))\n"), dynamo=CLEAN, needs=_needs),
    )


RULE = RuntimeTypeChecker

"""DYN120: Python control flow on a tensor's value.

## What it does
Finds `if`, `elif`, `while` and conditional expressions whose condition is a tensor, `and` / `or` /
`not` applied to tensors, and the builtins `all()` / `any()` over a tensor or over a generator or
list of tensor tests (`all(x < y for x, y in zip(ts[:-1], ts[1:]))`), in a compile region.
Conditions on metadata are not reported: `x is None`, `self.training`, `x.dim() == 3`,
`isinstance(...)`, config values, nor a tensor test behind a dtype or device check
(`x.dtype == torch.float16 and torch.isinf(x).any()` only breaks for float16 inputs). A random
draw tested behind a positive probability (`if self.training and self.layerdrop > 0.0:` around
`if dropout_probability < self.layerdrop:`, as transformers writes LayerDrop) is reported with a
message of its own: it breaks when the probability is positive (M2M100's default 0.05), not at 0. Shape
conditions are DYN201. NumPy values count as tensors: Dynamo traces NumPy through torch, so even
`if np.sqrt(2.0) > 1:` breaks the graph.

## Why it breaks the graph
Which branch runs depends on the tensor's data, which Dynamo does not know while tracing. It
stops the graph at the condition ("generic_jump TensorVariable()"), runs the branch eagerly and
compiles what follows separately, for every call.

## Example
```python
def forward(self, x):
    if x.sum() > 0:
        return x * 2
    return x - 1
```

## Use instead
Compute both sides and select: `torch.where(x.sum() > 0, x * 2, x - 1)` (the unsafe autofix
does this for simple branches), or `torch.cond(pred, true_fn, false_fn, (x,))` for branches with
different work. A test that decides an early `return`, `continue` or `break` can become neither:
compute what both paths produce and select (`h = torch.where(skip, h, layer(h))`), or decide it
from a Python value (a one-time initialisation flag kept as a Python bool beside the tensor
buffer); the message says which exit it is.

## Fix (safe or unsafe)
LayerDrop's draw (BART, Whisper, M2M100 and their copies; a safe fix): `dropout_probability =
torch.rand([])` then `if dropout_probability < self.layerdrop:` becomes `if self.layerdrop > 0 and
dropout_probability < self.layerdrop:`. A `torch.rand` draw lies in [0, 1), so the test has the
same value for every probability, the draw is still made (the random stream is unchanged), and
with the default `layerdrop = 0.0` Dynamo decides it from the Python number: no break. Inside the
loop over layers the unfixed test makes Dynamo give up on the whole forward in train mode (no
graph at all, probed on torch 2.11, 2.13 and 2.14.1). Only for a strict `<` (a draw can be
exactly 0), a local name bound only to `torch.rand(...)` / `torch.rand_like(...)` and a plain
name, attribute or number as the probability; not where the test already sits behind `p > 0` (an
`and` before it, or an enclosing `if self.training and self.layerdrop > 0.0:`).

LayerDrop behind a positive probability (an unsafe fix): the layer runs and `torch.where` keeps its
output only when the draw does not drop it. In the guarded branch, after the draw:
```python
layer_output = layer(h, mask)
h = torch.where(dropout_probability < self.layerdrop, h, layer_output)
continue
```
and the loop's own `h = layer(h, mask)` stays for the path without LayerDrop (eval mode,
probability 0), which is unchanged. The same for a flag the draw sets (`if draw < p: to_drop =
True` or `skip = draw < p`) that a final `if not skip [or synced_gpus]: h = layer(...)` reads
(`synced_gpus` keeps the output as before), and for the unguarded shapes of transformers 5.17
(`if self.training and (draw < p): continue` / `else: h = layer(...)`, also with `layer_outputs =
(None, ...)` in place of `continue` as NLLB-MoE's 4.x encoder writes it, and `skip = self.training
and draw < p` read by the step), where the select is taken only `if self.training`. The layer
step is `h = <call>` reading `h`, `h, attn = <call>`, or `layer_outputs = <call>` (also as an
`if`/`else` for gradient checkpointing) followed by `h = layer_outputs[0]`; plain assignments
before it (`past_key_value = past_key_values[idx]`) and `if` statements after it that collect the
layer's other outputs (`if output_attentions: all_attentions += (layer_outputs[1],)`) are copied
into the guarded branch, and `if to_drop: layer_outputs = (None, None)` / `else:` running the
layer is recognised too, as is the wav2vec2 family of transformers 4.x (`skip = True if
self.training and (draw < p) else False`, the layer run under `if not skip or synced:`, then `if
skip: layer_outputs = (None, None)`: the flag and that statement go, the layer always runs). Refused where a statement after the layer changes `h` or accumulates
outside an `if` (Autoformer's `trend = trend + residual_trend`), collects `h` itself, or feeds
the next layer's call, and where the flag is read elsewhere. A dropped layer still costs its
compute, its parameters get zero gradients instead of none (optimizers with momentum or weight
decay still step them), dropout inside it draws random numbers on every layer, and with
`output_attentions` in train mode its attentions are collected too (the original collected
none, or `None`, for it).

Branches that assign one variable or return, with side-effect-free values, become
`torch.where(c, A, B)`: both sides are now computed. When both branches make the same call
(`return self.h(x) + 1` / `return self.h(x) - 1`), the condition is bound first, the call is
evaluated once into a variable and the branches select from it:
```python
condition = torch.rand(1) > 0.5
h_out = self.h(x)
return torch.where(condition, h_out + 1, h_out - 1)
```
The call runs once either way, after the condition, so its random draws and updates happen as
before; it is hoisted only when everything else in both branches is side-effect free.

Branches with other work (several statements, calls that must not run twice, random draws)
become `torch.cond` over two local functions that return what the code after the `if` reads (the
variables the branches assign, or the value both return); a variable a branch reads and
reassigns is passed as an operand, an output that may be an input or a view of one is
`.clone()`d (`torch.cond` refuses aliases). Only branches of plain assignments to names (and a
final `return`) with tensor outputs qualify: no in-place updates, attribute stores, prints,
loops or nested branches. `torch.cond` needs both branches' outputs to agree in shape, dtype and
stride order, else it raises at the first call; `torch.where` would broadcast them. So both fixes
are offered only when the two sides are provably of one shape: elementwise or shape-keeping work
(`softmax`, `clamp`, `cumsum`, `zeros_like`, a submodule the class makes `nn.Dropout` or an
activation) on the same tensors and Python numbers. `if c: x = F.pad(x, ..)`, `cat`, `reshape`,
indexing, reductions and calls of other submodules against anything but the same call get no
fix.

A tensor `if` heading an `if` / `elif` / `else` chain whose arms only assign the same names or
`self` attributes (a range observer's "first call, else moving average") is rewritten without
`torch.cond`: the condition (`and` / `or` of tensor tests become `&` / `|`) and the first arm's
values are computed into variables, the rest of the chain runs as before (its tests are Python
values), then each target is selected, `self.lo = torch.where(taken, lo_if_taken, self.lo)`. Every
arm then runs on every call. Run `dynalint verify` on the result.

A test that a boolean mask is not empty, guarding only updates through that mask with a number
(`if pad_mask.any():` around `ll.masked_fill_(pad_mask, 0.0)`, `x[pad_mask] = 0.0`, `x =
x.masked_fill(pad_mask, -1)`; also `torch.any(m)`, `m.sum() > 0`), loses the test: each update
changes nothing for an empty mask, and the writes through a mask keep their shapes, so the code
compiles to one graph (probed on torch 2.11, 2.13 and 2.14.1). Unsafe: the updates always run,
and an in-place one counts as a modification for autograd even when the mask is empty (a tensor
saved for backward and updated there makes backward raise; the original raised too whenever the
mask was not empty). Only for a mask the linter knows to be boolean (an integer index tensor
writes where its values point) and numbers as the values. Where the body routes rows instead
(`if mask.any(): out[mask] = expert(x[mask])`, a top-1 mixture of experts), the test goes with
DYN130's dense dispatch: every row runs through the expert and `torch.where` keeps its output
where the mask is set.

A check that only raises, `if (x == 0).any(): raise ValueError("zeros")` (also `if not t:` and
`if flag and t:`), becomes `if torch.compiler.is_compiling(): torch._assert_async(
torch.logical_not((x == 0).any()), "ValueError: zeros")` `elif (x == 0).any(): raise
ValueError("zeros")`: eager runs raise as before, and while compiling Dynamo keeps the check in
the graph. Compiled, it raises a RuntimeError instead of the original exception, and on a GPU it
fails asynchronously as a device-side assert that leaves the CUDA context unusable: right for
checks of programming errors, not for exceptions that callers catch.

`assert t, msg` is kept in the graph by Dynamo only when `msg` is a string literal: with an
f-string, `"%d" % n` or a variable the assert is a branch on the tensor (probed on 2.13 and
2.14.1), and is reported. With an f-string of Python values the fix is
`torch._assert_async(t, f"...")`, the message formatted before the call (a RuntimeError instead
of an AssertionError, and checked under `python -O` too).

`assert a and b, msg` on tensor tests (`and` takes a tensor's truth in Python) becomes one
`assert` per operand, `assert a, msg` then `assert b, msg`: the same operands in the same order,
the same AssertionError at the first false one; Dynamo keeps each `assert t` in the graph, where
a failure is a RuntimeError with the message. Each operand's finding carries that one fix (of a
chain of more than 32 operands, only the leftmost finding does).
"""

import contextlib
from typing import Optional

import libcst as cst

from ..draws import comparison_with_draw, guarded_probability
from ..fastcst import iter_nodes
from ..kinds import PYTHON_BOOL_COMPARISONS
from ..nodes import dotted, is_string_literal
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix
from .dyn106_numpy_scalar_math import only_numpy_math_of_numbers

MESSAGE = "{what} on a tensor value breaks the graph; use `torch.where` or `torch.cond`"
# Without a fix, a test that decides an early exit gets advice that fits it: neither
# `torch.where` nor `torch.cond` can leave the function or the loop.
EXIT_MESSAGES = {
    cst.Return: (
        "{what} on a tensor value decides an early `return` and breaks the graph; a compiled "
        "function cannot return on a traced value: compute what both paths return and select with "
        "`torch.where`, or decide it from a Python value (a Python bool kept beside a tensor flag)"
    ),
    cst.Continue: (
        "{what} on a tensor value decides whether to skip the rest of the loop body and breaks the "
        "graph: compute the body and select with `torch.where` (`h = torch.where(skip, h, layer(h))`), "
        "or decide it from a Python value"
    ),
}
NUMPY_MESSAGE = (
    "{what} on a NumPy value breaks the graph: Dynamo traces NumPy as tensors; compute it with Python "
    "numbers (`math.lcm`, `round`), draw random numbers with `torch.rand` and select with "
    "`torch.where`, or do it outside the compiled region"
)
WHILE_MESSAGE = (
    "`while` on a tensor value breaks the graph: run a fixed number of iterations and carry a `done` "
    "mask through `torch.where`, or decide the count from a Python value"
)
EXIT_MESSAGES[cst.Raise] = (
    "{what} on a tensor value decides whether to raise and breaks the graph: check inside the graph "
    "with `torch._assert_async(ok, \"message\")` (a constant message), or validate outside the compiled region"
)
EXIT_MESSAGES[cst.Break] = (
    "{what} on a tensor value decides whether to leave the loop and breaks the graph: run a fixed "
    "number of iterations and carry a `done` mask through `torch.where`, or decide it from a Python value"
)


def _is_and(node) -> bool:
    return type(node) is cst.BooleanOperation and type(node.operator) is cst.And


def _message(what: str, test, ctx: RuleContext, parent=None, fix=None, branch=None) -> str:
    """The finding's message; LayerDrop's draw behind a positive-probability test has its own, and
    a test without a fix that decides an early exit or heads a `while` (`branch`: the `if` or
    `while` it heads) says what to do."""
    found = comparison_with_draw(ctx, test)
    if found is not None and guarded_probability(ctx, test, found[1], parent):
        p = dotted(found[1]) or getattr(found[1], "value", "the probability")
        if fix is not None:
            return (f"{what} on a random draw breaks the graph when `{p}` > 0 (LayerDrop: layers skipped at "
                    "random); the unsafe fix runs the layer and keeps its output only when it is not dropped")
        return (f"{what} on a random draw breaks the graph when `{p}` > 0 (layers skipped at random, "
                "which no rewrite keeps); with a probability of 0 it does not")
    compared = _python_bool_comparison(test)
    if compared is not None:
        # mace: `if not torch.equal(a, b): raise ...`: the comparison itself reads the values
        return (f"`{compared}()` reads tensor values into a Python bool and breaks the graph; compare in the "
                "graph (`(a == b).all()`, `torch.isclose(a, b).all()`) or check outside the compiled region")
    if fix is None and type(branch) is cst.While:
        return WHILE_MESSAGE
    if fix is None and ctx.is_numpy(test):
        # Reformer: `seq_len % np.lcm(a, b) != 0`: no tensor in sight, the NumPy value is the tensor.
        return NUMPY_MESSAGE.format(what=what)
    exit_kind = _early_exit(branch)
    if fix is not None and exit_kind is not cst.Raise:  # the raise advice fits its fix too
        exit_kind = None
    return (EXIT_MESSAGES.get(exit_kind) or MESSAGE).format(what=what)


def _python_bool_comparison(test) -> Optional[str]:
    """`torch.equal` / `torch.allclose` (or the methods) when the test is one, or `not` of one."""
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
    if type(test) is cst.Call and type(test.func) is cst.Attribute and test.func.attr.value in ("equal", "allclose"):
        return dotted(test.func) if dotted(test.func) in ("torch.equal", "torch.allclose") else f".{test.func.attr.value}"
    return None


def _reads_python_bool(expr) -> bool:
    """Does the test call `torch.equal` / `allclose` (or the methods)? They break the graph
    themselves and give a Python bool: no rewrite of the test removes that (`torch.where` and
    `torch._assert_async` would even fail on the bool)."""
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in PYTHON_BOOL_COMPARISONS
               for n in iter_nodes(expr))


def _early_exit(branch):
    """Return, Continue or Break where `branch` is an `if` without `else` whose body ends in one."""
    if type(branch) is not cst.If or branch.orelse is not None:
        return None
    last = branch.body.body[-1]
    if type(last) is cst.SimpleStatementLine:
        last = last.body[-1]
    return type(last) if type(last) in EXIT_MESSAGES else None


def _heading_if(ctx: RuleContext):
    """The `if` whose test is being walked (None inside an expression such as `a if t else b`).
    Each `and` / `or` / `not` passed keeps the answer (by id, checked to be the same node): each
    operand of an N-term chain asks, and the chain nests N deep."""
    memo = ctx.rule_state("DYN120").setdefault("heading_if", {})
    passed = []
    found = None
    for node in ctx.iter_ancestors():
        t = type(node)
        if t is cst.BooleanOperation or t is cst.UnaryOperation:
            hit = memo.get(id(node))
            if hit is not None and hit[0] is node:
                found = hit[1]
                break
            passed.append(node)
            continue
        if t is cst.If:
            found = node
        break
    for node in passed:
        memo[id(node)] = (node, found)
    return found


def _is_dtype_or_device_check(node, memo: dict) -> bool:
    """Does an `and` of comparisons test a `.dtype` or `.device`? `memo` (per function, by id):
    each `and` of an N-term chain asks about its left side; without it that is N squared. A
    stack of its own, not recursion: such a chain nests N deep."""
    if not _is_and(node):
        return _compares_dtype_or_device(node)
    stack = [node]
    while stack:
        top = stack[-1]
        if (memo.get(id(top)) or (None,))[0] is top:
            stack.pop()
            continue
        pending = [o for o in (top.left, top.right) if _is_and(o) and (memo.get(id(o)) or (None,))[0] is not o]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        memo[id(top)] = (top, any(memo[id(o)][1] if _is_and(o) else _compares_dtype_or_device(o) for o in (top.left, top.right)))
    return memo[id(node)][1]


def _compares_dtype_or_device(node) -> bool:
    if type(node) is not cst.Comparison:
        return False
    parts = [node.left] + [c.comparator for c in node.comparisons]
    return any(type(p) is cst.Attribute and p.attr.value in ("dtype", "device") for p in parts)


def _dtype_checks(ctx: RuleContext) -> dict:
    """_is_dtype_or_device_check's memo, per function being walked."""
    return ctx.rule_state("DYN120").setdefault("dtype_checks", {})


def _guarded(ctx: RuleContext) -> set:
    """ids of operands behind a dtype or device check, per function being walked."""
    return ctx.rule_state("DYN120").setdefault("dtype_guarded_operands", set())


def _truth_tested(node: cst.BooleanOperation, ctx: RuleContext) -> bool:
    """Is the value of `a and b` / `a or b` itself tested for truth (an `if`, `while`, `assert`,
    conditional or `not` test, `bool()`, or the left side of an enclosing `and` / `or`)?"""
    current = node
    for around in ctx.iter_ancestors():
        if around is current:
            continue
        t = type(around)
        if t is cst.BooleanOperation:
            if around.right is current:
                current = around  # its value is the enclosing expression's: ask about that
                continue
            return True
        if t in (cst.If, cst.While, cst.IfExp, cst.Assert):
            return around.test is current
        if t is cst.UnaryOperation:
            return type(around.operator) is cst.Not
        if t is cst.Arg:
            continue
        if t is cst.Call:
            return type(around.func) is cst.Name and around.func.value == "bool"
        return False
    return True


class TensorControlFlow(Rule):
    code = "DYN120"
    name = "tensor-control-flow"
    summary = "Python branch on a tensor's value"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0170", "Data-dependent branching"),
        # A branch inside a comprehension: Dynamo cannot rebuild the comprehension to resume.
        ("GB0092", "Reconstruction failure"),
        # `all(<generator of tensor tests>)`: the generator cannot be rebuilt to resume after it.
        ("GB8335", "Generator reconstruction with mutations"),
    )
    node_types = (cst.If, cst.While, cst.IfExp, cst.BooleanOperation, cst.UnaryOperation, cst.Call, cst.Assert)
    fixable = "safe or unsafe"

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        if type(node) is cst.Assert:
            # `assert t, "text"` stays in the graph; any other message makes it a branch.
            test = node.test
            if (
                node.msg is not None
                and not is_string_literal(node.msg)
                and type(test) not in (cst.BooleanOperation, cst.UnaryOperation)
                and _python_bool_comparison(test) is None  # `allclose` itself breaks: DYN110's finding
                and ctx.is_tensor_value(test)
            ):
                ctx.report(self, test, "`assert` on a tensor value breaks the graph when its message is not a string "
                                       "literal (Dynamo keeps `assert t, \"text\"` in the graph): use a literal message, "
                                       "or `torch._assert_async(t, msg)`",
                           fix=offer_fix("assert_message", ctx, node, self.code))
            return
        if type(node) in (cst.If, cst.While, cst.IfExp):
            test = node.test
            if type(test) in (cst.BooleanOperation, cst.UnaryOperation):
                return  # the operands are checked on their own
            if ctx.is_tensor_value(test) and not only_numpy_math_of_numbers(test, ctx):
                # (`if np.sqrt(n) > 1:` is DYN106's, which fixes it with `math.sqrt`)
                what = {cst.If: "`if`", cst.While: "`while`", cst.IfExp: "conditional expression"}[type(node)]
                fix = None if _reads_python_bool(test) else (
                    offer_fix("uniform_draw", ctx, test, self.code)
                    or offer_fix("layer_drop", ctx, test, self.code)
                    or offer_fix("mask_guard", ctx, test, self.code)
                    or offer_fix("dispatch", ctx, test, self.code)
                    or offer_fix("where", ctx, test, self.code)
                    or offer_fix("raise_check", ctx, test, self.code)
                    or offer_fix("cond", ctx, test, self.code)
                    or offer_fix("select_chain", ctx, test, self.code)
                )
                ctx.report(self, test, _message(what, test, ctx, fix=fix, branch=node), fix=fix)
        elif type(node) is cst.BooleanOperation:
            op = "and" if type(node.operator) is cst.And else "or"
            # `y = print(x) or x`, `cond or torch.zeros_like(t)`: the right operand is the value,
            # not tested, unless the whole expression is.
            # (A LayerDrop draw bound as the value, `skip = self.training and draw < p`, is kept:
            # its finding carries the select that removes the break where `skip` is tested.)
            tested = _truth_tested(node, ctx)
            operands = [node.left, node.right]
            if op == "and" and _is_dtype_or_device_check(node.left, _dtype_checks(ctx)):
                # `x.dtype == torch.float16 and torch.isinf(x).any()`: Dynamo knows the dtype, so
                # the tensor test only runs (and breaks) for that dtype; not reported.
                operands = [node.left]
                # Its `not` operand too (`... float16 and not torch.isfinite(x).all()`), which is
                # visited after this node: remember it.
                _guarded(ctx).add(id(node.right))
            for operand in operands:
                if type(operand) in (cst.BooleanOperation, cst.UnaryOperation):
                    continue
                # The right side runs only where the left held (`and`) or failed (`or`): `self.training
                # is False and i >= n` reads n as eval mode leaves it (DAC's quantizer dropout).
                with (ctx.assuming(node.left, op == "and") if operand is node.right else contextlib.nullcontext()):
                    tensor_operand = ctx.is_tensor_value(operand)
                if tensor_operand:
                    if operand is node.right and not tested:
                        fix = offer_fix("uniform_draw", ctx, operand, self.code) or offer_fix("layer_drop", ctx, operand, self.code)
                        if fix is not None:
                            ctx.report(self, operand, _message(f"`{op}`", operand, ctx, node, fix, _heading_if(ctx)), fix=fix)
                        continue
                    fix = None if _reads_python_bool(operand) else (
                        offer_fix("uniform_draw", ctx, operand, self.code)
                        or offer_fix("layer_drop", ctx, operand, self.code)
                        or offer_fix("raise_check", ctx, operand, self.code)
                        or offer_fix("assert_split", ctx, operand, self.code)
                        or offer_fix("select_chain", ctx, operand, self.code)
                    )
                    ctx.report(self, operand, _message(f"`{op}`", operand, ctx, node, fix, _heading_if(ctx)), fix=fix)
        elif type(node) is cst.UnaryOperation:
            if id(node) in _guarded(ctx):
                return
            if type(node.operator) is cst.Not and type(node.expression) is not cst.BooleanOperation:
                if ctx.is_tensor_value(node.expression):
                    fix = None if _reads_python_bool(node.expression) else (
                        offer_fix("uniform_draw", ctx, node.expression, self.code)
                        or offer_fix("layer_drop", ctx, node.expression, self.code)
                        or offer_fix("where", ctx, node.expression, self.code)
                        or offer_fix("raise_check", ctx, node.expression, self.code)
                        or offer_fix("cond", ctx, node.expression, self.code)
                        or offer_fix("assert_split", ctx, node.expression, self.code)
                    )
                    ctx.report(self, node.expression, _message("`not`", node.expression, ctx, fix=fix, branch=_heading_if(ctx)), fix=fix)
        elif type(node) is cst.Call:
            if type(node.func) is cst.Name and node.func.value in ("all", "any") and len(node.args) == 1:
                if ctx.call_name(node) != node.func.value:
                    return
                arg = node.args[0].value
                if ctx.is_tensor(arg):
                    ctx.report(self, node, MESSAGE.format(what=f"builtin `{node.func.value}()`"))
                elif type(arg) in (cst.GeneratorExp, cst.ListComp) and (ctx.bind_comprehension(arg) or ctx.is_tensor_value(arg.elt)):
                    # `all(x < y for x, y in zip(ts[:-1], ts[1:]))`: each test is a branch, and a
                    # generator Dynamo cannot resume makes it skip the whole function (torchdyn).
                    name = node.func.value
                    ctx.report(self, node, f"builtin `{name}()` over tensor tests branches on each tensor and breaks the "
                                           f"graph (over a generator Dynamo gives up on the whole function); test all at "
                                           f"once: `torch.stack([...]).{name}()` or a vectorised comparison such as "
                                           f"`(ts[1:] > ts[:-1]).{name}()`, and `torch._assert_async` for an assert")

    invalid = (
        Example(
            # ultralytics' losses: a method returns a tuple whose first item is a mask.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def assign(self, x):
                    fg_mask = x > 0
                    return (fg_mask, x * 2), x.sum()

                def forward(self, x):
                    (fg_mask, target), loss = self.assign(x)
                    if fg_mask.any():  # expect: DYN120
                        loss = loss + target.mean()
                    return loss
            """,
            dynamo=BREAKS,
        ),
        Example(
            # torchdyn's odeint: `t_span: Union[List, Tensor]`, given a tensor by the module.
            """
            from typing import List, Union

            import torch
            from torch import nn

            def odeint(f, x, t_span: Union[List, torch.Tensor]):
                if t_span[1] < t_span[0]:  # expect: DYN120
                    t_span = -t_span
                return f(x) * t_span[-1]

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.f = nn.Linear(4, 4)
                    self.register_buffer("t_span", torch.linspace(0, 1, 5))

                def forward(self, x):
                    return odeint(self.f, x, self.t_span)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 4),)",
        ),
        Example(
            # piq's input validation: an assert whose message is an f-string is a branch to Dynamo.
            """
            import torch

            @torch.compile
            def f(x, data_range=1.0):
                assert x.amax() <= data_range, f"expected values up to {data_range}"  # expect: DYN120
                assert x.amin() >= -data_range and x.abs().sum() > 0, f"bad input for {data_range}"  # expect: DYN120 DYN120
                return x * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.rand(4, 4) * 0.5 + 0.1,)",
            fixed="""
                import torch

                @torch.compile
                def f(x, data_range=1.0):
                    torch._assert_async(x.amax() <= data_range, f"expected values up to {data_range}")  # expect: DYN120
                    torch._assert_async(x.amin() >= -data_range, f"bad input for {data_range}")
                    torch._assert_async(x.abs().sum() > 0, f"bad input for {data_range}")  # expect: DYN120 DYN120
                    return x * 2
            """,
        ),
        Example(
            # normflows' `iResBlock`: a submodule class named in lower case, whose method (not its
            # forward) the model calls.
            """
            import torch
            from torch import nn

            class iResBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.net = nn.Linear(4, 4)

                def inverse(self, y):
                    x = y - self.net(y)
                    if not torch.all((x + self.net(x) - y).abs() < 1e-3):  # expect: DYN120
                        x = y - self.net(x)
                    return x

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.block = iResBlock()

                def forward(self, y):
                    return self.block.inverse(y * 0.01)
            """,
            dynamo=BREAKS,
        ),
        Example(
            # A custom autograd function: Dynamo traces its forward (and backward) from `.apply`.
            """
            import torch
            from torch import nn

            class Solve(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, t1):
                    t = torch.zeros_like(t1)
                    while (t1 - t) > 0:  # expect: DYN120
                        t = t + 0.5
                        x = x * 0.9
                    return x

                @staticmethod
                def backward(ctx, grad):
                    return grad, None

            class M(nn.Module):
                def forward(self, x):
                    return Solve.apply(x, x.abs().sum()) + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            # fairseq's LayerDropModuleList: its own `__iter__` runs in the owner's `for` loop.
            """
            import torch
            from torch import nn

            class LayerDropList(nn.ModuleList):
                def __iter__(self):
                    keep = torch.empty(len(self)).uniform_()
                    for i, m in enumerate(super().__iter__()):
                        if not self.training or keep[i] > 0.5:  # expect: DYN120
                            yield m

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = LayerDropList([nn.Linear(4, 4) for _ in range(2)])

                def forward(self, x):
                    for layer in self.layers:
                        x = layer(x)
                    return x
            """,
            dynamo=BREAKS,
        ),
        Example(
            # vit-pytorch's CaiT drops layers by filtering them with a boolean tensor.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

                def forward(self, x):
                    to_drop = torch.zeros(3).uniform_(0.0, 1.0) < 0.5
                    for layer in [l for l, drop in zip(self.layers, to_drop) if not drop]:  # expect: DYN120
                        x = layer(x)
                    return x
            """,
            dynamo=BREAKS,
        ),
        Example(
            # MONAI's Bessel series: builtin `abs()` of a tensor is a tensor.
            """
            import torch

            @torch.compile
            def f(x):
                b = x * 2
                if abs(b.sum()) > 1.0e10:  # expect: DYN120
                    b = b * 1e-10
                return b
            """,
            dynamo=BREAKS,
        ),
        Example(
            # LayerDrop: skipped at random in train mode; never with the default probability 0. The
            # safe fix tests `self.layerdrop > 0` first; the unsafe one then selects the layer's output.
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                    self.layerdrop = 0.0

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        if self.training:
                            dropout_probability = torch.rand([])
                            if dropout_probability < self.layerdrop:  # expect: DYN120
                                continue
                        h = layer(h)
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                        self.layerdrop = 0.0

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            if self.training:
                                dropout_probability = torch.rand([])
                                layer_output = layer(h)
                                h = torch.where(dropout_probability < self.layerdrop, h, layer_output) if self.layerdrop > 0 else layer_output  # expect: DYN120
                                continue
                            h = layer(h)
                        return h
            """,
        ),
        Example(
            # Behind a positive probability it still breaks (layers skipped at random): its own message.
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                    self.layerdrop = 0.2

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        if self.training and self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            if dropout_probability < self.layerdrop:  # expect: DYN120
                                continue
                        h = layer(h)
                    return h
            """,
            dynamo=BREAKS,
            # LayerDrop as a select (unsafe): the layer runs, its output is kept when not dropped.
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                        self.layerdrop = 0.2

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            if self.training and self.layerdrop > 0.0:
                                dropout_probability = torch.rand([])
                                layer_output = layer(h)
                                h = torch.where(dropout_probability < self.layerdrop, h, layer_output)  # expect: DYN120
                                continue
                            h = layer(h)
                        return h
            """,
        ),
        Example(
            # LayerDrop through a flag that a later `if not flag or synced:` reads (wav2vec2, NLLB-MoE).
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                    self.layerdrop = 0.5
                    self.synced = False

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        skip_the_layer = False
                        if self.training and self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            skip_the_layer = dropout_probability < self.layerdrop
                        if not skip_the_layer or self.synced:  # expect: DYN120
                            h = layer(h)
                        if skip_the_layer:  # expect: DYN120
                            continue
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                        self.layerdrop = 0.5
                        self.synced = False

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            skip_the_layer = False
                            if self.training and self.layerdrop > 0.0:
                                dropout_probability = torch.rand([])
                                layer_output = layer(h)
                                h = layer_output if self.synced else torch.where(dropout_probability < self.layerdrop, h, layer_output)
                                continue
                            if not skip_the_layer or self.synced:  # expect: DYN120
                                h = layer(h)
                            if skip_the_layer:  # expect: DYN120
                                continue
                        return h
            """,
        ),
        Example(
            # An emptiness test around updates through the same mask (wav2vec2's pretraining loss,
            # RAG's padding): the updates change nothing for an empty mask, so the test goes.
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def forward(self, x):
                    y = x * 2
                    mask = y < 0
                    if mask.any():  # expect: DYN120
                        y.masked_fill_(mask, 0.0)
                        y[mask] = -1.0
                    return y + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def forward(self, x):
                        y = x * 2
                        mask = y < 0
                        # expect: DYN120
                        y.masked_fill_(mask, 0.0)
                        y[mask] = -1.0
                        return y + 1
            """,
        ),
        Example(
            # LayerDrop drawn in the test itself, the layer after it (research code): the select.
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                    self.layerdrop = 0.5

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        if self.training and torch.rand(1) < self.layerdrop:  # expect: DYN120
                            continue
                        h = layer(h)
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                        self.layerdrop = 0.5

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            layer_output = layer(h)
                            h = torch.where(torch.rand(1) < self.layerdrop, h, layer_output) if self.training else layer_output  # expect: DYN120
                        return h
            """,
        ),
        Example(
            # The flag deciding `continue` unless synced, the layer run after it (SpeechT5's decoder).
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                    self.layerdrop = 0.5
                    self.synced = False

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        skip_the_layer = False
                        if self.training and self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            skip_the_layer = dropout_probability < self.layerdrop
                        if skip_the_layer and not self.synced:  # expect: DYN120
                            continue
                        h = layer(h)
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                        self.layerdrop = 0.5
                        self.synced = False

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            skip_the_layer = False
                            if self.training and self.layerdrop > 0.0:
                                dropout_probability = torch.rand([])
                                layer_output = layer(h)
                                h = layer_output if self.synced else torch.where(dropout_probability < self.layerdrop, h, layer_output)
                                continue
                            if skip_the_layer and not self.synced:  # expect: DYN120
                                continue
                            h = layer(h)
                        return h
            """,
        ),
        Example(
            # LayerDrop drawn outside any guard, `if training and draw < p: continue` / `else:` (transformers 5.17).
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                    self.layerdrop = 0.5

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        dropout_probability = torch.rand([])
                        if self.training and (dropout_probability < self.layerdrop):  # expect: DYN120
                            continue
                        else:
                            h = layer(h)
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                        self.layerdrop = 0.5

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            dropout_probability = torch.rand([])
                            layer_output = layer(h)
                            h = torch.where(dropout_probability < self.layerdrop, h, layer_output) if self.training and self.layerdrop > 0 else layer_output  # expect: DYN120
                        return h
            """,
        ),
        Example(
            # The flag bound in the loop body itself, then `if not skip or synced:` (transformers 5.17).
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                    self.layerdrop = 0.5
                    self.synced = False

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        dropout_probability = torch.rand([])
                        skip_the_layer = self.training and dropout_probability < self.layerdrop  # expect: DYN120
                        if not skip_the_layer or self.synced:  # expect: DYN120
                            h = layer(h)
                        if skip_the_layer:  # expect: DYN120
                            continue
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                        self.layerdrop = 0.5
                        self.synced = False

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            dropout_probability = torch.rand([])
                            layer_output = layer(h)
                            h = layer_output if self.synced else (torch.where(dropout_probability < self.layerdrop, h, layer_output) if self.training and self.layerdrop > 0 else layer_output)  # expect: DYN120
                        return h
            """,
        ),
        Example(
            # LayerDrop through a flag set in the draw's branch (M2M100's encoder).
            """
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                    self.layerdrop = 0.5

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        to_drop = False
                        if self.training and self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            if dropout_probability < self.layerdrop:  # expect: DYN120
                                to_drop = True
                        if not to_drop:
                            h = layer(
                                h,
                            )
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                        self.layerdrop = 0.5

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            to_drop = False
                            if self.training and self.layerdrop > 0.0:
                                dropout_probability = torch.rand([])
                                layer_output = layer(
                                    h,
                                )
                                h = torch.where(dropout_probability < self.layerdrop, h, layer_output)  # expect: DYN120
                                continue
                            if not to_drop:
                                h = layer(
                                    h,
                                )
                        return h
            """,
        ),
        Example(
            # A layer returning a tuple, its attentions collected after it (BART-family decoders, TrOCR).
            """
            import torch
            from torch import nn


            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.linear = nn.Linear(4, 4)

                def forward(self, h, output_attentions=False):
                    out = self.linear(h)
                    return (out, out.softmax(-1)) if output_attentions else (out,)


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([Layer() for _ in range(3)])
                    self.layerdrop = 0.5

                def forward(self, x, output_attentions=False):
                    h = x * 2
                    all_attentions = () if output_attentions else None
                    for layer in self.layers:
                        if self.training and self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            if dropout_probability < self.layerdrop:  # expect: DYN120
                                continue
                        layer_outputs = layer(h, output_attentions=output_attentions)
                        h = layer_outputs[0]
                        if output_attentions:
                            all_attentions += (layer_outputs[1],)
                    return h, all_attentions
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class Layer(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.linear = nn.Linear(4, 4)

                    def forward(self, h, output_attentions=False):
                        out = self.linear(h)
                        return (out, out.softmax(-1)) if output_attentions else (out,)


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([Layer() for _ in range(3)])
                        self.layerdrop = 0.5

                    def forward(self, x, output_attentions=False):
                        h = x * 2
                        all_attentions = () if output_attentions else None
                        for layer in self.layers:
                            if self.training and self.layerdrop > 0.0:
                                dropout_probability = torch.rand([])
                                layer_outputs = layer(h, output_attentions=output_attentions)
                                h = torch.where(dropout_probability < self.layerdrop, h, layer_outputs[0])  # expect: DYN120
                                if output_attentions:
                                    all_attentions += (layer_outputs[1],)
                                continue
                            layer_outputs = layer(h, output_attentions=output_attentions)
                            h = layer_outputs[0]
                            if output_attentions:
                                all_attentions += (layer_outputs[1],)
                        return h, all_attentions
            """,
        ),
        Example(
            # `if to_drop: layer_outputs = (None, None)` / `else:` running the layer (LED, MVP encoders).
            """
            import torch
            from torch import nn


            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.linear = nn.Linear(4, 4)

                def forward(self, h, output_attentions=False):
                    out = self.linear(h)
                    return (out, out.softmax(-1)) if output_attentions else (out,)


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([Layer() for _ in range(3)])
                    self.layerdrop = 0.5

                def forward(self, x, output_attentions=False):
                    h = x * 2
                    all_attentions = () if output_attentions else None
                    for layer in self.layers:
                        to_drop = False
                        if self.training and self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            if dropout_probability < self.layerdrop:  # expect: DYN120
                                to_drop = True
                        if to_drop:
                            layer_outputs = (None, None)
                        else:
                            layer_outputs = layer(h, output_attentions=output_attentions)
                            h = layer_outputs[0]
                        if output_attentions:
                            all_attentions = all_attentions + (layer_outputs[1],)
                    return h, all_attentions
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class Layer(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.linear = nn.Linear(4, 4)

                    def forward(self, h, output_attentions=False):
                        out = self.linear(h)
                        return (out, out.softmax(-1)) if output_attentions else (out,)


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([Layer() for _ in range(3)])
                        self.layerdrop = 0.5

                    def forward(self, x, output_attentions=False):
                        h = x * 2
                        all_attentions = () if output_attentions else None
                        for layer in self.layers:
                            to_drop = False
                            if self.training and self.layerdrop > 0.0:
                                dropout_probability = torch.rand([])
                                layer_outputs = layer(h, output_attentions=output_attentions)
                                h = torch.where(dropout_probability < self.layerdrop, h, layer_outputs[0])  # expect: DYN120
                                if output_attentions:
                                    all_attentions = all_attentions + (layer_outputs[1],)
                                continue
                            if to_drop:
                                layer_outputs = (None, None)
                            else:
                                layer_outputs = layer(h, output_attentions=output_attentions)
                                h = layer_outputs[0]
                            if output_attentions:
                                all_attentions = all_attentions + (layer_outputs[1],)
                        return h, all_attentions
            """,
        ),
        Example(
            # The wav2vec2 family in transformers 4.x: the draw unguarded, `skip = True if training and
            # (draw < p) else False`, the layer run unless skipped (or synced), `if skip: outputs = (None, None)`.
            """
            import torch
            from torch import nn


            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.linear = nn.Linear(4, 4)

                def forward(self, h, output_attentions=False):
                    out = self.linear(h)
                    return (out, out.softmax(-1)) if output_attentions else (out,)


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([Layer() for _ in range(3)])
                    self.layerdrop = 0.5
                    self.synced = False

                def forward(self, x, output_attentions=False):
                    h = x * 2
                    all_attentions = () if output_attentions else None
                    for layer in self.layers:
                        dropout_probability = torch.rand([])
                        skip_the_layer = True if self.training and (dropout_probability < self.layerdrop) else False  # expect: DYN120
                        if not skip_the_layer or self.synced:
                            layer_outputs = layer(h, output_attentions=output_attentions)
                            h = layer_outputs[0]
                        if skip_the_layer:
                            layer_outputs = (None, None)
                        if output_attentions:
                            all_attentions = all_attentions + (layer_outputs[1],)
                    return h, all_attentions
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn


                class Layer(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.linear = nn.Linear(4, 4)

                    def forward(self, h, output_attentions=False):
                        out = self.linear(h)
                        return (out, out.softmax(-1)) if output_attentions else (out,)


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([Layer() for _ in range(3)])
                        self.layerdrop = 0.5
                        self.synced = False

                    def forward(self, x, output_attentions=False):
                        h = x * 2
                        all_attentions = () if output_attentions else None
                        for layer in self.layers:
                            dropout_probability = torch.rand([])
                            layer_outputs = layer(h, output_attentions=output_attentions)
                            h = layer_outputs[0] if self.synced else (torch.where(dropout_probability < self.layerdrop, h, layer_outputs[0]) if self.training and self.layerdrop > 0 else layer_outputs[0])  # expect: DYN120
                            if output_attentions:
                                all_attentions = all_attentions + (layer_outputs[1],)
                        return h, all_attentions
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                if torch.rand(1) > 0.5:  # expect: DYN120
                    return x * 2
                return x - 1
            """,
            dynamo=BREAKS,
            fixed="""
                import torch

                @torch.compile
                def f(x):
                    # expect: DYN120
                    return torch.where(torch.rand(1) > 0.5, x * 2, x - 1)
            """,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x.relu()
                return y + 1 if y.sum() > 0 else y - 1  # expect: DYN120
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                while y.abs().max() > 1:  # expect: DYN120
                    y = y / 2
                return y
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                positive = all(y[0] > 0)  # expect: DYN120
                return y + positive
            """,
            dynamo=BREAKS,
        ),
        Example(
            # torchdyn's and torchsde's input checks: all() over a generator of tensor tests.
            """
            import torch
            from torch import Tensor

            @torch.compile
            def f(x: Tensor, ts: Tensor):
                assert all(torch.isclose(t, ts).sum() == 1 for t in ts), "each time once"  # expect: DYN120
                increasing = all(a < b for a, b in zip(ts[:-1], ts[1:]))  # expect: DYN120
                return x * 2 if increasing else x
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3), torch.linspace(0, 1, 5))",
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("initted", torch.tensor(False))

                def forward(self, x):
                    if not self.initted:  # expect: DYN120
                        x = x * 2
                    return x + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x, mask=None):
                if mask is not None and mask.any():  # expect: DYN120
                    x = x.masked_fill(mask, 0.0)
                return x * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(4, 4), torch.randn(4, 4) > 0)",
        ),
    )
    invalid = invalid + (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.a = nn.Linear(4, 4)

                def forward(self, x):
                    if x.sum() > 0:  # expect: DYN120
                        y = self.a(x)
                        y = y * 2
                    else:
                        y = x - 1
                    return y
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                if (y == 0).any():  # expect: DYN120
                    raise ValueError("y has zeros")
                return y + 1
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
                    self.h = nn.Linear(4, 4)

                def forward(self, x):
                    if torch.rand(1) > 0.5:  # expect: DYN120
                        return self.h(x) + 1
                    else:
                        return self.h(x) - 1
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
                if np.array(y.shape).max() > 1:  # expect: DYN120
                    y = y + 1
                return y
            """,
            dynamo=BREAKS,
        ),
    )
    invalid = invalid + (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.router = nn.Linear(8, 3)
                    self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

                def forward(self, x):
                    # top-1 mixture of experts, as research code writes it
                    probs = self.router(x).softmax(-1)
                    expert_id = probs.argmax(-1)
                    out = torch.zeros_like(x)
                    for i, expert in enumerate(self.experts):
                        mask = expert_id == i
                        if mask.any():  # expect: DYN120
                            out[mask] = expert(x[mask]) * probs[mask, i].unsqueeze(-1)  # expect: DYN130, DYN130
                    return out
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 5, 8),)",
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.router = nn.Linear(8, 3)
                        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

                    def forward(self, x):
                        # top-1 mixture of experts, as research code writes it
                        probs = self.router(x).softmax(-1)
                        expert_id = probs.argmax(-1)
                        out = torch.zeros_like(x)
                        for i, expert in enumerate(self.experts):
                            mask = expert_id == i
                            # expect: DYN120
                            out.copy_(torch.where(mask.reshape(mask.shape + (1,) * (out.dim() - mask.dim())), expert(x) * probs.select(mask.dim(), i).unsqueeze(-1), out))  # expect: DYN130, DYN130
                        return out
            """,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, mask=None):
                    # A `None` default used as a tensor in the body (`~mask`) is a tensor when given.
                    if mask is not None:
                        x = x.masked_fill(~mask, 0.0)
                        if mask.any():  # expect: DYN120
                            x = x + 1
                    return x
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(4, 4), torch.rand(4, 4) > 0.5)",
        ),
        Example(
            """
            import torch
            from torch import nn

            def default(val, d):
                return val if val is not None else d

            class M(nn.Module):
                def forward(self, x, mask=None):
                    # `default` gives back what it is passed: here a tensor.
                    scale = default(mask, x.abs().mean())
                    if scale > 1:  # expect: DYN120
                        x = x / scale
                    return x
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self, momentum=0.9):
                    super().__init__()
                    self.momentum = momentum
                    self.register_buffer("lo", torch.zeros(1))

                def forward(self, x):
                    lo = x.min()
                    if self.lo.abs().max() < 1e-5:  # expect: DYN120
                        self.lo = self.lo + lo
                    else:
                        self.lo = self.lo * self.momentum + lo * (1 - self.momentum)
                    return x - self.lo
            """,
            dynamo=BREAKS,
            fixed="""
                import torch
                from torch import nn

                class M(nn.Module):
                    def __init__(self, momentum=0.9):
                        super().__init__()
                        self.momentum = momentum
                        self.register_buffer("lo", torch.zeros(1))

                    def forward(self, x):
                        lo = x.min()
                        taken = self.lo.abs().max() < 1e-5  # expect: DYN120
                        lo_if_taken = self.lo + lo
                        self.lo = self.lo * self.momentum + lo * (1 - self.momentum)
                        self.lo = torch.where(taken, lo_if_taken, self.lo)
                        return x - self.lo
            """,
        ),
    )
    valid = (
        Example(
            # transformer-lens' rotary settings: an item of what `isinstance(..., dict)` found a
            # non-tensor value (or a presumed one) to be is a setting as often as a tensor.
            """
            import torch
            from torch import nn

            def rotary_pct(config):
                rope = getattr(config, "rope_parameters", None)
                if isinstance(rope, dict):
                    return rope["partial_rotary_factor"]
                return 1.0

            def bounds(value):
                if isinstance(value, dict):
                    n_internal = value["n"] - 6
                    if n_internal <= 0:
                        return torch.ones(3)
                return torch.zeros(3)

            class Config:
                rope_parameters = {"partial_rotary_factor": 1.0}

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.config = Config()

                def forward(self, q, value):
                    if rotary_pct(self.config) == 1.0:
                        q = torch.cat([q, q], dim=-1)
                    return q * bounds(value).sum()
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 8), {'n': 10})",
        ),
        Example(
            # pypose's `from_matrix(mat, ltype)`: a parameter compared with a module-level
            # sentinel object is such an object, not a tensor.
            """
            import torch
            from torch import nn

            class LieType:
                def __init__(self, n):
                    self.n = n

            SO3_type, SE3_type = LieType(3), LieType(6)

            class M(nn.Module):
                def forward(self, mat, ltype):
                    if ltype == SO3_type:
                        return mat[..., :3, :3].sum(-1)
                    return mat.sum(-1)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4, 3, 3), 'other')",
        ),
        Example(
            # taming-transformers' discriminator warm-up: `global_step` is the trainer's step
            # counter, a Python int (a recompile per flip at most, no break).
            """
            import torch
            from torch import nn

            def adopt_weight(weight, global_step, threshold=0, value=0.0):
                if global_step < threshold:
                    weight = value
                return weight

            class M(nn.Module):
                def forward(self, x, global_step):
                    return x.mean() * adopt_weight(1.0, global_step, threshold=5)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4), 10)",
        ),
        Example(
            # mace's torch-sim wrapper: the keys of a submodule's dict of outputs are strings.
            """
            import torch
            from torch import nn

            class Inner(nn.Module):
                def forward(self, x):
                    return {"energy": x.sum(), "forces": x * 2}

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.model = Inner()
                    self.per_system_keys = ["energy"]

                def forward(self, x):
                    out = {}
                    for key, val in self.model(x).items():
                        if key in self.per_system_keys:
                            out[key] = val.detach()
                    return out
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(3),)",
        ),
        Example(
            # ultralytics' time_sync: `torch.get_device_module()` gives a module (torch.cuda).
            """
            import torch

            def backend(device):
                return torch.get_device_module(device.type)

            @torch.compile
            def f(x):
                accelerator = backend(torch.device("cuda"))
                if accelerator.is_available() and hasattr(accelerator, "synchronize"):
                    x = x + 1
                return x * 2
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(3),)",
        ),
        Example(
            # Items of an unannotated parameter tested against strings: names, not tensors.
            """
            import torch

            @torch.compile
            def f(x, keys):
                assert all(k in ("a", "b") for k in keys), "unknown key"
                scale = 2.0 if any(k == "a" for k in keys) else 1.0
                return x * scale
            """,
            dynamo=CLEAN,
            inputs='(torch.randn(3), ["a", "b"])',
        ),
        Example(
            # spandrel's FDAT: `forward(self, x, H, W)` gets sizes, which `view` takes; the
            # padding computed from them is a Python number.
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.ws = 4

                def forward(self, x, H, W):
                    B, L, C = x.shape
                    pad_r, pad_b = (self.ws - W % self.ws) % self.ws, (self.ws - H % self.ws) % self.ws
                    if pad_r > 0 or pad_b > 0:
                        x = F.pad(x.view(B, H, W, C), (0, 0, 0, pad_r, 0, pad_b)).view(B, -1, C)
                    return x * 2
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 12, 4), 3, 4)",
        ),
        Example(
            # spandrel's DAT / RGT / LaMa: a size, a mode string and the tensor's type name,
            # compared with settings and strings: Python values, no tensor test.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.patches_resolution = 8
                    self.proj = nn.Linear(4, 4)

                def forward(self, x, H, interaction_type):
                    if self.patches_resolution != H:
                        x = x * 2
                    if interaction_type == "spatial_modulates_channel":
                        x = x + 1
                    if x.type() == "torch.cuda.HalfTensor":
                        x = x.float()
                    return self.proj(x)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4, 4), 6, 'spatial_modulates_channel')",
        ),
        Example(
            # `ctx` of a custom autograd function is no tensor, and a flag left at its default
            # by every `.apply` call is a constant to Dynamo.
            """
            import torch
            from torch import nn

            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, factor, clamp=False):
                    ctx.factor = factor
                    if clamp:
                        x = x.clamp(-1, 1)
                    return x * factor

                @staticmethod
                def backward(ctx, grad):
                    if ctx.needs_input_grad[0]:
                        grad = grad * ctx.factor
                    return grad, None, None

            scale = Scale.apply

            class M(nn.Module):
                def forward(self, x):
                    return scale(x, 2.0) + 1
            """,
            dynamo=CLEAN,
        ),
        Example(
            # demucs' center_trim: `isinstance` settles which branch has the tensor.
            """
            import typing

            import torch

            def trim(t, ref: typing.Union[torch.Tensor, int]):
                if isinstance(ref, torch.Tensor):
                    n = ref.size(-1)
                else:
                    n = ref
                if t.size(-1) - n < 0:
                    t = t * 0
                return t

            @torch.compile
            def f(x):
                return trim(x, 3) * 2
            """,
            dynamo=CLEAN,
        ),
        Example(
            # The right operand of `and` / `or` is the value, not tested, unless the whole is.
            """
            import torch

            @torch.compile
            def f(x):
                h = torch.relu(x)
                wide = x.shape[1] > 2
                y = wide and h
                return y * 2
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn

            def _is_tracing():
                return torch._C._get_tracing_state()

            class M(nn.Module):
                def forward(self, x):
                    # The C API's flags and state are not tensors (torchvision's own helper).
                    if _is_tracing():
                        x = x + 1
                    return x * 2
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, num_hashes=None, max_length=None):
                    # Names of counts and sizes: not presumed tensors.
                    num_hashes = num_hashes if num_hashes is not None else 2
                    if num_hashes > 1:
                        x = x * num_hashes
                    return x
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                # float32 inputs never evaluate the tensor tests: Dynamo knows the dtype.
                if x.dtype == torch.float16 and not torch.isfinite(x).all():
                    x = x.clamp(-100.0, 100.0)
                if x.dtype == torch.float16 and torch.isinf(x).any():
                    x = x * 0
                return x * 2
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x, mask=None):
                    if mask is None:
                        mask = torch.ones_like(x)
                    if self.training:
                        x = x * 0.9
                    if x.dim() == 3:
                        x = x.flatten(0, 1)
                    y = self.proj(x) * mask
                    return torch.where(y.sum() > 0, y * 2, y - 1)
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x, use_bias: bool = True):
                if use_bias and isinstance(x, torch.Tensor):
                    x = x + 1
                return x
            """,
            dynamo=CLEAN,
        ),
        # What unannotated research code passes around: only evidence makes a value a tensor.
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, q, mask=None, causal=None, mem=None):
                    # `None` defaults used as flags: not tensors (no tensor use in the body).
                    b, n, _ = q.shape
                    if n == 1 and causal:  # noqa: DYN201 (a recompile, not a break)
                        q = q * 2
                    if not mem == None:  # `== None` is a Python bool, like `is None`
                        q = q + mem
                    return q.softmax(-1)
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(2, 1, 4),)",
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
                    self.register_buffer("bias", torch.ones(8, 8))

                def forward(self, x, window=2):
                    # Sizes from `.shape` / `.size()`, and arithmetic on them, are Python ints.
                    seqlen, query_len = x.shape
                    h, w = x.size()[-2:]
                    blocks = int(np.ceil(h / window)) + math.ceil(w / window)
                    if seqlen > query_len or self.bias.shape[-1] >= w:  # noqa: DYN201
                        x = x * blocks
                    return x
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn

            def exists(v):
                return v is not None

            def default(val, d):
                return val if exists(val) else d

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.beam_size = 1

                def forward(self, x, mask=None, beam_size=None):
                    # `default` returns its argument: a tensor for `mask`, a number for `beam_size`.
                    mask = default(mask, torch.ones_like(x))
                    beam_size = default(beam_size, self.beam_size)
                    if beam_size > 1:
                        x = x.repeat(beam_size, 1)
                    return x * mask
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, depth):
                    # `depth` is only ever an int (a range, a comparison with 0).
                    if depth == 0:
                        return x
                    for _ in range(depth):
                        x = x * 2
                    return x
            """,
            dynamo=CLEAN,
            inputs="(torch.randn(4, 4), 2)",
        ),
    )


RULE = TensorControlFlow

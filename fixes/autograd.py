"""DYN141: one tensor passed twice to a custom `autograd.Function`. Unsafe fix: pass a copy the
second time.

    YosoCumulation.apply(mask, mask, q, k, v, cfg)   ->   YosoCumulation.apply(mask, mask.clone(), q, k, v, cfg)

The copy has the same values, and gradients reach the tensor through both arguments as before
(`clone`'s backward passes them on). What changes: one more copy per call, and a Function that
compares its inputs by identity or modifies one in place (`ctx.mark_dirty`) sees two tensors.
Not offered when the file calls `mark_dirty` anywhere.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import SAFE, UNSAFE, Edit
from dynalint.lint import fastcst
from dynalint.lint.rule import RuleContext

from .base import guarded, insert_at, make_fix, replace_node


def duplicate_input_fix(ctx: RuleContext, duplicate: cst.Arg, code: str = "DYN141"):
    if "mark_dirty" in fastcst.source_of(ctx.module):
        return None
    value = duplicate.value
    atomic = isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)) and not value.lpar

    def generate(positions, module):
        rng = positions[value]
        edits = [insert_at(rng.end.line, rng.end.column, ".clone()")]
        if not atomic:
            edits = [insert_at(rng.start.line, rng.start.column, "("), insert_at(rng.end.line, rng.end.column, ").clone()")]
        return make_fix(UNSAFE, "Pass a copy the second time (`.clone()`: one more copy per call)", edits)

    return guarded(code, generate)


def saved_tensors_fix(ctx: RuleContext, attribute: cst.Attribute, code: str = "DYN144"):
    """`ctx.saved_variables` -> `ctx.saved_tensors`: the deprecated name of the same tuple (safe)."""
    return guarded(code, lambda positions, module: make_fix(
        SAFE, "Read `saved_tensors` (the same tensors; `saved_variables` is its deprecated name)",
        [replace_node(positions, attribute.attr, "saved_tensors")],
    ))


def function_staticmethod_fix(ctx: RuleContext, methods: list, code: str = "DYN145"):
    """`@classmethod def forward(cls, ctx, ...)` -> `@staticmethod def forward(ctx, ...)` on a
    custom autograd.Function, for each method that never reads `cls` (safe: `Function.apply`
    calls `forward(ctx, *args)` either way). None when every such method reads it."""
    from dynalint.lint.rules.dyn145_autograd_function_classmethod import reads_first_parameter

    fixable = [m for m in methods if reads_first_parameter(m) is False]
    if not fixable:
        return None

    def generate(positions, module):
        edits = []
        for fn in fixable:
            decorator = next(d for d in fn.decorators if type(d.decorator) is cst.Name and d.decorator.value == "classmethod")
            edits.append(replace_node(positions, decorator.decorator, "staticmethod"))
            params = fn.params.params
            start = positions[params[0]].start
            # up to the next parameter: `cls` goes with its comma (alone, with itself)
            end = positions[params[1]].start if len(params) > 1 else positions[params[0]].end
            edits.append(Edit("", start.line, start.column + 1, end.line, end.column + 1))
        names = " and ".join(f"`{m.name.value}`" for m in fixable)
        return make_fix(SAFE, f"Declare {names} `@staticmethod` without `cls` (Dynamo binds `cls` wrongly and breaks)", edits)

    return guarded(code, generate)


def variable_detach_fix(ctx: RuleContext, call: cst.Call, code: str = "DYN105"):
    """`Variable(t)` -> `t.detach()` (safe): the legacy constructor returns `t` detached, a new
    tensor sharing its storage with `requires_grad=False` (measured: no `grad_fn`, not `t`
    itself), which is what `detach()` gives. Only the one-argument form."""
    value = call.args[0].value
    atomic = isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)) and not value.lpar

    def generate(positions, module):
        outer, inner = positions[call], positions[value]
        head = Edit("" if atomic else "(", outer.start.line, outer.start.column + 1, inner.start.line, inner.start.column + 1)
        tail = Edit(".detach()" if atomic else ").detach()", inner.end.line, inner.end.column + 1, outer.end.line, outer.end.column + 1)
        return make_fix(SAFE, "Detach the tensor (`Variable(t)` is `t.detach()`)", [head, tail])

    return guarded(code, generate)

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

from dynalint.findings import SAFE, UNSAFE
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

"""DYN107: a `None` default filled in only when not compiling. Unsafe fix: drop the
`not is_compiling()` operand of the test, so the default is built under torch.compile too.

    if attention_mask is None and not is_torchdynamo_compiling():   ->   if attention_mask is None:
        attention_mask = torch.ones(...)                                     attention_mask = torch.ones(...)

Eager code is unchanged (there the operand is True). Compiled code now computes what eager code
computes; whatever the library wanted to avoid by skipping it under compile (building a mask the
fast attention path does not need) now happens in the graph: unsafe, run `dynalint verify`.
Offered only for an `if` whose test is `a and not <is-compiling call>` (either order, no other
operands) with no `else`, and which the rule found to fill the parameter.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, make_fix, replace_node, source_info


def compile_default_fix(ctx: RuleContext, stmt: cst.If, code: str = "DYN107"):
    test = stmt.test
    if stmt.orelse is not None or not isinstance(test, cst.BooleanOperation) or not isinstance(test.operator, cst.And):
        return None
    if test.lpar:
        return None
    sides = (test.left, test.right)
    # The operand that is False while Dynamo traces (`not is_compiling()`), the other undecided.
    truths = [ctx.static_truth(side) for side in sides]
    if set(truths) != {False, None}:
        return None
    kept = sides[truths.index(None)]
    if isinstance(kept, cst.BooleanOperation) and not kept.lpar and not isinstance(kept.operator, cst.And):
        return None  # `a or b and not c`: precedence; leave it
    info = source_info(ctx.module, ctx.fn)

    def generate(positions, module):
        return make_fix(
            UNSAFE,
            "Build the default under torch.compile too (drop the `not is_compiling()` test)",
            [replace_node(positions, test, info.text(positions, kept))],
        )

    return guarded(code, generate)

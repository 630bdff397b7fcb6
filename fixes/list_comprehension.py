"""DYN113: `min(<generator of tuples>)` -> `min([<the same items>])`. Safe fix:

    min((cost(p), p) for p in orders)   ->   min([(cost(p), p) for p in orders])

The list holds the same items in the same order, so `min` / `max` return the same one (the first
of equal ones either way); Dynamo traces the builtin over a list.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import SAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, insert_at, make_fix, replace_node


def list_of_generator_fix(ctx: RuleContext, gen: cst.GeneratorExp, code: str = "DYN113"):
    def generate(positions, module):
        if gen.lpar:  # `min(((x, i) for ...))`: its own parentheses become the brackets
            edits = [replace_node(positions, gen.lpar[0], "["), replace_node(positions, gen.rpar[-1], "]")]
        else:  # the call's parentheses are the generator's: brackets inside them, the text kept
            rng = positions[gen]
            edits = [insert_at(rng.start.line, rng.start.column, "["), insert_at(rng.end.line, rng.end.column, "]")]
        return make_fix(SAFE, "Pass a list comprehension (Dynamo traces the builtin over a list)", edits)

    return guarded(code, generate)

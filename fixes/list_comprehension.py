"""DYN113 / DYN118: an iterator passed where Dynamo wants a list. Safe fixes:

    min((cost(p), p) for p in orders)   ->   min([(cost(p), p) for p in orders])
    math.prod(x.shape[i] for i in dims) ->   math.prod([x.shape[i] for i in dims])
    math.fsum(map(float, sizes))        ->   math.fsum(list(map(float, sizes)))

The list holds the same items in the same order, so `min` / `max` / `math.prod` / `math.fsum`
return the same value (the first of equal ones either way); Dynamo traces them over a list.
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


def list_of_iterator_call_fix(ctx: RuleContext, call: cst.Call, code: str = "DYN118"):
    """`math.fsum(map(f, xs))` -> `math.fsum(list(map(f, xs)))`: the iterator's items, in a list."""

    def generate(positions, module):
        rng = positions[call]
        edits = [insert_at(rng.start.line, rng.start.column, "list("), insert_at(rng.end.line, rng.end.column, ")")]
        return make_fix(SAFE, "Pass a list (Dynamo traces the function over a list)", edits)

    return guarded(code, generate)

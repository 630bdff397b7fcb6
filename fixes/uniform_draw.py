"""DYN120: a uniform draw compared with a probability is decided without it when the probability
is 0. Safe fix.

    dropout_probability = torch.rand([])                 dropout_probability = torch.rand([])
    if dropout_probability < self.layerdrop:       ->    if self.layerdrop > 0 and dropout_probability < self.layerdrop:
        continue                                             continue

LayerDrop in BART-style encoders and decoders draws a number on every layer in train mode and
skips the layer when it falls under `layerdrop`. Branching on the draw is a break, and one inside
the loop over layers makes Dynamo give up on the whole forward (no graph at all, probed on torch
2.11, 2.13 and 2.14.1). With the default `layerdrop = 0.0` the branch is never taken: a draw of
`torch.rand` lies in [0, 1), so `draw < p` is False whenever `p <= 0`. Testing `p > 0` first lets
Dynamo decide the branch from the Python number, and the encoder compiles to one graph.

Safe: the condition has the same value for every `p` (`p > 0` false implies `draw < p` false), the
draw is still made (it is bound before the test, so the random stream is the same), and a
probability that is not a number fails as before. Offered only where the drawn side is a local
name that every assignment in the function binds to `torch.rand(...)` / `torch.rand_like(...)`,
the comparison is a single strict `<` (or its mirror `>`), and the probability is a plain name,
attribute or number that the linter does not know to be a tensor (evaluating it twice is
harmless). `<=` is left alone: a draw can be exactly 0.

DYN105 offers the same fix where the draw is Python's, `random.random()` or `random.uniform(0, 1)`
(also in [0, 1): `uniform(0, 1)` is `0 + 1 * random()`), and the branch on it is what breaks.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import SAFE
from dynalint.lint.draws import comparison_with_draw, guarded_probability
from dynalint.lint.rule import RuleContext

from .base import guarded, make_fix, replace_node, source_info


def uniform_draw_fix(ctx: RuleContext, test: cst.BaseExpression, code: str = "DYN120", python: bool = False):
    """test: the tensor condition being reported (with `python`, DYN105's branch on a draw of
    Python's `random.random()` / `random.uniform(0, 1)`, also in [0, 1))."""
    found = comparison_with_draw(ctx, test, python)
    if found is None:
        return None
    draw, probability = found
    info = source_info(ctx.module, ctx.fn)
    parent = info.parent(test)
    if guarded_probability(ctx, test, probability, parent):
        return None  # tested already (fixed, or transformers' enclosing `layerdrop > 0.0`)
    # `not (p > 0 and d < p)`; a test of `if` / `while` / `x if t else y`, an operand of `and` /
    # `or` (which `and` binds as tightly) and a parenthesized comparison need none.
    bare = isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.BooleanOperation)) or bool(test.lpar)

    def generate(positions, module):
        p = info.text(positions, probability)
        d = info.text(positions, test)
        text = f"{p} > 0 and {d}" if bare else f"({p} > 0 and {d})"
        return make_fix(
            SAFE,
            f"Test `{p} > 0` first: `{draw.value}` is drawn from [0, 1), so a probability of 0 decides "
            f"the branch without reading the {'draw' if python else 'tensor'}",
            [replace_node(positions, test, text)],
        )

    return guarded(code, generate)

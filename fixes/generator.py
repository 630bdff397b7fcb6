"""DYN105: `torch.randn(..., generator=g)` -> `generator=None if torch.compiler.is_compiling() else g`.
Unsafe fix.

Dynamo cannot put a `torch.Generator` into the graph ("Failed to convert args/kwargs to proxy"):
the graph breaks at every such draw (torchtune's LayerDropout makes Dynamo skip the whole decoder
frame). While compiling, the draw uses the global generator instead and traces; eager runs are
unchanged. Unsafe: compiled, the numbers come from the global generator (seeded by
`torch.manual_seed`), not from `g`, so a run seeded through `g` draws other numbers.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, make_fix, replace_node, source_info
from .guard import is_compiling_call


def generator_fix(ctx: RuleContext, keyword: cst.Arg, code: str = "DYN105"):
    info = source_info(ctx.module, ctx.fn)
    stmt = ctx.statement

    def generate(positions, module):
        found = is_compiling_call(info, positions, stmt, "")
        if found is None or found[1]:  # an old-torch path, or torch not imported at module level
            return None
        test, _, import_edits, _ = found
        value = info.text(positions, keyword.value)
        if not isinstance(keyword.value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            value = f"({value})"
        edit = replace_node(positions, keyword.value, f"None if {test} else {value}")
        return make_fix(UNSAFE, "Draw from the global generator while compiling (eager runs keep `generator=`)",
                        [*import_edits, edit])

    return guarded(code, generate)

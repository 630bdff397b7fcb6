"""DYN131: a 0-d tensor used as an index. Safe fix:

    x[i] = v    ->   x[i.view(1)] = v
    y = x[i]    ->   y = x[i.view(1)].squeeze(0)

A 0-d integer tensor as an index is read back as a Python int (`aten._local_scalar_dense`, a
graph break); a 1-element tensor is advanced indexing, which Dynamo traces. It selects the same
row with a leading dimension of 1: a stored value broadcasts over it, and a read drops it again.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import SAFE
from dynalint.lint.rule import RuleContext

from .base import atom_text, guarded, insert_at, make_fix, replace_node, source_info


def one_element_index_fix(ctx: RuleContext, subscript: cst.Subscript, index: cst.BaseExpression, read: bool,
                          code: str = "DYN131"):
    def generate(positions, module):
        info = source_info(module)
        edits = [replace_node(positions, index, f"{atom_text(info, positions, index)}.view(1)")]
        if read:
            end = positions[subscript].end
            edits.append(insert_at(end.line, end.column, ".squeeze(0)"))
        return make_fix(SAFE, "Index with a 1-element tensor (Dynamo traces it; the same values)", edits)

    return guarded(code, generate)

"""DYN106: NumPy math on Python numbers -> `math` / builtins. Unsafe fix:

    np.lcm(a, b) -> math.lcm(a, b)      np.gcd(a, b) -> math.gcd(a, b)
    np.prod(seq) -> math.prod(seq)      np.sum(seq)  -> sum(seq)

adding `import math` when the file has none. Same values on Python ints and sequences of them;
the result is a Python number instead of a NumPy scalar, which is what lets Dynamo keep it a
constant.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext
from dynalint.lint.rules.dyn106_numpy_scalar_math import MATH_EQUIVALENT

from .base import guarded, make_fix, replace_node, source_info
from .imports import bound_module_name, import_module_edit


def numpy_math_fix(ctx: RuleContext, call: cst.Call, name: str, code: str = "DYN106"):
    info = source_info(ctx.module, ctx.fn)
    return guarded(code, lambda positions, module: _fix(info, positions, call, name))


def _fix(info, positions, call: cst.Call, name: str) -> Optional[object]:
    replacement = MATH_EQUIVALENT[name]
    edits = []
    if replacement.startswith("math."):
        local = bound_module_name(info.module, "math")
        if local is None:
            edits.append(import_module_edit(info, positions, "math"))
            local = "math"
        replacement = f"{local}.{replacement.split('.', 1)[1]}"
    edits.append(replace_node(positions, call.func, replacement))
    what = MATH_EQUIVALENT[name]
    return make_fix(UNSAFE, f"Use `{what}()` on Python numbers (a constant while compiling)", edits)

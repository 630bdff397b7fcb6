"""DYN110: `x.new_full(size, t)` with a tensor fill value -> `torch.full(size, t, dtype=x.dtype,
device=x.device)`. Unsafe fix.

`new_full` turns its fill value into a Python number (an implicit `.item()`: "Data dependent
operator"), while `torch.full` given a 0-d tensor fill value stays in the graph (probed on
torch 2.11, 2.13 and 2.14.1). The dtype and device are the receiver's, as `new_full`'s (unless
the call names its own); the receiver is read again for them, so it must be a plain chain of
names, attributes and constant indices (`feats[0]`). Unsafe: `torch.full` may refuse a fill value on another device than the
result, where `new_full` copied the number over.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, make_fix, replace_node, source_info
from .imports import torch_reference
from .purity import plain_chain


def new_full_fix(ctx: RuleContext, call: cst.Call, code: str = "DYN110"):
    func = call.func
    if type(func) is not cst.Attribute or not plain_chain(func.value) or any(a.star for a in call.args):
        return None
    info = source_info(ctx.module, ctx.fn)
    return guarded(code, lambda positions, module: _fix(info, positions, call))


def _fix(info, positions, call: cst.Call) -> Optional[object]:
    recv = info.text(positions, call.func.value)
    torch, edits = torch_reference(info, positions)
    args = [info.text(positions, a).rstrip().rstrip(",") for a in call.args]
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if "dtype" not in keywords:
        args.append(f"dtype={recv}.dtype")
    if "device" not in keywords:
        args.append(f"device={recv}.device")
    edits.append(replace_node(positions, call, f"{torch}.full({', '.join(args)})"))
    return make_fix(UNSAFE, "Use `torch.full()`, which keeps a tensor fill value in the graph", edits)

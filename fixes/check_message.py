"""DYN115: `torch._check(cond, "message")` -> `torch._check(cond, lambda: "message")`. Safe fix.

The message of `torch._check` and its kin is a callable: given a string, the call raises
`TypeError("message must be a callable")` whenever the check fails, in eager mode too, and torch
2.13's Dynamo cannot extract the message and breaks the graph at every call. With a lambda the
check passes exactly when it did, and a failing one raises its own error with the text meant.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import SAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, insert_at, make_fix


def check_message_fix(ctx: RuleContext, message: cst.BaseExpression, code: str = "DYN115"):
    def generate(positions, module):
        rng = positions[message]
        edits = [insert_at(rng.start.line, rng.start.column, "lambda: ")]
        return make_fix(SAFE, "Pass the message as a lambda (what `torch._check` expects)", edits)

    return guarded(code, generate)

"""DYN115: `torch._check(cond, "message")`: a message that is a string, not a callable.

## What it does
Finds `torch._check`, `torch._check_index`, `torch._check_value`, `torch._check_type`,
`torch._check_not_implemented` and `torch._check_tensor_all` in compiled code given a string
message (a literal, an f-string, `"..." % x`, `"...".format(...)`) where they expect a callable,
on a target torch before 2.14.

## Why it breaks the graph
torch 2.13's Dynamo cannot extract the message ("Can't extract message from torch._check*()")
and breaks the graph at every call; `explain` may count no break when the check is the
function's first statement, Dynamo's log names it and `fullgraph=True` fails. torch 2.14.1 traces
it (probed). In eager mode a string message is a latent bug on any version: when the check fails,
torch raises `TypeError: message must be a callable` instead of the message.

## Example
```python
torch._check(x.shape[0] > 1, "need at least two rows")
```

## Use instead
```python
torch._check(x.shape[0] > 1, lambda: "need at least two rows")
```
A constant message: a lambda that reads a local (`lambda: f"got {x.shape}"`) breaks too, on 2.13
and 2.14.1 ("Can't convert torch._check*() message closure").

## Fix (safe)
For a constant string, the autofix writes `lambda: ` before it. The check passes exactly where
it did; a failing one now raises the error with its message instead of the `TypeError`. An
f-string or a formatted message is reported without a fix.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix
from ..target import installed_torch, target_torch

TRACED_SINCE = (2, 14)  # Dynamo extracts a string message from torch 2.14 (probed on 2.14.1)
_TRACES_STRING_MESSAGES = (installed_torch() or (0, 0)) >= TRACED_SINCE

# The checks whose second argument (or `message=`) is the message.
CHECKS = frozenset({
    "torch._check", "torch._check_index", "torch._check_value", "torch._check_type",
    "torch._check_not_implemented", "torch._check_tensor_all",
})


def string_valued(node: cst.BaseExpression) -> bool:
    """A string for sure: a literal, an f-string, `"..." % x`, `"...".format(...)`."""
    if type(node) in (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString):
        return True
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
        return type(node.left) in (cst.SimpleString, cst.ConcatenatedString)
    return (type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "format"
            and type(node.func.value) in (cst.SimpleString, cst.ConcatenatedString))


def constant_string(node: cst.BaseExpression) -> bool:
    """A literal (or literals side by side), no interpolation."""
    if type(node) is cst.ConcatenatedString:
        return constant_string(node.left) and constant_string(node.right)
    return type(node) is cst.SimpleString


def message_argument(node: cst.Call):
    keyword = next((a for a in node.args if a.keyword is not None and a.keyword.value == "message"), None)
    if keyword is not None:
        return keyword.value
    positional = [a for a in node.args if a.keyword is None]
    if len(positional) >= 2 and not positional[0].star and not positional[1].star:
        return positional[1].value
    return None


class CheckMessageNotCallable(Rule):
    code = "DYN115"
    name = "check-message-not-callable"
    summary = "`torch._check(cond, \"message\")`: a string message breaks the graph before torch 2.14"
    fixable = "safe"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0288", "Can't extract message from torch._check()"),
        ("GB9840", "Can't extract message from torch._check*()"),
    )
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.call_name(node) not in CHECKS:
            return
        message = message_argument(node)
        if message is None or not string_valued(message):
            return
        target = target_torch()
        if target is not None and target >= TRACED_SINCE:
            return
        ctx.report(
            self, message,
            "`torch._check*()` takes its message as a callable: Dynamo before torch 2.14 cannot extract a string "
            "message and breaks the graph (and a failing check raises `TypeError` instead of it); "
            "pass a lambda returning a constant string (`lambda: \"...\"`; one reading locals breaks too)",
            # A constant only: a lambda reading locals breaks as well (its closure is not converted).
            fix=offer_fix("check_message", ctx, message, self.code) if constant_string(message) else None,
        )

    _source = """
            import torch

            @torch.compile
            def f(x):
                y = x.sin()
                torch._check(x.shape[0] > 1, {message}){mark}
                return y + 1
            """
    _fixed = _source.format(message='lambda: "need at least two rows"', mark="  # expect: DYN115")
    # A lambda reading a local (`lambda: f"... {x.shape}"`) breaks too, on 2.13 and 2.14.1 ("Can't
    # convert torch._check*() message closure"): only constant messages get the fix.
    if _TRACES_STRING_MESSAGES:
        invalid = ()
        valid = (
            Example(_source.format(message='f"need rows, got {x.shape}"', mark=""), dynamo=CLEAN),
            Example(_source.format(message='lambda: "need at least two rows"', mark=""), dynamo=CLEAN),
        )
    else:
        invalid = (
            Example(_source.format(message='"need at least two rows"', mark="  # expect: DYN115"),
                    dynamo=BREAKS, fixed=_fixed),
            Example(_source.format(message='f"need rows, got {x.shape}"', mark="  # expect: DYN115"), dynamo=BREAKS),
        )
        valid = (Example(_source.format(message='lambda: "need at least two rows"', mark=""), dynamo=CLEAN),)

RULE = CheckMessageNotCallable

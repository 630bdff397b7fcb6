"""DYN203: `self.m = self.m.to(dtype)` in forward, on a submodule. Unsafe fix: convert only when
a floating-point parameter or buffer of it has another dtype.

    self.classifier = self.classifier.to(self.dtype)
->
    if any(t.is_floating_point() and t.dtype != self.dtype for t in [*self.classifier.parameters(), *self.classifier.buffers()]):
        self.classifier = self.classifier.to(self.dtype)

`Module.to(dtype)` converts the floating-point parameters and buffers and returns the module
itself, so when none has another dtype it changes nothing: the test skips exactly that no-op.
Dynamo guards on the dtypes and traces no conversion. The conversion itself is not traceable on
some torch versions: on torch 2.11 each call builds `nn.Parameter`s (a graph break per call,
"Attempted to use `torch.nn.Parameter()` constructor with Dynamo"); 2.13 and 2.14.1 trace it.
Offered when the class makes the attribute a `torch.nn` module and the argument is a dtype
(`torch.float32`, or `self.x` that the class sets only to a `torch` dtype or `getattr(torch, ...)`).
Unsafe: a module whose `to()` is overridden would be skipped as well.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, make_fix, replace_node, source_info
from .shapes import every_assignment

DTYPES = frozenset(
    f"torch.{name}"
    for name in "float32 float float16 half bfloat16 float64 double complex64 complex128 cfloat cdouble".split()
)


def module_to_fix(ctx: RuleContext, assign: cst.Assign, code: str = "DYN203"):
    if len(assign.targets) != 1 or ctx.fn is None:
        return None
    attr = ctx.self_attr(assign.targets[0].target)
    value = assign.value
    if attr is None or not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return None
    if value.func.attr.value != "to" or ctx.self_attr(value.func.value) != attr:
        return None
    if len(value.args) != 1 or value.args[0].keyword is not None or value.args[0].star:
        return None
    dtype = value.args[0].value
    if not _is_dtype(ctx, dtype) or not _is_nn_module(ctx, attr):
        return None
    info = source_info(ctx.module, ctx.fn)
    line = info.parent(assign)
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return None

    def generate(positions, module):
        indent = info.indentation(positions[line].start.line)
        d = info.text(positions, dtype)
        test = (
            f"if any(t.is_floating_point() and t.dtype != {d} "
            f"for t in [*self.{attr}.parameters(), *self.{attr}.buffers()]):"
        )
        text = f"{test}{info.newline}{indent}{info.indent_unit}{info.text(positions, assign)}"
        return make_fix(UNSAFE, "Convert the submodule only when a parameter or buffer has another dtype", [replace_node(positions, assign, text)])

    return guarded(code, generate)


def _is_dtype(ctx: RuleContext, node: cst.BaseExpression) -> bool:
    if (ctx.qualname(node) or "") in DTYPES:
        return True
    attr = ctx.self_attr(node)
    if attr is None:
        return False

    def judge(value, fn):
        if (ctx.qualname(value) or "") in DTYPES:
            return True
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "getattr"
            and len(value.args) == 2
            and ctx.qualname(value.args[0].value) == "torch"
        )

    return every_assignment(ctx, attr, judge)


def _is_nn_module(ctx: RuleContext, attr: str) -> bool:
    """Every assignment of `self.<attr>` in the class builds a torch.nn module, or is the
    `self.<attr> = self.<attr>.to(...)` itself (it keeps whatever the attribute was)."""

    def judge(value, fn):
        if not isinstance(value, cst.Call):
            return False
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "to" and ctx.self_attr(value.func.value) == attr:
            return True
        q = ctx.qualname(value.func) or ""
        return q.startswith("torch.nn.") and ".functional." not in q and q.rsplit(".", 1)[-1][:1].isupper()

    return every_assignment(ctx, attr, judge)

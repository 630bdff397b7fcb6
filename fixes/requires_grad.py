"""DYN140: skip the request for gradients while Dynamo traces. Unsafe.

    if self._requires_grad and self.training:
        hidden_states.requires_grad = True
->
    if self._requires_grad and self.training:
        if not torch.compiler.is_compiling():
            hidden_states.requires_grad = True

and `torch.zeros_like(q).requires_grad_()` -> `torch.zeros_like(q).requires_grad_(not
torch.compiler.is_compiling())`, `torch.zeros(..., requires_grad=flag)` -> `requires_grad=flag and
not torch.compiler.is_compiling()`. Eager code runs exactly as before. Compiled, the tensor does not
need gradients: results computed from it need them only through their other inputs (parameters
do). The flag's usual purpose, an input that needs gradients so that reentrant checkpointing
computes the checkpointed layers' gradients, is not needed under Dynamo, which traces
`torch.utils.checkpoint.checkpoint` as one operator whatever `use_reentrant` says (checked: the
checkpointed layer's gradients equal eager's with the flag). Offered where the flagged tensor stays inside the function (a local name or a value an operator
or torch function takes; not a parameter, not returned, stored, aliased or an alias of module
state) and the function does no gradient work of its own (`grad(...)`, `.backward()`, `.grad`,
an optimizer, `nn.Parameter`), nor does a function or method of the file it is given to;
`nn.Parameter(...)` itself has no fix.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.nodes import dotted, param_list
from dynalint.lint.rule import RuleContext

from .base import class_methods, guarded, make_fix, replace_node, single_small_statement, source_info
from .guard import guard_statements, is_compiling_call

REGISTRY = "requires_grad"
WHY = (
    "unsafe: compiled, the tensor no longer needs gradients, so results need them only through their "
    "other inputs; Dynamo's checkpointing does not need such an input"
)


def requires_grad_fix(ctx: RuleContext, node: cst.CSTNode, code: str = "DYN140"):
    if ctx.fn is None or _needs_gradients(ctx.module.code_for_node(ctx.fn)):
        return None
    info = source_info(ctx.module, ctx.fn)
    stmt = ctx.statement
    params = _parameters(ctx.fn)
    if type(node) is cst.Assign:
        # `t.requires_grad = <not False>` as a statement of its own, t a local tensor
        target = node.targets[0].target if len(node.targets) == 1 else None
        if not (type(target) is cst.Attribute and type(target.value) is cst.Name) or _false(node.value):
            return None
        name = target.value.value
        if name in params or not _alone(info, stmt, node) or not _kept_local(info, ctx.fn, name, node):
            return None
        return _guard(info, stmt, code)
    if type(node) is not cst.Call:
        return None
    func = node.func
    if type(func) is cst.Attribute and func.attr.value == "requires_grad_":
        if len(node.args) > 1 or (node.args and (node.args[0].star or _false(node.args[0].value))):
            return None
        receiver = func.value
        if type(receiver) is cst.Name:
            name = receiver.value
        elif type(receiver) is cst.Call:
            name = _bound_name(ctx, info, node)
        else:
            return None
        if name in params or not _kept_local(info, ctx.fn, name, node):
            return None
        if type(receiver) is cst.Name:
            # `t.requires_grad_()` as a statement; in an expression (`a = t.requires_grad_()`)
            # it returns t itself, under another name this function does not follow
            return _guard(info, stmt, code) if _alone(info, stmt, node) else None
        if node.args and node.args[0].keyword is not None and node.args[0].keyword.value != "requires_grad":
            return None
        flag = node.args[0].value if node.args else None
        return _flag(info, stmt, node, flag, code)
    # a torch factory given `requires_grad=` (the rule checked the name)
    arg = next((a for a in node.args if a.keyword is not None and a.keyword.value == "requires_grad"), None)
    if arg is None or _false(arg.value) or not _kept_local(info, ctx.fn, _bound_name(ctx, info, node), node):
        return None
    return _flag(info, stmt, node, arg.value, code, keyword=arg)


# The function works with gradients itself (`torch.autograd.grad`, `from torch.autograd import
# grad`, `.backward()`, an optimizer, `nn.Parameter`): its flags are what that work needs.
_GRADIENT_WORK = re.compile(r"(?<![\w.])grad\s*\(|\.grad\s*\(|\.backward\s*\(|\boptim\b|\bParameter\s*\(|\.grad\b")


def _needs_gradients(fn_text: str) -> bool:
    return _GRADIENT_WORK.search(fn_text) is not None


def _parameters(fn: cst.CSTNode) -> set[str]:
    """Parameter names of the function: a flag set on one changes the caller's tensor."""
    p = fn.params
    extras = [extra for extra in (p.star_arg, p.star_kwarg) if isinstance(extra, cst.Param)]
    return {q.name.value for q in [*param_list(p), *extras]}


def _false(value: cst.BaseExpression) -> bool:
    return type(value) is cst.Name and value.value == "False"


def _alone(info, stmt, small: cst.CSTNode) -> bool:
    """The node is the whole statement of its line, in an indented block."""
    only = single_small_statement(stmt)
    if not (only is small or (type(only) is cst.Expr and only.value is small)):
        return False
    return isinstance(info.parent(stmt), cst.IndentedBlock)


def _bound_name(ctx: RuleContext, info, value: cst.CSTNode) -> Optional[str]:
    """Where the flagged value goes: `name` of `name = <value>` (also through conversions that
    may return the tensor itself, `.float()`, `.to(...)`); None when an operator, another method
    or a torch function takes it (a new tensor comes out, the flagged one stays here); "" when
    it is kept as it is (returned, stored in an attribute or a container, given to a function
    that might keep it)."""
    node, up = value, info.parent(value)
    while up is not None:
        if isinstance(up, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
            return None
        if type(up) is cst.Attribute and up.value is node:
            call = info.parent(up)
            if type(call) is cst.Call and up.attr.value in _SAME_TENSOR_METHODS:
                # `torch.zeros(..., requires_grad=True).float()` may be the tensor itself (PyG's
                # equilibrium solver differentiates against what `init_output` returns): follow it
                node, up = call, info.parent(call)
                continue
            return None  # `leaf.reshape(...)`, `leaf.sum()`
        if type(up) is cst.Arg:
            call = info.parent(up)
            q = ctx.call_name(call) if type(call) is cst.Call else None
            return None if q is not None and q.startswith("torch.") else ""
        if type(up) is cst.Assign:
            targets = up.targets
            return targets[0].target.value if len(targets) == 1 and type(targets[0].target) is cst.Name else ""
        if type(up) is cst.Expr:
            return None  # computed and dropped
        if isinstance(up, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return ""  # `return leaf`, `yield leaf`, `x += leaf`, ...
        node, up = up, info.parent(up)  # parentheses, tuple / list elements, `a if c else b`
    return ""


# Methods returning the tensor itself when there is nothing to convert.
_SAME_TENSOR_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "to", "type", "type_as", "contiguous", "cuda", "cpu",
})


def _kept_local(info, fn: cst.CSTNode, name: Optional[str], flagged: cst.CSTNode) -> bool:
    """The flagged tensor stays inside the function. None: a value used in place (see
    `_bound_name`). A name must not be returned or yielded as it is (alone or in a tuple, list or
    dict) unless it is bound again after the flag (`h = layer(h)`), nor stored or aliased
    (`self.x = t`, `d[k] = t`, `a = t`, `out.append(t)`, `global t`), nor be itself an alias of
    module state (`t = self.x`) or an element of what a loop iterates (`for p in m.parameters()`)."""
    if name is None:
        return True
    if name == "":
        return False
    uses = _NameUses(name, flagged)
    fn.visit(uses)
    if uses.kept or (uses.returned and not uses.rebound_after_flag):
        return False
    # A function of this file given the tensor that works with gradients (a gradient penalty
    # split into a helper: `return self._penalty(x)` with `grad(out, x)` inside).
    return not any(_needs_gradients(info.module.code_for_node(f)) for f in _callees(info, fn, uses.callees))


# Rebinding a name to one of these of itself keeps the flagged tensor (or a copy with its flag).
_FLAG_KEEPING_METHODS = _SAME_TENSOR_METHODS | {"pin_memory", "share_memory_", "requires_grad_"}
_KEEPING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


class _NameUses(cst.CSTVisitor):
    """How a function uses one local name, in source order around the flagging node."""

    def __init__(self, name: str, flagged: cst.CSTNode):
        self.name, self.flagged = name, flagged
        self.kept = self.returned = self.rebound_after_flag = self.after_flag = False
        self.callees: set[tuple[bool, str]] = set()  # (called on self, name) of calls given the name

    def _is_name(self, node) -> bool:
        return type(node) is cst.Name and node.value == self.name

    def _binds(self, target) -> bool:
        """A loop target is the name or unpacks into it (`for n, p in self.named_parameters()`)."""
        if self._is_name(target):
            return True
        if isinstance(target, (cst.Tuple, cst.List)):
            return any(self._binds(e.value) for e in target.elements)
        return False

    def _as_is(self, value) -> bool:
        """value is the name, or holds it as an element of a tuple, list, set or dict."""
        if self._is_name(value):
            return True
        if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
            return any(self._as_is(e.value) for e in value.elements)
        if type(value) is cst.Dict:
            return any(type(e) is cst.DictElement and self._as_is(e.value) for e in value.elements)
        return False

    def _same_tensor(self, value) -> bool:
        """`t = t.pin_memory()`, `t = t.float()`: still the flagged tensor (or a copy that keeps
        its flag), not a new value computed from it (`h = layer(h)`)."""
        return (type(value) is cst.Call and type(value.func) is cst.Attribute and self._is_name(value.func.value)
                and value.func.attr.value in _FLAG_KEEPING_METHODS)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.flagged:
            self.after_flag = True
        t = type(node)
        if t is cst.Assign:
            if self._as_is(node.value):
                self.kept = True  # stored or aliased
            for target in node.targets:
                if self._is_name(target.target):
                    if self.after_flag and not self._same_tensor(node.value):
                        self.rebound_after_flag = True
                    elif (dotted(node.value) or "").startswith("self."):
                        self.kept = True  # an alias of module state
        elif t in (cst.For, cst.CompFor) and self._binds(node.target):
            if self.after_flag:
                self.rebound_after_flag = True
            else:
                # An element of what is iterated (`for p in self.gates[d].parameters():`) outlives
                # the function: module parameters, a list's tensors.
                self.kept = True
        elif t in (cst.Return, cst.Yield) and node.value is not None and self._as_is(node.value):
            self.returned = True
        elif t is cst.Call and any(self._as_is(a.value) for a in node.args):
            func = node.func
            last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
            if type(func) is cst.Attribute and func.attr.value in _KEEPING_METHODS:
                self.kept = True
            elif last[:1].isupper() or last in ("dict", "SimpleNamespace"):
                # an object built around it (chgnet's `CrystalGraph(atom_frac_coord=...)`, which
                # the model later differentiates against)
                self.kept = True
            elif type(func) is cst.Name:
                self.callees.add((False, func.value))
            elif type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
                self.callees.add((True, func.attr.value))
        elif t in (cst.Global, cst.Nonlocal) and any(n.name.value == self.name for n in node.names):
            self.kept = True
        return True


def _callees(info, fn: cst.CSTNode, callees: set) -> list:
    """The functions of this file those calls reach: `f(...)` a module-level function, `self.m(...)`
    a method of fn's class."""
    if not callees:
        return []
    module_level = {s.name.value: s for s in info.module.body if type(s) is cst.FunctionDef}
    methods = class_methods(info, fn)
    found = [(methods if on_self else module_level).get(name) for on_self, name in callees]
    return [f for f in found if f is not None and f is not fn]


def _guard(info, stmt, code: str):
    info.registry.setdefault(REGISTRY, {}).setdefault(id(stmt), set()).add(code)
    return guarded(code, lambda positions, module: guard_statements(info, positions, stmt, REGISTRY, WHY))


def _flag(info, stmt, call: cst.Call, flag: Optional[cst.BaseExpression], code: str, keyword: Optional[cst.Arg] = None):
    def generate(positions, module):
        found = is_compiling_call(info, positions, stmt, "")
        if found is None or found[1]:  # no fix on an old-torch path, or torch not imported at module level
            return None
        test, _, import_edits, _ = found
        if flag is None or (type(flag) is cst.Name and flag.value == "True"):
            value = f"not {test}"
        else:
            text = info.text(positions, flag)
            value = f"({text}) and not {test}" if not isinstance(flag, (cst.Name, cst.Attribute, cst.Call)) else f"{text} and not {test}"
        if keyword is not None:
            edit = replace_node(positions, keyword.value, value)
        elif call.args:
            edit = replace_node(positions, call.args[0].value, value)
        else:
            rng = positions[call]
            # between the call's parentheses: `requires_grad_()` ends with `()`
            edit = Edit(value, rng.end.line, rng.end.column, rng.end.line, rng.end.column)
        message = f"Skip the flag while compiling: `requires_grad` becomes `{value}` ({WHY})"
        return make_fix(UNSAFE, message, [*import_edits, edit])

    return guarded(code, generate)

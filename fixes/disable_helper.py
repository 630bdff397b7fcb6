"""DYN105 / DYN110 / DYN120 / DYN121 / DYN130 in a host-side helper: run the helper outside the graph.

    def plan(n):                                   @torch.compiler.disable
        perm = np.random.permutation(n)      ->    def plan(n):
        ...                                            perm = np.random.permutation(n)

A helper that compiled code calls and that works on Python and NumPy values only (random
planning, index bookkeeping) breaks the graph wherever Dynamo cannot trace it. A break inside a
called function also breaks the caller at the call, and Dynamo then traces the helper as a frame
of its own, breaking again at every unsupported step (in loops, once per iteration and
recompiling). With `@torch.compiler.disable` Dynamo does not enter the helper: one break at each
call, the helper runs as plain Python. Only where the break is reached on every call: a helper
that returns early on some calls (BigBird's planning returns zeros in eval mode, which Dynamo
traces whole) would gain a break on those (measured on an H100, torch 2.11: eval 1 graph -> 15);
fixes/disable_tail.py moves what such a helper does after its early return out instead.

Unsafe: eager behaviour is the same, but what was compiled of the helper now runs eagerly. So it is
offered only where nothing of the helper is worth compiling: no parameter is known or presumed to
hold a tensor, and the body calls no torch function that makes tensors; only for a helper (never
`forward` or a compiled function itself, whose whole graph would go), defined at module or class
level in a file that imports torch at module level, and not already disabled.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.kinds import TORCH_NON_TENSOR_FUNCS
from dynalint.lint.nodes import dotted, is_none
from dynalint.lint.rule import RuleContext

from .base import guarded, insert_line_before, make_fix, source_info
from .imports import imports_torch, torch_name

# Rules whose findings in such a helper get this fix when they have none of their own.
CODES = frozenset({"DYN105", "DYN110", "DYN120", "DYN121", "DYN130"})
# Rules whose findings may also get the loop fix (fixes/disable_loop.py).
LOOP_CODES = frozenset({"DYN111", "DYN131"})
REGISTRY = "disable_helper"
BREAKING = "disable_helper.breaking"  # names of the functions of the file with break findings (CODES, LOOP_CODES)
DISABLE_DECORATORS = frozenset({"disable", "_disable_dynamo"})
# torch namespaces whose calls make no tensors.
NON_TENSOR_NAMESPACES = ("torch.compiler.", "torch._dynamo.", "torch.jit.", "torch.cuda.", "torch.backends.")


def disable_helper_fix(ctx: RuleContext, code: str, node: cst.CSTNode):
    """The fix for a finding of `code` at `node` in the function being walked, or None."""
    if code not in CODES and code not in LOOP_CODES:
        return None
    from .disable_loop import disable_loop_fix
    from .disable_tail import disable_tail_fix

    fn = ctx.fn
    info = source_info(ctx.module, fn)
    # Functions with a break of their own: a split helper or a loop that calls one gains
    # (fixes/disable_tail.py, fixes/disable_loop.py).
    info.registry.setdefault(BREAKING, set()).add(fn.name.value)
    if code not in CODES:
        return disable_loop_fix(ctx, info, code, node)
    # Per function, once: the ids of the top-level statements every call reaches, or None where
    # the function is no host-side helper.
    verdicts = info.registry.setdefault(REGISTRY, {})
    if id(fn) not in verdicts:
        verdicts[id(fn)] = _reached_statements(fn) if _host_side_helper(ctx, info, fn) else None
    reached = verdicts[id(fn)]
    if reached and _reached_on_every_call(info, fn, node, reached):
        return guarded(code, lambda positions, module: _fix(info, positions, fn))
    # Not the whole helper: perhaps what runs after its early `return` (fixes/disable_tail.py).
    # Else, where the break is in a loop, the loop alone (fixes/disable_loop.py). The split decides
    # only once positions are known, so the loop fix stands behind it.
    tail = disable_tail_fix(ctx, info, code, node)
    loop = disable_loop_fix(ctx, info, code, node)
    if tail is None or loop is None:
        return tail or loop
    return lambda positions, module: tail(positions, module) or loop(positions, module)


def _reached_statements(fn: cst.FunctionDef, body: Optional[list] = None) -> frozenset:
    """The top-level statements of the body (or of these of its statements) that every call which
    returns normally evaluates: those before the first that can `return` (an early `if not
    self.training: return`, after which a call in eval mode never reaches a break and would gain
    one). None of a generator's (its body runs later, not at the call)."""
    body = fn.body.body if body is None else body
    if any(_can_leave(stmt, returns=False) for stmt in body):
        return frozenset()
    reached = []
    for stmt in body:
        reached.append(id(stmt))
        if _can_leave(stmt):
            break
    return frozenset(reached)


def _reached_on_every_call(info, fn: cst.FunctionDef, node: cst.CSTNode, reached: frozenset) -> bool:
    """Is `node` evaluated on every call? Then every call breaks and the decorator cannot add a
    break: it is in one of the `reached` top-level statements and not in a branch, loop body,
    handler, comprehension, lambda, nested function or the right side of `and` / `or`."""
    child, parent = node, info.parent(node)
    while parent is not None and parent is not fn.body:
        if not _evaluated_whenever_parent_is(child, parent):
            return False
        child, parent = parent, info.parent(parent)
    return parent is not None and id(child) in reached


def _evaluated_whenever_parent_is(child: cst.CSTNode, parent: cst.CSTNode) -> bool:
    if isinstance(parent, cst.BooleanOperation):
        return child is parent.left
    if isinstance(parent, cst.IfExp):
        return child is parent.test
    if isinstance(parent, (cst.If, cst.While)):
        return child is parent.test
    if isinstance(parent, cst.For):
        return child is parent.iter
    if isinstance(parent, (cst.Lambda, cst.FunctionDef, cst.ClassDef, cst.Try, cst.ExceptHandler, cst.Finally,
                           cst.Else, cst.Match, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
                           cst.CompFor, cst.CompIf, cst.IndentedBlock)):
        return False
    return True


def _can_leave(stmt: cst.CSTNode, returns: bool = True) -> bool:
    """Does the statement hold a `return` (with `returns`) or `yield`, outside nested functions
    and lambdas?"""
    found = False

    class Exits(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            nonlocal found
            found = found or returns

        def visit_Yield(self, node: cst.Yield) -> None:
            nonlocal found
            found = True

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    stmt.visit(Exits())
    return found


def _host_side_helper(ctx: RuleContext, info, fn: cst.FunctionDef, statements: Optional[list] = None) -> bool:
    """Is `fn` a helper whose body (or these of its top-level `statements`, the part that would run
    outside the graph) works on Python and NumPy values only?"""
    if ctx.is_root or fn.name.value.startswith("__"):
        return False
    if not isinstance(info.parent(fn), (cst.Module, cst.IndentedBlock)):
        return False
    holder = info.parent(info.parent(fn)) if isinstance(info.parent(fn), cst.IndentedBlock) else None
    if holder is not None and not isinstance(holder, cst.ClassDef):
        return False  # a nested function: its enclosing function is what runs compiled
    if any((dotted(d.decorator) or "").split(".")[-1] in DISABLE_DECORATORS for d in fn.decorators):
        return False
    if not imports_torch(ctx.module) or torch_name(ctx.module) is None:
        return False
    roots = [fn.body] if statements is None else statements
    if any(not _read_back_only(info, roots, name) for name in ctx.tensor_params):
        return False
    return not any(_makes_tensors(ctx, info, fn, root) for root in roots)


# Tensor methods that hand a tensor's values to Python: a parameter used only through them (and
# `is None` tests) is read back to the host at once (wav2vec2's `attention_mask.sum(-1).tolist()`).
READ_BACK = frozenset({"tolist", "item", "numpy"})


def _read_back_only(info, roots: list, name: str) -> bool:
    """Is every use of parameter `name` under `roots` (the body, or some of its statements) an
    `is (not) None` test or the start of a chain of method calls ending in `.tolist()` / `.item()` /
    `.numpy()`? (Assigned to: no.)"""
    for node in (found for root in roots for found in _names(root, name)):
        parent = info.parent(node)
        if isinstance(parent, cst.Comparison) and parent.left is node and all(
            isinstance(c.operator, (cst.Is, cst.IsNot)) and is_none(c.comparator) for c in parent.comparisons
        ):
            continue
        last = None
        current: cst.CSTNode = node
        while True:
            attr = info.parent(current)
            call = info.parent(attr) if isinstance(attr, cst.Attribute) and attr.value is current else None
            if not (isinstance(call, cst.Call) and call.func is attr):
                break
            last, current = attr.attr.value, call
        if last not in READ_BACK:
            return False
    return True


def _names(root: cst.CSTNode, name: str) -> list:
    found = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)  # `x.name` is no use of the parameter `name`
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)  # nor is the keyword of `f(name=...)`
            return False

    root.visit(Names())
    return found


def _makes_tensors(ctx: RuleContext, info, fn: cst.FunctionDef, root: cst.CSTNode) -> bool:
    """Does `root` (the body or one of its statements) make or read tensors: a torch call that makes one, a tensor attribute of
    `self` (a parameter, a buffer), a call of a submodule or any `self.` callable that is not one of
    the class's own methods?"""
    holder = info.parent(info.parent(fn)) if isinstance(info.parent(fn), cst.IndentedBlock) else None
    methods = (
        {s.name.value for s in holder.body.body if isinstance(s, cst.FunctionDef)}
        if isinstance(holder, cst.ClassDef)
        else set()
    )
    found = False

    class Uses(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            attr = ctx.self_attr(node.func)
            if attr is not None:
                found = found or attr not in methods
                return
            q = ctx.call_name(node)
            if q is None or not (q == "torch" or q.startswith("torch.")):
                return
            if q.startswith(NON_TENSOR_NAMESPACES) or q.rsplit(".", 1)[-1] in TORCH_NON_TENSOR_FUNCS:
                return
            found = True

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            if ctx.self_attr(node) is not None and ctx.is_tensor(node):
                found = True

    root.visit(Uses())
    return found


def _fix(info, positions, fn: cst.FunctionDef):
    row = positions[fn.name].start.line
    line = info.line(row)
    if not line.lstrip().startswith(("def ", "async def ")):
        return None
    torch = torch_name(info.module)
    decorator = f"{info.indentation(row)}@{torch}.compiler.disable{info.newline}"
    return make_fix(
        UNSAFE,
        f"Run `{fn.name.value}` outside the graph (`@{torch}.compiler.disable`): one break per call instead of "
        "the breaks inside it",
        [insert_line_before(row, decorator)],
    )

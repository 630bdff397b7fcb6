"""A loop that breaks on every pass: run the loop outside the graph, the rest of the function inside.

    def filter(self, boxes, scores):                def filter(self, boxes, scores):
        probs = torch.sigmoid(scores)                   probs = torch.sigmoid(scores)
        kept = []                                       kept = []
        for b, p in zip(boxes, probs):        ->        self._filter_loop_outside_graph(boxes, probs, kept)
            keep = torch.where(p > 0.5)[0]              return kept
            kept.append(b[keep])
        return kept                                 @torch.compiler.disable
                                                    def _filter_loop_outside_graph(self, boxes, probs, kept):
                                                        for b, p in zip(boxes, probs):
                                                            ...

Dynamo cannot resume inside a loop: a break there (or in a function the loop calls) makes it give
up on the whole function's frame, which then runs eagerly, and it traces every function the loop
calls as a frame of its own, breaking again in each (torchvision's detectors: the per-image
filtering of proposals and detections breaks in `remove_small_boxes`, `batched_nms`, `nms` and at
the loop itself; a list comprehension of the skipped frame is traced alone and breaks on its
`enumerate` iterator). Moved into a method under `@torch.compiler.disable`, the loop is one break
at its call, and what the function does before and after it is traced with its caller.

Offered on a finding of a break (DYN105, DYN110, DYN111, DYN120, DYN121, DYN130, DYN131) that
has no fix of its own and that every pass of a loop reaches (not in a branch,
handler, comprehension, lambda or the right side of `and` / `or`), where the loop is a top-level
`for` or `while` statement of a function defined at module or class level, in a file that
imports torch at module level, and:
- the loop holds no `return`, `yield`, `await`, `global`, `nonlocal` or `del` of a name;
- the loop calls no submodule: no `self.<module>(...)`, `self.<modules>[i](...)`, call of a local
  name (`layer(x)` over `self.layers`) or of a value (`getattr(self, name)(x)`), and none in the
  methods of the class it calls (their compiled frames would run eagerly: real compute lost);
- every name the loop reads that the function binds before it is bound on every path there (a
  top-level assignment, import or definition, or a parameter); names the loop binds and the rest
  of the function mentions are returned, and must be bound before the loop too (a loop that runs
  no pass leaves them as they were).

Unsafe: eager behaviour is the same (the loop runs on the same objects; lists it appends to are the
caller's), but the functions the loop calls are no longer compiled, and a call where the loop runs
no pass gains a break. verify counts the graphs.
"""

from __future__ import annotations

import sys
from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.nodes import dotted
from dynalint.lint.variables import variable_names

from .base import class_methods, guarded, make_fix
from .disable_helper import BREAKING, DISABLE_DECORATORS, _evaluated_whenever_parent_is
from .disable_tail import KEPT_DECORATORS, _binds, _bindings, _parameters, _top_level_bindings, _wrapped, placement
from .imports import imports_torch, torch_name

CODES = frozenset({"DYN105", "DYN110", "DYN111", "DYN120", "DYN121", "DYN130", "DYN131"})
REGISTRY = "disable_loop"
SUFFIX = "_outside_graph"
# Libraries Dynamo skips instead of tracing (torch/_dynamo/trace_rules.py, THIRDPARTY_SKIPLIST):
# a call into them is a break of its own, not a frame Dynamo would compile.
SKIPPED_LIBRARIES = frozenset({
    "torch", "numpy", "fx2trt_oss", "hypothesis", "networkx", "onnx", "onnxruntime", "onnx_tf", "pandas", "sklearn",
    "tabulate", "tensorflow", "tensorrt", "torch2trt", "tqdm", "tree", "tvm", "xarray",
})


def disable_loop_fix(ctx, info, code: str, node: cst.CSTNode):
    """The loop fix for a finding of `code` at `node` in `ctx.fn`, or None."""
    if code not in CODES:
        return None
    fn = ctx.fn
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    if not any(isinstance(stmt, (cst.For, cst.While)) for stmt in body):
        return None
    loop = _loop_reached_each_pass(info, fn, node)
    if loop is None:
        return None
    plans = info.registry.setdefault(REGISTRY, {})
    key = (id(fn), id(loop))
    if key not in plans:
        plans[key] = _plan(ctx, info, fn, loop)
    plan = plans[key]
    if plan is None:
        return None
    return guarded(code, lambda positions, module: _fix(info, positions, fn, loop, plan))


def _loop_reached_each_pass(info, fn: cst.FunctionDef, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The top-level `for` / `while` statement of fn whose every pass evaluates `node` (inner
    loops and `with` blocks taken as run), or None."""
    child, parent = node, info.parent(node)
    while parent is not None and parent is not fn.body:
        if isinstance(parent, (cst.For, cst.While)):
            if child is not parent.body and not _evaluated_whenever_parent_is(child, parent):
                return None
        elif isinstance(parent, cst.IndentedBlock):
            owner = info.parent(parent)
            if not (isinstance(owner, (cst.For, cst.While, cst.With)) and parent is owner.body):
                return None
        elif isinstance(parent, cst.With):
            pass  # its items and its body run whenever the `with` does
        elif not _evaluated_whenever_parent_is(child, parent):
            return None
        child, parent = parent, info.parent(parent)
    return child if parent is fn.body and isinstance(child, (cst.For, cst.While)) else None


def _plan(ctx, info, fn: cst.FunctionDef, loop: cst.CSTNode) -> Optional[dict]:
    if fn.asynchronous is not None or not isinstance(fn.body, cst.IndentedBlock):
        return None
    if not imports_torch(ctx.module) or torch_name(ctx.module) is None:
        return None
    names = [(dotted(d.decorator) or "").split(".")[-1] for d in fn.decorators]
    if any(n in DISABLE_DECORATORS for n in names):
        return None
    # A function nested in a function or class: its enclosing scope would be out of reach.
    place = placement(info, fn, next((n for n in names if n in KEPT_DECORATORS), None))
    if place is None:
        return None
    holder, kind, receiver_param, receiver = place
    params = _parameters(fn)
    if _leaves_or_rescopes(loop) or _leaves_or_rescopes_fn(fn):
        return None
    methods = class_methods(info, fn) if holder is not None else {}
    self_name = receiver_param if kind == "method" else None
    if _calls_compute(ctx, loop, fn, methods, self_name, set()):
        return None
    body = list(fn.body.body)
    at = next(i for i, stmt in enumerate(body) if stmt is loop)
    prelude, after = body[:at], body[at + 1 :]
    bound_always = _top_level_bindings(prelude)
    if bound_always is None:
        return None
    bound_always |= set(params)
    bound_before = _bindings(prelude) | set(params)
    bound_anywhere = _bindings(body) | set(params)
    in_loop = variable_names(loop)
    bound_in_loop = _bindings([loop])
    passed = []
    for name in _in_binding_order(params, prelude, in_loop & bound_anywhere):
        if name == receiver_param:
            continue
        if name in bound_before:
            if name not in bound_always:
                return None  # bound only on some paths before the loop
            passed.append(name)
        elif name not in bound_in_loop:
            return None  # a local the function binds only after the loop: unbound in the loop
    mentioned_after = set().union(*(variable_names(stmt) for stmt in after)) if after else set()
    results = sorted(bound_in_loop & mentioned_after)
    if any(name not in bound_always for name in results):
        return None  # a loop with no pass would leave it unbound
    scope = holder.body.body if holder is not None else ctx.module.body
    base = "_" + fn.name.value.lstrip("_") + "_loop"
    ordinal = sum(1 for stmt in body[: at + 1] if isinstance(stmt, (cst.For, cst.While)))
    taken = sum(1 for stmt in scope if isinstance(stmt, cst.FunctionDef) and stmt.name.value.startswith(base)
                and stmt.name.value.endswith(SUFFIX))
    number = ordinal + taken
    new_name = base + (str(number) if number > 1 else "") + SUFFIX
    if any(_binds(stmt, new_name) for stmt in scope):
        return None
    functions, own_methods = _traced_callees(ctx, loop, methods, self_name)
    return {"functions": functions, "methods": own_methods, "kind": kind, "name": new_name, "receiver": receiver,
            "args": passed, "results": results, "signature": ([receiver_param] if receiver_param else []) + passed}


def _in_binding_order(params: list, prelude: list, names: set) -> list:
    """`names` in the order the function first binds them: parameters, then the statements before
    the loop; any other after them, sorted."""
    order = {}
    for name in params:
        order.setdefault(name, len(order))
    for stmt in prelude:
        for name in sorted(_bindings([stmt])):
            order.setdefault(name, len(order))
    return sorted(names, key=lambda n: (order.get(n, len(order)), n))


class _Leaves(cst.CSTVisitor):
    """`return`, `yield`, `await`, `global`, `nonlocal` or `del name` outside nested functions."""

    def __init__(self) -> None:
        self.found = False

    def visit_Return(self, node) -> None:
        self.found = True

    def visit_Yield(self, node) -> None:
        self.found = True

    def visit_Await(self, node) -> None:
        self.found = True

    def visit_Global(self, node) -> None:
        self.found = True

    def visit_Nonlocal(self, node) -> None:
        self.found = True

    def visit_Del(self, node: cst.Del) -> None:
        self.found = self.found or not isinstance(node.target, (cst.Attribute, cst.Subscript))

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False


def _leaves_or_rescopes(stmt: cst.CSTNode) -> bool:
    visitor = _Leaves()
    stmt.visit(visitor)
    return visitor.found


def _leaves_or_rescopes_fn(fn: cst.FunctionDef) -> bool:
    """A generator (its loop runs when iterated, not at the call) or a function with `global` /
    `nonlocal` declarations (the helper would not share them)."""
    found = []

    class Scope(cst.CSTVisitor):
        def visit_Yield(self, node) -> None:
            found.append(node)

        def visit_Global(self, node) -> None:
            found.append(node)

        def visit_Nonlocal(self, node) -> None:
            found.append(node)

        def visit_FunctionDef(self, node) -> bool:
            return node is fn

        def visit_Lambda(self, node) -> bool:
            return False

    fn.visit(Scope())
    return bool(found)


def _self_attr(expr: cst.CSTNode, self_name: Optional[str]) -> Optional[str]:
    """`attr` where expr is `<self_name>.attr` (the method's instance), else None."""
    if self_name and isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) \
            and expr.value.value == self_name:
        return expr.attr.value
    return None


def _calls_compute(ctx, root: cst.CSTNode, fn: cst.FunctionDef, methods: dict, self_name: Optional[str],
                   seen: set) -> bool:
    """Does `root` (the loop, or the body of a method it calls) call a submodule, a local name or a
    computed callable, directly or through the methods of the class it calls on `self`?"""
    submodules = (ctx.module_attrs | ctx.sequence_attrs) if self_name else frozenset()
    local = _bindings([fn.body]) | set(_parameters(fn))
    if isinstance(fn.body, cst.IndentedBlock):
        local -= {stmt.name.value for stmt in fn.body.body if isinstance(stmt, cst.FunctionDef)}
    found = []
    called = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            attr = _self_attr(func, self_name)
            if attr is not None:
                # A method of the class is looked into; any other attribute may hold a module.
                (called if attr in methods else found).append(attr)
            elif isinstance(func, cst.Attribute):
                if _self_attr(func.value, self_name) in submodules:
                    found.append(func)  # a method of a submodule
                elif isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
                        and func.value.func.value == "super":
                    found.append(func)  # `super().forward(x)`
            elif isinstance(func, cst.Name):
                if func.value in local:
                    found.append(func)  # `layer(x)` over modules, a callable passed in
            else:
                found.append(func)  # `self.layers[i](x)`, `getattr(self, name)(x)`

    root.visit(Calls())
    if found:
        return True
    for name in called:
        if name not in seen:
            seen.add(name)
            method = methods[name]
            params = _parameters(method)
            if _calls_compute(ctx, method.body, method, methods, params[0] if params else None, seen):
                return True
    return False


def _traced_callees(ctx, loop: cst.CSTNode, methods: dict, self_name: Optional[str]) -> tuple:
    """(functions, methods): the Python functions the loop calls that Dynamo would trace as frames
    of their own once it gives up on the caller's frame (functions of this file, functions imported
    from outside torch, the standard library and the libraries Dynamo skips), and the class's own
    methods it calls."""
    own = {stmt.name.value for stmt in ctx.module.body if isinstance(stmt, cst.FunctionDef)}
    functions, called = set(), set()

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            attr = _self_attr(func, self_name)
            if attr is not None:
                if attr in methods:
                    called.add(attr)
                return
            if isinstance(func, cst.Name) and func.value in own:
                functions.add(func.value)
                return
            if not isinstance(func, (cst.Name, cst.Attribute)):
                return
            q = ctx.qualname(func)
            if q is None or "." not in q:
                return  # a builtin, or a method of a local value
            root = q.split(".", 1)[0]
            if root in SKIPPED_LIBRARIES or root in sys.stdlib_module_names:
                return
            functions.add(q)

    loop.visit(Calls())
    return frozenset(functions), frozenset(called)


def _fix(info, positions, fn: cst.FunctionDef, loop: cst.CSTNode, plan: dict):
    # Worth it where the loop calls a function Dynamo would trace as a frame of its own (each such
    # frame compiles graphs of its own, and breaks again where the callee breaks); a loop whose
    # breaks are all its own costs one skipped frame as it is, and the move would add a graph for
    # the code before the loop (measured: 1 graph -> 2).
    breaking = info.registry.get(BREAKING, set())
    if not plan["functions"] and not plan["methods"] & breaking:
        return None
    start, end = positions[loop].start.line, positions[loop].end.line
    body_indent = info.indentation(start)
    def_row = positions[fn.name].start.line
    if not info.line(def_row).lstrip().startswith("def "):
        return None
    outer = info.indentation(def_row)
    if body_indent != outer + info.indent_unit or not info.line(start).lstrip().startswith(("for ", "while ")):
        return None
    fn_end = positions[fn].end.line
    nl = info.newline
    torch = torch_name(info.module)
    receiver = plan["receiver"]
    callee = f"{receiver}.{plan['name']}" if receiver else plan["name"]
    results = plan["results"]
    lead = body_indent + (", ".join(results) + " = " if results else "")
    call = _wrapped(f"{lead}{callee}(", plan["args"], ")", body_indent + info.indent_unit, nl)
    moved = "".join(info.lines[start - 1 : end])
    if not moved.endswith(("\n", "\r")):
        moved += nl
    if results:
        moved += f"{body_indent}return {', '.join(results)}{nl}"
    decorators = [f"{outer}@{torch}.compiler.disable{nl}"]
    if plan["kind"] in KEPT_DECORATORS:
        decorators.insert(0, f"{outer}@{plan['kind']}{nl}")
    header = _wrapped(f"{outer}def {plan['name']}(", plan["signature"], "):", outer + info.indent_unit, nl)
    blank = nl * (1 if outer else 2)
    helper = blank + "".join(decorators) + header + moved
    edits = [Edit(call, start, 1, end + 1, 1) if end < len(info.lines) else
             Edit(call, start, 1, end, len(info.lines[end - 1]) + 1)]
    if fn_end < len(info.lines):
        edits.append(Edit(helper, fn_end + 1, 1, fn_end + 1, 1))
    else:
        if end == fn_end:
            return None  # the loop ends the file: no line after the function to insert at
        last = info.lines[fn_end - 1]
        ending = "" if last.endswith(("\n", "\r")) else nl
        edits.append(Edit(ending + helper, fn_end, len(last) + 1, fn_end, len(last) + 1))
    kind = "loop" if isinstance(loop, cst.For) else "`while` loop"
    return make_fix(
        UNSAFE,
        f"Run the {kind} of `{fn.name.value}` outside the graph: moved into `{plan['name']}` "
        f"(`@{torch}.compiler.disable`), one break at its call instead of the breaks in it, and the rest of "
        f"`{fn.name.value}` compiled with its caller",
        edits,
    )

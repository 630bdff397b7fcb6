"""A host-side helper's breaks after an early `return`: move what follows into a function that runs
outside the graph.

    def plan(self, n, k):                          def plan(self, n, k):
        out = np.zeros((n, k))                         out = np.zeros((n, k))
        if not self.training:                          if not self.training:
            return out                        ->           return out
        for i in range(out.shape[0]):                  return self._plan_outside_graph(n, k, out)
            out[i] = np.random.permutation(n)[:k]
        return out                                 @torch.compiler.disable
                                                   def _plan_outside_graph(self, n, k, out):
                                                       for i in range(out.shape[0]):
                                                           ...

`@torch.compiler.disable` on the whole helper (fixes/disable_helper.py) would give the calls that
return early a break they never had (BigBird's random-attention planning returns zeros in eval
mode: measured on an H100, eval 1 graph -> 15). Splitting at the last early `return` keeps that
path traced, and the calls that go on run the rest as plain Python: one break per such call
instead of the breaks inside (BigBird train mode, torch 2.13: 28 breaks -> 11, 8 break sites -> 2).

Offered when: the helper is one `disable_helper` could take, except that its body returns early;
the last top-level statement that can return is `if <not a tensor>: ... return ...` with no
`else` (a Python-level guard: `not self.training`, a flag, `x is None`); everything after it (the
rest) works on Python and NumPy values only (no tensor parameter read there except read back at
once, no torch call that makes tensors, no submodule, no tensor attribute of `self`); a finding of
a break lies in the rest (in a loop or a branch too: the rest is planning code whose breaks are on
its ordinary path, and verify counts the graphs); the rest's free names are parameters, names
every call binds at the top level before the guard, or globals; the helper is a plain function,
method, static or class method, not a generator. The new function's name must be free.

Unsafe, as for the whole-helper fix: eager behaviour is the same (the rest runs as it did, on the
same objects), but what Dynamo compiled of it now runs eagerly, and NumPy's random draws there come
from NumPy again.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.kinds import TENSORISH
from dynalint.lint.nodes import dotted
from dynalint.lint.variables import target_names, variable_names

from .base import guarded, make_fix
from .disable_helper import BREAKING, _can_leave, _host_side_helper, _reached_on_every_call, _reached_statements
from .imports import torch_name

REGISTRY = "disable_tail"
WIDTH = 100  # the call is wrapped past this many characters
# Decorators a split keeps on the new function (anything else, e.g. a cache, changes what a call is).
KEPT_DECORATORS = frozenset({"staticmethod", "classmethod"})


def disable_tail_fix(ctx, info, code: str, node: cst.CSTNode):
    """The split fix for a finding of `code` at `node` in `ctx.fn`, or None."""
    fn = ctx.fn
    # Per function, once and before any per-finding work (a finding deep in a long expression
    # would climb to its statement): a helper with an early-return guard at all?
    candidates = info.registry.setdefault(REGISTRY + ".candidates", {})
    if id(fn) not in candidates:
        candidates[id(fn)] = not ctx.is_root and any(
            isinstance(stmt, cst.If) and stmt.orelse is None and _ends_in_return(stmt.body)
            for stmt in fn.body.body[:-1]
        ) if isinstance(fn.body, cst.IndentedBlock) else False
    if not candidates[id(fn)]:
        return None
    top = _top_level_statement(info, fn, node)
    if top is None:
        return None
    body = list(fn.body.body)
    # Split after the last early-return guard before the finding's statement.
    at = next((i for i in range(len(body) - 1, -1, -1) if body[i] is top), None)
    guard = next((i for i in range(at - 1, -1, -1) if _can_leave(body[i])), None) if at else None
    if guard is None:
        return None
    plans = info.registry.setdefault(REGISTRY, {})
    key = (id(fn), guard)
    if key not in plans:
        plans[key] = _plan(ctx, info, fn, guard)
    plan = plans[key]
    if plan is None:
        return None
    # A break that every call past the guard reaches, with more of the rest after it (which
    # Dynamo would trace as a graph of its own after the break).
    every_call = top is not plan["rest"][-1] and _reached_on_every_call(info, fn, node, plan["reached"])
    return guarded(code, lambda positions, module: _fix(info, positions, fn, plan, every_call))


def _top_level_statement(info, fn: cst.FunctionDef, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The top-level statement of fn's body that holds `node`, where `node` is not in a nested
    function, lambda or class (code that may never run)."""
    child, parent = node, info.parent(node)
    while parent is not None and parent is not fn.body:
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        child, parent = parent, info.parent(parent)
    return child if parent is not None else None


def _plan(ctx, info, fn: cst.FunctionDef, last: int) -> Optional[dict]:
    """How to split `fn` after its top-level statement `last` (an early-return guard), or None."""
    if fn.asynchronous is not None or not isinstance(fn.body, cst.IndentedBlock):
        return None
    kinds = [(dotted(d.decorator) or "").split(".")[-1] for d in fn.decorators]
    if any(k not in KEPT_DECORATORS for k in kinds) or len(kinds) > 1:
        return None
    body = list(fn.body.body)
    if any(_can_leave(stmt, returns=False) for stmt in body):
        return None  # a generator
    guard = body[last]
    if not (isinstance(guard, cst.If) and guard.orelse is None and _ends_in_return(guard.body)):
        return None
    if ctx.kind(guard.test) in TENSORISH:
        return None
    prelude, rest = body[:last], body[last + 1 :]
    if not _host_side_helper(ctx, info, fn, rest):
        return None
    params = _parameters(fn)
    place = placement(info, fn, kinds[0] if kinds else None)
    if place is None:
        return None
    holder, kind, receiver_param, receiver = place
    bound = _top_level_bindings(prelude)
    if bound is None:
        return None
    anywhere = _bindings(prelude)
    free = set().union(*(variable_names(stmt) for stmt in rest))  # read (or bound) there
    passed = []
    for name in sorted(free & (anywhere | set(params)), key=lambda n: (n not in params, n)):
        if name in params:
            continue
        if name not in bound:
            return None  # bound only on some paths: it may be unbound at the guard
        value = cst.Name(name)
        if ctx.kind(value) in TENSORISH and not ctx.is_numpy(value):
            return None  # a torch tensor computed in the graph would be read back outside it
        passed.append(name)
    new_name = "_" + fn.name.value.lstrip("_") + "_outside_graph"
    scope = holder.body.body if holder is not None else ctx.module.body
    if any(_binds(stmt, new_name) for stmt in scope):
        return None
    # The instance (or class) goes first, as the receiver of the call.
    args = (params[1:] if receiver_param else params) + passed
    return {"rest": rest, "reached": _reached_statements(fn, rest), "callees": _callees(rest), "kind": kind, "name": new_name, "receiver": receiver, "args": args,
            "signature": (params[:1] if receiver_param else []) + args}


def placement(info, fn: cst.FunctionDef, decorated: Optional[str]) -> Optional[tuple]:
    """Where a new function beside `fn` goes and how a call reaches it: (holder, kind, receiver
    parameter, receiver). holder: the module-level class whose body holds fn, or None at module
    level; kind: `decorated` (fn's "staticmethod" / "classmethod") or "method" / "function";
    receiver parameter: fn's `self` / `cls`, else None; receiver: what a call goes through (that
    parameter, the class for a static method, None for a module function). None for a function
    nested in a function or in a nested class, or a method with no parameter."""
    parent = info.parent(fn)
    if not isinstance(parent, (cst.Module, cst.IndentedBlock)):
        return None
    holder = info.parent(parent) if isinstance(parent, cst.IndentedBlock) else None
    if holder is not None and not (isinstance(holder, cst.ClassDef) and isinstance(info.parent(holder), cst.Module)):
        return None
    kind = decorated or ("method" if holder is not None else "function")
    params = _parameters(fn)
    receiver_param = None
    if kind in ("method", "classmethod"):
        if not params:
            return None
        receiver_param = params[0]
    receiver = receiver_param or (holder.name.value if holder is not None else None)
    return holder, kind, receiver_param, receiver


def _ends_in_return(block: cst.BaseSuite) -> bool:
    stmts = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = stmts[-1] if stmts else None
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], cst.Return)
    if isinstance(block, cst.SimpleStatementSuite):
        return isinstance(block.body[-1], cst.Return)
    return False


def _parameters(fn: cst.FunctionDef) -> list:
    """The names of all parameters, in order (`*args` and `**kwargs` as plain names)."""
    p = fn.params
    names = [x.name.value for x in (*p.posonly_params, *p.params)]
    if isinstance(p.star_arg, cst.Param):
        names.append(p.star_arg.name.value)
    names += [x.name.value for x in p.kwonly_params]
    if p.star_kwarg is not None:
        names.append(p.star_kwarg.name.value)
    return names


def _top_level_bindings(prelude: list) -> Optional[set]:
    """Names every call that reaches the guard has bound: top-level assignments, imports,
    definitions of the prelude. None where the prelude deletes a name."""
    bound: set = set()
    for stmt in prelude:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            bound.add(stmt.name.value)
            continue
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Del):
                return None
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    bound |= target_names(t.target)
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                bound |= target_names(small.target)
            elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    name = alias.asname.name if alias.asname is not None else alias.name
                    bound.add((dotted(name) or "").split(".")[0])
    return bound


class _Stores(cst.CSTVisitor):
    """Names bound in statements (assignment, loop and `with` targets, walrus, nested definitions)."""

    def __init__(self) -> None:
        self.stores: set = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.stores |= target_names(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.stores |= target_names(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.stores |= target_names(node.target)

    def visit_For(self, node: cst.For) -> None:
        self.stores |= target_names(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self.stores |= target_names(node.name) if isinstance(node.name, cst.BaseExpression) else set()

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.stores |= target_names(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        # `import a.b` binds `a`; with `as` the AsName visitor has it.
        if node.asname is None:
            self.stores.add((dotted(node.name) or "").split(".")[0])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stores.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.stores.add(node.name.value)


def _bindings(stmts: list) -> set:
    scope = _Stores()
    for stmt in stmts:
        stmt.visit(scope)
    return scope.stores


def _binds(stmt: cst.CSTNode, name: str) -> bool:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return stmt.name.value == name
    return name in _bindings([stmt])


def _callees(stmts: list) -> frozenset:
    """Names the statements call: `name(...)`, `self.name(...)`, `Class.name(...)`."""
    found = set()

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Name):
                found.add(func.value)
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                found.add(func.attr.value)

    for stmt in stmts:
        stmt.visit(Calls())
    return frozenset(found)


def _fix(info, positions, fn: cst.FunctionDef, plan: dict, every_call: bool):
    # Worth it where every call that gets past the guard breaks at this finding, or where the rest
    # calls a function of the file that breaks: Dynamo traces each of its calls as a frame of its
    # own, even from a frame it gave up on, and breaks there again. A break only in a loop of the
    # rest, with no such callee, costs little as it is (Dynamo runs the helper's frame eagerly
    # after it) and the split would add a graph for the code before the guard.
    if not every_call and not plan["callees"] & info.registry.get(BREAKING, set()) - {fn.name.value}:
        return None
    rest = plan["rest"]
    first = rest[0]
    start = positions[first].start.line - len(first.leading_lines)
    end = positions[fn].end.line
    body_indent = info.indentation(positions[first].start.line)
    def_row = positions[fn.name].start.line
    if not info.line(def_row).lstrip().startswith("def "):
        return None
    outer = info.indentation(def_row)
    nl = info.newline
    torch = torch_name(info.module)
    receiver = plan["receiver"]
    callee = f"{receiver}.{plan['name']}" if receiver else plan["name"]
    call = _wrapped(f"{body_indent}return {callee}(", plan["args"], ")", body_indent + info.indent_unit, nl)
    decorators = [f"{outer}@{torch}.compiler.disable{nl}"]
    if plan["kind"] in KEPT_DECORATORS:
        decorators.insert(0, f"{outer}@{plan['kind']}{nl}")
    header = _wrapped(f"{outer}def {plan['name']}(", plan["signature"], "):", outer + info.indent_unit, nl)
    moved = "".join(info.lines[start - 1 : end])
    if not moved.endswith(("\n", "\r")):
        moved += nl
    blank = nl * (1 if outer else 2)
    content = call + blank + "".join(decorators) + header + moved
    edit = Edit(content, start, 1, end + 1, 1) if end < len(info.lines) else Edit(
        content, start, 1, end, len(info.lines[end - 1]) + 1)
    return make_fix(
        UNSAFE,
        f"Run what `{fn.name.value}` does after its early `return` outside the graph: moved into "
        f"`{plan['name']}` (`@{torch}.compiler.disable`), one break per call that gets there instead of the "
        "breaks inside it",
        [edit],
    )


def _wrapped(opening: str, args: list, closing: str, indent: str, nl: str) -> str:
    """`opening` + args + `closing` on one line, or else the args on lines of their own (indented by
    `indent`) and `closing` on a line indented as `opening`."""
    one = opening + ", ".join(args) + closing
    if len(one) <= WIDTH:
        return one + nl
    lines, line = [], ""
    for arg in args:
        piece = arg + ","
        if line and len(indent) + len(line) + 1 + len(piece) > WIDTH:
            lines.append(indent + line)
            line = ""
        line = f"{line} {piece}" if line else piece
    lines.append(indent + line)
    lead = opening[: len(opening) - len(opening.lstrip(" \t"))]
    return opening + nl + nl.join(lines) + nl + lead + closing + nl

"""Call edges: which functions, methods and submodules a function calls (resolved to dotted names
where the file alone allows it; `lint.regions` follows them across files), and the tensors passed
at each call site (hints for the callee's parameters, in this file or another)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from .kinds import P, T, TENSORISH
from .summary import BUILTIN_NAMES

if TYPE_CHECKING:  # pragma: no cover
    from .filefacts import FileAnalyzer


def submodule_types(value: cst.BaseExpression, fa: FileAnalyzer) -> list[str]:
    """`Block(...)` -> [Block]; `nn.ModuleList([Block(...) for _ in ...])` -> [Block]."""
    if type(value) is not cst.Call:
        return []
    q = fa.qualname(value.func)
    if q is None:
        return []
    if q in ("torch.nn.ModuleList", "torch.nn.Sequential"):
        out = []
        for arg in value.args:
            v = arg.value
            if type(v) in (cst.ListComp, cst.GeneratorExp):
                out += submodule_types(v.elt, fa)
            elif type(v) in (cst.List, cst.Tuple):
                for el in v.elements:
                    out += submodule_types(el.value, fa)
            else:
                out += submodule_types(v, fa)
        return out
    if q.startswith("torch."):
        return []
    q = fa.global_name(q)
    last = q.rsplit(".", 1)[-1]
    # A class by its capital, or a class of this file whatever its name (normflows' `iResBlock`)
    return [q] if last[:1].isupper() or (last in fa._class_names and q == f"{fa.summary.module}.{last}") else []


def _passed_arguments(node: cst.Call) -> tuple:
    """(number of positional arguments, keyword names, whether `*args`/`**kwargs` pass more)"""
    positional, keywords, star = 0, set(), False
    for arg in node.args:
        if arg.star:
            star = True
        elif arg.keyword is not None:
            keywords.add(arg.keyword.value)
        else:
            positional += 1
    return positional, frozenset(keywords), star


# Calls that do not call a function passed to them (`_passed_function_edges`).
_NOT_CALLING = frozenset({"isinstance", "issubclass", "type", "id", "hasattr", "getattr", "setattr", "callable", "print", "repr", "str"})
_NOT_CALLING_QUALNAMES = frozenset({
    "torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo", "torch.compile",
    "functools.wraps", "atexit.register", "threading.Thread", "warnings.warn",
})


class CallEdges:
    """The call-graph part of `FunctionContext` (`lint.walk`), which it mixes in."""

    def _record_call_site(self, node: cst.Call) -> None:
        func = node.func
        key, offset = None, 0
        method = self.self_attr(func)
        if method is not None:
            if self.class_info is not None and method in self.class_info.methods:
                key = f"{self.cls}.{method}"
                self.fa.call_guards.setdefault(key, {})[id(node)] = self._guard_facts()
                self.fa.call_passed.setdefault(key, {})[id(node)] = _passed_arguments(node)
        elif type(func) is cst.Name and func.value in self.fa.local_functions and func.value not in self.env:
            key = f"{self.fa.summary.module}.{func.value}"
        elif (applied := self._applied_function(func)) is not None:
            # `Solve.apply(x, t)` (or `solve(x, t)` with `solve = Solve.apply`): the arguments of
            # `forward(ctx, x, t)`, after ctx
            key, offset = f"{applied}.forward", 1
            self.fa.call_passed.setdefault(key, {})[id(node)] = _passed_arguments(node)
        elif (method_key := self._submodule_method(func)) is not None:
            # `self.trans.HVIT(x)` with `self.trans = HVITransform()` of this file: a method of
            # the submodule's class (spandrel's HVI-CIDNet)
            key = method_key
        else:
            self._record_external_call_site(node)
            return
        if key is None:
            return
        for i, arg in enumerate(node.args):
            if arg.star:
                break
            k = self.kind(arg.value)
            if k in TENSORISH:
                hints = self.fa.param_hints.setdefault(key, {})
                slot = arg.keyword.value if arg.keyword is not None else i + offset
                # A definite tensor at one call site and a presumed one at another: presumed.
                hints[slot] = P if P in (k, hints.get(slot)) else T

    def _submodule_method(self, func: cst.BaseExpression) -> Optional[str]:
        """`self.<sub>.<method>` where `self.<sub>` holds one class of this file that defines
        `method` (not `forward`, whose parameters are presumed tensors already)."""
        if type(func) is not cst.Attribute or func.attr.value == "forward" or self.class_info is None:
            return None
        sub = self.self_attr(func.value)
        types = self.class_info.attr_types.get(sub) if sub is not None else None
        if not types or len(types) != 1:
            return None
        cls = self.fa.summary.classes.get(types[0])
        return f"{types[0]}.{func.attr.value}" if cls is not None and func.attr.value in cls.methods else None

    def _applied_function(self, func: cst.BaseExpression) -> Optional[str]:
        """The custom autograd function of this file that `Fn.apply` or an alias of it names."""
        if type(func) is cst.Attribute and func.attr.value == "apply" and type(func.value) is cst.Name:
            name = f"{self.fa.summary.module}.{func.value.value}"
        elif type(func) is cst.Name and func.value not in self.env:
            target = self.fa.summary.imports.get(func.value, "")
            name = target[: -len(".apply")] if target.endswith(".apply") else None
        else:
            return None
        return name if name in self.fa.autograd_functions else None

    def _guard_facts(self) -> dict:
        """`self.<attr>` truths the enclosing `if` tests assert (`if self.merged:`, `if not
        self.training and self.ready:`); a test of any other form says nothing."""
        facts: dict = {}
        for test in self.branch_tests:
            stack = [test]
            while stack:
                t = stack.pop()
                if type(t) is cst.BooleanOperation and type(t.operator) is cst.And:
                    stack += [t.left, t.right]
                    continue
                value = True
                while type(t) is cst.UnaryOperation and type(t.operator) is cst.Not:
                    t, value = t.expression, not value
                attr = self.self_attr(t)
                if attr is not None:
                    facts[attr] = value
        return facts

    def _record_external_call_site(self, node: cst.Call) -> None:
        """`clamp_outliers(h)` with `clamp_outliers` imported from a linted file: remember which
        arguments are tensors so that file's analysis can treat those parameters as tensors."""
        edge = self._edge_for(node)
        if edge is None or edge[0] != "name":
            return
        dotted_callee = edge[1]
        own = f"{self.fa.summary.module}."
        if dotted_callee.startswith(own):
            head = dotted_callee[len(own):].split(".")[0]
            if head in self.fa.local_functions or head in self.fa._class_names:
                # local classes: their forward's parameters are presumed tensors already
                return
            # else a star-imported name (`global_name`): the project finds its file
        for i, arg in enumerate(node.args):
            if arg.star:
                break
            k = self.kind(arg.value)
            if k in TENSORISH:
                hints = self.fa.summary.call_hints.setdefault(dotted_callee, {})
                slot = arg.keyword.value if arg.keyword is not None else str(i)
                hints[slot] = P if P in (k, hints.get(slot)) else T

    # -- edges ------------------------------------------------------------------------------
    def _submodule_list_ref(self, it: cst.BaseExpression) -> Optional[tuple]:
        if type(it) is cst.Attribute and type(it.value) is cst.Name and it.value.value == "self":
            return ("selfattr", it.attr.value, "forward")
        return None

    def _passed_function_edges(self, node: cst.Call) -> list[tuple]:
        """Functions passed as arguments, which the callee presumably calls where it runs
        (`checkpoint(self._inner, x)`, `slstm_forward(x, ..., pointwise_forward=self.pointwise)`):
        a method of the class or a function stored on self, a function of the file, an imported
        lower-case name. Not to hook registration (hooks run outside the traced frame), to
        `torch.compiler.disable` and its kin, or to type tests."""
        func = node.func
        if type(func) is cst.Attribute and func.attr.value.startswith("register_"):
            return []
        if type(func) is cst.Name and func.value in _NOT_CALLING:
            return []
        q = self.qualname(func)
        if q is not None and (q in _NOT_CALLING_QUALNAMES or q.startswith("torch.jit.")):
            return []
        edges = []
        for arg in node.args:
            value = arg.value
            attr = self.self_attr(value)
            if attr is not None:
                if self._own_method(attr) or (self.class_info is not None and attr in self.class_info.attr_callables):
                    edges.append(("self", attr))
            elif type(value) is cst.Name:
                name = value.value
                if name in self.env or name in self.nested_defs or name in self.local_types:
                    continue
                if name in self.fa.local_functions or (name in self.fa.summary.imports and not name[:1].isupper()):
                    edges.append(("name", self.fa.resolve(name)))
        return edges

    def _assigned_method_edges(self, value: cst.BaseExpression) -> list[tuple]:
        """Methods taken as a value by an assignment, which the name presumably calls
        (`trunk_fn = self._checkpointed if self.use_checkpointing else self._trunk`, Enformer)."""
        refs = (value.body, value.orelse) if type(value) is cst.IfExp else (value,)
        edges = [("self", attr) for attr in map(self.self_attr, refs) if attr is not None and self._own_method(attr)]
        # Functions picked into a local (`spline_fn = unconstrained_rational_quadratic_spline` in
        # one branch, nflows; `shift = shift_gpu if cuda else shift_cpu`): a function of the file,
        # or an imported lower-case name.
        for ref in refs:
            if type(ref) is cst.Name and ref.value not in self.env and ref.value not in self.nested_defs:
                name = ref.value
                if name in self.fa.local_functions or (name in self.fa.summary.imports and not name[:1].isupper()):
                    edges.append(("name", self.fa.resolve(name)))
            elif type(ref) is cst.Attribute and type(ref.value) is cst.Name and ref.value.value in self.fa.summary.imports \
                    and ref.value.value not in self.env and not ref.attr.value[:1].isupper():
                q = self.qualname(ref)  # `splines.quadratic_spline` of an imported module
                if q is not None and not q.startswith(("torch.", "numpy.", "math.")):
                    edges.append(("name", q))
        return edges

    def _sole_method_edge(self, meth: str) -> Optional[tuple]:
        """`block.backward_pass(y, dy)` on a local in a custom autograd function (a reversible
        network's backward, looping over `ctx.blocks`): the method of that name, where one class
        of the file defines it (Dynamo traces the backward, and the method with it)."""
        if meth.startswith("__") or meth in ("forward", "backward", "apply"):
            return None
        owners = self.fa.method_owners().get(meth, ())
        return ("name", f"{owners[0]}.{meth}") if len(owners) == 1 else None

    def _own_method(self, attr: str) -> bool:
        return self.class_info is not None and attr in self.class_info.methods

    def _add_edges(self, edges) -> None:
        known = self.info.edges
        for edge in edges:
            if edge is not None and edge not in known:
                known.append(edge)

    def _edge_for(self, node: cst.Call) -> Optional[tuple]:
        func = node.func
        if type(func) is cst.Name:
            name = func.value
            if name in self.local_types:
                return self.local_types[name]
            if name in self.env or name in self.nested_defs:
                return None
            if name in self.fa.local_functions or name in self.fa.summary.imports or name in self.fa._class_names:
                return ("name", self.fa.resolve(name))
            if self.fa.star_modules and name not in BUILTIN_NAMES:
                return ("name", self.fa.global_name(name))  # perhaps from `from .x import *`
            return None
        if type(func) is cst.Attribute:
            recv = func.value
            meth = func.attr.value
            if self.self_attr(func) is not None:
                return ("self", meth)
            submodule = self.self_attr(recv)
            if submodule is not None:
                return ("selfattr", submodule, meth)
            if type(recv) is cst.Call and type(recv.func) is cst.Name and recv.func.value == "super":
                return ("super", meth)
            q = self.qualname(func)
            if q is not None and not q.startswith(("torch.", "numpy.", "math.")):
                head = q.split(".")[0]
                if head in self.fa.summary.imports.values() or "." in q:
                    return ("name", q)
            if q is None and self.in_autograd_function and type(recv) is cst.Name:
                return self._sole_method_edge(meth)
            return None
        if type(func) is cst.Subscript:
            base = func
            while type(base) is cst.Subscript:
                base = base.value
            if type(base) is cst.Name and base.value not in self.env and base.value not in self.nested_defs:
                # `routines[self.loss][backend](x, y)` (geomloss): whatever the registry holds
                if base.value in self.fa.registry_names:
                    return ("name", f"{self.fa.summary.module}.{base.value}[]")
                imported = self.fa.summary.imports.get(base.value)
                if imported is not None:
                    return ("name", f"{imported}[]")
            ref = self._submodule_list_ref(func.value)
            return ref
        return None

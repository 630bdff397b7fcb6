"""Facts about a function's variables that the walk's kinds do not track (fix generators and
DYN106 ask them): which names an expression reads, and whether a variable may hold None."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .fastcst import iter_nodes
from .nodes import is_none


def variable_names(root: cst.CSTNode) -> set[str]:
    """Names read as variables under root (attribute names and keyword names are not variables;
    names bound inside nested lambdas and comprehensions are included, conservatively)."""
    return _names(root) - {"True", "False", "None"}


def _names(root: cst.CSTNode) -> set[str]:
    return {n.value for n in variable_nodes(root)}


def target_names(target: cst.CSTNode) -> set[str]:
    """The local names an assignment, loop or `as` target binds (`a`, `a, (b, *c)`; none for
    `x.attr` or `x[i]`)."""
    if type(target) is cst.Name:
        return {target.value}
    if type(target) in (cst.Tuple, cst.List):
        return {n for el in target.elements for n in target_names(el.value)}
    if type(target) is cst.StarredElement:
        return target_names(target.value)
    return set()


def variable_nodes(root: cst.CSTNode, skip=(), skip_imports: bool = False) -> list[cst.Name]:
    """The Name nodes under root that are variables (attribute names and keyword argument names
    are not), leaving out the `skip` subtrees and, with skip_imports, import statements."""
    skip_ids = {id(n) for n in skip}
    out: list[cst.Name] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in skip_ids:
            continue
        if isinstance(node, cst.Name):
            out.append(node)
        elif isinstance(node, (cst.Attribute, cst.Arg)):
            stack.append(node.value)
        elif not (skip_imports and isinstance(node, (cst.Import, cst.ImportFrom))):
            stack.extend(node.children)
    return out


def identifiers(root: cst.CSTNode, skip: Optional[cst.CSTNode] = None) -> set[str]:
    """Every identifier under root, attribute and keyword names included, leaving out the `skip`
    subtree: what a new name must not collide with, or may be read by (a superset of the
    variables)."""
    out, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node is skip:
            continue
        if isinstance(node, cst.Name):
            out.add(node.value)
        stack.extend(node.children)
    return out


def variable_reads(root: cst.CSTNode, name: str, skip=(), skip_imports: bool = False) -> list[cst.Name]:
    """Occurrences of the variable `name` under root (see variable_nodes)."""
    return [n for n in variable_nodes(root, skip, skip_imports) if n.value == name]


def _is_name(node, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _annotation_admits_none(ann: cst.Annotation) -> bool:
    return bool({"None", "Optional"} & _names(ann.annotation))


def _parameter_may_be_none(fn: cst.FunctionDef, name: str) -> bool:
    params = fn.params
    for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
        if p.name.value != name:
            continue
        if p.default is not None and is_none(p.default):
            return True
        return p.annotation is not None and _annotation_admits_none(p.annotation)
    return False


def _none_test_or_binding(node: cst.CSTNode, name: str) -> bool:
    """`name is None` / `name is not None` / `name == None`, or `name = None` / `name: T = None`."""
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        other = node.comparisons[0].comparator
        left = node.left
        return (_is_name(left, name) and is_none(other)) or (is_none(left) and _is_name(other, name))
    if isinstance(node, cst.Assign) and is_none(node.value):
        return any(_is_name(t.target, name) for t in node.targets)
    if isinstance(node, cst.AnnAssign):
        return _is_name(node.target, name) and (
            (node.value is not None and is_none(node.value)) or _annotation_admits_none(node.annotation)
        )
    return False


def may_be_none(fn: cst.FunctionDef, name: str) -> bool:
    """Could the variable hold None somewhere in fn? A parameter defaulting to None or annotated
    Optional, a `name = None` binding, or a `name is None` test anywhere in the function (a test
    says that the author expects None there)."""
    if _parameter_may_be_none(fn, name):
        return True
    return any(_none_test_or_binding(node, name) for node in iter_nodes(fn.body))


# Nodes whose `target` binds names (`for x in`, `x += 1`, `x: int = 0`, `(x := 1)`, `del x`).
_TARGET_HOLDERS = (cst.AssignTarget, cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.Del)


def rebound_names(root: cst.CSTNode) -> set[str]:
    """Local names some statement or expression under root assigns (`=`, `+=`, annotated, `for`
    and `with ... as` targets, `:=`, `del`, `global`/`nonlocal`), nested scopes included:
    conservative."""
    out: set[str] = set()
    for node in iter_nodes(root):
        t = type(node)
        if t in _TARGET_HOLDERS:
            out |= target_names(node.target)
        elif t is cst.AsName:
            out |= target_names(node.name)
        elif t is cst.Global or t is cst.Nonlocal:
            out |= {n.name.value for n in node.names}
        elif t is cst.Param:
            out.add(node.name.value)
    return out


_ONE_VALUE_MEMO: dict = {}


def returns_one_value(fn: cst.FunctionDef) -> bool:
    """Every `return` of fn (nested functions included, conservatively) gives one expression
    that is no tuple, list or dict display: `return ((lengths - 1) // 2 + 1)`, not `return a, b`."""
    known = _ONE_VALUE_MEMO.get(id(fn))
    if known is not None and known[0] is fn:
        return known[1]
    returns = [n for n in iter_nodes(fn.body) if type(n) is cst.Return]
    result = bool(returns) and all(
        r.value is not None and type(r.value) not in (cst.Tuple, cst.List, cst.Dict) for r in returns
    )
    if len(_ONE_VALUE_MEMO) > 4096:
        _ONE_VALUE_MEMO.clear()
    _ONE_VALUE_MEMO[id(fn)] = (fn, result)
    return result

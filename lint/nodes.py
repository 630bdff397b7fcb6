"""Small facts about libcst nodes, shared by the linter and the fixes."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from . import fastcst


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` -> "a.b.c"; anything else -> None."""
    node_type = type(node)
    if node_type is cst.Name:  # most asked (a call's function, a base)
        return node.value
    if node_type is not cst.Attribute:
        return None
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def decorator_target(dec: cst.Decorator) -> cst.BaseExpression:
    """What a decorator names: `f` in `@f` and in `@f(...)`."""
    expr = dec.decorator
    return expr.func if type(expr) is cst.Call else expr


def is_none(node: cst.BaseExpression) -> bool:
    """The literal `None`."""
    return type(node) is cst.Name and node.value == "None"


def param_list(params: cst.Parameters) -> list[cst.Param]:
    return list(params.posonly_params) + list(params.params) + list(params.kwonly_params)


def iter_code_nodes(root: cst.CSTNode):
    """All statement-level and expression nodes under root (children first order not needed)."""
    # Same nodes as .children without rebuilding them, minus whitespace and punctuation.
    table = _CODE_CHILDREN
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        kids = table.get(node.__class__)
        if kids is None:
            kids = fastcst.kids_of(table, fastcst.TRIVIA, node)
        stack += kids(node)


_CODE_CHILDREN = fastcst.children_without(fastcst.TRIVIA)


def operator_operands(node: cst.BaseExpression) -> Optional[list]:
    """The operands of a comparison, binary or unary operation; None for other expressions."""
    if type(node) is cst.BinaryOperation:
        return [node.left, node.right]
    if type(node) is cst.Comparison:
        return [node.left] + [c.comparator for c in node.comparisons]
    if type(node) is cst.UnaryOperation:
        return [node.expression]
    return None


def is_docstring(stmt: cst.CSTNode) -> bool:
    """A statement that is only a string (a docstring where it comes first)."""
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def is_string_literal(node: cst.BaseExpression) -> bool:
    """A string literal, or literals joined (`"a" "b"`); not an f-string. The only assert
    message Dynamo keeps in the graph."""
    if type(node) is cst.SimpleString:
        return True
    return type(node) is cst.ConcatenatedString and is_string_literal(node.left) and is_string_literal(node.right)


def self_dict_key(target: cst.BaseExpression) -> Optional[tuple[str, str]]:
    """`self.<attr>["<key>"]` -> (attr, key)."""
    if not (type(target) is cst.Subscript and type(target.value) is cst.Attribute
            and type(target.value.value) is cst.Name and target.value.value.value == "self" and len(target.slice) == 1):
        return None
    index = target.slice[0].slice
    if type(index) is not cst.Index or type(index.value) is not cst.SimpleString:
        return None
    key = index.value.evaluated_value
    return (target.value.attr.value, key) if isinstance(key, str) else None


def class_of(module: cst.Module, fn: cst.CSTNode) -> Optional[cst.ClassDef]:
    """The module-level class whose body holds the method `fn`, if any."""
    for stmt in module.body:
        if type(stmt) is cst.ClassDef and type(stmt.body) is cst.IndentedBlock and any(s is fn for s in stmt.body.body):
            return stmt
    return None

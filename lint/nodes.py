"""Small facts about libcst nodes, shared by the linter and the fixes."""

from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` -> "a.b.c"; anything else -> None."""
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def is_none(node: cst.BaseExpression) -> bool:
    """The literal `None`."""
    return type(node) is cst.Name and node.value == "None"

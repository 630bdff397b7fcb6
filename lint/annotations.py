"""Kinds from what a signature declares: annotations (`Tensor`, `Optional[Tensor]`, `int | Tensor`)
and TorchScript-era signature comments (`# type: (Tensor, int) -> Tensor`)."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from .kinds import N, P, T
from .nodes import dotted, is_none


TENSOR_TYPE_NAMES = frozenset(
    {"Tensor", "FloatTensor", "LongTensor", "BoolTensor", "IntTensor", "HalfTensor", "DoubleTensor",
     "ByteTensor", "BFloat16Tensor", "Parameter", "Buffer"}
)


def _union_members(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`A | B`, `Optional[A]`, `Union[A, B]` -> [A, B] (None dropped); anything else -> [node]."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:
        return _union_members(node.left) + _union_members(node.right)
    if type(node) is cst.Subscript:
        head = dotted(node.value) or ""
        if head.split(".")[-1] in ("Optional", "Union"):
            out = []
            for el in node.slice:
                if type(el.slice) is cst.Index:
                    out += _union_members(el.slice.value)
            return out
    if is_none(node):
        return []
    if type(node) is cst.SimpleString:
        try:
            return _union_members(cst.parse_expression(node.evaluated_value))
        except Exception:
            return [node]
    return [node]


def annotation_kind(ann: Optional[cst.Annotation]) -> Optional[str]:
    """T for `Tensor` / `Optional[Tensor]`, P for `int | Tensor`, N for anything else
    (`list[Tensor]` is a list), None when there is no annotation."""
    if ann is None:
        return None
    members = _union_members(ann.annotation)
    tensors = [m for m in members if (dotted(m) or "").split(".")[-1] in TENSOR_TYPE_NAMES]
    if not tensors:
        return N
    return T if len(tensors) == len(members) else P


_NUMBERS = frozenset({"int", "float"})
_SEQUENCES = frozenset({"list", "List", "tuple", "Tuple", "Sequence"})


def names_numbers(ann: Optional[cst.Annotation]) -> bool:
    """`int`, `Optional[float]`, `list[int]`, `Tuple[int, ...]`: Python numbers (or sequences of
    them) and nothing else, not an alias the linter cannot read (`Adj`)."""
    if ann is None:
        return False
    members = [m for m in _union_members(ann.annotation) if not (type(m) is cst.Name and m.value == "None")]
    return bool(members) and all(_number_type(m) for m in members)


def _number_type(node: cst.BaseExpression) -> bool:
    if type(node) is cst.Subscript:
        items = [el.slice.value for el in node.slice if type(el.slice) is cst.Index]
        return (dotted(node.value) or "").split(".")[-1] in _SEQUENCES and bool(items) and all(
            type(i) is cst.Ellipsis or _number_type(i) for i in items)
    return type(node) is cst.Name and node.value in _NUMBERS


_CONTAINERS = frozenset({
    "list", "List", "tuple", "Tuple", "dict", "Dict", "Mapping", "MutableMapping", "Sequence",
    "Iterable", "OrderedDict",
})


def holds_tensors(ann: Optional[cst.Annotation]) -> bool:
    """`dict[str, Tensor]`, `List[torch.Tensor]`, `Tuple[Tensor, ...]`: a container whose items
    are tensors (pytorch-forecasting's `x: Dict[str, torch.Tensor]` batches)."""
    if ann is None:
        return False
    members = _union_members(ann.annotation)
    if len(members) != 1 or type(members[0]) is not cst.Subscript:
        return False
    node = members[0]
    if (dotted(node.value) or "").split(".")[-1] not in _CONTAINERS:
        return False
    items = [el.slice.value for el in node.slice if type(el.slice) is cst.Index and type(el.slice.value) is not cst.Ellipsis]
    if not items:
        return False
    if (dotted(node.value) or "").split(".")[-1] in ("dict", "Dict", "Mapping", "MutableMapping", "OrderedDict"):
        items = items[1:]
    return bool(items) and all((dotted(i) or "").split(".")[-1] in TENSOR_TYPE_NAMES for i in items)


_TYPE_COMMENT = re.compile(r"#\s*type:\s*\((.*)\)\s*->")


def type_comment_kinds(fn: cst.FunctionDef) -> Optional[list[Optional[str]]]:
    """Kinds of the parameters from a signature type comment (TorchScript-era code:
    `# type: (Tensor, int) -> Tensor`, on the `def` line or first in the body), in order, `self`
    not included; None when the function has none."""
    texts = []
    header = getattr(fn.body, "header", None)
    if header is not None and header.comment is not None:
        texts.append(header.comment.value)
    body = getattr(fn.body, "body", ())
    if body:
        texts += [line.comment.value for line in getattr(body[0], "leading_lines", ()) if line.comment is not None]
    for text in texts:
        m = _TYPE_COMMENT.match(text.strip())
        if m is None:
            continue
        params = m.group(1).strip()
        if not params:
            return []
        try:  # the parameter list read as a tuple of type expressions: `(Tensor, dict[str, int],)`
            types = cst.parse_expression(f"({params},)")
        except cst.ParserSyntaxError:
            return None
        if type(types) is not cst.Tuple:
            return None
        return [annotation_kind(cst.Annotation(e.value)) for e in types.elements]
    return None

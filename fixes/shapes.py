"""Do two branches of a `torch.where` / `torch.cond` fix produce tensors of the same shape?

`torch.where(c, A, B)` broadcasts A against B: when `if c: x = F.pad(x, (0, 1))` becomes
`torch.where(c, F.pad(x, (0, 1)), x)` the shapes do not broadcast (a runtime error), and where
they do (`x.sum(-1, keepdim=True)` against `x`) the result silently takes the larger shape.
`torch.cond` raises at the first call when its branches' outputs differ in shape or dtype.

So a branch value is described by a signature, (leaves, dtype tag), and the fixes are offered
only when both branches' signatures are equal:
  - leaves: the tensors the value is computed from elementwise (or shape-preservingly, as
    `softmax(x, -1)`, `x.cumsum(0)`, `torch.zeros_like(x)`), each written as its source text.
    Calls of submodules that every assignment in the class makes a shape-keeping torch.nn module
    (`nn.Dropout`, `nn.GELU`, `nn.Identity`, ...) count as elementwise on their input.
    Anything else (a call of another submodule, `F.pad`, `cat`, `reshape`, indexing, a reduction, a
    conversion `.float()`, an unknown call) is an opaque leaf: the same text in both branches
    has the same shape, any other text may not. The result's shape is the broadcast of the
    leaves' shapes, so equal sets of leaves give equal shapes.
  - dtype tag: "bool" for comparisons and logical functions, "" otherwise, so that a mask is
    never selected against a number tensor. Python numbers do not change a floating tensor's
    dtype; an integer tensor divided (`x / 2`) is promoted to float in both branches by
    `torch.where` (values unchanged), which `torch.cond` would refuse at its first call.
Python numbers are no leaves: `x * 2` and `x - 1` have the same signature. In `torch.cond`
branches, names assigned earlier in the branch stand for the signature of their value.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.rule import RuleContext

from .purity import BITWISE, ELEMENTWISE, is_number

# Tensor methods / torch functions (last dotted part) whose result has the shape of their tensor
# operands broadcast together (other arguments are dims, bounds, flags).
SHAPE_KEEPING = frozenset(
    """
    abs absolute neg negative positive relu relu6 sigmoid tanh exp exp2 expm1 log log1p log2 log10
    sqrt rsqrt sin cos tan asin acos atan sinh cosh asinh acosh atanh erf erfc erfinv gelu silu
    mish softplus softsign elu selu celu leaky_relu hardtanh hardswish hardsigmoid hardshrink
    softshrink tanhshrink logsigmoid sign sgn floor ceil round trunc frac fix reciprocal square
    clamp clip clamp_min clamp_max nan_to_num softmax log_softmax softmin logit
    cumsum cumprod cummax cummin logcumsumexp clone contiguous detach dropout alpha_dropout
    feature_alpha_dropout add sub subtract mul multiply div divide true_divide floor_divide
    remainder fmod pow float_power maximum minimum fmax fmin atan2 arctan2 hypot lerp addcmul
    addcdiv where masked_fill copysign xlogy bitwise_and bitwise_or bitwise_xor bitwise_not
    zeros_like ones_like empty_like full_like rand_like randn_like randint_like
    """.split()
)
# The same, with a boolean result.
BOOL_RESULT = frozenset(
    """
    eq ne gt lt ge le greater less greater_equal less_equal not_equal logical_not logical_and
    logical_or logical_xor isnan isinf isfinite isposinf isneginf isreal signbit
    """.split()
)
# torch.nn modules (last dotted part) whose output has their one input's shape and dtype, whatever
# their constructor arguments.
SHAPE_KEEPING_MODULES = frozenset(
    """
    Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout Identity ReLU ReLU6 GELU
    SiLU Mish Sigmoid Tanh Softplus Softsign ELU SELU CELU LeakyReLU Hardtanh Hardswish Hardsigmoid
    Hardshrink Softshrink Tanhshrink LogSigmoid Softmax LogSoftmax Softmin
    """.split()
)

ARITHMETIC = ELEMENTWISE  # `@` changes the shape: not here

Signature = tuple  # (frozenset of leaf keys, dtype tag)


def same_shape_and_dtype(a, b, ctx: RuleContext, env_a: Optional[dict] = None, env_b: Optional[dict] = None) -> bool:
    """Are the values a and b (expressions, or names as str) provably of one shape and dtype
    class? env_*: signatures of names the branch assigned before (None: unknown)."""
    sa, sb = signature(a, ctx, env_a or {}), signature(b, ctx, env_b or {})
    return sa is not None and sa == sb


def signature(node, ctx: RuleContext, env: dict) -> Optional[Signature]:
    if isinstance(node, str):
        node = cst.Name(node)
    if isinstance(node, (cst.Integer, cst.Float)) or _scalar(node, ctx):
        return frozenset(), ""
    if isinstance(node, cst.Attribute) and ctx.self_attr(node) is not None and _number_attribute(ctx, node.attr.value):
        return frozenset(), ""  # `self.momentum`, set from `momentum=0.95`: a Python number
    if isinstance(node, cst.Name) and node.value in env:
        return env[node.value]
    if isinstance(node, cst.UnaryOperation):
        if isinstance(node.operator, cst.Not):
            return None
        return signature(node.expression, ctx, env)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, ARITHMETIC + BITWISE):
        return _combine([node.left, node.right], ctx, env, bitwise=isinstance(node.operator, BITWISE))
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        op = node.comparisons[0].operator
        if isinstance(op, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
            return None
        combined = _combine([node.left, node.comparisons[0].comparator], ctx, env)
        return None if combined is None else (combined[0], "bool")
    if isinstance(node, cst.Call) and not any(a.star for a in node.args):
        found = _call(node, ctx, env)
        if found is not None:
            return found
    return _opaque(node, ctx, env)


def _combine(parts: list, ctx: RuleContext, env: dict, bitwise: bool = False) -> Optional[Signature]:
    leaves: set = set()
    tags = []
    for part in parts:
        s = signature(part, ctx, env)
        if s is None:
            return None
        leaves |= s[0]
        if s[0]:
            tags.append(s[1])
    if not tags:
        return frozenset(leaves), ""
    # Arithmetic on a mask gives numbers (`mask * 1`); bitwise operations on masks keep masks.
    bool_result = bitwise and all(t == "bool" for t in tags)
    return frozenset(leaves), "bool" if bool_result else ""


def _call(node: cst.Call, ctx: RuleContext, env: dict) -> Optional[Signature]:
    func = node.func
    attr = ctx.self_attr(func)
    if attr is not None:
        # `self.drop(x)`: a submodule that every assignment in the class makes a shape-keeping
        # torch.nn module (a subclass in another file could assign another: not seen here).
        if len(node.args) == 1 and node.args[0].keyword is None and _shape_keeping_submodule(ctx, attr):
            return signature(node.args[0].value, ctx, env)
        return None
    q = ctx.qualname(func) or ""
    if q.startswith("torch.") and not q.startswith("torch.nn.") or q.startswith("torch.nn.functional."):
        name, operands = q.rsplit(".", 1)[-1], [a.value for a in node.args]
    elif isinstance(func, cst.Attribute) and (
        isinstance(func.value, cst.Name) and func.value.value in env or not q and ctx.is_tensor(func.value)
    ):
        name, operands = func.attr.value, [func.value] + [a.value for a in node.args]
    else:
        return None
    if name in ("view_as", "reshape_as", "expand_as") and len(node.args) == 1 and operands[0] is func.value:
        # the argument's shape, the receiver's dtype
        shape, dtype = signature(node.args[0].value, ctx, env), signature(func.value, ctx, env)
        return None if shape is None or dtype is None else (shape[0], dtype[1])
    # `torch.min(a, b)` / `a.max(b)` of two tensors is elementwise (with a dim it is a reduction).
    pairwise = name in ("min", "max") and len(operands) == 2 and all(_is_tensor_operand(v, ctx, env) for v in operands)
    if name not in SHAPE_KEEPING and name not in BOOL_RESULT and not pairwise:
        return None
    if any(a.keyword is not None and a.keyword.value in ("out", "dtype") for a in node.args):
        return None
    tensors = [v for v in operands if _is_tensor_operand(v, ctx, env)]
    if not tensors:
        return None
    combined = _combine(tensors, ctx, env)
    if combined is None:
        return None
    return combined[0], "bool" if name in BOOL_RESULT else combined[1]


def _shape_keeping_submodule(ctx: RuleContext, attr: str) -> bool:
    def judge(value, fn):
        q = ctx.qualname(value.func) if isinstance(value, cst.Call) else None
        return q is not None and q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in SHAPE_KEEPING_MODULES

    return every_assignment(ctx, attr, judge)


def _number_attribute(ctx: RuleContext, attr: str) -> bool:
    """Every assignment of `self.<attr>` in the class is a number literal, or a parameter of that
    method whose default is a number (`momentum=0.95`) and whose annotation, if any, is int/float."""

    def judge(value, fn):
        if is_number(value):
            return True
        if not (isinstance(value, cst.Name) and isinstance(fn, cst.FunctionDef)):
            return False
        for param in [*fn.params.params, *fn.params.kwonly_params]:
            if param.name.value == value.value:
                ann = param.annotation
                ann_ok = ann is None or (isinstance(ann.annotation, cst.Name) and ann.annotation.value in ("int", "float"))
                return param.default is not None and is_number(param.default) and ann_ok
        return False

    return every_assignment(ctx, attr, judge)


def every_assignment(ctx: RuleContext, attr: str, judge) -> bool:
    """judge(value, enclosing function) holds for every plain assignment of `self.<attr>` in the
    class of the function being walked (and there is one); augmented or unpacking stores,
    annotations without a value and `setattr` make it unknown."""
    from .base import enclosing_class, source_info

    cls = enclosing_class(source_info(ctx.module, ctx.fn), ctx.fn)
    if cls is None:
        return False
    verdicts = []
    stack: list = [(cls.body, None)]
    while stack:
        cur, fn = stack.pop()
        if isinstance(cur, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in cur.targets] if isinstance(cur, cst.Assign) else [cur.target]
            if any(_is_self_attr(t, attr) for t in targets):
                verdicts.append(isinstance(cur, cst.Assign) and judge(cur.value, fn))
            if any(not isinstance(t, (cst.Name, cst.Attribute)) and _mentions_self_attr(t, attr) for t in targets):
                verdicts.append(False)  # unpacked into: unknown
        elif isinstance(cur, cst.Call) and isinstance(cur.func, cst.Name) and cur.func.value == "setattr":
            verdicts.append(False)
        inner = cur if isinstance(cur, cst.FunctionDef) else fn
        stack.extend((child, inner) for child in cur.children)
    return bool(verdicts) and all(verdicts)


def _is_self_attr(node, attr: str) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and node.attr.value == attr
    )


def _mentions_self_attr(node, attr: str) -> bool:
    return any(_is_self_attr(n, attr) for n in iter_nodes(node))


def _scalar(node, ctx: RuleContext) -> bool:
    """A Python number for sure: `torch.finfo(x.dtype).max`, `x.shape[-1]`, `x.size(0)`, `x.dim()`,
    arithmetic of these and literals."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return _scalar(node.expression, ctx)
    if isinstance(node, cst.BinaryOperation):
        return _scalar(node.left, ctx) and _scalar(node.right, ctx)
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Call):
        q = ctx.qualname(node.value.func) or ""
        return q in ("torch.finfo", "torch.iinfo") and node.attr.value in ("max", "min", "eps", "tiny", "bits")
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape":
        return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("size", "dim"):
        return len(node.args) == (1 if node.func.attr.value == "size" else 0)  # x.size() is a torch.Size
    return False


def _is_tensor_operand(node, ctx: RuleContext, env: dict) -> bool:
    if isinstance(node, cst.Name) and node.value in env:
        return True
    return ctx.is_tensor(node)


def _opaque(node: cst.CSTNode, ctx: RuleContext, env: dict) -> Optional[Signature]:
    """node as a leaf of its own: its source text, unless it reads a name the branch assigned (the
    same text would then be a different value in each branch)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Name) and cur.value in env:
            return None
        stack.extend(cur.children)
    return frozenset([_key(node)]), ""


def _key(node: cst.CSTNode) -> str:
    text = cst.Module([]).code_for_node(node)
    try:
        return ast.dump(ast.parse(f"({text})", mode="eval"))
    except SyntaxError:
        return text

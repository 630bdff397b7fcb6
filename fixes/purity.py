"""Is an expression free of side effects, so that evaluating it one more time (both branches of a
`torch.where`) or one time fewer (deleting it) cannot change what the program does?

Conservative on purpose: names, attribute reads, literals, operators, tensor methods that are
not in-place, and `torch.*` functions that neither write in place nor draw random numbers (a
random op run in both branches would shift the RNG stream and change outputs for the same seed).
Calls of submodules (`self.fc(x)`) are not pure: dropout and batch-norm statistics live there.
"""

from __future__ import annotations

import libcst as cst

from dynalint.lint.rule import RuleContext

# torch functions (last dotted part) that draw random numbers or depend on RNG state.
RANDOM_FUNCS = frozenset(
    """
    rand rand_like randn randn_like randint randint_like randperm bernoulli multinomial normal
    poisson dropout dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout
    gumbel_softmax rrelu fractional_max_pool2d fractional_max_pool3d native_dropout
    """.split()
)
# Tensor methods that have effects or leave the tensor world.
IMPURE_METHODS = frozenset(
    """
    item tolist numpy backward register_hook retain_grad copy_ set_ resize_ resize_as_ share_memory_
    bernoulli multinomial random_ uniform_ normal_ exponential_ geometric_ cauchy_ log_normal_
    record_stream pin_memory data_ptr untyped_storage storage append extend insert pop remove
    update setdefault clear add_module register_buffer register_parameter apply
    """.split()
)
# Elementwise operators (the result has the operands' broadcast shape), bitwise ones, and all
# binary operators that are pure on tensors.
ELEMENTWISE = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)
BITWISE = (cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift)
ARITHMETIC = ELEMENTWISE + (cst.MatrixMultiply,) + BITWISE
LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)


def is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return is_number(node.expression)
    return False


def _pure_call(node: cst.Call, ctx: RuleContext, assume: frozenset) -> bool:
    if any(arg.star or (arg.keyword is not None and arg.keyword.value == "out") for arg in node.args):
        return False
    if not all(pure(arg.value, ctx, assume) for arg in node.args):
        return False
    func = node.func
    q = ctx.qualname(func)
    if q is not None and q.startswith("torch."):
        last = q.rsplit(".", 1)[-1]
        if last.endswith("_") or last in RANDOM_FUNCS:
            return False
        # Building modules or touching global state is not a pure tensor computation.
        return not q.startswith(("torch.nn.", "torch.cuda.", "torch.distributed.", "torch._")) or q.startswith(
            "torch.nn.functional."
        )
    if q == "abs":
        return True
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method.endswith("_") or method in IMPURE_METHODS or method in RANDOM_FUNCS:
            return False
        return (id(func.value) in assume or ctx.is_tensor(func.value)) and pure(func.value, ctx, assume)
    return False


def pure(node: cst.BaseExpression, ctx: RuleContext, assume: frozenset = frozenset()) -> bool:
    """True when evaluating node has no side effects (conservatively). `assume`: ids of subtrees
    taken as pure tensors (calls a fix evaluates once, before, and replaces with a variable)."""
    if id(node) in assume:
        return True
    if isinstance(node, (cst.Name, *LITERALS)):
        return True
    if isinstance(node, cst.Attribute):
        return pure(node.value, ctx, assume)
    if isinstance(node, cst.BinaryOperation):
        return pure(node.left, ctx, assume) and pure(node.right, ctx, assume)
    if isinstance(node, cst.UnaryOperation):
        return pure(node.expression, ctx, assume)
    if isinstance(node, cst.Comparison):
        return pure(node.left, ctx, assume) and all(pure(c.comparator, ctx, assume) for c in node.comparisons)
    if isinstance(node, cst.BooleanOperation):
        return pure(node.left, ctx, assume) and pure(node.right, ctx, assume)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(not isinstance(e, cst.StarredElement) and pure(e.value, ctx, assume) for e in node.elements)
    if isinstance(node, cst.Subscript):
        if not pure(node.value, ctx, assume):
            return False
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Index):
                if s.star is not None or not pure(s.value, ctx, assume):
                    return False
            elif isinstance(s, cst.Slice):
                if not all(part is None or pure(part, ctx, assume) for part in (s.lower, s.upper, s.step)):
                    return False
        return True
    if isinstance(node, cst.Call):
        return _pure_call(node, ctx, assume)
    if isinstance(node, cst.IfExp):
        return pure(node.test, ctx, assume) and pure(node.body, ctx, assume) and pure(node.orelse, ctx, assume)
    return False


def plain_chain(node: cst.BaseExpression) -> bool:
    """A name, attributes and subscripts (slices, numbers, names) of it: no call to repeat."""
    while True:
        if isinstance(node, cst.Name):
            return True
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Subscript):
            for element in node.slice:
                part = element.slice
                if isinstance(part, cst.Index):
                    if not (isinstance(part.value, cst.Name) or is_number(part.value)):
                        return False
                elif isinstance(part, cst.Slice):
                    if any(b is not None and not (isinstance(b, cst.Name) or is_number(b))
                           for b in (part.lower, part.upper, part.step)):
                        return False
            node = node.value
        else:
            return False

"""DYN130 / DYN120: rows picked by a boolean mask, run through some work and written back through
the same mask, become dense dispatch: the work runs on every row and `torch.where` keeps its
output where the mask is set. Unsafe fix.

    for i, expert in enumerate(self.experts):      for i, expert in enumerate(self.experts):
        mask = expert_id == i                          mask = expert_id == i
        if mask.any():                         ->      out.copy_(torch.where(mask.reshape(mask.shape + (1,) * (out.dim() - mask.dim())),
            out[mask] = expert(x[mask])                                      expert(x), out))

Top-1 mixture-of-experts loops in research code and per-language adapters (X-MOD) are written
this way. `x[mask]` has as many rows as the mask has set elements, a number known only at run
time (a graph break), and so has everything computed from it; `if mask.any():` around it breaks
too. Run on all rows, every shape is static, and the rows the mask picks get the values they got.

Read from the code, not from names: a statement `acc[m] = E` (the sink) with `m` a name the
linter knows to be a boolean tensor and `acc` a name or attribute; before it in the same block,
statements `name = E_i` whose names only the later statements of this run read (the chain). Every
use of `m` in the chain is a selection `v[m]` (rewritten to `v`) or `v[m, j]` with `j` a number
or the index variable of an enclosing `for` over `enumerate()` / `range()` (rewritten to
`v.select(m.dim(), j)`, which picks the same values for every row); nothing else in the chain
selects by a mask or calls a data-dependent-shape operator. Operators that work along a
dimension (`sum`, `softmax`, `cumsum`, `cat`, `unsqueeze`...) are accepted with a negative literal
dimension only (the same trailing axis on the selected rows and on all rows; `dim=0` would sum
over the selection itself); layout operators (`view`, `reshape`, `transpose`...) and reading the
row count (`.shape`, `len()`) refuse the fix. A submodule (`self.norm(...)`) is judged by the
`torch.nn` class its `__init__` builds it from: `Linear`, `LayerNorm`, activations, a softmax along
a negative dimension pass; `BatchNorm*`, attention, Transformer layers and RNNs refuse; any other
is trusted unless its name is a dimension operator's, or `__init__` stores a value that is no
class's instance (a parameter, what a factory such as pykeen's `resolver.make(...)` returns). An `if` that only tests `m` for emptiness
(`m.any()`, `torch.any(m)`, `m.sum() > 0`) and holds just the chain is dropped.

Probed on torch 2.11, 2.13 and 2.14.1 (rule examples: the original breaks, the fixed code is one
graph with equal outputs). Unsafe: the rows get the same values only if every step treats rows independently (linear
layers, activations: an MLP expert or adapter); a step that mixes rows (batch-norm statistics in
train mode, attention over the selected rows) or draws random numbers per row (dropout) differs.
The work now runs on all rows for each pass of the loop (n experts: n times the work) in exchange
for one graph, and with an empty mask it still runs.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import CodePosition

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.kinds import Kind
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import variable_names, variable_reads

from .base import atom_text, class_methods, guarded, make_fix, single_small_statement, source_info
from .imports import torch_reference
from .mask_guard import _tested_mask, unwrapped_if
from .masking import compact_names
from .purity import pure
from .where import may_blow_up
from .statements import string_continuation_rows

# Calls whose output shape depends on values: any left in the chain keeps a break (and would make
# the dense rewrite pointless), so the fix is not offered.
_DATA_DEPENDENT = ("nonzero", "masked_select", "argwhere", "unique", "bincount", "repeat_interleave", "item", "tolist")


def dispatch_fix(ctx: RuleContext, node: cst.CSTNode, code: str = "DYN130"):
    """node: a `v[m]` selection (DYN130) or the emptiness test of an `if` (DYN120)."""
    fn = ctx.fn
    if fn is None:
        return None
    info = source_info(ctx.module, fn)
    guard = None
    if isinstance(node, cst.Subscript):
        mask = _selection_mask(ctx, node)
        stmt = info.parent(node) if mask is not None else None
        while stmt is not None and not isinstance(stmt, cst.SimpleStatementLine):
            stmt = info.parent(stmt)
        if stmt is None:
            return None
        block = info.parent(stmt)
        holder = info.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(holder, cst.If) and holder.orelse is None and _tested_mask(ctx, holder.test) == mask:
            guard = holder
    else:
        mask = _tested_mask(ctx, node)
        guard = info.parent(node)
        if mask is None or not (isinstance(guard, cst.If) and guard.test is node and guard.orelse is None):
            return None
        block = guard.body
        stmt = None
    if not isinstance(block, cst.IndentedBlock):
        return None
    plan = _plan(ctx, info, fn, list(block.body), mask, stmt, whole=guard is not None)
    if plan is None:
        return None
    chain, sink, selections = plan

    def generate(positions, module):
        torch, import_edits = torch_reference(info, positions)
        first_node = guard if guard is not None else chain[0]
        first, last = positions[first_node].start.line, positions[sink].end.line
        if guard is not None and any(string_continuation_rows(positions, s) for s in chain):
            return None  # re-indenting would change a multi-line string's value
        replacements = []
        for sub, extra in selections:
            value = atom_text(info, positions, sub.value)
            text = value if extra is None else f"{value}.select({mask}.dim(), {info.text(positions, extra)})"
            replacements.append((positions[sub].start, positions[sub].end, text))
        assign = single_small_statement(sink)
        target = assign.targets[0]
        acc = info.text(positions, target.target.value)
        cond = f"{mask}.reshape({mask}.shape + (1,) * ({acc}.dim() - {mask}.dim()))"
        # `acc[mask] = value` -> `acc.copy_(torch.where(cond, value, acc))`, the value's text kept
        # whole: an expression's position leaves out its parentheses (`= (\n a + b\n)`), so the
        # call closes after the statement's end, past them, and opens right after the `=`.
        before_eq, after_eq = target.whitespace_before_equal, target.whitespace_after_equal
        if target.target.lpar or type(before_eq) is not cst.SimpleWhitespace or type(after_eq) is not cst.SimpleWhitespace \
                or "\\" in before_eq.value + after_eq.value:
            return None
        target_start, target_end = positions[target.target].start, positions[target.target].end
        value_start = CodePosition(target_end.line, target_end.column + len(before_eq.value) + 1 + len(after_eq.value))
        replacements.append((target_start, value_start, f"{acc}.copy_({torch}.where({cond}, "))
        statement_end = positions[assign].end
        replacements.append((statement_end, statement_end, f", {acc}))"))
        lines = [info.line(row) for row in range(first, last + 1)]
        for start, end, text in sorted(replacements, key=lambda r: (r[0].line, r[0].column), reverse=True):
            a, b = start.line - first, end.line - first
            lines[a:b + 1] = (lines[a][:start.column] + text + lines[b][end.column:]).split("\n")
        if guard is not None:
            lines = unwrapped_if(info, positions, guard, lines)
        else:
            lines[0] = lines[0][len(info.indentation(first)):]
        start_col = positions[first_node].start.column
        edit = Edit(info.newline.join(lines), first, start_col + 1, last, len(info.line(last)) + 1)
        return make_fix(
            UNSAFE,
            f"Run on every row and keep the result where `{mask}` is set (`{torch}.where`): one graph; the "
            "rows keep their values only if each step treats rows independently (no dropout, batch "
            "statistics or attention across rows), and the work runs on all rows",
            list(import_edits) + [edit],
        )

    return guarded(code, generate)


def _selection_mask(ctx: RuleContext, sub: cst.Subscript) -> Optional[str]:
    """`v[m]` / `v[m, j]` with m a boolean tensor name: "m"."""
    if not sub.slice or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    index = sub.slice[0].slice.value
    if not isinstance(index, cst.Name) or ctx.kind(index) != Kind.BOOL_TENSOR:
        return None
    return index.value


def _plan(ctx, info, fn, body: list, mask: str, stmt, whole: bool):
    """(chain statements, sink statement, [(selection, extra index or None)]) or None."""
    at = 0
    if stmt is not None:
        at = next((i for i, s in enumerate(body) if s is stmt), None)
        if at is None:
            return None
    sink_at = next((i for i in range(at, len(body)) if _sink(body[i], mask) is not None), None)
    if sink_at is None:
        return None
    sink = body[sink_at]
    needed = variable_names(single_small_statement(sink).value) - {mask}
    start = sink_at
    for i in range(sink_at - 1, -1, -1):
        small = single_small_statement(body[i])
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value in needed):
            break
        needed |= variable_names(small.value) - {mask}
        start = i
    chain = body[start:sink_at + 1]
    if whole and (start != 0 or sink_at != len(body) - 1):
        return None
    if stmt is not None and not any(s is stmt for s in chain):
        return None
    bound = [single_small_statement(s).targets[0].target.value for s in chain[:-1]]
    if mask in bound or len(set(bound)) != len(bound):
        return None
    acc = single_small_statement(sink).targets[0].target.value
    if not pure(acc, ctx) or any(n.value in bound or n.value == mask for n in iter_nodes(acc) if isinstance(n, cst.Name)):
        return None
    # A name the chain reads but does not bind holds all rows, unless an earlier statement bound
    # it to a selection (`dV = V[active] * 0.1` read by another chain too: botorch's Penicillin).
    free = set().union(*(variable_names(single_small_statement(s).value) for s in chain)) - set(bound) - {mask}
    if free & compact_names(ctx, fn):
        return None
    # What the chain binds is read only by the chain (rows of the selection, not of the whole).
    inside = {id(n) for s in chain for n in iter_nodes(s)}
    for name in bound:
        if any(id(n) not in inside for n in variable_reads(fn, name)):
            return None
    # Run on every row, a `log` / `sqrt` / division of a row the mask leaves out can be infinite:
    # `torch.where` keeps the right values, but its gradient there is 0 times infinity, NaN
    # (nflows' LogTanh: `out[m] = log(x[m])` with a 0 in x). The fix is not offered.
    if any(may_blow_up(single_small_statement(s).value) for s in chain):
        return None
    selections = []
    for s in chain:
        value = single_small_statement(s).value
        found = _selections(ctx, info, fn, value, mask, set(bound))
        if found is None:
            return None
        selections.extend(found)
    if not selections:
        return None
    # The sink's value must come from the selection (`acc[m] = 0.0` is DYN120's mask_guard).
    sink_value = single_small_statement(sink).value
    if not (variable_names(sink_value) & set(bound)) and not any(_within(sub, sink_value) for sub, _ in selections):
        return None
    return chain, sink, selections


def _sink(stmt, mask: str) -> Optional[cst.Assign]:
    """`acc[m] = value` as a statement of its own."""
    small = single_small_statement(stmt)
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    target = small.targets[0].target
    if not (isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
        return None
    index = target.slice[0].slice.value
    if not (isinstance(index, cst.Name) and index.value == mask and isinstance(target.value, (cst.Name, cst.Attribute))):
        return None
    return small


def _within(node: cst.CSTNode, root: cst.CSTNode) -> bool:
    return any(n is node for n in iter_nodes(root))


def _selections(ctx, info, fn, expr: cst.BaseExpression, mask: str, chain_names: set):
    """The mask selections in expr, each (subscript, second index or None); None where the mask is
    used any other way, something else in expr has a data-dependent shape, selected values index
    another tensor (`msg[argmax[mask]]`: the rows not selected may hold invalid indices), or a call
    may mix rows."""
    out, allowed = [], set()
    for n in iter_nodes(expr):
        if isinstance(n, cst.SubscriptElement) and any(
            _is_selection(m, mask) or isinstance(m, cst.Name) and m.value in chain_names for m in iter_nodes(n)
        ):
            return None
        if isinstance(n, cst.Call) and not _callee_rowwise(ctx, info, fn, n):
            return None
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.MatrixMultiply) and any(
            _is_selection(m, mask) or isinstance(m, cst.Name) and m.value in chain_names for m in iter_nodes(n.right)
        ):
            return None  # `a[m] @ b[m].T` pairs the selected rows with each other
        if _is_selection(n, mask):
            if len(n.slice) == 1:
                out.append((n, None))
            elif len(n.slice) == 2 and isinstance(n.slice[1].slice, cst.Index) and n.slice[1].slice.star is None \
                    and n.slice[0].slice.star is None and _loop_index(info, n, n.slice[1].slice.value):
                out.append((n, n.slice[1].slice.value))
            else:
                return None
            allowed.add(id(n.slice[0].slice.value))
            continue
        if isinstance(n, cst.Subscript) and any(
            isinstance(el.slice, cst.Index) and ctx.kind(el.slice.value) == Kind.BOOL_TENSOR for el in n.slice
        ):
            return None
        if isinstance(n, cst.Call):
            func = n.func
            name = func.attr.value if isinstance(func, cst.Attribute) else (func.value if isinstance(func, cst.Name) else "")
            if name in _DATA_DEPENDENT or ctx.call_name(n) == "torch.where" and len(n.args) == 1:
                return None
            # A submodule whose torch.nn class treats rows one by one passes whatever its name
            # (`self.norm = nn.LayerNorm(d)`); otherwise the name's dimension rules apply.
            if not _rowwise(ctx, n) and not (
                isinstance(func, cst.Attribute) and _self_attr(func) and _submodule_rows(ctx, info, fn, func.attr.value)
            ):
                return None
        if isinstance(n, cst.Attribute) and n.attr.value in ("shape", "T", "mT", "ndim") \
                or isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "len":
            return None  # the selection's row count (or layout) read as a value
    if any(isinstance(n, cst.Name) and n.value == mask and id(n) not in allowed
           for n in iter_nodes(expr)):
        return None
    return out


# Operators that combine or lay out values along a dimension: on the selected rows (k, ...) a
# leading or positive dimension means another axis than on all rows (B, T, ...). A negative
# literal dimension names the same trailing axis in both, so only that form is accepted.
_ALONG_DIM = frozenset(
    """sum mean max min amax amin std var norm prod cumsum cumprod sort argsort topk softmax
    log_softmax logsumexp argmax argmin any all median mode cat concat concatenate stack squeeze
    unsqueeze flatten unflatten split chunk unbind narrow select flip roll movedim""".split()
)
# Operators whose arguments are a whole shape or axis order: refused (`x[m].view(-1, h, d)`).
_LAYOUT = frozenset("view reshape transpose permute expand expand_as repeat t swapaxes swapdims index_select gather scatter".split())


def _rowwise(ctx, call: cst.Call) -> bool:
    """Does the call act the same on the selected rows and on all rows, as far as its arguments
    tell? Unknown calls (modules, activations) are taken to work row by row (the fix says so)."""
    func = call.func
    q = ctx.call_name(call) or ""
    if isinstance(func, cst.Attribute) and not q.startswith("torch."):
        op, method = func.attr.value, True
    elif q.startswith("torch."):
        op, method = q.rsplit(".", 1)[1], False
    else:
        return True
    if op in _LAYOUT:
        return False
    if op not in _ALONG_DIM:
        return True
    dims = [a.value for a in call.args if a.keyword is not None and a.keyword.value in ("dim", "axis")]
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if not dims:
        # Method: `v.sum(-1)`; function: `torch.sum(v, -1)`, `torch.cat([a, b], -1)`.
        at = 0 if method else 1
        if op in ("topk", "split", "chunk", "narrow", "select", "roll"):
            at += 1  # the size, count or index comes first
        dims = positional[at:at + 1]
    return bool(dims) and all(_negative_literal(d) for d in dims)


def _negative_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
        and isinstance(node.expression, cst.Integer)


def _is_selection(node: cst.CSTNode, mask: str) -> bool:
    return isinstance(node, cst.Subscript) and bool(node.slice) and isinstance(node.slice[0].slice, cst.Index) \
        and isinstance(node.slice[0].slice.value, cst.Name) and node.slice[0].slice.value.value == mask


# torch functions that relate rows to each other by their values or positions.
_ACROSS_ROWS = frozenset(
    """scatter scatter_add scatter_reduce index_add index_copy index_fill index_put index_reduce take
    take_along_dim bmm matmul mm einsum cdist tensordot kron outer inner dot vdot cross_entropy
    nll_loss mse_loss l1_loss batch_norm instance_norm group_norm""".split()
)


def _callee_rowwise(ctx, info, fn, call: cst.Call) -> bool:
    """May the call be taken to treat rows independently? A submodule (`self.proj(...)`,
    `self.adapters[k](...)`, an element of `self.experts` taken by the loop), a tensor method or a
    torch function whose dimensions allow it; not a plain function, whose grouping of rows is
    unknown (PyG's `softmax(src, index)` normalises over rows sharing an index)."""
    func = call.func
    q = ctx.call_name(call) or ""
    if q.startswith("torch."):
        return q.rsplit(".", 1)[1] not in _ACROSS_ROWS and _rowwise(ctx, call)
    if isinstance(func, cst.Attribute):
        owner = func.value
        if isinstance(owner, cst.Name) and owner.value == "self":
            # a submodule, not a method; one the class builds from a torch.nn class that mixes
            # rows is refused (BatchNorm's batch statistics, attention, RNNs)
            return func.attr.value not in class_methods(info, fn) and _submodule_rows(ctx, info, fn, func.attr.value) is not False
        return func.attr.value not in _ACROSS_ROWS and _rowwise(ctx, call)
    if isinstance(func, cst.Subscript):
        return _self_attr(func.value)
    if isinstance(func, cst.Name):
        return _module_loop_target(info, call, func.value)
    return False


# torch.nn modules that treat rows one by one, and those that relate rows to each other.
_ROW_MODULES = frozenset(
    """Linear Bilinear LayerNorm RMSNorm Identity Dropout GELU ReLU ReLU6 SiLU Mish Tanh Sigmoid
    LeakyReLU ELU SELU CELU Softplus Softsign Hardswish Hardsigmoid Hardtanh GLU PReLU""".split()
)
_ACROSS_ROW_MODULES = frozenset(
    """BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm LazyBatchNorm1d LazyBatchNorm2d
    LazyBatchNorm3d MultiheadAttention Transformer TransformerEncoder TransformerDecoder
    TransformerEncoderLayer TransformerDecoderLayer LSTM GRU RNN""".split()
)


def _submodule_rows(ctx, info, fn, attr: str) -> Optional[bool]:
    """Does `self.<attr>` treat rows one by one, as far as the `torch.nn` class its `__init__`
    builds it from tells? True (a row-wise module; `nn.Softmax` along a negative dimension),
    False (a module that mixes rows: batch statistics, attention, recurrence; a softmax along
    a leading or positive one), None (built otherwise, or not found)."""
    init = class_methods(info, fn).get("__init__")
    if init is None:
        return None
    values = [
        n.value for n in iter_nodes(init) if isinstance(n, cst.Assign)
        and any(isinstance(t.target, cst.Attribute) and _self_attr(t.target) and t.target.attr.value == attr for t in n.targets)
    ]
    if len(values) != 1:
        return None
    if not isinstance(values[0], cst.Call):
        return False  # a module handed in (`self.fn = fn`): its work is unknown
    q = ctx.qualname(values[0].func) or ""
    if not q.startswith("torch.nn."):
        # A class built here is trusted, as any submodule; what a factory returns is not known to
        # be a module of that kind at all (pykeen's `edge_weight_resolver.make(...)` counts
        # degrees over the rows it is given).
        return None if q.rsplit(".", 1)[-1][:1].isupper() else False
    name = q.rsplit(".", 1)[1]
    if name in ("Softmax", "LogSoftmax", "Softmin"):
        dims = [a.value for a in values[0].args if a.keyword is None or a.keyword.value == "dim"]
        return bool(dims) and _negative_literal(dims[0])
    if name in _ROW_MODULES:
        return True
    if name in _ACROSS_ROW_MODULES:
        return False
    return None


def _module_loop_target(info, node: cst.CSTNode, name: str) -> bool:
    """`name` is bound by an enclosing `for` over `self.<attr>` (also through `enumerate()` /
    `zip()`): an element of a module list."""
    for loop in _enclosing_loops(info, node):
        if any(isinstance(n, cst.Name) and n.value == name for n in iter_nodes(loop.target)):
            it = loop.iter
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in ("enumerate", "zip"):
                return any(_self_attr(a.value) for a in it.args)
            return _self_attr(it)
    return False


def _enclosing_loops(info, node: cst.CSTNode):
    """The `for` statements around node within its function, innermost first."""
    cur = info.parent(node)
    while cur is not None and not isinstance(cur, cst.FunctionDef):
        if isinstance(cur, cst.For):
            yield cur
        cur = info.parent(cur)


def _self_attr(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _loop_index(info, node: cst.CSTNode, index: cst.BaseExpression) -> bool:
    """A number, or the index variable of an enclosing `for i in range(...)` / `for i, _ in
    enumerate(...)`: an int, which `select` takes."""
    if isinstance(index, cst.Integer):
        return True
    if not isinstance(index, cst.Name):
        return False
    for loop in _enclosing_loops(info, node):
        if isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name):
            kind = loop.iter.func.value
            target = loop.target
            if kind == "range" and isinstance(target, cst.Name) and target.value == index.value:
                return True
            if kind == "enumerate" and isinstance(target, cst.Tuple) and target.elements \
                    and isinstance(target.elements[0].value, cst.Name) and target.elements[0].value.value == index.value:
                return True
    return False

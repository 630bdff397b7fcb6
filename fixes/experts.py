"""DYN130: a mixture-of-experts loop that gathers each expert's tokens by index becomes dense
dispatch: every expert runs on all tokens, weighted by its routing mask. Unsafe fix.

    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
        current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
        out = self.experts[expert_idx[0]](current_state) * routing_weights[top_x, idx, None]
        final.index_add_(0, top_x, out.to(hidden_states.dtype))
->
    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0)
    for expert_idx in [[e] for e in range(expert_hit.shape[0])]:
        routing_mask = expert_mask[expert_idx].squeeze(0) != 0
        current_state = hidden_states[None].reshape(-1, hidden_dim)
        out = self.experts[expert_idx[0]](current_state) * torch.einsum(
            "tk...,kt->t...", routing_weights, routing_mask.to(routing_weights.dtype))[:, None]
        final.add_(out.to(hidden_states.dtype))

`torch.where(mask)` gives the (slot, token) pairs routed to the expert, a number only known at
run time (a graph break); the gathered rows, the expert's output and the scatter back all have
that length. Dense dispatch keeps every shape static: the expert sees all tokens, and each
token's output is multiplied by the sum of its routing weights for that expert over the slots
(zero for tokens not routed to it), which is what `index_add_` accumulated for it. The loop over
the hit experts (`.nonzero()`, another break) becomes a loop over all expert indices, each a
one-element list so that `expert_idx[0]` and `x[expert_idx]` mean what they meant for a row of
`nonzero()`'s output.

Offered only for this shape of loop, read from the code, not from names: one `a, b =
torch.where(m)` in the loop body; the token indices `b` used only to gather rows (`x[b]`,
`x[None, b]`), as the row index of a weight (`w[b, a]`, `w[b, a, None]`) and in one
`final.index_add_(0, b, v)` (or in an `if` on their count that only `continue`s, dropped);
`v` the product of some value and such a weight (through a name assigned once in the loop, and
`.to(...)`); the loop over `h.nonzero()` (a name read only by the loop) or over `range(...)`.

The where may sit alone in a `with torch.no_grad():` (DBRX). Where the routing mask has a class
past the last expert (`one_hot(idx, num_classes=n + 1)`), the dense loop visits that class too,
so the loop must skip it (`if e == n: continue`, as mistral4 and dots1 do); without that skip the
fix is refused (DBRX: its experts indexed with the extra class would fail).

Unsafe: it is the same sum only if the expert handles each token on its own (row-wise layers,
as MLP experts are) and its output is finite for tokens not routed to it (0 * inf is nan); it
does the work of every expert on every token (top-k of n experts: n / k times the expert
compute) in exchange for one graph; and the float summation order differs.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import variable_names

from .base import atom_text, delete_lines, guarded, make_fix, replace_node, single_small_statement, source_info
from .buffers import store_targets
from .imports import torch_reference

_COUNT_TESTS = ("shape", "numel", "len")


def expert_loop_fix(ctx: RuleContext, node: cst.CSTNode, code: str = "DYN130"):
    """The fix for a `.nonzero()` whose result a loop iterates, or for the one-argument
    `torch.where` in that loop's body (both findings get the same edits, applied once)."""
    fn = ctx.fn
    if fn is None:
        return None
    info = source_info(ctx.module, fn)
    loop = hit = None
    if _is_nonzero(ctx, node):
        hit = _hit_assignment(info, node)
        loop = _loop_over(fn, hit) if hit is not None else None
    elif ctx.call_name(node) == "torch.where":
        loop = _enclosing_loop(info, node)
        if loop is not None and isinstance(loop.iter, cst.Name):
            hit = _nonzero_assignment(ctx, fn, loop.iter.value)
            if hit is None:
                return None
        elif loop is not None and not _static_iterable(ctx, loop.iter):
            return None
    if loop is None:
        return None
    plan = _plan(ctx, loop)
    if plan is None or _unguarded_extra_class(fn, loop):
        return None
    # `for v in hit: e = int(v.item())` (LongCat-Flash): the loop runs over `range(n)` as `e`.
    as_int = _int_of_loop_variable(loop) if hit is not None else None
    if hit is not None and as_int is None and not _loop_variable_used_as_index_only(loop):
        return None
    used = variable_names(fn)
    mask_name = next((n for n in ("routing_mask", "expert_routing_mask", "dense_routing_mask") if n not in used), None)
    if mask_name is None:
        return None

    def generate(positions, module):
        torch, import_edits = torch_reference(info, positions)
        edits = list(import_edits)
        if hit is not None:
            assign, call = hit
            edits.append(replace_node(positions, call, atom_text(info, positions, _nonzero_source(call))))
            name = loop.iter.value
            if as_int is not None:
                first, int_name = as_int
                edits.append(replace_node(positions, loop.target, int_name))
                edits.append(replace_node(positions, loop.iter, f"range({name}.shape[0])"))
                rng = positions[first]
                edits.append(delete_lines(rng.start.line, rng.end.line))
            else:
                edits.append(replace_node(positions, loop.iter, f"[[e] for e in range({name}.shape[0])]"))
        where_stmt, (slots, tokens), mask = plan["where"]
        target = where_stmt.body[0].targets[0].target
        edits.append(replace_node(positions, target, mask_name))
        edits.append(replace_node(positions, where_stmt.body[0].value, f"{atom_text(info, positions, mask)} != 0"))
        for sub, replacement in plan["gathers"]:
            value = atom_text(info, positions, sub.value)
            if replacement == "rows":
                edits.append(replace_node(positions, sub, value))
            elif replacement == "rows_none":
                edits.append(replace_node(positions, sub, f"{value}[None]"))
            else:
                weight = (
                    f'{torch}.einsum("tk...,kt->t...", {info.text(positions, sub.value)}, '
                    f"{mask_name}.to({value}.dtype))"
                )
                edits.append(replace_node(positions, sub, weight + ("[:, None]" if replacement == "weight_none" else "")))
        call = plan["index_add"]
        receiver = info.text(positions, call.func.value)
        edits.append(replace_node(positions, call, f"{receiver}.add_({info.text(positions, call.args[2].value)})"))
        for stmt in plan["drop"]:
            rng = positions[stmt]
            edits.append(delete_lines(rng.start.line, rng.end.line))
        return make_fix(
            UNSAFE,
            "Run every expert on all tokens weighted by its routing mask (dense dispatch: one graph, "
            "more compute; same sum only for row-wise experts)",
            edits,
        )

    return guarded(code, generate)


# --------------------------------------------------------------------------------------------
# The loop


def _is_nonzero(ctx: RuleContext, node: cst.CSTNode) -> bool:
    """`h.nonzero()` / `torch.nonzero(h)`, also with `as_tuple=False` (the default: rows)."""
    if not isinstance(node, cst.Call):
        return False
    args = [a for a in node.args if not _as_tuple_false(a)]
    if ctx.call_name(node) == "torch.nonzero":
        return len(args) == 1 and args[0].keyword is None and not args[0].star
    return isinstance(node.func, cst.Attribute) and node.func.attr.value == "nonzero" and not args


def _as_tuple_false(arg: cst.Arg) -> bool:
    return arg.keyword is not None and arg.keyword.value == "as_tuple" and isinstance(arg.value, cst.Name) \
        and arg.value.value == "False"


def _nonzero_source(call: cst.Call) -> cst.BaseExpression:
    args = [a for a in call.args if not _as_tuple_false(a)]
    return args[0].value if args else call.func.value


def _hit_assignment(info, call: cst.Call) -> Optional[tuple[cst.Assign, cst.Call]]:
    """`name = <call>` as a statement of its own."""
    assign = info.parent(call)
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
        return None
    if not isinstance(assign.targets[0].target, cst.Name):
        return None
    return (assign, call) if single_small_statement(info.parent(assign)) is assign else None


def _stores_and_reads(fn: cst.FunctionDef, name: str) -> tuple[list, list]:
    """(assignments binding name, Name nodes reading it) in fn."""
    stores, store_ids = [], set()
    for node, targets in store_targets(fn):
        for t in targets:
            for n in iter_nodes(t):
                if isinstance(n, cst.Name) and n.value == name:
                    stores.append(node)
                    store_ids.add(id(n))
    reads = [n for n in iter_nodes(fn) if isinstance(n, cst.Name) and n.value == name and id(n) not in store_ids]
    return stores, reads


def _loop_over(fn: cst.FunctionDef, hit: tuple[cst.Assign, cst.Call]) -> Optional[cst.For]:
    """The one `for ... in name:` that is the only reader of the hit list, assigned only there."""
    name = hit[0].targets[0].target.value
    stores, reads = _stores_and_reads(fn, name)
    if len(stores) != 1 or stores[0] is not hit[0] or len(reads) != 1:
        return None
    for node in iter_nodes(fn):
        if isinstance(node, cst.For) and node.iter is reads[0] and node.orelse is None and node.asynchronous is None:
            return node
    return None


def _nonzero_assignment(ctx: RuleContext, fn: cst.FunctionDef, name: str):
    stores, reads = _stores_and_reads(fn, name)
    if len(stores) != 1 or len(reads) != 1 or not isinstance(stores[0], cst.Assign):
        return None
    assign = stores[0]
    if len(assign.targets) != 1 or not _is_nonzero(ctx, assign.value):
        return None
    return assign, assign.value


def _enclosing_loop(info, call: cst.Call) -> Optional[cst.For]:
    """The `for` whose body holds `a, b = <call>` as a statement of its own (or as the only
    statement of a `with torch.no_grad():` there, as DBRX writes it)."""
    assign = info.parent(call)
    line = info.parent(assign) if isinstance(assign, cst.Assign) else None
    block = info.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    loop = info.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if isinstance(loop, cst.With) and _no_grad_only(loop):
        block = info.parent(loop)
        loop = info.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if isinstance(loop, cst.For) and loop.orelse is None and loop.asynchronous is None:
        return loop
    return None


def _unguarded_extra_class(fn: cst.FunctionDef, loop: cst.For) -> bool:
    """`one_hot(idx, num_classes=n + 1)` (a class past the last expert, for tokens routed nowhere)
    with no `if e == n: continue` in the loop: the dense loop visits every class, and indexing
    the experts with the extra one fails where the original never reached it (DBRX)."""
    extras = [
        cst.Module([]).code_for_node(arg.value.left)
        for node in iter_nodes(fn)
        if isinstance(node, cst.Call) and isinstance(node.func, (cst.Attribute, cst.Name))
        and (node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value) == "one_hot"
        for arg in node.args
        if arg.keyword is not None and arg.keyword.value == "num_classes" and isinstance(arg.value, cst.BinaryOperation)
        and isinstance(arg.value.operator, cst.Add) and isinstance(arg.value.right, cst.Integer) and arg.value.right.value == "1"
    ]
    if not extras:
        return False
    for stmt in loop.body.body:
        if isinstance(stmt, cst.If) and stmt.orelse is None and len(stmt.body.body) == 1 \
                and isinstance(single_small_statement(stmt.body.body[0]), cst.Continue) \
                and isinstance(stmt.test, cst.Comparison) and len(stmt.test.comparisons) == 1 \
                and isinstance(stmt.test.comparisons[0].operator, cst.Equal):
            sides = {cst.Module([]).code_for_node(stmt.test.left), cst.Module([]).code_for_node(stmt.test.comparisons[0].comparator)}
            if any(e in sides for e in extras):
                return False
    return True


def _no_grad_only(stmt: cst.CSTNode) -> bool:
    """`with torch.no_grad():` around one statement: gradients do not matter to a boolean mask."""
    if not (isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock) and len(stmt.body.body) == 1):
        return False
    return len(stmt.items) == 1 and stmt.items[0].asname is None and \
        cst.Module([]).code_for_node(stmt.items[0].item) in ("torch.no_grad()", "no_grad()")


def _static_iterable(ctx: RuleContext, node: cst.BaseExpression) -> bool:
    """`range(...)`: the expert indices, known while tracing."""
    return isinstance(node, cst.Call) and ctx.call_name(node) == "range"


def _loop_variable_used_as_index_only(loop: cst.For) -> bool:
    """A row of `nonzero()` is used as `v[0]` or as a whole index `x[v]`: a one-element list
    means the same there (anything else, such as `v.item()` or arithmetic, differs). After a
    first statement `v = v[0]` the rest reads a 0-d tensor before and an int after: both index,
    compare and format alike, so only attribute access (`v.item()`) is refused."""
    if not isinstance(loop.target, cst.Name) or not isinstance(loop.body, cst.IndentedBlock):
        return False
    var = loop.target.value
    body = list(loop.body.body)
    if body and _is_first_element(body[0], var):
        later = body[1:]
        return not any(
            isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == var
            for s in later
            for n in iter_nodes(s)
        )
    ok = set()
    for node in iter_nodes(loop.body):
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            index = node.slice[0].slice.value
            if isinstance(node.value, cst.Name) and node.value.value == var and _is_zero(index):
                ok.add(id(node.value))
            elif isinstance(index, cst.Name) and index.value == var:
                ok.add(id(index))
    return all(not (isinstance(n, cst.Name) and n.value == var) or id(n) in ok for n in iter_nodes(loop.body))


def _is_zero(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


def _int_of_loop_variable(loop: cst.For):
    """(first statement, name) where the body starts with `name = int(v.item())`, `name =
    v.item()` or `name = int(v)` for the loop variable v (a row of `nonzero()`), read nowhere
    else: over `range(n)` the loop gives that int itself."""
    if not isinstance(loop.target, cst.Name) or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
        return None
    var, first = loop.target.value, loop.body.body[0]
    assign = single_small_statement(first)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)):
        return None
    text = cst.Module([]).code_for_node(assign.value).replace(" ", "")
    if text not in (f"int({var}.item())", f"{var}.item()", f"int({var})", f"int({var}[0])"):
        return None
    name = assign.targets[0].target.value
    if name == var or any(isinstance(n, cst.Name) and n.value == var for s in loop.body.body[1:] for n in iter_nodes(s)):
        return None
    return first, name


def _is_first_element(stmt: cst.CSTNode, var: str) -> bool:
    """`v = v[0]`."""
    assign = single_small_statement(stmt)
    if not isinstance(assign, cst.Assign):
        return False
    target, value = assign.targets[0].target, assign.value
    return (
        len(assign.targets) == 1
        and isinstance(target, cst.Name)
        and target.value == var
        and isinstance(value, cst.Subscript)
        and isinstance(value.value, cst.Name)
        and value.value.value == var
        and len(value.slice) == 1
        and isinstance(value.slice[0].slice, cst.Index)
        and _is_zero(value.slice[0].slice.value)
    )


# --------------------------------------------------------------------------------------------
# The body


def _where_statement(ctx: RuleContext, stmt: cst.CSTNode):
    """`a, b = torch.where(m)`: (statement, (a, b), m)."""
    assign = single_small_statement(stmt)
    if not isinstance(assign, cst.Assign):
        return None
    call = assign.value
    if len(assign.targets) != 1 or not isinstance(call, cst.Call) or ctx.call_name(call) != "torch.where":
        return None
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != 2:
        return None
    names = [e.value for e in target.elements]
    if not all(isinstance(n, cst.Name) and not isinstance(e, cst.StarredElement) for n, e in zip(names, target.elements)):
        return None
    if names[0].value == names[1].value:
        return None
    return stmt, (names[0].value, names[1].value), call.args[0].value


def _index_add(stmt: cst.CSTNode, tokens: str) -> Optional[cst.Call]:
    """`final.index_add_(0, tokens, v)` as a statement: the call."""
    expr = single_small_statement(stmt)
    if not isinstance(expr, cst.Expr):
        return None
    call = expr.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "index_add_"):
        return None
    args = call.args
    if len(args) != 3 or any(a.keyword is not None or a.star for a in args):
        return None
    if not _is_zero(args[0].value):
        return None
    if not (isinstance(args[1].value, cst.Name) and args[1].value.value == tokens):
        return None
    return call if isinstance(call.func.value, cst.Name) else None


def _count_skip(stmt: cst.CSTNode, tokens: str) -> bool:
    """`if b.shape[0] == 0: continue` / `if b.numel() == 0:` / `if len(b) == 0:` (nothing else)."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return False
    body = stmt.body.body
    if len(body) != 1 or not isinstance(single_small_statement(body[0]), cst.Continue):
        return False
    test = stmt.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    if not _is_zero(test.comparisons[0].comparator):
        return False
    code = cst.Module([]).code_for_node(test.left)
    return code in (f"{tokens}.shape[0]", f"{tokens}.numel()", f"len({tokens})", f"{tokens}.size(0)")


def _classify(sub: cst.Subscript, slots: str, tokens: str) -> Optional[str]:
    """How a subscript that mentions the indices is rewritten, or None if it cannot be."""
    elements = [e.slice for e in sub.slice]
    if not all(isinstance(e, cst.Index) and e.star is None for e in elements):
        return None
    values = [e.value for e in elements]

    def is_name(v, name):
        return isinstance(v, cst.Name) and v.value == name

    def is_none(v):
        return isinstance(v, cst.Name) and v.value == "None"

    if len(values) == 1 and is_name(values[0], tokens):
        return "rows"
    if len(values) == 2 and is_none(values[0]) and is_name(values[1], tokens):
        return "rows_none"
    if len(values) >= 2 and is_name(values[0], tokens) and is_name(values[1], slots):
        if len(values) == 2:
            return "weight"
        if len(values) == 3 and is_none(values[2]):
            return "weight_none"
    return None


def _plan(ctx: RuleContext, loop: cst.For) -> Optional[dict]:
    if not isinstance(loop.body, cst.IndentedBlock):
        return None
    statements = list(loop.body.body)
    found = [(i, w) for i, s in enumerate(statements)
             if (w := _where_statement(ctx, s.body.body[0] if _no_grad_only(s) else s)) is not None]
    if len(found) != 1:
        return None
    where_index, where = found[0]
    _, (slots, tokens), _ = where
    after = statements[where_index + 1 :]
    adds = [(i, c) for i, s in enumerate(after) if (c := _index_add(s, tokens)) is not None]
    if len(adds) != 1:
        return None
    add_index, index_add = adds[0]
    drop = [s for s in after[:add_index] if _count_skip(s, tokens)]
    # Every other use of the two index names must be one of the gathers.
    gathers, ok = [], {id(index_add.args[1].value)}
    for stmt in drop:
        ok |= {id(n) for n in iter_nodes(stmt)}
    where_targets = {id(n) for n in iter_nodes(where[0].body[0].targets[0].target)}
    for node in iter_nodes(loop.body):
        if isinstance(node, cst.Subscript) and id(node) not in ok:
            kind = _classify(node, slots, tokens)
            if kind is not None:
                gathers.append((node, kind))
                ok |= {id(e.slice.value) for e in node.slice}
    for node in iter_nodes(loop.body):
        if isinstance(node, cst.Name) and node.value in (slots, tokens) and id(node) not in ok and id(node) not in where_targets:
            return None
    if any(s is not where[0] and i != where_index and _binds(s, (slots, tokens)) for i, s in enumerate(statements)):
        return None
    if not any(kind.startswith("weight") for _, kind in gathers):
        return None
    if not _weighted(index_add.args[2].value, statements[where_index + 1 : where_index + 1 + add_index], {id(n) for n, k in gathers if k.startswith("weight")}):
        return None
    return {"where": where, "gathers": gathers, "index_add": index_add, "drop": drop}


def _binds(stmt: cst.CSTNode, names) -> bool:
    return any(
        isinstance(n, cst.Name) and n.value in names
        for node, targets in store_targets(stmt)
        if not isinstance(node, cst.WithItem)
        for t in targets
        for n in iter_nodes(t)
    )


def _peel(value: cst.BaseExpression) -> cst.BaseExpression:
    """`v.to(...)` / `v.type_as(...)` -> v (a dtype or device change keeps the zeros zero)."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("to", "type_as"):
        value = value.func.value
    return value


def _weighted(value: cst.BaseExpression, between: list, weight_ids: set) -> bool:
    """The scattered value is `something * weight`: tokens not routed to the expert add zero."""
    value = _peel(value)
    if isinstance(value, cst.Name):
        binding = [i for i, s in enumerate(between) if _binds(s, (value.value,))]
        if not binding:
            return False
        last = between[binding[-1]]
        assign = single_small_statement(last)
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)):
            return False
        value = _peel(assign.value)
    if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply)):
        return False
    return id(value.left) in weight_ids or id(value.right) in weight_ids

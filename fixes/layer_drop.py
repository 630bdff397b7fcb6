"""DYN120: LayerDrop with a positive probability becomes a select: the layer always runs and its
output is kept only when the layer is not dropped. Unsafe fix.

    for layer in self.layers:                              for layer in self.layers:
        if self.training and self.layerdrop > 0.0:             if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])                   dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:   ->          layer_output = layer(h, mask)
                continue                                           h = torch.where(dropout_probability < self.layerdrop, h, layer_output)
        h = layer(h, mask)                                         continue
                                                               h = layer(h, mask)

Skipping a layer on a random draw is a Python branch on a tensor: a graph break per layer in
train mode (with a positive probability, which M2M100 and NLLB-MoE have by default). The
select keeps one graph: the draw is made as before, the layer runs after it, and
`torch.where` keeps the input when the draw falls under the probability. The path without
LayerDrop (eval mode, probability 0) is left as it was, so inference is the same program.

Three shapes of transformers' loops over layers are recognised, read from the code: the draw's
test decides `continue` (above); it sets a flag, `if draw < p: to_drop = True`, that a following
`if not to_drop: h = layer(...)` reads; or the flag is the comparison itself, `skip = draw < p`,
read by `if not skip or synced_gpus: h = layer(...)` (the other operands Python values, for which
the layer's output is kept as before) and optionally `if skip: continue`, or by `if skip and not
synced_gpus: continue` followed by the layer run (SpeechT5's decoder). Each time the draw sits
in an `if` with no `else` that tests Python values only (the `self.training and self.layerdrop >
0.0` guard), the layer step is one `h = <call>` that reads `h` and ends the loop body, and the
flag is read nowhere else. Two unguarded shapes of transformers 5.17 too, the draw made in the
loop body: `if self.training and (draw < p): continue` / `else: h = layer(...)` ending the body
(the `if` becomes the call and `h = torch.where(...) if self.training else layer_output`), and
`skip = self.training and draw < p` read by `if not skip or synced_gpus:` and `if skip:
continue` (the flag and both tests become the call and the select).

The draw's test deciding `continue` may also sit in the loop body itself, unguarded and with no
`else`, the layer run after it (transformers' MusicGen decoders): the `if` through the layer run
becomes the call and the select. Where the draw is Python's (`random.uniform(0, 1)`,
`random.random()`: DYN105 reports the branch), it is made with `torch.rand([])` instead, so
`torch.where` has a tensor to select by; only where every binding of the draw is in this loop.
A draw made in the test itself (research code: `if self.training and random.random() < p:
continue`, also `torch.rand(1)`, `random.uniform(0, 1)`, `np.random.random()`) moves into the
select, made after the layer runs (`torch.rand([])` in place of Python's or NumPy's draw).

The layer step may return a tuple: `h, attn = layer(h)` (the fresh name takes `h`'s place), or
`layer_outputs = layer(h)` (also as an `if`/`else` for gradient checkpointing) then `h =
layer_outputs[0]`, the select taking `layer_outputs[0]`. Plain assignments before the step
(`past_key_value = past_key_values[idx]`) and `if` statements after it that only collect the
layer's other outputs (attentions, caches) are copied into the guarded branch with it; so is the
`to_drop` form whose dropped arm binds the outputs to `None` (`if to_drop: layer_outputs = (None,
None)` / `else:` the step), as in transformers' LED, MVP and FSMT encoders, and the flag read by
`if not skip or synced:` running the layer then `if skip: layer_outputs = (None, None)` before
the collecting statements (the wav2vec2 family of transformers 4.x, with `skip = True if
self.training and (draw < p) else False`, and SpeechT5's encoder).

Unsafe: a dropped layer still costs its compute (LayerDrop's saving is spent: about `p` of the
layers' work), its parameters get zero gradients instead of none (an optimizer with momentum or
weight decay still updates them on that step), dropout inside the layer draws random numbers on
every layer (the random stream after the first dropped layer differs), and a layer that updates
state (a cache) does so when dropped too; with `output_attentions` in train mode a dropped layer's
attentions are collected (the original collected none, or `None`). The output is the same
function of the draws (of torch's generator where the draw was Python's).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import CodePosition

from dynalint.findings import UNSAFE, Edit
from dynalint.lint.draws import and_operands, comparison_with_draw, drawn_side, is_python_uniform_draw
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.rule import RuleContext
from dynalint.lint.variables import identifiers

from .base import ATOMIC, comment_rows, delete_lines, guarded, make_fix, replace_node, single_small_statement, source_info
from .buffers import store_targets
from .imports import torch_reference
from .statements import string_continuation_rows
from .cond import _statement_lines
from .where import _assigned_name, _fresh


def layer_drop_fix(ctx: RuleContext, node: cst.BaseExpression, code: str = "DYN120"):
    """node: the reported tensor condition (the draw's comparison, or the flag where a later
    statement tests it)."""
    fn = ctx.fn
    if fn is None:
        return None
    info = source_info(ctx.module, fn)
    loop = _enclosing_loop(ctx, info, node)
    if loop is None:
        return None
    memo = ctx.rule_state("layer_drop")
    if id(loop) not in memo:
        memo[id(loop)] = (loop, _plan(ctx, fn, loop))
    plan = memo[id(loop)][1]
    if plan is None or id(node) not in plan["owns"]:
        return None

    def generate(positions, module):
        torch, import_edits = torch_reference(info, positions)
        last, step = plan["last"], plan["step"]
        target = step["target"]
        indent = info.indentation(positions[last].start.line)
        copied = step["prelude"] + [step["call"]] + step["tail"]
        # Copied statements are re-indented to the guard's body (not where a multi-line string
        # spans them: re-indenting would change its value).
        if any(string_continuation_rows(positions, stmt) for stmt in copied):
            return None
        def reindented(stmts):
            return [line for stmt in stmts for line in _statement_lines(info, positions, stmt, indent, set())]

        def gap(before, after):  # a blank line where the source has one between two statements
            rows = range(positions[before].end.line + 1, positions[after].start.line)
            return [""] if any(not info.line(row).strip() for row in rows) else []

        def joined(stmts):
            return [line for i, stmt in enumerate(stmts) for line in (gap(stmts[i - 1], stmt) if i else []) + reindented([stmt])]

        prelude, call = joined(step["prelude"]), reindented([step["call"]])
        if step["prelude"]:
            prelude += gap(step["prelude"][-1], step["call"])
        if step["rename"] is not None:  # `h = layer(h)` / `h, attn = layer(h)`: bound to a fresh name
            old_target, make_target = step["rename"]
            if not call[0][len(indent):].startswith(old_target):
                return None
            output = _fresh("layer_output", identifiers(fn))
            call[0] = indent + make_target(output) + call[0][len(indent) + len(old_target):]
        else:  # `out = layer(h)` then `h = out[0]`: the tail reads `out`, so it keeps its name
            output = info.text(positions, step["extract"])
        # The output as an operand of `... if q else ...` below.
        operand = output if step["extract"] is None or isinstance(step["extract"], ATOMIC) else f"({output})"
        tail = joined(step["tail"])
        if step["tail"]:
            block = info.parent(step["tail"][0])
            siblings = list(getattr(block, "body", ()))
            if step["tail"][0] in siblings and siblings.index(step["tail"][0]) > 0:
                tail = gap(siblings[siblings.index(step["tail"][0]) - 1], step["tail"][0]) + tail
        lines = prelude + call
        condition = info.text(positions, plan["condition"])
        inline = plan.get("inline_draw")
        if inline is not None and not inline[1]:  # Python's or NumPy's draw, made in the test itself
            call = info.text(positions, inline[0])
            condition = condition.replace(call, f"{torch}.rand([])", 1)
        select = f"{torch}.where({condition}, {target}, {output})"
        if plan["only_if"]:  # `if p > 0 and draw < p:` skips only when p > 0
            select = f"{select} if {plan['only_if']} else {operand}"
        if plan["keep_anyway"]:  # `if not skip or synced_gpus:` keeps the output when synced
            select = f"{operand} if {plan['keep_anyway']} else " + (f"({select})" if plan["only_if"] else select)
        # The statement deciding the skip is replaced (through the layer run where that follows
        # it); its comments go on the select.
        replaced = [last]
        if "through" in plan:
            body = list(loop.body.body)
            replaced = body[body.index(last):body.index(plan["through"]) + 1]
        start, end = positions[last].start, positions[replaced[-1]].end
        end_column = end.column
        if info.line(end.line)[end_column:].lstrip().startswith("#"):
            end_column = len(info.line(end.line))  # the trailing comment goes with it
        # Comments of the replaced statement not on a copied line (a copied statement's own leading
        # comment lines are not copied: they are kept here).
        copied_rows = {row for stmt in copied for row in range(positions[stmt].start.line, positions[stmt].end.line + 1)}
        comments = [text for stmt in replaced
                    for row, text in comment_rows(positions, stmt, start, CodePosition(end.line, end_column + 1))
                    if row not in copied_rows]
        for stmt in plan.get("drop", ()):  # deleted statements' comments too
            rows = positions[stmt]
            comments += [text for _, text in comment_rows(positions, stmt, CodePosition(rows.start.line, 0),
                                                              CodePosition(rows.end.line + 1, 0))]
        select_line = f"{indent}{target} = {select}" + "".join(f"  {c}" for c in dict.fromkeys(comments))
        new = lines + [select_line] + tail + ([f"{indent}continue"] if plan["then_continue"] else [])
        new[0] = new[0][len(indent):]
        edits = [Edit(info.newline.join(new), start.line, start.column + 1, end.line, end_column + 1)]
        for stmt in plan.get("drop", ()):  # the flag and a trailing `if skip: continue` (with a blank line before it)
            row = positions[stmt].start.line
            blank_before = row > 1 and not info.line(row - 1).strip() and row - 1 > end.line
            edits.append(delete_lines(row - 1 if blank_before else row, positions[stmt].end.line))
        for call in plan["python_draws"]:
            edits.append(replace_node(positions, call, f"{torch}.rand([])"))
        costs = "a dropped layer still costs its compute and gets zero gradients"
        if step["tail"] or plan.get("collected_after"):
            costs += ", and the statements collecting its other outputs run for it too"
        if plan["python_draws"]:
            costs += f"; the draw comes from `{torch}.rand([])`, not Python's `random`"
        elif inline is not None:
            costs += "; the draw is made after the layer runs" + ("" if inline[1] else f", with `{torch}.rand([])`")
        return make_fix(
            UNSAFE,
            f"Run the layer and select its output with `{torch}.where` (LayerDrop as a select: one graph; {costs})",
            import_edits + edits,
        )

    return guarded(code, generate)


def _enclosing_loop(ctx: RuleContext, info, node: cst.CSTNode) -> Optional[cst.For]:
    """The `for` whose body holds the statement deciding the skip, for a node that can be the
    draw's comparison or the flag a later test reads. A bounded climb, not a walk to the function:
    this is asked for every operand of an `and` / `or` chain, which libcst nests as deep as it is
    long."""
    parent = info.parent(node)
    if isinstance(node, cst.Call) and isinstance(parent, cst.Comparison):  # the draw made in the test
        node, parent = parent, info.parent(parent)
    if isinstance(node, (cst.Comparison, cst.BooleanOperation)):
        last = and_operands(node)[-1]  # `p > 0 and draw < p` reported as a whole: its comparison
        if not isinstance(last, cst.Comparison) or _draw(ctx, last) is None:
            return None
        while isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And) and parent.right is node:
            node, parent = parent, info.parent(parent)  # `p > 0 and draw < p`: up to the chain's top
        if isinstance(parent, cst.IfExp) and parent.test is node:  # `True if ... else False`
            node, parent = parent, info.parent(parent)
        if isinstance(parent, cst.Assign):
            node, parent = parent, info.parent(parent)
    elif isinstance(node, cst.Name):
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            node, parent = parent, info.parent(parent)
            while isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.Or) and parent.left is node:
                node, parent = parent, info.parent(parent)
        else:  # `if flag and not synced: continue`
            while isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And) and parent.left is node:
                node, parent = parent, info.parent(parent)
    else:
        return None
    # The statement, its block, and (the draw's) the guarding `if` and its block, then the loop.
    for _ in range(6):
        if parent is None or isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(parent, cst.For):
            return parent
        if not isinstance(parent, (cst.If, cst.IndentedBlock, cst.SimpleStatementLine)):
            return None
        parent = info.parent(parent)
    return None


def _plan(ctx: RuleContext, fn: cst.FunctionDef, loop: cst.For) -> Optional[dict]:
    if loop.orelse is not None or loop.asynchronous is not None or not isinstance(loop.body, cst.IndentedBlock):
        return None
    body = list(loop.body.body)
    plan = (_plan_else(ctx, fn, body) or _plan_flag_in_loop(ctx, fn, body) or _plan_continue(ctx, fn, body)) if body else None
    if plan is not None:
        return _with_draws(ctx, fn, loop, plan)
    for i, guard in enumerate(body):
        if not (isinstance(guard, cst.If) and guard.orelse is None and isinstance(guard.body, cst.IndentedBlock)):
            continue
        if ctx.is_tensor(guard.test):
            continue
        last = guard.body.body[-1]
        plan = _plan_for(ctx, fn, body, i, last)
        if plan is not None:
            return _with_draws(ctx, fn, loop, plan)
    return None


def _with_draws(ctx: RuleContext, fn, loop: cst.For, plan: dict) -> Optional[dict]:
    inline = _inline_draw(ctx, plan["condition"])
    if inline is not None:  # `torch.rand(1) < p`, `random.random() < p` in the test itself
        return dict(plan, python_draws=[], inline_draw=inline, owns=plan["owns"] | {id(inline[0])})
    calls = _python_draws(ctx, fn, loop, plan["condition"])
    return None if calls is None else dict(plan, python_draws=calls)


# One uniform number in [0, 1), drawn in the test itself: (qualified name, its argument texts).
_INLINE_TORCH_SHAPES = ("1", "[]", "()", "(1,)", "[1]")
_INLINE_NUMPY = ("numpy.random.random", "numpy.random.rand", "numpy.random.random_sample")


def _inline_draw(ctx: RuleContext, test: cst.BaseExpression) -> Optional[tuple]:
    """(the draw call, whether it is torch's) for `<draw> < p` / `p > <draw>` with the draw made
    in the test: `torch.rand(1)` (also `[]`, `()`, with `device=` / `dtype=`), `random.random()`,
    `random.uniform(0, 1)`, `np.random.random()` / `rand()`; `p` a plain name, attribute or number
    the linter does not know to be a tensor (`drawn_side`)."""
    found = drawn_side(ctx, test)
    if found is None or not isinstance(found[0], cst.Call):
        return None
    draw = found[0]
    q = ctx.call_name(draw)
    if q == "torch.rand":
        positional = [a for a in draw.args if a.keyword is None]
        module = cst.Module([])
        if (len(positional) != 1 or positional[0].star
                or module.code_for_node(positional[0].value).replace(" ", "") not in _INLINE_TORCH_SHAPES):
            return None
        if any(a.keyword is not None and a.keyword.value not in ("device", "dtype") for a in draw.args):
            return None
        return draw, True
    if is_python_uniform_draw(ctx, draw) or (q in _INLINE_NUMPY and not draw.args):
        return draw, False
    return None


def _plan_for(ctx: RuleContext, fn, body: list, i: int, last: cst.CSTNode) -> Optional[dict]:
    rest = body[i + 1:]
    flag = None
    only_if = ""  # Python operands `and`-ed before the draw's comparison (`p > 0 and draw < p`)
    if isinstance(last, cst.If) and last.orelse is None and len(last.body.body) == 1:
        split = _draw_test(ctx, last.test)
        if split is None:
            return None
        only_if, comparison = split
        inner = single_small_statement(last.body.body[0])
        if isinstance(inner, cst.Continue):  # `if draw < p: continue`
            step = _rest_of_body(ctx, fn, rest)
            owns = [comparison]
            keep_anyway = ""
        elif _assigns(inner, "True") is not None:  # `if draw < p: to_drop = True`
            flag = _assigns(inner, "True")
            found = _flag_step(ctx, fn, rest, flag)
            if found is None:
                return None
            step, keep_anyway, flag_reads = found
            owns = [comparison]
        else:
            return None
    else:
        small = single_small_statement(last)  # `skip = draw < p`
        flag = _assigned_name(small)
        if flag is None:
            return None
        comparison = _flag_value(small.value)
        found = _flag_step(ctx, fn, rest, flag)
        if found is None:
            return None
        step, keep_anyway, flag_reads = found
        owns = flag_reads + _test_nodes(small.value)
    if step is None or _draw(ctx, comparison) is None:
        return None
    if flag is not None and not _flag_only_read_there(fn, flag, flag_reads, body[:i]):
        return None
    return {
        "owns": {id(n) for n in owns},
        "last": last,
        "step": step,
        "condition": comparison,
        "keep_anyway": keep_anyway,
        "only_if": only_if,
        "then_continue": True,
    }


def _plan_else(ctx: RuleContext, fn, body: list) -> Optional[dict]:
    """`if [q and] draw < p: continue` (transformers 5.17's NLLB-MoE encoder) or `if [q and] draw <
    p: layer_outputs = (None, ...)` (its 4.x form) / `else: <layer run>` in the loop body, the
    draw made before it, unguarded, and after it only statements collecting the layer's other
    outputs. The whole `if` becomes the call and the select; what follows stays and reads the
    real outputs, so no `continue` is needed."""
    for k, stmt in enumerate(body):
        if not (isinstance(stmt, cst.If) and isinstance(stmt.orelse, cst.Else) and len(stmt.body.body) == 1):
            continue
        split = _draw_test(ctx, stmt.test)
        if split is None:
            continue
        only_if, comparison = split
        step = _run_after_prelude(ctx, list(stmt.orelse.body.body))
        if step is None:
            return None
        inner = stmt.body.body[0]
        if not isinstance(single_small_statement(inner), cst.Continue) and not _drops_outputs(inner, step):
            return None
        if not _collects_outputs(ctx, fn, body[k + 1:], step):
            return None
        return {"owns": {id(n) for n in _test_nodes(stmt.test)}, "last": stmt, "step": step, "condition": comparison,
                "keep_anyway": "", "only_if": only_if, "then_continue": False}
    return None


def _plan_continue(ctx: RuleContext, fn, body: list) -> Optional[dict]:
    """`if [q and] draw < p: continue` in the loop body (no `else`, the draw made before it,
    unguarded: transformers' MusicGen decoders) followed by the layer run and statements collecting
    its other outputs, ending the body. The `if` through the layer run becomes the call and the
    select; the collecting statements stay and read the real outputs."""
    for k, stmt in enumerate(body):
        if not (isinstance(stmt, cst.If) and stmt.orelse is None and len(stmt.body.body) == 1):
            continue
        if not isinstance(single_small_statement(stmt.body.body[0]), cst.Continue):
            continue
        split = _draw_test(ctx, stmt.test)
        if split is None:
            continue
        rest = body[k + 1:]
        step = _rest_of_body(ctx, fn, rest)
        if step is None:
            return None
        only_if, comparison = split
        return {"owns": {id(n) for n in _test_nodes(stmt.test)}, "last": stmt,
                "through": rest[len(rest) - len(step["tail"]) - 1], "step": dict(step, tail=[]),
                "collected_after": bool(step["tail"]), "condition": comparison, "keep_anyway": "",
                "only_if": only_if, "then_continue": False}
    return None


def _plan_flag_in_loop(ctx: RuleContext, fn, body: list) -> Optional[dict]:
    """`skip = [q and] draw < p` in the loop body itself (the draw unguarded: transformers 5.17's
    NLLB-MoE decoder), then `if not skip [or synced]: h = <call>` and optionally `if skip:
    continue`, ending the body. The `if not skip` statement becomes the call and the select; the
    flag's assignment and the trailing `if skip: continue` (a no-op at the end of the body, but a
    branch on the tensor) go: nothing else reads the flag."""
    for k, stmt in enumerate(body):
        small = single_small_statement(stmt)
        flag = _assigned_name(small)
        split = _draw_test(ctx, _flag_value(small.value)) if flag is not None else None
        if split is None:
            continue
        found = _flag_step(ctx, fn, body[k + 1:], flag, with_else=False)
        if found is None:
            return None
        step, keep_anyway, reads = found
        if not _flag_only_read_there(fn, flag, reads, None):
            return None
        only_if, comparison = split
        # The statements collecting the layer's outputs stay where they are, after the select.
        return {"owns": {id(n) for n in reads + _test_nodes(small.value)}, "last": body[k + 1], "step": dict(step, tail=[]),
                "condition": comparison, "keep_anyway": keep_anyway, "only_if": only_if,
                "then_continue": False, "drop": [stmt] + step["flag_stmts"]}
    return None


def _draw_test(ctx: RuleContext, test: cst.BaseExpression) -> Optional[tuple]:
    """(text of the Python operands `and`-ed before it, the draw's comparison) for `draw < p` or
    `q and ... and draw < p`; None for anything else."""
    if isinstance(test, cst.BooleanOperation):
        operands = and_operands(test)
        if any(isinstance(o, cst.BooleanOperation) or ctx.is_tensor(o) for o in operands[:-1]):
            return None  # an `or` among them (as before), or a tensor test
        test = operands[-1]
        only_if = " and ".join(cst.Module([]).code_for_node(o) for o in operands[:-1])
    else:
        only_if = ""
    return (only_if, test) if _draw(ctx, test) is not None else None


def _draw(ctx: RuleContext, test: cst.BaseExpression) -> Optional[tuple]:
    """`draw < p` with a draw of `torch.rand`, or of Python's `random.random()` / `random.uniform(0,
    1)` (DYN105 reports the branch on those; the fix draws with `torch.rand([])` instead)."""
    return comparison_with_draw(ctx, test) or comparison_with_draw(ctx, test, python=True) or _inline_draw(ctx, test)


def _python_draws(ctx: RuleContext, fn, loop: cst.For, condition: cst.Comparison) -> Optional[list]:
    """The draw calls to replace with `torch.rand([])` where the condition's draw is Python's ([]
    for a torch draw); None where the name is bound outside this loop too."""
    if comparison_with_draw(ctx, condition) is not None:
        return []
    draw = comparison_with_draw(ctx, condition, python=True)[0].value
    # Read only by the test: elsewhere a tensor in place of a float could change what runs
    # (`int(draw * n)`, `random.seed(draw)`).
    stores = {id(n) for _, targets in store_targets(fn) for t in targets for n in iter_nodes(t)}
    in_test = {id(n) for n in iter_nodes(condition)}
    if any(isinstance(n, cst.Name) and n.value == draw and id(n) not in stores and id(n) not in in_test
           for n in iter_nodes(fn)):
        return None
    in_loop = {id(n) for n in iter_nodes(loop.body)}
    calls = []
    for n in iter_nodes(fn):
        if isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == draw for t in n.targets):
            if id(n) not in in_loop:
                return None
            calls.append(n.value)
    return calls


def _test_nodes(value: cst.BaseExpression) -> list:
    """The comparisons and `and`s in a draw's test or a flag's value: a finding on any of them owns the fix."""
    return [n for n in iter_nodes(value) if isinstance(n, (cst.BooleanOperation, cst.Comparison))]


def _flag_value(value: cst.BaseExpression) -> cst.BaseExpression:
    """`True if test else False` (transformers 4.x's wav2vec2 family) is `test`."""
    if (isinstance(value, cst.IfExp) and isinstance(value.body, cst.Name) and value.body.value == "True"
            and isinstance(value.orelse, cst.Name) and value.orelse.value == "False"):
        return value.test
    return value


def _assigns(small, value: str) -> Optional[str]:
    """`name = True` (value's text): the name."""
    name = _assigned_name(small)
    return name if name is not None and isinstance(small.value, cst.Name) and small.value.value == value else None


def _flag_step(ctx: RuleContext, fn, rest: list, flag: str, with_else: bool = True):
    """The statements reading the flag, ending the loop body: (the step, the text of the other
    operands, the flag's Name nodes read). Either `if not flag [or q ...]: <layer run>` then,
    optionally, `if flag: continue`; or (`with_else`) `if flag: out = (None, ...)` / `else:
    <layer run>` followed by statements collecting the layer's other outputs (`to_drop` in
    transformers' LED, MVP, FSMT encoders)."""
    if not rest:
        return None
    head = rest[0]
    if not (isinstance(head, cst.If) and isinstance(head.body, cst.IndentedBlock)):
        return None
    if isinstance(head.orelse, cst.Else) and with_else:
        if not (isinstance(head.test, cst.Name) and head.test.value == flag):
            return None
        step = _run_after_prelude(ctx, list(head.orelse.body.body))
        if step is None or len(head.body.body) != 1 or not _drops_outputs(head.body.body[0], step):
            return None
        if not _collects_outputs(ctx, fn, rest[1:], step):
            return None
        return dict(step, tail=rest[1:]), "", [head.test]
    if head.orelse is not None:
        return None
    if with_else and len(head.body.body) == 1 and isinstance(single_small_statement(head.body.body[0]), cst.Continue):
        return _flag_continue(ctx, fn, rest, flag)
    operands = _or_operands(head.test)
    first = operands[0]
    if not (isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Not)):
        return None
    if not (isinstance(first.expression, cst.Name) and first.expression.value == flag) or first.lpar:
        return None
    others = operands[1:]
    if any(ctx.is_tensor(o) or _reads(o, flag) for o in others):
        return None
    reads = [first.expression]
    step = _run_after_prelude(ctx, list(head.body.body))
    if step is None:
        return None
    flag_stmts, following = [], rest[1:]
    if following:  # `if flag: continue`, or `if flag: layer_outputs = (None, None)` (wav2vec2 in 4.x)
        second = following[0]
        if isinstance(second, cst.If) and isinstance(second.test, cst.Name) and second.test.value == flag:
            if second.orelse is not None or len(second.body.body) != 1:
                return None
            inner = second.body.body[0]
            if not (isinstance(single_small_statement(inner), cst.Continue) or _drops_outputs(inner, step)):
                return None
            reads.append(second.test)
            flag_stmts.append(second)
            following = following[1:]
    if not _collects_outputs(ctx, fn, following, step):
        return None
    module = cst.Module([])
    keep_anyway = " or ".join(module.code_for_node(o) for o in others)
    if len(others) > 1:
        keep_anyway = f"({keep_anyway})"
    return dict(step, tail=following, flag_stmts=flag_stmts), keep_anyway, reads


def _flag_continue(ctx: RuleContext, fn, rest: list, flag: str):
    """`if flag [and r ...]: continue` then the layer run and statements collecting its outputs,
    ending the body (SpeechT5's decoder: `if skip_the_layer and not synced_gpus: continue`). The
    layer's output is kept as before where an `r` is false (`synced_gpus`)."""
    head = rest[0]
    operands = and_operands(head.test)
    first = operands[0]
    if not (isinstance(first, cst.Name) and first.value == flag) or head.test.lpar:
        return None
    others = operands[1:]
    if any(ctx.is_tensor(o) or _reads(o, flag) for o in others):
        return None
    step = _rest_of_body(ctx, fn, rest[1:])
    if step is None:
        return None
    module = cst.Module([])
    negated = []
    for o in others:
        if isinstance(o, cst.UnaryOperation) and isinstance(o.operator, cst.Not) and isinstance(o.expression, (cst.Name, cst.Attribute, cst.Call)):
            negated.append(module.code_for_node(o.expression))
        else:
            negated.append(f"not ({module.code_for_node(o)})")
    keep_anyway = " or ".join(negated)
    if len(negated) > 1:
        keep_anyway = f"({keep_anyway})"
    return step, keep_anyway, [first]


def _or_operands(node: cst.BaseExpression) -> list:
    out = []
    while isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or) and not node.lpar:
        out.insert(0, node.right)
        node = node.left
    return [node] + out


def _flag_only_read_there(fn, flag: str, reads: list, before: Optional[list]) -> bool:
    """The flag is read only by the step's tests, and (unless `before` is None: it is bound on
    every path) bound `flag = False` earlier in the loop body (so the path without the draw reads
    a Python False)."""
    allowed = {id(n) for n in reads}
    stores = {id(n) for _, targets in store_targets(fn) for t in targets for n in iter_nodes(t)}
    for n in iter_nodes(fn):
        if isinstance(n, cst.Name) and n.value == flag and id(n) not in allowed and id(n) not in stores:
            return False
    return before is None or any(_assigns(single_small_statement(s), "False") == flag for s in before)


def _rest_of_body(ctx: RuleContext, fn, rest: list) -> Optional[dict]:
    """What follows `if draw < p: continue` to the end of the loop body: a few plain assignments
    not touching `h` (`past_key_value = past_key_values[idx]`), the layer run, and statements
    collecting the layer's other outputs. All of it is copied into the guard."""
    found = _prelude_and_run(ctx, rest, whole=False)
    if found is None:
        return None
    step, tail = found
    return dict(step, tail=tail) if _collects_outputs(ctx, fn, tail, step) else None


def _run_after_prelude(ctx: RuleContext, stmts: list) -> Optional[dict]:
    """A block that is a few plain assignments not touching `h` (`past_key_value =
    past_key_values[idx]`) then the layer run, nothing after it."""
    found = _prelude_and_run(ctx, stmts, whole=True)
    return None if found is None else found[0]


def _prelude_and_run(ctx: RuleContext, stmts: list, whole: bool) -> Optional[tuple]:
    """(the layer run with its prelude, the statements after it): up to three plain assignments
    not touching `h`, then the run (one or two statements; with `whole`, all that is left)."""
    for j in range(min(len(stmts), 4)):
        if j and not _plain_prelude(stmts[j - 1]):
            return None
        for size in ((len(stmts) - j,) if whole else (1, 2)):
            step = _layer_run(ctx, stmts[j:j + size])
            if step is None:
                continue
            prelude = stmts[:j]
            if any(_reads(stmt, step["target"]) for stmt in prelude):
                return None
            return dict(step, prelude=prelude), stmts[j + size:]
    return None


def _plain_prelude(stmt: cst.CSTNode) -> bool:
    return _assigned_name(single_small_statement(stmt)) is not None


def _layer_run(ctx: RuleContext, run: list) -> Optional[dict]:
    """The statements running the layer, each call reading `h`, a tensor (`torch.where` selects
    between it and what the layer gives): `h = <call>`; `h, attn = <call>`; or `out = <call>`
    (or an `if`/`else` on Python values assigning `out` a call in each arm: gradient
    checkpointing) followed by `h = <expression of out>` (`out[0]`)."""
    module = cst.Module([])
    if len(run) == 1:
        small = single_small_statement(run[0])
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Call)):
            return None
        target = small.targets[0].target
        if target.lpar:
            return None
        if isinstance(target, cst.Name):
            if not _reads_tensor(ctx, small.value, target.value):
                return None
            return _step(target.value, run[0], rename=(target.value, lambda new: new))
        if not isinstance(target, cst.Tuple) or not all(
            isinstance(e, cst.Element) and isinstance(e.value, cst.Name) and not e.value.lpar for e in target.elements
        ):
            return None
        names = [e.value.value for e in target.elements]
        carried = [n for n in names if _reads_tensor(ctx, small.value, n)]
        if len(carried) != 1 or names.count(carried[0]) != 1:
            return None
        h = carried[0]

        def make_target(new, target=target, h=h):
            return module.code_for_node(target.with_changes(elements=[
                e.with_changes(value=cst.Name(new)) if e.value.value == h else e for e in target.elements
            ]))

        return _step(h, run[0], rename=(module.code_for_node(target), make_target), outputs=set(names) - {h})
    if len(run) != 2:
        return None
    found = _call_assignment(ctx, run[0])
    extract = single_small_statement(run[1])
    h = _assigned_name(extract)
    if found is None or h is None or extract.targets[0].target.lpar:
        return None
    out, calls = found
    value = extract.value
    if h == out or not _reads(value, out) or _reads(value, h):
        return None
    if any(isinstance(n, cst.Call) and not (isinstance(n.func, cst.Name) and n.func.value == "isinstance")
           for n in iter_nodes(value)):
        return None
    if not all(_reads_tensor(ctx, call, h) for call in calls):
        return None
    return _step(h, run[0], extract=value, outputs={out})


def _step(target: str, call, rename=None, extract=None, outputs=frozenset()) -> dict:
    return {"target": target, "call": call, "rename": rename, "extract": extract, "outputs": set(outputs),
            "prelude": [], "tail": []}


def _call_assignment(ctx: RuleContext, stmt: cst.CSTNode):
    """`out = <call>`, or `if <Python test>: out = <call>` / `else: out = <call>`: (out, calls)."""
    small = single_small_statement(stmt)
    if small is not None:
        name = _assigned_name(small)
        if name is None or not isinstance(small.value, cst.Call) or small.targets[0].target.lpar:
            return None
        return name, [small.value]
    if not (isinstance(stmt, cst.If) and isinstance(stmt.orelse, cst.Else)) or ctx.is_tensor(stmt.test):
        return None
    arms = [stmt.body.body, stmt.orelse.body.body]
    if any(len(arm) != 1 for arm in arms):
        return None
    found = [_call_assignment(ctx, arm[0]) for arm in arms]
    if any(f is None or single_small_statement(arm[0]) is None for f, arm in zip(found, arms)):
        return None
    if found[0][0] != found[1][0]:
        return None
    return found[0][0], found[0][1] + found[1][1]


def _drops_outputs(stmt: cst.CSTNode, step: dict) -> bool:
    """The dropped arm of `if to_drop:`: `out = (None, None)` / `attn = None`, binding only the
    layer's outputs, not `h`."""
    small = single_small_statement(stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return False
    target = small.targets[0].target
    names = [target] if isinstance(target, cst.Name) else [e.value for e in getattr(target, "elements", ())]
    if not names or not all(isinstance(n, cst.Name) and n.value in step["outputs"] for n in names):
        return False
    return all(isinstance(n, cst.Name) and n.value == "None" for n in iter_nodes(small.value) if isinstance(n, cst.Name)) \
        and all(isinstance(n, (cst.Name, cst.Tuple, cst.Element, cst.Comma, cst.LeftParen, cst.RightParen,
                               cst.ParenthesizedWhitespace, cst.SimpleWhitespace)) for n in iter_nodes(small.value))


def _collects_outputs(ctx: RuleContext, fn, tail: list, step: dict) -> bool:
    """Statements after the layer run that only collect the layer's other outputs (`if
    output_attentions: all_attentions += (out[1],)`): `if` statements on Python tests holding
    assignments to names the layer call does not read, from the outputs and not from `h`. They
    are copied after the select, so a dropped layer's attentions are collected too. An
    unconditional statement (`trend = trend + residual_trend`) is refused: what it accumulates is
    the model's output, which a dropped layer must not change."""
    h, outputs = step["target"], step["outputs"]
    call_reads = {n.value for n in iter_nodes(step["call"]) if isinstance(n, cst.Name)}

    def collects(stmt) -> bool:
        if isinstance(stmt, cst.If):
            if ctx.is_tensor(stmt.test) or _reads(stmt.test, h):
                return False
            arms = [stmt.body.body]
            if isinstance(stmt.orelse, cst.Else):
                arms.append(stmt.orelse.body.body)
            elif stmt.orelse is not None:
                arms.append([stmt.orelse])
            return all(collects(s) for arm in arms for s in arm)
        small = single_small_statement(stmt)
        if isinstance(small, cst.AugAssign):
            target = small.target
        elif isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
        else:
            return False
        if not isinstance(target, cst.Name) or target.value in outputs | {h} or target.value in call_reads:
            return False
        return not _reads(small.value, h) and any(_reads(small.value, o) for o in outputs)

    return all(isinstance(stmt, cst.If) and collects(stmt) for stmt in tail)


def _reads(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in iter_nodes(node))


def _reads_tensor(ctx: RuleContext, call: cst.CSTNode, name: str) -> bool:
    reads = [n for n in iter_nodes(call) if isinstance(n, cst.Name) and n.value == name]
    return bool(reads) and ctx.is_tensor(reads[0])

"""DYN120: a check that raises on a tensor's value becomes an assertion inside the graph while
compiling; eager runs keep the `if` and its raise (`elif`), so they raise the same exception:

    if (x == 0).any():              ->  if torch.compiler.is_compiling():
        raise ValueError("zeros")           torch._assert_async(torch.logical_not((x == 0).any()), "ValueError: zeros")
                                        elif (x == 0).any():
                                            raise ValueError("zeros")

(Below, the check alone, as written where a file keeps the path for torch without
`is_compiling`.)

    if (x == 0).any():                  ->  torch._assert_async(torch.logical_not((x == 0).any()), "ValueError: x has zeros")
        raise ValueError("x has zeros")
    if not torch.isfinite(x).all():     ->  torch._assert_async(torch.isfinite(x).all(), "...")
        raise ValueError(...)
    if mask is not None and mask.sum() == 0:    ->  if mask is not None:
        raise ValueError(...)                             torch._assert_async(torch.logical_not(mask.sum() == 0), "...")

`torch._assert_async(t, msg)` fails when the one-element tensor t is zero, as `if not t: raise`
does; Dynamo traces it into the graph (probed on torch 2.13: 0 breaks, and the compiled code still
raises). `torch._check` takes no tensors and `torch._check_tensor_all` calls `.item()` (a break).
`assert t` needs no fix: Dynamo already turns it into this assertion.

Unsafe: compiled, the error is a RuntimeError carrying the message, not the original exception,
so code that catches ValueError no longer does; on a GPU the check runs asynchronously and a failure is a
device-side assert reported at a later synchronisation, after which the process's CUDA context is
unusable. Right for checks of programming errors, not for exceptions used as control flow. An
f-string message whose fields read only Python values (`{', '.join(adapters)}`) is kept as an
f-string; one reading tensors is not formatted (host syncs): its text is kept.
"""

from __future__ import annotations

import ast
import json

import libcst as cst

from dynalint.findings import UNSAFE, Edit
from dynalint.lint import fastcst
from dynalint.lint.draws import and_operands
from dynalint.lint.fastcst import iter_nodes
from dynalint.lint.kinds import TENSORISH, Kind
from dynalint.lint.nodes import is_string_literal
from dynalint.lint.rule import RuleContext

from .base import SourceInfo, comments_within, guarded, make_fix, replace_node, source_info
from .guard import is_compiling_call
from .imports import torch_reference
from .where import _mentions_numpy, definite_tensor_test


def raise_check_fix(ctx: RuleContext, reported: cst.BaseExpression, code: str = "DYN120"):
    """A fix for `if <tensor test>: raise ...` (reported: the tensor test or the operand of its
    `not`, or the tensor operand of `<flag> and <tensor test>`)."""
    if _mentions_numpy(reported, ctx) or not definite_tensor_test(reported, ctx):  # _assert_async takes tensors
        return None
    info = source_info(ctx.module, ctx.fn)
    plan = _plan(info, ctx, reported)
    if plan is None:
        return None
    return guarded(code, lambda positions, module: _rewrite(info, positions, *plan))


def _plan(info: SourceInfo, ctx: RuleContext, reported):
    """(if statement, guard kept as an `if` or None, tensor test, negated, raise statement)."""
    test, negated = reported, False
    owner = info.parent(reported)
    if isinstance(owner, cst.UnaryOperation) and isinstance(owner.operator, cst.Not) and owner.expression is reported:
        test, negated, owner = owner, True, info.parent(owner)
    guard = None
    if isinstance(owner, cst.BooleanOperation) and isinstance(owner.operator, cst.And) and owner.right is test:
        # `flag and <tensor test>`: the tensor test runs only when flag holds; so does the check.
        guard, test, owner = owner.left, owner, info.parent(owner)
    # The shape first: in an N-term `and` chain only the last operand's `and` is the `if`'s
    # test, so the walk of the guard below runs once, not once per operand (N squared).
    if not isinstance(owner, cst.If) or owner.test is not test or owner.orelse is not None:
        return None
    if guard is not None and (ctx.is_tensor(guard) or _has_tensor_test(guard, ctx)):
        return None
    parent = info.parent(owner)
    if isinstance(parent, cst.If) and parent.orelse is owner:
        return None  # an `elif`
    if not isinstance(parent, (cst.IndentedBlock, cst.Module)):
        return None
    body = owner.body
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if len(lines) != 1 or not isinstance(lines[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return None
    smalls = lines[0].body
    if len(smalls) != 1 or not isinstance(smalls[0], cst.Raise) or smalls[0].exc is None or smalls[0].cause is not None:
        return None
    raised = smalls[0]
    return owner, guard, reported, negated, raised, _python_fields_only(raised, ctx)


def _python_fields_only(raised: cst.Raise, ctx: RuleContext) -> bool:
    """The message is an f-string whose fields read no tensor (`{', '.join(adapters)}`): it can
    be formatted as before, for each call (a tensor field would be a host sync, a size a guard:
    only names of other values and `', '.join(names)` are kept)."""
    call = raised.exc
    if not isinstance(call, cst.Call) or not call.args or call.args[0].keyword is not None or call.args[0].star:
        return False
    return _formatted_from_python_values(call.args[0].value, ctx)


def _formatted_from_python_values(first: cst.BaseExpression, ctx: RuleContext) -> bool:
    """An f-string (or strings joined with one) whose fields are names of values that are no
    tensors, or `', '.join(names)` of one."""
    if not isinstance(first, (cst.FormattedString, cst.ConcatenatedString)):
        return False
    if not any(isinstance(n, cst.FormattedString) for n in iter_nodes(first)):
        return False
    fields = [n.expression for n in iter_nodes(first) if isinstance(n, cst.FormattedStringExpression)]
    return all(
        (type(expr) is cst.Name and ctx.kind(expr) not in (*TENSORISH, Kind.SIZE)) or _joins_python_names(expr, ctx)
        for expr in fields
    )


def _joins_python_names(expr: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`', '.join(names)` of a value that is no tensor."""
    return (
        type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "join"
        and isinstance(expr.func.value, cst.SimpleString) and len(expr.args) == 1
        and ctx.kind(expr.args[0].value) not in TENSORISH
    )


def _has_tensor_test(node, ctx: RuleContext) -> bool:
    if isinstance(node, cst.BooleanOperation):
        return _has_tensor_test(node.left, ctx) or _has_tensor_test(node.right, ctx)
    if isinstance(node, cst.UnaryOperation):
        return _has_tensor_test(node.expression, ctx)
    return ctx.is_tensor(node)


def _message(info: SourceInfo, positions, raised: cst.Raise, formatted: bool = False) -> str:
    """The exception's name and message as one string literal; with `formatted`, the f-string
    itself after the name (`"ValueError: " + (f"...")`)."""
    exc = raised.exc
    call = exc if isinstance(exc, cst.Call) else None
    name = info.text(positions, call.func if call is not None else exc)
    text = name
    if call is not None and call.args and call.args[0].keyword is None and not call.args[0].star:
        first = call.args[0].value
        try:
            value = ast.literal_eval(info.text(positions, first))
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, str):
            text = f"{name}: {value}"
        elif formatted:
            return f"{json.dumps(name + ': ', ensure_ascii=False)} + ({info.text(positions, first)})"
        elif isinstance(first, (cst.FormattedString, cst.ConcatenatedString)):
            text = f"{name}: {_unformatted(first)}"
    return json.dumps(text, ensure_ascii=False)  # a valid Python literal, in double quotes


def _unformatted(node: cst.BaseExpression) -> str:
    """The text of a string expression, replacement fields named as written: `f"bad {n}"` ->
    `bad <n>`; implicitly concatenated parts joined, whitespace runs collapsed."""
    pieces = []
    stack = [node]
    while stack:
        cur = stack.pop(0)
        if isinstance(cur, cst.ConcatenatedString):
            stack[:0] = [cur.left, cur.right]
        elif isinstance(cur, cst.SimpleString):
            pieces.append(cur.evaluated_value if isinstance(cur.evaluated_value, str) else "")
        elif isinstance(cur, cst.FormattedString):
            for part in cur.parts:
                if isinstance(part, cst.FormattedStringText):
                    pieces.append(part.value)
                else:
                    # a field left as `<n>`: braces read like a formatting bug in the message
                    pieces.append("<" + cst.Module([]).code_for_node(part.expression) + ">")
    return " ".join("".join(pieces).split())


def _rewrite(info: SourceInfo, positions, node: cst.If, guard, test, negated: bool, raised: cst.Raise,
             formatted: bool = False):
    torch, import_edits = torch_reference(info, positions)
    condition = info.text(positions, test)
    holds = condition if negated else f"{torch}.logical_not({condition})"
    check = f"{torch}._assert_async({holds}, {_message(info, positions, raised, formatted)})"
    rng = positions[node]
    start, end = rng.start, rng.end
    indent = info.indentation(start.line)
    comments = comments_within(positions, node, start, end, skip=[test] + ([guard] if guard is not None else []))
    lead = "".join(f"{c}{info.newline}{indent}" for c in comments)
    # Compiled, the check; eager, the `if` and its raise as they were (the same exception).
    compiling = is_compiling_call(info, positions, node, indent)
    # None, or a guard needing lines above it (no torch at module level): the check alone
    keeps_raise = compiling is not None and not compiling[1]
    inner = indent + info.indent_unit if keeps_raise else indent
    if guard is not None:
        kept = info.text(positions, guard)
        if "\n" in kept:  # the test was parenthesised over several lines (tabpfn's target check)
            if keeps_raise and '"""' not in kept and "'''" not in kept:
                kept = kept.replace(info.newline, info.newline + info.indent_unit)  # nested one level deeper
            kept = f"({kept})"
        body = f"if {kept}:{info.newline}{inner}{info.indent_unit}{check}"
    else:
        body = check
    if not keeps_raise:
        content = f"{lead}{body}"
        what = "instead of raising"
    else:
        test, _, compiling_edits, _ = compiling
        import_edits = import_edits + [e for e in compiling_edits if e not in import_edits]
        content = f"if {test}:{info.newline}{inner}{body}{info.newline}{indent}el{info.text(positions, node)}"
        what = "while compiling (eager runs raise as before)"
    edit = Edit(content, start.line, start.column + 1, end.line, end.column + 1)
    return make_fix(UNSAFE, f"Check with `{torch}._assert_async` inside the graph {what}", import_edits + [edit])


# --------------------------------------------------------------------------------------------
# `assert a and b, msg` with tensor tests: Dynamo traces `assert t` on a one-element tensor into
# the graph, but `a and b` takes the truth of `a` in Python (a break). Split into one assert per
# operand of the `and` chain:
#     assert x_max.isnan().sum() == 0 and x_min.isnan().sum() == 0, "NaN"
#  -> assert x_max.isnan().sum() == 0, "NaN"
#     assert x_min.isnan().sum() == 0, "NaN"
# Python evaluates the same operands in the same order and raises the same AssertionError with
# the same message (evaluated only on failure, once) at the first false one; `python -O` drops
# both forms. Unsafe all the same: compiled, Dynamo turns each assert into an assertion inside
# the graph that fails with a RuntimeError carrying the message (asynchronously on a GPU), as it
# does for any `assert` on a tensor. Probed on torch 2.13: 1 break before, 0 after.


def assert_split_fix(ctx: RuleContext, reported: cst.BaseExpression, code: str = "DYN120"):
    """A fix for a tensor operand (or the operand of its `not`) of an `and` chain that is an
    assert statement's whole test."""
    info = source_info(ctx.module, ctx.fn)
    node = reported
    parent = info.parent(node)
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
        node, parent = parent, info.parent(parent)
    if not (isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And)):
        return None
    operand = node
    # The top of the `and` chain, remembered for every `and` passed on the way up: each operand
    # of an N-term chain asks, and walking up from each would be N squared.
    tops = info.registry.setdefault("and-chain-tops", {})
    passed = []
    while isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And):
        known = tops.get(id(parent))
        if known is not None and known[0] is parent:
            node, parent = known[1], known[2]
            break
        passed.append(parent)
        node, parent = parent, info.parent(parent)
    for n in passed:
        tops[id(n)] = (n, node, parent)
    if not isinstance(parent, cst.Assert) or parent.test is not node:
        return None
    asserted = parent.msg is None or is_string_literal(parent.msg)
    if not asserted and not _formatted_from_python_values(parent.msg, ctx):
        return None  # each assert of the split would still break on its message
    line = info.parent(parent)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    split = info.registry.setdefault("and-chain-operands", {})
    known = split.get(id(node))
    if known is None or known[0] is not node:
        operands = and_operands(node)
        known = split[id(node)] = (node, operands, {id(op): i for i, op in enumerate(operands)}, {"askers": []})
    _, operands, index, asked = known
    place = index.get(id(operand))
    if place is None:
        return None
    if not asserted and not all(
        definite_tensor_test(op.expression if isinstance(op, cst.UnaryOperation) else op, ctx) for op in operands
    ):
        return None  # `torch._assert_async` takes tensors only
    asked["askers"].append(place)

    def fix(positions, module):
        # A long chain's fix goes to its leftmost finding only (the others are fixed with it):
        # N findings each carrying the N-line split made the output N squared (8,000 terms:
        # over 2 GB of JSON).
        if len(operands) > SPLIT_ON_EVERY_FINDING:
            if "first" not in asked:  # fixes are built once the whole file was walked
                asked["first"] = min(asked["askers"])
            if place != asked["first"]:
                return None
        return _shared_rewrite_assert(info, positions, parent, operands, asserted)

    return guarded(code, fix)


# Up to this many operands, every operand's finding carries the (same) split.
SPLIT_ON_EVERY_FINDING = 32


def _shared_rewrite_assert(info: SourceInfo, positions, statement: cst.Assert, operands: list, asserted: bool = True):
    """The split of `statement`, built once and shared by the findings on all its operands: the
    fix is the same for each, and building it looks at every operand (N operands' findings each
    building it cost N squared: 500 terms took 64 CPU s)."""
    done = info.registry.setdefault("assert-splits", {})
    known = done.get(id(statement))
    if known is None or known[0] is not statement or known[1] is not positions:
        REWRITES[0] += 1
        known = done[id(statement)] = (statement, positions, _rewrite_assert(info, positions, statement, operands, asserted))
    return known[2]


REWRITES = [0]  # splits built in this process (tests check each assert is split once)


def _rewrite_assert(info: SourceInfo, positions, statement: cst.Assert, operands: list, asserted: bool = True):
    """One `assert` per operand; with `asserted` False (an f-string message, which would make each
    assert break), one `torch._assert_async(operand, message)` per operand, `not x` as
    `torch.logical_not(x)`."""
    rng = positions[statement]
    start, end = rng.start, rng.end
    indent = info.indentation(start.line)
    keep = list(operands) + ([statement.msg] if statement.msg is not None else [])
    spans = [positions[n] for n in keep]

    def copied(line: int, column: int) -> bool:
        return any((r.start.line, r.start.column) <= (line, column) < (r.end.line, r.end.column) for r in spans)

    # Comments outside the copied texts (an operand's or the message's parentheses are rewritten)
    # go before the asserts.
    comments = []
    stack: list = [statement]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Comment):
            p = positions[cur].start
            if not copied(p.line, p.column):
                comments.append((p.line, p.column, cur.value))
            continue
        stack.extend(fastcst.children(cur))
    msg = f", {_parenthesized(info, positions, statement.msg)}" if statement.msg is not None else ""
    lines = [c for _, _, c in sorted(comments)]
    import_edits = []
    if asserted:
        lines += [f"assert {_parenthesized(info, positions, op)}{msg}" for op in operands]
    else:
        torch, import_edits = torch_reference(info, positions)
        for op in operands:
            if isinstance(op, cst.UnaryOperation) and isinstance(op.operator, cst.Not):
                text = f"{torch}.logical_not({info.text(positions, op.expression)})"
            else:
                text = info.text(positions, op)
            lines.append(f"{torch}._assert_async({text}{msg})")
    content = f"{info.newline}{indent}".join(lines)
    edit = Edit(content, start.line, start.column + 1, end.line, end.column + 1)
    return make_fix(UNSAFE, "Assert each operand of the `and` on its own (Dynamo keeps `assert t` in the graph)", import_edits + [edit])


def _parenthesized(info: SourceInfo, positions, node: cst.BaseExpression) -> str:
    """node's text, in parentheses when it had them (a tuple message needs them)."""
    text = info.text(positions, node)
    return f"({text})" if node.lpar else text


# --------------------------------------------------------------------------------------------
# `assert <tensor test>, f"..."`: Dynamo keeps `assert t, "text"` in the graph, but only with a
# string literal for the message; any other message (an f-string, `"%d" % n`, a variable) is a
# break. With an f-string of Python values the assert becomes the assertion Dynamo would have
# made, its message formatted before the call:
#     assert x.sum() > 0, f"bad n={n}"   ->   torch._assert_async(x.sum() > 0, f"bad n={n}")
# Probed on torch 2.13 and 2.14.1: 1 break before, 0 after, and the compiled code still raises
# with the message. Unsafe: a RuntimeError instead of an AssertionError, checked under
# `python -O` too, and the message is formatted on every call (its fields only read names).


def assert_message_fix(ctx: RuleContext, statement: cst.Assert, code: str = "DYN120"):
    if statement.msg is None or not _formatted_from_python_values(statement.msg, ctx):
        return None
    if _mentions_numpy(statement.test, ctx) or not definite_tensor_test(statement.test, ctx):
        return None
    info = source_info(ctx.module, ctx.fn)
    line = info.parent(statement)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    return guarded(code, lambda positions, module: _rewrite_assert_message(info, positions, statement))


def _rewrite_assert_message(info: SourceInfo, positions, statement: cst.Assert):
    torch, import_edits = torch_reference(info, positions)
    rng = positions[statement]
    start, end = rng.start, rng.end
    indent = info.indentation(start.line)
    comments = comments_within(positions, statement, start, end, skip=[statement.test, statement.msg])
    lead = "".join(f"{c}{info.newline}{indent}" for c in comments)
    check = f"{torch}._assert_async({info.text(positions, statement.test)}, {info.text(positions, statement.msg)})"
    edit = Edit(lead + check, start.line, start.column + 1, end.line, end.column + 1)
    return make_fix(UNSAFE, f"Assert with `{torch}._assert_async` (Dynamo keeps `assert` in the graph only with a literal message)", import_edits + [edit])


# --------------------------------------------------------------------------------------------
# DYN117: `assert self.norm` on a submodule -> `assert self.norm is not None` (or
# `len(self.layers) > 0` for a container), which Dynamo traces.


def assert_module_fix(ctx: RuleContext, test: cst.BaseExpression, replacement: str, code: str = "DYN117"):
    return guarded(code, lambda positions, module: make_fix(
        UNSAFE, f"Assert `{replacement}` (what a module's truth means, unless its class defines `__len__`/`__bool__`)",
        [replace_node(positions, test, replacement)],
    ))

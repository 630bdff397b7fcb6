"""Deep but valid code: parse and analyse it on a thread with a large stack.

libcst's parser (native code) and its node methods, and the analyzer's own walks, recurse once per
level of nesting: a 1,500-term `x + x + ...` or a 1,000-branch `if/elif` is a few thousand
frames deep. On the main thread (8 MiB stack, recursion limit 1,000) that ends in a
RecursionError, and deeper still in a segfault inside libcst, which takes the whole run down. On
a thread with a 1 GiB stack (reserved, not committed: only what is used costs memory) and a
recursion limit to match, such files are analysed like any other. Starting the thread costs
about 0.2 ms per file.

What Python itself rejects as too deep ("too many nested parentheses", "maximum recursion depth
exceeded during ast construction") is caught before libcst sees it: `python_rejects`.
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Callable, Optional, TypeVar

R = TypeVar("R")

STACK_BYTES = 1 << 30
# Python frames per level of nesting are few (3.11 calls Python from Python without the C
# stack), but libcst's codegen takes two per level: a 20,000-term `a and b and ...` needs 40,000
# and more. Paths that recurse through C too (`copy.deepcopy`, libcst's `visit`) take a few KiB
# per frame: 1 GiB holds this many (measured: a 30,000-deep `and` chain's deepcopy ends in
# RecursionError, not a crash; the parse of a 50,000-term chain needs 32-64 MiB of it).
RECURSION_LIMIT = 100_000
_THREAD_NAME = "dynalint-deep"
_lock = threading.Lock()
_active = 0
_saved_limit = 0


def call_deep(fn: Callable[..., R], *args, **kwargs) -> R:
    """fn(*args, **kwargs) on a large-stack thread (or directly when already on one); its
    exception, if any, is raised here."""
    if threading.current_thread().name == _THREAD_NAME:
        return fn(*args, **kwargs)
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    _enter()
    try:
        with _lock:
            previous = threading.stack_size(STACK_BYTES)
            try:
                thread = threading.Thread(target=target, name=_THREAD_NAME, daemon=True)
                thread.start()
            finally:
                threading.stack_size(previous)
        thread.join()
    finally:
        _leave()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _enter() -> None:
    # The recursion limit is the interpreter's: raised while any deep call runs, restored after.
    global _active, _saved_limit
    with _lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _active += 1


def _leave() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            sys.setrecursionlimit(_saved_limit)


# Python refuses more than 200 nested brackets; libcst crashes somewhere past 1,000 on the main
# thread. Counting brackets (in strings and comments too) costs far less than Python's parser:
# only a file that may nest this deep is handed to `compile`.
_SUSPECT_BRACKET_DEPTH = 100
_BRACKETS = re.compile(r"[^()\[\]{}]+")
_DEPTH_STEP = str.maketrans({"(": "1", "[": "1", "{": "1", ")": "0", "]": "0", "}": "0"})
# A line this long may hold an operator chain too deep for Python's parser.
_SUSPECT_LINE_LENGTH = 5_000


# Python keeps `a and b and c` flat (one BoolOp), libcst nests it one level per operator, and the
# analysis then needs two frames per level (codegen): 40,000 terms are analysed (24 CPU s,
# 0.8 GB), 50,000 end in a RecursionError after as long, 300,000 in one after 62 CPU s and 5 GB
# (libcst's tree), and some millions could exhaust the 1 GiB stack inside libcst's native
# parser. Deeper than this, a file is a finding before libcst sees it.
MAX_LIBCST_DEPTH = 40_000


def python_rejects(source: str) -> Optional[str]:
    """Python's own reason for refusing a file that nests too deeply, when the file looks as if
    it might (deep brackets, a very long line); None otherwise (also when Python accepts it)."""
    found = rejects(source)
    return found[1] if found is not None and found[0] == "DYN001" else None


def rejects(source: str) -> Optional[tuple[str, str]]:
    """(code, reason) for a file too deep to analyse, when the file looks as if it might nest
    deeply (deep brackets, a very long line, tens of thousands of `and`/`or`): DYN001 with
    Python's own reason when Python refuses it, DYN002 when Python accepts it but libcst would
    nest it deeper than MAX_LIBCST_DEPTH; None otherwise. The last answer is kept: a run asks
    about the same text before parsing it (`prepare`) and before analysing it."""
    if _last_rejects[0] is source:
        return _last_rejects[1]
    found = _rejects(source)
    _last_rejects[:] = [source, found]
    return found


_last_rejects: list = [None, None]


# `and` / `or` as words, in code, strings or comments alike: never fewer than the operators.
_BOOL_WORD = re.compile(r"\b(?:and|or)\b")


def _bool_words(source: str) -> int:
    """At least the number of `and` / `or` operators in source (`(a)and(b)` too): the plain
    substring count when that is below MAX_LIBCST_DEPTH (0.01 s for 7 MB), else the word count
    (0.3 s; a 200,000-line model file holds 48,000 "or"s in `forward` and `torch`)."""
    found = source.count("and") + source.count("or")
    if found < MAX_LIBCST_DEPTH:
        return found
    return sum(1 for _ in _BOOL_WORD.finditer(source))


def _rejects(source: str) -> Optional[tuple[str, str]]:
    bool_words = _bool_words(source)
    if bool_words < MAX_LIBCST_DEPTH and not _may_be_too_deep(source):
        return None
    import ast

    try:
        tree = compile(source, "<dynalint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return "DYN001", f"SyntaxError: {exc.msg}"
    except RecursionError:
        return "DYN001", "Python cannot parse it: nested too deeply (RecursionError during parsing)"
    except MemoryError:
        return "DYN001", "Python cannot parse it: nested too deeply (MemoryError during parsing)"
    except ValueError as exc:  # null bytes
        return "DYN001", f"SyntaxError: {str(exc).splitlines()[0] if str(exc) else 'invalid source'}"
    if bool_words >= MAX_LIBCST_DEPTH:  # only then can an `and`/`or` chain be that long
        depth, row = _libcst_depth(tree)
        if depth > MAX_LIBCST_DEPTH:
            return "DYN002", (
                f"cannot analyse file: nested too deeply (an expression on line {row} is {depth:,} "
                f"levels deep for libcst; the limit is {MAX_LIBCST_DEPTH:,})"
            )
    return None


def _libcst_depth(tree) -> tuple[int, int]:
    """(about how deep libcst's tree of this file nests, the line where it is deepest): the
    syntax tree's depth, with `a and b and c` counted as libcst nests it, one level per operator."""
    import ast

    deepest, row = 0, 1
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 1
            if depth > deepest:
                deepest, row = depth, node.lineno
        elif depth > deepest:
            deepest, row = depth, getattr(node, "lineno", row)
        depth += 1
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return deepest, row


def _may_be_too_deep(source: str) -> bool:
    opens = source.count("(") + source.count("[") + source.count("{")
    if opens >= _SUSPECT_BRACKET_DEPTH and _max_bracket_depth(source) >= _SUSPECT_BRACKET_DEPTH:
        return True
    if len(source) >= _SUSPECT_LINE_LENGTH:
        return max(map(len, source.split("\n"))) >= _SUSPECT_LINE_LENGTH
    return False


def _max_bracket_depth(source: str) -> int:
    depth = deepest = 0
    for step in _BRACKETS.sub("", source).translate(_DEPTH_STEP):
        if step == "1":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest

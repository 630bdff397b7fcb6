"""Imports a fix needs or leaves unused: the local name of `torch`, adding `import torch` once, in the
right place, and removing a debugger import (`import pdb`) that a fix made unused.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

import libcst as cst

from dynalint.findings import Edit
from dynalint.lint.nodes import dotted, is_docstring
from dynalint.lint.variables import variable_reads

from .base import SourceInfo, insert_line_before



# The import lines of the last module asked about: every fix of a file asks (a file of
# thousands of findings walked its module body that many times).
_IMPORT_LINES: list = [None, ()]


def _top_level_import_lines(module: cst.Module) -> tuple[cst.SimpleStatementLine, ...]:
    """Import lines at module level, including those under a top-level `if` / `try`
    (`if is_torch_available(): import torch`), where the name is bound whenever the code runs
    (not under `if TYPE_CHECKING:`, which never runs)."""
    if _IMPORT_LINES[0] is not module:
        _IMPORT_LINES[0], _IMPORT_LINES[1] = module, tuple(_walk_top_level_import_lines(module))
    return _IMPORT_LINES[1]


def _walk_top_level_import_lines(module: cst.Module) -> Iterable[cst.SimpleStatementLine]:
    stack = list(reversed(module.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, cst.SimpleStatementLine):
            if any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                yield stmt
        elif isinstance(stmt, cst.Try) or (isinstance(stmt, cst.If) and not _is_type_checking(stmt.test)):
            inner = list(stmt.body.body) if isinstance(stmt.body, cst.IndentedBlock) else []
            stack.extend(reversed(inner))


def _is_type_checking(test: cst.BaseExpression) -> bool:
    """`if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:`: its imports are never bound at run time."""
    name = dotted(test)
    return name is not None and name.split(".")[-1] == "TYPE_CHECKING"


def torch_name(module: cst.Module) -> Optional[str]:
    """The name `torch` is bound to at module level (`import torch as th` -> "th"), if any."""
    found: Optional[str] = None
    for line in _top_level_import_lines(module):
        for small in line.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                full = dotted(alias.name)
                if full is None:
                    continue
                if alias.asname is not None:
                    if full == "torch" and isinstance(alias.asname.name, cst.Name):
                        found = found or alias.asname.name.value
                elif full == "torch" or full.startswith("torch."):
                    return "torch"  # `import torch.nn` binds `torch` too
    return found


def imports_torch(module: cst.Module) -> bool:
    """Does the file import torch (or a part of it) at module level? Then one more
    `import torch` there changes nothing about where the file can be imported."""
    for line in _top_level_import_lines(module):
        if _imports_torch_submodule(line):
            return True
        for small in line.body:
            if isinstance(small, cst.Import) and any(dotted(a.name) == "torch" for a in small.names):
                return True
    return False


# Helpers a file may already import to ask "is Dynamo tracing?": `(module, name)`, module None
# for any module (transformers' `is_torchdynamo_compiling`, which also works on old torch).
IS_COMPILING_HELPERS = ((None, "is_torchdynamo_compiling"), ("torch.compiler", "is_compiling"))


def is_compiling_helper(module: cst.Module) -> Optional[str]:
    """The local name of an is-compiling helper imported at module level, if any."""
    for line in _top_level_import_lines(module):
        for small in line.body:
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            source = None if small.module is None else dotted(small.module)
            for alias in small.names:
                name = alias.name.value if isinstance(alias.name, cst.Name) else None
                if any(name == n and (m is None or (m == source and not small.relative)) for m, n in IS_COMPILING_HELPERS):
                    local = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(local, cst.Name):
                        return local.value
    return None


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _is_future_import(stmt: cst.CSTNode) -> bool:
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return False
    small = stmt.body[0]
    return isinstance(small, cst.ImportFrom) and small.module is not None and dotted(small.module) == "__future__"


def _imports_torch_submodule(stmt: cst.SimpleStatementLine) -> bool:
    for small in stmt.body:
        if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            mod = dotted(small.module) or ""
            if mod == "torch" or mod.startswith("torch."):
                return True
        if isinstance(small, cst.Import):
            for alias in small.names:
                name = dotted(alias.name) or ""
                if name.startswith("torch."):
                    return True
    return False


def import_torch_edit(info: SourceInfo, positions) -> Edit:
    """Where `import torch` goes: before the first `from torch ...` of the leading import block,
    else after that block's last import, else after the docstring and `__future__` imports, else
    at the top of the code (after the file's header comments)."""
    body = list(info.module.body)
    i = 0
    if body and is_docstring(body[0]):
        i = 1
    while i < len(body) and _is_future_import(body[i]):
        i += 1
    after: Optional[cst.CSTNode] = body[i - 1] if i > 0 else None
    j = i
    while j < len(body) and _is_import_line(body[j]):
        if _imports_torch_submodule(body[j]):
            row = positions[body[j]].start.line
            return insert_line_before(row, "import torch" + info.newline)
        after = body[j]
        j += 1
    line = "import torch" + info.newline
    if after is not None:
        return _insert_line_after(info, positions[after].end.line, "import torch")
    if body:
        # Code follows directly: keep it apart as formatters would (two blank lines before a
        # def or class, one before other statements).
        blank = 2 if isinstance(body[0], (cst.FunctionDef, cst.ClassDef)) else 1
        return insert_line_before(positions[body[0]].start.line, line + info.newline * blank)
    return insert_line_before(len(info.lines) + 1, line)


def bound_module_name(module: cst.Module, wanted: str) -> Optional[str]:
    """The local name a top-level `import wanted` (or `import wanted as w`) binds, if any."""
    for line in _top_level_import_lines(module):
        for small in line.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                if dotted(alias.name) != wanted:
                    continue
                if alias.asname is None:
                    return wanted
                if isinstance(alias.asname.name, cst.Name):
                    return alias.asname.name.value
    return None


def leading_block_end(body: list) -> Optional[cst.CSTNode]:
    """The last statement of a module's leading block: its docstring, `__future__` imports and
    imports (where new imports and module-level helpers go); None when the code starts at once."""
    i = 1 if body and is_docstring(body[0]) else 0
    while i < len(body) and _is_future_import(body[i]):
        i += 1
    while i < len(body) and _is_import_line(body[i]):
        i += 1
    return body[i - 1] if i > 0 else None


def import_module_edit(info: SourceInfo, positions, module: str) -> Edit:
    """`import module` after the leading import block (else after the docstring and `__future__`
    imports, else at the top of the code)."""
    body = list(info.module.body)
    after = leading_block_end(body)
    if after is not None:
        return _insert_line_after(info, positions[after].end.line, f"import {module}")
    line = f"import {module}" + info.newline
    if body:
        blank = 2 if isinstance(body[0], (cst.FunctionDef, cst.ClassDef)) else 1
        return insert_line_before(positions[body[0]].start.line, line + info.newline * blank)
    return insert_line_before(len(info.lines) + 1, line)


def _insert_line_after(info: SourceInfo, row: int, content: str) -> Edit:
    """A new line after line `row`, also when that line is the file's last and has no line ending."""
    if row < len(info.lines):
        return insert_line_before(row + 1, content + info.newline)
    end = len(info.line(row))
    if info.lines and info.lines[-1].endswith(("\n", "\r")):
        return insert_line_before(row + 1, content + info.newline)
    return Edit(info.newline + content, row, end + 1, row, end + 1)


def torch_reference(info: SourceInfo, positions) -> tuple[str, list[Edit]]:
    """The name to write for torch in a fix, and the edit adding `import torch` when none is bound."""
    name = torch_name(info.module)
    if name is not None:
        return name, []
    return "torch", [import_torch_edit(info, positions)]


# --------------------------------------------------------------------------------------------
# Debugger imports

DEBUGGER_MODULES = frozenset({"pdb", "ipdb", "pudb", "IPython", "code", "IPython.core.debugger"})


def debugger_import_names(stmt: cst.CSTNode) -> Optional[set[str]]:
    """Local names bound by a line that only imports debugger modules (`import pdb`,
    `import ipdb as dbg`, `from IPython import embed`); None for any other line."""
    if not _is_import_line(stmt):
        return None
    names: set[str] = set()
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                full = dotted(alias.name) or ""
                if full not in DEBUGGER_MODULES:
                    return None
                local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else full.split(".")[0]
                names.add(local)
        else:
            if small.relative or small.module is None or (dotted(small.module) or "") not in DEBUGGER_MODULES:
                return None
            if isinstance(small.names, cst.ImportStar):
                return None
            for alias in small.names:
                local = alias.asname.name if alias.asname is not None else alias.name
                if not isinstance(local, cst.Name):
                    return None
                names.add(local.value)
    return names


def name_uses(root: cst.CSTNode, name: str, skip: Iterable[cst.CSTNode] = ()) -> int:
    """How often `name` appears as a variable reference under root (attribute names and keyword
    argument names do not count, nor import statements), leaving out the `skip` subtrees."""
    return len(variable_reads(root, name, skip, skip_imports=True))


def debugger_import_lines(
    info: SourceInfo, skip: Iterable[cst.CSTNode] = ()
) -> Iterator[tuple[cst.SimpleStatementLine, set[str]]]:
    """The debugger-only import lines anywhere in the file (`import pdb` often sits in the
    function), with the names each binds, leaving out the `skip` subtrees."""
    skip_ids = {id(n) for n in skip}
    stack: list[cst.CSTNode] = [info.module]
    while stack:
        node = stack.pop()
        if id(node) in skip_ids:
            continue
        if isinstance(node, cst.SimpleStatementLine):
            names = debugger_import_names(node)
            if names:
                yield node, names
            continue
        if isinstance(node, cst.BaseExpression):
            continue
        stack.extend(node.children)


def unused_debugger_imports(info: SourceInfo, removed: Iterable[cst.CSTNode]) -> list[cst.SimpleStatementLine]:
    """Debugger-only import lines whose names are no longer used once the `removed` statements
    are gone."""
    removed = list(removed)
    return [
        stmt
        for stmt, names in debugger_import_lines(info, skip=removed)
        if all(name_uses(info.module, n, skip=removed) == 0 for n in names)
        and any(name_uses(info.module, n) > 0 for n in names)
    ]

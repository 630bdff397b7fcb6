"""Which models `dynalint migrate` verifies: read MODELS.py without importing it.

The convention: a model is a function with no required arguments that returns
`(module, example_inputs)` (or a module alone when it needs no inputs, which verify cannot run).
MODELS.py names them either in a `MODELS = {"name": function, ...}` dict of literal string keys and
callables (a function's name, a lambda, any expression), or by defining (or importing) functions called `dynalint_<name>`. When both are
present, both are used; the dict wins on a name clash.

Reading is static (ast) so that the CLI process never imports torch or the user's code; the
verify child imports MODELS.py and calls the function.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from pathlib import Path

PREFIX = "dynalint_"


class ModelsFileError(Exception):
    """MODELS.py cannot be read or does not follow the convention (a usage error)."""


@dataclass(frozen=True)
class ModelEntry:
    name: str  # the model's name in the report
    function: str  # attribute of MODELS.py the verify child calls
    line: int
    end_line: int = 0  # last line of its `def` in MODELS.py (0: imported)


def _defined_names(tree: ast.Module) -> set[str]:
    """Top-level functions and imported names: what a MODELS entry may refer to."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return names


def _models_dict(tree: ast.Module) -> ast.Dict | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MODELS" for t in node.targets):
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "MODELS":
            value = node.value
        else:
            continue
        if not isinstance(value, ast.Dict):
            raise ModelsFileError(f"line {node.lineno}: MODELS must be a dict literal {{\"name\": function, ...}}")
        return value
    return None


def _dict_entries(table: ast.Dict, defined: set[str]) -> list[ModelEntry]:
    entries = []
    for key, value in zip(table.keys, table.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise ModelsFileError(f"line {value.lineno}: MODELS keys must be string literals")
        if not isinstance(value, ast.Name):
            # Any other callable (a lambda, functools.partial(...), module.make_net): the verify
            # child imports MODELS.py anyway and calls what the dict holds.
            entries.append(ModelEntry(key.value, f"MODELS[{key.value!r}]", value.lineno))
            continue
        if value.id not in defined:
            raise ModelsFileError(f"line {value.lineno}: MODELS[{key.value!r}] names {value.id!r}, which MODELS.py does not define")
        entries.append(ModelEntry(key.value, value.id, value.lineno))
    return entries


def _prefixed_entries(tree: ast.Module) -> list[ModelEntry]:
    entries = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(PREFIX):
            entries.append(ModelEntry(node.name[len(PREFIX):] or node.name, node.name, node.lineno, node.end_lineno))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                local = alias.asname or alias.name
                if local.startswith(PREFIX):
                    entries.append(ModelEntry(local[len(PREFIX):] or local, local, node.lineno))
    return entries


def _def_spans(tree: ast.Module) -> dict[str, tuple[int, int]]:
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out[node.name] = (start, node.end_lineno)
    return out


def source_for(text: str, entry: ModelEntry, entries: list[ModelEntry]) -> str:
    """MODELS.py as far as this model is concerned: its syntax tree without the other models' functions.

    Resuming compares it, so adding or editing one model does not re-verify the others, while a
    change to shared code in MODELS.py (imports, helpers, constants) re-verifies them all.
    Comments and blank lines do not count.
    """
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    others = {e.function for e in entries if e.function != entry.function}
    tree.body = [node for node in tree.body
                 if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in others)]
    return ast.dump(tree)


def read_models(path: Path) -> list[ModelEntry]:
    """The models MODELS.py names, in file order; raises ModelsFileError."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelsFileError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise ModelsFileError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    table = _models_dict(tree)
    entries = _dict_entries(table, _defined_names(tree)) if table is not None else []
    taken = {e.name for e in entries}
    entries += [e for e in _prefixed_entries(tree) if e.name not in taken]
    spans = _def_spans(tree)
    entries = [replace(e, end_line=spans[e.function][1]) if e.function in spans else e for e in entries]
    if not entries:
        raise ModelsFileError(
            f"{path} names no models: add a MODELS = {{\"name\": function}} dict or functions named dynalint_<name> "
            "that return (module, example_inputs)"
        )
    seen: set[str] = set()
    for e in entries:
        if e.name in seen:
            raise ModelsFileError(f"{path}:{e.line}: model {e.name!r} is named twice")
        seen.add(e.name)
    return entries

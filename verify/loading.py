"""Child-side: import the user's target (optionally with in-memory source overrides), build the
module and its inputs. Runs only inside the verify child process; imports torch lazily.

Stage errors are raised as `StageError(kind, message)` so the parent can print one clear line.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import linecache
import os
import re
import sys
from typing import Any, Optional


# What user code may raise that verify reports as one line: sys.exit() in a model file or a
# forward is the user's failure too, not verify's.
USER_ERRORS = (Exception, SystemExit)


class StageError(Exception):
    """A failure the user can act on: `kind` names the stage (import, construct, inputs, forward...)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def describe(exc: BaseException) -> str:
    """`TypeError: __init__() missing 1 required positional argument: 'dim'` (first line only)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


# --------------------------------------------------------------------------------------------
# In-memory source overrides: the fixed text replaces a file's text for this process only.


class _OverrideLoader(importlib.machinery.SourceFileLoader):
    """Compile the override text under the real path (so Dynamo reports real file names), no .pyc."""

    def __init__(self, fullname: str, path: str, text: str):
        super().__init__(fullname, path)
        self.text = text

    def get_code(self, fullname):
        return compile(self.text, self.path, "exec", dont_inherit=True)

    def get_source(self, fullname):
        return self.text

    def set_data(self, *args, **kwargs):  # never write bytecode for text that is not on disk
        return None


class _OverrideFinder(importlib.abc.MetaPathFinder):
    def __init__(self, overrides: dict[str, str]):
        self.overrides = overrides

    def find_spec(self, fullname, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin:
            return None
        text = self.overrides.get(os.path.realpath(spec.origin))
        if text is None:
            return None
        loader = _OverrideLoader(fullname, spec.origin, text)
        return importlib.util.spec_from_file_location(
            fullname, spec.origin, loader=loader, submodule_search_locations=spec.submodule_search_locations
        )


def install_overrides(overrides: Optional[dict[str, str]]) -> dict[str, str]:
    """Serve overridden files' text to imports and to linecache (tracebacks, inspect.getsource)."""
    resolved = {os.path.realpath(p): text for p, text in (overrides or {}).items()}
    if resolved:
        sys.meta_path.insert(0, _OverrideFinder(resolved))
        for path, text in resolved.items():
            lines = text.splitlines(keepends=True)
            linecache.cache[path] = (len(text), None, lines, path)
    return resolved


# --------------------------------------------------------------------------------------------
# Targets: "path/to/file.py::Name" or "package.module:Name"


def split_target(target: str) -> tuple[str, str, str]:
    """-> (kind, where, name): kind "file" (where = path) or "module" (where = dotted name)."""
    if "::" in target:
        where, name = target.rsplit("::", 1)
        kind = "file"
    elif ":" in target:
        where, name = target.rsplit(":", 1)
        kind = "module"
    else:
        raise StageError("usage", f"target {target!r} must be `path/to/file.py::Name` or `package.module:Name`")
    if not where or not name:
        raise StageError("usage", f"target {target!r} must be `path/to/file.py::Name` or `package.module:Name`")
    return kind, where, name


def _package_root(path: str) -> tuple[str, str]:
    """Dotted module name and the folder to put on sys.path (climbing while folders are packages)."""
    parts = [os.path.splitext(os.path.basename(path))[0]]
    folder = os.path.dirname(path)
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts), folder


def _import_file(path: str, overrides: dict[str, str]):
    path = os.path.realpath(path)
    if not os.path.isfile(path):
        raise StageError("import", f"no such file: {path}")
    dotted, root = _package_root(path)
    if root not in sys.path:
        sys.path.insert(0, root)
    if "." in dotted:  # inside a package: import it by name so relative imports work
        return importlib.import_module(dotted)
    # A loose file: a private name, so a file called `copy.py` or `model.py` shadows nothing.
    name = f"_dynalint_target_{dotted}"
    text = overrides.get(path)
    loader = _OverrideLoader(name, path, text) if text is not None else None
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def import_object(target: str, overrides: dict[str, str]) -> Any:
    kind, where, name = split_target(target)
    try:
        module = _import_file(where, overrides) if kind == "file" else importlib.import_module(where)
    except StageError:
        raise
    except USER_ERRORS as exc:
        raise StageError("import", f"cannot import {where}: {describe(exc)}") from exc
    item = _ITEM.fullmatch(name)  # `MODELS['net']`: an entry of a dict (dynalint migrate)
    obj = module
    for part in (item.group(1) if item else name).split("."):
        if not hasattr(obj, part):
            raise StageError("import", f"{where} has no attribute {name!r}")
        obj = getattr(obj, part)
    if item is not None:
        import ast

        try:
            obj = obj[ast.literal_eval(item.group(2))]
        except (KeyError, TypeError, ValueError, SyntaxError) as exc:
            raise StageError("import", f"{where} has no entry {name!r}") from exc
    return obj


_ITEM = re.compile(r"([\w.]+)\[(.+)\]")


def read_callable_spec(spec: str, overrides: dict[str, str], option: str = "--inputs") -> Any:
    """`--inputs path.py::fn` / `pkg.mod:fn` -> the function; errors name the option."""
    try:
        fn = import_object(spec, overrides)
    except StageError as exc:
        raise StageError("inputs", f"{option} {spec}: {exc.message}") from exc
    if not callable(fn):
        raise StageError("inputs", f"{option} {spec}: {type(fn).__name__} is not a function")
    return fn


# --------------------------------------------------------------------------------------------
# Building the module under test


def _required_params(fn) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def build_target(obj: Any, target: str, target_args: Optional[dict] = None) -> tuple[str, Any, Any]:
    """-> (kind, callable under test, example inputs or None).

    kind: "class" (nn.Module subclass built with no arguments), "factory" (function returning a
    module or `(module, example_inputs)`), "instance" (a module object), "function" (a function
    with parameters: compiled itself).
    """
    import torch

    if isinstance(obj, torch.nn.Module):
        return "instance", obj, None
    if inspect.isclass(obj):
        if not issubclass(obj, torch.nn.Module):
            raise StageError("construct", f"{target} is a class but not a torch.nn.Module")
        target_args = dict(target_args or {})
        needed = [n for n in _required_params(obj.__init__)[1:] if n not in target_args]  # drop self
        if needed:
            raise StageError(
                "construct",
                f"{target} needs constructor arguments ({', '.join(needed)}); "
                "point verify at a function that builds it, e.g. `file.py::make_model`",
            )
        try:
            return "class", obj(**target_args), None
        except USER_ERRORS as exc:
            raise StageError("construct", f"building {target}() failed: {describe(exc)}") from exc
    if callable(obj):
        if _required_params(obj) and not target_args:
            return "function", obj, None
        try:
            made = obj(**dict(target_args or {}))
        except USER_ERRORS as exc:
            raise StageError("construct", f"calling {target}() failed: {describe(exc)}") from exc
        example = None
        if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
            made, example = made
        if not isinstance(made, torch.nn.Module):
            raise StageError(
                "construct",
                f"{target}() returned {type(made).__name__}, not a torch.nn.Module or (module, example_inputs)",
            )
        return "factory", made, example
    raise StageError("construct", f"{target} is not a module, a module class or a function")


def parse_target_args(items) -> dict:
    """`--arg seq=512 --arg name=base` -> {"seq": 512, "name": "base"} (Python literals, else strings)."""
    import ast

    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"{item!r} is not KEY=VALUE")
        try:
            out[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            out[key.strip()] = value.strip()
    return out


def split_inputs(value: Any) -> Optional[tuple[tuple, dict]]:
    """(args, kwargs) from a tuple/list of positional arguments, a dict of keyword arguments, or
    one tensor; None for anything else."""
    import torch

    if isinstance(value, dict):
        return (), dict(value)
    if isinstance(value, (tuple, list)):
        return tuple(value), {}
    if isinstance(value, torch.Tensor):
        return (value,), {}
    return None


def normalize_inputs(value: Any) -> tuple[tuple, dict]:
    """`split_inputs`, or a StageError the user can act on."""
    split = split_inputs(value)
    if split is None:
        raise StageError("inputs", f"inputs must be a tuple, a dict or a tensor, got {type(value).__name__}")
    return split


def make_inputs(spec: dict, example: Any, overrides: dict[str, str]) -> tuple[tuple, dict]:
    """Inputs in priority: --inputs function, --input-shape, the factory's example inputs."""
    import torch

    if spec.get("inputs"):
        fn = read_callable_spec(spec["inputs"], overrides)
        try:
            value = fn()
        except USER_ERRORS as exc:
            raise StageError("inputs", f"calling {spec['inputs']}() failed: {describe(exc)}") from exc
        return normalize_inputs(value)
    if spec.get("input_shape"):
        return (torch.randn(*[int(d) for d in spec["input_shape"]]),), {}
    if example is not None:
        return normalize_inputs(example)
    raise StageError("inputs", "no inputs: give --inputs path.py::fn or --input-shape 4,16")


def second_inputs(spec: dict, overrides: dict[str, str]) -> Optional[tuple[tuple, dict]]:
    """Inputs of other shapes, for counting recompiles (None when not asked for)."""
    import torch

    if spec.get("second_inputs"):
        fn = read_callable_spec(spec["second_inputs"], overrides, "--second-inputs")
        try:
            return normalize_inputs(fn())
        except StageError:
            raise
        except USER_ERRORS as exc:
            raise StageError("inputs", f"calling {spec['second_inputs']}() failed: {describe(exc)}") from exc
    if spec.get("second_input_shape"):
        return (torch.randn(*[int(d) for d in spec["second_input_shape"]]),), {}
    return None


def to_device(value: Any, device) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(to_device(v, device) for v in value)
    if isinstance(value, list):
        return [to_device(v, device) for v in value]
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


def model_files(kind: str, fn: Any, target_file: Optional[str], torch_dir: str) -> list[str]:
    """Source files of the code under test: the target file and every submodule class's file."""
    import torch

    files: list[str] = []

    def add(obj) -> None:
        try:
            path = inspect.getsourcefile(obj)
        except (TypeError, OSError):
            return
        if not path:
            return
        path = os.path.realpath(path)
        if path.startswith(torch_dir) or path in files:
            return
        files.append(path)

    if target_file:
        add_path = os.path.realpath(target_file)
        if add_path not in files:
            files.append(add_path)
    if isinstance(fn, torch.nn.Module):
        for sub in fn.modules():
            add(type(sub))
    else:
        add(inspect.unwrap(fn))
    return files


def module_classes(fn: Any, torch_dir: str) -> list[dict]:
    """Each distinct submodule class outside torch: qualname and file (compile-region roots)."""
    import torch

    out, seen = [], set()
    mods = fn.modules() if isinstance(fn, torch.nn.Module) else ()
    for sub in mods:
        cls = type(sub)
        if cls in seen:
            continue
        seen.add(cls)
        try:
            path = os.path.realpath(inspect.getsourcefile(cls) or "")
        except (TypeError, OSError):
            continue
        if not path or path.startswith(torch_dir):
            continue
        out.append({"qualname": cls.__qualname__, "file": path})
    return out


# --------------------------------------------------------------------------------------------
# A second version of the code in the same process (for interleaved timing)


def _module_file(module) -> Optional[str]:
    path = getattr(module, "__file__", None)
    return os.path.realpath(path) if isinstance(path, str) else None


def reexec_modules(texts: dict[str, str]) -> dict[str, Any]:
    """Fresh module objects, executed from `texts` ({real path: text}), for every imported module of
    those files. -> {module name: new module}. sys.modules keeps the old ones; names one new module
    imported from another re-executed file are rebound to that file's new objects."""
    texts = {os.path.realpath(p): t for p, t in texts.items()}
    olds = {name: m for name, m in list(sys.modules.items()) if _module_file(m) in texts}
    new: dict[str, Any] = {}
    for name, old in olds.items():
        path = _module_file(old)
        spec = importlib.util.spec_from_file_location(
            name, path, loader=_OverrideLoader(name, path, texts[path]),
            submodule_search_locations=getattr(old.__spec__, "submodule_search_locations", None))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # what runs at import may look itself up
        try:
            spec.loader.exec_module(module)
        finally:
            sys.modules[name] = old
        new[name] = module
    for module in new.values():
        for attr, value in list(vars(module).items()):
            owner = new.get(getattr(value, "__module__", None) or "")
            if owner is None or owner is module:
                continue
            replacement = _by_qualname(owner, getattr(value, "__qualname__", ""))
            if replacement is not None:
                vars(module)[attr] = replacement
    return new


def _by_qualname(module, qualname: str) -> Any:
    obj = module
    for part in qualname.split("."):
        if part == "<locals>":
            return None
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def swap_classes(root, new_modules: dict[str, Any]) -> int:
    """Point every submodule of `root` whose class lives in a re-executed module at the class of
    the same name in the new module (weights and state stay). -> how many were switched."""
    switched = 0
    for sub in root.modules():
        cls = type(sub)
        module = new_modules.get(cls.__module__)
        if module is None:
            continue
        replacement = _by_qualname(module, cls.__qualname__)
        if isinstance(replacement, type) and replacement is not cls:
            sub.__class__ = replacement
            switched += 1
    return switched

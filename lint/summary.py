"""What phase 1 (`lint.analyzer`) learns about one file, as plain data: the cache holds it,
and everything after phase 1 (compile regions, cross-file facts, selection) reads only this.

Kept apart from the analyzer so that a run served from the cache never imports libcst.
"""

from __future__ import annotations

import builtins
import hashlib
from dataclasses import dataclass, field
from typing import Any, Optional

from dynalint.findings import Finding

# `FileSummary.imports` keys for star imports (`from .layers import *` -> {"*pkg.layers":
# "pkg.layers"}): no local name starts so.
STAR_PREFIX = "*"
# Names Python binds in every module: a bare one is never a star-imported name.
BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass
class FunctionInfo:
    qualname: str  # dotted: module.Class.method or module.func
    cls: Optional[str]  # dotted class name when a method
    name: str
    compile_root: bool = False  # decorated with @torch.compile
    disabled: bool = False  # decorated with @torch.compiler.disable and friends
    returns_tensor: bool = False  # some `return` gives a tensor (callers in other files use it)
    # Parameters some `return` gives back as they came in, as [position, name, kind of the
    # default] (`def default(val, d): return val if exists(val) else d`): a call's value is its
    # arguments' kinds there (callers in other files use it too).
    passthrough: list = field(default_factory=list)
    # A module-level function that defines a wrapper (a nested function decorated with `wraps` or
    # taking `*args`) or returns what such a function of its file returns: a decorator whose
    # wrapper runs in place of what it decorates (not one that registers, or warns and returns
    # its argument, whose body runs at import). `filefacts.wrapper_functions`.
    wraps: bool = False
    # Calls made from live code: ("name", dotted) | ("self", method) | ("selfattr", attr, method)
    # | ("super", method)
    edges: list[tuple] = field(default_factory=list)


@dataclass
class ClassInfo:
    qualname: str
    bases: list[str]
    methods: list[str]
    # attribute -> dotted class names of the submodule(s) stored there (ModuleList elements too)
    attr_types: dict[str, list[str]] = field(default_factory=dict)
    # attribute -> plain functions stored there and called as `self.<attr>(...)`: a dotted
    # function (`self.backend_fn = parallel_stabilized`), "self:<method>" (`self.fn =
    # self._naive`) or "<dotted registry>[]" (`self.pointwise = REGISTRY[name]`)
    attr_callables: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class FileSummary:
    filename: str
    module: str
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    compile_targets: list[str] = field(default_factory=list)  # dotted names given to torch.compile()
    findings: list[Finding] = field(default_factory=list)
    # Lines carrying `# noqa` comments: row -> None (bare) or list of codes.
    noqa: dict[int, Optional[list[str]]] = field(default_factory=dict)
    # Tensors passed to functions of other files: dotted callee -> {position or keyword: kind}.
    # The engine turns them into the callee's parameter hints (`external_hints`).
    call_hints: dict[str, dict[str, str]] = field(default_factory=dict)
    # Module-level dicts whose values are all functions or classes named by the file
    # (`REGISTRY = {"vanilla": slstm_forward}`): dotted name -> the dotted values.
    registries: dict[str, list[str]] = field(default_factory=dict)
    # What other files told this file's analysis (`lint/hints.py`: {"hints", "returns"}), None
    # when nothing: re-analysing the file alone with them (after a fix) gives the same kinds.
    facts: Optional[dict[str, Any]] = None

    def to_cache(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "module": self.module,
            "imports": self.imports,
            "classes": {k: vars(v) for k, v in self.classes.items()},
            "functions": {k: vars(v) for k, v in self.functions.items()},
            "compile_targets": self.compile_targets,
            "findings": [f.to_cache() for f in self.findings],
            "noqa": {str(k): v for k, v in self.noqa.items()},
            "call_hints": self.call_hints,
            "registries": self.registries,
            "facts": self.facts,
        }

    @classmethod
    def from_cache(cls, d: dict[str, Any]) -> "FileSummary":
        return cls(
            filename=d["filename"],
            module=d["module"],
            imports=d["imports"],
            classes={k: ClassInfo(**v) for k, v in d["classes"].items()},
            functions={k: _function_info(v) for k, v in d["functions"].items()},
            compile_targets=d["compile_targets"],
            findings=[Finding.from_cache(f) for f in d["findings"]],
            noqa={int(k): v for k, v in d["noqa"].items()},
            call_hints=d.get("call_hints", {}),
            registries=d.get("registries", {}),
            facts=d.get("facts"),
        )


_FUNCTION_FIELDS = frozenset(FunctionInfo.__dataclass_fields__)


def _function_info(v: dict[str, Any]) -> FunctionInfo:
    """`FunctionInfo(**v)` without the dataclass constructor when the entry has every field and
    its edges are tuples (as marshal keeps them): a warm whole-tree run makes ~40,000 of these."""
    edges = v["edges"]
    if v.keys() != _FUNCTION_FIELDS or (edges and type(edges[0]) is not tuple):
        return FunctionInfo(**{**v, "edges": [tuple(e) for e in edges]})
    info = FunctionInfo.__new__(FunctionInfo)
    info.__dict__.update(v)
    return info


# Parts of a summary entry that nothing across files reads (and the fingerprint itself).
LOCAL_FIELDS = ("findings", "noqa", "facts", "interface")


def interface_fingerprint(entry: dict[str, Any]) -> str:
    """Digest of what the cross-file phases (`lint/hints.py`, `lint/regions.py`) read from a
    summary entry: its imports, classes, functions, compile targets and call hints. The engine
    stores it in each entry it computes ("interface"). `repr`, not `marshal`: marshal's bytes
    depend on which equal objects happen to be shared."""
    known = entry.get("interface")
    if known is not None:
        return known
    rest = [(k, v) for k, v in entry.items() if k not in LOCAL_FIELDS]
    return hashlib.sha256(repr(rest).encode("utf-8", "surrogatepass")).hexdigest()[:24]

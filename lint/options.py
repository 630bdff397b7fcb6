"""What one file's analysis is told from outside the file: the configuration's is-compiling
helpers and rule selection, and the facts other files give it (see `lint.hints`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Optional


@dataclass
class AnalyzerOptions:
    is_compiling_functions: frozenset[str] = frozenset()
    # The configuration's `extra-roots` (dotted names, or patterns such as `pkg.ops.*`): a
    # function of this file named there is a compiled root, its parameters presumed tensors.
    extra_roots: frozenset[str] = frozenset()
    rule_codes: Optional[frozenset[str]] = None  # None: all rules
    # function qualname -> {parameter position (as str) or name: kind}: tensors that callers in
    # other files pass (computed by the engine from the other files' `call_hints`).
    external_hints: Optional[dict[str, dict[str, str]]] = None
    # qualnames of functions in other files that return tensors (`h = rms_normalize(x)`).
    external_returns: frozenset[str] = frozenset()
    # qualnames of functions in other files returning some of their parameters as they came
    # (`default(val, d)`) -> ((position, name, kind of the default), ...)
    external_passthrough: Optional[dict[str, tuple]] = None
    # class names as this file writes them (`LSTM` imported from another file) that derive from
    # nn.LSTM / GRU / RNN there (pytorch-forecasting's `class LSTM(RNN, nn.LSTM)`)
    external_rnn_types: frozenset[str] = frozenset()


def is_root_pattern(root: str) -> bool:
    """An `extra-roots` entry with shell wildcards (`pkg.ops.*`, `pkg.losses.*Loss.forward`)."""
    return any(c in root for c in "*?[")


def _pattern_head(root: str) -> str:
    """A pattern's text before its first wildcard (`pkg.ops.` of `pkg.ops.*`)."""
    return re.split(r"[*?\[]", root, maxsplit=1)[0]


def matches_root_pattern(qualname: str, pattern: str) -> bool:
    """A public function or method the pattern names: `*` spans dots, and a name starting with
    `_` (a private helper, `__init__`) is matched only where the pattern spells the underscore
    (compiled code reaches private helpers through the calls of the public ones); `__call__`
    (a loss object's) is public."""
    last = qualname.rpartition(".")[2]
    if last.startswith("_") and last != "__call__" and not pattern.rpartition(".")[2].startswith("_"):
        return False
    return fnmatchcase(qualname, pattern)


def pattern_may_name(root: str, module: str) -> bool:
    """An `extra-roots` pattern that may match a function of `module`: its text before the first
    wildcard and the module's dotted name agree as far as both go."""
    if not is_root_pattern(root):
        return False
    head = _pattern_head(root)
    own = f"{module}."
    return own.startswith(head) or head.startswith(own)


def meant_for(root: str, module: str) -> bool:
    """An `extra-roots` entry naming something of `module` itself (`pkg.mod.fn`,
    `pkg.mod.Class.method`, `pkg.mod.*`, `pkg.mod.Foo*`) or, for a pattern, of the modules under
    it: where it matches nothing while `module` is linted, it is misspelt. (`pkg.other.fn` says
    nothing about `pkg`: pre-commit lints the changed files only.)"""
    if is_root_pattern(root):
        head = _pattern_head(root)
        return f"{module}.".startswith(head) or head.rpartition(".")[0] == module
    parts = root.rsplit(".", 2)
    return root.rpartition(".")[0] == module or (len(parts) == 3 and parts[0] == module and parts[1][:1].isupper())

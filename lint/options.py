"""What one file's analysis is told from outside the file: the configuration's is-compiling
helpers and rule selection, and the facts other files give it (see `lint.hints`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class AnalyzerOptions:
    is_compiling_functions: frozenset[str] = frozenset()
    # The configuration's `extra-roots` (dotted names): a function of this file named there is a
    # compiled root, its parameters presumed tensors.
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

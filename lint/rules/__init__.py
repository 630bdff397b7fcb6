"""The rule catalog (its list is `lint/catalog.py`). Codes are public API: never renumber, only add."""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Optional

from ..catalog import RULE_MODULES
from ..rule import Rule


@lru_cache(maxsize=None)
def all_rules() -> tuple[Rule, ...]:
    out = []
    for name in RULE_MODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        out.append(mod.RULE())
    return tuple(out)


def rule_by_code(code: str) -> Optional[Rule]:
    for r in all_rules():
        if r.code == code.upper():
            return r
    return None


@lru_cache(maxsize=None)
def rules_by_node_type(codes: Optional[frozenset[str]] = None) -> dict[type, tuple[Rule, ...]]:
    table: dict[type, list[Rule]] = {}
    for r in all_rules():
        if codes is not None and r.code not in codes:
            continue
        for t in r.node_types:
            table.setdefault(t, []).append(r)
    return {k: tuple(v) for k, v in table.items()}

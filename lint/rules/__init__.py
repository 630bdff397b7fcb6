"""The rule catalog. Codes are public API: never renumber, only add."""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Optional

from ..rule import Rule

# One module per rule, in catalog order.
RULE_MODULES = (
    "dyn001_syntax_error",
    "dyn002_unreadable_file",
    "dyn101_print",
    "dyn102_debugger",
    "dyn103_logging",
    "dyn104_warnings",
    "dyn105_untraceable_call",
    "dyn106_numpy_scalar_math",
    "dyn107_none_under_compile",
    "dyn109_unsupported_context_manager",
    "dyn110_item",
    "dyn111_tolist",
    "dyn112_str_of_tensor",
    "dyn120_tensor_control_flow",
    "dyn121_data_dependent_loop",
    "dyn130_dynamic_shape_op",
    "dyn131_tensor_as_int",
    "dyn140_requires_grad_in_region",
    "dyn141_autograd_function_duplicate_input",
    "dyn142_buffer_reassigned",
    "dyn201_shape_branch",
    "dyn202_size_loop",
    "dyn203_self_mutation",
    "dyn301_host_sync",
)


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

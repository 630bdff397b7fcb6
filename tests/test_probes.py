"""Dynamo probes: each rule's invalid examples really break (or recompile) on the installed torch,
and the valid ones do not. A rule whose claim Dynamo does not confirm fails here."""

import pytest

from dynalint.lint.rule import BREAKS
from dynalint.lint.rules import all_rules

from .probes import run_probe, verdict

CASES = [
    pytest.param(ex, rule, id=f"{rule.code}-{kind}-{i}")
    for rule in all_rules()
    for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid))
    for i, ex in enumerate(examples)
    if ex.dynamo is not None
]


@pytest.mark.torch
@pytest.mark.parametrize("example,rule", CASES)
def test_dynamo_confirms_example(example, rule):
    for module in example.needs:
        pytest.importorskip(module)
    result = run_probe(example)
    assert verdict(example, result), f"expected {example.dynamo}, Dynamo gave {result}\n{example.source}"
    if example.dynamo == BREAKS and result.get("gb_ids"):
        # The break types Dynamo reports are among those the rule declares (its `gb_types`), or
        # those of the other rules the example marks (an expert loop's `.item()` is DYN110's).
        rules = {r.code: r for r in all_rules()}
        marked = {code for _, code in example.expected()} | {rule.code}
        declared = {gb_id for code in marked for gb_id, _ in rules[code].gb_types}
        assert set(result["gb_ids"]) <= declared, (
            f"{rule.code}: Dynamo reported {result['gb_ids']}, the rule declares {sorted(declared)}\n{example.source}")

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
    import torch

    # The rules declare the break types of torch 2.13's registry (CI's torch); GB codes of other
    # versions differ (2.14.1 gives SciPy calls another one).
    if example.dynamo == BREAKS and result.get("gb_ids") and torch.__version__.startswith("2.13."):
        # The break types Dynamo reports are among those the rule declares (its `gb_types`), or
        # those of the other rules the example marks (an expert loop's `.item()` is DYN110's).
        rules = {r.code: r for r in all_rules()}
        marked = {code for _, code in example.expected()} | {rule.code}
        declared = {gb_id for code in marked for gb_id, _ in rules[code].gb_types}
        assert set(result["gb_ids"]) <= declared, (
            f"{rule.code}: Dynamo reported {result['gb_ids']}, the rule declares {sorted(declared)}\n{example.source}")


@pytest.mark.torch
def test_jaxtyping_hints_under_beartype_never_compile_cleanly():
    """DYN114's jaxtyping example has no single verdict across torch versions (2.14.1 breaks,
    2.13 fails the check under compile): either way, the compiled call is not one clean graph."""
    pytest.importorskip("beartype")
    pytest.importorskip("jaxtyping")
    import torch

    from .probes import load_example, target_of

    rule = next(r for r in all_rules() if r.code == "DYN114")
    example = next(ex for ex in rule.invalid if "jaxtyping" in ex.source)
    torch._dynamo.reset()
    model = target_of(load_example(example))
    try:
        out = torch._dynamo.explain(model)(torch.randn(4, 4))
    except Exception as exc:  # torch 2.13: beartype's violation, raised only under compile
        assert "type" in str(exc).lower(), exc
        model(torch.randn(4, 4))  # eager: the same call passes its checks
    else:
        assert out.graph_break_count >= 1, out

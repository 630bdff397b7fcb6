"""Every rule's examples, linted: invalid ones report exactly the marked lines, valid ones nothing."""

import pytest

from dynalint.autofix import fix_source
from dynalint.config import Config
from dynalint.run.engine import lint_source
from dynalint.lint.rules import all_rules

ALL = Config(select=("ALL",))

CASES = [
    pytest.param(rule, kind, i, ex, id=f"{rule.code}-{kind}-{i}")
    for rule in all_rules()
    for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid))
    for i, ex in enumerate(examples)
]


@pytest.mark.parametrize("rule,kind,i,example", CASES)
def test_example_lints_as_marked(rule, kind, i, example):
    findings = lint_source(example.source, "example.py", ALL)
    got = sorted((f.row, f.code) for f in findings)
    assert got == example.expected(), "\n".join(f"{f.row}:{f.column} {f.code} {f.message}" for f in findings)
    if kind == "invalid":
        assert any(code == rule.code for _, code in got), f"{rule.code} invalid example reports no {rule.code}"
    else:
        assert not got


FIXED = [
    pytest.param(rule, i, ex, id=f"{rule.code}-invalid-{i}")
    for rule in all_rules()
    for i, ex in enumerate(rule.invalid)
    if ex.fixed is not None
]


@pytest.mark.parametrize("rule,i,example", FIXED)
def test_example_fixes_to_its_expected_code(rule, i, example):
    result = fix_source(example.source, "example.py", ALL, unsafe=True)
    assert result.text == example.fixed_source, result.text
    assert any(f.code == rule.code for f in result.fixed), f"no {rule.code} fix applied"


def test_every_fixable_rule_shows_a_fix():
    for rule in all_rules():
        if rule.fixable:
            assert any(ex.fixed is not None for ex in rule.invalid), f"{rule.code}: no example with `fixed=`"


def test_every_rule_has_docs_and_examples():
    for rule in all_rules():
        docs = rule.docs()
        assert docs.startswith(rule.code), rule.code
        for heading in ("## What it does", "## Example", "## Use instead"):
            assert heading in docs, (rule.code, heading)
        assert "## Why" in docs, rule.code
        # DYN002 (unreadable file) cannot be shown as source text; tests/test_cli covers it.
        assert rule.valid and (rule.invalid or rule.code == "DYN002"), rule.code


def test_a_float_counter_is_told_apart_also_when_set_in_a_tuple_assignment():
    # torchdyn's DEFunc: `self.nfe, self.vf = 0., vector_field`, then `self.nfe += 1` in forward:
    # Dynamo recompiles once, then makes the float dynamic (an int counter recompiles every call).
    source = (
        "import torch\nfrom torch import nn\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self, vf, steps=0):\n"
        "        super().__init__()\n"
        "        self.nfe, self.vf = 0., vf\n"
        "        self.calls, self.x = steps, 1\n\n"
        "    def forward(self, x):\n"
        "        self.nfe += 1\n"
        "        self.calls += 1\n"
        "        return self.vf(x)\n"
    )
    messages = {f.row: f.message for f in lint_source(source, "example.py", ALL) if f.code == "DYN203"}
    assert "(a float)" in messages[11] and "recompiles once" in messages[11]
    assert "(a float)" not in messages[12]


def test_the_catalog_severities_are_the_rules():
    from dynalint.lint.catalog import SEVERITIES

    assert {r.code: r.severity for r in all_rules() if r.severity != "error"} == SEVERITIES

"""Each graph-break rule names the Dynamo break types (GB codes) it predicts, and they exist in the
installed torch's registry under those names. (tests/test_probes.py checks that its probes'
breaks are among them.)"""

from __future__ import annotations

import importlib.util
import json
import os
import re

import pytest

from dynalint.lint.rules import all_rules

BREAK_RULES = [r for r in all_rules() if re.fullmatch(r"DYN1\d\d", r.code)]


def test_every_graph_break_rule_declares_its_gb_types():
    lacking = [r.code for r in BREAK_RULES if not r.gb_types]
    assert not lacking, f"DYN1xx rules without gb_types: {lacking}"
    for rule in BREAK_RULES:
        for gb_id, gb_type in rule.gb_types:
            assert re.fullmatch(r"GB\d{4}", gb_id) and gb_type.strip(), (rule.code, gb_id, gb_type)


def _registry():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], "_dynamo", "graph_break_registry.json")
    if not os.path.exists(path):
        pytest.skip("this torch has no graph_break_registry.json (torch < 2.8)")
    with open(path, encoding="utf-8") as fh:
        return {k.upper(): v[0]["Gb_type"] for k, v in json.load(fh).items()}


def test_gb_types_match_the_installed_registry():
    """Declared codes the installed registry has carry its type; a rule may also declare the codes
    another torch version gives its probes (marked with that version), which this one lacks."""
    registry = _registry()
    wrong = [(r.code, gb_id, gb_type, registry.get(gb_id))
             for r in BREAK_RULES for gb_id, gb_type in r.gb_types if registry.get(gb_id, gb_type) != gb_type]
    assert not wrong, f"(rule, id, declared type, registry's type): {wrong}"
    known = sum(1 for r in BREAK_RULES for gb_id, _ in r.gb_types if gb_id in registry)
    total = sum(len(r.gb_types) for r in BREAK_RULES)
    assert known >= total - 5, f"only {known} of {total} declared codes are in this torch's registry"

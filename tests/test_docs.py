"""docs/rules.md is what each finding's `url` points at: it must match the rules' docstrings."""

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynalint.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_rules_md_is_up_to_date():
    spec = importlib.util.spec_from_file_location("gen", ROOT / "docs" / "generate_rules_md.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / "docs" / "rules.md").read_text(encoding="utf-8") == gen.render(), "run python docs/generate_rules_md.py"


def test_rule_command_prints_docs_and_rejects_unknown_codes():
    runner = CliRunner()
    res = runner.invoke(main, ["rule", "DYN120"])
    assert res.exit_code == 0
    assert "## Why it breaks the graph" in res.output and "torch.where" in res.output
    res = runner.invoke(main, ["rule", "DYN999"])
    assert res.exit_code == 2


def test_rules_lists_every_code():
    from dynalint.lint.rules import all_rules

    res = CliRunner().invoke(main, ["rules"])
    assert res.exit_code == 0
    for r in all_rules():
        assert r.code in res.output


@pytest.mark.torch
def test_the_probe_record_covers_the_installed_torch_and_every_probed_example():
    """lint/probed.py (the rule docs' "Probed on") is current: rerun bench/probe_versions.py
    after adding or removing a probed example."""
    import torch

    from dynalint.lint.probed import PROBED
    from dynalint.lint.rules import all_rules

    version = torch.__version__.split("+")[0]
    for rule in all_rules():
        total = sum(ex.dynamo is not None for ex in rule.invalid + rule.valid)
        if not total:
            continue
        record = PROBED.get(rule.code, {}).get(version)
        assert record is not None and record["total"] == total, f"{rule.code}: run python bench/probe_versions.py"
        assert record["held"] == total, f"{rule.code} on torch {version}: {record['differs']}"
        assert f"- torch {version}: {total} of {total} examples behave as documented" in rule.docs()

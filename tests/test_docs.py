"""docs/rules.md is what each finding's `url` points at: it must match the rules' docstrings."""

import importlib.util
from pathlib import Path

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

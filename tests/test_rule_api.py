"""The rule API is `lint.rule.RuleContext`: rules and the fix generators they call use only its
names, and the walk (`lint.walk.FunctionContext`) provides every one of them."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst

from dynalint.lint.filefacts import FileAnalyzer
from dynalint.lint.options import AnalyzerOptions
from dynalint.lint.rule import RuleContext
from dynalint.lint.walk import FunctionContext

ROOT = Path(__file__).resolve().parents[1]
API = frozenset(name for name in vars(RuleContext) if not name.startswith("_"))


def _ctx_uses(path: Path) -> set[tuple[str, int]]:
    """(attribute, line) of every `ctx.attr` in the code of path (not in its strings)."""
    tree = ast.parse(path.read_text())
    return {
        (node.attr, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ctx"
    }


def test_rules_and_fixes_use_only_the_rule_context():
    paths = sorted((ROOT / "lint" / "rules").glob("dyn*.py")) + sorted((ROOT / "fixes").glob("*.py"))
    assert len(paths) > 30
    outside = [
        f"{path.relative_to(ROOT)}:{line}: ctx.{attr}"
        for path in paths
        for attr, line in sorted(_ctx_uses(path))
        if attr not in API
    ]
    assert outside == []
    used = {attr for path in paths for attr, _ in _ctx_uses(path)}
    assert {"report", "is_tensor", "kind", "call_name", "file_classes", "enclosing_tests"} <= used


def test_the_walk_provides_the_whole_rule_context():
    source = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    module = cst.parse_module(source)
    fa = FileAnalyzer(module, "m.py", "m", False, AnalyzerOptions())
    fa.scan_module_level()
    fn = module.body[1].body.body[0]
    ctx = FunctionContext(fa, fn, "m.M.forward", "m.M")
    missing = sorted(name for name in API if not hasattr(ctx, name))
    assert missing == []
    assert len(API) >= 20

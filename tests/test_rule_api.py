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


def _context(source: str):
    module = cst.parse_module(source)
    fa = FileAnalyzer(module, "m.py", "m", False, AnalyzerOptions())
    fa.scan_module_level()
    fn = next(s for s in module.body if type(s) is cst.FunctionDef)
    return FunctionContext(fa, fn, "m.f", None), fn


def test_statement_searches_stop_at_the_innermost_statement_and_follow_the_stack():
    ctx, fn = _context("def f(x, m):\n    x[m] += 1\n    raise ValueError(x and m)\n")
    aug_line, raise_line = fn.body.body
    aug = aug_line.body[0]
    # x[m] inside `x[m] += 1`: the statement, the augmented assignment and its target.
    ctx.stack[:] = [aug_line, aug]
    assert ctx.statement is aug_line and ctx.innermost_statement() is aug
    assert ctx.is_augmented_target(aug.target) and not ctx.is_augmented_target(aug.value)
    # The same questions after the stack moved on (answers remembered per node are checked).
    raise_ = raise_line.body[0]
    call = raise_.exc
    boolop = call.args[0].value
    ctx.stack[:] = [raise_line, raise_, call, call.args[0], boolop]
    assert ctx.innermost_statement() is raise_ and ctx.statement is raise_line
    assert not ctx.is_augmented_target(boolop.left)
    assert list(ctx.iter_ancestors()) == list(reversed(ctx.ancestors()))
    ctx.stack[:] = [aug_line, aug, aug.target]
    assert ctx.innermost_statement() is aug
    ctx.stack[:] = [call, call.args[0], boolop]  # no statement on the stack
    assert ctx.innermost_statement() is None and ctx.statement is None

"""Dependencies go one way: core (`dynalint.findings`) <- lint (`lint/`) <- fixes (`fixes/`) <- the
app (engine, check, autofix, verify, migrate, lsp, ...). Rules offer fixes through the registry in
`lint/rule.py` (filled by `fixes/providers.py`), never by importing them. `dynalint.config` checks
rule codes against the catalog's list (`lint/catalog.py`) and reads versions with `lint/target.py`,
both plain data with no imports of their own, and nothing else of lint: loading a configuration
never loads the rules. The run machinery (`dynalint/run/`) uses lint, fixes and the
configuration, never the commands built on it (check, autofix, lsp, migrate, verify).

Every import counts: module level, inside functions, under `TYPE_CHECKING`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# layer -> its folder (or file) in the repository and the package (or module) it installs as
PACKAGES = {
    "lint": ("lint", "dynalint.lint"),
    "fixes": ("fixes", "dynalint.fixes"),
    "config": ("dynalint/config.py", "dynalint.config"),
    "run": ("dynalint/run", "dynalint.run"),
}
CORE = ("dynalint.findings",)
ALLOWED = {
    "lint": CORE + ("dynalint.lint",),
    "fixes": CORE + ("dynalint.lint", "dynalint.fixes"),
    "config": CORE + ("dynalint.lint.catalog", "dynalint.lint.target"),
    "run": CORE + ("dynalint.config", "dynalint.lint", "dynalint.fixes", "dynalint.run"),
}


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(ROOT)
    folder, package = next(v for v in PACKAGES.values() if rel.as_posix() == v[0] or rel.as_posix().startswith(v[0] + "/"))
    parts = [package] + (list(rel.relative_to(folder).with_suffix("").parts) if rel.as_posix() != folder else [])
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in the file."""
    name, is_package = _module_name(path)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from dynalint.run import engine` imports dynalint.run.engine
            out += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
    return out


def _outside(layer: str) -> list[str]:
    allowed = ALLOWED[layer]
    bad = []
    where = ROOT / PACKAGES[layer][0]
    for path in [where] if where.is_file() else sorted(where.rglob("*.py")):
        for module, line in imports_of(path):
            if not module.startswith("dynalint") or module == "dynalint.__version__":
                continue
            if not any(module == a or module.startswith(a + ".") for a in allowed):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    return bad


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it(layer):
    assert _outside(layer) == []


def test_what_config_may_import_of_lint_imports_nothing_of_dynalint():
    for module in ("catalog", "target"):
        assert [m for m, _ in imports_of(ROOT / "lint" / f"{module}.py") if m.startswith("dynalint")] == []


def test_the_check_sees_imports_in_functions_and_relative_ones(tmp_path):
    """The scan itself: a function-level import of the app from lint/ would be caught."""
    found = dict(imports_of(ROOT / "lint" / "rule.py"))
    assert "dynalint.lint.probed.PROBED" in found  # `from .probed import PROBED` inside a function
    found = dict(imports_of(ROOT / "fixes" / "providers.py"))
    assert "dynalint.fixes.guard.guard_fix" in found and "dynalint.lint.rule.register_fix_provider" in found


def test_rules_offer_every_fix_they_name():
    """Each name a rule passes to `offer_fix` has a provider once the fixes are loaded."""
    import re

    import dynalint.fixes.providers as providers

    names = set()
    # The rules, and the walk (which offers the host-side helper fix on any finding without one).
    for path in [*(ROOT / "lint" / "rules").glob("dyn*.py"), ROOT / "lint" / "walk.py"]:
        names |= set(re.findall(r'offer_fix\("(\w+)"', path.read_text()))
    assert names and names == set(providers.PROVIDERS)

"""The faster cold start: libcst imported through the table of dataclass code
(`dynalint.run.importcache`) behaves as a plain import, and files are parsed without node validation
(`parse_unvalidated`) into the very trees `cst.parse_module` makes."""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from dynalint.lint.analyzer import parse_unvalidated

ROOT = Path(__file__).resolve().parent.parent

# Imports libcst in a fresh interpreter with the table at argv[1]; prints what happened.
CHILD = r"""
import json, sys
from pathlib import Path
from dynalint.run import importcache
importcache.table_path = lambda: Path(sys.argv[1])
importcache.install()
import libcst as cst
from libcst import CSTValidationError
source = "def f(x):\n    return x.item()  # keep\n"
tree = cst.parse_module(source)
try:
    cst.Name("1x")
    validates = False
except CSTValidationError:
    validates = True
print(json.dumps({
    "compiled": importcache.LAST_TABLE.compiled if importcache.LAST_TABLE else None,
    "round_trip": tree.code == source,
    "validates": validates,
    "equal": cst.Name("x").deep_equals(cst.Name("x")) and not cst.Name("x").deep_equals(cst.Name("y")),
    "replace": cst.Name("x").with_changes(value="y").value == "y",
    "repr": repr(cst.Name("x")).startswith("Name("),
    "loader": type(cst.__loader__).__name__,
    "spec_loader": type(cst.__spec__.loader).__name__,
}))
"""


def _import_libcst(table: Path, **env_extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "DYNALINT_NO_IMPORT_CACHE")}
    env.update(env_extra)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(table)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_second_import_compiles_nothing_and_libcst_works(tmp_path):
    table = tmp_path / "table.bin"
    first = _import_libcst(table)
    assert first["compiled"] > 200  # every dataclass method of libcst's nodes
    assert table.read_bytes().startswith(importlib.util.MAGIC_NUMBER)
    second = _import_libcst(table)
    assert second["compiled"] == 0
    for run in (first, second):
        assert run["round_trip"] and run["validates"] and run["equal"] and run["repr"] and run["replace"]
        # libcst sees its own loader, not the wrapper
        assert run["loader"] == run["spec_loader"] == "SourceFileLoader"


def test_cached_code_is_what_exec_compiles(tmp_path):
    table = tmp_path / "table.bin"
    _import_libcst(table)
    stored = marshal.loads(table.read_bytes()[len(importlib.util.MAGIC_NUMBER):])
    assert stored
    for text, code in stored.items():
        assert code == compile(text, "<string>", "exec", dont_inherit=True)


@pytest.mark.parametrize("content", [b"garbage", importlib.util.MAGIC_NUMBER + b"\x00broken", b"\x00\x01\x02\x03" + marshal.dumps({})])
def test_damaged_or_foreign_table_is_ignored_and_rewritten(tmp_path, content):
    table = tmp_path / "table.bin"
    table.write_bytes(content)
    run = _import_libcst(table)
    assert run["compiled"] > 200 and run["round_trip"] and run["validates"]
    assert _import_libcst(table)["compiled"] == 0


def test_no_table_written_when_bytecode_writing_is_off(tmp_path):
    table = tmp_path / "table.bin"
    run = _import_libcst(table, PYTHONDONTWRITEBYTECODE="1")
    assert run["compiled"] > 200 and run["round_trip"]
    assert not table.exists()


def test_switched_off_by_environment(tmp_path):
    table = tmp_path / "table.bin"
    run = _import_libcst(table, DYNALINT_NO_IMPORT_CACHE="1")
    assert run["compiled"] is None and run["round_trip"]
    assert not table.exists()


def _python_files() -> list[Path]:
    files = sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "tests" / "fixtures").rglob("*.py"))
    files += sorted((ROOT / "lint").rglob("*.py")) + sorted((ROOT / "fixes").rglob("*.py"))
    return files


def test_unvalidated_parse_makes_the_same_trees():
    files = _python_files()
    assert len(files) > 30
    checked = 0
    for path in files:
        source = path.read_text(encoding="utf-8")
        try:
            expected = cst.parse_module(source)
        except cst.ParserSyntaxError:
            with pytest.raises(cst.ParserSyntaxError):
                parse_unvalidated(source)
            continue
        tree = parse_unvalidated(source)
        assert tree.deep_equals(expected), path
        assert tree.code == source
        checked += 1
    assert checked > 30


def test_validation_is_back_after_an_unvalidated_parse():
    parse_unvalidated("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")
    with pytest.raises(cst.ParserSyntaxError):
        parse_unvalidated("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not valid")

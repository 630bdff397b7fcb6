"""bench/fix_corpus.py on a small real corpus (the bundled example package and the fix fixtures):
every file still parses, a second pass is empty, and the numbers it reports are the real ones."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("fix_corpus", ROOT / "bench" / "fix_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_fix_corpus_on_the_example_package_and_fixtures(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "examples" / "toynet", corpus / "toynet", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests" / "fixtures" / "fixes", corpus / "fixes")
    for name in ("bad_if.py", "log_inside_forward.py"):  # verify's fixtures, fixed here too
        shutil.copy(ROOT / "tests" / "fixtures" / "verify" / name, corpus / "fixes" / name)
    (corpus / "broken.py").write_text("def f(:\n")  # never parsed: must be left alone
    before = {p: p.read_bytes() for p in corpus.rglob("*.py")}
    work = tmp_path / "work"
    work.mkdir()

    result = _bench().run_corpus(corpus, work, jobs=1)

    assert result.ok, result
    assert result.parse_failures == [] and result.second_pass_fixes == 0 and result.second_pass_diff_lines == 0
    assert result.files == len(before)
    # Guards, debugger removal, .item(), torch.where and a masked sum all appear in this corpus.
    assert {"DYN101", "DYN102", "DYN103", "DYN110", "DYN120", "DYN130"} <= set(result.fixed_by_rule)
    assert result.fixed == sum(result.fixed_by_rule.values()) == result.fixable
    assert result.dropped == 0 and not result.errors
    # The corpus is fixed on its copy; the original folder is untouched.
    assert {p: p.read_bytes() for p in corpus.rglob("*.py")} == before
    fixed_copy = work / "corpus"
    assert (fixed_copy / "broken.py").read_text() == "def f(:\n"
    assert result.files_changed == sum(
        1 for p in before if (fixed_copy / p.relative_to(corpus)).read_bytes() != before[p]
    )

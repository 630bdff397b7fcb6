"""No file takes a run down: whatever goes wrong inside one file (a symlink loop, nesting deeper
than Python allows, nesting deep enough to exhaust the default stack, a bug met in the analysis)
becomes a finding for that file, at -j 1 and -j N, and the other files' findings are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import dynalint

HEADER = "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
GOOD = HEADER + "        print(x)\n        return x\n"


def _findings(result) -> list[dict]:
    return json.loads(result.stdout.decode())


def _codes_by_file(findings: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(Path(f["filename"]).name, []).append(f["code"])
    return out


def _check(tmp_path: Path, jobs: int, *extra: str):
    return dynalint("check", "--output-format", "json", "-j", str(jobs), *extra, ".", cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_symlink_loop_is_a_finding_and_the_run_goes_on(tmp_path, jobs):
    (tmp_path / "good.py").write_text(GOOD)
    os.symlink("b.py", tmp_path / "a.py")
    os.symlink("a.py", tmp_path / "b.py")
    result = _check(tmp_path, jobs)
    assert result.returncode == 1, result.stderr
    codes = _codes_by_file(_findings(result))
    assert codes == {"a.py": ["DYN002"], "b.py": ["DYN002"], "good.py": ["DYN101"]}
    assert "symbolic links" in _findings(result)[0]["message"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_nesting_python_refuses_is_a_syntax_error_before_libcst_sees_it(tmp_path, jobs):
    # libcst's native parser crashed the process (SIGSEGV) on this.
    (tmp_path / "parens.py").write_text("x = " + "(" * 6000 + "1" + ")" * 6000 + "\n")
    (tmp_path / "good.py").write_text(GOOD)
    result = _check(tmp_path, jobs)
    assert result.returncode == 1, result.stderr
    found = _findings(result)
    assert _codes_by_file(found) == {"good.py": ["DYN101"], "parens.py": ["DYN001"]}
    assert [f["message"] for f in found if f["code"] == "DYN001"] == ["SyntaxError: too many nested parentheses"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_long_operator_chain_is_analysed(tmp_path, jobs):
    chain = " + ".join(["x"] * 1500)
    (tmp_path / "chain.py").write_text(HEADER + f"        y = {chain}\n        print(y)\n        return y.item()\n")
    (tmp_path / "good.py").write_text(GOOD)
    result = _check(tmp_path, jobs)
    assert result.returncode == 1, result.stderr[-2000:]
    codes = _codes_by_file(_findings(result))
    assert sorted(codes["chain.py"]) == ["DYN101", "DYN110"] and codes["good.py"] == ["DYN101"]
    assert not result.stderr


def _and_chain(terms: int) -> str:
    """The file bench/big_file.py --bool-chain times: one forward testing an N-term `and` chain."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("big_file", Path(__file__).resolve().parent.parent / "bench" / "big_file.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.bool_chain_file(terms)


def test_a_20000_term_and_chain_is_analysed(tmp_path):
    # libcst nests it 20,000 deep; it took over 300 s when each `and` looked at its whole left side.
    (tmp_path / "chain.py").write_text(_and_chain(20_000))
    result = _check(tmp_path, 1)
    assert result.returncode == 1, result.stderr[-2000:]
    found = _findings(result)
    assert len(found) == 20_000 and {f["code"] for f in found} == {"DYN120"}


def test_the_work_on_an_and_chain_grows_linearly(monkeypatch):
    """Each `and` of a chain asks whether its left side is an is-compiling guard (the analyzer)
    and a dtype check (DYN120): the leaves looked at grow with the chain, not its square."""
    from dynalint.lint import analyzer
    from dynalint.lint.rules import dyn120_tensor_control_flow as dyn120

    calls = {"truth": 0, "dtype": 0}
    leaf_truth, compares = analyzer.FunctionContext._leaf_truth, dyn120._compares_dtype_or_device

    def counted_truth(self, test):
        calls["truth"] += 1
        return leaf_truth(self, test)

    def counted_compares(node):
        calls["dtype"] += 1
        return compares(node)

    monkeypatch.setattr(analyzer.FunctionContext, "_leaf_truth", counted_truth)
    monkeypatch.setattr(dyn120, "_compares_dtype_or_device", counted_compares)
    counts = []
    for terms in (500, 2000):
        calls.update(truth=0, dtype=0)
        summary = analyzer.analyze_source(_and_chain(terms), "m.py")
        assert sum(f.code == "DYN120" for f in summary.findings) == terms
        counts.append(dict(calls))
    assert 0 < counts[1]["truth"] <= 5 * counts[0]["truth"]  # 4x the terms; quadratic was 16x
    assert 0 < counts[1]["dtype"] <= 5 * counts[0]["dtype"]


def test_an_asserted_and_chain_is_split_once(monkeypatch):
    """Every operand of `assert a and b and ...` on tensors is a DYN120 finding whose fix splits
    the whole assert; the split is built once per assert and shared (built per finding, 500 terms
    took 64 CPU s). Above 32 operands only the leftmost finding carries it (each of N findings
    carrying N lines made the output N squared)."""
    import importlib.util

    import dynalint.fixes.providers  # noqa: F401  (the fixes rules offer, as the engine loads them)
    from dynalint.fixes import checks
    from dynalint.lint import analyzer

    spec = importlib.util.spec_from_file_location("big_file", Path(__file__).resolve().parent.parent / "bench" / "big_file.py")
    big_file = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(big_file)
    for terms in (3, 32, 33, 500):
        before = checks.REWRITES[0]
        summary = analyzer.analyze_source(big_file.assert_chain_file(terms), "m.py")
        assert checks.REWRITES[0] - before == 1
        found = sorted((f for f in summary.findings if f.code == "DYN120"), key=lambda f: f.column)
        assert len(found) == terms
        if terms <= 32:
            assert all(f.fix is found[0].fix for f in found)
        else:
            assert found[0].fix is not None and all(f.fix is None for f in found[1:])
        (edit,) = found[0].fix.edits
        lines = edit.content.split("\n")
        assert len(lines) == terms and lines[-1].lstrip() == f'assert x{(terms - 1) % 10}.sum() > {terms - 1}, "bad input"'


def test_a_long_asserted_and_chain_is_fixed(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("big_file", Path(__file__).resolve().parent.parent / "bench" / "big_file.py")
    big_file = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(big_file)
    path = tmp_path / "chain.py"
    path.write_text(big_file.assert_chain_file(200))
    result = dynalint("check", "--fix", "--unsafe-fixes", "chain.py", cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    fixed = path.read_text()
    asserts = [line.strip() for line in fixed.splitlines() if line.strip().startswith("assert ")]
    assert asserts == [f'assert x{i % 10}.sum() > {i}, "bad input"' for i in range(200)]
    compile(fixed, "chain.py", "exec")


def test_a_long_elif_chain_is_analysed(tmp_path):
    branches = "".join(f"        elif x.sum() > {i}:\n            y = {i}\n" for i in range(1, 1000))
    (tmp_path / "elifs.py").write_text(HEADER + "        if x.sum() > 0:\n            y = 0\n" + branches + "        return y\n")
    result = _check(tmp_path, 1)
    assert result.returncode == 1, result.stderr[-2000:]
    found = _findings(result)
    assert len(found) == 1000 and {f["code"] for f in found} == {"DYN120"}


def test_a_long_chain_can_be_fixed(tmp_path):
    chain = " + ".join(["x"] * 1500)
    path = tmp_path / "chain.py"
    path.write_text(HEADER + f"        y = {chain}\n        print(y)\n        return y\n")
    result = dynalint("check", "--fix", "chain.py", cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    fixed = path.read_text()
    assert "if not torch.compiler.is_compiling():\n            print(y)" in fixed
    compile(fixed, "chain.py", "exec")


def test_valid_python_that_only_libcst_refuses_says_so(tmp_path):
    # A form feed inside an indented block's indentation: CPython compiles it, libcst does not.
    source = "def f(x):\n    if x:\n\x0c        return 1\n    return 2\n"
    compile(source, "ff.py", "exec")
    (tmp_path / "ff.py").write_text(source)
    result = _check(tmp_path, 1)
    [finding] = _findings(result)
    assert finding["code"] == "DYN001"
    assert finding["message"].startswith("libcst cannot parse this file (Python can")


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_internal_error_in_one_file_is_that_files_finding(tmp_path, monkeypatch, jobs):
    from dynalint.config import Config
    from dynalint.run.engine import SourceFile, lint_files
    from dynalint.lint import analyzer

    real = analyzer.FileAnalyzer.run

    def failing_run(self):
        if self.filename.endswith("bad.py"):
            raise ValueError("unexpected node\n" + "deep " * 10_000)
        return real(self)

    monkeypatch.setattr(analyzer.FileAnalyzer, "run", failing_run)
    files = []
    for name in ("bad.py", "good.py", "other.py", "more.py", "a.py", "b.py", "c.py", "d.py"):
        (tmp_path / name).write_text(GOOD)
        files.append(SourceFile(path=tmp_path / name, display=name, module=name[:-3], is_package=False))
    found = lint_files(files, Config(), jobs=jobs)  # forked workers inherit the patch
    by_file = {}
    for f in found:
        by_file.setdefault(f.filename, []).append((f.code, f.message))
    assert by_file.pop("bad.py") == [
        ("DYN002", "cannot analyse file: internal error: ValueError: unexpected node")
    ]
    assert all(v == [("DYN101", v[0][1])] for v in by_file.values()) and len(by_file) == 7


def test_the_last_resort_message_is_one_line_even_for_an_unprintable_exception():
    from dynalint.run.engine import one_line_reason

    class Deep(Exception):
        def __str__(self):
            return str(self)  # recurses

    assert one_line_reason(Deep()) == "Deep"
    assert one_line_reason(ValueError("a\nb")) == "ValueError: a"
    assert len(one_line_reason(ValueError("x" * 1000))) < 220


def test_nesting_too_deep_even_for_the_large_stack_is_a_finding(monkeypatch):
    from dynalint.lint import analyzer, deep

    monkeypatch.setattr(deep, "RECURSION_LIMIT", 1_000)  # what the large stack allows, made small
    chain = " + ".join(["x"] * 1500)
    summary = analyzer.analyze_source(HEADER + f"        return {chain}\n", "m.py")
    assert [(f.code, f.message) for f in summary.findings] == [
        ("DYN002", "cannot analyse file: nested too deeply (RecursionError)")
    ]
    summary = analyzer.analyze_source("y = " + " + ".join(["x"] * 5000) + "\n", "m.py")
    assert [f.code for f in summary.findings] == ["DYN001"]
    assert "nested too deeply" in summary.findings[0].message


def _deep_and_chain(terms: int, joint: str = " and ") -> str:
    chain = joint.join(f"x{i % 10}.sum() > {i}" for i in range(terms))
    return f"import torch\n\n\ndef f(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9):\n    y = {chain}\n    return y\n"


def test_an_and_chain_too_deep_for_libcst_is_found_before_parsing():
    """Python keeps `a and b and ...` flat, libcst nests it one level per `and`: a chain deeper
    than the analysis can take (50,000 terms ended in a RecursionError after 25 CPU s, 300,000
    after 62 CPU s and 5 GB) is a DYN002 from a count and Python's parser, not from libcst."""
    from dynalint.lint import deep

    limit = deep.MAX_LIBCST_DEPTH
    code, reason = deep.rejects(_deep_and_chain(limit + 1))
    assert code == "DYN002" and reason.startswith("cannot analyse file: nested too deeply (an expression on line 5 is ")
    code, _ = deep.rejects(_deep_and_chain(limit + 1, joint="\n        or ").replace("y = ", "y = (").replace("\n    return", ")\n    return"))
    assert code == "DYN002"  # over many lines too
    assert deep.rejects(_deep_and_chain(limit // 2)) is None
    # as many `and`s, in many short expressions: shallow
    shallow = "".join(f"ok{i} = a and b  # x and y\n" for i in range(limit))
    assert deep.rejects(shallow) is None
    assert deep.python_rejects(_deep_and_chain(limit + 1)) is None  # Python itself accepts it
    # without spaces around the operators, in brackets
    code, _ = deep.rejects(_deep_and_chain(limit + 1, joint=")and(").replace("y = ", "y = (").replace("\n    return", ")\n    return"))
    assert code == "DYN002"
    assert deep.rejects("y = " + " + ".join(["x"] * 100_000) + "\n")[0] == "DYN001"


def test_a_file_too_deep_for_libcst_is_a_finding_without_parsing_it(monkeypatch):
    from dynalint.lint import analyzer, deep

    def refuse(source):
        raise AssertionError("libcst must not see it")

    monkeypatch.setattr(analyzer, "parse_cached", refuse)
    source = _deep_and_chain(deep.MAX_LIBCST_DEPTH + 10)
    analyzer.prepare(source, "m.py", "m", False)
    summary = analyzer.analyze_source(source, "m.py")
    [finding] = summary.findings
    assert finding.code == "DYN002" and "levels deep for libcst" in finding.message


# -- fixes never break an import ------------------------------------------------------------------

NO_TORCH_UTILS = '''\
import logging
import warnings

from packaging import version

logger = logging.getLogger(__name__)


def deprecate(x):
    warnings.warn("deprecated", FutureWarning)
    return x


def compiling_check(x):
    try:
        import torch

        return torch.compiler.is_compiling()
    except Exception:
        logger.warning("torch without torch.compiler.is_compiling")
        return False


def versioned(x, torch_version):
    if version.parse(torch_version) < version.parse("2.3"):
        logger.warning("old torch")
    else:
        logger.warning("new torch")
    return x
'''

NO_TORCH_MODEL = '''\
import torch
from torch import nn

from .utils import compiling_check, deprecate, versioned


class Net(nn.Module):
    def forward(self, x):
        x = deprecate(x)
        compiling_check(x)
        return versioned(x, torch.__version__)
'''


def _no_torch_package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(NO_TORCH_UTILS)
    (pkg / "model.py").write_text(NO_TORCH_MODEL)
    return pkg / "utils.py"


def _imports_without_torch(tmp_path: Path) -> subprocess.CompletedProcess:
    code = "import sys; sys.modules['torch'] = None; import pkg.utils; print('imported')"
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)


def _runs_without_torch(tmp_path: Path) -> subprocess.CompletedProcess:
    code = ("import sys; sys.modules['torch'] = None; import pkg.utils; "
            "print('imported', pkg.utils.deprecate(3))")
    return subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)


def test_a_safe_fix_never_adds_a_module_level_torch_import(tmp_path):
    # POT's NumPy code paths: the guard asks `sys.modules`, so the file still imports, and the
    # guarded function still runs, where torch is absent.
    utils = _no_torch_package(tmp_path)
    ran = _runs_without_torch(tmp_path)
    assert ran.stdout == "imported 3\n", ran.stderr
    dynalint("check", "--fix", ".", cwd=tmp_path)
    fixed = utils.read_text()
    assert fixed != NO_TORCH_UTILS
    assert not [line for line in fixed.splitlines() if line.startswith(("import torch", "from torch"))]
    assert _imports_without_torch(tmp_path).stdout == "imported\n"
    ran = _runs_without_torch(tmp_path)
    assert ran.stdout == "imported 3\n", ran.stderr


def test_the_guard_in_a_file_without_torch_asks_sys_modules(tmp_path):
    utils = _no_torch_package(tmp_path)
    dynalint("check", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    fixed = utils.read_text()
    assert ('def deprecate(x):\n    import sys\n    if not (sys.modules.get("torch") and '
            'sys.modules["torch"].compiler.is_compiling()):\n        warnings.warn(') in fixed, fixed
    assert "import torch" not in fixed.split("def deprecate")[1].split("def compiling_check")[0]
    ran = _runs_without_torch(tmp_path)
    assert ran.stdout == "imported 3\n", ran.stderr


def test_no_is_compiling_guard_on_a_path_kept_for_torch_without_it(tmp_path):
    utils = _no_torch_package(tmp_path)
    result = dynalint("check", "--output-format", "json", "--unsafe-fixes", ".", cwd=tmp_path)
    found = {f["location"]["row"]: f for f in _findings(result)}
    assert sorted(found) == [10, 20, 26, 28]
    assert found[10]["fix"] is not None
    assert [found[r]["fix"] for r in (20, 26, 28)] == [None, None, None]
    dynalint("check", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert utils.read_text().count("is_compiling()") == 2  # the file's own call and deprecate's guard


def test_the_guard_rules_declare_what_their_fixes_are(tmp_path):
    """DYN101/103/104 fix safely, or unsafely where the project supports torch before 2.3: the
    rules declare both (`rules` listing, JSON, docs), and each finding's output says which."""
    from dynalint.lint.rules import rule_by_code

    _no_torch_package(tmp_path)
    (tmp_path / "pkg" / "model.py").write_text(NO_TORCH_MODEL.replace("        x = deprecate(x)\n", "        x = deprecate(x)\n        print(x)\n"))
    found = _findings(dynalint("check", "--output-format", "json", ".", cwd=tmp_path))
    applied = {(Path(f["filename"]).name, f["location"]["row"]): f["fix"] and f["fix"]["applicability"] for f in found}
    assert applied == {("model.py", 10): "safe", ("utils.py", 10): "safe",
                       ("utils.py", 20): None, ("utils.py", 26): None, ("utils.py", 28): None}
    listed = {r["code"]: r for r in json.loads(dynalint("rules", "--output-format", "json", cwd=tmp_path).stdout)}
    docs = (Path(__file__).parents[1] / "docs" / "rules.md").read_text()
    for code in ("DYN101", "DYN103", "DYN104"):
        assert rule_by_code(code).fixable == listed[code]["fix"] == "safe or unsafe"
        assert listed[code]["fix_applicability"] == ["safe", "unsafe"]
        assert f"| error | safe or unsafe |" in next(line for line in docs.splitlines() if line.startswith(f"| [{code}]"))
        assert "before 2.3" in listed[code]["explanation"] and "gets no fix" in listed[code]["explanation"]
    text = dynalint("check", "--output-format", "concise", ".", cwd=tmp_path).stdout.decode()
    assert "model.py:10:9: DYN101 [*] " in text and "utils.py:10:5: DYN104 [*] `warnings" in text
    assert "[*] 2 fixable with the `--fix` option." in text
    # A project that supports torch before 2.3 (`torch.compiler.is_compiling` missing there): unsafe.
    (tmp_path / "dynalint.toml").write_text('min-torch = "2.1"\n')
    found = _findings(dynalint("check", "--output-format", "json", ".", cwd=tmp_path))
    applied = {(Path(f["filename"]).name, f["location"]["row"]): f["fix"] and f["fix"]["applicability"] for f in found}
    assert applied[("utils.py", 10)] == applied[("model.py", 10)] == "unsafe"


# -- smaller things users hit ---------------------------------------------------------------------


def test_models_may_hold_any_callable_and_the_child_finds_it(tmp_path):
    from dynalint.migrate.models import read_models
    from dynalint.verify.loading import import_object

    path = tmp_path / "MODELS.py"
    path.write_text(
        "import functools\n\ndef make(n):\n    return ('net', n)\n\n"
        "MODELS = {'net': lambda: ('net', 4), 'part': functools.partial(make, 8), 'named': make}\n"
    )
    entries = read_models(path)
    assert [(e.name, e.function) for e in entries] == [
        ("net", "MODELS['net']"), ("part", "MODELS['part']"), ("named", "make")
    ]
    assert import_object(f"{path}::MODELS['net']", {})() == ("net", 4)
    assert import_object(f"{path}::MODELS['part']", {})() == ("net", 8)


def test_broken_toml_in_pyproject_is_an_error_like_a_broken_dynalint_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nignore = ["DYN101"\n')
    (tmp_path / "m.py").write_text(GOOD)
    result = dynalint("check", ".", cwd=tmp_path)
    assert result.returncode == 2 and not result.stdout
    assert result.stderr.decode().startswith("dynalint: error: invalid TOML in ")
    # Someone else's broken pyproject.toml (no [tool.dynalint]) is not ours to judge.
    (tmp_path / "pyproject.toml").write_text('[tool.black]\nline-length = \n')
    assert dynalint("check", ".", cwd=tmp_path).returncode == 1


def test_a_closed_pipe_ends_the_run_quietly(tmp_path):
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(GOOD)
    proc = subprocess.run(
        " ".join(["'" + a + "'" for a in [*__import__("tests.test_cli", fromlist=["CLI"]).CLI, "check", "-j", "1", "."]])
        + " | head -2",
        shell=True, cwd=tmp_path, capture_output=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("DYNALINT_")} | {"DYNALINT_NO_CACHE": "1"},
    )
    assert len(proc.stdout.decode().splitlines()) == 2
    assert proc.stderr == b""


def test_a_named_folder_inside_an_excluded_one_is_linted(tmp_path):
    pkg = tmp_path / "lib" / "site-packages" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text(GOOD)
    result = dynalint("check", "--output-format", "concise", "site-packages/pkg", cwd=tmp_path / "lib")
    assert result.returncode == 1 and b"site-packages/pkg/m.py:7:9: DYN101" in result.stdout


def test_no_files_found_says_what_the_excludes_left_out(tmp_path):
    for folder in ("build", "dist"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(GOOD)
    result = dynalint("check", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.decode() == (
        "dynalint: warning: no Python files found (2 folders left out by the default excludes (build, dist))\n"
    )


def _tree_with_excluded_files(tmp_path: Path) -> None:
    for rel in ("src/m.py", "lib/site-packages/pkg/a.py", "lib/site-packages/pkg/b.py", "build/c.py",
                ".venv/lib/d.py", ".git/e.py", "vendor/f.py", "third_party/g.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(GOOD)


def test_the_summary_says_what_the_excludes_left_out_and_which_setting(tmp_path):
    _tree_with_excluded_files(tmp_path)
    result = dynalint("check", "--output-format", "concise", ".", cwd=tmp_path)
    lines = result.stdout.decode().splitlines()
    # VCS folders, caches and environments (.git, .venv) go unmentioned; vendor and third_party are linted.
    assert [line.split(":")[0] for line in lines if ": DYN" in line] == ["src/m.py", "third_party/g.py", "vendor/f.py"]
    assert lines[-1] == (
        "Not linted: 2 folders excluded by the default excludes (build, lib/site-packages); "
        "to lint them, name them on the command line or set `exclude` in the config (it replaces them)."
    )

    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nextend-exclude = ["vendor"]\n')
    lines = dynalint("check", ".", cwd=tmp_path).stdout.decode().splitlines()
    assert lines[-1] == (
        "Not linted: 2 folders excluded by the default excludes (build, lib/site-packages); "
        "1 folder excluded by `extend-exclude` (vendor); to lint them, name them on the command line or "
        "set `exclude` in the config (it replaces them) or change `extend-exclude` in the config."
    )
    # `exclude` replaces the default excludes: site-packages and build are linted now.
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nexclude = ["vendor", "third_party/g.py"]\n')
    result = dynalint("check", "--output-format", "concise", ".", cwd=tmp_path)
    lines = result.stdout.decode().splitlines()
    assert sum(": DYN101" in line for line in lines) == 6  # .git and .venv are no longer excluded either
    assert lines[-1] == (
        "Not linted: 1 folder and 1 file excluded by `exclude` (vendor, third_party/g.py); "
        "to lint them, name them on the command line or change `exclude` in the config."
    )
    # A path named on the command line is linted, and then nothing is left out.
    result = dynalint("check", "--output-format", "concise", "vendor", "third_party/g.py", cwd=tmp_path)
    lines = result.stdout.decode().splitlines()
    assert [line.split(":")[0] for line in lines if ": DYN" in line] == ["third_party/g.py", "vendor/f.py"]
    assert not any(line.startswith("Not linted") for line in lines)
    # --force-exclude (pre-commit names every file): the named excluded files are counted.
    lines = dynalint("check", "--force-exclude", "src/m.py", "vendor/f.py", cwd=tmp_path).stdout.decode().splitlines()
    assert lines[-1] == "Not linted: 1 file excluded by `exclude` (vendor/f.py); to lint them, change `exclude` in the config."


def test_the_summary_is_quiet_when_only_vcs_and_environments_are_excluded(tmp_path):
    for rel in ("m.py", ".git/e.py", ".venv/lib/d.py", "__pycache__/x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(GOOD)
    out = dynalint("check", ".", cwd=tmp_path).stdout.decode()
    assert "Not linted" not in out and out.endswith("[*] 1 fixable with the `--fix` option.\n")


def test_fix_leaves_read_only_files_alone(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(GOOD)
    path.chmod(0o444)
    result = dynalint("check", "--fix", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert path.read_text() == GOOD and (path.stat().st_mode & 0o777) == 0o444
    assert b"m.py is read-only; not written" in result.stderr


def test_rules_listing_explains_its_marks(tmp_path):
    out = dynalint("rules", cwd=tmp_path).stdout.decode()
    assert "[*] safe fix" in out and "[u] unsafe fix" in out and "[~] safe or unsafe by finding" in out
    marks = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("DYN")}
    assert [marks[c] for c in ("DYN101", "DYN103", "DYN104", "DYN120")] == ["[~]"] * 4
    assert marks["DYN102"] == marks["DYN121"] == marks["DYN140"] == "[u]" and marks["DYN131"] == "[~]" and marks["DYN132"] == "error"  # no fix, no mark


def test_an_except_branch_of_unrelated_code_still_gets_its_guard(tmp_path):
    # `version=1` in the try body is no torch-version test: the guard is offered.
    (tmp_path / "m.py").write_text(
        "import logging\nimport torch\nfrom torch import nn\n\nlogger = logging.getLogger(__name__)\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        try:\n"
        "            kernel = get_kernel('cv-utils', version=1)\n"
        "        except Exception:\n            logger.warning('no kernel')\n        return x\n"
    )
    [finding] = _findings(_check(tmp_path, 1))
    assert finding["code"] == "DYN103" and finding["fix"]["applicability"] == "safe"

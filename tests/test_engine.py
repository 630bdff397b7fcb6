"""The engine at scale: parallel and serial runs agree, the persistent cache is never stale when
another file changes, concurrent runs do not corrupt it, the progress bar only goes to a terminal,
and fastcst's shortcuts see exactly what libcst sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from dynalint.run.cache import Cache
from dynalint.config import Config
from dynalint.run.engine import SourceFile, analyze_files, module_name_for, select_findings
from dynalint.lint import fastcst

CLI = [sys.executable, "-c", "import sys; from dynalint.cli import main; sys.exit(main())"]
ALL = Config(select=("ALL",))

OPS = """
import torch

def normalize(x):
    return x / x.norm()
"""
MODEL = """
from torch import nn
from .ops import normalize

class Net(nn.Module):
    def forward(self, x):
        h = normalize(x)
        if h.mean() > 0:
            h = h * 2
        return h
"""


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def sources(root: Path) -> list[SourceFile]:
    out = []
    for p in sorted(root.rglob("*.py")):
        module, is_pkg = module_name_for(p)
        out.append(SourceFile(p, p.relative_to(root).as_posix(), module, is_pkg))
    return out


def findings(root: Path, cache_dir=None, jobs=1) -> list[tuple]:
    summaries = analyze_files(sources(root), ALL, jobs=jobs, cache_dir=cache_dir)
    return [(f.filename, f.row, f.column, f.code, f.message) for f in select_findings(summaries, ALL)]


def findings_incremental(root: Path, cache_dir, jobs: int = 1) -> list[tuple]:
    """What `dynalint check` does: the incremental path over the last run's state."""
    from dynalint.run.incremental import lint_tree

    return [(f.filename, f.row, f.column, f.code, f.message) for f in lint_tree(sources(root), ALL, jobs=jobs, cache_dir=cache_dir)]


@pytest.fixture(params=["serial", "parallel"])
def relint_jobs(request, monkeypatch) -> int:
    """Jobs for the incremental path; "parallel" makes even a small changed file's analyses run
    side by side in forked workers, as a big file's do."""
    if request.param == "serial":
        return 1
    import dynalint.run.incremental

    monkeypatch.setattr(dynalint.run.incremental, "PARALLEL_MIN_CHARS", 0)
    return 2


class WholeTreeRuns:
    """Counts the runs that fell back to analysing the whole tree."""

    def __init__(self, monkeypatch):
        import dynalint.run.engine

        self.count = 0
        real = dynalint.run.engine.analyze_files

        def counting(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(dynalint.run.engine, "analyze_files", counting)


def check_json(root: Path, *args: str) -> list[dict]:
    proc = subprocess.run(
        [*CLI, "check", "--output-format", "json", *args, "pkg"], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


# -- parallel runs -----------------------------------------------------------------------------


def test_parallel_and_serial_runs_give_the_same_findings_in_the_same_order(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/ops.py": OPS}
    for i in range(12):  # enough files for the worker pool
        files[f"pkg/m{i}.py"] = MODEL.replace("Net", f"Net{i}") + f"\n\ndef f{i}(x):\n    print(x)\n"
    write_tree(tmp_path, files)
    serial = findings(tmp_path, jobs=1)
    assert len(serial) == 12 and {f[3] for f in serial} == {"DYN120"}
    assert findings(tmp_path, jobs=2) == serial


# -- the cache ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lint", [findings, findings_incremental], ids=["summaries", "incremental"])
def test_warm_run_follows_a_changed_helper_in_another_file(tmp_path, lint):
    """model.py's finding exists only because ops.normalize returns a tensor: when ops.py
    changes, the warm run must change model.py's findings although model.py did not change."""
    write_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/model.py": MODEL})
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    cold = lint(root, cache_dir)
    assert ("pkg/model.py", 8, "DYN120") in [(f[0], f[1], f[3]) for f in cold]
    assert lint(root, cache_dir) == cold  # warm, nothing changed

    (root / "pkg/ops.py").write_text("def normalize(x):\n    return 1\n")  # no longer a tensor
    warm = lint(root, cache_dir)
    assert warm == findings(root, None)
    assert not [f for f in warm if f[0] == "pkg/model.py"]


def test_incremental_run_reanalyses_only_a_file_whose_interface_kept(tmp_path, monkeypatch, relint_jobs):
    """Editing the body of forward (no new call, no new function) keeps what other files read
    from model.py: the run analyses model.py alone, and its findings are the full run's."""
    write_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/model.py": MODEL})
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    findings_incremental(root, cache_dir)
    whole = WholeTreeRuns(monkeypatch)
    model = root / "pkg/model.py"
    model.write_text(model.read_text().replace("h = h * 2", "h = h * 2\n            n = h.sum().item()"))
    warm = findings_incremental(root, cache_dir, jobs=relint_jobs)
    assert whole.count == 0
    assert ("pkg/model.py", 10, "DYN110") in [(f[0], f[1], f[3]) for f in warm]
    assert warm == findings(root, None)
    assert findings_incremental(root, cache_dir, jobs=relint_jobs) == warm and whole.count == 0  # the state was updated


def test_analyses_without_rules_never_serve_as_full_entries(tmp_path, monkeypatch):
    """The fast path analyses model.py first alone without rules (its findings come from the
    analysis with ops.py's facts). Once ops.py stops returning a tensor, that first analysis is
    model.py's last: a whole-tree run must not find it cached without its findings (it is
    cached under a key of its own, for the next edit's comparison)."""
    write_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/model.py": MODEL})
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    findings_incremental(root, cache_dir)
    whole = WholeTreeRuns(monkeypatch)
    model = root / "pkg/model.py"
    model.write_text(model.read_text().replace("return h", "print(h)\n        return h"))
    assert ("pkg/model.py", "DYN101") in [(f[0], f[3]) for f in findings_incremental(root, cache_dir)]
    assert whole.count == 0
    (root / "pkg/ops.py").write_text("def normalize(x):\n    return 1\n")
    warm = findings_incremental(root, cache_dir)
    assert whole.count == 1
    assert ("pkg/model.py", "DYN101") in [(f[0], f[3]) for f in warm]
    assert warm == findings(root, None)


def test_incremental_run_hashes_a_recently_modified_file_even_with_the_same_stat(tmp_path):
    """An edit of the same size that keeps the modification time (within one timestamp tick of
    the last run) is still seen: a file modified in the last seconds is hashed, not trusted."""
    write_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/model.py": MODEL})
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    model = root / "pkg/model.py"
    assert ("pkg/model.py", "DYN120") in [(f[0], f[3]) for f in findings_incremental(root, cache_dir)]
    before = model.stat()
    text = model.read_text()
    edited = text.replace("if h.mean() > 0:", "if h.ndim   > 0:")  # same size, no tensor value
    assert len(edited) == len(text) and edited != text
    model.write_text(edited)
    os.utime(model, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert model.stat().st_size == before.st_size and model.stat().st_mtime_ns == before.st_mtime_ns
    assert findings_incremental(root, cache_dir) == findings(root, None)
    assert ("pkg/model.py", "DYN120") not in [(f[0], f[3]) for f in findings_incremental(root, cache_dir)]


def test_incremental_run_falls_back_when_an_interface_changes(tmp_path, monkeypatch, relint_jobs):
    """A new call in forward changes the call graph: the whole tree is analysed again, and the
    helper it now calls is in the compile region."""
    ops = OPS + "\ndef report(x):\n    print(x)\n"
    write_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/ops.py": ops, "pkg/model.py": MODEL})
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    assert "DYN101" not in [f[3] for f in findings_incremental(root, cache_dir)]
    whole = WholeTreeRuns(monkeypatch)
    model = root / "pkg/model.py"
    text = model.read_text().replace("import normalize", "import normalize, report")
    model.write_text(text.replace("return h", "report(h)\n        return h"))
    warm = findings_incremental(root, cache_dir, jobs=relint_jobs)
    assert whole.count == 1
    assert ("pkg/ops.py", "DYN101") in [(f[0], f[3]) for f in warm]
    assert warm == findings(root, None)


@pytest.mark.parametrize("lint", [findings, findings_incremental], ids=["summaries", "incremental"])
def test_warm_run_follows_a_changed_base_class_in_another_file(tmp_path, lint):
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": "from torch import nn\n\nclass Base(nn.Module):\n    pass\n",
        "pkg/model.py": "from .base import Base\n\nclass Net(Base):\n    def forward(self, x):\n        print(x)\n        return x\n",
    }
    write_tree(tmp_path / "src", files)
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    assert [f[3] for f in lint(root, cache_dir)] == ["DYN101"]
    (root / "pkg/base.py").write_text("class Base:\n    pass\n")  # not a module any more
    assert lint(root, cache_dir) == [] == findings(root, None)
    (root / "pkg/base.py").write_text(files["pkg/base.py"])
    assert [f[3] for f in lint(root, cache_dir)] == ["DYN101"]


@pytest.mark.parametrize("lint", [findings, findings_incremental], ids=["summaries", "incremental"])
def test_an_rnn_subclass_from_another_file_is_an_rnn_module(tmp_path, lint):
    """pytorch-forecasting's `class LSTM(RNN, nn.LSTM)` in one file, stored by models in others:
    calling it breaks as nn.LSTM does (DYN105), and no longer once it derives from nn.Module."""
    files = {
        "pkg/__init__.py": "",
        "pkg/rnn.py": "from torch import nn\n\nclass LSTM(nn.LSTM):\n    pass\n",
        "pkg/model.py": (
            "from torch import nn\nfrom .rnn import LSTM\n\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.lstm = LSTM(4, 4)\n\n"
            "    def forward(self, x):\n        return self.lstm(x)[0]\n"
        ),
    }
    write_tree(tmp_path / "src", files)
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    assert [(f[0], f[3]) for f in lint(root, cache_dir)] == [("pkg/model.py", "DYN105")]
    (root / "pkg/rnn.py").write_text("from torch import nn\n\nclass LSTM(nn.Module):\n    pass\n")
    assert lint(root, cache_dir) == [] == findings(root, None)


def files_of(folder):
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".py")


def test_concurrent_runs_share_the_cache_without_corrupting_it(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/ops.py": OPS}
    for i in range(10):
        files[f"pkg/m{i}.py"] = MODEL.replace("Net", f"Net{i}")
    write_tree(tmp_path, files)
    expected = check_json(tmp_path, "--no-cache")
    cmd = [*CLI, "check", "--output-format", "json", "-j", "2", "--cache-dir", str(tmp_path / "cache"), "pkg"]
    for _ in range(2):
        procs = [subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 1, err
            assert json.loads(out) == expected
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.name != ".gitignore"]
    assert files and not [p for p in files if p.name.endswith(".tmp")]
    cache = Cache(tmp_path / "cache")
    # one code fingerprint: every process (this one too) used the same cache folder
    assert [d.name for d in (tmp_path / "cache").iterdir() if d.is_dir()] == [cache.dir.name]
    packs = [p for p in files if p.parent.name == "packs"]
    states = [p for p in files if p.parent.name == "states"]
    entries = [p for p in files if p.parent.name not in ("packs", "runs", "states")]
    assert len(packs) == 1 and entries and sorted(p.suffix for p in states) == ["", ".live", ".res"]
    state = next(p for p in states if not p.suffix)
    assert cache.load_state(state.name)["files"].keys() == {f"pkg/{name}" for name in files_of(tmp_path / "pkg")}
    assert all(cache.get(p.name) is not None for p in entries)
    assert set(cache.load_pack(packs[0].name)) == {p.name for p in entries}
    assert check_json(tmp_path, "--cache-dir", str(tmp_path / "cache")) == expected


def test_recorded_regions_follow_the_extra_roots(tmp_path):
    """A warm run reuses the regions of the last identical run, per set of extra roots."""
    files = {
        "pkg/__init__.py": "",
        "pkg/steps.py": "import torch\n\ndef step(x):\n    print(x)\n    return x\n",
    }
    write_tree(tmp_path / "src", files)
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    with_root = Config(select=("ALL",), extra_roots=("pkg.steps.step",))

    def run(config):
        summaries = analyze_files(sources(root), config, jobs=1, cache_dir=cache_dir)
        return [(f.filename, f.code) for f in select_findings(summaries, config)]

    for _ in range(2):  # cold, then from the record
        assert run(ALL) == []
        assert run(with_root) == [("pkg/steps.py", "DYN101")]
    # Two records: the root's file is analysed with its parameters presumed tensors when named.
    assert len(list((cache_dir).rglob("runs/*"))) == 2


def test_per_set_files_are_pruned_to_the_most_recently_used(tmp_path, monkeypatch):
    """Packs, run records and states are per set of files (a pre-commit hook makes new sets all
    the time): each folder keeps the files used last."""
    import dynalint.run.cache

    monkeypatch.setattr(dynalint.run.cache, "KEEP_PER_FOLDER", 3)
    cache = Cache(tmp_path / "cache")
    for i in range(5):
        cache.save_pack(f"set{i}", {"k": {"i": i}})
        os.utime(cache.dir / "packs" / f"set{i}", ns=(i * 10**9, i * 10**9))  # set0 oldest
    assert sorted(p.name for p in (cache.dir / "packs").iterdir()) == ["set2", "set3", "set4"]
    assert cache.load_pack("set2") == {"k": {"i": 2}}  # using the oldest makes it the most recent
    cache.save_pack("set5", {})
    assert sorted(p.name for p in (cache.dir / "packs").iterdir()) == ["set2", "set4", "set5"]


def test_the_code_fingerprint_follows_source_content_not_mtimes(tmp_path):
    """A checkout, rebase or editor rewriting a source with the same text must not move a process
    to another cache folder; a change of content must."""
    from dynalint.run.cache import _code_fingerprint, _fingerprint_of, _source_files

    sources = _source_files()
    names = [name for _, name in sources]
    # Every source that shapes a summary, run record or state, wherever the package keeps it.
    root = Path(__file__).resolve().parents[1]
    expected = {"findings.py", "run/engine.py", "run/incremental.py"}
    for layer in ("lint", "fixes"):
        expected |= {p.relative_to(root).as_posix() for p in (root / layer).rglob("*.py")}
    assert set(names) == expected and len(names) == len(expected)
    assert all(path.is_file() for path, _ in sources)
    assert _fingerprint_of(sources) == _code_fingerprint()
    copies = []
    for path, name in sources:  # copies: the installed sources are never touched
        copy = tmp_path / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes())
        copies.append((copy, name))
    base = _fingerprint_of(copies)
    assert base == _code_fingerprint()  # names inside the package, not where it lives
    target = next(copy for copy, name in copies if name == "lint/rule.py")
    os.utime(target, ns=(10**18, 10**18))
    target.write_bytes(target.read_bytes())  # rewritten, same text: new mtime
    assert _fingerprint_of(copies) == base
    target.write_bytes(target.read_bytes() + b"\n# edited\n")
    edited = _fingerprint_of(copies)
    assert edited != base
    target.write_bytes(target.read_bytes()[: -len(b"\n# edited\n")])
    assert _fingerprint_of(copies) == base
    renamed = [(copy, "lint/other.py" if copy == target else name) for copy, name in copies]
    assert _fingerprint_of(renamed) != base
    for copy, name in copies:  # an edit of any of them moves the cache
        text = copy.read_bytes()
        copy.write_bytes(text + b"#")
        assert _fingerprint_of(copies) != base, name
        copy.write_bytes(text)


def test_a_damaged_cache_entry_is_a_miss(tmp_path):
    cache = Cache(tmp_path)
    key = cache.key("x = 1\n", "a.py", "a", False, ())
    cache.put(key, {"filename": "a.py"})
    assert cache.get(key) == {"filename": "a.py"}
    path = next(p for p in tmp_path.rglob(key))
    path.write_bytes(path.read_bytes()[:3])
    assert cache.get(key) is None


def test_the_key_covers_text_name_and_options(tmp_path):
    cache = Cache(tmp_path)
    base = cache.key("x = 1\n", "a.py", "a", False, ())
    assert base == cache.key("x = 1\n", "a.py", "a", False, ())
    others = [
        cache.key("x = 2\n", "a.py", "a", False, ()),
        cache.key("x = 1\n", "b.py", "a", False, ()),
        cache.key("x = 1\n", "a.py", "pkg.a", False, ()),
        cache.key("x = 1\n", "a.py", "a", True, ()),
        cache.key("x = 1\n", "a.py", "a", False, ("my_is_compiling",)),
    ]
    assert len({base, *others}) == 6


# -- progress ------------------------------------------------------------------------------------


def _many_files(root: Path, n: int = 60) -> None:
    write_tree(root, {"pkg/__init__.py": "", **{f"pkg/m{i}.py": f"x{i} = {i}\n" for i in range(n)}})


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path):
    _many_files(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run([*CLI, "check", "--no-cache", "-j", "1", "pkg"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "All checks passed!" in proc.stdout


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal(tmp_path):
    _many_files(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    leader, follower = os.openpty()
    try:
        proc = subprocess.run(
            [*CLI, "check", "--no-cache", "-j", "1", "pkg"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=follower, env=env
        )
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the writer is gone and everything was read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert proc.returncode == 0
    assert b"60/61 files" in seen or b"61/61 files" in seen


# -- discovery -----------------------------------------------------------------------------------


def test_a_named_folder_inside_a_gitignored_one_is_walked(tmp_path, monkeypatch):
    """As ruff does: `dynalint check ~/.pyenv/versions/.../site-packages/pkg` lints pkg although
    the pyenv checkout's .gitignore lists `/versions`; files below still follow pkg's own rules."""
    from dynalint.run.discovery import discover

    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("/versions\n")
    pkg = tmp_path / "versions" / "pkg"
    write_tree(pkg, {"a.py": "", "sub/b.py": "", "gen/c.py": ""})
    (pkg / ".gitignore").write_text("gen/\n")
    monkeypatch.chdir(tmp_path)
    assert [p.relative_to(pkg).as_posix() for p in discover([pkg], Config())] == ["a.py", "sub/b.py"]
    assert discover([tmp_path], Config()) == []  # walking the repository still skips it


# -- fastcst -------------------------------------------------------------------------------------

SAMPLE = '''\
import torch
from torch import nn


# a comment
class Outer(nn.Module):
    """Doc."""

    class Inner:
        def forward(self, x):
            return x

    @torch.no_grad()
    def forward(self, x, *, mask=None):
        if x.sum() > 0:  # branch
            x = x * 2
        for i in range(3):
            x = x + i
        return [y for y in (x, x)]

    def same(self):
        return 1


class Other:
    def same(self):
        return 1


if True:
\tdef tabbed(x):
\t\tprint(x); return {"k": x}
'''


def _all_nodes(module):
    return list(fastcst.iter_nodes(module))


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_children_are_libcsts_children(newline):
    module = cst.parse_module(SAMPLE.replace("\n", newline))
    for node in _all_nodes(module):
        assert fastcst.children(node) == list(node.children)
        assert all(a is b for a, b in zip(fastcst.children(node), node.children))


def test_the_listed_leaves_have_no_children_but_trivia():
    # A walk steps over leaves nobody looks at: each listed class must be one (its every
    # visited field can only hold trivia), and the usual ones are listed.
    leaves = fastcst._leaf_types()
    assert fastcst.LEAVES <= leaves
    assert {cst.Name, cst.Integer, cst.SimpleString, cst.Float} <= fastcst.LEAVES


def test_children_without_trivia_read_only_the_fields_that_can_hold_code():
    """`children_without` leaves out fields whose type hints allow only stepped-over types: on
    real code (the sample, every fixture, three transformers models) it gives exactly libcst's
    children minus those types, for the trivia set and for one missing a few types."""
    fixtures = Path(__file__).parent / "fixtures"
    texts = [SAMPLE] + [p.read_text() for p in sorted(fixtures.rglob("*.py"))]
    try:
        import transformers.models as tm

        root = Path(tm.__file__).parent
        texts += [(root / name).read_text() for name in ("llama/modeling_llama.py", "bert/modeling_bert.py", "t5/modeling_t5.py")]
    except (ImportError, OSError):
        pass
    partial = fastcst.TRIVIA - {cst.Comma, cst.Colon, cst.Add, cst.SimpleWhitespace}
    for skip in (fastcst.TRIVIA, partial, fastcst.TRIVIA | fastcst.LEAVES):
        table = fastcst.children_without(skip)
        for text in texts:
            for node in fastcst.iter_nodes(cst.parse_module(text)):
                got = fastcst.kids_of(table, skip, node)(node)
                want = [c for c in node.children if type(c) not in skip]
                assert len(got) == len(want) and all(a is b for a, b in zip(got, want)), type(node).__name__


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_positions_of_single_functions_match_the_whole_module(newline):
    from libcst.metadata import MetadataWrapper, PositionProvider

    source = SAMPLE.replace("\n", newline)
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    functions = [n for n in _all_nodes(module) if isinstance(n, cst.FunctionDef)]
    assert len(functions) == 5
    for fn in functions:  # each alone, including the duplicated `same` (found twice: falls back)
        within = fastcst.enclosing_statements(module, [fn])
        got = fastcst.positions(module, source, within)
        for node in fastcst.iter_nodes(fn):
            assert got[node] == expected[node]
    got = fastcst.positions(module, source, fastcst.enclosing_statements(module, functions))
    for node in _all_nodes(module):  # nodes outside the pieces: the whole module, on demand
        assert got[node] == expected[node]
    assert fastcst.source_of(module) == source == module.code


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_positions_searched_between_neighbouring_statements_match_the_whole_module(newline, monkeypatch):
    """Big files search each piece only between the statements around it (lines from Python's
    parser): same positions, also with decorators, comments, `a; b` lines and duplicates."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    monkeypatch.setattr(fastcst, "_WINDOWED_SIZE", 0)
    head = "import os; import sys\n# a comment\n\n@decorate\n# between\n@decorate(1)\ndef top():\n    pass\n    # footer\n"
    source = (head + SAMPLE + "# trailing\n").replace("\n", newline)
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    functions = [n for n in _all_nodes(module) if isinstance(n, cst.FunctionDef)]
    lines = fastcst._SourceLines(source)
    windows = fastcst._statement_windows(module, source, lines)
    assert windows is not None and len(windows) == len(module.body)
    for fn in functions:
        within = fastcst.enclosing_statements(module, [fn])
        got = fastcst.positions(module, source, within)
        for node in fastcst.iter_nodes(fn):
            assert got[node] == expected[node]
        assert not got.complete  # positioned from its piece, not from the whole module
    got = fastcst.positions(module, source, fastcst.enclosing_statements(module, functions))
    for node in _all_nodes(module):
        assert got[node] == expected[node]


def test_reanalysing_a_text_reuses_its_parse_and_still_applies_new_facts():
    """The cross-file rounds analyse a file again with more facts: the parse is shared, the
    findings follow the facts."""
    from dynalint.lint import analyzer
    from dynalint.lint.analyzer import AnalyzerOptions, analyze_source

    text = "def clamp(x):\n    if x.max() > 1:\n        x = x / 2\n    return x\n"
    plain = analyze_source(text, "ops.py", "ops")
    module = analyzer._PARSED[-1][1]
    told = analyze_source(text, "ops.py", "ops", options=AnalyzerOptions(external_hints={"ops.clamp": {"0": "T"}}))
    assert analyzer._PARSED[-1][1] is module
    assert [f.code for f in told.findings] == ["DYN120"] and not plain.findings
    analyze_source(text + "\n", "ops.py", "ops")
    assert analyzer._PARSED[-1][1] is not module


def _visit_order_from_source(cls) -> tuple:
    """The fields `cls._visit_and_replace_children` visits, read from its source: every
    `visit_*(self, "field", ...)` call, in source order."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls._visit_and_replace_children)))
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id.startswith("visit_")
        and len(n.args) >= 2
        and isinstance(n.args[1], ast.Constant)
    ]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return tuple(dict.fromkeys(n.args[1].value for n in calls))


def test_visit_order_read_from_code_matches_libcsts_source_for_every_node_class():
    import inspect

    classes = [
        c
        for c in vars(cst).values()
        if inspect.isclass(c) and issubclass(c, cst.CSTNode) and not inspect.isabstract(c)
    ]
    assert len(classes) > 100
    for cls in classes:
        assert fastcst._fields_from_code(cls) == _visit_order_from_source(cls), cls.__name__


def test_parents_of_covered_functions_match_the_whole_module_map():
    from dynalint.lint.sourceinfo import SourceInfo

    module = cst.parse_module(SAMPLE)
    full = {}
    for node in _all_nodes(module):
        for child in fastcst.children(node):
            full[id(child)] = node
    functions = [n for n in _all_nodes(module) if isinstance(n, cst.FunctionDef)]
    for fn in functions:
        info = SourceInfo(module).cover(fn)
        inside = [n for n in fastcst.iter_nodes(fn) if type(n) not in fastcst.TRIVIA]  # code
        for node in inside:
            assert info.parent(node) is full.get(id(node))
        assert not info._complete  # answered from the covered function and the statements
        # Up from the function to the module through the statements around it.
        cur = fn
        while cur is not module:
            cur = info.parent(cur)
            assert cur is not None
        assert not info._complete
        # Whitespace and punctuation are not mapped with the function: asked about, they map
        # the whole module, and get the same parents.
        for node in fastcst.iter_nodes(fn):
            assert info.parent(node) is full.get(id(node))
    # A node outside every covered function: the whole module gets mapped.
    info = SourceInfo(module).cover(next(f for f in functions if f.name.value == "same"))
    outside = next(n for n in _all_nodes(module) if isinstance(n, cst.Dict))  # in tabbed()
    assert info.parent(outside) is full[id(outside)]
    assert info._complete


def test_return_kinds_learnt_late_in_the_first_pass_reach_earlier_callers():
    """`forward` calls `f`, which returns what `g` (defined after it) returns: the first probe
    pass learns that g returns a tensor only after walking f, so f must be walked again (the
    second pass walks again only the functions whose facts changed)."""
    from dynalint.lint.analyzer import analyze_source

    text = (
        "import torch\nfrom torch import nn\n\n"
        "class M(nn.Module):\n"
        "    def forward(self, x):\n"
        "        y = self.f(x)\n"
        "        if y.sum() > 0:\n"
        "            return y\n"
        "        return -y\n\n"
        "    def f(self, x):\n"
        "        return self.g(x)\n\n"
        "    def g(self, x):\n"
        "        return torch.relu(x)\n"
    )
    summary = analyze_source(text, "m.py", "m")
    assert [(f.code, f.row) for f in summary.findings] == [("DYN120", 7)]
    assert summary.functions["m.M.f"].returns_tensor


def test_parameter_hints_learnt_late_in_the_first_pass_reach_earlier_helpers():
    """`outer` is called with a tensor from `forward` (after it), and passes it on to `inner`
    (before it): only a second walk of `outer` tells `inner` that its parameter is a tensor."""
    from dynalint.lint.analyzer import analyze_source

    text = (
        "import torch\nfrom torch import nn\n\n"
        "def inner(v, scale):\n"
        "    if v.max() > scale:\n"
        "        v = v / scale\n"
        "    return v\n\n"
        "def outer(h, scale):\n"
        "    return inner(h * 2, scale)\n\n"
        "class M(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return outer(torch.tanh(x), 3.0)\n"
    )
    summary = analyze_source(text, "m.py", "m")
    assert [(f.code, f.row) for f in summary.findings] == [("DYN120", 5)]


def test_positions_match_libcsts_provider_on_real_code():
    """`fastcst`'s position generator against libcst's `PositionProvider`, node by node, on
    this project's own sources (decorators, f-strings, comprehensions, nested blocks), once
    with \\r\\n line breaks."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    root = Path(__file__).resolve().parents[1]
    paths = sorted((root / "lint").rglob("*.py")) + sorted((root / "fixes").glob("*.py"))
    assert len(paths) > 20
    checked = 0
    for path in paths:
        texts = [path.read_text()]
        if path.name == "walk.py":
            texts.append(texts[0].replace("\n", "\r\n"))
        for text in texts:
            module = cst.parse_module(text)
            expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            got = fastcst.positions(module)
            for node, rng in expected.items():
                assert got[node] == rng, (path, node)
            checked += len(expected)
    assert checked > 100_000


# Kinds in unannotated research code: a value is a tensor only on evidence.
def _lint_marked(text: str) -> tuple[list, list]:
    """Findings (row, code) of DYN1xx rules in `text`, and the rows marked `# expect: CODE`."""
    from dynalint.run.engine import lint_source
    from dynalint.lint.rule import Example

    example = Example(text)
    got = sorted((f.row, f.code) for f in lint_source(example.source, "m.py", Config(select=("DYN1",))))
    return got, example.expected()


KIND_CASES = {
    # `None` defaults used as flags (x_transformers' attention: `if n == 1 and causal:`)
    "none_default_flags": """
        import torch
        from torch import nn

        class Attend(nn.Module):
            def forward(self, q, k, v, mask=None, causal=None, freeze_codebook=False, beam_size=1):
                n = q.shape[-2]
                if n == 1 and causal:
                    causal = False
                if not freeze_codebook and beam_size > 1:
                    q = q * 2
                if mask:
                    q = q + 1
                return q @ k.transpose(-1, -2) @ v
    """,
    # ... but a `None` default the body uses as a tensor is one when given
    "none_default_used_as_tensor": """
        import torch
        from torch import nn

        class Attend(nn.Module):
            def forward(self, sim, mask=None, bias=None, keep=None):
                if mask is not None:
                    sim = sim.masked_fill(~mask, -1e4)
                    if mask.any():  # expect: DYN120
                        sim = sim * 2
                if bias is not None:
                    sim = sim + bias.float()
                    if bias.sum() > 0:  # expect: DYN120
                        sim = sim - 1
                if keep is not None:
                    sim = sim.masked_fill(keep, 0.0)
                    if keep.all():  # expect: DYN120
                        sim = sim + 1
                return sim
    """,
    "none_default_indexed_as_tensor": """
        import torch
        from torch import nn

        class Attend(nn.Module):
            def forward(self, sim, mask=None):
                sim = sim * mask[:, None, :, None]
                if mask.sum() > 0:  # expect: DYN120
                    sim = sim + 1
                return sim
    """,
    # `x == None` is a Python bool under Dynamo, as `x is None`
    "eq_none": """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, mem):
                if not mem == None:
                    x = x + mem
                if x != None and mem == None:
                    x = x * 2
                return x
    """,
    # sizes from `.shape` / `.size()` / `len()` and arithmetic on them are Python ints
    "sizes": """
        import math
        import numpy as np
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("bias", torch.ones(8, 8))

            def forward(self, x, window_size=(2, 2)):
                b, n, _ = x.shape
                h, w = x.size()[-2:]
                seqlen = len(x)
                query_len = n * 2
                if seqlen > query_len:
                    x = x[:query_len]
                if self.bias.shape[-1] >= w:
                    x = x + 1
                blocks = int(np.ceil(h / window_size[0])) * math.ceil(w / window_size[1])
                if float(h / 2).is_integer() and blocks > 1:
                    x = x * blocks
                return x
    """,
    # NumPy math on an array is still a tensor under Dynamo
    "numpy_array_conversion": """
        import numpy as np
        import torch

        @torch.compile
        def f(x):
            a = np.random.rand(3)
            n = float(a.sum())  # expect: DYN110
            return x * n
    """,
    # parameters used only as ints
    "int_only_parameters": """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, depth, heads):
                if depth == 0 or heads > 8:
                    return x
                for _ in range(depth):
                    x = x.sum(dim=heads)
                return x
    """,
    # a helper returning one of its parameters gives back its caller's argument's kind
    "passthrough_helpers": """
        import torch
        from torch import nn

        def exists(v):
            return v is not None

        def default(val, d):
            if exists(val):
                return val
            return d() if callable(d) else d

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.beam_size = 1
                self.scale = 2.0

            def pick(self, a, b=None):
                return a if b is None else b

            def forward(self, x, beam_size=None, temperature=None):
                beam_size = default(beam_size, self.beam_size)
                if beam_size > 1:
                    x = x.repeat(beam_size, 1)
                temperature = self.pick(temperature, self.scale)
                if temperature > 1.0:
                    x = x / temperature
                top = default(None, x.abs().max())
                if top > 1:  # expect: DYN120
                    x = x / top
                return x
    """,
}


@pytest.mark.parametrize("name", sorted(KIND_CASES))
def test_kinds_need_evidence(name):
    got, expected = _lint_marked(KIND_CASES[name])
    assert got == expected


@pytest.mark.parametrize("lint", [findings, findings_incremental], ids=["summaries", "incremental"])
def test_a_passthrough_helper_in_another_file_gives_back_its_callers_arguments(tmp_path, lint):
    """`default` in utils.py returns its argument: a caller in another file that passes numbers
    gets a number back (no finding), one that passes a tensor gets a tensor (a finding), also
    on a warm run after utils.py stops returning its argument."""
    write_tree(tmp_path / "src", {
        "pkg/__init__.py": "",
        "pkg/utils.py": """
            def default(val, d):
                return val if val is not None else d
        """,
        "pkg/model.py": """
            import torch
            from torch import nn
            from .utils import default

            class M(nn.Module):
                def forward(self, x, mask=None, beam_size=None):
                    mask = default(mask, torch.ones_like(x))
                    beam_size = default(beam_size, 1)
                    if beam_size > 1:
                        x = x.repeat(beam_size, 1)
                    if mask.sum() > 0:
                        x = x * 2
                    return x * mask
        """,
    })
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    cold = lint(root, cache_dir)
    assert [(f[0], f[1], f[3]) for f in cold] == [("pkg/model.py", 12, "DYN120")]
    assert cold == findings(root, None)
    (root / "pkg/utils.py").write_text("def default(val, d):\n    return 1\n")
    warm = lint(root, cache_dir)
    assert warm == findings(root, None) == []


def test_a_library_wrapper_linted_in_its_own_file_is_reported_at_the_operator_inside(tmp_path):
    # Linting torchvision itself: `nms()` in ops/boxes.py wraps `torch.ops.torchvision.nms`, the
    # operator Dynamo breaks on. The operator is reported; the wrapper's calls in the same file are
    # not (they would count the same break twice). Another file calling the wrapper still gets it.
    write_tree(tmp_path, {
        "torchvision/__init__.py": "",
        "torchvision/ops/__init__.py": "from .boxes import nms\n",
        "torchvision/ops/boxes.py": """
            import torch

            def nms(boxes, scores, iou_threshold: float):
                return torch.ops.torchvision.nms(boxes, scores, iou_threshold)

            @torch.compile
            def batched(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor):
                offsets = idxs.to(boxes) * (boxes.max() + 1)
                keep = nms(boxes + offsets[:, None], scores, 0.5)
                return keep
        """,
        "user.py": """
            import torch
            from torchvision.ops import nms

            @torch.compile
            def detect(boxes: torch.Tensor, scores: torch.Tensor):
                return nms(boxes, scores, 0.5)
        """,
    })
    got = sorted((f, row, code) for f, row, _col, code, _msg in findings(tmp_path) if code == "DYN130")
    assert got == [("torchvision/ops/boxes.py", 5, "DYN130"), ("user.py", 7, "DYN130")]


RANDOM_VALUE = """
import random
import torch

@torch.compile
def f(x):
    y = x * 2
    if random.random() < 0.5:
        y = y + 1
    return y * random.random()
"""


@pytest.mark.parametrize("target,rows", [("2.13", [8, 10]), ("2.14", [8]), ("2.14.1", [8])])
def test_target_torch_decides_version_dependent_findings(tmp_path, target, rows):
    # Probed (DYN105's examples): `random.random()` as a value breaks on torch 2.13 and is traced
    # from 2.14; a branch on a draw breaks on both. `target-torch` wins over the installed torch,
    # and the cache keeps the two targets' findings apart.
    from dynalint.config import parse_table
    from dynalint.run.incremental import lint_tree

    (tmp_path / "m.py").write_text(RANDOM_VALUE)
    config = parse_table({"select": ["DYN105"], "target-torch": target}, None)
    got = [f.row for f in lint_tree(sources(tmp_path), config, jobs=1, cache_dir=tmp_path / "cache")]
    assert got == rows
    other = parse_table({"select": ["DYN105"], "target-torch": "2.13" if target != "2.13" else "2.14"}, None)
    again = [f.row for f in lint_tree(sources(tmp_path), other, jobs=1, cache_dir=tmp_path / "cache")]
    assert again == ([8, 10] if target != "2.13" else [8])


DEEPCOPY_IN_FORWARD = """
import copy
import torch
from torch import nn


class M(nn.Module):
    def forward(self, x, config):
        settings = copy.deepcopy(config)
        h = torch.tanh(x)
        return copy.deepcopy(h) * settings.scale
"""


@pytest.mark.parametrize("target,rows", [("2.11", [9, 11]), ("2.12", [11]), ("2.14", [11])])
def test_deepcopy_of_plain_values_breaks_only_before_torch_2_12(tmp_path, target, rows):
    # Probed on 2.11 / 2.13 / 2.14.1 (DYN108's examples): a config copy breaks on 2.11 and is traced
    # from 2.12 (Dynamo inlines the copy module); a tensor copy breaks on every version.
    from dynalint.config import parse_table
    from dynalint.run.incremental import lint_tree

    (tmp_path / "m.py").write_text(DEEPCOPY_IN_FORWARD)
    config = parse_table({"select": ["DYN108"], "target-torch": target}, None)
    assert [f.row for f in lint_tree(sources(tmp_path), config, jobs=1, cache_dir=tmp_path / "cache")] == rows


def test_target_torch_must_be_a_version():
    from dynalint.config import ConfigError, parse_table

    with pytest.raises(ConfigError, match="target-torch"):
        parse_table({"target-torch": "latest"}, None)

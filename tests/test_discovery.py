"""Which files `dynalint check` lints: .gitignore (as git reads it, via pathspec), excludes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dynalint.config import Config, resolve_config
from dynalint.run.discovery import discover, is_excluded


def touch(root: Path, *names: str) -> None:
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def found(root: Path, paths=None, config: Config | None = None, **kw) -> list[str]:
    config = config or resolve_config([root], None)
    out = discover(paths or [root], config, **kw)
    return [p.relative_to(root).as_posix() if p.is_absolute() else p.as_posix() for p in out]


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_gitignore_rules_as_git_reads_them(repo):
    touch(
        repo,
        "a.py",
        "gen_a.py",
        "keep_gen.py",
        "top.py",
        "sub/top.py",
        "out/x.py",
        "sub/local.py",
        "sub/deep/local.py",
        "sub/other.py",
        "secret.py",
        "notes.txt",
    )
    (repo / ".gitignore").write_text("gen_*.py\n!keep_gen.py\n/top.py\nout/\n")
    (repo / "sub" / ".gitignore").write_text("local.py\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("secret.py\n")
    # `gen_*` with `!keep_gen.py`, an anchored `/top.py`, a folder `out/`, a nested .gitignore
    # that applies at any depth below it, and .git/info/exclude.
    assert found(repo) == ["a.py", "keep_gen.py", "sub/other.py", "sub/top.py"]
    # Check against git itself.
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "*.py"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(listed) == found(repo)


def test_respect_gitignore_false_lints_everything(repo):
    touch(repo, "a.py", "ignored.py")
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "pyproject.toml").write_text("[tool.dynalint]\nrespect-gitignore = false\n")
    assert found(repo) == ["a.py", "ignored.py"]


def test_gitignore_outside_a_repository_applies_below_the_walked_folder(tmp_path):
    touch(tmp_path, "proj/a.py", "proj/pkg/gen_b.py", "proj/pkg/c.py")
    (tmp_path / "proj" / ".gitignore").write_text("gen_*.py\n")
    assert found(tmp_path / "proj") == ["a.py", "pkg/c.py"]


def test_named_files_are_linted_even_if_ignored_unless_force_exclude(repo, monkeypatch):
    monkeypatch.chdir(repo)  # without a config file, the project root is the current folder
    touch(repo, "build/gen.py", "vendor/x.py")
    (repo / ".gitignore").write_text("vendor/\n")
    assert found(repo) == []  # build/ by default exclude, vendor/ by .gitignore
    named = [repo / "build" / "gen.py", repo / "vendor" / "x.py"]
    assert found(repo, named) == ["build/gen.py", "vendor/x.py"]
    assert found(repo, named, force_exclude=True) == ["vendor/x.py"]  # exclude, not .gitignore


def test_default_and_extended_excludes(tmp_path):
    touch(
        tmp_path,
        "src/m.py",
        "src/build/gen.py",
        ".venv/lib/x.py",
        "venv/y.py",
        "__pycache__/z.py",
        "src/migrations/0001.py",
        "docs/conf.py",
    )
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nextend-exclude = ["src/migrations", "conf.py"]\n')
    assert found(tmp_path) == ["src/m.py"]
    cfg = resolve_config([tmp_path], None)
    assert is_excluded(tmp_path / "src" / "build" / "gen.py", cfg)  # a folder named build, at any depth
    assert is_excluded(tmp_path / "src" / "migrations" / "0001.py", cfg)
    assert not is_excluded(tmp_path / "src" / "m.py", cfg)


def test_exclude_replaces_the_defaults(tmp_path):
    touch(tmp_path, "build/a.py", "gen/b.py")
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nexclude = ["gen"]\n')
    assert found(tmp_path) == ["build/a.py"]


def test_nested_config_excludes_apply_to_their_folder(tmp_path):
    touch(tmp_path, "a/skip_me.py", "b/skip_me.py", "b/keep.py")
    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    (tmp_path / "b" / "dynalint.toml").write_text('extend-exclude = ["skip_me.py"]\n')
    assert found(tmp_path) == ["a/skip_me.py", "b/keep.py"]


def test_results_are_sorted_unique_python_files(tmp_path):
    touch(tmp_path, "b.py", "a.py", "sub/c.py", "readme.md", "sub/data.json")
    assert found(tmp_path, [tmp_path, tmp_path / "sub", tmp_path / "a.py"]) == ["a.py", "b.py", "sub/c.py"]


def test_missing_named_file_is_kept_so_the_run_reports_it(tmp_path):
    assert found(tmp_path, [tmp_path / "missing.py"]) == ["missing.py"]

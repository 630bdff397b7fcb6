"""The pre-commit hooks, run by the real `pre-commit try-repo` against a temporary git repo.

pre-commit builds the hook's environment as users get it: a fresh virtualenv and
`pip install .` of this repository (its dependencies only, no torch) from the package index.
The repository is copied as it is on disk (tracked and untracked files, as `git ls-files`
lists them) into a throwaway git repo, so the hooks under test are the working tree's.
Without git, pre-commit or a reachable package index the test is skipped, and every
subprocess has a timeout so that it can never hang the suite.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 600

BAD = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Net(nn.Module):
        def forward(self, x):
            y = x.relu()
            print(y.shape)
            return y
    """
)
GOOD = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Net(nn.Module):
        def forward(self, x):
            return x.relu() * 2
    """
)


def _index_reachable() -> bool:
    """Is the package index pip would use reachable (a quick TCP connect)?"""
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return True
    host, port = parsed.hostname or "pypi.org", parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=5).close()
        return True
    except OSError:
        return False


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True, timeout=120).stdout


def _snapshot_of_this_repo(dest: Path) -> Path:
    """This checkout's files (not ignored ones) committed into a fresh repo."""
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    _git("init", "-q", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git("commit", "-q", "-m", "snapshot", cwd=dest)
    return dest


def _user_repo(dest: Path, files: dict[str, str]) -> Path:
    dest.mkdir()
    _git("init", "-q", cwd=dest)
    for name, text in files.items():
        (dest / name).write_text(text)
    _git("add", "-A", cwd=dest)
    return dest


def _try_repo(hook_repo: Path, user_repo: Path, hook: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNALINT_", "PRE_COMMIT"))}
    env.update(PRE_COMMIT_HOME=str(user_repo.parent / f"pc-home-{user_repo.name}"), PIP_DEFAULT_TIMEOUT="30")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--all-files", "--color", "never"],
        cwd=user_repo, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("pre_commit")
    if not _index_reachable():
        pytest.skip("the package index is unreachable; pre-commit cannot build the hook environment")
    return _snapshot_of_this_repo(tmp_path_factory.mktemp("hook-repo"))


def test_manifest_declares_both_hooks_without_torch():
    yaml = pytest.importorskip("yaml")

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"dynalint", "dynalint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types"] == ["python"]
        assert hook["require_serial"] is False
        assert "torch" not in str(hook.get("additional_dependencies", []))
        assert hook["entry"].startswith("dynalint check")
    assert "--fix" in hooks["dynalint-fix"]["entry"] and "--fix" not in hooks["dynalint"]["entry"]


def test_hooks_with_real_pre_commit(hook_repo, tmp_path):
    cases = {
        "check-bad": ("dynalint", {"model.py": BAD}),
        "check-good": ("dynalint", {"model.py": GOOD}),
        "fix-bad": ("dynalint-fix", {"model.py": BAD}),
    }
    repos = {name: _user_repo(tmp_path / name, files) for name, (_, files) in cases.items()}
    # Each try-repo builds its own environment; run them side by side.
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        futures = {name: pool.submit(_try_repo, hook_repo, repos[name], hook) for name, (hook, _) in cases.items()}
        results = {name: f.result() for name, f in futures.items()}

    bad = results["check-bad"]
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "model.py:8:9: DYN101" in bad.stdout
    assert "Failed" in bad.stdout and "exit code: 1" in bad.stdout

    good = results["check-good"]
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout and "DYN" not in good.stdout

    fixed = results["fix-bad"]
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # a hook that edits files fails the commit
    after = (repos["fix-bad"] / "model.py").read_text()
    if after != BAD:  # the autofix guarded the print
        assert "files were modified by this hook" in fixed.stdout
        assert "if not torch.compiler.is_compiling():\n            print(y.shape)" in after
    else:
        assert "DYN101" in fixed.stdout

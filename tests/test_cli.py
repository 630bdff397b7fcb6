"""The `dynalint check` command line as editors, pre-commit and CI call it (real subprocesses)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dynalint.autofix import fix_source
from dynalint.config import Config

from .samples import MODEL

# Run the CLI in-process of a fresh interpreter, as the console script does.
CLI = [sys.executable, "-c", "import sys; from dynalint.cli import main; sys.exit(main())"]


def dynalint(*args: str, cwd: Path, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, input=stdin, capture_output=True, timeout=timeout,
        env={**_env(), "DYNALINT_NO_CACHE": "1"},
    )


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("DYNALINT_")}


def test_exit_codes(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "clean.py").write_text("x = 1\n")
    assert dynalint("check", "clean.py", cwd=tmp_path).returncode == 0
    assert dynalint("check", "m.py", cwd=tmp_path).returncode == 1
    assert dynalint("check", "--exit-zero", "m.py", cwd=tmp_path).returncode == 0
    bad = dynalint("check", "--no-such-option", cwd=tmp_path)
    assert bad.returncode == 2 and b"No such option" in bad.stderr
    assert dynalint("rule", "DYN999", cwd=tmp_path).returncode == 2


def test_a_run_with_no_compile_region_says_nothing_was_checked(tmp_path):
    # A library used through plain functions (torchsde's sdeint) has no root of its own: "All
    # checks passed!" alone would read as a clean bill.
    (tmp_path / "lib.py").write_text("import torch\n\ndef sdeint(x):\n    print(x)\n    return torch.sin(x)\n")
    result = dynalint("check", "lib.py", cwd=tmp_path)
    assert result.returncode == 0 and b"No compile region found" in result.stdout, result.stdout
    assert b"All checks passed" not in result.stdout
    warm = dynalint("check", "lib.py", cwd=tmp_path)  # from the cache: the same summary
    assert warm.stdout == result.stdout
    (tmp_path / "m.py").write_text(MODEL)
    assert b"No compile region found" not in dynalint("check", "--select", "DYN102", "m.py", cwd=tmp_path).stdout
    (tmp_path / "dynalint.toml").write_text("extra-roots = ['lib.sdeint']\n")
    rooted = dynalint("check", "lib.py", cwd=tmp_path)
    assert rooted.returncode == 1 and b"DYN101" in rooted.stdout, rooted.stdout + rooted.stderr
    assert b"extra-roots" not in rooted.stderr


def test_extra_roots_patterns_name_the_public_functions_of_a_module(tmp_path):
    # A library used through plain functions (POT's `ot.sinkhorn`, a loss object's `__call__`):
    # `pkg.ops.*` makes its public functions and methods compiled code; private helpers are
    # reached through their calls, not matched themselves.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(textwrap.dedent("""
        import torch

        def sinkhorn(x):
            return _step(x).sum().item()

        def _step(x):
            print(x)
            return x

        def _unused(x):
            print(x)

        class Loss:
            def __init__(self):
                print("built once")

            def __call__(self, x):
                return x.max().item()
    """))
    (tmp_path / "pkg" / "data.py").write_text("import torch\n\ndef load(x):\n    return x.item()\n")
    (tmp_path / "dynalint.toml").write_text("extra-roots = ['pkg.ops.*']\n")
    result = dynalint("check", "--output-format", "concise", "pkg", cwd=tmp_path)
    rows = [line.split(" ")[0] for line in result.stdout.decode().splitlines() if ": DYN" in line]
    assert rows == ["pkg/ops.py:5:12:", "pkg/ops.py:8:5:", "pkg/ops.py:19:16:"], result.stdout
    assert b"extra-roots" not in result.stderr


def test_extra_roots_that_name_nothing_are_reported(tmp_path):
    # A bare name, or a name under a linted module that has no such function, is a typo the
    # user should see; a root in a file this run does not lint (pre-commit) is not.
    (tmp_path / "lib.py").write_text("import torch\n\ndef sdeint(x):\n    print(x)\n    return torch.sin(x)\n")
    (tmp_path / "dynalint.toml").write_text("extra-roots = ['sdeint', 'lib.sdeint', 'lib.sdeint2', 'other.fn']\n")
    for _ in range(2):  # cold, then warm from the cache
        result = dynalint("check", "lib.py", cwd=tmp_path)
        assert result.returncode == 1 and b"DYN101" in result.stdout
        warned = [line for line in result.stderr.decode().splitlines() if "extra-roots" in line]
        assert len(warned) == 1 and "`sdeint`, `lib.sdeint2`" in warned[0] and "other.fn" not in warned[0], warned


def test_stdin_is_reported_under_the_given_name(tmp_path):
    result = dynalint("check", "--output-format", "concise", "--stdin-filename", "pkg/model.py", cwd=tmp_path, stdin=MODEL.encode())
    assert result.returncode == 1
    lines = result.stdout.decode().splitlines()
    assert lines[:2] == [
        "pkg/model.py:7:9: DYN101 [*] `print()` breaks the graph; guard it with `if not torch.compiler.is_compiling():`",
        lines[1],
    ]
    assert lines[1].startswith("pkg/model.py:8:12: DYN120")
    clean = dynalint("check", "--stdin-filename", "pkg/model.py", cwd=tmp_path, stdin=b"x = 1\n")
    assert clean.returncode == 0 and b"All checks passed!" in clean.stdout


def test_stdin_text_format_shows_the_source_line(tmp_path):
    result = dynalint("check", "--stdin-filename", "model.py", cwd=tmp_path, stdin=MODEL.encode())
    assert b"   7 |         print(x)\n" in result.stdout


def test_stdin_fix_prints_the_fixed_source_and_leaves_the_rest_on_stderr(tmp_path):
    expected = fix_source(MODEL, "model.py", Config()).text
    result = dynalint("check", "--fix", "--stdin-filename", "model.py", cwd=tmp_path, stdin=MODEL.encode())
    assert result.stdout.decode() == expected
    remaining = [line for line in result.stderr.decode().splitlines() if ": DYN" in line]
    if expected == MODEL:  # no autofix in this build: everything remains
        assert len(remaining) == 2 and result.returncode == 1
    else:
        assert "DYN101" not in "".join(remaining)
        assert result.returncode == (1 if remaining else 0)
    assert not (tmp_path / "model.py").exists()  # stdin mode never writes files


def test_stdin_fix_keeps_crlf_and_utf8(tmp_path):
    source = MODEL.replace("print(x)", 'print("héllo", x)').replace("\n", "\r\n").encode("utf-8")
    result = dynalint("check", "--fix", "--stdin-filename", "model.py", cwd=tmp_path, stdin=source)
    out = result.stdout
    assert out.count(b"\r\n") == out.count(b"\n") and "héllo".encode() in out
    if b"is_compiling" not in out:
        assert out == source


def test_stdin_diff(tmp_path):
    result = dynalint("check", "--diff", "--stdin-filename", "model.py", cwd=tmp_path, stdin=MODEL.encode())
    expected = fix_source(MODEL, "model.py", Config())
    assert result.stdout.decode() == expected.diff("model.py")
    assert result.returncode == (1 if expected.changed else 0)


def test_stdin_uses_the_config_nearest_the_given_name(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[tool.dynalint]\nignore = ["DYN101"]\n')
    result = dynalint("check", "--output-format", "concise", "--stdin-filename", "pkg/model.py", cwd=tmp_path, stdin=MODEL.encode())
    assert [line.split()[1] for line in result.stdout.decode().splitlines() if ": DYN" in line] == ["DYN120"]


def test_force_exclude_applies_to_named_files_and_stdin(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nextend-exclude = ["third_party"]\n')
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / "m.py").write_text(MODEL)
    assert dynalint("check", "third_party/m.py", cwd=tmp_path).returncode == 1  # named: linted
    skipped = dynalint("check", "--force-exclude", "third_party/m.py", cwd=tmp_path)
    assert skipped.returncode == 0
    piped = dynalint("check", "--force-exclude", "--stdin-filename", "third_party/m.py", cwd=tmp_path, stdin=MODEL.encode())
    assert piped.returncode == 0 and piped.stdout == b""
    echoed = dynalint(
        "check", "--fix", "--force-exclude", "--stdin-filename", "third_party/m.py", cwd=tmp_path, stdin=MODEL.encode()
    )
    assert echoed.returncode == 0 and echoed.stdout == MODEL.encode()


HEAVY = ("torch", "numpy", "pygls", "lsprotocol", "transformers", "matplotlib", "multiprocessing.pool")


@pytest.mark.parametrize("extra", [[], ["--fix"], ["--output-format", "sarif"]])
def test_check_never_imports_torch_or_heavy_modules(tmp_path, extra):
    (tmp_path / "m.py").write_text(MODEL)
    probe = textwrap.dedent(
        f"""\
        import sys
        from dynalint.cli import main
        try:
            main(["check", "--no-cache", *{extra!r}, "m.py"])
        except SystemExit as e:
            code = e.code
        heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
        print("EXIT", code, "HEAVY", heavy)
        """
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, timeout=120, env=_env())
    last = result.stdout.decode().strip().splitlines()[-1]
    assert last.endswith("HEAVY []"), last
    assert last.startswith(("EXIT 1", "EXIT 0")), result.stderr.decode()[-2000:]


def test_a_run_served_from_the_cache_does_not_import_libcst(tmp_path):
    """Unchanged files come from the cache: their summaries are plain data (lint/summary.py), so
    the run skips libcst's import, the largest fixed cost of a cold process."""
    (tmp_path / "m.py").write_text(MODEL)
    probe = textwrap.dedent(
        """\
        import sys
        from dynalint.cli import main
        try:
            main(["check", "--output-format", "concise", "m.py"])
        except SystemExit as e:
            code = e.code
        print("EXIT", code, "LIBCST", "libcst" in sys.modules)
        """
    )
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, timeout=120, env=_env()) for _ in range(2)]
    first, second = (r.stdout.decode() for r in runs)
    assert first.strip().endswith("EXIT 1 LIBCST True"), runs[0].stderr.decode()[-2000:]
    assert second.strip().endswith("EXIT 1 LIBCST False"), runs[1].stderr.decode()[-2000:]
    assert first.splitlines()[:-1] == second.splitlines()[:-1] and "DYN101" in first  # same findings

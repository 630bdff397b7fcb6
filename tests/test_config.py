"""`[tool.dynalint]`: every key, hierarchical lookup, --config, and clear errors (exit 2)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynalint.cli import main
from dynalint.config import (
    DEFAULT_SELECT,
    Config,
    ConfigError,
    Overrides,
    load_config_file,
    parse_table,
    resolve_config,
)

from .samples import MODEL


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def run(args, cwd: Path, monkeypatch, input=None):
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", *args], input=input)


def codes(output: str) -> list[str]:
    return sorted(line.split()[1] for line in output.splitlines() if ": DYN" in line)


# ------------------------------------------------------------------------------------------------
# Parsing


def test_every_key_parses():
    cfg = parse_table(
        {
            "select": ["DYN1"],
            "extend-select": ["dyn301"],
            "ignore": ["DYN120"],
            "extend-ignore": ["DYN121"],
            "per-file-ignores": {"tests/*.py": ["DYN101"]},
            "exclude": ["vendored"],
            "extend-exclude": ["generated/*.py"],
            "src": ["src"],
            "extra-roots": ["pkg.train.step"],
            "is-compiling-functions": ["my_is_compiling"],
            "severity": {"DYN2": "warning", "DYN101": "info"},
            "respect-gitignore": False,
            "cache-dir": ".cache/dynalint",
        },
        Path("/repo/pyproject.toml"),
    )
    assert cfg.select == ("DYN1",) and cfg.extend_select == ("DYN301",)
    assert cfg.ignore == ("DYN120", "DYN121")
    assert cfg.per_file_ignores == {"tests/*.py": ("DYN101",)}
    assert cfg.exclude == ("vendored",) and cfg.extend_exclude == ("generated/*.py",)
    assert cfg.src == ("src",) and cfg.extra_roots == ("pkg.train.step",)
    assert cfg.is_compiling_functions == ("my_is_compiling",)
    assert cfg.severity == {"DYN2": "warning", "DYN101": "info"}
    assert cfg.respect_gitignore is False
    assert cfg.cache_path == Path("/repo/.cache/dynalint")


@pytest.mark.parametrize(
    "table, message",
    [
        ({"selct": ["DYN1"]}, "unknown key `selct` in [tool.dynalint] in /p/pyproject.toml (did you mean `select`?)"),
        ({"select": ["DYN999"]}, "unknown rule code or prefix 'DYN999' in `select`"),
        ({"ignore": ["E501"]}, "unknown rule code or prefix 'E501' in `ignore`"),
        ({"per-file-ignores": {"a.py": ["XYZ1"]}}, 'unknown rule code or prefix \'XYZ1\' in `per-file-ignores."a.py"`'),
        ({"severity": {"DYN101": "fatal"}}, "`severity.DYN101` must be one of error, warning, info, not 'fatal'"),
        ({"severity": {"NOPE1": "error"}}, "unknown rule code or prefix 'NOPE1' in `severity.NOPE1`"),
        ({"exclude": "build"}, "`exclude` must be a list of strings"),
        ({"respect-gitignore": "yes"}, "`respect-gitignore` must be true or false"),
    ],
)
def test_bad_tables_name_the_key(table, message):
    with pytest.raises(ConfigError) as err:
        parse_table(table, Path("/p/pyproject.toml"))
    assert message in str(err.value)
    assert str(err.value).endswith("/p/pyproject.toml") or "did you mean" in str(err.value)


def test_selection_prefers_the_more_specific_prefix_and_ties_go_to_ignore():
    cfg = Config(select=("DYN1",), ignore=("DYN12",), extend_select=("DYN121",))
    assert cfg.is_enabled("DYN101")
    assert not cfg.is_enabled("DYN120")  # DYN12 (ignore) beats DYN1 (select)
    assert cfg.is_enabled("DYN121")  # DYN121 (select) beats DYN12 (ignore)
    assert not cfg.is_enabled("DYN201")
    assert not Config(select=("DYN101",), ignore=("DYN101",)).is_enabled("DYN101")
    assert Config(select=("ALL",)).is_enabled("DYN301")
    assert not Config().is_enabled("DYN301")  # host-sync notes are opt-in
    assert DEFAULT_SELECT == ("DYN0", "DYN1", "DYN2")


def test_overrides_replace_select_and_add_ignores():
    base = Config(select=("DYN1",), extend_select=("DYN2",), ignore=("DYN110",))
    cfg = base.with_overrides(Overrides(select=("DYN12",), ignore=("DYN121",)))
    assert cfg.select == ("DYN12",) and cfg.extend_select == () and cfg.ignore == ("DYN110", "DYN121")
    assert base.select == ("DYN1",)  # the original is untouched


def test_dynalint_toml_may_hold_the_table_itself(tmp_path):
    cfg = load_config_file(write(tmp_path / "dynalint.toml", 'select = ["DYN101"]\n'))
    assert cfg.select == ("DYN101",) and cfg.root == tmp_path.resolve()


def test_invalid_toml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config_file(write(tmp_path / "pyproject.toml", "[tool.dynalint\n"))


def test_pyproject_without_table_is_skipped_when_walking_up(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.dynalint]\nignore = ["DYN120"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\n')
    cfg = resolve_config([tmp_path / "pkg" / "m.py"], None)
    assert cfg.path == (tmp_path / "pyproject.toml").resolve() and cfg.ignore == ("DYN120",)


# ------------------------------------------------------------------------------------------------
# Through the command line


def test_unknown_key_exits_2_naming_it(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.dynalint]\nselect = ["DYN1"]\nignroe = ["DYN120"]\n')
    write(tmp_path / "m.py", MODEL)
    result = run(["m.py"], tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert "unknown key `ignroe`" in result.output and "did you mean `ignore`" in result.output


def test_unknown_code_on_the_command_line_exits_2(tmp_path, monkeypatch):
    write(tmp_path / "m.py", MODEL)
    result = run(["--ignore", "DYN999", "m.py"], tmp_path, monkeypatch)
    assert result.exit_code == 2 and "'DYN999' in `--ignore`" in result.output


def test_nearest_config_governs_each_file(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.dynalint]\nignore = ["DYN120"]\n')
    write(tmp_path / "a" / "m.py", MODEL)
    write(tmp_path / "b" / "pyproject.toml", '[tool.dynalint]\nignore = ["DYN101"]\n')
    write(tmp_path / "b" / "m.py", MODEL)
    result = run(["."], tmp_path, monkeypatch)
    assert result.exit_code == 1
    lines = sorted(line.split(":")[0] + " " + line.split()[1] for line in result.output.splitlines() if ": DYN" in line)
    assert lines == ["a/m.py DYN101", "b/m.py DYN120"]
    # Command-line selection applies over both.
    result = run(["--select", "DYN101", "."], tmp_path, monkeypatch)
    assert codes(result.output) == ["DYN101"]


def test_broken_nested_config_exits_2(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", "[tool.dynalint]\n")
    write(tmp_path / "b" / "dynalint.toml", 'selectt = ["DYN1"]\n')
    write(tmp_path / "b" / "m.py", MODEL)
    result = run(["."], tmp_path, monkeypatch)
    assert result.exit_code == 2 and "unknown key `selectt`" in result.output


def test_config_option_points_at_a_file_and_turns_off_walking(tmp_path, monkeypatch):
    write(tmp_path / "b" / "pyproject.toml", '[tool.dynalint]\nignore = ["DYN101"]\n')
    write(tmp_path / "b" / "m.py", MODEL)
    write(tmp_path / "ci.toml", '[tool.dynalint]\nselect = ["DYN120"]\n')
    result = run(["--config", "ci.toml", "b"], tmp_path, monkeypatch)
    assert codes(result.output) == ["DYN120"]
    result = run(["--config", "missing.toml", "b"], tmp_path, monkeypatch)
    assert result.exit_code == 2


def test_per_file_ignores_match_paths_relative_to_the_config(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.dynalint.per-file-ignores]\n"tests/*.py" = ["DYN101"]\n')
    write(tmp_path / "tests" / "m.py", MODEL)
    write(tmp_path / "src" / "m.py", MODEL)
    result = run(["."], tmp_path, monkeypatch)
    found = sorted(line.split(":")[0] + " " + line.split()[1] for line in result.output.splitlines() if ": DYN" in line)
    assert found == ["src/m.py DYN101", "src/m.py DYN120", "tests/m.py DYN120"]


def test_exclude_and_extend_exclude(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.dynalint]\nextend-exclude = ["generated", "legacy_*.py"]\n')
    write(tmp_path / "generated" / "m.py", MODEL)
    write(tmp_path / "legacy_model.py", MODEL)
    write(tmp_path / "build" / "m.py", MODEL)  # default exclude
    write(tmp_path / "keep.py", MODEL)
    result = run(["."], tmp_path, monkeypatch)
    assert {line.split(":")[0] for line in result.output.splitlines() if ": DYN" in line} == {"keep.py"}


def test_severity_sets_annotation_level(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.dynalint.severity]\nDYN1 = "warning"\nDYN120 = "info"\n')
    write(tmp_path / "m.py", MODEL)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "github", "m.py"])
    levels = sorted(line.split()[0] + " " + line.split("(")[1].split(")")[0] for line in result.output.splitlines())
    assert levels == ["::notice DYN120", "::warning DYN101"]


def test_extra_roots_and_is_compiling_functions(tmp_path, monkeypatch):
    write(
        tmp_path / "train.py",
        """\
        from helpers import compiling


        def step(x):
            print(x)
            return x


        def guarded(x):
            if not compiling():
                print(x)
            return x
        """,
    )
    write(tmp_path / "helpers.py", "def compiling():\n    return False\n")
    assert codes(run(["train.py"], tmp_path, monkeypatch).output) == []  # nothing is compiled
    write(tmp_path / "pyproject.toml", '[tool.dynalint]\nextra-roots = ["train.step", "train.guarded"]\n')
    result = run(["train.py"], tmp_path, monkeypatch)
    assert [line.split(":")[1] for line in result.output.splitlines() if "DYN101" in line] == ["5", "11"]
    write(
        tmp_path / "pyproject.toml",
        '[tool.dynalint]\nextra-roots = ["train.step", "train.guarded"]\nis-compiling-functions = ["compiling"]\n',
    )
    result = run(["train.py"], tmp_path, monkeypatch)
    assert [line.split(":")[1] for line in result.output.splitlines() if "DYN101" in line] == ["5"]


def test_extra_roots_presume_their_parameters_tensors_as_compiled_functions_do(tmp_path, monkeypatch):
    # pyro's spline: a function the user compiles, named in extra-roots, is read as
    # `@torch.compile` would be read: its unannotated parameters are tensors. The cache keeps
    # the analyses with and without the root apart.
    write(
        tmp_path / "spline.py",
        """\
        import torch


        def spline(inputs, bound=3.0):
            inside = (inputs >= -bound) & (inputs <= bound)
            outputs = torch.zeros_like(inputs)
            outputs[inside] = inputs[inside] * 2
            return outputs
        """,
    )
    assert codes(run(["spline.py"], tmp_path, monkeypatch).output) == []
    write(tmp_path / "pyproject.toml", '[tool.dynalint]\nextra-roots = ["spline.spline"]\n')
    assert codes(run(["spline.py"], tmp_path, monkeypatch).output) == ["DYN130"]
    (tmp_path / "pyproject.toml").unlink()
    assert codes(run(["spline.py"], tmp_path, monkeypatch).output) == []


def test_src_sets_module_names_for_cross_file_roots(tmp_path, monkeypatch):
    write(tmp_path / "src" / "pkg" / "__init__.py", "")
    write(tmp_path / "src" / "pkg" / "ops.py", "def hook(x):\n    print(x)\n    return x\n")
    write(tmp_path / "pyproject.toml", '[tool.dynalint]\nsrc = ["src"]\nextra-roots = ["pkg.ops.hook"]\n')
    result = run(["src"], tmp_path, monkeypatch)
    assert codes(result.output) == ["DYN101"]


def test_codes_are_checked_without_loading_the_rules():
    """The configuration checks codes against `lint/catalog.py`, whose codes are the rules' own;
    parsing a table with codes imports no rule module and not libcst (a warm `check` of a
    project that selects codes needs neither)."""
    import subprocess
    import sys

    from dynalint.lint.catalog import RULE_CODES, RULE_MODULES
    from dynalint.lint.rules import all_rules

    assert RULE_CODES == tuple(r.code for r in all_rules())
    assert len(set(RULE_MODULES)) == len(RULE_MODULES)
    probe = textwrap.dedent("""
        import sys
        from dynalint.config import ConfigError, parse_table
        parse_table({"select": ["DYN1", "DYN301"], "ignore": ["dyn203"], "per-file-ignores": {"a.py": ["DYN101"]}}, None)
        try:
            parse_table({"select": ["DYN999"]}, None)
        except ConfigError as exc:
            print("error:", exc)
        print(sorted(m for m in sys.modules if m == "libcst" or m.startswith("dynalint.lint.rules")))
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "unknown rule code or prefix 'DYN999'" in out
    assert out.strip().endswith("[]")


@pytest.mark.parametrize(
    "dependencies, floor",
    [
        ('["numpy", "torchvision>=0.1", "torch>=1.13,<3"]', "1.13"),
        ('["torch~=2.4.0"]', "2.4"),
        ('["torch[opt]==2.1.2; python_version >= \'3.9\'"]', "2.1"),
        ('["torch"]', None),  # no lower bound
        ('["torch-geometric>=2.0"]', None),  # not torch
    ],
)
def test_the_projects_torch_floor_is_read_from_its_pyproject(tmp_path, dependencies, floor):
    from dynalint.config import declared_min_torch

    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "p"\ndependencies = {dependencies}\n')
    (tmp_path / "pkg").mkdir()
    assert declared_min_torch(tmp_path / "pkg") == floor


def test_guard_fixes_are_unsafe_where_the_project_supports_torch_before_2_3(tmp_path, monkeypatch):
    # peft declares torch>=1.13: `torch.compiler.is_compiling` (2.3) would raise there.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["torch>=1.13"]\n')
    source = "import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x * 2\n"
    (tmp_path / "m.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["check", "m.py", "--fix", "--no-cache"])
    assert result.exit_code == 1 and (tmp_path / "m.py").read_text() == source
    assert "1 more fix available with `--fix --unsafe-fixes`" in result.output
    # `min-torch` says otherwise: the guard is safe again.
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["torch>=1.13"]\n\n[tool.dynalint]\nmin-torch = "2.4"\n'
    )
    result = runner.invoke(main, ["check", "m.py", "--fix", "--no-cache"])
    assert "if not torch.compiler.is_compiling():\n        print(x)" in (tmp_path / "m.py").read_text()

"""`dynalint` command line. Exit codes: 0 clean, 1 findings, 2 usage or internal error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from dynalint.console import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, error

from dynalint import __version__
from dynalint.run import importcache

importcache.install()  # a cold `check` imports libcst at a third of the cost




def _codes_option(value: Optional[str]) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(c.strip().upper() for c in value.split(",") if c.strip())


class _Group(click.Group):
    """Turn unexpected exceptions into one line and exit 2 (traceback with DYNALINT_DEBUG=1)."""

    def invoke(self, ctx):
        import os

        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            error("interrupted")
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except Exception as exc:  # pragma: no cover - last resort
            from dynalint.config import ConfigError

            if isinstance(exc, ConfigError):  # e.g. a nested config found mid-run
                error(str(exc))
                sys.exit(EXIT_ERROR)
            if os.environ.get("DYNALINT_DEBUG"):
                raise
            from dynalint.run.engine import one_line_reason

            error(f"internal error: {one_line_reason(exc)}")
            sys.exit(EXIT_ERROR)

    def main(self, *args, **kwargs):
        # Usage errors exit 2 in click already; keep it that way.
        try:
            code = super().main(*args, **kwargs)
            sys.stdout.flush()  # a reader that went away shows here, not at interpreter exit
        except BrokenPipeError:
            _quiet_broken_pipe()
        return code


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away (`dynalint check | head`): stop without a word, as Unix
    tools do. Python would try to flush stdout once more at exit and complain, so it is pointed
    at /dev/null first."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_FINDINGS)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="dynalint")
def main() -> None:
    """Find and fix code that breaks torch.compile graphs."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="Also offer/apply fixes that may change semantics.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option("--select", help="Comma-separated rule codes or prefixes to enable (replaces config).")
@click.option("--extend-select", help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", help="Comma-separated rule codes or prefixes to disable.")
@click.option(
    "--output-format",
    type=click.Choice(["text", "concise", "json", "sarif", "github", "junit"]),
    default=None,
    help="How to print findings (default: text).",
)
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of findings.")
@click.option("--stdin-filename", help="Read source from stdin and report it under this name.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), help="Config file to use.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), help="Where to keep the cache.")
@click.option("-j", "--jobs", type=int, default=0, help="Worker processes (default: all cores).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
@click.option("--force-exclude", is_flag=True, help="Apply `exclude` even to files named on the command line (pre-commit).")
def check(
    paths,
    fix,
    unsafe_fixes,
    diff,
    select,
    extend_select,
    ignore,
    output_format,
    statistics,
    stdin_filename,
    config_file,
    no_cache,
    cache_dir,
    jobs,
    exit_zero,
    quiet,
    no_progress,
    force_exclude,
):
    """Lint PATHS (default: current folder) for graph breaks and recompiles."""
    from dynalint.check import CheckOptions, run_check

    opts = CheckOptions(
        paths=list(paths),
        fix=fix,
        unsafe_fixes=unsafe_fixes,
        diff=diff,
        select=_codes_option(select),
        extend_select=_codes_option(extend_select),
        ignore=_codes_option(ignore),
        output_format=output_format or "text",
        statistics=statistics,
        stdin_filename=stdin_filename,
        config_file=config_file,
        no_cache=no_cache,
        cache_dir=cache_dir,
        jobs=jobs,
        quiet=quiet,
        progress=not no_progress,
        force_exclude=force_exclude,
    )
    code = run_check(opts)
    sys.exit(EXIT_CLEAN if exit_zero and code == EXIT_FINDINGS else code)


@main.command(name="rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rules_cmd(output_format):
    """List the rule catalog."""
    import json

    from dynalint.lint.rule import FIX_APPLICABILITIES, FIX_MARKS
    from dynalint.lint.rules import all_rules

    rules = all_rules()
    if output_format == "json":
        click.echo(
            json.dumps(
                [
                    {
                        "code": r.code,
                        "name": r.name,
                        "summary": r.summary,
                        "severity": r.severity,
                        "fix": r.fixable,
                        # What a finding's fix may be: ["safe"], ["unsafe"], ["safe", "unsafe"] or [].
                        "fix_applicability": list(FIX_APPLICABILITIES[r.fixable]),
                        "explanation": r.docs(),
                    }
                    for r in rules
                ],
                indent=2,
            )
        )
        return
    for r in rules:
        fix = FIX_MARKS.get(r.fixable or "", "   ")
        click.echo(f"{r.code}  {fix}  {r.severity:<7}  {r.name:<32}  {r.summary}")
    click.echo(
        "\n[*] safe fix (`--fix`)   [u] unsafe fix (`--fix --unsafe-fixes`)   "
        "[~] safe or unsafe by finding (`dynalint rule CODE` says when)   (blank: no fix)\n"
        "Not every finding of a rule with a fix gets one."
    )


@main.command(name="rule")
@click.argument("code")
def rule_cmd(code):
    """Print one rule's documentation (e.g. `dynalint rule DYN120`)."""
    from dynalint.lint.rules import rule_by_code

    r = rule_by_code(code)
    if r is None:
        error(f"unknown rule code {code!r}; `dynalint rules` lists them")
        sys.exit(EXIT_ERROR)
    click.echo(f"# {r.name} ({r.code})\n")
    click.echo(f"Severity: {r.severity}. Fix: {r.fixable or 'none'}.\n")
    click.echo(r.docs())


class _LazyCommand(click.Command):
    """A subcommand whose module (and its heavier imports) loads only when it runs."""

    def __init__(self, name: str, module: str, help: str):
        super().__init__(name, help=help, add_help_option=False,
                         context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
        self.module = module

    def parse_args(self, ctx, args):
        ctx.args = list(args)
        return []

    def invoke(self, ctx):
        import importlib

        real = getattr(importlib.import_module(self.module), self.name)
        return real.main(args=list(ctx.args), prog_name=f"dynalint {self.name}")


for _name, _module, _help in (
    ("lsp", "dynalint.lsp", "Start the language server over stdio."),
    ("verify", "dynalint.verify.command", "Prove a fix with Dynamo: graphs, outputs, timing."),
    ("migrate", "dynalint.migrate.command", "Migrate a codebase: lint, fix, verify models, report."),
):
    main.add_command(_LazyCommand(_name, _module, _help))

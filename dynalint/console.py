"""Exit codes and the one-line error message, shared by every command (ruff's convention).

EXIT_FINDINGS means "something for you to act on": findings (check), outputs that differ or code
that is not one graph with --fullgraph (verify), findings, reverts or failing models left (migrate).
"""

from __future__ import annotations

import click

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def warning(message: str) -> None:
    """`dynalint: warning: MESSAGE` on stderr: something was skipped, the run went on."""
    click.echo(f"dynalint: warning: {message}", err=True)


def error(message: str) -> None:
    """`dynalint: error: MESSAGE` on stderr."""
    click.echo(f"dynalint: error: {message}", err=True)

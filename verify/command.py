"""`dynalint verify TARGET`: prove a fix with Dynamo (graphs, outputs, timing).

Exit codes: 0 verified (outputs match, or equal within float rounding), 1 the fixed code's outputs
differ from the original's (or, with --fullgraph, the code as it is does not compile to one graph
without recompiles), 2 usage error or a failure of the code under test (one line; the traceback
with --verbose).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Optional

import click

from dynalint.console import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, error



def _shape(ctx, param, value: Optional[str]) -> Optional[list[int]]:
    if value is None:
        return None
    try:
        dims = [int(d) for d in value.split(",") if d.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a shape like 4,16") from None
    if not dims or any(d < 0 for d in dims):
        raise click.BadParameter(f"{value!r} is not a shape like 4,16")
    return dims



@click.command(name="verify")
@click.argument("target")
@click.option("--inputs", help="`path.py::fn` (or `pkg.mod:fn`) returning a tuple of positional arguments, a dict of keyword "
              "arguments or one tensor.")
@click.option("--input-shape", callback=_shape, help="One torch.randn input of this shape, e.g. 4,16.")
@click.option("--second-inputs", help="Inputs of other shapes (`path.py::fn`): count the graphs compiled for them.")
@click.option("--second-input-shape", callback=_shape, help="A second torch.randn input shape: count recompiles.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change semantics.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--dynamic/--no-dynamic", default=None, help="torch.compile's `dynamic` (default: Dynamo decides).")
@click.option("--repeat", type=click.IntRange(2), default=30, show_default=True,
              help="Timing rounds: each times a block of calls of every version, interleaved.")
@click.option("--warmup", type=click.IntRange(0), default=3, show_default=True, help="Untimed calls first.")
@click.option("--max-time", type=click.FloatRange(1), default=60, show_default=True,
              help="Stop timing rounds after this many seconds (at least 10 rounds run).")
@click.option("--threads", type=click.IntRange(1), help="torch.set_num_threads for the timed child (default: torch's).")
@click.option("--arg", "target_args", multiple=True, metavar="KEY=VALUE",
              help="Keyword argument for TARGET's factory or class (repeatable), e.g. --arg seq=4096: time at "
                   "realistic sizes.")
@click.option("--no-timing", is_flag=True, help="Skip timing (graphs and outputs only).")
@click.option("--backend", default="inductor", show_default=True, help="torch.compile backend for timing.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--timeout", type=click.FloatRange(1), default=600, show_default=True, help="Seconds per child process.")
@click.option("--path", "sys_path", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to put on sys.path for the target (repeatable).")
@click.option("--try-settings", is_flag=True,
              help="Also try Dynamo settings (capture_scalar_outputs, capture_dynamic_output_shape_ops; allow_rnn where an RNN broke) on the code "
                   "and suggest one that lowers the breaks with outputs equal.")
@click.option("--train", is_flag=True,
              help="Run a module in train mode (default: eval): breaks only training reaches (dropout, random "
                   "planning, gradient checkpointing). Outputs are compared with the same seed; give it dropout 0.")
@click.option("--fullgraph", is_flag=True,
              help="For CI: exit 1 unless the code as it is compiles to one graph with no break, skipped frame or "
                   "recompile (give --second-inputs/--second-input-shape to check recompiles).")
@click.option("--output-format", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="On errors, print the traceback and the child's output.")
@click.help_option("-h", "--help")
def verify(target, inputs, input_shape, second_inputs, second_input_shape, unsafe_fixes, device, dynamic, repeat,
           warmup, max_time, threads, target_args, no_timing, backend, seed, timeout, sys_path, try_settings, train, fullgraph, output_format, verbose):
    """Run TARGET (`file.py::Class`, `file.py::factory` or `pkg.module:Name`) and its in-memory fixed
    version through torch._dynamo.explain; compare outputs and time both compiled versions."""
    if importlib.util.find_spec("torch") is None:
        error("torch is not installed; `dynalint verify` needs it: install a torch build for your machine, "
               "then `pip install 'dynalint[verify]'`")
        sys.exit(EXIT_ERROR)
    from dynalint.verify.loading import parse_target_args
    from dynalint.verify.report import render
    from dynalint.verify.runner import VerifyError, verify as run_verify

    try:
        parsed_args = parse_target_args(target_args)
    except ValueError as exc:
        error(f"--arg: {exc}")
        sys.exit(EXIT_ERROR)
    try:
        report = run_verify(
            target, inputs=inputs, input_shape=input_shape, second_inputs=second_inputs,
            second_input_shape=second_input_shape, device=device, dynamic=dynamic, repeat=repeat, warmup=warmup,
            timing=not no_timing, max_seconds=max_time, threads=threads, target_args=parsed_args, backend=backend, seed=seed, unsafe_fixes=unsafe_fixes,
            sys_path=[str(p) for p in sys_path], timeout=timeout, verbose=verbose, settings=try_settings, train=train,
        )
    except VerifyError as exc:
        error(str(exc))
        if verbose and exc.details:
            click.echo(exc.details.rstrip(), err=True)
        sys.exit(EXIT_ERROR)
    if fullgraph:
        from dynalint.verify.runner import fullgraph_problems

        report["fullgraph_problems"] = fullgraph_problems(report)
    click.echo(render(report, output_format))
    if fullgraph and report["fullgraph_problems"]:
        if output_format != "json":
            error("--fullgraph: " + "; ".join(report["fullgraph_problems"]))
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN if report["outputs_match"] else EXIT_FINDINGS)

"""Assertions for a project's own tests: does this model compile the way it should?

    from dynalint.testing import assert_compiles

    def test_unet_compiles():
        model = UNet().eval()
        assert_compiles(model, (torch.randn(1, 4, 64, 64),), graphs=1, recompiles=0,
                        second_inputs=(torch.randn(1, 4, 96, 96),), dynamic=True)

It runs in the test's own process (the test already imports torch and the model), with
torch._dynamo.explain and Dynamo's own logs: the failure message lists each break with its place
and Dynamo's GB code, the functions Dynamo skipped and the guard failures behind each recompile.
"""

from __future__ import annotations

from typing import Any, Optional


def _normalize(inputs: Any) -> tuple[tuple, dict]:
    from dynalint.verify.loading import split_inputs

    split = split_inputs(inputs)
    if split is not None:
        return split
    raise TypeError(f"inputs must be a tuple of arguments, a dict of keyword arguments or a tensor, "
                    f"not {type(inputs).__name__}")


def compile_report(model, inputs, second_inputs=None, dynamic: Optional[bool] = None) -> dict:
    """Graphs, breaks (with place and GB code), skipped frames and recompiles of `model(*inputs)`."""
    import torch

    from dynalint.verify import measuring as M

    args, kwargs = _normalize(inputs)
    with torch.no_grad():
        result = M.explain(model, args, kwargs, 0, dynamic)
        if second_inputs is not None:
            result.update(M.count_recompiles(model, (args, kwargs), _normalize(second_inputs), 0, dynamic))
    result.pop("traced_lines", None)
    return result


def _where(item: dict) -> str:
    return f"{item['filename']}:{item['lineno']}" if item.get("filename") else "(no location)"


def describe(result: dict) -> list[str]:
    lines = []
    for b in result["break_reasons"] + [b for b in result.get("logged_breaks") or () if b.get("frame_skipped")]:
        gb = f" [{b['gb_id']}]" if b.get("gb_id") else ""
        lines.append(f"break at {_where(b)}{gb}: {b.get('gb_type') or b['reason']}")
    if result.get("unexplained_breaks"):
        lines.append(f"{result['unexplained_breaks']} breaks Dynamo gave no location for")
    for s in list(result.get("frame_skips") or ()) + list(result.get("recompile_skips") or ()):
        lines.append(f"skipped {s.get('function') or 'a function'} at {_where(s)}: {s['why']}")
    for e in list(result.get("recompile_events") or ()) + list(result.get("recompile_reasons") or ()):
        guards = "; ".join(g["guard"] + (f" ({_where(g)})" if g.get("filename") else "") for g in e["guards"])
        lines.append(f"recompiled {e['function']} at {_where(e)}: {guards or 'guard failure not logged'}")
    return lines


def assert_compiles(model, inputs, *, graphs: Optional[int] = 1, recompiles: Optional[int] = 0,
                    second_inputs=None, dynamic: Optional[bool] = None) -> dict:
    """Fail unless `model(*inputs)` compiles to `graphs` graphs (None: any), with no function skipped,
    and (with `second_inputs`, inputs of other shapes) at most `recompiles` recompiles.

    Returns what was measured: graph_count, graph_break_count, break_reasons, frame_skips,
    recompiles, recompile_reasons."""
    result = compile_report(model, inputs, second_inputs, dynamic)
    problems = []
    if graphs is not None and result["graph_count"] != graphs:
        problems.append(f"{result['graph_count']} graphs, expected {graphs}")
    if graphs is not None and (result.get("frame_skips") or result.get("unexplained_breaks")):
        problems.append("Dynamo skipped code or broke without saying where")
    seen_recompiles = result.get("recompiles", 0) if second_inputs is not None else len(result.get("recompile_events") or ())
    if recompiles is not None and seen_recompiles > recompiles:
        problems.append(f"{seen_recompiles} recompiles, expected at most {recompiles}")
    if problems:
        raise AssertionError("; ".join(problems) + "\n" + "\n".join("  " + line for line in describe(result)))
    return result

"""Run a rule example through Dynamo on the installed torch (used by test_probes.py)."""

from __future__ import annotations

import atexit
import inspect
import os
import shutil
import tempfile
import uuid
import importlib.util
import sys

from dynalint.lint.rule import BREAKS, CLEAN, NO_RECOMPILE, RECOMPILES, Example


_PROBE_DIR: list[str] = []


def _probe_dir() -> str:
    """One folder per test process for the probe files, removed when the process ends (the
    files must outlive each probe: Dynamo reads their source lines while tracing)."""
    if not _PROBE_DIR:
        _PROBE_DIR.append(tempfile.mkdtemp(prefix="dynalint-probe-"))
        atexit.register(shutil.rmtree, _PROBE_DIR[0], ignore_errors=True)
    return _PROBE_DIR[0]


def load_example(example: Example):
    """Import the example from a real file, so Dynamo sees real source lines."""
    d = _probe_dir()
    name = f"probe_{uuid.uuid4().hex[:8]}"
    path = os.path.join(d, f"{name}.py")
    with open(path, "w") as fh:
        fh.write(example.source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def target_of(mod):
    import torch

    m = getattr(mod, "M", None)
    if inspect.isclass(m) and issubclass(m, torch.nn.Module):
        return m()
    f = getattr(mod, "f")
    return getattr(f, "_torchdynamo_orig_callable", None) or inspect.unwrap(f)


def run_probe(example: Example) -> dict:
    import torch
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter

    os.environ.setdefault("PYTHONBREAKPOINT", "0")
    torch._dynamo.reset()
    mod = load_example(example)
    target = target_of(mod)
    import numpy

    env = {"torch": torch, "np": numpy}
    inputs = eval(example.inputs, env)
    if example.dynamo in (BREAKS, CLEAN):
        from dynalint.verify.measuring import DynamoLog

        torch.manual_seed(0)
        with DynamoLog(trace=False) as log:
            out = torch._dynamo.explain(target)(*inputs)
        return {
            "graph_count": out.graph_count,
            "graph_break_count": out.graph_break_count,
            "break_reasons": [str(r.reason).splitlines()[0] for r in out.break_reasons],
            # Dynamo's break types (GB codes) from its own log, breaks in skipped frames included.
            "gb_ids": sorted({b["gb_id"] for b in log.as_json()["logged_breaks"] if b["gb_id"]}),
        }
    if example.dynamo in (RECOMPILES, NO_RECOMPILE):
        counter = CompileCounter()
        compiled = torch.compile(target, backend=counter, dynamic=True)
        for _ in range(example.calls):
            compiled(*inputs)
        compiled(*eval(example.inputs2, env))
        return {"frame_count": counter.frame_count}
    raise ValueError(f"example is not probed: {example.why}")


def verdict(example: Example, result: dict) -> bool:
    if example.dynamo == BREAKS:
        # A break reason, no graph at all (Dynamo gave up on the whole frame: worse than a break),
        # or a break only Dynamo's log names (a frame skipped after a break in a loop, its callees
        # compiled on their own: explain then counts graphs and no break).
        return len(result["break_reasons"]) >= 1 or result["graph_count"] == 0 or bool(result["gb_ids"])
    if example.dynamo == CLEAN:
        return len(result["break_reasons"]) == 0 and result["graph_count"] == 1 and not result["gb_ids"]
    if example.dynamo == RECOMPILES:
        return result["frame_count"] >= 2
    if example.dynamo == NO_RECOMPILE:
        return result["frame_count"] == 1
    return False

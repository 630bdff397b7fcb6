"""Child-side measurements: executed lines, Dynamo's explain, recompiles, outputs, timing.

Everything here runs inside the verify child process, with torch imported.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import statistics
import sys
import time
from collections.abc import Mapping
from typing import Any, Callable, Optional


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:  # numpy is optional
        pass


def torch_dir() -> str:
    import torch

    return os.path.realpath(os.path.dirname(torch.__file__)) + os.sep


# --------------------------------------------------------------------------------------------
# Which lines ran (for `not_reached`): sys.monitoring on 3.12+, sys.settrace before.


class LineRecorder:
    """Record executed line numbers in the given files while active."""

    def __init__(self, files: list[str]):
        self.files = set(files)
        self.lines: dict[str, set[int]] = {f: set() for f in files}
        self._tool: Optional[int] = None

    def __enter__(self) -> "LineRecorder":
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            for tool in (monitoring.COVERAGE_ID, monitoring.PROFILER_ID, 5):
                if monitoring.get_tool(tool) is None:
                    self._tool = tool
                    break
        if self._tool is not None:
            self._start_monitoring()
        else:
            sys.settrace(self._global_trace)
        return self

    def __exit__(self, *exc) -> None:
        if self._tool is not None:
            sys.monitoring.set_events(self._tool, 0)
            sys.monitoring.register_callback(self._tool, sys.monitoring.events.LINE, None)
            sys.monitoring.free_tool_id(self._tool)
        else:
            sys.settrace(None)

    # -- sys.monitoring
    def _start_monitoring(self) -> None:
        mon = sys.monitoring
        mon.use_tool_id(self._tool, "dynalint-verify")
        mon.restart_events()  # lines DISABLEd by an earlier recorder count again
        cache: dict[str, Optional[set[int]]] = {}

        def on_line(code, line):
            hits = cache.get(code.co_filename, False)
            if hits is False:
                hits = self.lines.get(os.path.realpath(code.co_filename))
                cache[code.co_filename] = hits
            if hits is None:
                return mon.DISABLE  # a line of some other file: stop reporting it
            hits.add(line)
            return None

        mon.register_callback(self._tool, mon.events.LINE, on_line)
        mon.set_events(self._tool, mon.events.LINE)

    # -- sys.settrace
    def _global_trace(self, frame, event, arg):
        hits = self.lines.get(os.path.realpath(frame.f_code.co_filename))
        if hits is None:
            return None

        def local(frame, event, arg):
            if event == "line":
                hits.add(frame.f_lineno)
            return local

        return local  # the "call" event's line is the `def`, not a line that ran

    def as_json(self) -> dict[str, list[int]]:
        return {f: sorted(lines) for f, lines in self.lines.items()}


# --------------------------------------------------------------------------------------------
# Dynamo


def user_frame(stack, tdir: str) -> tuple[Optional[str], Optional[int]]:
    """The innermost frame of a break's user_stack that is not torch's own code."""
    for frame in reversed(list(stack or ())):
        path = os.path.realpath(frame.filename)
        if not path.startswith(tdir):
            return path, frame.lineno
    return None, None


def break_reasons(explained, tdir: str) -> list[dict]:
    out = []
    for reason in explained.break_reasons:
        filename, lineno = user_frame(getattr(reason, "user_stack", None), tdir)
        first = str(getattr(reason, "reason", reason)).strip().splitlines()
        out.append({"reason": first[0] if first else "", "filename": filename, "lineno": lineno})
    return out


@contextlib.contextmanager
def dynamic_shapes(dynamic: Optional[bool]):
    """What `torch.compile(dynamic=...)` switches, for explain (which takes no such argument)."""
    import torch._dynamo

    if dynamic is None:
        yield
        return
    patch = (
        dict(assume_static_by_default=False, automatic_dynamic_shapes=False)
        if dynamic
        else dict(assume_static_by_default=True, automatic_dynamic_shapes=False)
    )
    with torch._dynamo.config.patch(**patch):
        yield


def explain(fn: Callable, args: tuple, kwargs: dict, seed: int, dynamic: Optional[bool]) -> dict:
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    seed_everything(seed)
    with dynamic_shapes(dynamic):
        out = torch._dynamo.explain(fn)(*args, **kwargs)
    return {
        "graph_count": out.graph_count,
        "graph_break_count": out.graph_break_count,
        "break_reasons": break_reasons(out, torch_dir()),
    }


def count_recompiles(fn: Callable, first: tuple, second: tuple, seed: int, dynamic: Optional[bool]) -> int:
    """Graphs Dynamo compiles for a second call with other shapes (0: the first graphs were reused)."""
    import torch
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter, dynamic=dynamic)
    seed_everything(seed)
    compiled(*first[0], **first[1])
    after_first = counter.frame_count
    seed_everything(seed)
    compiled(*second[0], **second[1])
    torch._dynamo.reset()
    return counter.frame_count - after_first


# --------------------------------------------------------------------------------------------
# Outputs


def flatten(value: Any) -> list[Any]:
    """Tensor leaves of an output (tuples, lists, dicts, ModelOutput, dataclasses), in order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, Mapping):
        return [leaf for k in value.keys() for leaf in flatten(value[k])]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in flatten(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [leaf for f in dataclasses.fields(value) for leaf in flatten(getattr(value, f.name))]
    return []


def digest(leaves: list) -> list[dict]:
    out = []
    for t in leaves:
        t = t.detach()
        entry = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
        if t.is_floating_point() or t.is_complex():
            entry["sum"] = float(t.double().sum().real) if t.numel() else 0.0
            entry["abs_sum"] = float(t.double().abs().sum()) if t.numel() else 0.0
        elif t.numel():
            entry["sum"] = int(t.long().sum())
        out.append(entry)
    return out


def compare(reference: list, actual: list) -> tuple[bool, Optional[float], str]:
    """-> (match, max_abs_diff, why). Tolerances are `torch.testing.assert_close` defaults."""
    import torch

    if len(reference) != len(actual):
        return False, None, f"{len(reference)} output tensors before, {len(actual)} after"
    worst = 0.0
    why = ""
    match = True
    for i, (ref, got) in enumerate(zip(reference, actual)):
        ref, got = ref.detach().cpu(), got.detach().cpu()
        if ref.shape != got.shape:
            return False, None, f"output {i}: shape {list(ref.shape)} before, {list(got.shape)} after"
        if ref.numel():
            if ref.is_floating_point() or ref.is_complex():
                diff = (ref.double() - got.double()).abs().nan_to_num(nan=float("inf")).max()
            else:
                diff = (ref.long() - got.long()).abs().max()
            worst = max(worst, float(diff))
        try:
            torch.testing.assert_close(got, ref, equal_nan=True)
        except AssertionError as exc:
            match = False
            why = why or f"output {i}: " + str(exc).strip().splitlines()[0]
    return match, worst, why


# --------------------------------------------------------------------------------------------
# Timing


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn: Callable, args: tuple, kwargs: dict, device: str, repeat: int, warmup: int) -> float:
    """Median milliseconds of `repeat` calls after `warmup`; CUDA events on GPU, perf_counter on CPU."""
    import torch

    for _ in range(warmup):
        fn(*args, **kwargs)
    _sync(device)
    samples = []
    if device == "cuda":
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args, **kwargs)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
    else:
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn(*args, **kwargs)
            samples.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(samples)


def compile_and_time(
    fn: Callable, args: tuple, kwargs: dict, device: str, repeat: int, warmup: int, backend: str, dynamic: Optional[bool]
) -> dict:
    """Compile time (first call, synchronized) and the median of the compiled calls after it."""
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    _sync(device)
    t0 = time.perf_counter()
    compiled(*args, **kwargs)
    _sync(device)
    compile_s = time.perf_counter() - t0
    ms = time_calls(compiled, args, kwargs, device, repeat, warmup)
    torch._dynamo.reset()
    return {"compiled_ms": ms, "compile_s": compile_s}

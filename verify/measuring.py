"""Child-side measurements: executed lines, Dynamo's explain, recompiles, outputs, timing.

Everything here runs inside the verify child process, with torch imported.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import random
import re
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


_GB_URL = re.compile(r"compile-graph-break-site/gb/(gb\d+)\.html", re.I)
_AT = re.compile(r"in user code at (.+):(\d+)\s*$", re.M)
_TRACE = re.compile(r"TRACE starts_line (.+):(\d+) in ")
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in ', re.M)
_RECOMPILING = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
_GUARD = re.compile(r"^\s*- (\d+/\d+): (.*?)\s*$")
_FILE_LINE = re.compile(r'File "(.+)", line (\d+)')
_LIMIT = re.compile(r"hit config\.(\w+) \((\d+)\)")
_FUNCTION_AT = re.compile(r"function: '([^']+)' \((.+):(\d+)\)")
_WONT = re.compile(r"WON'T CONVERT (\S+) (.+) line (\d+)")
SKIPPED_BREAK = "Skipping the function and falling back to eager"


def gb_registry() -> dict[str, dict]:
    """Torch's catalog of graph-break types (torch/_dynamo/graph_break_registry.json, torch 2.8+):
    {"GB0170": {"gb_type": ..., "explanation": ..., "hints": [...]}}; {} where torch has none."""
    import json

    path = os.path.join(torch_dir(), "_dynamo", "graph_break_registry.json")
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, ValueError):
        return {}
    out = {}
    for gb_id, entries in raw.items():
        entry = entries[0] if isinstance(entries, list) and entries else entries
        if isinstance(entry, dict) and entry.get("Gb_type"):
            out[gb_id.upper()] = {"gb_type": entry["Gb_type"], "explanation": entry.get("Explanation", ""),
                                  "hints": list(entry.get("Hints") or ())}
    return out


class DynamoLog(logging.Handler):
    """Dynamo's own logs while active (torch._logging's graph_breaks, recompiles and, when `trace`,
    trace_source artifacts; its warnings): every break with its location and GB code, frames
    Dynamo gave up on, recompiles with their guard failures, and the lines it traced.

    explain() lists only breaks it could resume after; a frame skipped after a break in a loop or
    after hitting the recompile limit appears only here."""

    def __init__(self, trace: bool = True, files: Optional[list[str]] = None):
        super().__init__(logging.DEBUG)
        self.trace = trace
        self.files = {os.path.realpath(f) for f in files} if files else None
        self.breaks: list[dict] = []
        self.recompiles: list[dict] = []
        self.skips: list[dict] = []
        self.traced: dict[str, set[int]] = {}
        self._real: dict[str, Optional[str]] = {}
        # Break places in torch's own code -> the user frame an earlier message traced them to
        # (Dynamo suppresses the traceback when the same break comes again).
        self._torch_sites: dict[tuple, tuple] = {}
        self._registry: Optional[dict] = None

    # -- setup
    def __enter__(self) -> "DynamoLog":
        import torch._logging

        torch._logging.set_logs(dynamo=logging.WARNING, graph_breaks=True, recompiles=True, trace_source=self.trace)
        self._logger = logging.getLogger("torch._dynamo")
        self._saved = list(self._logger.handlers)
        for handler in self._saved:  # torch's stderr handler: the report says it better
            self._logger.removeHandler(handler)
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        import torch._logging

        self._logger.removeHandler(self)
        torch._logging.set_logs()
        for handler in self._saved:
            if handler not in self._logger.handlers:
                self._logger.addHandler(handler)

    # -- records
    def emit(self, record: logging.LogRecord) -> None:
        try:
            name = record.name
            if name.endswith("__trace_source"):
                self._on_trace(record)
                return
            message = record.getMessage()
            if name.endswith("__graph_breaks"):
                self.breaks.append(self._parse_break(message))
            elif name.endswith("__recompiles"):
                event = self._parse_recompile(message)
                if event:
                    self.recompiles.append(event)
            elif "hit config." in message and "limit" in message:
                self._on_limit(message)
            elif "WON'T CONVERT" in message:
                m = _WONT.search(message)
                if m:
                    self._skip(m.group(1), m.group(2), int(m.group(3)), "Dynamo gave up on this frame: it ran eagerly")
        except Exception:  # a log line we cannot read must never fail the measurement
            pass

    def _path(self, path: str) -> Optional[str]:
        real = self._real.get(path, False)
        if real is False:
            real = os.path.realpath(path) if path and not path.startswith("<") else None
            self._real[path] = real
        return real

    def _on_trace(self, record: logging.LogRecord) -> None:
        args = record.args
        # TRACE starts_line's arguments are (filename, lineno, ...): avoid formatting every line.
        if isinstance(args, tuple) and len(args) >= 2 and isinstance(args[1], int) and "starts_line" in str(record.msg):
            path, line = self._path(str(args[0])), args[1]
        else:
            m = _TRACE.search(record.getMessage())
            if not m:
                return
            path, line = self._path(m.group(1)), int(m.group(2))
        if path and (self.files is None or path in self.files):
            self.traced.setdefault(path, set()).add(line)

    def registry(self) -> dict:
        if self._registry is None:
            self._registry = gb_registry()
        return self._registry

    def _gb(self, text: str) -> tuple[Optional[str], Optional[str]]:
        """(GB id, gb_type) of a break message: the site link's id, else a registry type named in it."""
        m = _GB_URL.search(text)
        registry = self.registry()
        if m:
            gb_id = m.group(1).upper()
            return gb_id, (registry.get(gb_id) or {}).get("gb_type")
        lines = {line.strip() for line in text.splitlines()}
        for gb_id, entry in registry.items():
            if entry["gb_type"] in lines:
                return gb_id, entry["gb_type"]
        return None, None

    def _user_site(self, message: str) -> tuple[Optional[str], Optional[int]]:
        """Where the break is in user code: the log's "at" place, or when that is torch's own
        code (`nn.Linear(...)` built in forward breaks in linear.py) the innermost frame of the
        traceback outside torch, as explain's break reasons do."""
        m = _AT.search(message)
        filename, lineno = (self._path(m.group(1)), int(m.group(2))) if m else (None, None)
        tdir = torch_dir()
        if filename and filename.startswith(tdir):
            tail = message.split("User code traceback:", 1)[-1]
            frames = [(self._path(f), int(n)) for f, n in _FRAME.findall(tail)]
            outside = [(f, n) for f, n in frames if f and not f.startswith(tdir)]
            if outside:
                self._torch_sites[(filename, lineno)] = outside[-1]
                return outside[-1]
            return self._torch_sites.get((filename, lineno), (filename, lineno))
        return filename, lineno

    def _parse_break(self, message: str) -> dict:
        filename, lineno = self._user_site(message)
        gb_id, gb_type = self._gb(message)
        reason = gb_type
        if reason is None:
            after = message.split("Graph Break Reason:", 1)[-1].strip().splitlines()
            reason = after[0].strip() if after else message.strip().splitlines()[0]
        entry = {"filename": filename, "lineno": lineno, "gb_id": gb_id, "gb_type": gb_type, "reason": reason,
                 "frame_skipped": SKIPPED_BREAK in message}
        if entry["frame_skipped"]:
            self._skip(None, filename, lineno, "a graph break Dynamo cannot resume after (inside a loop, a `with` "
                       "or a `try` block): the whole function ran eagerly")
        return entry

    def _parse_recompile(self, message: str) -> Optional[dict]:
        m = _RECOMPILING.search(message)
        if not m:
            return None
        guards: list[dict] = []
        for line in message.splitlines():
            g = _GUARD.match(line)
            if g:
                guards.append({"guard": g.group(2).split("  #", 1)[0].strip(), "filename": None, "lineno": None})
                continue
            f = _FILE_LINE.search(line)
            if f and guards and line.lstrip().startswith("-"):
                guards[-1]["filename"], guards[-1]["lineno"] = self._path(f.group(1)), int(f.group(2))
        return {"function": m.group(1), "filename": self._path(m.group(2)), "lineno": int(m.group(3)), "guards": guards}

    def _on_limit(self, message: str) -> None:
        limit = _LIMIT.search(message)
        where = _FUNCTION_AT.search(message)
        if not where:
            return
        what = f"hit the recompile limit ({limit.group(1)} = {limit.group(2)})" if limit else "hit a recompile limit"
        self._skip(where.group(1), where.group(2), int(where.group(3)),
                   f"{what}: later calls run this function eagerly")

    def _skip(self, function: Optional[str], filename: Optional[str], lineno: Optional[int], why: str) -> None:
        path = self._path(filename) if filename else None
        for skip in self.skips:
            if skip["filename"] == path and (skip["lineno"] == lineno or skip["function"] == function):
                skip["function"] = skip["function"] or function
                return
        self.skips.append({"function": function, "filename": path, "lineno": lineno, "why": why})

    def as_json(self) -> dict:
        seen: dict[tuple, dict] = {}
        breaks = []
        for b in self.breaks:
            key = (b["filename"], b["lineno"], b["gb_id"] or b["reason"])
            if key in seen:  # the same break logged again (restarted analysis, a later call)
                seen[key]["frame_skipped"] = seen[key]["frame_skipped"] or b["frame_skipped"]
                continue
            seen[key] = dict(b)
            breaks.append(seen[key])
        return {"logged_breaks": breaks, "frame_skips": self.skips, "recompile_events": self.recompiles,
                "traced_lines": {f: sorted(lines) for f, lines in self.traced.items()} if self.trace else None}


def annotate_breaks(reasons: list[dict], logged: list[dict]) -> list[dict]:
    """explain's break reasons with the GB code the log gave the break at the same place."""
    by_place: dict[tuple, dict] = {}
    for b in logged:
        by_place.setdefault((b["filename"], b["lineno"]), b)
    for r in reasons:
        match = by_place.get((r["filename"], r["lineno"]))
        r["gb_id"] = match["gb_id"] if match else None
        r["gb_type"] = match["gb_type"] if match else None
    return reasons


def explain(fn: Callable, args: tuple, kwargs: dict, seed: int, dynamic: Optional[bool],
            files: Optional[list[str]] = None) -> dict:
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    seed_everything(seed)
    with dynamic_shapes(dynamic), DynamoLog(trace=True, files=files) as log:
        out = torch._dynamo.explain(fn)(*args, **kwargs)
    logged = log.as_json()
    reasons = annotate_breaks(break_reasons(out, torch_dir()), logged["logged_breaks"])
    located = sum(1 for r in reasons if r["filename"])
    return {
        "graph_count": out.graph_count,
        "graph_break_count": out.graph_break_count,
        "break_reasons": reasons,
        # Breaks Dynamo counted but gave no place for (explain's list is short, or has no user frame).
        "unexplained_breaks": max(0, out.graph_break_count - located),
        **logged,
    }


def count_recompiles(fn: Callable, first: tuple, second: tuple, seed: int, dynamic: Optional[bool]) -> dict:
    """Graphs Dynamo compiles for a second call with other shapes (0: the first graphs were reused),
    with the guard failures that caused them."""
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
    with DynamoLog(trace=False) as log:
        compiled(*second[0], **second[1])
    torch._dynamo.reset()
    logged = log.as_json()
    return {"recompiles": counter.frame_count - after_first, "recompile_reasons": logged["recompile_events"],
            "recompile_skips": logged["frame_skips"]}


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
    """Median milliseconds of `repeat` calls after `warmup` (one version alone: see `time_arms`)."""
    result = time_arms({"only": fn}, args, kwargs, device, rounds=repeat, warmup=warmup)
    return result["arms"]["only"]["median_ms"]


# A block of calls lasts at least this long, so timer resolution and per-call jitter average out.
MIN_BLOCK_MS = {"cpu": 10.0, "cuda": 2.0}
MIN_ROUNDS = 10


def _time_block(fn: Callable, args: tuple, kwargs: dict, device: str, calls: int) -> tuple[float, Optional[float]]:
    """-> (ms per call, host ms per call or None). CUDA: events around the block, and the host
    time to issue it (how long Python and the launches took before the GPU was waited for)."""
    import torch

    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args, **kwargs)
        host = (time.perf_counter() - t0) * 1000.0
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / calls, host / calls
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args, **kwargs)
    return (time.perf_counter() - t0) * 1000.0 / calls, None


def kernel_ms_per_call(fn: Callable, args: tuple, kwargs: dict, calls: int) -> Optional[float]:
    """GPU kernel time per call (the union of kernel intervals), from a profiled block run after
    timing: the timed rounds never run under the profiler. None where the profiler gives nothing."""
    import torch

    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn(*args, **kwargs)
            torch.cuda.synchronize()
        spans = sorted((e.time_range.start, e.time_range.end) for e in prof.events()
                       if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start)
    except Exception:  # an old or CUPTI-less build: no busy fraction, only the size test
        return None
    if not spans:
        return None
    busy_us, (lo, hi) = 0.0, spans[0]
    for start, end in spans[1:]:  # streams overlap: count each instant once
        if start > hi:
            busy_us, lo, hi = busy_us + (hi - lo), start, end
        else:
            hi = max(hi, end)
    return (busy_us + (hi - lo)) / 1000.0 / calls


def time_arms(arms: dict[str, Callable], args: tuple, kwargs: dict, device: str, rounds: int = 30, warmup: int = 3,
              max_seconds: float = 60.0, seed: int = 0) -> dict:
    """Time several versions of one computation interleaved: each round runs one block of calls
    of every version, in an order rotated round by round (A B, B A, ...).

    -> {"rounds", "calls_per_round", "samples": {name: [ms per call per round]}, "arms": {name:
    summary}, "host": {name: host ms per call} and "kernel": {name: GPU kernel ms per call} (CUDA),
    "load": [before, after]}."""
    from dynalint.verify import stats

    load_before = stats.machine_load()
    names = list(arms)
    for name in names:
        for _ in range(max(warmup, 1)):
            arms[name](*args, **kwargs)
    _sync(device)
    # Calls per block from the slowest-to-time (fastest) version: every version gets the same count.
    probe = min(_time_block(arms[n], args, kwargs, device, 1)[0] for n in names)
    calls = max(1, min(10_000, math.ceil(MIN_BLOCK_MS.get(device, 10.0) / max(probe, 1e-6))))
    samples: dict[str, list[float]] = {n: [] for n in names}
    host: dict[str, list[float]] = {n: [] for n in names}
    t_start = time.perf_counter()
    done = 0
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            ms, host_ms = _time_block(arms[name], args, kwargs, device, calls)
            samples[name].append(ms)
            if host_ms is not None:
                host[name].append(host_ms)
        done += 1
        if done >= MIN_ROUNDS and time.perf_counter() - t_start > max_seconds:
            break
    result = {
        "rounds": done, "calls_per_round": calls, "samples": samples,
        "arms": {n: stats.summary(samples[n]) for n in names},
        "load": [load_before, stats.machine_load()],
    }
    if device == "cuda":
        result["host"] = {n: stats.median(host[n]) for n in names}
        result["kernel"] = {n: kernel_ms_per_call(arms[n], args, kwargs, calls) for n in names}
    return result


def _clear_compile_caches() -> None:
    """Forget compiled code held in memory, so the second version compiles as cold as the first."""
    try:
        from torch._inductor import codecache
    except ImportError:
        return
    for name in ("PyCodeCache", "CppCodeCache", "CppPythonBindingsCodeCache", "CppWrapperCodeCache"):
        clear = getattr(getattr(codecache, name, None), "cache_clear", None)
        if clear is not None:
            try:
                clear()
            except Exception:  # a cache that cannot be cleared only makes the second compile warmer
                pass


def warm_compiler(device: str, backend: str) -> None:
    """Compile a tiny function first: the compiler's imports and worker start-up are not charged to
    the first version timed."""
    import torch
    import torch._dynamo

    x = torch.randn(8, 8, device=device)
    torch.compile(lambda t: torch.relu(t) * 2 + 1, backend=backend)(x)
    _sync(device)
    torch._dynamo.reset()


def compile_first_call(fn: Callable, args: tuple, kwargs: dict, device: str, backend: str,
                       dynamic: Optional[bool]) -> tuple[Callable, float]:
    """torch.compile(fn) and its first (compiling) call, synchronized: -> (compiled, seconds)."""
    import torch

    _clear_compile_caches()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    _sync(device)
    t0 = time.perf_counter()
    compiled(*args, **kwargs)
    _sync(device)
    return compiled, time.perf_counter() - t0


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

"""Timing statistics for verify (pure Python: no torch, testable anywhere).

Both versions are timed in one process, interleaved round by round (A B, B A, A B, ...), so a
slow drift of the machine (another job starting, clocks throttling) hits both alike. Each round
gives one time per version and one paired ratio; the speedup is the median of the ratios, with a
bootstrap 95% interval over rounds (fixed seed: the same samples give the same interval).

Verdict (from the interval, never from the median alone):
- "faster"  the whole interval of before/after is above 1 + MIN_EFFECT
- "slower"  the whole interval is below 1 / (1 + MIN_EFFECT)
- "no measurable difference" otherwise (the interval reaches into the +-MIN_EFFECT band)
- "cannot measure" when the rounds are too noisy to say anything, or too few (see `noisy`)
"""

from __future__ import annotations

import math
import os
import random
from typing import Optional, Sequence

# A difference under 2% is not called a difference: identical modules differ by about that
# (code placement, allocator state) even on a quiet machine.
MIN_EFFECT = 0.02
# Noise limits: relative IQR of one version's rounds, relative width of the ratio's interval.
MAX_REL_IQR = 0.5
MAX_REL_CI = 0.3
# On a loaded machine bursts of other work hit runs of rounds together (the bootstrap assumes
# independent rounds): only a narrow interval is trusted there.
MAX_REL_CI_LOADED = 0.1
BOOTSTRAP = 2000
# Fewer paired rounds than this give no interval worth a verdict (one round: an interval of width 0).
MIN_VERDICT_ROUNDS = 5
# Launch-bound on a GPU: the GPU ran kernels for less than this fraction of a call's time (it
# waited for Python and launches; read from a profiled pass after timing), or a call takes less
# than LAUNCH_BOUND_US. The host's issue time is no test: a model that syncs (`.item()`, a graph
# break that reads a tensor) waits for the GPU inside the host time.
LAUNCH_BOUND_BUSY_FRACTION = 0.5
LAUNCH_BOUND_US = 50.0

FASTER, SLOWER, SAME, CANNOT = "faster", "slower", "no measurable difference", "cannot measure"


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default), q in [0, 1]."""
    xs = sorted(values)
    if not xs:
        raise ValueError("quantile of no values")
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def summary(values: Sequence[float]) -> dict:
    """Median, quartiles and IQR/median of per-call times (ms)."""
    med, q1, q3 = median(values), quantile(values, 0.25), quantile(values, 0.75)
    return {"median_ms": med, "q1_ms": q1, "q3_ms": q3, "rel_iqr": (q3 - q1) / med if med > 0 else None,
            "min_ms": min(values), "n": len(values)}


def bootstrap_ci(values: Sequence[float], seed: int = 0, n: int = BOOTSTRAP, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the median."""
    rng = random.Random(seed)
    k = len(values)
    meds = sorted(median([values[rng.randrange(k)] for _ in range(k)]) for _ in range(n))
    tail = (1 - level) / 2
    return quantile(meds, tail), quantile(meds, 1 - tail)


def verdict(ci: tuple[float, float]) -> str:
    lo, hi = ci
    if lo > 1 + MIN_EFFECT:
        return FASTER
    if hi < 1 / (1 + MIN_EFFECT):
        return SLOWER
    return SAME


def noisy(arms: dict[str, dict], ratio: Optional[dict], is_loaded: bool = False) -> list[str]:
    """Why the rounds are too noisy to trust (empty: they are not)."""
    max_ci = MAX_REL_CI_LOADED if is_loaded else MAX_REL_CI
    why = []
    for name, s in arms.items():
        if s.get("rel_iqr") is not None and s["rel_iqr"] > MAX_REL_IQR:
            why.append(f"{name}: the middle half of the rounds spans {s['rel_iqr']:.0%} of the median")
    if ratio and ratio.get("rounds") is not None and ratio["rounds"] < MIN_VERDICT_ROUNDS:
        why.append(f"{ratio['rounds']} round{'s' if ratio['rounds'] != 1 else ''} (a verdict needs at least "
                   f"{MIN_VERDICT_ROUNDS}: raise --repeat)")
    if ratio and ratio["speedup"] > 0:
        width = (ratio["ci"][1] - ratio["ci"][0]) / ratio["speedup"]
        if width > max_ci:
            why.append(f"the speedup's 95% interval is {width:.0%} of its value wide")
    return why


def compare(before: Sequence[float], after: Sequence[float], seed: int = 0) -> dict:
    """Paired rounds of two versions -> speedup (before/after) median, interval and verdict."""
    ratios = [b / a for b, a in zip(before, after) if a > 0]
    if not ratios:
        return {"speedup": None, "ci": None, "verdict": CANNOT}
    ci = bootstrap_ci(ratios, seed)
    return {"speedup": median(ratios), "ci": [ci[0], ci[1]], "verdict": verdict(ci), "rounds": len(ratios)}


def interval_text(speedup: float, ci: Sequence[float]) -> str:
    """`1.26x (95% interval 1.22-1.30)`."""
    return f"{speedup:.2f}x (95% interval {ci[0]:.2f}-{ci[1]:.2f})"


def slower_text(speedup: Optional[float], ci: Optional[Sequence[float]], before: Optional[dict],
                after: Optional[dict]) -> str:
    """`slower: 0.55x (95% interval 0.53-0.57); compiled median 1.80 ms after, 0.99 ms before;
    spread (IQR) 1.78-1.83 ms after, 0.98-1.00 ms before`: a "slower" verdict said plainly."""
    text = "slower" + (f": {speedup:.2f}x" if speedup is not None else "")
    if ci:
        text += f" (95% interval {ci[0]:.2f}-{ci[1]:.2f})"
    if before and after:
        text += (f"; compiled median {after['median_ms']:.3g} ms after, {before['median_ms']:.3g} ms before; "
                 f"spread (IQR) {after['q1_ms']:.3g}-{after['q3_ms']:.3g} ms after, "
                 f"{before['q1_ms']:.3g}-{before['q3_ms']:.3g} ms before")
    return text


def machine_load() -> Optional[dict]:
    """1-minute load average against the CPUs this process may use (None where unknown)."""
    try:
        load1 = os.getloadavg()[0]
    except (OSError, AttributeError):
        return None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return {"load1": round(load1, 2), "cpus": cpus}


def loaded(load: Optional[dict], own_threads: int = 1) -> bool:
    """More runnable work than CPUs: other processes compete with the timed one.

    The load average counts this process too (its earlier work and its own threads), so the
    bar is the CPU count plus what we ourselves run, less one."""
    return bool(load) and load["load1"] > load["cpus"] + max(0, own_threads - 1)


def launch_bound(gpu_ms: float, kernel_ms: Optional[float]) -> bool:
    """The GPU idles most of a call waiting for the host (or the call is tiny).

    `kernel_ms`: the GPU's kernel time per call (None: not measured, only the size test applies)."""
    if gpu_ms * 1000.0 < LAUNCH_BOUND_US:
        return True
    return kernel_ms is not None and gpu_ms > 0 and kernel_ms / gpu_ms < LAUNCH_BOUND_BUSY_FRACTION


def assess(timing: dict) -> dict:
    """Warnings and the verdict for a child's timing dict (`arms`, `compare`, `load`, `kernel_ms`).

    -> {"warnings": [...], "verdict": ...}: loaded machine, launch-bound GPU, noisy rounds."""
    warnings, device = [], timing.get("device")
    threads = int(timing.get("threads") or 1)
    loads = [entry for entry in timing.get("load") or () if entry]
    worst = max(loads, key=lambda entry: entry["load1"]) if loads else None
    is_loaded = loaded(worst, threads if device != "cuda" else 1)
    if is_loaded:
        warnings.append(f"machine loaded: load average {worst['load1']:g} on {worst['cpus']} CPUs while timing "
                        f"({threads} thread{'s' if threads != 1 else ''}): absolute times are inflated; the ratio comes from interleaved rounds")
    if timing.get("threads_note"):
        warnings.append(timing["threads_note"])
    compiled = {n: s for n, s in (timing.get("arms") or {}).items() if n != "eager"}
    all_bound = False
    if device == "cuda":
        kernel = timing.get("kernel_ms") or {}
        bound = [n for n, s in compiled.items() if launch_bound(s["median_ms"], kernel.get(n))]
        if bound:
            worst = min(bound, key=lambda n: (kernel.get(n) or 0.0) / compiled[n]["median_ms"])
            busy = kernel.get(worst)
            busy_text = f", the GPU busy {busy / compiled[worst]['median_ms']:.0%} of it" if busy is not None else ""
            warnings.append(f"launch-bound: {compiled[worst]['median_ms'] * 1000.0:.0f} us per call ({worst}){busy_text}; "
                            "the time goes to Python and kernel launches, not kernels: time a realistic size "
                            "(--input-shape, --arg)")
            # Every version launch-bound: the ratio measures launch overhead of a toy, not the model.
            all_bound = len(bound) == len(compiled)
    compare_ = timing.get("compare")
    why = noisy(compiled, compare_, is_loaded)
    verdict_ = compare_["verdict"] if compare_ else None
    if all_bound and compare_:
        verdict_ = CANNOT
    if why:
        warnings.append("too noisy to measure: " + "; ".join(why) + (" (the machine is loaded)" if is_loaded else ""))
        if compare_:
            verdict_ = CANNOT
    return {"warnings": warnings, "verdict": verdict_}

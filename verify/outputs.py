"""Are the fixed code's outputs the original's? "equal", "equal within rounding" or "differ".

`torch.testing.assert_close` (the dtype's default tolerances) decides "equal". Where it fails,
the difference may still be only rounding: a fix that computes the same math in another order
(every expert on every token and a masked sum instead of a gather and `index_add`, one matmul
split in two) rounds differently, and on a GPU other GEMM shapes pick other kernels (measured on
an H100: 2e-05 and 4e-04 between the original and the fixed Switch Transformers, both float32,
where CPU runs differ by 7e-07). Tolerances are never widened: the original and the fixed code
run again in float64 on the same weights and inputs (`.double()`, float64 as the default dtype),
and the difference is rounding only when all three hold, output by output:

1. It vanishes with precision: the float64 runs of the original and of the fixed code differ by
   at most SHRINK times the float32 difference. Float64 rounds about 5e8 times finer than float32,
   so a rounding difference shrinks by about that much (measured on CPU: 7e-11 against 7e-03 for a
   split or elementwise matmul); a real difference (a dropped term, a wrong sign, a factor) is
   the same in float64.
2. The float64 run of the original is ground truth for its float32 run: they differ by at most
   TRUST of the outputs' scale (not so where forward draws random numbers, whose float64 draws
   are other numbers, or where rounding flipped a discrete choice such as an argmax routing).
3. The fixed code is as accurate as the original: its float32 error against that truth is at
   most ERROR_FACTOR times the original's own (at least one unit of float32 rounding at the
   outputs' scale). A fix that is the same math but loses precision in float32 (cancellation,
   an overflow float64 does not see) fails here. Measured on CPU: the fixed code's error was
   0.3x-1.0x the original's for reordered matmuls and a dense expert sum.

Integer and boolean outputs, shapes and output counts must be equal. Where no float64 run can be
made (the module or its inputs refuse `.double()`, the original code is not at hand), the
outputs differ, with the reason.

Torch is imported only inside the functions that need it; the text helpers need none.
"""

from __future__ import annotations

import contextlib
from typing import Any, Optional

EQUAL, WITHIN_ROUNDING, DIFFER = "equal", "within rounding", "differ"
SHRINK = 1e-3
TRUST = 1e-3
ERROR_FACTOR = 4.0


def _max_abs(a, b) -> float:
    """Largest |a - b| in float64; NaN where both are NaN counts as equal, elsewhere as infinite."""
    if not a.numel():
        return 0.0
    diff = (a.double() - b.double()).abs()
    if a.is_floating_point() or a.is_complex():
        diff = diff.masked_fill(a.isnan() & b.isnan(), 0.0)
    return float(diff.nan_to_num(nan=float("inf")).max())


def _scale(t) -> float:
    finite = t.double().abs()
    finite = finite[finite.isfinite()]
    return float(finite.max()) if finite.numel() else 0.0


def _leaf_close(got, ref) -> bool:
    import torch

    try:
        torch.testing.assert_close(got, ref, equal_nan=True)
    except AssertionError:
        return False
    return True


def judge(reference: list, actual: list, truth: list, actual64: list) -> dict:
    """The outputs of the original (`reference`) and the fixed code (`actual`), as computed, against
    float64 runs of both (`truth`: the original's, `actual64`: the fixed code's), leaf by leaf.

    -> {"status": EQUAL | WITHIN_ROUNDING | DIFFER, "max_abs_diff", "float64_diff",
        "original_error", "fixed_error", "dtype", "why"} (errors: the worst over the leaves
    assert_close rejects; "why": the reason for DIFFER)."""
    if not (len(reference) == len(actual) == len(truth) == len(actual64)):
        return _differ(None, f"{len(reference)} output tensors before, {len(actual)} after, "
                             f"{len(truth)} and {len(actual64)} in float64")
    worst = {"max_abs_diff": 0.0, "float64_diff": 0.0, "original_error": 0.0, "fixed_error": 0.0}
    dtypes: list[str] = []
    judged = 0
    for i, leaves in enumerate(zip(reference, actual, truth, actual64)):
        ref, got, t64, g64 = (t.detach().cpu() for t in leaves)
        if ref.shape != got.shape:
            return _differ(None, f"output {i}: shape {list(ref.shape)} before, {list(got.shape)} after")
        diff32 = _max_abs(got, ref)
        worst["max_abs_diff"] = max(worst["max_abs_diff"], diff32)
        if _leaf_close(got, ref):
            continue
        dtype = str(ref.dtype).replace("torch.", "")
        if not ref.is_floating_point():
            return _differ(diff32, f"output {i}: {dtype} values differ (max abs diff {diff32:.3g})")
        if t64.dtype != _float64() or g64.dtype != _float64() or t64.shape != ref.shape or g64.shape != ref.shape:
            return _differ(diff32, f"output {i} is {str(t64.dtype).replace('torch.', '')} in the float64 run "
                                   "(the code keeps it in lower precision): no float64 ground truth")
        judged += 1
        dtypes.append(dtype)
        diff64, scale = _max_abs(g64, t64), _scale(t64)
        unit = _eps(ref.dtype) * scale
        own, err = _max_abs(ref, t64), _max_abs(got, t64)
        worst.update(float64_diff=max(worst["float64_diff"], diff64), original_error=max(worst["original_error"], own),
                     fixed_error=max(worst["fixed_error"], err))
        if not diff64 <= SHRINK * max(diff32, unit):
            return _differ(diff32, f"output {i}: the difference does not vanish in float64 ({diff32:.3g} in {dtype}, "
                                   f"{diff64:.3g} in float64): the fixed code computes something else", worst)
        if not own <= TRUST * scale:
            return _differ(diff32, f"output {i}: the original's float64 run differs from its {dtype} run by {own:.3g} "
                                   f"(over {TRUST:.1%} of the outputs' scale {scale:.3g}): no float64 ground truth "
                                   "(random numbers drawn in forward, or a discrete choice such as top-k routing "
                                   "that rounding flipped?)", worst)
        if not err <= ERROR_FACTOR * max(own, unit):
            return _differ(diff32, f"output {i}: the fixed code's {dtype} error {err:.3g} against float64 is over "
                                   f"{ERROR_FACTOR:g}x the original's own {own:.3g}: it loses precision", worst)
    status = WITHIN_ROUNDING if judged else EQUAL
    return {"status": status, **worst, "dtype": "/".join(dict.fromkeys(dtypes)) or None, "why": None}


def _float64():
    import torch

    return torch.float64


def _eps(dtype) -> float:
    import torch

    return float(torch.finfo(dtype).eps)


def _differ(diff: Optional[float], why: str, worst: Optional[dict] = None) -> dict:
    out = {"status": DIFFER, "max_abs_diff": diff, "float64_diff": None, "original_error": None,
           "fixed_error": None, "dtype": None, "why": why}
    if worst:
        out.update({k: v for k, v in worst.items() if k != "max_abs_diff"})
    return out


# --------------------------------------------------------------------------------------------
# Float64 runs


def to_double(value: Any) -> Any:
    """Floating-point tensors of an input structure (tuples, lists, dicts) as float64."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.double() if value.is_floating_point() else value
    if isinstance(value, dict):
        return {k: to_double(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(to_double(v) for v in value)
    return value


@contextlib.contextmanager
def default_float64():
    """Tensors made in forward without a dtype (torch.zeros, torch.randn) are float64 too."""
    import torch

    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


def run_double(fn, args: tuple, kwargs: dict, seed: int) -> list:
    """One call of `fn` (a module: converted in place with `.double()`; give it a copy) in float64,
    the seed reset first. -> the output leaves, on the CPU."""
    import torch

    from dynalint.verify import measuring as M

    if isinstance(fn, torch.nn.Module):
        fn = fn.double()
    with default_float64():
        M.seed_everything(seed)
        out = fn(*to_double(args), **to_double(kwargs))
    return [t.detach().cpu() for t in M.flatten(out)]


# --------------------------------------------------------------------------------------------
# Text (no torch)


def status_of(result: dict) -> str:
    """EQUAL, WITHIN_ROUNDING or DIFFER from a child's or a report's output keys."""
    if result.get("outputs_status"):
        return result["outputs_status"]
    return EQUAL if result.get("outputs_match") else DIFFER


def describe(result: dict, capital: bool = False) -> str:
    """`outputs match (max abs diff 0)`, `outputs equal within float32 rounding (max diff 2e-05;
    the original's own error 3e-05)` or `outputs differ (max abs diff 0.5): why`."""
    status = status_of(result)
    diff = result.get("max_abs_diff")
    diff_text = "n/a" if diff is None else f"{diff:.3g}"
    judged = result.get("outputs_judgement") or {}
    if status == WITHIN_ROUNDING:
        own = judged.get("original_error")
        text = (f"outputs equal within {judged.get('dtype') or 'float32'} rounding (max diff {diff_text}; "
                f"the original's own error {own:.3g} against float64)" if own is not None else
                f"outputs equal within rounding (max diff {diff_text})")
    elif status == EQUAL:
        text = f"outputs match (max abs diff {diff_text})"
    else:
        why = judged.get("why") or result.get("outputs_mismatch") or ""
        text = f"outputs {'DIFFER' if capital else 'differ'} (max abs diff {diff_text})" + (f": {why}" if why else "")
    return text[0].upper() + text[1:] if capital else text

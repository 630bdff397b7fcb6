"""verify's timing statistics (pure Python): interval, verdict, noise, load and launch-bound checks."""

from __future__ import annotations

import random

from dynalint.verify import stats


def _rounds(center: float, spread: float, n: int = 40, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_verdicts_come_from_the_interval():
    same = stats.compare(_rounds(1.0, 0.01), _rounds(1.0, 0.01, seed=2))
    assert same["verdict"] == stats.SAME and same["ci"][0] <= 1 <= same["ci"][1]
    faster = stats.compare(_rounds(2.0, 0.01), _rounds(1.0, 0.01, seed=2))
    assert faster["verdict"] == stats.FASTER and 1.9 < faster["speedup"] < 2.1
    slower = stats.compare(_rounds(1.0, 0.01), _rounds(1.5, 0.01, seed=2))
    assert slower["verdict"] == stats.SLOWER
    # A 1% difference, however tight, is inside the 2% band: not called a difference.
    assert stats.compare([1.01] * 30, [1.0] * 30)["verdict"] == stats.SAME


def test_bootstrap_is_repeatable_and_quantiles_interpolate():
    xs = _rounds(1.0, 0.2)
    assert stats.bootstrap_ci(xs, seed=3) == stats.bootstrap_ci(xs, seed=3)
    assert stats.quantile([1, 2, 3, 4], 0.5) == 2.5 and stats.median([3, 1, 2]) == 2


def _timing(before, after, load1=0.1, cpus=2, device="cpu", kernel=None):
    timing = {"device": device, "threads": 1, "load": [{"load1": load1, "cpus": cpus}],
              "arms": {"before": stats.summary(before), "after": stats.summary(after)},
              "compare": stats.compare(before, after)}
    if kernel is not None:
        timing["kernel_ms"] = kernel
    return timing


def test_loaded_machine_warns_and_noise_means_cannot_measure():
    quiet = stats.assess(_timing(_rounds(2.0, 0.01), _rounds(1.0, 0.01, seed=2)))
    assert quiet == {"warnings": [], "verdict": stats.FASTER}
    loaded = stats.assess(_timing(_rounds(2.0, 0.01), _rounds(1.0, 0.01, seed=2), load1=8.5))
    assert loaded["verdict"] == stats.FASTER and loaded["warnings"][0].startswith("machine loaded: load average 8.5")
    # Wide rounds on a loaded machine: no number, a warning.
    noisy = stats.assess(_timing(_rounds(2.0, 0.9), _rounds(1.0, 0.9, seed=2), load1=8.5))
    assert noisy["verdict"] == stats.CANNOT and any(w.startswith("too noisy") for w in noisy["warnings"])


def test_launch_bound_gpu_calls_are_flagged():
    # Tiny calls: a warning and no number.
    tiny = stats.assess(_timing(_rounds(0.03, 0.01), _rounds(0.02, 0.01, seed=2), device="cuda"))
    assert any(w.startswith("launch-bound") for w in tiny["warnings"]) and tiny["verdict"] == stats.CANNOT
    # Big enough calls with the GPU mostly idle in every version: a toy; no number either.
    idle = stats.assess(_timing(_rounds(2.0, 0.01), _rounds(1.0, 0.01, seed=2), device="cuda",
                                kernel={"before": 0.4, "after": 0.3}))
    assert any("GPU busy 20%" in w or "GPU busy 30%" in w for w in idle["warnings"]), idle
    assert idle["verdict"] == stats.CANNOT
    # Busy GPU: no warning, whatever the host time (a syncing model waits inside it).
    busy = stats.assess(_timing(_rounds(5.0, 0.01), _rounds(4.0, 0.01, seed=2), device="cuda",
                                kernel={"before": 4.6, "after": 3.8}))
    assert not any(w.startswith("launch-bound") for w in busy["warnings"]) and busy["verdict"] == stats.FASTER
    # The fix removed the idle time (before launch-bound, after busy): warned, the number kept.
    fixed = stats.assess(_timing(_rounds(5.0, 0.01), _rounds(2.0, 0.01, seed=2), device="cuda",
                                 kernel={"before": 1.9, "after": 1.9}))
    assert any("(before)" in w for w in fixed["warnings"]) and fixed["verdict"] == stats.FASTER
    assert stats.launch_bound(1.0, 0.3) and not stats.launch_bound(1.0, 0.9) and not stats.launch_bound(1.0, None)
    assert stats.launch_bound(0.01, None)


def test_a_slower_fix_is_said_plainly():
    from dynalint.verify.report import speedup_line

    before, after = _rounds(1.0, 0.01), _rounds(1.8, 0.01, seed=2)
    c = stats.compare(before, after)
    assert c["verdict"] == stats.SLOWER
    arms = {"before": stats.summary(before), "after": stats.summary(after)}
    line = speedup_line({"verdict": stats.SLOWER, "speedup": c["speedup"], "speedup_ci": c["ci"], "arms": arms})
    b, a = arms["before"], arms["after"]
    assert line == (f"The fixed code is SLOWER: {c['speedup']:.2f}x (95% interval {c['ci'][0]:.2f}-{c['ci'][1]:.2f}); "
                    f"compiled median {a['median_ms']:.3g} ms after, {b['median_ms']:.3g} ms before; spread (IQR) "
                    f"{a['q1_ms']:.3g}-{a['q3_ms']:.3g} ms after, {b['q1_ms']:.3g}-{b['q3_ms']:.3g} ms before.")
    assert line.startswith("The fixed code is SLOWER: 0.5")
    faster = stats.compare(after, before)
    assert speedup_line({"verdict": faster["verdict"], "speedup": faster["speedup"], "speedup_ci": faster["ci"]}) \
        .startswith("Speedup of the fixes: 1.")


def test_too_few_rounds_give_no_verdict():
    # One round makes an interval of width 0: "slower" from it would be a coin toss (migrate reverts on it).
    one = stats.assess(_timing([1.0], [1.5]))
    assert one["verdict"] == stats.CANNOT and any("1 round (a verdict needs at least 5" in w for w in one["warnings"])
    five = stats.assess(_timing(_rounds(1.0, 0.01, n=5), _rounds(1.5, 0.01, n=5, seed=2)))
    assert five["verdict"] == stats.SLOWER

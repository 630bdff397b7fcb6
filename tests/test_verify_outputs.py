"""verify's output judgement: "equal", "equal within rounding" (assert_close rejects, float64 runs
show only rounding) or "differ". Rewrites of a small mixture of experts (tests/fixtures/verify/
experts.py) that reorder float reductions must be judged rounding; wrong rewrites, even 1e-4 off,
must still differ; so must a rewrite that is the same math but loses float32 precision."""

from __future__ import annotations

import copy
import json
import os
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynalint.verify import outputs as O
from dynalint.verify import runner
from dynalint.verify.command import verify as verify_cmd
from dynalint.verify.report import render

EXPERTS = Path(__file__).parent / "fixtures" / "verify" / "experts.py"
LINE = "out = out + probs[:, i : i + 1] * (x @ self.w[i])"

# The same math, float reductions in another order.
REORDERED = {
    "matmul split in four strided parts": (LINE, "out = out + probs[:, i : i + 1] * sum(x[:, j::4] @ self.w[i, j::4] for j in range(4))"),
    "matmul as a product and a sum": (LINE, "out = out + probs[:, i : i + 1] * (x.unsqueeze(-1) * self.w[i]).sum(1)"),
    "experts summed in reverse": ("for i in range(self.w.shape[0]):", "for i in reversed(range(self.w.shape[0])):"),
}
# Other math.
WRONG = {
    "a wrong sign": (LINE, "out = out + (1 - 2 * (i == 3)) * probs[:, i : i + 1] * (x @ self.w[i])"),
    "a dropped expert": (LINE, "out = out + probs[:, i : i + 1] * (x @ self.w[i]) * (i < 3)"),
    "one expert 1% off": (LINE, "out = out + probs[:, i : i + 1] * (x @ self.w[i]) * (0.99 if i == 3 else 1.0)"),
    "one expert 1e-4 off": (LINE, "out = out + probs[:, i : i + 1] * (x @ self.w[i]) * (1.0001 if i == 3 else 1.0)"),
}
# The same math, but float32 cancels (x + 1e4) @ w against 1e4 * w.sum(0).
PRECISION_LOSS = (LINE, "out = out + probs[:, i : i + 1] * ((x + 1e4) @ self.w[i] - 1e4 * self.w[i].sum(0))")


def variant(old: str, new: str) -> str:
    text = EXPERTS.read_text()
    assert old in text
    return text.replace(old, new)


def load(text: str):
    module = types.ModuleType("experts_variant")
    exec(compile(text, str(EXPERTS), "exec"), module.__dict__)
    return module


def judged(rewrite: tuple[str, str]) -> tuple[dict, bool]:
    """The judgement of a rewrite on the fixture's model and inputs, in this process, as the verify
    child makes it (float32 outputs, then float64 runs of copies). -> (judgement, assert_close passed)."""
    import torch

    original = load(EXPERTS.read_text())
    fixed = load(variant(*rewrite))
    torch.manual_seed(0)
    model, (x,) = original.make()
    model.eval()
    other = fixed.Experts()
    other.load_state_dict(model.state_dict())
    other.eval()
    with torch.no_grad():
        reference, actual = [model(x)], [other(x)]
        truth = O.run_double(copy.deepcopy(model), (x,), {}, 0)
        actual64 = O.run_double(copy.deepcopy(other), (x,), {}, 0)
    return O.judge(reference, actual, truth, actual64), O._leaf_close(actual[0], reference[0])


@pytest.mark.torch
@pytest.mark.parametrize("name", list(REORDERED))
def test_reordered_reductions_are_equal_within_float32_rounding(name):
    result, close = judged(REORDERED[name])
    assert not close  # assert_close's float32 defaults reject them: the case this judgement is for
    assert result["status"] == O.WITHIN_ROUNDING, result
    assert result["dtype"] == "float32" and result["why"] is None
    # Measured: about 5e-04 to 2e-03 apart in float32; under 1e-11 apart in float64.
    assert result["max_abs_diff"] > 1e-5 and result["float64_diff"] < 1e-3 * result["max_abs_diff"]
    assert result["fixed_error"] <= O.ERROR_FACTOR * result["original_error"]


@pytest.mark.torch
@pytest.mark.parametrize("name", list(WRONG))
def test_other_math_differs_however_small(name):
    result, close = judged(WRONG[name])
    assert not close
    assert result["status"] == O.DIFFER
    assert "does not vanish in float64" in result["why"] and "computes something else" in result["why"]


@pytest.mark.torch
def test_same_math_that_loses_float32_precision_differs():
    result, _ = judged(PRECISION_LOSS)
    assert result["status"] == O.DIFFER, result
    assert "loses precision" in result["why"]
    assert result["fixed_error"] > O.ERROR_FACTOR * result["original_error"]


@pytest.mark.torch
def test_no_ground_truth_where_float64_draws_other_random_numbers():
    """Noise drawn in forward: float64 draws other numbers, so float64 is no truth: differ."""
    rewrite = ("        return out\n", "        return out + 1e3 * torch.randn_like(out)\n")
    import torch

    noisy = load(variant(*rewrite))
    fixed = load(variant(*rewrite).replace(*REORDERED["matmul split in four strided parts"]))
    torch.manual_seed(0)
    model, (x,) = noisy.make()
    other = fixed.Experts()
    other.load_state_dict(model.state_dict())
    with torch.no_grad():
        torch.manual_seed(1)
        reference = [model(x)]
        torch.manual_seed(1)
        actual = [other(x)]
        truth = O.run_double(copy.deepcopy(model), (x,), {}, 1)
        actual64 = O.run_double(copy.deepcopy(other), (x,), {}, 1)
    result = O.judge(reference, actual, truth, actual64)
    assert result["status"] == O.DIFFER and "no float64 ground truth" in result["why"], result


@pytest.mark.torch
def test_integer_outputs_shapes_and_lower_precision_leaves_are_never_rounding():
    import torch

    a = torch.arange(6)
    assert O.judge([a], [a + 1], [a], [a + 1])["why"] == "output 0: int64 values differ (max abs diff 1)"
    f = torch.ones(2, 3)
    assert "shape [2, 3] before, [3, 2] after" in O.judge([f], [f.T], [f.double()], [f.T.double()])["why"]
    # A leaf the float64 run left in float32 (the code casts it) has no float64 truth.
    g = f + 1e-3
    assert "no float64 ground truth" in O.judge([f], [g], [f], [g])["why"]
    # Equal leaves are equal, whatever the float64 runs say.
    assert O.judge([f], [f.clone()], [f.double()], [f.double()])["status"] == O.EQUAL


def test_the_status_in_words():
    equal = {"outputs_match": True, "max_abs_diff": 0.0}
    assert O.describe(equal, capital=True) == "Outputs match (max abs diff 0)"
    rounding = {"outputs_match": True, "outputs_status": O.WITHIN_ROUNDING, "max_abs_diff": 2e-5,
                "outputs_judgement": {"status": O.WITHIN_ROUNDING, "original_error": 3e-5, "dtype": "float32"}}
    assert O.describe(rounding) == ("outputs equal within float32 rounding (max diff 2e-05; the original's own "
                                    "error 3e-05 against float64)")
    differ = {"outputs_match": False, "outputs_status": O.DIFFER, "max_abs_diff": 0.5,
              "outputs_judgement": {"status": O.DIFFER, "why": "output 0: the difference does not vanish in float64"}}
    assert O.describe(differ, capital=True) == ("Outputs DIFFER (max abs diff 0.5): output 0: the difference does "
                                                "not vanish in float64")
    # Results from before this judgement existed: outputs_match alone.
    assert O.status_of({"outputs_match": False}) == O.DIFFER


@pytest.mark.torch
def test_verify_reports_rounding_as_equal_and_wrong_rewrites_as_different(monkeypatch):
    """The whole path: the verify child judges in float64, the report says which, the exit code follows."""
    path = os.path.realpath(EXPERTS)
    for rewrite, status, code in ((REORDERED["matmul split in four strided parts"], O.WITHIN_ROUNDING, 0),
                                  (WRONG["one expert 1e-4 off"], O.DIFFER, 1)):
        text = variant(*rewrite)
        monkeypatch.setattr(runner, "fix_in_memory", lambda linted, config, unsafe, text=text: ({path: text}, [], [], []))
        result = CliRunner().invoke(verify_cmd, [f"{path}::make", "--no-timing", "--output-format", "json"],
                                    catch_exceptions=False)
        assert result.exit_code == code, result.output
        report = json.loads(result.output)
        assert report["outputs_status"] == status and report["outputs_judgement"]["status"] == status
        line = next(x for x in render(report, "text").splitlines() if x.startswith("Outputs"))
        if status == O.WITHIN_ROUNDING:
            assert report["outputs_match"] is True
            assert line.startswith("Outputs equal within float32 rounding (max diff ")
            assert "the original's own error " in line
        else:
            assert report["outputs_match"] is False and report["fixes_verified"] == 0
            assert line.startswith("Outputs DIFFER (max abs diff ") and "does not vanish in float64" in line

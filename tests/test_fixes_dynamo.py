"""Fixed code, run through Dynamo: no graph breaks left, and the same outputs for the same seed."""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from pathlib import Path

import numpy
import pytest

from dynalint.autofix import fix_source
from dynalint.config import Config
from dynalint.lint.rule import BREAKS, CLEAN, Example
from dynalint.lint.rules import all_rules, rule_by_code

from .probes import load_example, run_probe, target_of
from .samples import range_observer

ALL = Config(select=("ALL",))
FIXTURES = Path(__file__).parent / "fixtures" / "fixes"
VERIFY_FIXTURES = FIXTURES.parent / "verify"  # models the verify tests use as well


def _import_text(text: str, tmp_path: Path):
    name = f"fixed_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _build(mod, cls: str, seed: int = 0):
    import torch

    torch.manual_seed(seed)
    return getattr(mod, cls)()


@pytest.mark.torch
@pytest.mark.parametrize(
    "fixture,cls",
    [
        (VERIFY_FIXTURES / "bad_if.py", "BadIf"),
        (VERIFY_FIXTURES / "log_inside_forward.py", "LogInsideForward"),
        (FIXTURES / "print_in_forward.py", "PrintInForward"),
        (FIXTURES / "scalars_and_masks.py", "ScalarsAndMasks"),
        (FIXTURES / "shared_call_if.py", "SharedCallIf"),
        (FIXTURES / "cond_branches.py", "CondBranches"),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else v,
)
def test_fixed_module_compiles_to_one_graph_with_same_outputs(fixture, cls, tmp_path, monkeypatch):
    import pdb

    import torch
    import torch._dynamo

    monkeypatch.setattr(pdb, "set_trace", lambda *a, **k: None)  # the original still calls it
    source = fixture.read_text()
    result = fix_source(source, fixture.name, ALL, unsafe=True)
    assert result.fixed and not result.remaining and not result.errors, result.remaining

    original = _build(_import_text(source, tmp_path), cls)
    fixed = _build(_import_text(result.text, tmp_path), cls)
    def same_draws(model, x, seed):  # the same random numbers for dropout and torch.rand
        torch.manual_seed(seed)
        return model(x)

    for seed in range(1, 9):  # both signs of each fixture's conditions come up
        torch.manual_seed(seed)
        x = torch.randn(4, 16)
        torch.testing.assert_close(same_draws(fixed, x, seed), same_draws(original, x, seed))

    torch._dynamo.reset()
    before = torch._dynamo.explain(original)(x)
    assert before.break_reasons or fixture == "scalars_and_masks.py"  # pdb is on Dynamo's skip list
    torch._dynamo.reset()
    after = torch._dynamo.explain(fixed)(x)
    assert after.graph_count == 1 and after.graph_break_count == 0 and not after.break_reasons, after.break_reasons
    torch._dynamo.reset()
    torch.testing.assert_close(same_draws(torch.compile(fixed, backend="eager"), x, 0), same_draws(original, x, 0))


def _fully_fixed_examples():
    for rule in all_rules():
        for i, ex in enumerate(rule.invalid):
            if ex.dynamo != BREAKS:
                continue
            result = fix_source(ex.source, "example.py", ALL, unsafe=True)
            if result.fixed and not result.remaining:
                yield pytest.param(ex, result.text, id=f"{rule.code}-{i}")


@pytest.mark.torch
@pytest.mark.parametrize("example,fixed_text", list(_fully_fixed_examples()))
def test_fixed_rule_examples_no_longer_break_and_compute_the_same(example, fixed_text):
    import torch

    os.environ.setdefault("PYTHONBREAKPOINT", "0")
    fixed_example = Example(fixed_text, dynamo=CLEAN, inputs=example.inputs)
    result = run_probe(fixed_example)
    if example.fixed_graphs == 1:
        assert result["graph_count"] == 1 and not result["break_reasons"] and not result["gb_ids"], (result, fixed_text)
    else:  # the fix moved work out of the graph: the graphs it promised, fewer than before
        before = run_probe(example)
        assert result["graph_count"] == example.fixed_graphs < before["graph_count"], (result, before, fixed_text)

    outputs = []
    for ex in (example, fixed_example):
        torch.manual_seed(0)  # the same weights
        target = target_of(load_example(ex))
        torch.manual_seed(0)
        args = eval(ex.inputs, {"torch": torch})
        torch.manual_seed(0)
        numpy.random.seed(0)
        outputs.append(target(*args))
    torch.testing.assert_close(outputs[1], outputs[0])


@pytest.mark.torch
def test_guard_in_a_file_without_torch_asks_sys_modules_and_keeps_one_graph(tmp_path, capsys):
    # POT's NumPy code paths: the file imports no torch; its guard must not need torch, and must
    # still drop the print while Dynamo traces.
    import torch
    import torch._dynamo

    source = (
        "def scale(x):\n"
        "    y = x * 2\n"
        "    print('scaled', y.shape)\n"
        "    return y + 1\n"
    )
    result = fix_source(source, "scale.py", Config(select=("ALL",), extra_roots=("scale.scale",)), unsafe=False)
    assert "import torch" not in result.text and "sys.modules" in result.text, result.text
    scale = _import_text(result.text, tmp_path).scale
    torch._dynamo.reset()
    compiled = torch.compile(scale, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(torch.ones(3)), torch.full((3,), 3.0))
    assert "scaled" not in capsys.readouterr().out
    scale(torch.ones(3))
    assert "scaled" in capsys.readouterr().out


def test_fixed_raise_check_still_raises_eager_and_compiled(tmp_path):
    import torch
    import torch._dynamo

    source = (
        "import torch\n"
        "class Check(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        y = x * 2\n"
        "        if not (y > 0).all():\n"
        "            raise ValueError('y must be positive')\n"
        "        return y + 1\n"
    )
    result = fix_source(source, "check.py", ALL, unsafe=True)
    assert "torch._assert_async" in result.text and not result.remaining
    check = _import_text(result.text, tmp_path).Check()
    torch._dynamo.reset()
    explained = torch._dynamo.explain(check)(torch.ones(4))
    assert explained.graph_count == 1 and not explained.break_reasons, explained.break_reasons
    # Eager: the original exception; compiled (one graph): the check's RuntimeError.
    for run, error in ((check, ValueError), (torch.compile(check, backend="eager", fullgraph=True), RuntimeError)):
        torch._dynamo.reset()
        torch.testing.assert_close(run(torch.ones(4)), torch.full((4,), 3.0))
        with pytest.raises(error, match="y must be positive"):
            run(-torch.ones(4))


@pytest.mark.torch
def test_cloned_duplicate_input_gives_the_same_gradients_compiled_as_one_graph(tmp_path):
    import torch
    import torch._dynamo

    source = (
        "import torch\n"
        "class Scale(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, a, b):\n"
        "        ctx.save_for_backward(a, b)\n"
        "        return a * b\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad):\n"
        "        a, b = ctx.saved_tensors\n"
        "        return grad * b, grad * a\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.proj = torch.nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        h = self.proj(x)\n"
        "        return Scale.apply(h, h)\n"
    )
    result = fix_source(source, "scale.py", ALL, unsafe=True)
    assert "Scale.apply(h, h.clone())" in result.text and not result.remaining
    _assert_compiled_gradients_equal_eager(
        source, result.text, tmp_path, lambda: torch.randn(3, 4, requires_grad=True), "eager",
        lambda model, x: (x.grad, model.proj.weight.grad, model.proj.bias.grad),
    )


def _assert_compiled_gradients_equal_eager(source, fixed_text, tmp_path, make_input, backend, gradients):
    """The original run eagerly and the fixed text compiled whole (`fullgraph=True`) give the
    same gradients (`gradients(model, x)`) after `.sum().backward()`."""
    import torch
    import torch._dynamo

    grads = []
    for text, compiled in ((source, False), (fixed_text, True)):
        model = _build(_import_text(text, tmp_path), "M")
        x = make_input()
        torch._dynamo.reset()
        run = torch.compile(model, backend=backend, fullgraph=True) if compiled else model
        run(x).sum().backward()
        grads.append(gradients(model, x))
    for fixed, original in zip(grads[1], grads[0]):
        assert fixed is not None
        torch.testing.assert_close(fixed, original)


@pytest.mark.torch
def test_fixed_masked_mean_of_an_empty_selection_is_nan_as_before(tmp_path):
    import torch

    source = (
        "import torch\n"
        "class Mean(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x[x > 0].mean()\n"
    )
    result = fix_source(source, "mean.py", ALL, unsafe=True)
    assert "torch.where(x > 0, x, 0).sum() / (x > 0).sum()" in result.text and not result.remaining
    original, fixed = _import_text(source, tmp_path).Mean(), _import_text(result.text, tmp_path).Mean()
    for x in (torch.randn(5, 7), -torch.ones(3), torch.tensor([0.5, float("nan"), -1.0])):
        torch.testing.assert_close(fixed(x), original(x), equal_nan=True)
    assert torch.isnan(fixed(-torch.ones(3)))


@pytest.mark.torch
def test_split_assert_compiles_to_one_graph_and_still_raises(tmp_path):
    """`assert a and b, msg` on tensor tests: 1 break before (`and` on a tensor), 0 after the
    split; the same outputs, and a failing check still raises with the message, eager
    (AssertionError, as before) and compiled (Dynamo's in-graph assertion: RuntimeError)."""
    import torch
    import torch._dynamo

    source = (
        "import torch\n"
        "class Check(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        x_min, x_max = x.min(), x.max()\n"
        "        assert x_max.isnan().sum() == 0 and x_min.isnan().sum() == 0, 'NaN detected'\n"
        "        return x * 2\n"
    )
    result = fix_source(source, "check.py", ALL, unsafe=True)
    assert "        assert x_max.isnan().sum() == 0, 'NaN detected'\n" in result.text and not result.remaining
    original = _import_text(source, tmp_path).Check()
    check = _import_text(result.text, tmp_path).Check()
    x = torch.randn(4)
    torch._dynamo.reset()
    before = torch._dynamo.explain(original)(x)
    assert before.graph_break_count == 1 and before.break_reasons
    torch._dynamo.reset()
    after = torch._dynamo.explain(check)(x)
    assert after.graph_count == 1 and not after.break_reasons, after.break_reasons
    nan = torch.tensor([1.0, float("nan")])
    with pytest.raises(AssertionError, match="NaN detected"):
        check(nan)
    for run in (check, torch.compile(check, backend="eager", fullgraph=True)):
        torch._dynamo.reset()
        torch.testing.assert_close(run(x), original(x))
        with pytest.raises((AssertionError, RuntimeError), match="NaN detected"):
            run(nan)


@pytest.mark.torch
def test_assert_with_a_formatted_message_compiles_to_one_graph_and_still_raises(tmp_path):
    """`assert t, f"..."` (piq's input checks): a branch to Dynamo. `torch._assert_async(t, f"...")`
    keeps the check in the graph, and a failing one still raises with the formatted message,
    eager and compiled (RuntimeError instead of AssertionError: the fix is unsafe)."""
    import torch
    import torch._dynamo

    source = (
        "import torch\n"
        "class Check(torch.nn.Module):\n"
        "    def forward(self, x, hi: float = 1.0):\n"
        "        assert x.amax() <= hi, f'values above {hi}'\n"
        "        return x * 2\n"
    )
    result = fix_source(source, "check.py", ALL, unsafe=True)
    assert "        torch._assert_async(x.amax() <= hi, f'values above {hi}')\n" in result.text and not result.remaining
    original = _import_text(source, tmp_path).Check()
    check = _import_text(result.text, tmp_path).Check()
    x = torch.rand(4)
    torch._dynamo.reset()
    assert torch._dynamo.explain(original)(x).break_reasons
    torch._dynamo.reset()
    after = torch._dynamo.explain(check)(x)
    assert after.graph_count == 1 and not after.break_reasons, after.break_reasons
    high = torch.tensor([0.5, 3.0])
    for run in (check, torch.compile(check, backend="eager", fullgraph=True)):
        torch._dynamo.reset()
        torch.testing.assert_close(run(x), original(x))
        with pytest.raises(RuntimeError, match="values above 1.0"):
            run(high)


def test_item_deciding_a_branch_has_no_break_free_rewrite():
    """Longformer / LED: `is_global_attn = is_index_global_attn.flatten().any().item()`, then
    `if is_global_attn:` around work with data-dependent shapes (`nonzero`, a `cat` of as many
    columns as there are global tokens). Why no fix is offered: each candidate rewrite of a
    reduced copy still breaks (dropping `.item()`: a tensor branch; capturing the scalar: a
    branch on a symbolic bool; always taking the global path: equal outputs, but `nonzero`)."""
    import torch
    import torch._dynamo

    def original(x, mask):
        is_global = (mask > 0).flatten().any().item()
        y = x * 2
        if is_global:
            y = y.clone()
            y[(mask > 0).nonzero(as_tuple=True)] = 0
        return y + 1

    def without_item(x, mask):
        is_global = (mask > 0).flatten().any()
        y = x * 2
        if is_global:
            y = y.clone()
            y[(mask > 0).nonzero(as_tuple=True)] = 0
        return y + 1

    def always_global(x, mask):
        y = (x * 2).clone()
        y[(mask > 0).nonzero(as_tuple=True)] = 0
        return y + 1

    x, no_global = torch.randn(2, 8), torch.zeros(2, 8)
    for fn in (original, without_item, always_global):
        torch._dynamo.reset()
        explained = torch._dynamo.explain(fn)(x, no_global)
        assert explained.graph_break_count >= 1, fn.__name__
        torch.testing.assert_close(fn(x, no_global), original(x, no_global))
    torch._dynamo.reset()
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        assert torch._dynamo.explain(original)(x, no_global).graph_break_count >= 1
    source = (
        "import torch\n"
        "class Encoder(torch.nn.Module):\n"
        "    def forward(self, x, attention_mask: torch.Tensor):\n"
        "        is_global_attn = (attention_mask > 0).flatten().any().item()\n"
        "        if is_global_attn:\n"
        "            x = torch.cat((x[:, :1], x), dim=-1)\n"
        "        return x * 2\n"
    )
    result = fix_source(source, "encoder.py", ALL, unsafe=True)
    assert result.text == source and result.remaining



@pytest.mark.torch
def test_print_made_reorderable_is_called_after_the_graph_instead_of_breaking(capsys):
    """DYN101's advice: `reorderable_logging_functions.add(print)` keeps the print, without a break."""
    import torch
    import torch._dynamo

    def f(x):
        y = x * 2
        print("total", y.sum())
        return y + 1

    for reorderable, graphs in ((set(), 2), ({print}, 1)):
        torch._dynamo.reset()
        with torch._dynamo.config.patch(reorderable_logging_functions=reorderable):
            explained = torch._dynamo.explain(f)(torch.ones(3))
        assert explained.graph_count == graphs, explained.break_reasons
        assert "total tensor(6.)" in capsys.readouterr().out


@pytest.mark.torch
@pytest.mark.parametrize("cls", ["SwitchExperts", "MixtralExperts", "OldMixtralBlock"])
def test_dense_expert_dispatch_compiles_to_one_graph_with_the_same_outputs_and_gradients(cls, tmp_path):
    import torch
    import torch._dynamo
    import torch.nn.functional as F

    source = (FIXTURES / "expert_loops.py").read_text()
    result = fix_source(source, "expert_loops.py", ALL, unsafe=True)
    assert result.fixed and not result.remaining and not result.errors, result.remaining
    original = _build(_import_text(source, tmp_path), cls)
    fixed = _build(_import_text(result.text, tmp_path), cls)

    def inputs(seed):
        torch.manual_seed(seed)
        if cls == "OldMixtralBlock":
            return (torch.randn(2, 5, 8, requires_grad=True),)
        h = torch.randn(10, 8, requires_grad=True)
        top = torch.randn(10, 4).topk(1 if cls == "SwitchExperts" else 2, dim=-1)
        weights = top.values.softmax(-1)
        if cls == "SwitchExperts":  # (tokens, 1, experts) one-hot choices, (tokens, 1) weights
            return h, F.one_hot(top.indices, 4), weights
        return h, top.indices, weights

    def first(out):
        return out[0] if isinstance(out, tuple) else out

    for seed in range(4):  # tokens of some experts, none of others
        args = inputs(seed)
        want = first(original(*args))
        (want_grad,) = torch.autograd.grad(want.sum(), args[0])
        got = first(fixed(*args))
        (got_grad,) = torch.autograd.grad(got.sum(), args[0])
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got_grad, want_grad)

    args = inputs(0)
    torch._dynamo.reset()
    with pytest.raises((torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError)):  # the original breaks
        torch.compile(original, backend="eager", fullgraph=True)(*args)
    torch._dynamo.reset()
    compiled = torch.compile(fixed, backend="eager", fullgraph=True)
    torch.testing.assert_close(first(compiled(*args)), first(original(*args)))


RANGE_OBSERVER = range_observer(
    """
    if self.lo.min() > -1e-5 and self.hi.max() < 1e-5:
        self.lo = self.lo + lo
        self.hi = self.hi + hi
    elif self.momentum == -1:
        self.lo = torch.min(self.lo, lo)
        self.hi = torch.max(self.hi, hi)
    else:
        self.lo = self.lo * self.momentum + lo * (1 - self.momentum)
        self.hi = self.hi * self.momentum + hi * (1 - self.momentum)
    """,
    result="(x - self.lo) / (self.hi - self.lo)",
)


@pytest.mark.torch
@pytest.mark.parametrize("momentum", [0.9, -1])
def test_selected_chain_compiles_to_one_graph_and_updates_the_buffers_alike(momentum, tmp_path):
    import torch
    import torch._dynamo

    result = fix_source(RANGE_OBSERVER, "observer.py", ALL, unsafe=True)
    assert result.fixed and not result.remaining and "torch.where(taken" in result.text, result.text
    original = _import_text(RANGE_OBSERVER, tmp_path).Observer(momentum)
    fixed = _import_text(result.text, tmp_path).Observer(momentum)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(_import_text(RANGE_OBSERVER, tmp_path).Observer(momentum), backend="eager", fullgraph=True)(torch.randn(4))
    torch._dynamo.reset()
    compiled = torch.compile(fixed, backend="eager", fullgraph=True)
    torch.manual_seed(0)
    for _ in range(4):  # the first call takes the range, the others average it
        x = torch.randn(8, 4)
        torch.testing.assert_close(compiled(x), original(x))
        torch.testing.assert_close((fixed.lo, fixed.hi), (original.lo, original.hi))


POINT_EMBEDDING = '''
import torch
from torch import nn


class Points(nn.Module):
    def __init__(self):
        super().__init__()
        self.not_a_point = nn.Embedding(1, 8)
        self.kinds = nn.ModuleList([nn.Embedding(1, 8) for _ in range(2)])

    def forward(self, points, labels):
        emb = points.repeat(1, 1, 4) * 2
        emb[labels == -1] = 0.0
        emb[labels == -1] += self.not_a_point.weight
        emb[labels == 0] += self.kinds[0].weight
        emb[labels == 1] += self.kinds[1].weight
        emb[emb > 1] -= 1
        return emb
'''


@pytest.mark.torch
def test_masked_updates_compile_to_one_graph_with_the_same_outputs_and_gradients(tmp_path):
    import torch
    import torch._dynamo

    result = fix_source(POINT_EMBEDDING, "points.py", ALL, unsafe=True)
    assert result.fixed and not result.remaining and result.text.count(".copy_(torch.where(") == 4, result.text
    torch.manual_seed(0)
    original = _import_text(POINT_EMBEDDING, tmp_path).Points()
    fixed = _import_text(result.text, tmp_path).Points()
    fixed.load_state_dict(original.state_dict())
    points, labels = torch.randn(2, 5, 2), torch.randint(-1, 2, (2, 5))
    want = original(points, labels)
    got = fixed(points, labels)
    torch.testing.assert_close(got, want)
    grads = [torch.autograd.grad(m(points, labels).sum(), list(m.parameters())) for m in (original, fixed)]
    torch.testing.assert_close(grads[1], grads[0])
    torch._dynamo.reset()
    assert len(torch._dynamo.explain(original)(points, labels).break_reasons) == 4
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(fixed, backend="eager", fullgraph=True)(points, labels), want)


@pytest.mark.torch
def test_python_math_instead_of_a_one_number_tensor_compiles_to_one_graph(tmp_path):
    import torch
    import torch._dynamo

    source = '''
import torch
from torch import nn


class Levels(nn.Module):
    def forward(self, feats):
        scales = [2 ** float(torch.tensor(f.shape[-1] / 64).log2().round()) for f in feats]
        lo = -torch.log2(torch.tensor(scales[0], dtype=torch.float32)).item()
        hi = -torch.log2(torch.tensor(scales[-1], dtype=torch.float32)).item()
        return feats[0] * (hi - lo) + int(lo)
'''
    result = fix_source(source, "levels.py", ALL, unsafe=True)
    assert result.fixed and not result.remaining and "math.log2" in result.text, result.text
    original, fixed = _import_text(source, tmp_path).Levels(), _import_text(result.text, tmp_path).Levels()
    feats = [torch.randn(3, 64), torch.randn(3, 32), torch.randn(3, 16)]
    torch._dynamo.reset()
    assert torch._dynamo.explain(original)(feats).break_reasons
    torch._dynamo.reset()
    compiled = torch.compile(fixed, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(feats), original(feats))


@pytest.mark.torch
def test_dtype_guarded_submodule_conversion_still_converts_and_compiles_to_one_graph(tmp_path):
    import torch
    import torch._dynamo

    (example,) = [ex for ex in rule_by_code("DYN203").invalid if ex.fixed]
    result = fix_source(example.source, "router.py", ALL, unsafe=True)
    assert result.text == example.fixed_source, result.text
    original = _import_text(example.source, tmp_path).Router()
    fixed = _import_text(result.text, tmp_path).Router()
    fixed.load_state_dict(original.state_dict())
    x = torch.randn(3, 8)
    torch.testing.assert_close(fixed(x), original(x))
    # A module in another dtype is still converted, as `.to()` always did.
    fixed.classifier.double()
    fixed(x)
    assert fixed.classifier.weight.dtype == torch.float32
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(fixed, backend="eager", fullgraph=True)(x), original(x))


@pytest.mark.torch
def test_split_helper_keeps_eval_traced_and_breaks_less_in_train(tmp_path):
    # fixes/disable_tail.py: the rest of a planning helper after its eval-mode return runs
    # outside the graph; eval mode still compiles to one graph, train mode breaks less.
    import textwrap

    import torch
    import torch._dynamo

    from .test_fixes import SPLIT_PLANNER

    source = textwrap.dedent(SPLIT_PLANNER).lstrip("\n")
    result = fix_source(source, "planner.py", ALL, unsafe=True)
    assert "_plan_outside_graph" in result.text and not result.errors
    original, fixed = (_import_text(text, tmp_path).Planner() for text in (source, result.text))
    x = torch.randn(3, 8)
    for train in (True, False):
        counts = []
        for model in (original, fixed):
            model.train(train)
            torch._dynamo.reset()
            counts.append(torch._dynamo.explain(model)(x).graph_count)
        if train:
            assert counts[1] < counts[0], counts
        else:
            assert counts == [1, 1], counts
        outputs = []
        for model in (original, fixed):
            numpy.random.seed(0)
            outputs.append(model(x))
        torch.testing.assert_close(outputs[1], outputs[0])


@pytest.mark.torch
def test_checkpoint_flag_skipped_while_compiling_gives_the_same_gradients_as_one_graph(tmp_path):
    # Reentrant checkpointing computes the checkpointed layer's gradients only when an input needs
    # them (hence wav2vec2's `hidden_states.requires_grad = True`); Dynamo traces the checkpoint as
    # one operator, which does not need that input: the fixed model compiles whole with the same
    # gradients as the original eager.
    import torch
    import torch._dynamo

    source = (
        "import torch\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = torch.nn.Conv1d(1, 4, 3)\n"
        "        self.proj = torch.nn.Linear(14, 2)\n"
        "    def forward(self, x):\n"
        "        h = x[:, None]\n"
        "        if self.training:\n"
        "            h.requires_grad = True\n"
        "        return self.proj(checkpoint(self.conv, h, use_reentrant=True))\n"
    )
    result = fix_source(source, "encoder.py", ALL, unsafe=True)
    assert "if not torch.compiler.is_compiling():" in result.text and not result.remaining
    _assert_compiled_gradients_equal_eager(
        source, result.text, tmp_path, lambda: torch.randn(3, 16), "aot_eager",
        lambda model, x: (model.conv.weight.grad, model.conv.bias.grad, model.proj.weight.grad),
    )


@pytest.mark.torch
def test_loop_moved_outside_the_graph_breaks_less_with_equal_outputs(tmp_path):
    # fixes/disable_loop.py on a detector's per-image filtering: Dynamo gave up on the frame at the
    # loop's break and traced each helper the loop calls as a frame of its own (breaking in
    # `remove_small`); moved out, the loop is one break at its call.
    import textwrap

    import torch
    import torch._dynamo

    from dynalint.verify.measuring import explain

    from .test_fixes import FILTER_LOOP

    source = textwrap.dedent(FILTER_LOOP).lstrip("\n")
    result = fix_source(source, "filters.py", ALL, unsafe=True)
    assert "_filter_loop_outside_graph" in result.text and not result.errors
    original, fixed = (_import_text(text, tmp_path).Filter() for text in (source, result.text))
    fixed.load_state_dict(original.state_dict())
    args = (torch.rand(3, 40, 4), torch.randn(3, 40))
    before, after = (explain(model, args, {}, 0, None) for model in (original, fixed))
    assert after["graph_count"] < before["graph_count"], (before, after)
    assert after["graph_break_count"] < before["graph_break_count"], (before, after)
    torch._dynamo.reset()
    expected = original(*args)
    for got in (fixed(*args), torch.compile(fixed, backend="eager")(*args)):
        torch.testing.assert_close(got, expected)

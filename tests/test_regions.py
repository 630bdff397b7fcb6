"""Compile regions: what is linted (reachable from a compiled root) and what is not."""

import textwrap
from pathlib import Path

from dynalint.config import Config
from dynalint.run.engine import SourceFile, analyze_files, module_name_for, select_findings

ALL = Config(select=("ALL",))


def analyze_tree(tmp_path: Path, files: dict[str, str]):
    """The summaries of `files` (relative path -> dedented text) written under `tmp_path`."""
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    sources = []
    for p in sorted(tmp_path.rglob("*.py")):
        module, is_pkg = module_name_for(p)
        sources.append(SourceFile(p, p.relative_to(tmp_path).as_posix(), module, is_pkg))
    return analyze_files(sources, ALL, jobs=1)


def lint_tree(tmp_path: Path, files: dict[str, str]):
    return [(f.filename, f.row, f.code) for f in select_findings(analyze_tree(tmp_path, files), ALL)]


def test_base_class_in_another_file_and_imported_helper(tmp_path):
    found = lint_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base.py": """
                from torch import nn

                class MyBase(nn.Module):
                    pass
            """,
            "pkg/ops.py": """
                def nms_boxes(boxes):
                    print("boxes", boxes.shape)
                    return boxes

                def unused_helper(x):
                    print("never called from a compiled region")
            """,
            "pkg/model.py": """
                from .base import MyBase
                from .ops import nms_boxes

                class Block(MyBase):
                    def forward(self, x):
                        return nms_boxes(x)
            """,
        },
    )
    assert found == [("pkg/ops.py", 3, "DYN101")]


def test_calls_into_a_namespace_subpackage_inside_a_package_are_followed(tmp_path):
    # facenet-pytorch: `models/` and `models/utils/` have no __init__.py (PEP 420 namespace
    # packages); `mtcnn.py` imports `from .utils.detect_face import detect_face`.
    files = {
        "pkg/__init__.py": "",
        "pkg/models/mtcnn.py": """
            from torch import nn
            from .utils.detect_face import detect_face

            class MTCNN(nn.Module):
                def forward(self, x):
                    return detect_face(x)
        """,
        "pkg/models/utils/detect_face.py": """
            def detect_face(x):
                return x.nonzero()
        """,
    }
    assert lint_tree(tmp_path, files) == [("pkg/models/utils/detect_face.py", 3, "DYN130")]
    assert module_name_for(tmp_path / "pkg/models/utils/detect_face.py") == ("pkg.models.utils.detect_face", False)
    # Outside any package a folder is no package: the file is named by itself.
    (tmp_path / "scripts").mkdir()
    assert module_name_for(tmp_path / "scripts" / "run.py") == ("run", False)


def test_a_modules_own_call_override_is_a_compile_root(tmp_path):
    # pytorch-tabular's ModuleWithInit: `__call__` initialises from the first batch, then calls
    # `super().__call__`; Dynamo traces it wherever the module is called.
    found = lint_tree(
        tmp_path,
        {
            "m.py": """
                import torch
                from torch import nn

                class WithInit(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.done = nn.Parameter(torch.tensor(0), requires_grad=False)

                    def __call__(self, *args, **kwargs):
                        if not bool(self.done.item()):
                            self.done.data[...] = 1
                        return super().__call__(*args, **kwargs)

                    def forward(self, x):
                        return x * 2
            """,
        },
    )
    assert found == [("m.py", 11, "DYN110")]
    # A `__call__` that is an API of its own (ultralytics' `Model.__call__` runs `predict`, with
    # its downloads and logging) never reaches the module call: no root.
    found = lint_tree(
        tmp_path,
        {
            "m.py": """
                import logging
                from torch import nn

                class Model(nn.Module):
                    def __call__(self, source=None):
                        return self.predict(source)

                    def predict(self, source):
                        logging.warning("predicting")
                        return source
            """,
        },
    )
    assert found == []


def test_training_step_and_data_code_are_not_reported(tmp_path):
    found = lint_tree(
        tmp_path,
        {
            "train.py": """
                import torch
                from torch import nn

                class Net(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(4, 4)

                    def forward(self, x):
                        return self.fc(x)

                    def training_step(self, batch):
                        loss = self(batch).sum()
                        print("loss", loss.item())
                        return loss

                def load(path):
                    data = torch.load(path)
                    if data.sum() > 0:
                        print(data)
                    return data
            """
        },
    )
    assert found == []


def test_submodule_methods_and_self_helpers_are_followed(tmp_path):
    found = lint_tree(
        tmp_path,
        {
            "m.py": """
                import torch

                class Scorer:
                    def score(self, x):
                        return x.max().item()

                class Net(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.scorer = Scorer()

                    def forward(self, x):
                        return self.helper(x) + self.scorer.score(x)

                    def helper(self, y):
                        if y.sum() > 0:
                            return y
                        return -y
            """
        },
    )
    assert found == [("m.py", 6, "DYN110"), ("m.py", 17, "DYN120")]


def test_is_compiling_guards_disable_and_scripting_branches(tmp_path):
    found = lint_tree(
        tmp_path,
        {
            "g.py": """
                import torch
                from transformers.utils import is_torchdynamo_compiling

                @torch.compile
                def f(x):
                    if not torch.compiler.is_compiling():
                        print("eager only")
                    if torch._dynamo.is_compiling():
                        y = x * 2
                    else:
                        print("eager only too")
                    if not is_torchdynamo_compiling() and x.sum() > 0:
                        print("short-circuited while compiling")
                    if torch.jit.is_scripting():
                        print("scripting only")
                    if torch.compiler.is_compiling():
                        return x + 1
                    print("unreachable while compiling")
                    return slow(x)

                @torch.compiler.disable
                def slow(x):
                    print("not traced")
                    return x
            """
        },
    )
    assert found == []


def test_torch_compile_call_marks_function_root(tmp_path):
    found = lint_tree(
        tmp_path,
        {
            "c.py": """
                import torch

                def step(x):
                    print(x)
                    return x * 2

                def not_compiled(x):
                    print(x)

                fast_step = torch.compile(step)
            """
        },
    )
    assert found == [("c.py", 5, "DYN101")]


def test_noqa_suppresses_by_code_and_bare(tmp_path):
    found = lint_tree(
        tmp_path,
        {
            "n.py": """
                import torch

                @torch.compile
                def f(x):
                    print(x)  # noqa: DYN101
                    print(x)  # noqa
                    print(x)  # noqa: DYN110
                    return x
            """
        },
    )
    assert found == [("n.py", 8, "DYN101")]


def test_metadata_conditions_are_not_tensor_branches(tmp_path):
    found = lint_tree(
        tmp_path,
        {
            "meta.py": """
                import torch
                from torch import nn

                class Attn(nn.Module):
                    def forward(self, x, mask=None, use_cache=None, past=None):
                        if mask is None:
                            mask = torch.ones_like(x)
                        if use_cache and past is not None:
                            x = x + past.get_seq_length()
                        if self.training and x.dim() == 3:
                            x = x * 0.5
                        if isinstance(x, torch.Tensor) and x.dtype == torch.float16 and torch.isinf(x).any():
                            x = x.clamp(-1, 1)
                        early, mask2 = self.prepare(x)
                        if early:
                            return mask2
                        return x * mask

                    def prepare(self, x):
                        return False, x
            """
        },
    )
    assert found == []


# Helpers of another file: a tensor goes in (from callers) and comes out (to callers).
OPS = """
    import torch

    def normalize(x):
        return x / x.norm()

    def clamp_outliers(x, limit=6.0):
        if x.abs().max() > limit:
            x = x.clamp(-limit, limit)
        return x
"""


def test_tensors_flow_across_files(tmp_path):
    """A helper's parameter is a tensor because a caller in another file passes one; a value is a
    tensor because an imported helper returns one; an abstract method's result stays a tensor."""
    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": OPS
        + """
    def pick(flag, x):
        if flag:  # a plain flag: callers pass a Python bool
            return x
        return -x
""",
        "pkg/model.py": """
            from torch import nn
            from .ops import clamp_outliers, normalize, pick

            class Base(nn.Module):
                def mix(self, x):
                    raise NotImplementedError

                def forward(self, x):
                    h = self.mix(normalize(x))
                    if h.mean() > 0:
                        h = h * 2
                    return pick(True, clamp_outliers(h))
        """,
    }
    found = lint_tree(tmp_path, files)
    assert ("pkg/ops.py", 8, "DYN120") in found  # `if x.abs().max() > limit` in the helper
    assert ("pkg/model.py", 11, "DYN120") in found  # `h` comes from normalize() and mix()
    assert not [f for f in found if f[0] == "pkg/ops.py" and f[1] == 13]  # `if flag:` is a flag


def test_cross_file_facts_leave_unrelated_files_alone(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/util.py": """
            def scale(n):
                if n > 2:
                    return n * 2
                return n
        """,
        "pkg/model.py": """
            from torch import nn
            from .util import scale

            class M(nn.Module):
                def forward(self, x):
                    return x * scale(3)
        """,
    }
    assert lint_tree(tmp_path, files) == []


CROSS_FILE_TREE = {
    "pkg/__init__.py": "from .ops import normalize\n",
    "pkg/ops.py": OPS,
    "pkg/base.py": """
        from torch import nn

        class Base(nn.Module):
            def mix(self, x):
                return x

            def forward(self, x):
                return self.mix(x)
    """,
    "pkg/model.py": """
        import torch
        from pkg import normalize
        from .base import Base
        from .ops import clamp_outliers

        class Block(Base):
            def __init__(self):
                super().__init__()
                self.inner = Base()

            def mix(self, x):
                return self.inner.mix(super().mix(normalize(x)))

            def forward(self, x):
                return clamp_outliers(self.mix(x))

        step = torch.compile(clamp_outliers)
    """,
}


def test_rounds_and_reachability_share_a_project_that_matches_a_fresh_one(tmp_path):
    """The cross-file rounds replace summaries in one project (`Project.replace`); the
    reachability walk reuses it. It must resolve exactly as a project built from scratch on the
    final summaries, and record the same names looked at."""
    from dynalint.lint.regions import Project, Visited
    from dynalint.run.engine import live_functions

    summaries = analyze_tree(tmp_path, CROSS_FILE_TREE)
    shared = summaries.project
    assert shared is not None and shared.serves(summaries)
    assert any(s.facts for s in summaries)  # the rounds did replace summaries
    fresh_walk, shared_walk = {"visited": Visited()}, {}
    fresh = Project(list(summaries), visited=fresh_walk["visited"]).reachable(fresh_walk)
    assert live_functions(summaries, ALL) == fresh
    assert {"pkg.ops.clamp_outliers", "pkg.model.Block.mix", "pkg.base.Base.mix"} <= fresh
    # A fresh walk with the rounds' names reuses nothing: the same live set from a new project.
    assert Project(list(summaries)).reachable(shared_walk) == fresh
    assert shared_walk["calls"] == fresh_walk["calls"]


def test_project_replace_refuses_a_summary_that_changes_names(tmp_path):
    import copy

    from dynalint.lint.regions import Project

    summaries = list(analyze_tree(tmp_path, CROSS_FILE_TREE))
    project = Project(summaries)
    model = next(s for s in summaries if s.module == "pkg.model")
    project.canonical("pkg.model.normalize")  # memoised through pkg/__init__'s import
    same = copy.deepcopy(model)
    same.functions["pkg.model.Block.mix"].returns_tensor = not same.functions["pkg.model.Block.mix"].returns_tensor
    assert project.replace(model, same)
    assert project.functions["pkg.model.Block.mix"] is same.functions["pkg.model.Block.mix"]
    assert project.serves([same if s is model else s for s in summaries])
    assert not project.replace(model, same)  # no longer one of its summaries
    for change in (
        lambda s: s.imports.update(normalize="pkg.base.Base"),
        lambda s: s.functions.pop("pkg.model.Block.forward"),
        lambda s: s.classes["pkg.model.Block"].bases.append("torch.nn.Module"),
        lambda s: s.classes["pkg.model.Block"].methods.append("extra"),
    ):
        other = copy.deepcopy(same)
        change(other)
        assert not project.replace(same, other)
    assert project.canonical("pkg.model.normalize") == "pkg.ops.normalize"


def test_called_names_are_the_last_parts_of_every_name_resolution_looks_up(tmp_path):
    """`called_names` lists what `referenced_names` gives for each file (cut to its last part),
    the methods of self/selfattr/super calls, and the extra roots."""
    from dynalint.lint.regions import called_names, referenced_names

    summaries = analyze_tree(tmp_path, CROSS_FILE_TREE)
    expected = {"extra_root"}
    for s in summaries:
        entry = s.to_cache()
        expected |= {n.rpartition(".")[2] for n in referenced_names(entry)}
        expected |= {e[-1] for f in entry["functions"].values() for e in f["edges"] if e[0] != "name"}
    found = called_names(summaries, ["pkg.extra_root"])
    assert found == expected
    assert {"mix", "clamp_outliers", "normalize", "Base", "extra_root"} <= found


def test_cross_file_facts_rework_a_file_when_it_or_a_file_it_calls_changed(tmp_path):
    """Across rounds, `cross_file_facts` keeps each file's part while neither its summary nor
    the summary of a file whose functions it calls was replaced; the facts always equal those
    worked out from scratch, key order included."""
    import copy

    from dynalint.lint.hints import cross_file_facts
    from dynalint.lint.regions import Project

    summaries = list(analyze_tree(tmp_path, CROSS_FILE_TREE))
    project = Project(summaries)

    def check() -> dict:
        facts = cross_file_facts(summaries, project=project)
        assert repr(facts) == repr(cross_file_facts(list(summaries)))
        return facts

    facts = check()
    assert facts["pkg/model.py"]["returns"] == ["pkg.normalize"]  # re-exported by pkg/__init__.py
    assert list(facts["pkg/ops.py"]["hints"]) == ["pkg.ops.normalize"]
    i = next(i for i, s in enumerate(summaries) if s.module == "pkg.ops")
    ops = copy.deepcopy(summaries[i])
    ops.functions["pkg.ops.normalize"].returns_tensor = False
    assert project.replace(summaries[i], ops)
    summaries[i] = ops
    assert "pkg/model.py" not in check()  # the caller's part was worked out again
    j = next(j for j, s in enumerate(summaries) if s.module == "pkg.model")
    model = copy.deepcopy(summaries[j])
    model.call_hints = {}
    assert project.replace(summaries[j], model)
    summaries[j] = model
    assert check() == {}


def test_functions_stored_on_self_are_followed_into_their_bodies(tmp_path):
    # A function stored on self in __init__ and called as `self.<attr>(...)` from forward runs
    # under compile: directly (`self.backend = fn`), as a method (`self.fn = self._naive`), or
    # picked from a module-level dict of functions, in this file or imported (xlstm's sLSTM
    # `self.pointwise = registry[name]`). Functions of such a dict that no stored attribute
    # reaches, and functions stored but never called, stay outside the compile regions.
    found = lint_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/kernels.py": """
                import torch

                def vanilla(x):
                    print("vanilla")
                    return x

                def fused(x):
                    print("fused")
                    return x

                REGISTRY: dict = {"vanilla": vanilla, "fused": fused}
            """,
            "pkg/backends.py": """
                def parallel(x):
                    print("parallel")
                    return x

                def stored_not_called(x):
                    print("never called")
                    return x
            """,
            "pkg/model.py": """
                from torch import nn
                from .kernels import REGISTRY
                from .backends import parallel, stored_not_called

                def local_step(x):
                    print("local step")
                    return x

                LOCAL = {"step": local_step}

                class Cell(nn.Module):
                    def __init__(self, name, act):
                        super().__init__()
                        self.pointwise = REGISTRY[name]
                        self.backend = parallel
                        self.step = LOCAL[name]
                        self.impl = self._naive
                        self.act = act  # a parameter: whatever the caller passes
                        self.spare = stored_not_called

                    def _naive(self, x):
                        print("naive")
                        return x

                    def forward(self, x):
                        return self.act(self.impl(self.step(self.backend(self.pointwise(x)))))
            """,
        },
    )
    assert sorted(found) == [
        ("pkg/backends.py", 3, "DYN101"),
        ("pkg/kernels.py", 5, "DYN101"),
        ("pkg/kernels.py", 9, "DYN101"),
        ("pkg/model.py", 7, "DYN101"),
        ("pkg/model.py", 23, "DYN101"),
    ]


def test_functions_passed_as_arguments_are_followed_but_not_hooks(tmp_path):
    # A function passed to a call from compiled code is presumably called where it runs
    # (`checkpoint(self._inner, x)`, a step function handed to a scan helper, a function stored
    # on self passed on). Hooks registered from forward run outside the traced frame, and a
    # function given to torch.compiler.disable is explicitly left out.
    found = lint_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/scan.py": """
                def scan(step, xs):
                    return [step(x) for x in xs]

                def pointwise(x):
                    print("pointwise")
                    return x
            """,
            "pkg/model.py": """
                import torch
                from torch import nn
                from torch.utils.checkpoint import checkpoint
                from .scan import scan, pointwise

                def local_step(x):
                    print("local step")
                    return x

                def on_grad(g):
                    print("a gradient hook")

                def eager_only(x):
                    print("disabled")
                    return x

                class Net(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fn = pointwise

                    def _inner(self, x):
                        print("inner")
                        return x

                    def _save(self, grad):
                        print("a hook")

                    def forward(self, x):
                        x.register_hook(self._save)
                        x.register_hook(on_grad)
                        y = torch.compiler.disable(eager_only)(x)
                        h = checkpoint(self._inner, y, use_reentrant=False)
                        return scan(local_step, [h]) + scan(self.fn, [h])
            """,
        },
    )
    assert sorted(found) == [
        ("pkg/model.py", 8, "DYN101"),
        ("pkg/model.py", 24, "DYN101"),
        ("pkg/scan.py", 6, "DYN101"),
    ]


def test_a_method_taken_as_a_value_is_followed(tmp_path):
    # Enformer: `trunk_fn = self._checkpointed if self.use_checkpointing else self._trunk`, then
    # `trunk_fn(x)`: both methods are presumably called.
    found = lint_tree(
        tmp_path,
        {
            "model.py": """
                from torch import nn

                class M(nn.Module):
                    def _checkpointed(self, x):
                        print("checkpointed")
                        return x

                    def _trunk(self, x):
                        print("plain")
                        return x

                    def _unused(self, x):
                        print("never taken")
                        return x

                    def forward(self, x):
                        trunk_fn = self._checkpointed if self.use_checkpointing else self._trunk
                        return trunk_fn(x)
            """,
        },
    )
    assert sorted(found) == [("model.py", 6, "DYN101"), ("model.py", 10, "DYN101")]


def test_a_method_called_on_a_local_in_a_custom_autograd_backward_is_followed(tmp_path):
    # A reversible network (h-transformer-1d, sinkhorn-transformer): the Function's backward
    # loops over `ctx.blocks` and calls `block.backward_pass(...)`; Dynamo traces it with the
    # backward, and breaks at its `requires_grad` setter. The method name is the file's only one.
    source = """
        import torch
        from torch import nn
        from torch.autograd.function import Function

        class Block(nn.Module):
            def forward(self, x):
                return x * 2

            def backward_pass(self, y, dy):
                with torch.enable_grad():
                    y.requires_grad = True
                    torch.autograd.backward(y * 2, dy)
                return y, dy

            def {other}(self, y):
                y.requires_grad = True

        class RevFn(Function):
            @staticmethod
            def forward(ctx, x, blocks):
                ctx.blocks = blocks
                return x

            @staticmethod
            def backward(ctx, dy):
                y = dy
                for block in ctx.blocks[::-1]:
                    y, dy = block.backward_pass(y, dy)
                return dy, None

        class Model(nn.Module):
            def forward(self, x):
                return RevFn.apply(x, self.blocks)
    """
    found = lint_tree(tmp_path, {"rev.py": source.replace("{other}", "unused")})
    assert ("rev.py", 12, "DYN140") in found and ("rev.py", 13, "DYN143") in found
    assert not [f for f in found if f[1] == 17], found  # a method nothing calls stays out
    # Two classes defining the method: the receiver could be either, so nothing is followed.
    twice = source.replace("{other}", "unused") + textwrap.indent(textwrap.dedent("""
        class Other(nn.Module):
            def backward_pass(self, y, dy):
                y.requires_grad = True
    """), "        ")
    found = lint_tree(tmp_path, {"rev.py": twice})
    assert not [f for f in found if f[2] in ("DYN140", "DYN143")], found


def test_custom_operator_bodies_are_not_compiled_code(tmp_path):
    # Dynamo puts a custom op in the graph as one node: its body and its fake implementation
    # never run under Dynamo (torch-harmonics' attention kernels). Probed: only line 17 breaks.
    found = lint_tree(tmp_path, {"ops.py": """
        import torch
        from torch import nn

        @torch.library.custom_op("mylib::gather_rows", mutates_args=())
        def gather_rows(x: torch.Tensor, off: torch.Tensor) -> torch.Tensor:
            n = int(off[0])
            return x[:n].clone()

        @gather_rows.register_fake
        def _(x, off):
            n = int(off[0])
            return x[:n].clone()

        class M(nn.Module):
            def forward(self, x, off: torch.Tensor):
                return gather_rows(x, off) + int(off[1])
    """})
    assert found == [("ops.py", 17, "DYN110")], found


def test_a_function_picked_into_a_local_is_followed(tmp_path):
    # torch-audiomentations' `shift = shift_gpu if ... else shift_cpu`, nflows' `spline_fn = ...`
    found = lint_tree(tmp_path, {"alias.py": """
        import torch
        from torch import nn

        def shift_gpu(x, n):
            return torch.roll(x, n, -1)

        def shift_cpu(x, n):
            k = int(n.item())
            return torch.roll(x, k, -1)

        def unused(n):
            return n.item()

        class Shift(nn.Module):
            def forward(self, x: torch.Tensor, n: torch.Tensor):
                shift = shift_gpu if x.is_cuda else shift_cpu
                return shift(x, n)
    """})
    assert found == [("alias.py", 9, "DYN110")], found


def test_any_of_a_value_of_unknown_kind_is_a_tensor_test(tmp_path):
    # torch-audiomentations: `self.transform_parameters["should_apply"].any()`, a dict item set
    # in forward. Only tensors and arrays have `.any()` (both tensors under Dynamo).
    found = lint_tree(tmp_path, {"aug.py": """
        import torch
        from torch import nn

        class Gain(nn.Module):
            def forward(self, samples):
                if self.params["should_apply"].any():
                    samples = samples * 2
                if self.params["label"]:
                    samples = samples + 1
                return samples
    """})
    assert found == [("aug.py", 7, "DYN120")], found


def test_a_module_base_named_through_a_module_level_alias(tmp_path):
    # rwkv: `MyModule = torch.jit.ScriptModule` or `torch.nn.Module` by an environment variable.
    found = lint_tree(tmp_path, {"rwkv.py": """
        import os
        import torch

        if os.environ.get("JIT_ON") == "1":
            MyModule = torch.jit.ScriptModule
        else:
            MyModule = torch.nn.Module

        class Net(MyModule):
            def forward(self, x):
                print(x)
                return x
    """})
    assert found == [("rwkv.py", 12, "DYN101")], found


def test_a_tensor_row_unpacked_in_an_enumerate_loop_gives_tensors(tmp_path):
    # torchtune's tile embeddings: `for i, (h, w) in enumerate(aspect_ratio)`, then `int(h * w)`.
    found = lint_tree(tmp_path, {"tiles.py": """
        import torch
        from torch import nn

        class Tiles(nn.Module):
            def forward(self, x: torch.Tensor, aspect_ratio: torch.Tensor, sizes: list):
                for i, (h, w) in enumerate(aspect_ratio):
                    n = int(h * w)
                    x[i, :n] = 0
                for i, (a, b) in enumerate(sizes):
                    x = x + int(a * b)
                return x
    """})
    assert [(r, c) for _, r, c in found] == [(8, "DYN110")], found


def test_the_right_side_of_a_not_training_test_reads_eval_mode_kinds(tmp_path):
    # DAC's residual quantizer: `n_quantizers` is a tensor only under `if self.training:`, and
    # `self.training is False and i >= n_quantizers` reads it only in eval mode (no break, probed).
    found = lint_tree(tmp_path, {"rvq.py": """
        import torch
        from torch import nn

        class RVQ(nn.Module):
            def forward(self, z, n_quantizers: int = None):
                if n_quantizers is None:
                    n_quantizers = 3
                if self.training:
                    n_quantizers = torch.ones((z.shape[0],)) * 3 + 1
                out = 0
                for i in range(3):
                    if self.training is False and i >= n_quantizers:
                        break
                    if not self.training or i < n_quantizers:  # the right side runs in training
                        out = out + z
                    if i >= n_quantizers:
                        break
                return out
    """})
    assert [(r, c) for _, r, c in found] == [(15, "DYN120"), (17, "DYN120")], found


def test_a_helper_returning_boolean_tensors_gives_masks(tmp_path):
    # e2-tts' `mask_from_frac_lengths` returns `(seq >= start) & (seq < end)`; `loss[mask]` breaks.
    found = lint_tree(tmp_path, {"e2.py": """
        import torch
        from torch import nn

        def span_mask(seq_len: int, frac: torch.Tensor):
            seq = torch.arange(seq_len)
            start = (frac * seq_len).long()
            return (seq[None, :] >= start[:, None]) & (seq[None, :] < seq_len)

        def lengths_of(x: torch.Tensor):
            return x.sum(-1).long()

        class E2(nn.Module):
            def forward(self, x: torch.Tensor, frac: torch.Tensor):
                mask = span_mask(x.shape[-1], frac)
                n = lengths_of(x)
                return x[mask].mean() + x[:, n].sum()
    """})
    assert [(r, c) for _, r, c in found] == [(17, "DYN130")], found


def test_items_of_a_dict_stored_on_self_in_the_function(tmp_path):
    # torch-audiomentations: `self.transform_parameters = {"should_apply": ....to(dtype=torch.bool)}`
    # in forward, then `samples[self.transform_parameters["should_apply"]]` (a mask: a break).
    found = lint_tree(tmp_path, {"aug.py": """
        import torch
        from torch import nn

        class Gain(nn.Module):
            def forward(self, samples):
                self.params = {"apply": self.dist.sample((4,)).to(dtype=torch.bool), "name": "gain"}
                picked = samples[self.params["apply"]]
                if self.params["name"]:
                    picked = picked * 2
                self.params = {}
                return picked + samples[self.params["apply"]]
    """})
    assert [(r, c) for _, r, c in found] == [(8, "DYN130")], found


def test_a_tensor_converted_to_bool_is_a_mask(tmp_path):
    # torch-audiomentations' `dist.sample(...).to(dtype=torch.bool, device=...)` on a distribution
    # stored on self: `x[mask]` with it breaks.
    found = lint_tree(tmp_path, {"aug.py": """
        import torch
        from torch import nn

        class Gain(nn.Module):
            def __init__(self):
                super().__init__()
                self.dist = torch.distributions.Bernoulli(0.5)

            def forward(self, x):
                keep = self.dist.sample((x.shape[0],)).to(dtype=torch.bool, device=x.device)
                return x[keep]
    """})
    assert [(r, c) for _, r, c in found] == [(12, "DYN130")], found


STAR_TREE = {
    "pkg/__init__.py": "from .layers import *\nfrom .model import *\n",
    "pkg/layers.py": """
        from torch import nn

        def helper(x):
            print("helper", x.shape)
            return x

        def gate(x):
            if x.mean() > 0:
                return x
            return x + 1

        class Base(nn.Module):
            pass

        class Block(nn.Module):
            def forward(self, x):
                print("block")
                return x
    """,
    "pkg/model.py": """
        from .layers import *
        from .model2 import *

        class Net(Base):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                y = gate(x)
                z = helper(x)
                print(len(x), isinstance(x, tuple))
                return self.block(x)

        class NotAModule(object):
            def forward(self, x):
                print(x)
    """,
    # Star imports in a cycle: looked up once each, no endless search.
    "pkg/model2.py": "from .model import *\n",
}


def test_names_from_star_imports_are_followed(tmp_path):
    # `helper` and `gate` come from `from .layers import *`, `Base` too (so Net is a module):
    # their findings are reported; builtins (`print`, `len`, `isinstance`) stay builtins.
    found = lint_tree(tmp_path, STAR_TREE)
    assert found == [
        ("pkg/layers.py", 5, "DYN101"),
        ("pkg/layers.py", 9, "DYN120"),  # `x` is a tensor: the call site's hint crossed the star import
        ("pkg/layers.py", 18, "DYN101"),
        ("pkg/model.py", 13, "DYN101"),  # not NotAModule's print
    ]


def test_a_star_import_is_part_of_the_files_interface(tmp_path):
    from dynalint.lint.regions import Project

    summaries = list(analyze_tree(tmp_path, STAR_TREE))
    model = next(s for s in summaries if s.module == "pkg.model")
    assert model.imports["*pkg.layers"] == "pkg.layers"
    project = Project(summaries)
    assert project.canonical("pkg.model.gate") == "pkg.layers.gate"
    assert project.canonical("pkg.Block") == "pkg.layers.Block"  # re-exported by the package
    assert project.canonical("pkg.model.missing") == "pkg.model.missing"
    assert project.is_module("pkg.model.Net") and not project.is_module("pkg.model.NotAModule")
    # Dropping the star import changes the names the file resolves: no in-place replace.
    import copy

    changed = copy.deepcopy(model)
    del changed.imports["*pkg.layers"]
    assert not project.replace(model, changed)


def test_a_function_of_a_module_attribute_from_another_file_is_no_counter(tmp_path):
    # snntorch's LinearLeaky: `self.mem = self.state_quant(self.mem)` applies a function stored by
    # a base class in another file; nothing recompiles (measured), so DYN203 says nothing. A
    # counter on the same attribute is still reported.
    found = lint_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """
            import torch
            from torch import nn

            class Base(nn.Module):
                def __init__(self, state_quant=False):
                    super().__init__()
                    self.state_quant = state_quant
                    self.beta = nn.Parameter(torch.tensor(0.9))
                    self.calls = 0

                def _base_state_function(self, x):
                    return self.beta * x
        """,
        "pkg/model.py": """
            from .base import Base

            class M(Base):
                def forward(self, x):
                    self.mem = self._base_state_function(x)
                    if self.state_quant:
                        self.mem = self.state_quant(self.mem)
                    self.calls = self.calls + 1
                    return self.mem
        """,
    })
    assert found == [("pkg/model.py", 9, "DYN203")]  # the counter only


def test_an_estimator_of_scikit_learn_is_no_module(tmp_path):
    # tabpfn's TabPFNRegressor(RegressorMixin, BaseEstimator) has a `forward` of its own (NumPy
    # preprocessing): not a compiled root. A version check with TorchVersion is no tensor test.
    found = lint_tree(tmp_path, {
        "est.py": """
            import numpy as np
            import torch
            from sklearn.base import BaseEstimator, RegressorMixin
            from torch.torch_version import TorchVersion

            class Regressor(RegressorMixin, BaseEstimator):
                def forward(self, X):
                    if np.any(np.isnan(X)):
                        X = np.nan_to_num(X)
                    print(X.shape)
                    return X

            class Net(torch.nn.Module):
                def forward(self, x):
                    has_gqa = torch.__version__ >= TorchVersion("2.5")
                    if not has_gqa:
                        return x
                    print(x)
                    return x * 2
        """,
    })
    assert found == [("est.py", 19, "DYN101")]


def test_a_method_passed_up_to_the_base_init_is_followed(tmp_path):
    # norse's LIFCell: `super().__init__(state_fallback=self.initial_state)`; the base stores it
    # and its forward calls `self.state_fallback(x)`. Another keyword's method is not called.
    found = lint_tree(tmp_path, {
        "cells.py": """
            import torch

            class Cell(torch.nn.Module):
                def __init__(self, state_fallback, on_reset=None):
                    super().__init__()
                    self.state_fallback = state_fallback
                    self.on_reset = on_reset

                def forward(self, x, state=None):
                    state = state if state is not None else self.state_fallback(x)
                    return x + state

            class LIFCell(Cell):
                def __init__(self):
                    super().__init__(state_fallback=self.initial_state, on_reset=self.reset_hook)

                def initial_state(self, x):
                    v = torch.zeros(x.shape)
                    v.requires_grad = True
                    return v

                def reset_hook(self):
                    print("reset")
        """,
    })
    assert found == [("cells.py", 20, "DYN140")]


def test_einops_of_a_tensor_is_a_tensor(tmp_path):
    found = lint_tree(tmp_path, {
        "m.py": """
            import torch
            from einops import rearrange, reduce

            class M(torch.nn.Module):
                def forward(self, coors, names):
                    rel = rearrange(coors, "b n d -> b n 1 d") - rearrange(coors, "b n d -> b 1 n d")
                    if reduce(rel, "b i j d -> b", "sum").max() > 0:
                        rel = rel * 2
                    labels = rearrange(names, "(a b) -> a b", a=2) if isinstance(names, list) else names
                    return rel
        """,
    })
    assert found == [("m.py", 8, "DYN120")]


def test_fields_of_an_optional_dataclass_parameter_keep_their_kinds(tmp_path):
    # timesfm's decode cache: `decode_cache: DecodeCache | None`, a field annotated as a tensor
    # gives a slice bound read back from a tensor (the frame cannot be resumed: eager from there).
    found = lint_tree(tmp_path, {
        "m.py": """
            import dataclasses
            from typing import Optional

            import torch

            @dataclasses.dataclass
            class Cache:
                next_index: torch.Tensor
                key: torch.Tensor
                size: int

            class A(torch.nn.Module):
                def forward(self, key: torch.Tensor, cache: Cache | None = None, other: Optional[Cache] = None):
                    if cache is not None:
                        start = cache.next_index[0]
                        cache.key[:, start:start + key.shape[1]] = key
                    if other is not None:
                        return key[:, :other.size]
                    return key * 2
        """,
    })
    assert found == [("m.py", 17, "DYN131")]


def test_the_methods_of_a_distribution_transform_are_compiled_code(tmp_path):
    # pyro's Spline: a transformed distribution's `log_prob` (in a compiled model) runs the
    # transform's `_call` / `_inverse` / `log_abs_det_jacobian`, whose tensors are its arguments;
    # other methods are not roots.
    found = lint_tree(tmp_path, {
        "flows.py": """
            import torch
            from torch.distributions import Transform

            def _spline(x, bound):
                inside = (x >= -bound) & (x <= bound)
                out = torch.zeros_like(x)
                out[inside] = x[inside] * 2
                return out

            class Spline(Transform):
                def _call(self, x):
                    return _spline(x, 3.0)

                def _inverse(self, y):
                    if y.abs().max() > 10:
                        return y
                    return y / 2

                def describe(self, x):
                    print(x)

            class Conditional(Spline):
                def log_abs_det_jacobian(self, x, y):
                    return torch.zeros_like(x).sum() if x.sum() > 0 else y
        """,
    })
    assert found == [("flows.py", 8, "DYN130"), ("flows.py", 16, "DYN120"), ("flows.py", 25, "DYN120")]


def test_a_call_of_a_registry_item_runs_every_function_it_holds(tmp_path):
    # geomloss' `routines[self.loss][backend](x, y)`: a dict of dicts of functions (some through
    # `partial`), called directly; a dict holding anything else is no registry.
    found = lint_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/routines.py": """
            from functools import partial

            def sinkhorn(x, y):
                return (x - y).norm().item()

            def kernel(x, y, name="energy"):
                print(name)
                return x - y

            def unused(x):
                print(x)

            ROUTINES = {
                "sinkhorn": {"tensorized": sinkhorn},
                "energy": {"tensorized": partial(kernel, name="energy")},
            }
            SETTINGS = {"a": 1, "b": unused}
        """,
        "pkg/loss.py": """
            import torch
            from .routines import ROUTINES, SETTINGS

            class Loss(torch.nn.Module):
                def __init__(self, loss="sinkhorn"):
                    super().__init__()
                    self.loss = loss

                def forward(self, x, y):
                    SETTINGS["b"](x)
                    return ROUTINES[self.loss]["tensorized"](x, y)
        """,
    })
    assert found == [("pkg/routines.py", 5, "DYN110"), ("pkg/routines.py", 8, "DYN101")]


def test_constructing_a_plain_class_runs_its_own_init_and_post_init(tmp_path):
    # Dynamo traces the constructor of an object compiled code builds (sbi's mixture record
    # validating its tensors in `__post_init__`); not an inherited one, an exception's, or a
    # module's (its `__init__` builds submodules), and a fresh object's attributes are no counters.
    found = lint_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/records.py": """
            from dataclasses import dataclass

            import torch

            @dataclass
            class Mixture:
                logits: torch.Tensor
                def __post_init__(self):
                    print("mixture", self.logits.shape)

            @dataclass
            class Child(Mixture):
                pass

            class State:
                def __init__(self, x):
                    self.steps = 0
                    self.steps += 1
                    print("state")

            class Unused:
                def __init__(self):
                    print("never built")

            class Failure(Exception):
                def __init__(self, msg):
                    print(msg)
        """,
        "pkg/net.py": """
            import torch
            from .records import Child, Failure, Mixture, State

            class Block(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    print("built")

                def forward(self, x):
                    return x

            class Net(torch.nn.Module):
                def forward(self, x):
                    m = Mixture(x)
                    c = Child(x)
                    s = State(x)
                    b = Block()
                    if x.shape[0] > 100:
                        raise Failure("too big")
                    return m.logits + c.logits
        """,
    })
    assert found == [("pkg/records.py", 10, "DYN101"), ("pkg/records.py", 20, "DYN101")]


def test_a_callable_annotated_parameter_stored_on_self_is_no_submodule(tmp_path):
    # deepinv's fixed-point solver: `check_conv_fn: Callable[[int, dict, dict], bool]` stored on
    # self and called in forward returns a Python bool, not a tensor; a module passed in does.
    found = lint_tree(tmp_path, {
        "solver.py": """
            from typing import Callable, Optional

            import torch

            class Solver(torch.nn.Module):
                def __init__(self, check: Optional[Callable[[int, dict, dict], bool]] = None, block=None):
                    super().__init__()
                    self.check = check
                    self.block = block

                def forward(self, x):
                    done = self.check is not None and self.check(0, x, x)
                    if done:
                        return x
                    if self.block(x).sum() > 0:
                        return x + 1
                    return x
        """,
    })
    assert found == [("solver.py", 16, "DYN120")]


def test_a_property_read_in_compiled_code_runs_its_getter(tmp_path):
    # moshi's codebook: `if self.initialized:` reads a property whose getter calls `.item()`; a
    # property nobody reads, and attributes the class assigns, are not followed.
    found = lint_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """
            import torch

            class Base(torch.nn.Module):
                @property
                def ready(self) -> bool:
                    return bool(self.flag.item())

                @property
                def unused(self):
                    print("never read")
                    return 1
        """,
        "pkg/book.py": """
            import torch
            from .base import Base

            class Codebook(Base):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("flag", torch.tensor(False))
                    self.scale = 2

                def forward(self, x):
                    if self.ready:
                        return x * self.scale
                    return x
        """,
    })
    assert found == [("pkg/base.py", 7, "DYN110")]


def test_another_frameworks_module_is_no_torch_module(tmp_path):
    # skrl's Warp backend (`import warp_nn.nn as nn`), flax: their `Module`s are not compiled.
    found = lint_tree(tmp_path, {
        "warp_model.py": """
            import logging
            import warp_nn.nn as nn
            import flax.linen as linen

            logger = logging.getLogger(__name__)

            class Model(nn.Module):
                def forward(self, x):
                    logger.warning("placing mixins")
                    return x

            class Dense(linen.Module):
                def forward(self, x):
                    print(x)
                    return x
        """,
    })
    assert found == []


def test_a_decorators_wrapper_is_followed_but_not_a_registration(tmp_path):
    # gpytorch's `@cached`: the wrapper pickles its cache key in place of the method it wraps.
    # A decorator that registers its argument, or warns and returns it, runs at import: not walked.
    found = lint_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/memoize.py": """
                import functools
                import pickle

                def cached(method=None, name=None):
                    return _cached(method=method, name=name)

                def _cached(method=None, name=None):
                    if method is None:
                        return functools.partial(_cached, name=name)

                    @functools.wraps(method)
                    def g(self, *args, **kwargs):
                        key = pickle.dumps(kwargs)
                        return method(self, *args, **kwargs)

                    return g

                def register(fn):
                    print("registered", fn.__name__)
                    return fn

                def deprecated(why):
                    def deco(fn):
                        print("deprecated", why)
                        return fn
                    return deco
            """,
            "pkg/model.py": """
                from torch import nn

                from .memoize import cached, deprecated, register

                class M(nn.Module):
                    @cached(name="helper")
                    def helper(self, x):
                        return x * 2

                    @register
                    @deprecated("use helper")
                    def other(self, x):
                        return x

                    def forward(self, x):
                        return self.helper(x) + self.other(x)
            """,
        },
    )
    assert found == [("pkg/memoize.py", 14, "DYN105")]


def test_an_int_annotated_parameter_given_a_tensor_by_its_caller_is_a_tensor(tmp_path):
    # uni2ts' rotary cache: `_init_freq(self, max_len: int)` called with `seq_id.max() + 1`; the
    # test on it is a data-dependent branch (a break), not a recompile hint. A caller passing an
    # int leaves the annotation its say.
    found = lint_tree(tmp_path, {"rope.py": """
        import torch
        from torch import nn

        class Rope(nn.Module):
            def _init_freq(self, max_len: int):
                if self.cos.size(-2) < max_len:
                    self.cos = torch.ones(16, 4)

            def _grow(self, n: int):
                if self.cos.size(-2) < n:
                    self.cos = torch.ones(16, 4)

            def forward(self, x, seq_id):
                self._init_freq(max_len=seq_id.max() + 1)
                self._grow(x.shape[1])
                return self.cos[seq_id] * x
    """})
    assert ("rope.py", 7, "DYN120") in found and ("rope.py", 11, "DYN120") not in found, found


def test_only_number_annotations_give_way_to_a_tensor_from_the_callers(tmp_path):
    # PyG's `edge_index: Adj` (a Union alias the linter cannot read) stays what the annotation
    # says even where callers pass a tensor: `adj_t.has_value()` on it is no tensor test.
    found = lint_tree(tmp_path, {"conv.py": """
        import torch
        from torch import nn
        from torch_geometric.typing import Adj

        def norm(edge_index: Adj, ratio: float):
            adj_t = edge_index
            if not adj_t.has_value():
                adj_t = adj_t.fill_value(1.0)
            if ratio > 0.5:
                return adj_t
            return adj_t

        class Conv(nn.Module):
            def forward(self, x, edge_index):
                return norm(torch.cat([edge_index, edge_index], 1), x.mean())
    """})
    assert found == [("conv.py", 10, "DYN120")], found  # the `ratio` test, not `has_value()` (row 8)

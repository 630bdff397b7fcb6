"""Autofixes: what each fix writes, and the guarantees of the fix stage (parse, idempotence,
atomic writes keeping encoding / BOM / newlines, files changed on disk, dropped fixes)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynalint.run import atomic
from dynalint import autofix
from dynalint.autofix import fix_source
from dynalint.cli import main
from dynalint.config import Config
from dynalint.findings import Edit, Finding, Fix, SAFE
from dynalint.fixes import apply as fix_apply
from dynalint.fixes.apply import fix_text
from dynalint.fixes.base import FIX_ERRORS
from dynalint.lint.rules import all_rules

from .samples import range_observer

ALL = Config(select=("ALL",))


def fixed(code: str, unsafe: bool = True):
    return fix_source(textwrap.dedent(code).lstrip("\n"), "example.py", ALL, unsafe=unsafe)


def assert_fixes(before: str, after: str, unsafe: bool = True) -> None:
    result = fixed(before, unsafe)
    assert result.text == textwrap.dedent(after).lstrip("\n")
    assert not result.errors
    # Idempotent: a second run finds nothing more to fix.
    again = fix_source(result.text, "example.py", ALL, unsafe=unsafe)
    assert again.text == result.text and not again.fixed


@pytest.fixture(autouse=True)
def no_fix_generator_errors():
    FIX_ERRORS.clear()
    yield
    assert not FIX_ERRORS, FIX_ERRORS


# --------------------------------------------------------------------------------------------
# DYN101 / DYN103 / DYN104: guards


def test_print_is_guarded_safely():
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x):
            y = x * 2
            # show it
            print("y", y.shape)  # debugging
            return y + 1
        """,
        """
        import torch

        @torch.compile
        def f(x):
            y = x * 2
            # show it
            if not torch.compiler.is_compiling():
                print("y", y.shape)  # debugging
            return y + 1
        """,
        unsafe=False,
    )


def test_adjacent_print_logging_and_warnings_share_one_guard():
    result = fixed(
        """
        import logging
        import warnings
        import torch

        log = logging.getLogger(__name__)

        @torch.compile
        def f(x):
            y = x * 2
            print("y", y.shape)
            log.info("shape %s", y.shape)
            warnings.warn("careful")

            print("after a blank line")
            return y + 1
        """,
        unsafe=False,
    )
    assert result.text.count("is_compiling()") == 2
    assert "    if not torch.compiler.is_compiling():\n        print(\"y\", y.shape)\n        log.info(" in result.text
    assert "        warnings.warn(\"careful\")\n\n    if not torch.compiler.is_compiling():\n        print(\"after" in result.text
    assert sorted(f.code for f in result.fixed) == ["DYN101", "DYN101", "DYN103", "DYN104"]
    assert not result.remaining


def test_statement_after_an_existing_guard_joins_it():
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x):
            if not torch.compiler.is_compiling():
                print("first")
            print("second")
            return x
        """,
        """
        import torch

        @torch.compile
        def f(x):
            if not torch.compiler.is_compiling():
                print("first")
                print("second")
            return x
        """,
    )


def test_import_torch_is_added_once_before_from_torch_imports():
    assert_fixes(
        '''
        """Docstring."""

        import os
        from torch import nn


        class M(nn.Module):
            def forward(self, x):
                print(x.shape)
                y = x + 1
                print(y.shape)
                return y
        ''',
        '''
        """Docstring."""

        import os
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, x):
                if not torch.compiler.is_compiling():
                    print(x.shape)
                y = x + 1
                if not torch.compiler.is_compiling():
                    print(y.shape)
                return y
        ''',
    )


def test_import_torch_goes_after_docstring_and_future_imports():
    result = fixed(
        '''
        """Docstring."""
        from __future__ import annotations
        import contextlib
        from .base import Base


        class M(Base):
            def forward(self, x):
                print(x.shape)
                return x
        ''',
        unsafe=False,
    )
    # No torch import at module level: the file may have to import without torch, so the
    # guard asks `sys.modules` and imports nothing but `sys` (in the function).
    assert "import torch" not in result.text
    assert ('    def forward(self, x):\n        import sys\n        if not (sys.modules.get("torch") and '
            'sys.modules["torch"].compiler.is_compiling()):\n            print(x.shape)\n') in result.text, result.text
    result = fixed(
        '''
        """Docstring."""
        from __future__ import annotations

        import contextlib


        import torch.nn as nn


        class M(nn.Module):
            def forward(self, x):
                print(x.shape)
                return x
        ''',
        unsafe=False,
    )
    assert '\nimport contextlib\n\n\nimport torch\nimport torch.nn as nn\n' in result.text


def test_import_torch_placement_with_headers_and_type_checking_imports():
    # Shebang, coding cookie, docstring, __future__: the import goes after all of them.
    result = fixed(
        '''
        #!/usr/bin/env python
        # -*- coding: utf-8 -*-
        """Doc."""
        from __future__ import annotations
        # a comment that belongs to the class
        class M(Module):
            def forward(self, x):
                print(x.shape)
                return x
        from torch.nn import Module
        ''',
        unsafe=False,
    )
    assert result.text.startswith(
        '#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"""Doc."""\nfrom __future__ import annotations\nimport torch\n'
        "# a comment that belongs to the class\nclass M(Module):\n"
    )
    # `import torch` under `if TYPE_CHECKING:` is not bound at run time: a real one is added.
    result = fixed(
        """
        from typing import TYPE_CHECKING
        from torch.nn import Module

        if TYPE_CHECKING:
            import torch


        class M(Module):
            def forward(self, x: "torch.Tensor"):
                print(x.shape)
                return x
        """,
        unsafe=False,
    )
    assert result.text.startswith("from typing import TYPE_CHECKING\nimport torch\nfrom torch.nn import Module\n\n")
    assert "        if not torch.compiler.is_compiling():\n            print(x.shape)\n" in result.text


def test_guard_uses_the_files_own_is_compiling_helper():
    # transformers files import `is_torchdynamo_compiling` (which also works on old torch).
    assert_fixes(
        """
        from torch import nn

        from ...utils import is_torchdynamo_compiling, logging

        logger = logging.get_logger(__name__)


        class M(nn.Module):
            def forward(self, x):
                logger.warning_once("slow path")
                return x
        """,
        """
        from torch import nn

        from ...utils import is_torchdynamo_compiling, logging

        logger = logging.get_logger(__name__)


        class M(nn.Module):
            def forward(self, x):
                if not is_torchdynamo_compiling():
                    logger.warning_once("slow path")
                return x
        """,
        unsafe=False,
    )
    result = fixed(
        """
        from torch.compiler import is_compiling as compiling
        from torch.nn import Module


        class M(Module):
            def forward(self, x):
                print(x)
                return x
        """,
        unsafe=False,
    )
    assert "        if not compiling():\n            print(x)\n" in result.text and "import torch\n" not in result.text


def test_torch_alias_is_used():
    result = fixed(
        """
        import torch as th

        @th.compile
        def f(x):
            print(x)
            return x
        """
    )
    assert "    if not th.compiler.is_compiling():\n        print(x)\n" in result.text
    assert "import torch\n" not in result.text


def test_guard_keeps_multiline_strings_tabs_and_crlf():
    src = 'import torch\r\n\r\n@torch.compile\r\ndef f(x):\r\n\tprint("""a\r\nb""", x)\r\n\treturn x\r\n'
    result = fix_source(src, "example.py", ALL)
    assert result.text == (
        'import torch\r\n\r\n@torch.compile\r\ndef f(x):\r\n\tif not torch.compiler.is_compiling():\r\n'
        '\t\tprint("""a\r\nb""", x)\r\n\treturn x\r\n'
    )


def test_no_guard_where_the_call_is_not_its_own_statement():
    result = fixed(
        """
        import torch

        @torch.compile
        def f(x):
            if x.dim() == 2: print(x)
            y = print(x) or x
            return y
        """
    )
    assert result.text == result.original
    assert {f.code for f in result.remaining} == {"DYN101"}
    assert all(f.fix is None for f in result.remaining)


def test_noqa_statement_is_not_pulled_into_a_guard():
    result = fixed(
        """
        import torch

        @torch.compile
        def f(x):
            print("a")
            print("b")  # noqa: DYN101
            return x
        """
    )
    assert '    if not torch.compiler.is_compiling():\n        print("a")\n    print("b")  # noqa: DYN101\n' in result.text


# --------------------------------------------------------------------------------------------
# DYN102: debugger calls


def test_debugger_call_and_its_unused_import_are_deleted_as_unsafe():
    src = """
        import pdb
        import torch

        @torch.compile
        def f(x):
            y = x + 1
            pdb.set_trace()  # stop here
            return y * 2
        """
    assert fixed(src, unsafe=False).text == fixed(src, unsafe=False).original
    assert_fixes(
        src,
        """
        import torch

        @torch.compile
        def f(x):
            y = x + 1
            return y * 2
        """,
    )


def test_deleting_a_statement_between_blank_lines_leaves_one_blank_line():
    # examples/toynet/base.py: `import pdb` between the docstring and `import torch`.
    assert_fixes(
        '''
        """Doc."""

        import pdb

        import torch


        @torch.compile
        def f(x):
            y = x + 1

            pdb.set_trace()

            return y * 2
        ''',
        '''
        """Doc."""

        import torch


        @torch.compile
        def f(x):
            y = x + 1

            return y * 2
        ''',
    )


def test_two_debugger_calls_remove_the_import_once_both_are_gone():
    assert_fixes(
        """
        import pdb
        import torch

        @torch.compile
        def f(x):
            pdb.set_trace()
            y = x + 1
            pdb.set_trace()
            return y * 2

        def eager(x):
            return x
        """,
        """
        import torch

        @torch.compile
        def f(x):
            y = x + 1
            return y * 2

        def eager(x):
            return x
        """,
    )


def test_debugger_import_still_used_elsewhere_is_kept_and_empty_block_gets_pass():
    assert_fixes(
        """
        import pdb
        import torch

        @torch.compile
        def f(x):
            if x.dim() == 2:
                breakpoint()
            import ipdb; ipdb.set_trace()
            return x

        def eager(x):
            pdb.set_trace()
        """,
        """
        import pdb
        import torch

        @torch.compile
        def f(x):
            if x.dim() == 2:
                pass
            return x

        def eager(x):
            pdb.set_trace()
        """,
    )


# --------------------------------------------------------------------------------------------
# DYN110: .item() and friends


def test_item_feeding_tensor_arithmetic_stays_a_tensor():
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x):
            m = x.mean().item()
            n = int(x.sum())
            s = x / (1e-6 + float(x.std()))
            return (x - m) * n + s / x.abs().max().item()
        """,
        """
        import torch

        @torch.compile
        def f(x):
            m = x.mean()
            n = x.sum().long()
            s = x / (1e-6 + x.std())
            return (x - m) * n + s / x.abs().max()
        """,
    )


def test_unused_item_is_deleted_and_impure_receiver_kept():
    assert_fixes(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                m = x.mean().item()
                x.sum().item()
                self.fc(x).sum().item()
                return x
        """,
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                self.fc(x).sum()
                return x
        """,
    )


def test_conversion_of_a_presumed_tensor_is_not_rewritten_to_tensor_methods():
    """transformers' ProphetNet: `int(self.padding_idx + num_input_ids)` where the sum is only
    presumed a tensor (it comes from an unannotated `inputs_shape` parameter, really a Size):
    `(...).long()` would raise AttributeError on an int."""
    result = fixed(
        """
        import torch
        from torch import nn

        class Positions(nn.Embedding):
            def forward(self, inputs_shape, device, past_key_values=None):
                prev = past_key_values.get_seq_length()
                num_input_ids = inputs_shape[1] + prev
                ids = torch.ones((1, 1), dtype=torch.long, device=device) * (
                    int(self.padding_idx + num_input_ids)
                )
                return super().forward(ids)
        """
    )
    assert result.text == result.original
    # The parameter's name says it is a shape, so nothing is reported (and nothing rewritten).
    assert [(f.code, f.fix) for f in result.remaining if f.fix is not None] == []


def test_item_used_as_index_or_logged_gets_no_fix():
    result = fixed(
        """
        import logging
        import torch

        log = logging.getLogger(__name__)

        @torch.compile
        def f(x):
            i = x.argmax().item()
            loss = x.sum().item()
            if loss > 0:
                x = x * 2
            v = x.mean().item()
            log.info("mean %s", v)
            return x.flatten()[i]
        """
    )
    item_findings = [f for f in result.remaining if f.code == "DYN110"]
    assert len(item_findings) == 3 and all(f.fix is None for f in item_findings)
    assert "return" in item_findings[0].message  # the way out: return the tensor


# --------------------------------------------------------------------------------------------
# DYN120: torch.where


def test_bad_if_becomes_torch_where():
    src = (Path(__file__).parent / "fixtures" / "verify" / "bad_if.py").read_text()
    result = fix_source(src, "bad_if.py", ALL, unsafe=True)
    assert "        y = torch.where(y.sum() > 0, y * 2, y - 1)\n        return torch.relu(y)\n" in result.text
    assert not result.remaining
    assert fix_source(src, "bad_if.py", ALL, unsafe=False).text == src  # unsafe only


def test_where_forms():
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x):
            if x.sum() > 0:
                return x * 2
            return x - 1

        @torch.compile
        def g(x):
            y = x.relu()
            # pick one
            return y + 1 if y.sum() > 0 else 0.0

        @torch.compile
        def h(x, flag: torch.Tensor):
            if flag:  # the condition
                x = x * 2
            if not (x.mean() > 0):
                x = x - 1
            else:
                # keep x
                x = x
            return x
        """,
        """
        import torch

        @torch.compile
        def f(x):
            return torch.where(x.sum() > 0, x * 2, x - 1)

        @torch.compile
        def g(x):
            y = x.relu()
            # pick one
            return torch.where(y.sum() > 0, y + 1, 0.0)

        @torch.compile
        def h(x, flag: torch.Tensor):
            # the condition
            x = torch.where(flag.bool(), x * 2, x)
            # keep x
            x = torch.where(x.mean() > 0, x, x - 1)
            return x
        """,
    )


def test_raise_check_keeps_an_f_string_message_of_python_values(monkeypatch):
    """peft's merge check: `{', '.join(adapters)}` is formatted as before; a tensor field is not
    (it would be a host sync), its text is kept."""
    result = fixed(
        """
        import torch

        @torch.compile
        def f(w, names: list, n: int):
            y = w * 2
            if not torch.isfinite(y).all():
                raise ValueError(f"adapter {', '.join(names)} broke at step {n}")
            if y.sum() > 100:
                raise ValueError(f"too large: {y.sum()}")
            return y
        """,
    )
    assert "torch._assert_async(torch.isfinite(y).all(), \"ValueError: \" + (f\"adapter {', '.join(names)} broke at step {n}\"))" in result.text
    assert "torch._assert_async(torch.logical_not(y.sum() > 100), \"ValueError: too large: <y.sum()>\")" in result.text
    namespace: dict = {}
    exec(compile(result.text.replace("@torch.compile", ""), "fixed.py", "exec"), namespace)
    import torch

    # Eager: the `if` and its raise as they were; compiling: the check, its message formatted.
    with pytest.raises(ValueError, match="adapter a, b broke at step 3"):
        namespace["f"](torch.tensor([float("nan")]), ["a", "b"], 3)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    with pytest.raises(RuntimeError, match="adapter a, b broke at step 3"):
        namespace["f"](torch.tensor([float("nan")]), ["a", "b"], 3)


def test_no_where_when_the_branch_not_taken_may_divide_by_zero():
    """pytorch-metric-learning's TCM loss: `0 if s.sum() == 0 else num / denom` as a `torch.where`
    runs the division when `denom == 0` too, and its infinite gradient times 0 is NaN. A division
    by a number or a pole-free branch still gets the fix."""
    result = fixed(
        """
        import torch

        @torch.compile
        def f(sims, margin: float):
            inside = sims <= margin
            num = (sims * inside).sum()
            denom = inside.sum()
            loss = 0 if inside.sum() == 0 else num / denom
            spread = torch.log(sims) if sims.min() > 0 else sims
            scaled = sims * 2 if sims.sum() > 0 else sims / 2
            return loss + spread + scaled
        """,
        unsafe=True,
    )
    assert "loss = 0 if inside.sum() == 0 else num / denom" in result.text
    assert "spread = torch.log(sims) if sims.min() > 0 else sims" in result.text
    assert "scaled = torch.where(sims.sum() > 0, sims * 2, sims / 2)" in result.text


def test_no_where_when_a_branch_variable_may_be_none():
    """timm's gemma4_vit: `if patch_valid is None: ... if sentinel.any(): patch_valid = ~sentinel`
    must not become `torch.where(sentinel.any(), ~sentinel, patch_valid)` (patch_valid is None
    there: where would raise). Optional parameters and `v = None` bindings count too."""
    result = fixed(
        """
        from typing import Optional
        import torch

        @torch.compile
        def f(x, coord: torch.Tensor, valid: Optional[torch.Tensor] = None):
            if valid is None:
                sentinel = (coord == -1).all(dim=-1)
                if sentinel.any():
                    valid = ~sentinel
            return x, valid

        @torch.compile
        def g(x, bias: torch.Tensor | None):
            if x.sum() > 0:
                y = x + bias
            else:
                y = x
            return y

        @torch.compile
        def h(x):
            extra = None
            if x.sum() > 0:
                extra = x * 2
            return x, extra
        """
    )
    assert result.text == result.original
    assert [(f.code, f.fix) for f in result.remaining] == [("DYN120", None)] * 3


def test_no_where_or_cond_for_branches_that_may_differ_in_shape_or_dtype():
    """`if x.shape[-1] % n != 0: x = F.pad(x, ..)` (n from NumPy: the test is a break) became
    `torch.where(.., F.pad(x, ..), x)`, whose branches have different shapes: a runtime error
    (and `x.sum(-1, keepdim=True)` against `x` would silently broadcast). `torch.cond` raises at
    the first call for such branches. Neither is offered unless the branches are provably of one
    shape (elementwise work on the same tensors) and both or neither a mask."""
    result = fixed(
        """
        import numpy as np
        import torch
        import torch.nn.functional as F
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def forward(self, x, n: int):
                block = np.int64(n)
                pad = x.shape[-1] % block
                if pad != 0:
                    x = F.pad(x, (0, 1))
                y = x * 2
                if y.sum() > 0:
                    y = F.pad(y, (0, 1))
                if y.mean() > 0:
                    y = torch.cat([y, y], dim=-1)
                else:
                    y = y * 2
                if y.amax() > 0:
                    y = y.reshape(-1)
                y = y.view(2, -1) if y.amin() > 0 else y
                if y.std() > 0:
                    y = y[:, :2]
                if y.var() > 0:
                    y = y.sum(-1, keepdim=True)
                if y.norm() > 0:
                    return self.proj(y)
                if y.max() > 0:
                    y = y > 0
                if y.min() > 1:
                    z = F.pad(y, (1, 1))
                    y = z * 2
                if y.prod() > 1:
                    y = y + 1
                    return y.t()
                if y.abs().sum() > 1:
                    y = y * self.proj.weight
                return y
        """
    )
    assert result.text == result.original
    assert [(f.code, f.fix) for f in result.remaining if f.code == "DYN120"] == [("DYN120", None)] * 12


def test_where_and_cond_for_shape_keeping_branches():
    result = fixed(
        """
        import torch
        import torch.nn.functional as F

        @torch.compile
        def f(x, mask: torch.Tensor):
            y = x * 2
            if y.sum() > 0:
                y = F.softmax(y, dim=-1).clamp(min=1e-6)
            if y.mean() > 0:
                y = y.masked_fill(y > 1, 0.0)
            else:
                y = torch.zeros_like(y) - y.cumsum(-1)
            if y.amax() > 0:
                z = F.pad(y, (0, 1))[..., :-1]
                y = z * 2 + z.sigmoid()
            else:
                y = F.pad(y, (0, 1))[..., :-1]
            return y
        """
    )
    assert "y = torch.where(y.sum() > 0, F.softmax(y, dim=-1).clamp(min=1e-6), y)" in result.text
    assert "y = torch.where(y.mean() > 0, y.masked_fill(y > 1, 0.0), torch.zeros_like(y) - y.cumsum(-1))" in result.text
    assert "y = torch.cond(y.amax() > 0, y_if_true, y_if_false, (y,))" in result.text
    assert not result.remaining


def test_cond_takes_shape_keeping_torch_submodules_as_elementwise():
    """`self.act(h)` (nn.GELU) against `self.drop(h)` (nn.Dropout): both keep h's shape and dtype.
    `self.a(x)` (nn.Linear) against x, or a submodule some assignment makes another module, may
    not."""
    result = fixed(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self, p=0.0):
                super().__init__()
                self.a = nn.Linear(16, 16)
                self.drop = nn.Dropout(0.1)
                self.act = nn.GELU()
                self.maybe = nn.Dropout(p) if p else nn.Linear(16, 8)

            def forward(self, x):
                h = self.a(x)
                if h.sum() > 0:
                    y = self.act(h)
                    y = y * 2
                else:
                    y = self.drop(h)
                if y.mean() > 0:
                    z = self.a(y)
                    z = z + 1
                else:
                    z = y - 1
                if z.amax() > 0:
                    w = self.maybe(z)
                    w = w * 2
                else:
                    w = z * 3
                return y, z, w
        """
    )
    assert "y = torch.cond(h.sum() > 0, y_if_true, y_if_false, ())" in result.text
    assert "            return y.clone()\n" in result.text  # eval-mode dropout returns its input
    assert [(f.code, f.fix) for f in result.remaining] == [("DYN120", None)] * 2


def test_call_both_branches_make_is_evaluated_once_before_torch_where():
    """The seed article's example: the same submodule call in both branches runs once either
    way, so it runs once before the `where`, after the condition (bound first, so the call's
    random draws and in-place updates come after the condition's, as before)."""
    assert_fixes(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.h = nn.Linear(4, 4)
                self.norm = nn.LayerNorm(4)

            def forward(self, x, h_out):
                if torch.rand(1) > 0.5:
                    return self.h(x) + 1
                else:
                    return self.h(x) - 1

        class N(nn.Module):
            def __init__(self):
                super().__init__()
                self.h = nn.Linear(4, 4)
                self.norm = nn.LayerNorm(4)

            def forward(self, x):
                if not x.sum() > 0:
                    y = self.norm(self.h(x)) * 2
                else:
                    y = torch.relu(self.norm(self.h(x)))
                return y
        """,
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.h = nn.Linear(4, 4)
                self.norm = nn.LayerNorm(4)

            def forward(self, x, h_out):
                condition = torch.rand(1) > 0.5
                h_out_2 = self.h(x)
                return torch.where(condition, h_out_2 + 1, h_out_2 - 1)

        class N(nn.Module):
            def __init__(self):
                super().__init__()
                self.h = nn.Linear(4, 4)
                self.norm = nn.LayerNorm(4)

            def forward(self, x):
                condition = x.sum() > 0
                norm_out = self.norm(self.h(x))
                y = torch.where(condition, torch.relu(norm_out), norm_out * 2)
                return y
        """,
    )


def test_calls_not_made_once_in_both_branches_in_one_order_are_not_hoisted():
    result = fixed(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(4, 4)
                self.b = nn.Linear(4, 4)

            def forward(self, x):
                return self.one(x) + self.twice(x) + self.order(x) + self.expression(x)

            def one(self, x):
                if x.sum() > 0:  # only one branch calls b
                    return self.a(x) + self.b(x)
                return self.a(x)

            def twice(self, x):
                if x.sum() > 0:  # a runs twice in one branch
                    return self.a(x) * self.a(x)
                return self.a(x)

            def order(self, x):
                if x.sum() > 0:  # a then b, or b then a
                    return self.a(x) + self.b(x)
                return self.b(x) - self.a(x)

            def expression(self, x):
                return self.a(x) + 1 if x.sum() > 0 else self.a(x) - 1
        """
    )
    # No `torch.where`: the `if` statements become `torch.cond`, the expression keeps its finding,
    # and so does `one` (`a(x) + b(x)` against `a(x)`: b's output may broadcast to another shape).
    assert "torch.where" not in result.text and result.text.count("torch.cond(") == 2
    assert "def one(self, x):\n        if x.sum() > 0:" in result.text
    assert [f.code for f in result.remaining] == ["DYN120"] * 2


def test_a_check_by_a_comparison_giving_a_python_bool_gets_no_tensor_fix():
    from dynalint.run.engine import lint_source

    # mace's torch-sim wrapper: `torch.equal` / `torch.allclose` give Python bools, which
    # `torch._assert_async` (and `torch.where`) reject with a TypeError on every call.
    source = """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, ref):
                y = x * 2
                if not torch.equal(y.shape[0] * torch.ones(1), ref):
                    raise ValueError("batch changed")
                if not torch.allclose(y, ref):
                    raise ValueError("drifted")
                if y.equal(ref):
                    raise ValueError("unchanged")
                return y
        """
    result = fixed(source)
    assert "_assert_async" not in result.text and not result.errors
    findings = lint_source(textwrap.dedent(source).lstrip("\n"), "example.py", ALL)
    assert [f.row for f in findings if f.code == "DYN120"] == [7, 9, 11]
    assert all("reads tensor values into a Python bool" in f.message for f in findings if f.code == "DYN120")


def test_a_tensor_test_that_decides_a_raise_says_how_to_check_in_the_graph():
    result = fixed(
        """
        import torch

        @torch.compile
        def f(x):
            if not torch.isfinite(x).all():
                raise ValueError(f"bad input {x.abs().max()}")
            return x * 2
        """,
        unsafe=False,
    )
    (finding,) = [f for f in result.remaining if f.code == "DYN120"]
    assert "decides whether to raise" in finding.message and "torch._assert_async" in finding.message


def test_a_python_guard_kept_from_a_parenthesised_test_stays_parenthesised():
    # tabpfn's target check: the Python part of a multi-line test keeps its parentheses (without
    # them the kept `if` did not parse and the fix was dropped).
    assert_fixes(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, y):
                if (
                    not self.training
                    and x.dim() == 2
                    and (y > 2).any()
                ):
                    raise ValueError("Target is out of range.")
                return x * 2
        """,
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, y):
                if torch.compiler.is_compiling():
                    if (not self.training
                        and x.dim() == 2):
                        torch._assert_async(torch.logical_not((y > 2).any()), "ValueError: Target is out of range.")
                elif (
                    not self.training
                    and x.dim() == 2
                    and (y > 2).any()
                ):
                    raise ValueError("Target is out of range.")
                return x * 2
        """,
    )


def test_raise_on_a_tensor_test_becomes_assert_async():
    assert_fixes(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, mask=None, labels=None):
                y = x * 2
                if (y == 0).any():  # zeros
                    raise ValueError("y has zeros")
                if not torch.isfinite(y).all():
                    raise ValueError(
                        f"y must be finite, got {y.shape} "
                        "values"
                    )
                if mask is not None and not mask.any():
                    raise ValueError("empty mask")
                if labels is not None and labels.max() >= 10:
                    raise RuntimeError
                return y
        """,
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, mask=None, labels=None):
                y = x * 2
                if torch.compiler.is_compiling():
                    torch._assert_async(torch.logical_not((y == 0).any()), "ValueError: y has zeros")
                elif (y == 0).any():  # zeros
                    raise ValueError("y has zeros")
                if torch.compiler.is_compiling():
                    torch._assert_async(torch.isfinite(y).all(), "ValueError: y must be finite, got <y.shape> values")
                elif not torch.isfinite(y).all():
                    raise ValueError(
                        f"y must be finite, got {y.shape} "
                        "values"
                    )
                if torch.compiler.is_compiling():
                    if mask is not None:
                        torch._assert_async(mask.any(), "ValueError: empty mask")
                elif mask is not None and not mask.any():
                    raise ValueError("empty mask")
                if torch.compiler.is_compiling():
                    if labels is not None:
                        torch._assert_async(torch.logical_not(labels.max() >= 10), "RuntimeError")
                elif labels is not None and labels.max() >= 10:
                    raise RuntimeError
                return y
        """,
    )


def test_assert_of_an_and_of_tensor_tests_is_split_into_one_assert_per_operand():
    """ibert's `assert x_max.isnan().sum() == 0 and x_min.isnan().sum() == 0, (...)`: `and` takes
    the truth of a tensor in Python (a break), one `assert t` each Dynamo keeps in the graph. The
    same operands run in the same order and the first false one raises the same error."""
    assert_fixes(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, flag: bool = True):
                x_min, x_max = x.min(), x.max()
                assert x_max.isnan().sum() == 0 and x_min.isnan().sum() == 0, (
                    "NaN detected"  # when
                )
                assert flag and not (x > 100).any() and (x_min <= x_max), f"bad {x_min}"  # range
                assert (x > -100).all() and (x < 100).all()
                return x * 2
        """,
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, flag: bool = True):
                x_min, x_max = x.min(), x.max()
                # when
                assert x_max.isnan().sum() == 0, ("NaN detected")
                assert x_min.isnan().sum() == 0, ("NaN detected")
                assert flag and not (x > 100).any() and (x_min <= x_max), f"bad {x_min}"  # range
                assert (x > -100).all()
                assert (x < 100).all()
                return x * 2
        """,
    )
    # The second assert is left alone: with an f-string message each assert of a split would
    # still break (Dynamo keeps only literal-message asserts), and this one formats a tensor.


def test_assert_with_an_f_string_of_python_values_becomes_assert_async():
    """piq's `_validate_input`: `assert t, f"..."` is a branch to Dynamo; with a message of Python
    values it becomes `torch._assert_async(t, f"...")`, one per operand of an `and`."""
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x, lo=0.0, hi=1.0):
            assert x.amin() >= lo, f"values below {lo}"
            assert x.amax() <= hi and not x.isnan().any(), f"values above {hi} or NaN"
            return x * 2
        """,
        """
        import torch

        @torch.compile
        def f(x, lo=0.0, hi=1.0):
            torch._assert_async(x.amin() >= lo, f"values below {lo}")
            torch._assert_async(x.amax() <= hi, f"values above {hi} or NaN")
            torch._assert_async(torch.logical_not(x.isnan().any()), f"values above {hi} or NaN")
            return x * 2
        """,
    )


def test_assert_of_a_negated_or_an_or_is_not_split():
    result = fixed(
        """
        import torch

        @torch.compile
        def f(x):
            assert not ((x > 0).any() and (x < 0).any())
            assert (x > 0).any() or (x < 0).any()
            y = (x > 0).all() and (x < 1).all()
            return x * 2, y
        """
    )
    assert result.text == result.original
    assert all(f.fix is None for f in result.remaining) and len(result.remaining) >= 5


def test_tests_on_presumed_tensors_get_no_assert_or_cond():
    """esmfold's `if no_recycles < 0: raise` (an unannotated parameter, presumed a tensor by the
    lint) must not become `torch._assert_async(torch.logical_not(no_recycles < 0))`, a TypeError
    for an int; nor llava's aspect-ratio branch on numbers a `torch.cond`."""
    result = fixed(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, steps, ratio):
                if steps < 0:
                    raise ValueError("negative")
                if ratio > 1.0:
                    y = x[:, :2]
                    y = y * 2
                else:
                    y = x * 2
                return y
        """
    )
    assert result.text == result.original
    assert all(f.fix is None for f in result.remaining)


def test_raise_with_other_work_else_elif_or_cause_gets_no_check():
    result = fixed(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x):
                y = x * 2
                if (y == 0).any():
                    y = y + 1
                    raise ValueError("zeros")
                if (y > 5).any():
                    raise ValueError("big")
                else:
                    y = y - 1
                if y.dim() == 3:
                    y = y.flatten(0, 1)
                elif (y < -5).any():
                    raise ValueError("small")
                if (y == 1).any():
                    raise ValueError("one") from None
                if (y == 2).any() and (y == 3).any():
                    raise ValueError("two and three")
                return y
        """
    )
    assert result.text == result.original
    assert [f.code for f in result.remaining] == ["DYN120"] * 6


def test_branches_with_other_work_become_torch_cond_and_elif_gets_none():
    """Random draws or several statements: not a `where` (both sides would run), a `torch.cond`
    (only the taken branch runs). A variable read then assigned is an operand."""
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x):
            if x.sum() > 0:
                x = x + torch.randn_like(x)
            else:
                x = x - 1
            if x.dim() == 3:
                x = x + 1
            elif x.sum() > 0:
                x = x * 2
            if x.mean() > 0:
                x = x * 2
                x = x + 1
            return x
        """,
        """
        import torch

        @torch.compile
        def f(x):
            def x_if_true(x):
                x = x + torch.randn_like(x)
                return x
            def x_if_false(x):
                x = x - 1
                return x
            x = torch.cond(x.sum() > 0, x_if_true, x_if_false, (x,))
            if x.dim() == 3:
                x = x + 1
            elif x.sum() > 0:
                x = x * 2
            def x_if_true(x):
                x = x * 2
                x = x + 1
                return x
            def x_if_false(x):
                return x.clone()
            x = torch.cond(x.mean() > 0, x_if_true, x_if_false, (x,))
            return x
        """,
    )


def test_the_output_of_torch_cond_is_a_tensor():
    """`torch.cond` returns tensors: a branch on its output breaks the graph as any tensor test
    does (it was listed among torch's non-tensor functions, so such a branch went unreported)."""
    result = fixed(
        """
        import torch

        def double(x):
            return x * 2

        def halve(x):
            return x / 2

        @torch.compile
        def f(x):
            y = torch.cond(x.sum() > 0, double, halve, (x,))
            if y.mean() > 0:
                raise ValueError("positive")
            return y
        """
    )
    assert '    torch._assert_async(torch.logical_not(y.mean() > 0), "ValueError: positive")\n' in result.text
    assert not result.remaining


def test_branches_torch_cond_cannot_take_get_no_fix():
    result = fixed(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, cache=None):
                y = x * 2
                if y.sum() > 0:
                    y += 1  # in place
                if y.mean() > 0:
                    self.count = y  # state
                    y = y * 2
                if y.max() > 0:
                    z = y.clone()
                    z.add_(1)
                    y = z
                if y.min() > 0:
                    self.seen.append(y)
                    y = y - 1
                if y.var() > 0:
                    y = y + cache
                if y.amax() > 0:
                    for i in range(2):
                        y = y * i
                if y.amin() > 0:
                    w = y * 3
                return y, w
        """
    )
    assert result.text == result.original
    assert {f.code for f in result.remaining} == {"DYN120"} and all(f.fix is None for f in result.remaining)


# --------------------------------------------------------------------------------------------
# DYN130: masking arithmetic


def test_masked_sum_becomes_where_only_when_equivalent():
    result = fixed(
        """
        import torch

        @torch.compile
        def f(x, mask: torch.Tensor):
            a = x[x > 0].sum()
            b = torch.masked_select(x, 0.5 <= x).sum()
            c = x[x > 0].mean()
            d = x[mask > 0].sum()
            e = x[x < 0].max()
            return a + b + c + d + e + 2 * x[x != 0].mean(), x[x > 1].mean(0)
        """
    )
    assert "a = torch.where(x > 0, x, 0).sum()" in result.text
    assert "b = torch.where(0.5 <= x, x, 0).sum()" in result.text
    assert "c = torch.where(x > 0, x, 0).sum() / (x > 0).sum()" in result.text
    assert "2 * (torch.where(x != 0, x, 0).sum() / (x != 0).sum())," in result.text
    # a mask from elsewhere; max of an empty selection raises; mean over a dim
    assert "d = x[mask > 0].sum()" in result.text and "e = x[x < 0].max()" in result.text
    assert "x[x > 1].mean(0)" in result.text
    assert [f.code for f in result.remaining] == ["DYN130"] * 3


def test_indices_of_a_mask_used_only_to_index_a_sum_become_where():
    result = fixed(
        """
        import torch

        @torch.compile
        def f(x, y: torch.Tensor, mask: torch.Tensor):
            a = x[torch.where(x > 0)].sum()
            b = x[(x > 0).nonzero(as_tuple=True)].sum()
            c = x[torch.nonzero(0 < x, as_tuple=True)].sum()
            d = x[torch.nonzero(x > 0)].sum()
            e = y[torch.where(x > 0)].sum()
            g = x[torch.where(mask)].sum()
            h = x[torch.where(x > 0)].mean()
            return a + b + c + d + e + g + h
        """
    )
    for name, mask in (("a", "x > 0"), ("b", "x > 0"), ("c", "0 < x")):
        assert f"    {name} = torch.where({mask}, x, 0).sum()\n" in result.text
    assert "    h = torch.where(x > 0, x, 0).sum() / (x > 0).sum()\n" in result.text
    # Index rows (no as_tuple), other values, a mask from elsewhere: no fix.
    for kept in ("x[torch.nonzero(x > 0)].sum()", "y[torch.where(x > 0)].sum()", "x[torch.where(mask)].sum()"):
        assert kept in result.text
    assert [(f.code, f.fix) for f in result.remaining] == [("DYN130", None)] * 3


# --------------------------------------------------------------------------------------------
# Every rule example: fixes parse and converge


@pytest.mark.parametrize(
    "example",
    [pytest.param(ex, id=f"{rule.code}-{i}") for rule in all_rules() for i, ex in enumerate(rule.invalid)],
)
def test_rule_examples_fix_to_parseable_code_in_one_run(example):
    import ast

    result = fix_source(example.source, "example.py", ALL, unsafe=True)
    if example.expected() == [(1, "DYN001")]:
        assert result.text == example.source  # a file that does not parse is never touched
        return
    ast.parse(result.text)
    assert not result.errors
    again = fix_source(result.text, "example.py", ALL, unsafe=True)
    assert again.text == result.text and not again.fixed


def test_fixable_rules_offer_fixes_on_their_examples():
    """Each rule that declares a fix offers one on at least one of its own invalid examples."""
    from dynalint.run.engine import lint_source
    from dynalint.lint.rule import FIX_APPLICABILITIES

    for rule in all_rules():
        if rule.fixable is None:
            continue
        offered = [
            f for ex in rule.invalid for f in lint_source(ex.source, "example.py", ALL) if f.code == rule.code and f.fix
        ]
        assert offered, rule.code
        # What a rule declares (`dynalint rules`, docs/rules.md) covers every fix it offers.
        assert {f.fix.applicability for f in offered} <= set(FIX_APPLICABILITIES[rule.fixable]), rule.code
        if rule.fixable in ("safe", "unsafe"):
            assert {f.fix.applicability for f in offered} == {rule.fixable}, rule.code


# --------------------------------------------------------------------------------------------
# The machinery: dropped fixes, convergence


def _finding(code: str, row: int, edits, applicability=SAFE) -> Finding:
    return Finding(code, "msg", "x.py", row, 1, row, 2, fix=Fix(applicability, "fix it", tuple(edits)))


def test_fix_that_would_not_parse_is_dropped_and_reported():
    text = "a = 1\nb = 2\n"

    def lint(t):
        out = []
        if "a = 1" in t:
            out.append(_finding("DYN900", 1, [Edit("a = (", 1, 1, 1, 6)]))  # broken
        if "b = 2" in t:
            out.append(_finding("DYN901", 2, [Edit("b = 3", 2, 1, 2, 6)]))  # fine
        return out

    result = fix_text(text, lint, unsafe=False)
    assert result.text == "a = 1\nb = 3\n"
    assert [f.code for f in result.fixed] == ["DYN901"]
    assert [f.code for f in result.remaining] == ["DYN900"]
    assert not result.errors  # the run goes on: a warning, not an error
    assert len(result.skipped) == 1 and "DYN900" in result.skipped[0] and "would not parse" in result.skipped[0]


def test_fix_that_never_removes_its_finding_stops():
    text = "a = 1\n"

    def lint(t):  # always the same finding: its fix inserts a line but the finding stays
        return [_finding("DYN900", 1, [Edit("# again\n", 1, 1, 1, 1)])]

    result = fix_text(text, lint, unsafe=False)
    assert result.text == "# again\na = 1\n"
    assert any("did not converge" in e for e in result.errors)


def test_overlapping_fixes_are_applied_in_later_passes():
    text = "a = 1\n"

    def lint(t):
        out = []
        if t.startswith("a"):  # rewrites the whole line
            out.append(_finding("DYN900", 1, [Edit("b = 1", 1, 1, 1, 6)]))
        if "= 1" in t:  # rewrites the value, inside the same span
            out.append(_finding("DYN901", 1, [Edit("2", 1, 5, 1, 6)]))
        return out

    result = fix_text(text, lint, unsafe=False)
    assert result.text == "b = 2\n"
    assert [f.code for f in result.fixed] == ["DYN900", "DYN901"]  # one per pass
    assert not result.remaining and not result.errors


def test_passes_are_bounded_and_the_rest_is_reported():
    rows = 20
    text = "a\n" * rows

    def lint(t):
        # Every finding's edit runs to the end of the file, so each pass can apply only one.
        lines = t.splitlines(keepends=True)
        return [
            _finding("DYN900", i, [Edit("b\n" + "".join(lines[i:]), i, 1, rows + 1, 1)])
            for i, line in enumerate(lines, 1)
            if line == "a\n"
        ]

    result = fix_text(text, lint, unsafe=False)
    n = fix_apply.MAX_PASSES
    assert result.text == "b\n" * n + "a\n" * (rows - n)
    assert len(result.fixed) == n and len(result.remaining) == rows - n
    assert result.errors == [f"fixes in x.py needed more than {n} passes; {rows - n} left for another run"]


def test_identical_edits_from_two_fixes_are_applied_once():
    text = "x\ny\n"
    shared = Edit("import torch\n", 1, 1, 1, 1)
    findings = [
        _finding("DYN900", 1, [shared, Edit("X", 1, 1, 1, 2)]),
        _finding("DYN901", 2, [shared, Edit("Y", 2, 1, 2, 2)]),
    ]
    new, applied = fix_apply.apply_edits(text, findings)
    assert new == "import torch\nX\nY\n" and len(applied) == 2


def test_line_offsets_ignore_form_feeds_and_unicode_line_separators():
    text = "a = 1\x0c\nb = '\u2028'\nc = 3\n"
    new, _ = fix_apply.apply_edits(text, [_finding("DYN900", 3, [Edit("d", 3, 1, 3, 2)])])
    assert new == "a = 1\x0c\nb = '\u2028'\nd = 3\n"


# --------------------------------------------------------------------------------------------
# Files: atomic writes keeping encoding, BOM and newlines; files changed on disk

PRINTING = "import torch\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n"
GUARDED = "import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n    return x\n"


def _check(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *map(str, args)])


def test_fix_writes_atomically_and_keeps_bom_crlf_and_encoding(tmp_path):
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + PRINTING.replace("\n", "\r\n").encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(("# -*- coding: latin-1 -*-\n" + PRINTING.replace("print(x)", "print('caf\u00e9', x)")).encode("latin-1"))
    bom.chmod(0o640)
    res = _check("--fix", tmp_path)
    assert res.exit_code == 0, res.output
    assert bom.read_bytes() == b"\xef\xbb\xbf" + GUARDED.replace("\n", "\r\n").encode()
    assert (bom.stat().st_mode & 0o777) == 0o640
    expected = "# -*- coding: latin-1 -*-\n" + GUARDED.replace("print(x)", "print('caf\u00e9', x)")
    assert latin.read_bytes() == expected.encode("latin-1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bom.py", "latin.py"]  # no temp files left
    assert "Found 2 errors (2 fixed, 0 remaining)." in res.output


def test_fixing_through_a_symlink_keeps_the_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "m.py").write_text(PRINTING)
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").symlink_to(real / "m.py")
    res = _check("--fix", src / "m.py")
    assert res.exit_code == 0, res.output
    assert (src / "m.py").is_symlink() and (real / "m.py").read_text() == GUARDED
    assert sorted(p.name for p in real.iterdir()) == ["m.py"] and sorted(p.name for p in src.iterdir()) == ["m.py"]


def test_failed_write_leaves_the_original_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(PRINTING)
    seen = []

    def failing_replace(src, dst):
        seen.append((Path(src).parent, Path(src).read_text()))  # the temp file sits next to the target
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    res = _check("--fix", path)
    assert seen == [(tmp_path, GUARDED)]
    assert path.read_text() == PRINTING
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]
    assert "cannot write" in res.output and "No space left on device" in res.output
    assert res.exit_code == 1


def test_file_changed_on_disk_while_fixing_is_not_written(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(PRINTING)
    real = fix_apply.fix_text

    def edit_meanwhile(text, lint, unsafe):
        path.write_text(PRINTING + "# edited by someone else\n")
        return real(text, lint, unsafe)

    monkeypatch.setattr(autofix, "fix_text", edit_meanwhile)
    res = _check("--fix", path)
    assert path.read_text() == PRINTING + "# edited by someone else\n"
    assert "changed on disk" in res.output
    assert res.exit_code == 1


def test_diff_writes_nothing_and_exits_1(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(PRINTING)
    res = _check("--diff", path)
    assert res.exit_code == 1
    assert "+    if not torch.compiler.is_compiling():" in res.output
    assert "Would fix 1 error (0 remaining)." in res.stderr
    assert path.read_text() == PRINTING
    path.write_text(GUARDED)
    assert _check("--diff", path).exit_code == 0


def test_output_marks_fixable_findings_and_json_fills_fix(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(PRINTING.replace("    return x", "    breakpoint()\n    return x"))
    res = _check(path)
    assert "DYN101 [*]" in res.output and "DYN102 `breakpoint" in res.output
    assert "1 more fix available with `--fix --unsafe-fixes`." in res.output
    unsafe = _check("--unsafe-fixes", path).output
    assert "DYN102 [*]" in unsafe and "[*] 2 fixable with the `--fix` option." in unsafe
    data = json.loads(_check("--output-format", "json", path).output)
    by_code = {d["code"]: d for d in data}
    fix = by_code["DYN101"]["fix"]
    assert fix["applicability"] == "safe" and fix["message"].startswith("Guard with")
    assert fix["edits"][0] == {
        "content": "    if not torch.compiler.is_compiling():\n",
        "location": {"row": 5, "column": 1},
        "end_location": {"row": 5, "column": 1},
    }
    assert by_code["DYN102"]["fix"]["applicability"] == "unsafe"


def test_fix_reports_fixed_remaining_and_unsafe_count(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(PRINTING.replace("    return x", "    breakpoint()\n    return x"))
    res = _check("--fix", path)
    assert res.exit_code == 1
    assert "Found 2 errors (1 fixed, 1 remaining)." in res.output
    assert "1 more fix available with `--fix --unsafe-fixes`." in res.output
    res = _check("--fix", "--unsafe-fixes", path)
    assert res.exit_code == 0 and "Found 1 error (1 fixed, 0 remaining)." in res.output
    assert "breakpoint" not in path.read_text()


def test_fix_keeps_findings_that_depend_on_other_files(tmp_path):
    """After fixing a helper file, its remaining findings are those the whole-project run would
    report: the helper's parameter is a tensor only because a caller in another file passes one."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(
        "import torch\n\n\n"
        "def clamp_outliers(x, limit=6.0):\n"
        "    print('clamping')\n"
        "    if x.abs().max() > limit:\n"
        "        x = x.clamp(-limit, limit)\n"
        "    return x\n"
    )
    (pkg / "model.py").write_text(
        "from torch import nn\n"
        "from .ops import clamp_outliers\n\n"
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return clamp_outliers(x * 2)\n"
    )
    before = _check("--output-format", "concise", pkg)
    assert "ops.py:5:5: DYN101" in before.output and "ops.py:6:8: DYN120" in before.output, before.output
    res = _check("--fix", "--output-format", "concise", pkg)
    fixed = (pkg / "ops.py").read_text()
    assert fixed.startswith("import torch\n\n\ndef clamp_outliers(x, limit=6.0):\n    if not torch.compiler.is_compiling():\n")
    assert "ops.py:7:8: DYN120" in res.output, res.output  # below the added guard
    assert "(1 fixed, 1 remaining)" in res.output
    assert res.exit_code == 1


# --------------------------------------------------------------------------------------------
# DYN140: the request for gradients skipped while compiling (unsafe)


def test_requires_grad_is_skipped_while_compiling_in_each_form():
    assert_fixes(
        """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, q, checkpointing: bool = False):
                h = q * 2
                bias = torch.zeros(
                    (1, q.shape[1]),
                    dtype=q.dtype,
                )
                if self.training and checkpointing:
                    bias.requires_grad = True  # for reentrant checkpointing
                leaf = torch.ones(q.shape[-1], requires_grad=checkpointing)
                off = torch.ones(q.shape[-1], requires_grad=False)
                return h + bias + leaf + off + torch.zeros_like(q).requires_grad_()
        """,
        """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, q, checkpointing: bool = False):
                h = q * 2
                bias = torch.zeros(
                    (1, q.shape[1]),
                    dtype=q.dtype,
                )
                if self.training and checkpointing:
                    if not torch.compiler.is_compiling():
                        bias.requires_grad = True  # for reentrant checkpointing
                leaf = torch.ones(q.shape[-1], requires_grad=checkpointing and not torch.compiler.is_compiling())
                off = torch.ones(q.shape[-1], requires_grad=False)
                return h + bias + leaf + off + torch.zeros_like(q).requires_grad_(not torch.compiler.is_compiling())
        """,
    )
    result = fixed(
        """
        import torch

        @torch.compile
        def f(x):
            y = x * 2
            y.requires_grad = True
            return y
        """,
        unsafe=False,
    )
    assert [f.code for f in result.remaining] == ["DYN140"]  # unsafe only


def test_requires_grad_of_a_name_bound_again_before_it_is_returned_uses_the_files_own_helper():
    # wav2vec2's feature encoder: the flagged input goes through the layers, and what is
    # returned is their output, not the flagged tensor. The guard is the file's own helper.
    assert_fixes(
        """
        import torch
        from torch import nn
        from transformers.utils import is_torchdynamo_compiling

        class Encoder(nn.Module):
            def forward(self, x):
                h = x[:, None]
                if self.training:
                    h.requires_grad = True
                for layer in self.layers:
                    h = layer(h)
                return h
        """,
        """
        import torch
        from torch import nn
        from transformers.utils import is_torchdynamo_compiling

        class Encoder(nn.Module):
            def forward(self, x):
                h = x[:, None]
                if self.training:
                    if not is_torchdynamo_compiling():
                        h.requires_grad = True
                for layer in self.layers:
                    h = layer(h)
                return h
        """,
    )


@pytest.mark.parametrize(
    "body",
    [
        # the gradient is read, or the tensor kept as state: it must need gradients
        "y = x * 2\n    w = torch.ones(4, requires_grad=True)\n    (y * w).sum().backward()\n    return w.grad",
        "w = x * 2\n    w.requires_grad = True\n    return torch.autograd.grad(w.sum(), [w])",
        "y = x * 2\n    w = torch.ones(4).requires_grad_()\n    self.cache = w\n    return y * w",
        "y = x * 2\n    w = torch.ones(4, requires_grad=True)\n    p = torch.nn.Parameter(w)\n    return y * p",
        # returned as it is: the caller may want its gradient (an explainer's edge mask)
        "y = x * 2\n    return torch.ones(y.shape[0], requires_grad=True)",
        "y = x * 2\n    w = torch.ones(4).requires_grad_()\n    return y, w",
        "y = x * 2\n    z = y.requires_grad_()\n    return z",  # returns y itself, as z
        # turning the flag off: Dynamo breaks on the setattr whatever the value; skipping it
        # would leave the tensor needing gradients
        "y = x * 2\n    y.requires_grad = False\n    return y + 1",
        # a parameter (the caller's tensor), differentiated here with `grad` imported bare
        "x.requires_grad_(True)\n    y = (x * 2).sum()\n    return grad(y, [x])[0]",
        # module parameters reached through a loop (PyG's GraphMask explainer enabling its gates)
        "for p in self.gates.parameters():\n        p.requires_grad = True\n    return x * 2",
        "for name, p in self.named_parameters():\n        p.requires_grad = name != 'bias'\n    return x * 2",
    ],
)
def test_requires_grad_whose_gradient_is_used_gets_no_fix(body):
    code = "import torch\n\n@torch.compile\ndef f(self, x):\n    " + body + "\n"
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert not [f for f in result.fixed if f.code == "DYN140"]
    assert [f for f in result.remaining if f.code == "DYN140"]


def test_requires_grad_for_a_gradient_taken_in_a_helper_gets_no_fix():
    # WGAN-GP style: the interpolate needs gradients because a helper differentiates with
    # respect to it.
    code = textwrap.dedent(
        """
        import torch
        from torch import nn
        from torch.autograd import grad

        class Critic(nn.Module):
            def _penalty(self, x):
                out = self.net(x).sum()
                return grad(out, x, create_graph=True)[0].norm()

            def forward(self, real, fake):
                alpha = torch.rand(real.shape[0], 1)
                mixed = alpha * real + (1 - alpha) * fake
                mixed.requires_grad_(True)
                return self._penalty(mixed)
        """
    ).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert [f.row for f in result.remaining if f.code == "DYN140"] == [13]


def test_requires_grad_of_module_state_gets_no_fix():
    code = textwrap.dedent(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("w", torch.ones(4))

            def forward(self, x):
                y = x * 2
                self.w.requires_grad = True
                loss = self.w  # an alias of the buffer: the flag would stay on it
                loss.requires_grad_()
                return y * self.w + loss
        """
    ).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert [f.row for f in result.remaining if f.code == "DYN140"] == [11, 13]


def test_requires_grad_of_a_returned_tensor_through_a_conversion_gets_no_fix():
    """PyG's equilibrium aggregation: `init_output` returns `torch.zeros(..., requires_grad=True)
    .float()` (the tensor itself: `.float()` of a float tensor), and the solver differentiates
    against it. Skipping the flag while compiling would break that: no fix."""
    code = textwrap.dedent(
        """
        import torch
        from torch import nn

        class Equilibrium(nn.Module):
            def init_output(self, n: int):
                return torch.zeros(n, 4, requires_grad=True).float()

            def forward(self, x):
                y = self.init_output(x.shape[0])
                return x + y
        """
    ).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert [f.row for f in result.remaining if f.code == "DYN140"] == [6]
    assert not [f for f in result.fixed if f.code == "DYN140"]


def test_requires_grad_of_a_leaf_built_into_an_object_gets_no_fix():
    """chgnet's graph converter builds `atom_frac_coord` with `requires_grad=True` into a
    `CrystalGraph` that the model differentiates against (forces): no fix; a leaf used only by
    a torch function in the same function keeps its fix."""
    code = textwrap.dedent(
        """
        import torch
        from torch import nn

        class Converter(nn.Module):
            def forward(self, coords):
                frac = torch.tensor(coords, dtype=torch.float32, requires_grad=True)
                lattice = torch.eye(3, requires_grad=True)
                return CrystalGraph(frac=frac, volume=torch.det(lattice))
        """
    ).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert [f.row for f in result.remaining if f.code == "DYN140"] == [6]
    assert [f.row for f in result.fixed if f.code == "DYN140"] == [7]


def test_requires_grad_of_a_tensor_returned_through_a_conversion_gets_no_fix():
    """braindecode's `np_to_th`: the tensor is returned, through `X_tensor = X_tensor.pin_memory()`
    (the same tensor, or a copy that keeps the flag), so the caller gets what it asked for: no
    fix."""
    code = textwrap.dedent(
        """
        import torch

        @torch.compile
        def np_to_th(X, requires_grad=False, pin_memory=False):
            X_tensor = torch.tensor(X, requires_grad=requires_grad)
            if pin_memory:
                X_tensor = X_tensor.pin_memory()
            return X_tensor

        @torch.compile
        def g(x):
            t = torch.zeros(3, requires_grad=True)
            if x.shape[0] > 2:
                t = t.float()
            return t
        """
    ).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert sorted(f.row for f in result.remaining if f.code == "DYN140") == [5, 12]
    assert not [f for f in result.fixed if f.code == "DYN140"]


def test_requires_grad_on_an_old_torch_path_or_without_a_torch_import_gets_no_fix():
    code = textwrap.dedent(
        """
        import torch

        @torch.compile
        def f(x):
            y = x * 2
            if not hasattr(torch.compiler, "is_compiling"):
                y.requires_grad = True
            return y + torch.zeros_like(y).requires_grad_()
        """
    ).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert [f.row for f in result.remaining if f.code == "DYN140"] == [7]
    # No module-level torch import: an expression cannot take the guard's local import.
    code = textwrap.dedent(
        """
        def f(torch, x):
            return x + torch.zeros_like(x).requires_grad_()
        """
    ).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    assert not [f for f in result.fixed if f.code == "DYN140"]


# --------------------------------------------------------------------------------------------
# Host-side helpers: `@torch.compiler.disable` (DYN105 / DYN110 / DYN120 / DYN130 without a fix of their own)


def test_host_side_helper_is_disabled_below_its_other_decorators():
    assert_fixes(
        """
        import numpy as np
        import torch
        from torch import nn

        class Sparse(nn.Module):
            @staticmethod
            def _plan(n, k):
                perm = np.random.permutation(n)
                if perm[0] > 1:
                    perm = perm[::-1]
                return perm[:k].copy()

            def forward(self, x):
                return x[:, torch.from_numpy(self._plan(x.shape[-1], 2))]
        """,
        """
        import numpy as np
        import torch
        from torch import nn

        class Sparse(nn.Module):
            @staticmethod
            @torch.compiler.disable
            def _plan(n, k):
                perm = np.random.permutation(n)
                if perm[0] > 1:
                    perm = perm[::-1]
                return perm[:k].copy()

            def forward(self, x):
                return x[:, torch.from_numpy(self._plan(x.shape[-1], 2))]
        """,
    )


def test_helper_whose_break_some_calls_skip_is_not_disabled():
    # BigBird's planning returns early in eval mode, where Dynamo traces it whole: disabled, every
    # eval call would gain a break (measured on an H100, torch 2.11: 1 graph -> 15).
    code = """
        import numpy as np
        import torch
        from torch import nn


        class Sparse(nn.Module):
            def _plan(self, n):
                out = np.zeros(n, dtype=np.int64)
                if not self.training:
                    return out
                return np.random.permutation(n)

            def _coin(self, n):
                if self.training and np.random.permutation(2)[0] > 0:
                    return n - 1
                return n

            def _loop(self, n):
                for _ in range(2):
                    n = np.random.permutation(n)
                return n

            def _always(self, n):
                if n < 1:
                    raise ValueError("n")
                return np.random.permutation(n)

            def forward(self, x):
                idx = self._plan(4) + self._loop(4) + self._always(4)
                return x[:, torch.from_numpy(idx)] * self._coin(3)
        """
    result = fixed(code)
    assert result.text.count("@torch.compiler.disable") == 1, result.text
    assert "@torch.compiler.disable\n    def _always(" in result.text
    # nor split after its return: the break is the last thing the rest does (nothing to gain)
    assert "_plan_outside_graph" not in result.text
    assert {f.row for f in result.remaining if f.code == "DYN105"} == {11, 14, 20}


# What a helper does after an early return: moved into a disabled function (fixes/disable_tail.py)

SPLIT_PLANNER = """
    import numpy as np
    import torch
    from torch import nn


    class Planner(nn.Module):
        @staticmethod
        def _row(n, k):
            perm = np.arange(n)
            if k > 1:
                perm = np.random.permutation(perm)
            return perm[:k]

        def plan(self, n, k, *extra, window=1, **options):
            out = np.zeros((4, k), dtype=np.int64)
            if not self.training:
                return out
            # random rows, as many as the plan has
            for r in range(4):
                if r % window == 0:
                    out[r] = self._row(n, k)
                if out[r, 0] > n:
                    out[r] = 0
            return out

        def forward(self, x):
            h = x * 2
            idx = torch.from_numpy(self.plan(x.shape[-1], 2))
            return h[:, idx]
    """


def test_rest_of_a_helper_after_its_early_return_runs_outside_the_graph():
    # BigBird's random-attention planning: zeros in eval mode (traced), random rows in train mode
    # from a helper that breaks; the rest moves out, the eval path stays (comments go with it).
    # Measured on torch 2.13: train 4 graphs -> 3, eval 1 -> 1 (test_fixes_dynamo).
    result = fixed(SPLIT_PLANNER)
    assert not result.errors
    assert """
        if not self.training:
            return out
        return self._plan_outside_graph(n, k, extra, window, options, out)

    @torch.compiler.disable
    def _plan_outside_graph(self, n, k, extra, window, options, out):
        # random rows, as many as the plan has
        for r in range(4):
            if r % window == 0:
                out[r] = self._row(n, k)
            if out[r, 0] > n:
                out[r] = 0
        return out

    def forward(self, x):""" in result.text, result.text
    again = fix_source(result.text, "example.py", ALL, unsafe=True)
    assert again.text == result.text


def test_split_helpers_as_static_methods_and_module_functions():
    code = """
        import numpy as np
        import torch


        def plan(n, training):
            out = np.zeros(n, dtype=np.int64)
            if not training:
                return out
            perm = np.random.permutation(np.arange(n))
            out[:] = perm
            return out


        class Net(torch.nn.Module):
            @staticmethod
            def spread(n, training):
                out = np.zeros(n, dtype=np.int64)
                if not training:
                    return out
                perm = np.random.permutation(np.arange(n))
                out[:] = perm * 2
                return out

            def forward(self, x):
                h = x * 2
                idx = plan(4, self.training) + self.spread(4, self.training)
                return h[:, torch.from_numpy(idx)]
        """
    result = fixed(code)
    assert """
        return out
    return _plan_outside_graph(n, training, out)


@torch.compiler.disable
def _plan_outside_graph(n, training, out):
    perm = np.random.permutation(np.arange(n))""" in result.text, result.text
    assert """
            return out
        return Net._spread_outside_graph(n, training, out)

    @staticmethod
    @torch.compiler.disable
    def _spread_outside_graph(n, training, out):""" in result.text, result.text


def test_helpers_whose_rest_cannot_move_are_not_split():
    code = """
        import numpy as np
        import torch
        from torch import nn


        class Net(nn.Module):
            def only_in_a_loop(self, n):
                out = np.zeros(n, dtype=np.int64)
                if not self.training:
                    return out
                for r in range(2):  # Dynamo gives up on the frame here anyway: nothing to gain
                    out[r] = np.random.permutation(n)[0]
                return out

            def last_statement(self, n):
                out = np.zeros(n, dtype=np.int64)
                if not self.training:
                    return out
                return np.random.permutation(np.arange(n))

            def bound_in_a_branch(self, n):
                if n > 2:
                    out = np.zeros(n, dtype=np.int64)
                if not self.training:
                    return None
                perm = np.random.permutation(np.arange(n))
                out[:] = perm
                return out

            def imported_in_a_branch(self, n):
                out = np.zeros(n, dtype=np.int64)
                if n > 2:
                    import random
                if not self.training:
                    return out
                perm = np.random.permutation(np.arange(n))
                out[:] = perm + random.randint(0, 1)
                return out

            def makes_tensors(self, n):
                out = np.zeros(n, dtype=np.int64)
                if not self.training:
                    return out
                perm = np.random.permutation(np.arange(n))
                return torch.as_tensor(perm) * 2

            def tensor_guard(self, x, n):
                out = np.zeros(n, dtype=np.int64)
                if x.sum() > 0:
                    return out
                perm = np.random.permutation(np.arange(n))
                out[:] = perm
                return out

            def taken(self, n):
                out = np.zeros(n, dtype=np.int64)
                if not self.training:
                    return out
                perm = np.random.permutation(np.arange(n))
                out[:] = perm
                return out

            def _taken_outside_graph(self):
                return None

            def forward(self, x):
                y = self.only_in_a_loop(4) + self.last_statement(4) + self.bound_in_a_branch(4)
                y = y + self.makes_tensors(4).numpy() + self.tensor_guard(x, 4) + self.taken(4)
                y = y + self.imported_in_a_branch(4)
                return x[:, torch.from_numpy(y)]
        """
    result = fixed(code)
    assert "_outside_graph(" not in result.text.replace("def _taken_outside_graph(self):", ""), result.text
    assert "compiler.disable" not in result.text, result.text


def test_helper_reading_a_tensor_argument_back_to_python_is_disabled():
    # wav2vec2's SpecAugment planning: the mask is read back at once (`.tolist()`), the rest is NumPy.
    code = """
        import numpy as np
        import torch
        from torch import nn


        def spans(shape, mask: torch.Tensor | None = None):
            eps = np.random.rand(1).item()
            lengths = mask.detach().sum(-1).tolist() if mask is not None else [shape[1]] * shape[0]
            return np.stack([np.random.choice(n, 2, replace=False) for n in lengths])


        def scaled(shape, mask: torch.Tensor):
            eps = np.random.rand(1).item()
            lengths = (mask * 2).sum(-1).tolist()
            return np.stack([np.random.choice(n, 2, replace=False) for n in lengths])


        class Net(nn.Module):
            def forward(self, x, attention_mask=None):
                idx = spans(x.shape, mask=attention_mask) + scaled(x.shape, mask=attention_mask)
                return x[:, torch.from_numpy(idx[0])]
        """
    result = fixed(code)
    assert "@torch.compiler.disable\ndef spans(" in result.text
    assert "@torch.compiler.disable\ndef scaled(" not in result.text  # the mask is computed with first


def test_helpers_that_work_on_tensors_or_start_compiling_are_not_disabled():
    code = """
        import numpy as np
        import torch
        from torch import nn

        def on_tensor(t):
            return t[np.random.permutation(4)]

        def makes_tensor(n):
            order = np.random.permutation(n)
            return torch.as_tensor(order) * 2

        @torch.compiler.disable
        def already(n):
            return np.random.permutation(n)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("scale", torch.ones(4))

            def reads_buffer(self, n):
                order = np.random.permutation(n)
                return self.scale[order]

            def calls_submodule(self, n):
                return self.proj(np.random.permutation(n))

            def forward(self, x):
                y = on_tensor(x) + makes_tensor(4) + self.reads_buffer(4) + self.calls_submodule(4)
                y = y + torch.from_numpy(already(4))
                return y * np.random.permutation(4)[0]
        """
    result = fixed(code)
    reported = {f.row for f in result.remaining if f.code == "DYN105"}
    assert len(reported) >= 5, result.remaining
    assert "compiler.disable" not in result.text.replace("@torch.compiler.disable\ndef already", "")
    assert not result.fixed


def test_host_side_helper_in_a_file_without_a_torch_import_is_not_disabled(tmp_path):
    # plan.py must import without torch: no decorator there (it would need `import torch`).
    (tmp_path / "plan.py").write_text(
        "import numpy as np\n\n\ndef plan(n):\n    perm = np.random.permutation(n)\n    return perm[:2].copy()\n"
    )
    (tmp_path / "net.py").write_text(
        "import torch\nfrom torch import nn\n\nfrom plan import plan\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return x[:, torch.from_numpy(plan(4))]\n"
    )
    res = _check(tmp_path, "--unsafe-fixes")
    assert "plan.py:5:12: DYN105" in res.output and "DYN105 [*]" not in res.output, res.output
    assert "compiler.disable" not in _check(tmp_path, "--unsafe-fixes", "--diff").output
    # The same helper beside the module that calls it gets the decorator.
    (tmp_path / "net.py").write_text(
        "import numpy as np\nimport torch\nfrom torch import nn\n\n\n"
        "def plan(n):\n    perm = np.random.permutation(n)\n    return perm[:2].copy()\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return x[:, torch.from_numpy(plan(4))]\n"
    )
    (tmp_path / "plan.py").unlink()
    res = _check(tmp_path, "--unsafe-fixes", "--diff")
    assert "+@torch.compiler.disable\n def plan(n):" in res.output, res.output


# --------------------------------------------------------------------------------------------
# DYN106: NumPy math on Python numbers


def test_numpy_math_on_python_numbers_becomes_math_and_imports_it():
    assert_fixes(
        """
        import numpy as np
        import torch
        from torch import nn


        def chunk_multiple(config):
            return np.lcm(config.a, config.b)


        class M(nn.Module):
            def forward(self, x, sizes=(1, 2)):
                n = chunk_multiple(self.config)
                width = np.sum(list(sizes))
                out = x.new_zeros((x.shape[0], width))
                flat = x.reshape(x.shape[0], np.prod(x.shape[1:]))
                return out, flat.repeat(1, n)
        """,
        """
        import numpy as np
        import torch
        from torch import nn
        import math


        def chunk_multiple(config):
            return math.lcm(config.a, config.b)


        class M(nn.Module):
            def forward(self, x, sizes=(1, 2)):
                n = chunk_multiple(self.config)
                width = sum(list(sizes))
                out = x.new_zeros((x.shape[0], width))
                flat = x.reshape(x.shape[0], math.prod(x.shape[1:]))
                return out, flat.repeat(1, n)
        """,
    )


def test_numpy_math_on_arrays_or_only_in_tensor_arithmetic_is_left_alone():
    code = """
        import numpy as np
        import torch

        @torch.compile
        def f(x, a=4, b=6):
            steps = np.arange(1, 4)
            scale = np.prod(steps)
            return x * np.lcm(a, b) * scale
        """
    result = fixed(code)
    assert not [f for f in result.fixed + result.remaining if f.code == "DYN106"]


BUFFER_MODULE = """
import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = nn.Buffer(torch.zeros(4))

    def forward(self, x):
{body}
{other}"""


@pytest.mark.parametrize(
    "body,other",
    [
        # in a branch: later reads may see either tensor
        ("        if x.dim() > 1:\n            self.pe = self.pe.to(x.dtype)\n        return x + self.pe", ""),
        # stored again in the same function
        ("        self.pe = self.pe.to(x.dtype)\n        y = x + self.pe\n        self.pe = self.pe.float()\n        return y", ""),
        # read by a closure that may run later
        ("        self.pe = self.pe.to(x.dtype)\n        f = lambda: self.pe\n        return x + f()", ""),
        # another method reads the converted buffer
        ("        self.pe = self.pe.to(x.dtype)\n        return self.scale(x)", "\n    def scale(self, x):\n        return x * self.pe\n"),
        # the local name is taken
        ("        pe = 2\n        self.pe = self.pe.to(x.dtype)\n        pe_local = 3\n        return x + self.pe * pe + pe_local", ""),
    ],
)
def test_buffer_conversion_gets_no_local_variable_fix_when_other_code_may_read_the_attribute(body, other):
    result = fixed(BUFFER_MODULE.format(body=body, other=other))
    assert not [f for f in result.fixed if f.code == "DYN142"], result.text
    assert [f for f in result.remaining if f.code == "DYN142"]


def test_buffer_conversion_fix_renames_every_later_read_and_keeps_earlier_ones():
    body = (
        "        n = self.pe.numel()\n"
        "        self.pe = self.pe.to(x.dtype)  # keep this comment\n"
        "        if n > 2:\n"
        "            x = x * self.pe\n"
        "        return x + self.pe[:n]"
    )
    other = "\n    def reset(self):\n        self.pe = torch.zeros(4)\n"
    result = fixed(BUFFER_MODULE.format(body=body, other=other))
    assert "        n = self.pe.numel()\n        pe = self.pe.to(x.dtype)  # keep this comment\n" in result.text
    assert "x = x * pe\n" in result.text and "return x + pe[:n]" in result.text
    assert [f.code for f in result.fixed] == ["DYN142"] and result.fixed[0].fix.applicability == "unsafe"
    assert not fixed(BUFFER_MODULE.format(body=body, other=other), unsafe=False).fixed


EXPERT_LOOP = """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, weights, chosen):
        mask = nn.functional.one_hot(chosen, 3).permute(2, 1, 0)
        out = torch.zeros_like(x)
        hit = (mask.sum(dim=(-1, -2)) > 0).nonzero()
        for e in hit:
            slot, tok = torch.where(mask[e].squeeze(0))
            {body}
        return out
"""


def _expert_loop(body: str) -> str:
    return EXPERT_LOOP.replace("{body}", body.strip().replace("\n", "\n            "))


def test_expert_loop_becomes_dense_dispatch():
    assert_fixes(
        _expert_loop("""
y = self.experts[e[0]](x[tok]) * weights[tok, slot, None]  # weighted rows
out.index_add_(0, tok, y)
"""),
        _expert_loop("""
y = self.experts[e[0]](x) * torch.einsum("tk...,kt->t...", weights, routing_mask.to(weights.dtype))[:, None]  # weighted rows
out.add_(y)
""").replace("slot, tok = torch.where(mask[e].squeeze(0))", "routing_mask = mask[e].squeeze(0) != 0")
        .replace("hit = (mask.sum(dim=(-1, -2)) > 0).nonzero()", "hit = (mask.sum(dim=(-1, -2)) > 0)")
        .replace("for e in hit:", "for e in [[e] for e in range(hit.shape[0])]:"),
    )


@pytest.mark.parametrize(
    "body",
    [
        # Weighted after the scatter: the unrouted tokens would add the expert's full output.
        "y = self.experts[e[0]](x[tok])\nout.index_add_(0, tok, y * 1.0)",
        "y = self.experts[e[0]](x[tok])\nout.index_add_(0, tok, y)\nout = out * weights.sum()",
        # The weight goes into the expert (a nonlinear function of it).
        "y = self.experts[e[0]](x[tok] * weights[tok, slot, None])\nout.index_add_(0, tok, y)",
        # The count of routed tokens is used.
        "y = self.experts[e[0]](x[tok]) * weights[tok, slot, None] / len(tok)\nout.index_add_(0, tok, y)",
        # The loop variable is used as a number.
        "y = self.experts[e.item()](x[tok]) * weights[tok, slot, None]\nout.index_add_(0, tok, y)",
        # Scattered along another dimension.
        "y = self.experts[e[0]](x[tok]) * weights[tok, slot, None]\nout.index_add_(1, tok, y)",
    ],
)
def test_expert_loop_that_is_not_row_dispatch_gets_no_dense_fix(body):
    source = _expert_loop(body)
    result = fix_source(source, "m.py", ALL, unsafe=True)
    assert "einsum" not in result.text and "range(hit" not in result.text, result.text


def test_expert_loop_with_the_routing_under_no_grad_becomes_dense_dispatch():
    # DBRX-style: `with torch.no_grad():` around the one-argument where.
    source = _expert_loop("""
y = self.experts[e[0]](x[tok]) * weights[tok, slot, None]
out.index_add_(0, tok, y)
""").replace("            slot, tok = torch.where(mask[e].squeeze(0))\n",
             "            with torch.no_grad():\n                slot, tok = torch.where(mask[e].squeeze(0))\n")
    result = fix_source(source, "m.py", ALL, unsafe=True)
    assert "with torch.no_grad():\n                routing_mask = mask[e].squeeze(0) != 0\n" in result.text, result.text
    assert "out.add_(y)" in result.text and "range(hit.shape[0])" in result.text, result.text


def test_expert_loop_over_a_class_past_the_last_expert_needs_its_skip():
    # one_hot(..., num_classes=n + 1): the extra class is never routed to an expert; the dense loop
    # visits it, so `if e == n: continue` must be there (mistral4) or the fix is refused (DBRX).
    body = "y = self.experts[e](x[tok]) * weights[tok, slot, None]\nout.index_add_(0, tok, y)"
    source = _expert_loop(body).replace("one_hot(chosen, 3)", "one_hot(chosen, num_classes=self.n + 1)") \
        .replace("        for e in hit:\n", "        for e in hit:\n            e = e[0]\n")
    result = fix_source(source, "m.py", ALL, unsafe=True)
    assert "range(hit" not in result.text, result.text
    guarded = source.replace("            e = e[0]\n", "            e = e[0]\n            if e == self.n:\n                continue\n")
    result = fix_source(guarded, "m.py", ALL, unsafe=True)
    assert "range(hit.shape[0])" in result.text and "if e == self.n:" in result.text, result.text


def _range_init(chain: str) -> str:
    return range_observer(chain)


def test_tensor_if_heading_an_elif_chain_of_assignments_becomes_where_after_the_chain():
    assert_fixes(
        _range_init("""
            # first call: take the range as it is
            if self.lo.min() > -1e-5 and self.hi.max() < 1e-5:  # all zeros
                self.lo = self.lo + lo
                self.hi = self.hi + hi
            # moving average
            elif self.momentum == -1:
                self.lo = torch.min(self.lo, lo)
                self.hi = torch.max(self.hi, hi)
            else:
                self.lo = self.lo * self.momentum + lo * (1 - self.momentum)
                self.hi = self.hi * self.momentum + hi * (1 - self.momentum)
        """),
        _range_init("""
            # first call: take the range as it is
            taken = (self.lo.min() > -1e-5) & (self.hi.max() < 1e-5)  # all zeros
            lo_if_taken = self.lo + lo
            hi_if_taken = self.hi + hi
            # moving average
            if self.momentum == -1:
                self.lo = torch.min(self.lo, lo)
                self.hi = torch.max(self.hi, hi)
            else:
                self.lo = self.lo * self.momentum + lo * (1 - self.momentum)
                self.hi = self.hi * self.momentum + hi * (1 - self.momentum)
            self.lo = torch.where(taken, lo_if_taken, self.lo)
            self.hi = torch.where(taken, hi_if_taken, self.hi)
        """),
    )


def test_tensor_if_else_of_several_assignments_dedents_the_else_arm():
    assert_fixes(
        _range_init("""
            if lo > self.lo.max():
                self.lo = lo + 0
                self.hi = hi + 0
            else:
                # widen the range
                self.lo = lo * 2
                self.hi = hi * 2
            x = x * self.hi + self.lo
        """),
        _range_init("""
            taken = lo > self.lo.max()
            lo_if_taken = lo + 0
            hi_if_taken = hi + 0
            # widen the range
            self.lo = lo * 2
            self.hi = hi * 2
            self.lo = torch.where(taken, lo_if_taken, self.lo)
            self.hi = torch.where(taken, hi_if_taken, self.hi)
            x = x * self.hi + self.lo
        """),
    )


@pytest.mark.parametrize(
    "chain",
    [
        # An arm with another effect would now run on every call.
        "if lo > self.lo.max():\n    self.lo = lo\n    self.hi = hi\nelse:\n    print('keep')\n    self.lo = self.lo\n    self.hi = self.hi",
        # No final else: a target may be unbound.
        "if lo > self.lo.max():\n    self.lo = lo\n    self.hi = hi\nelif self.momentum > 0:\n    self.lo = self.lo\n    self.hi = self.hi",
        # An arm leaves a target out.
        "if lo > self.lo.max():\n    self.lo = lo\n    self.hi = hi\nelse:\n    self.lo = self.lo * 2\n    self.hi = self.hi * 2\n    self.lo = self.lo * 2 + 1",
        # The first arm reads what it assigned before.
        "if lo > self.lo.max():\n    self.lo = lo\n    self.hi = self.lo + 1\nelse:\n    self.lo = self.lo * 2\n    self.hi = self.hi * 2",
        # A tensor `elif` test breaks on its own.
        "if lo > self.lo.max():\n    self.lo = lo\n    self.hi = hi\nelif hi > 0:\n    self.lo = self.lo\n    self.hi = self.hi\nelse:\n    self.lo = lo\n    self.hi = hi",
        # The arms' values may differ in shape.
        "if lo > self.lo.max():\n    self.lo = x.sum(0)\n    self.hi = hi\nelse:\n    self.lo = self.lo\n    self.hi = self.hi",
        # `or` with a Python operand: short-circuit evaluation matters.
        "if self.momentum is None or lo > self.lo.max():\n    self.lo = lo\n    self.hi = hi\nelse:\n    self.lo = self.lo\n    self.hi = self.hi",
    ],
)
def test_tensor_if_chain_that_is_not_plain_assignments_gets_no_select_fix(chain):
    result = fixed(_range_init(chain))
    assert "_if_taken" not in result.text, result.text


def test_masked_in_place_update_becomes_copy_of_a_where():
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x, labels, bias):
            x[x > 0] += 1
            x[labels == 2] -= bias.weight  # leading dimensions only
            return x
        """,
        """
        import torch

        @torch.compile
        def f(x, labels, bias):
            x.copy_(torch.where(x > 0, x + 1, x))
            update_mask = labels == 2
            x.copy_(torch.where(update_mask.reshape(update_mask.shape + (1,) * (x.dim() - update_mask.dim())), x - bias.weight, x))  # leading dimensions only
            return x
        """,
    )


@pytest.mark.parametrize("update", ["x[m] += x[m] * 2", "x[m] += y[y > 0].sum()", "x[m] += next(it)", "x[m] **= 2",
                                    # a value of the selected rows, through a name (botorch's Penicillin)
                                    "step = y[m] * 0.1\n            x[m] += step"])
def test_masked_update_whose_value_depends_on_the_selection_gets_no_fix(update):
    result = fixed(f"""
        import torch

        @torch.compile
        def f(x, y, it):
            m = x > 0
            {update}
            return x
        """)
    assert "copy_" not in result.text, result.text


def test_math_on_a_one_number_tensor_read_back_becomes_python_math():
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x, s: float):
            scale = 2 ** float(torch.tensor(s).log2().round())
            level = -torch.log2(torch.tensor(s * 2, dtype=torch.float32)).item()
            return x * scale + level
        """,
        """
        import torch
        import math

        @torch.compile
        def f(x, s: float):
            scale = 2 ** float(round(math.log2(s)))
            level = -math.log2(s * 2)
            return x * scale + level
        """,
    )


@pytest.mark.parametrize(
    "expr",
    [
        "torch.tensor(x).log2().item()",  # x is a tensor
        "torch.tensor([s, s]).sum().item()",  # a list
        "torch.tensor(s, dtype=torch.float16).log2().item()",  # half precision rounds differently
        "torch.tensor(s).sin().item()",  # no counterpart listed
        "torch.tensor(s, requires_grad=True).log2().item()",
    ],
)
def test_tensor_math_that_is_not_on_plain_numbers_gets_no_python_math_fix(expr):
    result = fixed(f"""
        import torch

        @torch.compile
        def f(x, s: float):
            return x * {expr}
        """)
    assert "math." not in result.text, result.text


# LayerDrop's draw tested against a probability of 0 (fixes/uniform_draw.py)


def test_layerdrop_draw_gets_a_probability_test_first_and_is_then_clean():
    code = """
        import torch
        from torch import nn


        class Enc(nn.Module):
            def forward(self, x):
                for layer in self.layers:
                    if self.training:
                        dropout_probability = torch.rand([])
                        if dropout_probability < self.layerdrop:  # skip the layer
                            continue
                    if self.training and (dropout_probability < self.config.layerdrop):
                        continue
                    if not self.p_keep > dropout_probability:
                        x = layer(x)
                return x
        """
    assert_fixes(code, """
        import torch
        from torch import nn


        class Enc(nn.Module):
            def forward(self, x):
                for layer in self.layers:
                    if self.training:
                        dropout_probability = torch.rand([])
                        if self.layerdrop > 0 and dropout_probability < self.layerdrop:  # skip the layer
                            continue
                    if self.training and (self.config.layerdrop > 0 and dropout_probability < self.config.layerdrop):
                        continue
                    if not (self.p_keep > 0 and self.p_keep > dropout_probability):
                        x = layer(x)
                return x
        """, unsafe=False)
    result = fixed(code, unsafe=False)
    assert all(f.fix.applicability == "safe" for f in result.fixed) and len(result.fixed) == 3
    # Still a break when the probability is positive: reported, with its own message, no fix.
    left = [f for f in result.remaining if f.code == "DYN120"]
    assert len(left) == 3 and all("when `" in f.message and f.fix is None for f in left), left


def test_tensor_test_deciding_an_early_exit_without_a_fix_says_what_to_do():
    # vector_quantize's `if self.initted: return` (a buffer flag), its `if not torch.any(...):
    # return`, LayerDrop's inline draw: neither torch.where nor torch.cond can leave a function or
    # loop, so "use torch.where or torch.cond" alone would not help.
    code = """
        import torch
        from torch import nn


        class VQ(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("initted", torch.tensor(False))

            def init_embed_(self, data):
                if self.initted:
                    return
                self.initted.fill_(True)

            def forward(self, x):
                self.init_embed_(x)
                if not torch.any(x < 1):
                    return x
                for layer in self.layers:
                    if self.training and torch.rand(1) < self.p:
                        continue
                    if (x < 0).all():
                        break
                    x = layer(x)
                while x.abs().max() > 1:
                    x = x / 2
                if x.sum() > 0:
                    x = x * 2
                return x
        """
    result = fixed(code)
    messages = {f.row: f.message for f in result.remaining if f.code == "DYN120"}
    assert messages[25].startswith("`while` on a tensor value breaks the graph: run a fixed number"), messages
    assert "decides an early `return`" in messages[11] and "Python bool kept beside" in messages[11]
    assert "decides an early `return`" in messages[17]
    assert "skip the rest of the loop body" in messages[20], messages
    assert "leave the loop" in messages[22], messages
    # With a fix (torch.where for the last `if`), the general message.
    assert [f.message for f in result.fixed if f.code == "DYN120"] == [
        "`if` on a tensor value breaks the graph; use `torch.where` or `torch.cond`"]


def test_a_read_back_value_deciding_a_branch_without_a_fix_says_what_to_do():
    # Longformer's `is_global_attn = ....any().item()` (passed down as a flag), a count tested
    # later, reads in a test, `bool()`; not a read inside a loop body that only feeds arithmetic.
    code = """
        import torch
        from torch import nn


        class Enc(nn.Module):
            def forward(self, x, mask):
                is_global_attn = mask.flatten().any().item()
                k = (x > 0).sum().item()
                if k > 3:
                    x = x * 2
                while x.max().item() > 10:
                    x = x / 2
                    self.last = x.mean().item()
                if bool(x.sum() > 0):
                    x = x + 1
                size = None
                if size is None:  # an identity check decides nothing by value
                    size = x.max().long().item()
                return self.layer(x, is_global_attn) + torch.arange(size)
        """
    result = fixed(code)
    messages = {f.row: f.message for f in result.remaining if f.code == "DYN110"}
    assert "decides a Python branch" not in messages[18], messages
    branch = {row for row, m in messages.items() if "decides a Python branch" in m}
    assert branch == {7, 8, 11, 14}, messages
    assert "pass it in as a Python value" in messages[7]
    assert messages[13] == "`.item()` reads a tensor value and breaks the graph; keep it a tensor or return it"


def test_draw_comparisons_that_are_not_certain_at_zero_are_left_alone():
    code = """
        import torch
        from torch import nn


        class Enc(nn.Module):
            def forward(self, x, draw, p: torch.Tensor):
                d = torch.rand([])
                if d <= self.layerdrop:  # a draw can be exactly 0
                    x = x + 1
                if draw < self.layerdrop:  # a parameter: not known to be a draw
                    x = x + 2
                if torch.rand([]) < self.layerdrop:  # guarding would skip the draw itself
                    x = x + 3
                if d < p:  # a tensor probability
                    x = x + 4
                e = torch.rand([])
                e = e * 2  # no longer in [0, 1)
                if e < self.layerdrop:
                    x = x + 5
                if d < self.probs[0]:  # not a plain name or attribute
                    x = x + 6
                return x
        """
    result = fixed(code, unsafe=False)
    assert "> 0 and" not in result.text, result.text
    assert len([f for f in result.remaining if f.code == "DYN120"]) == 6


def test_item_in_an_asserted_comparison_is_dropped_and_only_there():
    code = """
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, x, lengths: torch.Tensor, slen: int):
                assert lengths.max().item() <= slen, "too long"
                assert slen >= float(lengths.min())
                assert 0 <= lengths.max().item() <= slen  # chained: Python takes the truth
                assert lengths.max().item() <= slen and slen > 0  # `and`: the same
                assert int(lengths.max()) <= slen  # int() truncates: not the same test
                return x
        """
    result = fixed(code)
    assert '    assert lengths.max() <= slen, "too long"\n' in result.text, result.text
    assert "    assert slen >= lengths.min()\n" in result.text, result.text
    assert "assert 0 <= lengths.max().item() <= slen" in result.text
    assert "assert lengths.max().item() <= slen and" in result.text
    assert "assert int(lengths.max()) <= slen" in result.text


# LayerDrop with a positive probability as a select (fixes/layer_drop.py)

LAYERDROP_LOOP = """
    import torch
    from torch import nn


    class Enc(nn.Module):
        def forward(self, h, mask=None):
            for layer in self.layers:
{body}
            return h
    """


def _layerdrop(body: str, unsafe: bool = True):
    return fixed(LAYERDROP_LOOP.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 16)), unsafe)


CONTINUE_ON_DRAW = """
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        if dropout_probability < self.layerdrop:
            continue
    h = layer(h, mask)
"""


def test_layerdrop_select_keeps_the_path_without_the_draw_and_says_what_it_costs():
    result = _layerdrop(CONTINUE_ON_DRAW)
    assert [f.code for f in result.fixed] == ["DYN120"] and not result.remaining, result.text
    assert "layer_output = layer(h, mask)\n" in result.text
    assert "h = torch.where(dropout_probability < self.layerdrop, h, layer_output)\n" in result.text
    assert result.text.rstrip().endswith("continue\n            h = layer(h, mask)\n        return h")
    fix = result.fixed[0].fix
    assert fix.applicability == "unsafe" and "compute" in fix.message and "zero gradients" in fix.message
    # Without --unsafe-fixes nothing changes, and the finding says what the fix does.
    safe = _layerdrop(CONTINUE_ON_DRAW, unsafe=False)
    assert not safe.fixed and "unsafe fix runs the layer" in safe.remaining[0].message


@pytest.mark.parametrize(
    "body,why",
    [
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        h = layer(h, mask)
        h = h * 2
        """, "more than the layer step follows"),
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        out = layer(mask)
        """, "the step does not read what it assigns"),
        ("""
        skip = False
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            skip = dropout_probability < self.layerdrop
        if not skip:
            h = layer(h)
        self.skipped.append(skip)
        """, "the flag is read elsewhere"),
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            skip = dropout_probability < self.layerdrop
        if not skip:
            h = layer(h)
        """, "the flag is not False on the path without the draw"),
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        else:
            h = h + 1
        h = layer(h)
        """, "the guard has an else"),
        ("""
        skip = False
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            skip = dropout_probability < self.layerdrop
        if not skip or h.sum() > 0:
            h = layer(h)
        """, "another operand is a tensor"),
    ],
    ids=lambda v: v if " " in v else "",
)
def test_layerdrop_select_is_offered_only_for_the_loop_shapes_it_knows(body, why):
    result = _layerdrop(body)
    assert "torch.where" not in result.text, (why, result.text)


@pytest.mark.parametrize("start,selects", [("h * 1", True), ("[]", False)])
def test_layerdrop_select_needs_a_tensor_to_select(start, selects):
    result = _layerdrop(f"""
        names = {start}
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        names = layer(names, mask)
    """)
    assert ("torch.where" in result.text) == selects, result.text


def test_layerdrop_select_does_not_reindent_a_multiline_string_in_the_layer_call():
    result = _layerdrop('''
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        h = layer(h, note="""a
        b""")
    ''')
    assert "torch.where" not in result.text and not result.errors, result.text


# LayerDrop selects over layers returning tuples (their other outputs collected after them)

TUPLE_LAYER_DECODER = """
    import torch
    from torch import nn


    class Dec(nn.Module):
        def forward(self, h, past_key_values=None, output_attentions=False, use_cache=False):
            all_self_attns = () if output_attentions else None
            next_cache = () if use_cache else None
            for idx, layer in enumerate(self.layers):
                if self.training and self.layerdrop > 0.0:
                    dropout_probability = torch.rand([])
                    if dropout_probability < self.layerdrop:  # skip the layer
                        continue

                past_key_value = past_key_values[idx] if past_key_values is not None else None

                if self.gradient_checkpointing and self.training:
                    layer_outputs = self._gradient_checkpointing_func(layer.__call__, h, None, past_key_value)
                else:
                    layer_outputs = layer(h, past_key_value=past_key_value, output_attentions=output_attentions)
                h = layer_outputs[0]

                if use_cache:
                    next_cache += (layer_outputs[3 if output_attentions else 1],)
                if output_attentions:
                    all_self_attns += (layer_outputs[1],)
            return h, next_cache, all_self_attns
    """


def test_layerdrop_select_over_a_tuple_output_copies_the_run_and_what_collects_its_outputs():
    # transformers 4.x decoders (BART family, copied into much research code): a plain assignment
    # before the layer, gradient checkpointing, `h = layer_outputs[0]`, caches and attentions.
    assert_fixes(
        TUPLE_LAYER_DECODER,
        """
        import torch
        from torch import nn


        class Dec(nn.Module):
            def forward(self, h, past_key_values=None, output_attentions=False, use_cache=False):
                all_self_attns = () if output_attentions else None
                next_cache = () if use_cache else None
                for idx, layer in enumerate(self.layers):
                    if self.training and self.layerdrop > 0.0:
                        dropout_probability = torch.rand([])
                        past_key_value = past_key_values[idx] if past_key_values is not None else None

                        if self.gradient_checkpointing and self.training:
                            layer_outputs = self._gradient_checkpointing_func(layer.__call__, h, None, past_key_value)
                        else:
                            layer_outputs = layer(h, past_key_value=past_key_value, output_attentions=output_attentions)
                        h = torch.where(dropout_probability < self.layerdrop, h, layer_outputs[0])  # skip the layer

                        if use_cache:
                            next_cache += (layer_outputs[3 if output_attentions else 1],)
                        if output_attentions:
                            all_self_attns += (layer_outputs[1],)
                        continue

                    past_key_value = past_key_values[idx] if past_key_values is not None else None

                    if self.gradient_checkpointing and self.training:
                        layer_outputs = self._gradient_checkpointing_func(layer.__call__, h, None, past_key_value)
                    else:
                        layer_outputs = layer(h, past_key_value=past_key_value, output_attentions=output_attentions)
                    h = layer_outputs[0]

                    if use_cache:
                        next_cache += (layer_outputs[3 if output_attentions else 1],)
                    if output_attentions:
                        all_self_attns += (layer_outputs[1],)
                return h, next_cache, all_self_attns
        """,
    )


def test_layerdrop_select_with_the_flag_deciding_between_nones_and_the_layer():
    # FSMT's encoder: `if to_drop: attn = None` / `else: x, attn = layer(x, ...)`.
    result = _layerdrop("""
        all_attentions = ()
        to_drop = False
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:  # skip the layer
                to_drop = True
        if to_drop:
            attn = None
        else:
            h, attn = layer(h, mask)
        if self.output_attentions:
            all_attentions = all_attentions + (attn,)
    """)
    assert not result.errors and [f.code for f in result.fixed] == ["DYN120"], result.text
    assert textwrap.indent(textwrap.dedent("""
        dropout_probability = torch.rand([])
        layer_output, attn = layer(h, mask)
        h = torch.where(dropout_probability < self.layerdrop, h, layer_output)  # skip the layer
        if self.output_attentions:
            all_attentions = all_attentions + (attn,)
        continue
    """).lstrip("\n"), " " * 16) in result.text, result.text


@pytest.mark.parametrize(
    "body,why",
    [
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        h, residual_trend = layer(h, mask)
        trend = trend + residual_trend
        """, "an unconditional statement accumulates an output (Autoformer's trend)"),
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        layer_outputs = layer(h, mask)
        h = layer_outputs[0]
        if self.auxiliary_loss:
            intermediate += (self.norm(h),)
        """, "the tail collects the hidden state itself"),
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        layer_outputs = layer(h, mask)
        h = layer_outputs[0]
        if self.auxiliary_loss:
            h = self.norm(h)
        """, "the tail changes the hidden state"),
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        layer_outputs = layer(h, mask)
        h = self.norm(layer_outputs[0])
        """, "the hidden state is computed by another call"),
        ("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
        layer_outputs = layer(h, mask, cache=cache)
        h = layer_outputs[0]
        if self.use_cache:
            cache = layer_outputs[1]
        """, "the tail feeds the next layer's call"),
        ("""
        to_drop = False
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                to_drop = True
        if to_drop:
            h, g = (None, None)
        else:
            h, g = layer(h, mask)
        """, "the dropped arm rebinds the hidden state"),
        ("""
        to_drop = False
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                to_drop = True
        if to_drop:
            layer_outputs = (h, None)
        else:
            layer_outputs = layer(h, mask)
            h = layer_outputs[0]
        """, "the dropped arm binds more than Nones"),
    ],
    ids=lambda v: v if " " in v else "",
)
def test_layerdrop_select_refuses_tails_that_would_change_what_the_model_computes(body, why):
    result = _layerdrop(body)
    assert "torch.where" not in result.text and not result.errors, (why, result.text)


def test_layerdrop_select_parenthesizes_a_conditional_extract_where_it_becomes_an_operand():
    # wav2vec2-style flag with `or synced_gpus` and a layer that may or may not return a tuple.
    result = _layerdrop("""
        skip_the_layer = False
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            skip_the_layer = dropout_probability < self.layerdrop
        if not skip_the_layer or synced_gpus:
            layer_outputs = layer(h, mask)
            h = layer_outputs[0] if isinstance(layer_outputs, tuple) else layer_outputs
    """.replace("synced_gpus", "self.synced_gpus"))
    assert not result.errors and [f.code for f in result.fixed] == ["DYN120"], result.text
    assert ("h = (layer_outputs[0] if isinstance(layer_outputs, tuple) else layer_outputs) if self.synced_gpus "
            "else torch.where(dropout_probability < self.layerdrop, h, "
            "layer_outputs[0] if isinstance(layer_outputs, tuple) else layer_outputs)\n") in result.text, result.text


def test_layerdrop_select_for_the_unguarded_flag_with_work_before_the_layer_and_a_skip_continue():
    # M2M100's decoder in transformers 4.x: the flag as `True if ... else False`, a plain
    # assignment before the layer inside `if not skip or synced:`, `if skip: continue`, then the
    # cache and attentions collected. The flag and `if skip: continue` go; the collecting stays.
    result = _layerdrop("""
        dropout_probability = torch.rand([])
        skip_the_layer = True if self.training and (self.layerdrop > 0 and dropout_probability < self.layerdrop) else False
        if not skip_the_layer or self.synced:
            past = caches[0] if caches is not None else None
            layer_outputs = layer(h, mask, past)
            h = layer_outputs[0]
        if skip_the_layer:
            continue
        if self.use_cache:
            next_cache += (layer_outputs[1],)
    """)
    assert not result.errors and [f.code for f in result.fixed] == ["DYN120"], result.text
    assert textwrap.indent(textwrap.dedent("""
        dropout_probability = torch.rand([])
        past = caches[0] if caches is not None else None
        layer_outputs = layer(h, mask, past)
        h = layer_outputs[0] if self.synced else (torch.where(dropout_probability < self.layerdrop, h, layer_outputs[0]) if self.training and self.layerdrop > 0 else layer_outputs[0])
        if self.use_cache:
            next_cache += (layer_outputs[1],)
    """).lstrip("\\n"), " " * 12) in result.text, result.text
    assert "skip_the_layer" not in result.text


def test_layerdrop_select_for_the_unguarded_draw_deciding_none_outputs_or_the_layer():
    # NLLB-MoE's encoder in transformers 4.x: `if training and (p > 0 and draw < p): outputs =
    # (None, None)` / `else:` the layer; the attentions collected after it read the real outputs.
    result = _layerdrop("""
        dropout_probability = torch.rand([])
        if self.training and (self.layerdrop > 0 and dropout_probability < self.layerdrop):  # skip the layer
            layer_outputs = (None, None)
        else:
            layer_outputs = layer(h, mask)
            h = layer_outputs[0]
        if self.output_attentions:
            all_attentions += (layer_outputs[1],)
    """)
    assert not result.errors and [f.code for f in result.fixed] == ["DYN120"], result.text
    assert textwrap.indent(textwrap.dedent("""
        dropout_probability = torch.rand([])
        layer_outputs = layer(h, mask)
        h = torch.where(dropout_probability < self.layerdrop, h, layer_outputs[0]) if self.training and self.layerdrop > 0 else layer_outputs[0]  # skip the layer
        if self.output_attentions:
            all_attentions += (layer_outputs[1],)
        return h
    """).lstrip("\\n"), " " * 12).replace(" " * 12 + "return h", " " * 8 + "return h") in result.text, result.text


def test_layerdrop_select_for_the_unguarded_draw_deciding_continue_with_the_layer_after_it():
    # MusicGen's decoder shape with a torch draw: `if training and (draw < p): continue`, no `else`,
    # the layer run after it; the statement collecting its attentions stays after the select.
    result = _layerdrop("""
        dropout_probability = torch.rand([])
        if self.training and (self.layerdrop > 0 and dropout_probability < self.layerdrop):
            continue

        # run the layer
        h, attn = layer(h, mask)
        if self.output_attentions:
            all_attentions += (attn,)
    """)
    assert not result.errors and [f.code for f in result.fixed] == ["DYN120"], result.text
    assert textwrap.indent(textwrap.dedent("""
        dropout_probability = torch.rand([])
        layer_output, attn = layer(h, mask)
        h = torch.where(dropout_probability < self.layerdrop, h, layer_output) if self.training and self.layerdrop > 0 else layer_output  # run the layer
        if self.output_attentions:
            all_attentions += (attn,)
        return h
    """).lstrip("\\n"), " " * 12).replace(" " * 12 + "return h", " " * 8 + "return h") in result.text, result.text
    assert "collecting its other outputs run for it too" in result.fixed[0].fix.message


PYTHON_DRAW = """
    dropout_probability = random.uniform(0, 1)
    if self.training and (dropout_probability < self.layerdrop):
        continue
    h = layer(h, mask)
"""


PYTHON_DRAW_LOOP = LAYERDROP_LOOP.replace("    import torch\n", "    import random\n    import torch\n", 1)


def _python_layerdrop(body: str, unsafe: bool = True):
    return fixed(PYTHON_DRAW_LOOP.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 16)), unsafe)


def test_layerdrop_with_pythons_draw_gets_the_probability_test_then_a_torch_draw_and_the_select():
    # MusicGen: DYN105 reports the branch on `random.uniform(0, 1)`. Safe: `p > 0` first (the
    # draw still made, so Python's random stream is the same).
    safe = _python_layerdrop(PYTHON_DRAW, unsafe=False)
    assert [(f.code, f.fix.applicability) for f in safe.fixed] == [("DYN105", "safe")], safe.text
    assert "dropout_probability = random.uniform(0, 1)\n" in safe.text
    assert "if self.training and (self.layerdrop > 0 and dropout_probability < self.layerdrop):\n" in safe.text
    # Unsafe: then the select, drawing with torch.rand (`torch.where` needs a tensor to select by).
    result = _python_layerdrop(PYTHON_DRAW)
    assert not result.remaining and not result.errors, result.text
    assert [f.code for f in result.fixed] == ["DYN105", "DYN105"]
    assert textwrap.indent(textwrap.dedent("""
        dropout_probability = torch.rand([])
        layer_output = layer(h, mask)
        h = torch.where(dropout_probability < self.layerdrop, h, layer_output) if self.training and self.layerdrop > 0 else layer_output
        return h
    """).lstrip("\\n"), " " * 12).replace(" " * 12 + "return h", " " * 8 + "return h") in result.text, result.text
    select = result.fixed[1].fix
    assert select.applicability == "unsafe" and "`torch.rand([])`, not Python's `random`" in select.message


@pytest.mark.parametrize(
    "body,why",
    [
        (PYTHON_DRAW.replace("uniform(0, 1)", "uniform(0, 2)"), "not in [0, 1)"),
        (PYTHON_DRAW.replace("(dropout_probability < self.layerdrop)", "(dropout_probability <= self.layerdrop)"),
         "a draw can be 0"),
        ("flip = random.uniform(0, 1)\n" + textwrap.dedent(PYTHON_DRAW).replace("random.uniform(0, 1)", "flip"),
         "not bound to a draw"),
        (PYTHON_DRAW.replace("random.uniform(0, 1)", "random.randint(0, 1)"), "not a uniform draw"),
    ],
)
def test_branches_on_python_draws_that_are_not_uniform_in_zero_one_get_no_fix(body, why):
    result = _python_layerdrop(body)
    assert not result.fixed and "> 0 and" not in result.text, (why, result.text)
    assert any(f.code == "DYN105" for f in result.remaining), why


def test_layerdrop_select_with_pythons_draw_needs_the_draw_bound_only_in_the_loop():
    # Bound before the loop too: replacing only the loop's draw would leave the other a Python
    # number, replacing both would change code the fix does not own. The safe test still applies.
    code = PYTHON_DRAW_LOOP.replace(
        "            for layer in self.layers:",
        "            dropout_probability = random.uniform(0, 1)\n            for layer in self.layers:",
    ).format(body=textwrap.indent(textwrap.dedent(PYTHON_DRAW).strip("\n"), " " * 16))
    result = fixed(code)
    assert [(f.code, f.fix.applicability) for f in result.fixed] == [("DYN105", "safe")], result.text
    assert "random.uniform(0, 1)" in result.text and "torch.where" not in result.text


def test_layerdrop_select_with_pythons_draw_needs_the_draw_read_only_by_its_test():
    # Read as a number elsewhere: a tensor there could change what runs. The safe test applies.
    read = "    dropout_probability = random.uniform(0, 1)\n    rank = int(dropout_probability * 4)\n"
    result = _python_layerdrop(PYTHON_DRAW.replace("    dropout_probability = random.uniform(0, 1)\n", read))
    assert "rank = int(dropout_probability * 4)" in result.text
    assert [(f.code, f.fix.applicability) for f in result.fixed] == [("DYN105", "safe")], result.text
    assert "torch.where" not in result.text


def test_layerdrop_select_for_a_flag_deciding_continue_unless_synced():
    # SpeechT5's decoder: `if skip_the_layer and not synced_gpus: continue` then the layer run.
    result = _layerdrop("""
        skip_the_layer = False
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            skip_the_layer = dropout_probability < self.layerdrop
        if skip_the_layer and not synced_gpus:
            continue

        layer_outputs = layer(h, mask)
        h = layer_outputs[0]
        if output_attentions:
            all_attentions = all_attentions + (layer_outputs[1],)
    """)
    assert not result.errors and [f.code for f in result.fixed] == ["DYN120"], result.text
    assert textwrap.indent(textwrap.dedent("""
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            layer_outputs = layer(h, mask)
            h = layer_outputs[0] if synced_gpus else torch.where(dropout_probability < self.layerdrop, h, layer_outputs[0])
            if output_attentions:
                all_attentions = all_attentions + (layer_outputs[1],)
            continue
        if skip_the_layer and not synced_gpus:
            continue
    """).lstrip("\\n"), " " * 12) in result.text, result.text
    # A tensor among the other operands, or the flag read again after the layer: no select.
    for body in ("if skip_the_layer and h.sum() > 0:", "if skip_the_layer and not skip_the_layer:"):
        refused = _layerdrop(f"""
            skip_the_layer = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip_the_layer = dropout_probability < self.layerdrop
            {body}
                continue
            h = layer(h, mask)
        """)
        assert "torch.where" not in refused.text, refused.text


MASK_GUARD = """
    import math

    import torch
    from torch import nn


    class M(nn.Module):
        def forward(self, x, labels, logits):
            mask = labels == -100
            {body}
            return x, logits
    """


def _fixed_in_template(template: str, body: str, indent: int):
    """Fix `template` with `body` (dedented, then indented to `indent` columns) in its `{body}`."""
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * indent).lstrip(" ")
    return fixed(textwrap.dedent(template).lstrip("\n").format(body=body))


def _mask_guard(body: str):
    return _fixed_in_template(MASK_GUARD, body, 8)


def test_an_emptiness_test_around_updates_through_its_mask_is_dropped():
    # wav2vec2's pretraining loss and RAG's padding: updates that change nothing for an empty mask.
    result = _mask_guard("""
        if mask.any():  # padded
            x[mask] = 0.0

            logits[1:][mask] = float("-inf")
            x.masked_fill_(mask, -math.inf)
            logits = logits.masked_fill(mask, -1)
        if mask.sum() > 0:
            x[mask] = 1
    """)
    assert not result.remaining and [f.code for f in result.fixed] == ["DYN120", "DYN120"], result.text
    assert textwrap.indent(textwrap.dedent("""
        mask = labels == -100
        # padded
        x[mask] = 0.0

        logits[1:][mask] = float("-inf")
        x.masked_fill_(mask, -math.inf)
        logits = logits.masked_fill(mask, -1)
        x[mask] = 1
        return x, logits
    """).lstrip("\\n"), " " * 8) in result.text, result.text
    fix = result.fixed[0].fix
    assert fix.applicability == "unsafe" and "autograd" in fix.message


@pytest.mark.parametrize(
    "body,why",
    [
        ("index = labels.long()\nif index.any():\n    x[index] = 0.0", "an integer index writes where it points"),
        ("if mask.any():\n    x[mask] = logits", "a value with rows"),
        ("if mask.any():\n    x[mask] = 0.0\nelse:\n    x = x + 1", "an else"),
        ("if mask.any():\n    x[mask] = 0.0\n    x = x * 2", "other work"),
        ("other = labels > 0\nif mask.any():\n    x[other] = 0.0", "another mask"),
        ("if mask.sum() > 1:\n    x[mask] = 0.0", "not an emptiness test"),
        ("if mask.any():\n    x.masked_fill_(mask, logits.max())", "not a number"),
        ("if mask.any():\n    x[mask.nonzero()] = 0.0", "not the mask itself"),
    ],
)
def test_mask_guards_that_do_more_than_update_through_the_mask_are_kept(body, why):
    result = _mask_guard(body)
    assert any(f.code == "DYN120" for f in result.remaining), (why, result.remaining)
    assert "if " in result.text.split("mask = labels == -100", 1)[1], (why, result.text)
    assert not any("Drop the test" in f.fix.message for f in result.fixed), (why, result.text)


INLINE_DRAW_LOOP = """
    import random

    import numpy as np
    import torch
    from torch import nn


    class Enc(nn.Module):
        def forward(self, h, g=None):
            for layer in self.layers:
                if self.training and {draw} < self.layerdrop:
                    continue
                h = layer(h)
            return h
"""


@pytest.mark.parametrize(
    "draw,drawn",
    [
        ("torch.rand(1)", "torch.rand(1)"),
        ("torch.rand((), device=h.device)", "torch.rand((), device=h.device)"),
        ("random.random()", "torch.rand([])"),
        ("random.uniform(0, 1)", "torch.rand([])"),
        ("np.random.random()", "torch.rand([])"),
    ],
)
def test_layerdrop_drawn_in_the_test_itself_becomes_the_select(draw, drawn):
    # Research code's LayerDrop: `if self.training and <draw> < p: continue`, the layer after it.
    result = fixed(INLINE_DRAW_LOOP.format(draw=draw))
    assert not result.remaining and not result.errors, (result.remaining, result.text)
    assert (f"            layer_output = layer(h)\n"
            f"            h = torch.where({drawn} < self.layerdrop, h, layer_output) if self.training else layer_output\n"
            ) in result.text, result.text
    assert "the draw is made after the layer runs" in result.fixed[-1].fix.message


@pytest.mark.parametrize(
    "draw,why",
    [
        ("torch.rand(2)", "two numbers"),
        ("torch.rand(1, generator=g)", "another generator"),
        ("random.uniform(0, 2)", "not in [0, 1)"),
        ("random.gauss(0, 1)", "not uniform"),
        ("torch.randn(1)", "not uniform"),
    ],
)
def test_other_draws_in_the_test_get_no_select(draw, why):
    result = fixed(INLINE_DRAW_LOOP.format(draw=draw))
    assert "torch.where" not in result.text, (why, result.text)


DISPATCH = """
    import torch
    from torch import nn


    class M(nn.Module):
        def forward(self, x, probs, out):
            expert_id = probs.argmax(dim=-1)
            for i, expert in enumerate(self.experts):
                mask = expert_id == i
                {body}
            return out
    """


def _dispatch(body: str):
    return _fixed_in_template(DISPATCH, body, 12)


def test_rows_routed_by_a_mask_and_written_back_through_it_become_dense_dispatch():
    # Top-1 mixture of experts (research code) and X-MOD's language adapters.
    result = _dispatch("""
        if mask.any():  # route
            out[mask] = expert(x[mask]) * probs[mask, i].unsqueeze(-1)
    """)
    assert not result.remaining, result.remaining
    assert "            # route\n            out.copy_(torch.where(mask.reshape(mask.shape + (1,) * (out.dim() - mask.dim())), " \
           "expert(x) * probs.select(mask.dim(), i).unsqueeze(-1), out))\n" in result.text, result.text
    fix = next(f.fix for f in result.fixed if f.code == "DYN130")
    assert fix.applicability == "unsafe" and "independently" in fix.message
    result = _dispatch("""
        picked = x[mask]
        adapted = expert(picked).softmax(dim=-1)
        out[mask] = adapted.to(out.dtype)

        out = out * 1
    """)
    assert "picked = x\n" in result.text and "adapted = expert(picked).softmax(dim=-1)\n" in result.text, result.text
    assert "out.copy_(torch.where(mask.reshape(mask.shape + (1,) * (out.dim() - mask.dim())), adapted.to(out.dtype), out))" \
        in result.text, result.text
    # A parenthesised value over several lines (nflows' cubic spline): its parentheses and its
    # comment are kept, the call closes after them (it used to close inside: a fix that did not parse).
    result = _dispatch("""
        picked = x[mask]
        out[mask] = (
            expert(picked) * 2  # scaled
        )
    """)
    assert not result.skipped and not result.remaining, (result.skipped, result.remaining)
    assert "out.copy_(torch.where(mask.reshape(mask.shape + (1,) * (out.dim() - mask.dim())), (\n" \
           "                expert(picked) * 2  # scaled\n            ), out))\n" in result.text, result.text


@pytest.mark.parametrize(
    "body,why",
    [
        ("picked = x[mask]\nout[mask] = expert(picked)\nlast = picked", "a chain value read after the write"),
        ("if mask.any():\n    out[mask] = expert(x[mask])\n    n = mask.sum()", "other work in the test's body"),
        ("out[mask] = expert(x[mask]) * mask.sum()", "the mask used other than to select"),
        ("out[mask] = expert(x[mask]) * probs[mask, expert_id]", "a tensor second index"),
        ("out[mask] = expert(x[mask][x[mask] > 0])", "another data-dependent selection"),
        ("out[mask] = expert(probs)", "nothing selected by the mask"),
        ("rows = x[mask]\nout[mask] = expert(rows)\nrows = rows.nonzero()", "rebinding read outside"),
        ("out[mask] = x[mask] / x[mask].sum()", "a reduction over the selected rows"),
        ("out[mask] = expert(x[mask]).softmax(0)", "a positive dimension: another axis on all rows"),
        ("out[mask] = torch.cumsum(expert(x[mask]), dim=0)", "a running sum over the selected rows"),
        ("out[mask] = expert(x[mask].view(-1, 4)).flatten()", "a layout of the selected rows"),
        ("out[mask] = expert(x[mask]) * len(x[mask])", "the row count"),
        ("out[mask] = softmax(x[mask], probs[mask])", "a plain function: rows may be grouped (PyG's softmax)"),
        ("out[mask] = x[probs[mask]]", "selected values used as indices"),
        ("out[mask] = expert(x[mask] @ x[mask].T)", "selected rows paired with each other"),
        ("out[mask] = torch.nn.functional.softmax(expert(x[mask]), dim=0)", "softmax over the selected rows"),
        # botorch's Penicillin: `step` holds the selected rows only, and another statement reads it
        ("step = x[mask] * 0.1\nlog = step - out[mask]\nout[mask] = out[mask] + step",
         "a value of the selected rows bound before the chain"),
    ],
)
def test_mask_dispatch_is_not_offered_where_rows_escape_or_the_mask_does_more(body, why):
    result = _dispatch(body)
    assert not any("Run on every row" in f.fix.message for f in result.fixed), (why, result.text)


SUBMODULE_DISPATCH = """
    import torch
    from torch import nn


    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            self.norm = nn.LayerNorm(4)
            self.softmax = nn.Softmax(dim=-1)
            self.bn = nn.BatchNorm1d(4)
            self.pool = nn.Softmax(dim=0)
            self.attn = nn.MultiheadAttention(4, 1)
            self.weighting = weighting_resolver.make("inverse_in_degree")
            self.adapter = Adapter(4)

        def forward(self, x, probs, out):
            expert_id = probs.argmax(dim=-1)
            for i, expert in enumerate(self.experts):
                mask = expert_id == i
                out[mask] = {call}
            return out
    """


@pytest.mark.parametrize(
    "call,offered",
    [
        # named like tensor ops along a dimension, but built as row-wise modules
        ("self.norm(expert(x[mask]))", True),
        ("self.softmax(expert(x[mask]))", True),
        # modules that relate rows: batch statistics, a softmax over the selected rows, attention
        ("self.bn(expert(x[mask]))", False),
        ("self.pool(expert(x[mask]))", False),
        ("self.attn(x[mask], x[mask], x[mask])[0]", False),
        # a class built here is trusted as any submodule; what a factory returns is not (pykeen's
        # edge weighting, made by a resolver, counts degrees over the rows it is given)
        ("self.adapter(x[mask])", True),
        ("self.weighting(x[mask], probs[mask])", False),
    ],
)
def test_mask_dispatch_reads_what_a_submodule_is_built_from(call, offered):
    code = textwrap.dedent(SUBMODULE_DISPATCH.format(call=call)).lstrip("\n")
    result = fix_source(code, "example.py", ALL, unsafe=True)
    dense = any("Run on every row" in f.fix.message for f in result.fixed)
    assert dense is offered, result.text


def test_an_emptiness_test_with_an_else_stays_around_the_dense_dispatch():
    result = _dispatch("if mask.any():\n    out[mask] = expert(x[mask])\nelse:\n    out = out + 1")
    assert "if mask.any():\n                out.copy_(torch.where(" in result.text, result.text
    assert [f.code for f in result.remaining] == ["DYN120"], result.remaining


def test_min_of_a_generator_of_tuples_becomes_a_list_comprehension():
    # pykeen's contraction planning; the generator's own parentheses become the brackets.
    assert_fixes(
        """
        import torch

        @torch.compile
        def f(x, orders):
            cost, order = min(
                (sum(order), order)
                for order in orders
            )
            a = max(((i, -i) for i in range(3)))
            return x * cost + a[0]
        """,
        """
        import torch

        @torch.compile
        def f(x, orders):
            cost, order = min(
                [(sum(order), order)
                for order in orders]
            )
            a = max([(i, -i) for i in range(3)])
            return x * cost + a[0]
        """,
    )


def test_no_dense_rewrite_where_unselected_elements_could_be_infinite():
    # nflows' LogTanh: run on every element, `log` of an element the mask leaves out can be
    # -inf; `torch.where` drops the value, but its gradient there is 0 * inf = NaN. The
    # elementwise `tanh` update is still rewritten; `log`, division by a tensor are not.
    source = textwrap.dedent('''
        import torch
        from torch import nn

        class LogTanh(nn.Module):
            def forward(self, inputs):
                mask_middle = (inputs >= -1) & (inputs <= 1)
                mask_right = inputs > 1
                outputs = torch.zeros_like(inputs)
                outputs[mask_middle] = torch.tanh(inputs[mask_middle])
                outputs[mask_right] = 0.5 * torch.log(2.0 * inputs[mask_right])
                logabsdet = torch.ones_like(inputs)
                logabsdet[mask_right] = torch.log(0.5 / inputs[mask_right])
                logabsdet[mask_right] /= inputs[mask_right]
                logabsdet[mask_middle] *= 2.0
                return outputs, logabsdet
    ''')
    out = fixed(source).text
    assert "outputs[mask_middle] =" not in out and "torch.tanh(inputs)" in out
    assert "outputs[mask_right] = 0.5 * torch.log(2.0 * inputs[mask_right])" in out
    assert "logabsdet[mask_right] = torch.log(0.5 / inputs[mask_right])" in out
    assert "logabsdet[mask_right] /= inputs[mask_right]" in out
    assert "logabsdet[mask_middle] *= 2.0" not in out


def test_no_tensor_rewrite_of_a_test_reading_allclose():
    # `torch.allclose` gives a Python bool and breaks by itself: `torch.where(allclose(...).bool(),
    # ...)` would raise AttributeError; no fix is offered.
    source = textwrap.dedent('''
        import torch

        @torch.compile
        def f(x):
            y = x.sin()
            if torch.allclose(y, x):
                y = y + 1
            if not y.equal(x):
                y = y + 2
            return y
    ''')
    out = fixed(source)
    assert not out.fixed and out.text == source.lstrip(chr(10)), out.text


def test_no_tensor_assert_where_the_message_is_not_a_literal():
    # escnn: `assert err.item() < 1e-7, err.item()`: asserting the tensor comparison with that
    # message is a branch on a tensor, the break again; with a literal message it stays in the graph.
    out = fixed('''
        import torch

        @torch.compile
        def f(x):
            y = x.sin()
            assert (y - x).abs().max().item() < 1e-7, (y - x).abs().max().item()
            assert (y - x).abs().max().item() < 10, "too far"
            return y
    ''').text
    assert "assert (y - x).abs().max().item() < 1e-7, (y - x).abs().max().item()" in out
    assert 'assert (y - x).abs().max() < 10, "too far"' in out


def test_classmethod_forward_calling_bare_super_keeps_its_decorator():
    # entmax's losses: `return super().forward(ctx, X, ...)` needs `cls` (and the `__class__`
    # cell); as a staticmethod it raises TypeError in plain eager. The other method is fixed.
    code = '''
        import torch

        class Base(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, alpha=1.0):
                return x * alpha

            @staticmethod
            def backward(ctx, g):
                return g, None

        class Loss(Base):
            @classmethod
            def forward(cls, ctx, x):
                return super().forward(ctx, x, alpha=2.0)

            @classmethod
            def backward(cls, ctx, g):
                return g * 2, None

        @torch.compile
        def f(x):
            return Loss.apply(x)
    '''
    out = fixed(code, unsafe=False).text
    assert "@classmethod\n    def forward(cls, ctx, x):\n        return super().forward" in out
    assert "@staticmethod\n    def backward(ctx, g):" in out


# A detector's per-image filtering (torchvision's RPN and box heads): the loop breaks at a
# one-argument `where` and calls helpers Dynamo traces as frames of their own once it gives up
# on the caller's frame; `count` is rebound in the loop and read after it.
FILTER_LOOP = """
    import torch
    from torch import nn


    def clip(boxes, size):
        return boxes.clamp(min=0, max=size)


    def remove_small(boxes, min_size):
        keep = (boxes[:, 2] - boxes[:, 0]) >= min_size
        return torch.where(keep)[0]


    class Filter(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.thresh = 0.1

        def filter(self, proposals, scores):
            proposals = self.proj(proposals)
            probs = torch.sigmoid(scores)
            kept_boxes, kept_scores = [], []
            count = 0
            for boxes, s in zip(proposals, probs):  # one image at a time
                boxes = clip(boxes, 1.0)
                keep = remove_small(boxes, 0.01)
                boxes, s = boxes[keep], s[keep]
                keep = torch.where(s > self.thresh)[0]
                kept_boxes.append(boxes[keep])
                kept_scores.append(s[keep])
                count = count + len(keep)
            return kept_boxes, kept_scores, count

        def forward(self, x, s):
            boxes, scores, count = self.filter(x, s)
            return [b * 2 for b in boxes], scores, count
    """


def test_loop_that_breaks_and_calls_traced_helpers_runs_outside_the_graph():
    result = fixed(FILTER_LOOP)
    assert not result.errors
    assert """
        kept_boxes, kept_scores = [], []
        count = 0
        count = self._filter_loop_outside_graph(proposals, probs, kept_boxes, kept_scores, count)
        return kept_boxes, kept_scores, count

    @torch.compiler.disable
    def _filter_loop_outside_graph(self, proposals, probs, kept_boxes, kept_scores, count):
        for boxes, s in zip(proposals, probs):  # one image at a time
            boxes = clip(boxes, 1.0)
            keep = remove_small(boxes, 0.01)
            boxes, s = boxes[keep], s[keep]
            keep = torch.where(s > self.thresh)[0]
            kept_boxes.append(boxes[keep])
            kept_scores.append(s[keep])
            count = count + len(keep)
        return count

    def forward(self, x, s):""" in result.text, result.text
    again = fix_source(result.text, "example.py", ALL, unsafe=True)
    assert again.text == result.text
    assert "_outside_graph" not in fixed(FILTER_LOOP, unsafe=False).text


def test_loops_of_module_functions_and_static_methods_move_out_too():
    code = """
        import torch
        import numpy as np
        from torch import nn
        from torchvision.ops import nms


        def per_class(boxes, scores, idxs, threshold):
            keep_mask = torch.zeros_like(scores, dtype=torch.bool)
            for class_id in torch.unique(idxs):
                curr = torch.where(idxs == class_id)[0]
                keep_mask[curr[nms(boxes[curr], scores[curr], threshold)]] = True
            return torch.where(keep_mask)[0]


        class Head(nn.Module):
            @staticmethod
            def levels(boxes, levels):
                out = []
                for level in range(4):
                    idx = torch.where(levels == level)[0]
                    out.append(per_class(boxes[idx], boxes[idx, 0], levels[idx], 0.5))
                return out

            def forward(self, boxes, levels):
                return self.levels(boxes, levels)
        """
    result = fixed(code)
    assert """
    keep_mask = torch.zeros_like(scores, dtype=torch.bool)
    _per_class_loop_outside_graph(boxes, scores, idxs, threshold, keep_mask)
    return torch.where(keep_mask)[0]


@torch.compiler.disable
def _per_class_loop_outside_graph(boxes, scores, idxs, threshold, keep_mask):
    for class_id in torch.unique(idxs):""" in result.text, result.text
    assert """
        out = []
        Head._levels_loop_outside_graph(boxes, levels, out)
        return out

    @staticmethod
    @torch.compiler.disable
    def _levels_loop_outside_graph(boxes, levels, out):
        for level in range(4):""" in result.text, result.text


def test_loops_that_must_stay_are_not_moved():
    code = """
        import torch
        from torch import nn


        def helper(b):
            return torch.where(b > 0)[0]


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)
                self.layers = nn.ModuleList([nn.Linear(4, 4)])

            def returns_in_the_loop(self, xs):
                for b in xs:
                    keep = helper(b)
                    if len(keep) > 3:
                        return keep
                return None

            def calls_a_submodule(self, xs):
                out = []
                for b in xs:
                    out.append(self.proj(b[helper(b)]))
                return out

            def calls_modules_by_name(self, xs):
                out = []
                for layer in self.layers:
                    out.append(layer(xs[helper(xs[0])]))
                return out

            def calls_a_method_that_calls_a_submodule(self, xs):
                out = []
                for b in xs:
                    out.append(self.project(b[helper(b)]))
                return out

            def project(self, b):
                return self.proj(b)

            def calls_the_base_class(self, xs):
                out = []
                for b in xs:
                    out.append(super().forward(b[helper(b)]))
                return out

            def bound_in_a_branch(self, xs, flag: bool):
                if flag:
                    out = []
                for b in xs:
                    out.append(b[helper(b)])
                return out

            def bound_only_in_the_loop(self, xs):
                for b in xs:
                    keep = helper(b)
                return keep

            def break_in_a_branch(self, xs, flag: bool):
                out = []
                for b in xs:
                    if flag:
                        out.append(torch.where(b > 0)[0])
                    out.append(helper(b))
                return out

            def breaks_of_its_own_only(self, xs):
                out = []
                for b in xs:
                    out.append(torch.where(b > 0)[0])
                return out

            def forward(self, xs):
                return (self.returns_in_the_loop(xs), self.calls_a_submodule(xs), self.calls_modules_by_name(xs),
                        self.calls_a_method_that_calls_a_submodule(xs), self.bound_in_a_branch(xs, True),
                        self.bound_only_in_the_loop(xs), self.break_in_a_branch(xs, True),
                        self.breaks_of_its_own_only(xs), self.calls_the_base_class(xs))
        """
    result = fixed(code)
    assert "_outside_graph" not in result.text, result.text
    assert "compiler.disable" not in result.text, result.text


def test_loop_after_an_early_return_moves_where_the_split_declines():
    # A host-side helper whose break is only in a loop: the split (fixes/disable_tail.py) declines
    # once positions are known (Dynamo gives up on such a frame anyway), and the loop fix, whose
    # loop calls a function of the file Dynamo traces as a frame of its own, stands behind it.
    code = """
        import numpy as np
        import torch
        from torch import nn


        def spread(v):
            return v * 2 + 1


        class Net(nn.Module):
            def plan(self, n):
                out = np.zeros(n, dtype=np.int64)
                if not self.training:
                    return out
                for r in range(2):
                    out[r] = spread(np.random.permutation(n)[0])
                return out

            def forward(self, x):
                return x[:, torch.from_numpy(self.plan(4))]
        """
    result = fixed(code)
    assert """
            return out
        self._plan_loop_outside_graph(n, out)
        return out

    @torch.compiler.disable
    def _plan_loop_outside_graph(self, n, out):
        for r in range(2):""" in result.text, result.text
    assert "_plan_outside_graph" not in result.text

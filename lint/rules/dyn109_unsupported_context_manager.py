"""DYN109: `with` on a context manager Dynamo cannot enter (a lock, cuDNN / SDPA backend flags).

## What it does
Finds `with` statements in compiled code whose context manager Dynamo does not support: a
`threading.Lock` or `RLock` (made in the `with`, bound at module level, or stored on `self` in a
method of the class), `torch.backends.cudnn.flags(...)`, `torch.backends.cuda.sdp_kernel(...)`
and `torch.random.fork_rng(...)`. `open()` in a `with` is DYN105's.

## Why it breaks the graph
Dynamo traces a short list of context managers (`torch.no_grad`, `torch.autocast`,
`warnings.catch_warnings`, `contextlib.suppress`, `contextlib.nullcontext`, ...). Any other one is an
"Unsupported context manager": the graph breaks at the `with`, and because Dynamo cannot resume
inside a `with` block, the whole function runs eagerly (0 graphs for it).

## Example
```python
_cache_lock = threading.Lock()

def forward(self, x):
    with _cache_lock:
        self.calls += 1
    with torch.backends.cudnn.flags(enabled=False):
        return self.conv(x)
```

## Use instead
Take locks and switch backend flags outside the compiled region (around the call of the compiled
model), or compile the body in a function of its own that the `with` calls. For the SDPA
backends, `torch.nn.attention.sdpa_kernel([...])` (torch 2.3 and later) is traced: the unsafe fix
passes `sdp_kernel`'s arguments as they are to a helper it adds after the imports,
`_sdpa_backends(...)`, which lists the backends they enable.
"""

import libcst as cst

from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix

UNSUPPORTED_CALLS = frozenset(
    {
        "torch.backends.cudnn.flags",
        "torch.backends.cuda.sdp_kernel",
        "torch.random.fork_rng",
        "threading.Lock",
        "threading.RLock",
    }
)


class UnsupportedContextManager(Rule):
    code = "DYN109"
    name = "unsupported-context-manager"
    summary = "`with` on a context manager Dynamo cannot enter"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13 and 2.14.1);
    # the flags and fork_rng calls first return a non-tensor from a torch function.
    gb_types = (
        ("GB0142", "Unsupported context manager"),
        ("GB0208", "torch.* op returned non-Tensor"),
        ("GB7151", "generator function over a skipped function"),  # torch 2.14.1
    )
    node_types = (cst.With,)
    fixable = "unsafe"

    def check(self, node: cst.With, ctx: RuleContext) -> None:
        for item in node.items:
            manager = item.item
            what = None
            if type(manager) is cst.Call:
                q = ctx.call_name(manager)
                if q in UNSUPPORTED_CALLS:
                    what = f"`{q}()`"
            elif type(manager) is cst.Name and manager.value in ctx.lock_names:
                what = f"the lock `{manager.value}`"
            elif ctx.self_attr(manager) in ctx.lock_attrs:
                what = f"the lock `self.{manager.attr.value}`"
            if what is not None:
                advice = "enter it outside the compiled region"
                if what == "`torch.backends.cuda.sdp_kernel()`":
                    # BS-RoFormer's attend: 30 breaks per forward; the new API traces (probed).
                    advice = ("use `torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, ...])` (torch 2.3 and "
                              "later), which Dynamo traces")
                fix = offer_fix("sdpa_kernel", ctx, manager, self.code) if what == "`torch.backends.cuda.sdp_kernel()`" else None
                ctx.report(self, manager, f"`with` on {what}: Dynamo does not support this context manager and "
                                          f"runs the whole function eagerly; {advice}", fix=fix)

    invalid = (
        Example(
            # lucidrains' attend.py (BS-RoFormer, gigagan, magvit2): the fix selects the same
            # backends with `sdpa_kernel`, through a helper taking the same arguments.
            """
            import torch
            import torch.nn.functional as F

            @torch.compile
            def f(q):
                q = q * 2
                with torch.backends.cuda.sdp_kernel(enable_flash=False):  # expect: DYN109
                    return F.scaled_dot_product_attention(q, q, q)
            """,
            dynamo=BREAKS,
            inputs="(torch.rand(1, 2, 4, 8),)",
            fixed="""
                import torch
                import torch.nn.functional as F


                def _sdpa_backends(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
                    \"\"\"The backends `torch.backends.cuda.sdp_kernel(...)` enables, for `torch.nn.attention.sdpa_kernel`.\"\"\"
                    backends = torch.nn.attention.SDPBackend
                    flags = {
                        backends.FLASH_ATTENTION: enable_flash,
                        backends.MATH: enable_math,
                        backends.EFFICIENT_ATTENTION: enable_mem_efficient,
                        backends.CUDNN_ATTENTION: enable_cudnn,
                    }
                    return [backend for backend, enabled in flags.items() if enabled]


                @torch.compile
                def f(q):
                    q = q * 2
                    with torch.nn.attention.sdpa_kernel(_sdpa_backends(enable_flash=False)):  # expect: DYN109
                        return F.scaled_dot_product_attention(q, q, q)
            """,
        ),
        Example(
            """
            import threading

            import torch
            from torch import nn

            _cache_lock = threading.Lock()

            class M(nn.Module):
                def forward(self, x):
                    with _cache_lock:  # expect: DYN109
                        y = x + 1
                    return y * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import threading

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self._lock = threading.RLock()

                def forward(self, x):
                    with self._lock:  # expect: DYN109
                        y = self.proj(x)
                    return y * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                with torch.backends.cudnn.flags(enabled=False):  # expect: DYN109
                    y = x + 1
                return y * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                with torch.random.fork_rng():  # expect: DYN109
                    y = x + torch.rand(4)
                return y * 2
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # The SDPA backend selection that replaces `torch.backends.cuda.sdp_kernel`: traced.
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.attention import SDPBackend, sdpa_kernel

            @torch.compile
            def f(q):
                with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
                    return F.scaled_dot_product_attention(q, q, q) * 2
            """,
            dynamo=CLEAN,
            inputs="(torch.rand(1, 2, 4, 8),)",
        ),
        Example(
            """
            import contextlib
            import warnings

            import torch

            @torch.compile
            def f(x):
                with torch.no_grad(), warnings.catch_warnings():
                    y = x + 1
                with torch.autocast("cpu"), contextlib.nullcontext():
                    y = y * 2
                with contextlib.suppress(ValueError):
                    y = y - 1
                return y
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import threading

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lock = threading.Lock()
                    self.scale = 2.0

                def forward(self, x):
                    return x * self.scale

                def update(self, value):
                    with self.lock:  # not compiled: only forward runs under torch.compile
                        self.scale = value
            """,
            dynamo=CLEAN,
        ),
    )


RULE = UnsupportedContextManager

"""DYN301: device-to-host copy or sync in compiled code (informational).

## What it does
Finds `.cpu()`, `.numpy()`, `.to("cpu")` on tensors and `torch.cuda.synchronize()` in a compile
region. Off by default; enable with `--select DYN3` or `extend-select = ["DYN3"]`.

## Why it matters
Current Dynamo traces these (no graph break), but on a GPU each one makes the host wait for the
device and copies data back, which stalls the pipeline that compilation is meant to keep full.

## Example
```python
def forward(self, x):
    stats = x.mean(0).cpu()
    return x - stats.to(x.device)
```

## Use instead
Keep data on the device inside the model; move results to the host after the compiled call.
"""

import libcst as cst

from ..rule import CLEAN, Example, Rule, RuleContext


class HostSync(Rule):
    code = "DYN301"
    name = "host-sync"
    summary = "Device-to-host copy or sync"
    severity = "info"
    node_types = (cst.Call,)

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if ctx.call_name(node) == "torch.cuda.synchronize":
            ctx.report(self, node, "`torch.cuda.synchronize()` waits for the device inside the model")
            return
        if type(func) is not cst.Attribute or not ctx.is_tensor(func.value):
            return
        meth = func.attr.value
        if meth in ("cpu", "numpy") and not node.args:
            ctx.report(self, node, f"`.{meth}()` copies to the host and syncs with the device")
        elif meth == "to" and node.args:
            first = node.args[0]
            if type(first.value) is cst.SimpleString and first.value.evaluated_value == "cpu":
                ctx.report(self, node, "`.to(\"cpu\")` copies to the host and syncs with the device")

    invalid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                stats = x.mean(0).cpu()  # expect: DYN301
                return x - stats
            """,
            dynamo=CLEAN,
            why="traced, no break: a sync on GPU only",
        ),
    )
    valid = (
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                return x - x.mean(0)

            def summarize(x):
                return f(x).cpu().numpy()
            """,
            dynamo=CLEAN,
        ),
    )


RULE = HostSync

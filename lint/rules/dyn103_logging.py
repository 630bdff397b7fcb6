"""DYN103: `logging` call in compiled code.

## What it does
Finds calls to `logging.info(...)` and friends and to logger objects (`logger.warning(...)`,
transformers' `logger.warning_once(...)`) in a compile region. Loggers are recognised by being
assigned from `logging.getLogger(...)` / `get_logger(...)` or by their name (`logger`, `log`).

## Why it breaks the graph
Dynamo does not trace `logging.Logger` methods ("logging.Logger method not supported for
non-export cases"); module-level `logging.warning` fails too, and so does `logging.getLogger(name)`
in compiled code (no fix: get the logger at module level). Each call splits the graph.

## Example
```python
def forward(self, x):
    logger.info("input %s", x.shape)
    return self.fc(x)
```

## Use instead
Log outside the compiled region, or guard it (the autofix does this):
```python
    if not torch.compiler.is_compiling():
        logger.info("input %s", x.shape)
```

"""

import libcst as cst

from ..rule import BREAKS, CLEAN, GUARD_FIX_DOC, Example, Rule, RuleContext, offer_fix

__doc__ += GUARD_FIX_DOC

LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log", "warning_once", "info_once", "warning_advice"}
)


class LoggingCall(Rule):
    code = "DYN103"
    name = "logging-in-compiled-region"
    summary = "`logging` call breaks the graph"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (
        ("GB0291", "logging.Logger method not supported for non-export cases"),
        ("GB4841", "Unsupported python_type() call"),
        ("GB0156", "Unsupported method call"),  # torch 2.11: module-level `logging.warning()`
        ("GB6215", "Unresolved GetAttrVariable comparison"),  # `logging.getLogger(name)`
    )
    node_types = (cst.Call,)
    fixable = "safe or unsafe"

    def check(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "getLogger" and ctx.qualname(func) == "logging.getLogger":
            # basicsr's DCNv2Pack: `logger = get_root_logger()` in forward, which calls it
            ctx.report(self, node, "`logging.getLogger()` breaks the graph (Dynamo cannot compare the logger "
                                   "registry's entries); get the logger once at module level")
            return
        if type(func) is not cst.Attribute or func.attr.value not in LOG_METHODS:
            return
        q = ctx.qualname(func)
        if q is not None and q.startswith("logging.") and q.count(".") == 1:
            ctx.report(
                self,
                node,
                f"`{q}()` breaks the graph; guard it with `if not torch.compiler.is_compiling():`",
                fix=offer_fix("guard", ctx, node, self.code),
            )
        elif ctx.is_logger(func.value):
            ctx.report(
                self,
                node,
                f"logger call `.{func.attr.value}()` breaks the graph; guard it with `if not torch.compiler.is_compiling():`",
                fix=offer_fix("guard", ctx, node, self.code),
            )

    invalid = (
        Example(
            # basicsr's DCNv2Pack: a helper fetches the logger in forward, then warns.
            """
            import logging
            import torch

            def get_root_logger():
                return logging.getLogger("basicsr")  # expect: DYN103

            @torch.compile
            def f(x):
                y = x + 1
                logger = get_root_logger()
                return y * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import logging
            import torch

            log = logging.getLogger(__name__)

            @torch.compile
            def f(x):
                y = x * 2
                log.info("val %s", y.shape)  # expect: DYN103
                return y + 1
            """,
            dynamo=BREAKS,
            fixed="""
                import logging
                import torch

                log = logging.getLogger(__name__)

                @torch.compile
                def f(x):
                    y = x * 2
                    if not torch.compiler.is_compiling():
                        log.info("val %s", y.shape)  # expect: DYN103
                    return y + 1
            """,
        ),
        Example(
            """
            import logging
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                logging.warning("hi")  # expect: DYN103
                return y + 1
            """,
            dynamo=BREAKS,
        ),
    )
    valid = (
        Example(
            # sentence-transformers' SPLADE pooling: the handler of an out-of-memory error runs
            # when the compiled graph fails, never while Dynamo traces.
            """
            import logging
            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    try:
                        y = self.proj(x).relu()
                    except RuntimeError as e:
                        if "out of memory" in str(e):
                            logger.warning("Out of memory; try a smaller batch")
                        raise
                    return y.amax(dim=-1)
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import logging
            import torch

            logger = logging.getLogger(__name__)

            @torch.compile
            def f(x):
                y = x * 2
                if not torch.compiler.is_compiling():
                    logger.info("val %s", y.shape)
                return y + 1

            def fit(x):
                logger.info("loss %s", f(x).sum().item())
            """,
            dynamo=CLEAN,
        ),
    )


RULE = LoggingCall

"""DYN116: an import that may fail (inside `try` / `except ImportError`) in compiled code.

## What it does
Finds `import x` / `from x import y` in compiled code inside the body of a `try` whose handlers
catch `ImportError` (or `ModuleNotFoundError`, `Exception`, a bare `except`): an optional
dependency imported where it is used (`from flash_attn import flash_attn_func` in an attention
function, k-diffusion).

## Why it breaks the graph
Where the module is installed the import traces. Where it is not, Dynamo cannot trace the failed
import ("Import failure"): it gives up on the whole function and runs it eagerly, on every call
(no graph for it, and `explain` may count no break). The `except` that makes the code work without
the module is exactly the path Dynamo cannot follow. A warning: it depends on the machine.

## Example
```python
def attention(q, k, v):
    try:
        from flash_attn import flash_attn_func
        return flash_attn_func(q, k, v)
    except ImportError:
        return F.scaled_dot_product_attention(q, k, v)
```

## Use instead
Import it once at module level and keep the fallback there:
```python
try:
    from flash_attn import flash_attn_func
except ImportError:
    flash_attn_func = None
```
then branch on `flash_attn_func is None` in the function (a constant for Dynamo).
"""

import libcst as cst

from ..nodes import dotted
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext

# Handlers that catch a failed import.
_CATCHING = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = [e.value for e in handler.type.elements] if type(handler.type) is cst.Tuple else [handler.type]
    return any((dotted(t) or "").rsplit(".", 1)[-1] in _CATCHING for t in types)


class OptionalImport(Rule):
    code = "DYN116"
    name = "optional-import"
    summary = "An import that may fail, in compiled code"
    severity = "warning"
    fixable = None
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    gb_types = (("GB0069", "Import failure"),)
    node_types = (cst.Import, cst.ImportFrom)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        inside = None
        for around in ctx.iter_ancestors():
            t = type(around)
            if t in (cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.Else):
                return  # the fallback itself, or code after the try
            if t is cst.Try:
                inside = around
                break
            if t in (cst.FunctionDef, cst.ClassDef):
                return
        if inside is None or not any(_catches_import_error(h) for h in inside.handlers):
            return
        if type(node) is cst.ImportFrom:
            if node.relative:
                return  # the package's own module: there if the package is
            name = dotted(node.module) if node.module is not None else None
        else:
            name = dotted(node.names[0].name) if node.names else None
        if name is None or name.split(".")[0] in ("torch", "__future__"):
            return
        ctx.report(self, node, f"importing `{name}` here may fail (it is caught below): where `{name}` is not "
                               "installed, Dynamo cannot trace the failed import and runs the whole function eagerly; "
                               "import it once at module level, with its fallback there")

    invalid = (
        Example(
            """
            import torch
            import torch.nn.functional as F

            @torch.compile
            def f(q):
                q = q * 2
                try:
                    from flash_attn_not_installed_here import flash_attn_func  # expect: DYN116
                    return flash_attn_func(q, q, q)
                except ImportError:
                    return F.scaled_dot_product_attention(q, q, q)
            """,
            dynamo=BREAKS,
            inputs="(torch.rand(1, 2, 4, 8),)",
        ),
    )
    valid = (
        Example(
            # At module level, with its fallback there: the function reads a constant.
            """
            import torch
            import torch.nn.functional as F

            try:
                from flash_attn_not_installed_here import flash_attn_func
            except ImportError:
                flash_attn_func = None

            @torch.compile
            def f(q):
                q = q * 2
                if flash_attn_func is not None:
                    return flash_attn_func(q, q, q)
                return F.scaled_dot_product_attention(q, q, q)
            """,
            dynamo=CLEAN,
            inputs="(torch.rand(1, 2, 4, 8),)",
        ),
        Example(
            # An import without a fallback: it either works or fails the same way eagerly.
            """
            import torch

            @torch.compile
            def f(x):
                import math
                return x * math.pi
            """,
            dynamo=CLEAN,
        ),
    )


RULE = OptionalImport

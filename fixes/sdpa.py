"""DYN109: `with torch.backends.cuda.sdp_kernel(...)` -> `with torch.nn.attention.sdpa_kernel(
_sdpa_backends(...))`, the same arguments passed to a module-level helper that names the
backends they enable (inserted after the imports). Unsafe fix.

`sdp_kernel(enable_flash=..., enable_math=..., enable_mem_efficient=..., enable_cudnn=...)` (each
True by default) enables exactly the backends whose flag is set, for the block; `sdpa_kernel`
takes the list of backends to enable, and Dynamo traces it (probed: lucidrains' `attend.py`, 26
breaks per forward to none). The arguments are passed on as written (`**config._asdict()`).
Unsafe: `sdpa_kernel` exists from torch 2.3, and with every flag off it raises at the `with`
where `sdp_kernel` let the attention call fail.
"""

from __future__ import annotations

import libcst as cst

from dynalint.findings import UNSAFE
from dynalint.lint.rule import RuleContext

from .base import guarded, make_fix, replace_node, source_info
from .imports import _insert_line_after, leading_block_end, torch_reference

HELPER = "_sdpa_backends"


def _helper_text(torch: str, nl: str) -> str:
    return nl.join([
        f"def {HELPER}(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):",
        '    """The backends `torch.backends.cuda.sdp_kernel(...)` enables, for `torch.nn.attention.sdpa_kernel`."""',
        f"    backends = {torch}.nn.attention.SDPBackend",
        "    flags = {",
        "        backends.FLASH_ATTENTION: enable_flash,",
        "        backends.MATH: enable_math,",
        "        backends.EFFICIENT_ATTENTION: enable_mem_efficient,",
        "        backends.CUDNN_ATTENTION: enable_cudnn,",
        "    }",
        "    return [backend for backend, enabled in flags.items() if enabled]",
    ])


def sdpa_kernel_fix(ctx: RuleContext, call: cst.Call, code: str = "DYN109"):
    info = source_info(ctx.module, ctx.fn)
    defined = any(type(s) is cst.FunctionDef and s.name.value == HELPER for s in ctx.module.body)

    def generate(positions, module):
        torch, import_edits = torch_reference(info, positions)
        args = info.text(positions, call)[len(info.text(positions, call.func)):].strip()  # "(...)"
        edits = [*import_edits, replace_node(positions, call, f"{torch}.nn.attention.sdpa_kernel({HELPER}{args})")]
        if not defined:
            body = list(info.module.body)
            last = leading_block_end(body)
            if last is None:
                return None  # no import block to follow
            following = next(k for k, stmt in enumerate(body) if stmt is last) + 1
            nl = info.newline
            # two blank lines around it: the ones the next statement brings, and more up to two
            after = 0
            if following < len(body):
                for line in body[following].leading_lines:
                    if line.comment is not None:
                        break
                    after += 1
            text = nl + nl + _helper_text(torch, nl) + nl * max(0, 2 - after)
            edits.append(_insert_line_after(info, positions[last].end.line, text))
        return make_fix(UNSAFE, "Select the SDPA backends with `torch.nn.attention.sdpa_kernel`, which Dynamo traces",
                        edits)

    return guarded(code, generate)

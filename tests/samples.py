"""Source texts several test files lint."""

import textwrap

# An nn.Module whose forward prints (DYN101, line 7) and branches on a tensor (DYN120, line 8).
MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Net(nn.Module):
        def forward(self, x):
            print(x)
            if x.sum() > 0:
                x = x * 2
            return x
    """
)


# A range observer (buffers `lo`, `hi`, a `momentum` number) whose forward runs `chain` (code at
# forward's indentation, dedented) and returns `result`: the DYN120 select-chain fix's fixtures.
_OBSERVER = """\
import torch
from torch import nn


class Observer(nn.Module):
    def __init__(self, momentum=0.95):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("lo", torch.zeros(1))
        self.register_buffer("hi", torch.zeros(1))

    def forward(self, x):
        lo, hi = x.min(), x.max()
{chain}
        return {result}
"""


def range_observer(chain: str, result: str = "x") -> str:
    body = textwrap.indent(textwrap.dedent(chain).strip("\n"), " " * 8)
    return _OBSERVER.replace("{chain}", body).replace("{result}", result)

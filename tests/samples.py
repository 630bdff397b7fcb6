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

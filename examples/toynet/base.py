"""The base class every block derives from: shared pre/post processing around `mix`."""

import pdb

import torch
from torch import nn

from .ops import clamp_outliers, rms_normalize


class Block(nn.Module):
    def __init__(self, width, debug=False):
        super().__init__()
        self.width = width
        self.debug = debug
        self.gate = nn.Parameter(torch.full((width,), 0.5))

    def mix(self, x):
        raise NotImplementedError

    def forward(self, x):
        if self.debug:
            pdb.set_trace()
        h = rms_normalize(x)
        h = self.mix(h)
        return clamp_outliers(h)

"""Concrete blocks: an MLP and a token mixer, both built on `Block`."""

import torch
from torch import nn

from .base import Block
from .ops import residual


class MLPBlock(Block):
    def __init__(self, width, hidden):
        super().__init__(width)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def mix(self, x):
        temperature = self.gate.abs().mean().item()
        h = torch.nn.functional.gelu(self.up(x)) / temperature
        return residual(x, self.down(h), self.gate)


class TokenMixer(Block):
    def __init__(self, width, tokens):
        super().__init__(width)
        self.tokens = nn.Linear(tokens, tokens)

    def mix(self, x):
        # A branch on a size: fine for one shape, a recompile for each new sequence length.
        if x.shape[1] > 1:
            x = x + self.tokens(x.transpose(1, 2)).transpose(1, 2)
        return x

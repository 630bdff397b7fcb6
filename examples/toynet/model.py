"""Whole models: a stack of blocks with a head."""

import logging

import torch
from torch import nn

from .layers import MLPBlock, TokenMixer

log = logging.getLogger("toynet")


class ToyNet(nn.Module):
    def __init__(self, width=32, tokens=8, depth=2):
        super().__init__()
        self.tokens = tokens
        blocks = []
        for _ in range(depth):
            blocks += [TokenMixer(width, tokens), MLPBlock(width, 4 * width)]
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(width, width)

    def forward(self, x):
        log.info("ToyNet input %s", tuple(x.shape))
        if x.shape[1] > self.tokens:  # longer inputs keep their last tokens (a guard per length)
            x = x[:, -self.tokens :]
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class ToyClassifier(nn.Module):
    def __init__(self, width=32, classes=10):
        super().__init__()
        self.body = MLPBlock(width, 2 * width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        logits = self.head(self.body(x).mean(dim=1))
        if logits.abs().max() > 30:
            logits = logits / 2
        breakpoint()
        return logits

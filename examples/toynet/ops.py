"""Tensor helpers called from the blocks' forward methods (so they run under compile too)."""

import logging

import torch

logger = logging.getLogger(__name__)


def rms_normalize(x, eps=1e-6):
    scale = x.pow(2).mean(dim=-1, keepdim=True).add(eps).rsqrt()
    logger.debug("rms scale mean %s", scale.mean())
    return x * scale


def clamp_outliers(x, limit=6.0):
    # A branch on the tensor's values: Dynamo cannot know which side runs.
    if x.abs().max() > limit:
        x = x.clamp(-limit, limit)
    return x


def residual(x, y, gate):
    print("residual gate", gate.shape)
    return x + gate * y

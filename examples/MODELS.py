"""The models `dynalint migrate` verifies: each function returns `(module, example_inputs)`.

Run from the repository root:
    dynalint migrate examples/ --models examples/MODELS.py
"""

import torch

from toynet import ToyClassifier, ToyNet


def make_toynet():
    torch.manual_seed(0)
    return ToyNet(width=32, tokens=8, depth=2), (torch.randn(4, 8, 32),)


def make_classifier():
    torch.manual_seed(0)
    return ToyClassifier(width=32, classes=10), (torch.randn(4, 8, 32),)


MODELS = {
    "toynet": make_toynet,
    "classifier": make_classifier,
}

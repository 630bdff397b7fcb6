"""toynet: a small model package with the habits that break `torch.compile` graphs.

Each module plants a few of them on purpose (print, logging, `.item()`, a debugger call, a branch
on a tensor's value, a branch on a shape) inside code that runs in `forward`, directly or
through helpers in other files. `dynalint migrate` finds, fixes and verifies them.
"""

from .model import ToyClassifier, ToyNet

__all__ = ["ToyClassifier", "ToyNet"]

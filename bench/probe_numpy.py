"""Which NumPy functions Dynamo cannot trace on the installed torch: those numpy has and
`torch._numpy` lacks, each called on an array inside a `fullgraph=True` function. Prints the ones
that break with "unsupported by PyTorch" and how they compare with DYN105's NUMPY_UNSUPPORTED.

    python bench/probe_numpy.py
"""

import inspect
import logging
import warnings

import numpy as np
import torch
import torch._dynamo
import torch._numpy as tnp

from dynalint.lint.rules.dyn105_untraceable_call import NUMPY_UNSUPPORTED


def main() -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    names = sorted(n for n in dir(np) if not n.startswith("_") and callable(getattr(np, n))
                   and not inspect.isclass(getattr(np, n)) and not hasattr(tnp, n))
    unsupported = set()
    for name in names:
        fn = getattr(np, name)

        def call(x, fn=fn):
            return x + 1, fn(np.arange(x.shape[0]))

        torch._dynamo.reset()
        try:
            torch.compile(call, fullgraph=True, backend="eager")(torch.randn(3))
        except Exception as exc:  # noqa: BLE001 - any failure; only this message counts
            if "unsupported by PyTorch" in str(exc):
                unsupported.add(name)
    print(f"torch {torch.__version__}: {len(unsupported)} of {len(names)} untraceable")
    print("in the rule, traced here:", sorted(NUMPY_UNSUPPORTED - unsupported) or "none")
    print("untraceable here, not in the rule:", sorted(unsupported - NUMPY_UNSUPPORTED) or "none")


if __name__ == "__main__":
    main()

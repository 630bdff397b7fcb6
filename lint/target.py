"""The torch version the linted code will run on, found without importing torch.

Some breaks depend on the torch version (`random.random()` is skipped by Dynamo on 2.13 and
traced from 2.14). The target is, in order: `target-torch` from `[tool.dynalint]` (set by the
engine at the start of each run, before it forks workers), the `DYNALINT_TARGET_TORCH`
environment variable, the installed torch's version from its package metadata, else unknown
(None): rules then report what breaks on any torch version they were probed on.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Optional

ENV = "DYNALINT_TARGET_TORCH"


def parse_version(text: Optional[str]) -> Optional[tuple[int, int]]:
    """'2.14.1+cpu' -> (2, 14); None for anything without a major.minor."""
    if not text:
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


@lru_cache(maxsize=None)
def installed_torch() -> Optional[tuple[int, int]]:
    """The installed torch's major.minor from its package metadata (torch is not imported)."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        return parse_version(version("torch"))
    except PackageNotFoundError:
        return None


_configured: Optional[str] = None  # `target-torch` of the run's config


def target_torch() -> Optional[tuple[int, int]]:
    text = _configured or os.environ.get(ENV)
    if text:
        return parse_version(text)
    return installed_torch()


_floor: Optional[str] = None  # `min-torch` of the run's config (or its pyproject's floor)


def torch_floor() -> Optional[tuple[int, int]]:
    """The oldest torch the linted project supports, None where unknown."""
    return parse_version(_floor)


def configure_floor(text: Optional[str]) -> None:
    global _floor
    _floor = text


def target_text() -> str:
    """For cache keys: which target the findings were computed for (and the project's torch floor,
    which decides whether a guard fix is safe)."""
    t = target_torch()
    text = "unknown" if t is None else f"{t[0]}.{t[1]}"
    return text if _floor is None else f"{text}/min{_floor}"


def configure(text: Optional[str]) -> None:
    """Apply a run's `target-torch` setting (None: none configured)."""
    global _configured
    if text is not None and parse_version(text) is None:
        raise ValueError(f"target-torch must look like '2.14', got {text!r}")
    _configured = text

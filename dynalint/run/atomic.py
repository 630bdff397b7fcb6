"""Atomic file writes: a temporary file in the target's folder, renamed over the target."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional


def write_bytes_atomically(path: Path, data: bytes, mode: Optional[int] = None, durable: bool = False) -> None:
    """Readers see the old content or the new, never part of it; the temporary file is removed
    when anything fails. `mode`: permission bits to give the new file; `durable`: fsync before
    the rename (source files the user edits; cache entries can be recomputed and skip it)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

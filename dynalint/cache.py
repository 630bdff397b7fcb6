"""Persistent cache of per-file analysis (phase 1), keyed by content, version and options.

Only single-file results are cached; what depends on other files (compile regions across
imports and base classes) is recomputed on every run from the cached summaries, so a changed
base class or helper can never leave stale findings behind. Writes are atomic (temp + rename),
so concurrent runs at worst compute the same entry twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

from dynalint import __version__


def _rules_fingerprint() -> str:
    """Hash of the lint package's own source, so editing a rule invalidates the cache in dev."""
    import dynalint.lint as lint_pkg

    h = hashlib.sha256(__version__.encode())
    root = Path(lint_pkg.__file__).parent
    for p in sorted(root.rglob("*.py")):
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


_FINGERPRINT: Optional[str] = None


class Cache:
    def __init__(self, directory: Path):
        global _FINGERPRINT
        if _FINGERPRINT is None:
            _FINGERPRINT = _rules_fingerprint()
        self.dir = directory / _FINGERPRINT
        self.dir.mkdir(parents=True, exist_ok=True)
        gitignore = directory / ".gitignore"
        if not gitignore.exists():
            try:
                gitignore.write_text("*\n")
            except OSError:
                pass

    def key(self, text: str, display: str, module: str, is_package: bool, options: tuple) -> str:
        h = hashlib.sha256()
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(f"\0{display}\0{module}\0{is_package}\0{options!r}".encode())
        return h.hexdigest()

    def get(self, key: str) -> Optional[dict[str, Any]]:
        p = self.dir / key[:2] / f"{key}.json"
        try:
            with open(p, "r", encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def put(self, key: str, data: dict[str, Any]) -> None:
        d = self.dir / key[:2]
        try:
            d.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, separators=(",", ":"))
            os.replace(tmp, d / f"{key}.json")
        except OSError:
            pass

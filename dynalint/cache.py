"""Persistent cache of per-file analysis (phase 1), keyed by content, version and options.

A summary depends only on what its key holds: the file's text, name and module, the analysis
options, the cross-file facts other files gave it (`lint/hints.py`, part of the key) and the
analyzer's own code (the fingerprint naming the cache folder). What depends on other files
(compile regions across imports and base classes, the facts themselves) is recomputed on every
run from the summaries, so a changed base class or helper can never leave stale findings behind.

Entries are `marshal` data (plain dicts, lists and strings; several times faster to load than
JSON). Writes go to a temporary file renamed into place, so concurrent runs never see a partial
entry and at worst compute the same entry twice; an unreadable entry is a miss.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

from dynalint import __version__

FORMAT = "m1"  # bump when the entry layout changes


def _code_fingerprint() -> str:
    """Version plus size and mtime of every source file that shapes a summary (analyzer, rules,
    fix generators, findings), so editing any of them invalidates the cache during development."""
    import dynalint.findings as findings_mod
    import dynalint.fixes as fixes_pkg
    import dynalint.lint as lint_pkg

    h = hashlib.sha256(f"{__version__}:{FORMAT}".encode())
    files = [Path(findings_mod.__file__)]
    for pkg in (lint_pkg, fixes_pkg):
        files += sorted(Path(pkg.__file__).parent.rglob("*.py"))
    for p in files:
        st = p.stat()
        h.update(f"{p.as_posix()}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


_FINGERPRINT: Optional[str] = None


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Cache:
    def __init__(self, directory: Path):
        global _FINGERPRINT
        if _FINGERPRINT is None:
            _FINGERPRINT = _code_fingerprint()
        self.dir = directory / _FINGERPRINT
        self.dir.mkdir(parents=True, exist_ok=True)
        gitignore = directory / ".gitignore"
        if not gitignore.exists():
            try:
                _write_atomically(gitignore, b"*\n")
            except OSError:
                pass

    def key(self, text: str, display: str, module: str, is_package: bool, options: tuple) -> str:
        h = hashlib.sha256()
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(f"\0{display}\0{module}\0{is_package}\0{options!r}".encode())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / key

    def get(self, key: str) -> Optional[dict[str, Any]]:
        try:
            with open(self._path(key), "rb") as fh:
                data = marshal.load(fh)
        except (OSError, EOFError, ValueError, TypeError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, data: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(exist_ok=True)
            _write_atomically(path, marshal.dumps(data))
        except (OSError, ValueError):  # ValueError: a value marshal cannot hold; stay uncached
            pass

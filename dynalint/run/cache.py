"""Persistent cache of per-file analysis (phase 1), keyed by content, version and options.

A summary depends only on what its key holds: the file's text, name and module, the analysis
options, the cross-file facts other files gave it (`lint/hints.py`, part of the key) and the
analyzer's own code (the fingerprint naming the cache folder). What depends on other files
(compile regions across imports and base classes, the facts themselves) is recomputed from the
summaries whenever what other files read of a file (its interface) changed, so a changed base
class or helper can never leave stale findings behind (`dynalint.run.incremental`).

Entries are `marshal` data (plain dicts, lists and strings; several times faster to load than
JSON), one file per entry plus, per set of linted files, a pack of all the entries its last run
used (one read instead of thousands), and per set of linted files and options, the state
`dynalint.run.incremental` re-lints changed files from. Writes go to a temporary file renamed into
place, so concurrent runs never see a partial entry or pack and at worst compute the same entry
twice; an unreadable entry or pack is a miss. Files are read whole and decoded with
`marshal.loads`: `marshal.load` on a file object reads it in one call per object (a 15 MB pack
took 0.8 s that way, 0.14 s read whole).
"""

from __future__ import annotations

import hashlib
import marshal
import os
from pathlib import Path
from typing import Any, Optional

from dynalint import __version__
from dynalint.lint.target import target_text
from dynalint.run.atomic import write_bytes_atomically

FORMAT = "m5"  # bump when the entry layout or what an analysis infers changes
# Packs, run records and states are per set of linted files: a pre-commit hook makes a new set
# on most commits. Each of those folders keeps the files most recently used.
KEEP_PER_FOLDER = 128


def _prune(folder: Path, keep: int) -> None:
    """Delete all but the `keep` most recently used files of folder (a concurrent run that loses
    one of them sees a miss, never a broken file)."""
    try:
        entries = list(os.scandir(folder))
        if len(entries) <= keep:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
        for entry in entries[keep:]:
            os.unlink(entry.path)
    except OSError:
        pass


def _source_files() -> list[tuple[Path, str]]:
    """(path, name inside the package) of every source file that shapes a summary (analyzer,
    rules, fix generators, findings) or a run record or state (the engine's cross-file rounds,
    regions, the incremental path)."""
    import dynalint.findings as findings_mod
    import dynalint.fixes as fixes_pkg
    import dynalint.lint as lint_pkg

    run = Path(__file__).parent  # this package, dynalint.run
    files = [(Path(findings_mod.__file__), "findings.py")]
    files += [(run / name, f"run/{name}") for name in ("engine.py", "incremental.py")]
    for pkg, name in ((lint_pkg, "lint"), (fixes_pkg, "fixes")):
        root = Path(pkg.__file__).parent
        files += [(p, f"{name}/{p.relative_to(root).as_posix()}") for p in sorted(root.rglob("*.py"))]
    return files


def _fingerprint_of(files: list[tuple[Path, str]]) -> str:
    """Version, cache format, and the names and content of files.

    Content, not size and mtime: a checkout, rebase or editor that rewrites a file with the same
    text must leave every process on the same cache folder (with mtimes, two processes started
    on either side of such a touch used different folders, and one saw the other's entries and
    state as missing). Reading the ~55 sources (~0.5 MB) costs under a millisecond more than
    stat-ing them."""
    h = hashlib.sha256(f"{__version__}:{FORMAT}".encode())
    for path, name in files:
        data = path.read_bytes()
        h.update(f"\0{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16]


def _code_fingerprint() -> str:
    """The cache folder's name: editing any source that shapes what is cached invalidates it."""
    return _fingerprint_of(_source_files())


_FINGERPRINT: Optional[str] = None


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
                write_bytes_atomically(gitignore, b"*\n")
            except OSError:
                pass

    def key(self, text: str, display: str, module: str, is_package: bool, options: tuple) -> str:
        h = hashlib.sha256()
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(f"\0{display}\0{module}\0{is_package}\0{options!r}".encode())
        # Findings of version-aware rules depend on the torch the code targets (lint/target.py).
        h.update(f"\0torch {target_text()}".encode())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / key

    def get(self, key: str) -> Optional[dict[str, Any]]:
        try:
            with open(self._path(key), "rb") as fh:
                data = marshal.loads(fh.read())
        except (OSError, EOFError, ValueError, TypeError):
            return None
        return data if isinstance(data, dict) else None

    # -- packs: one file per set of linted files ------------------------------------------------
    # Opening thousands of small entries costs more than the analysis a warm run saves; a pack
    # holds every entry one run used, read in one go by the next run over the same files.
    def pack_name(self, names: list[str]) -> str:
        return hashlib.sha256("\0".join(sorted(names)).encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def load_pack(self, name: str) -> dict[str, dict[str, Any]]:
        return self._load(self.dir / "packs" / name)

    def save_pack(self, name: str, entries: dict[str, dict[str, Any]]) -> None:
        self._save(self.dir / "packs" / name, entries)

    # -- run records (see dynalint.run.engine._RunRecord) ---------------------------------------
    def load_record(self, name: str) -> dict[str, Any]:
        return self._load(self.dir / "runs" / name)

    def save_record(self, name: str, data: dict[str, Any]) -> None:
        self._save(self.dir / "runs" / name, data)

    # -- incremental states (see dynalint.run.incremental) ---------------------------------------
    def load_state(self, name: str) -> dict[str, Any]:
        return self._load(self.dir / "states" / name)

    def save_state(self, name: str, data: dict[str, Any]) -> None:
        self._save(self.dir / "states" / name, data)

    def _load(self, path: Path) -> dict[str, Any]:
        try:
            with open(path, "rb") as fh:
                data = marshal.loads(fh.read())
            os.utime(path)  # recently used: kept by _prune
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, path: Path, data: dict[str, Any]) -> None:
        try:
            path.parent.mkdir(exist_ok=True)
            write_bytes_atomically(path, marshal.dumps(data))
        except (OSError, ValueError):
            return
        _prune(path.parent, KEEP_PER_FOLDER)

    def put(self, key: str, data: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(exist_ok=True)
            write_bytes_atomically(path, marshal.dumps(data))
        except (OSError, ValueError):  # ValueError: a value marshal cannot hold; stay uncached
            pass


# How many entries a pack may lack (found in their own files) or hold unused before it is
# written again.
PACK_SLACK = 32


class RunCache:
    """The persistent cache as one run uses it: entries come from the pack of the last run over
    the same files when there is one, else from their own files; the run's entries make the
    next pack (written only when they changed)."""

    def __init__(self, cache_dir: Path, names: list[str]):
        self.cache = Cache(Path(cache_dir))
        self.pack_name = self.cache.pack_name(names)
        self.pack = self.cache.load_pack(self.pack_name)
        self.used: dict[str, dict] = {}

    def get(self, key: str) -> Optional[dict]:
        data = self.pack.get(key)
        if data is None:
            data = self.cache.get(key)
        if data is not None:
            self.used[key] = data
        return data

    def record(self, key: str, data: dict) -> None:
        self.used[key] = data  # computed by a worker, which also wrote its own entry

    def save(self) -> None:
        """Rewrite the pack when a fair share of its entries changed. A few new entries (one
        edited file) are read from their own files next time: rewriting a big tree's pack
        (15 MB for transformers) cost more than that."""
        missing = sum(1 for k in self.used if k not in self.pack)
        stale = len(self.pack) - (len(self.used) - missing)
        if missing > PACK_SLACK or stale > PACK_SLACK or (missing and not self.pack):
            self.cache.save_pack(self.pack_name, self.used)

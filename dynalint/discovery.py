"""Which files to lint: walk the given paths, skip excluded and .gitignored ones (via pathspec)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Iterable, Optional

from dynalint.config import Config


def _load_gitignore(directory: Path):
    import pathspec

    p = directory / ".gitignore"
    if not p.is_file():
        return None
    try:
        lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _git_root(start: Path) -> Optional[Path]:
    for d in [start, *start.parents]:
        if (d / ".git").exists():
            return d
    return None


class _Ignorer:
    """.gitignore files from the repository root down to each folder, as git reads them."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._specs: dict[Path, object] = {}

    def spec(self, d: Path):
        if d not in self._specs:
            self._specs[d] = _load_gitignore(d)
        return self._specs[d]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if not self.enabled:
            return False
        root = _git_root(path.parent) or path.parent
        d = path.parent
        chain = []
        while True:
            chain.append(d)
            if d == root or d.parent == d:
                break
            d = d.parent
        result = False
        for d in reversed(chain):
            spec = self.spec(d)
            if spec is None:
                continue
            rel = path.relative_to(d).as_posix() + ("/" if is_dir else "")
            res = spec.check_file(rel)
            if res.include is not None:
                result = res.include
        return result


def _excluded(path: Path, patterns: Iterable[str], root: Path) -> bool:
    name = path.name
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = path.as_posix()
    for pat in patterns:
        pat = pat.rstrip("/")
        if fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(rel, pat) or rel.startswith(pat + "/"):
            return True
    return False


def discover(paths: list[Path], config: Config) -> list[Path]:
    """Python files under paths, sorted, excluding config excludes and gitignored files.
    Files named explicitly are always included (as in ruff without force-exclude)."""
    patterns = tuple(config.exclude) + tuple(config.extend_exclude)
    ignorer = _Ignorer(config.respect_gitignore)
    root = config.root
    out: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        if given.is_file() or not given.exists():
            if given not in seen:
                seen.add(given)
                out.append(given)
            continue
        for dirpath, dirnames, filenames in os.walk(given):
            d = Path(dirpath)
            keep = []
            for name in sorted(dirnames):
                sub = d / name
                if _excluded(sub, patterns, root) or ignorer.ignored(sub, True):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                f = d / name
                if _excluded(f, patterns, root) or ignorer.ignored(f, False):
                    continue
                if f not in seen:
                    seen.add(f)
                    out.append(f)
    return sorted(out, key=lambda p: p.as_posix())

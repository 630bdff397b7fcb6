"""The safety net `migrate` insists on: the files it edits must be committed in git first.

A migration rewrites many files; with a clean tree `git diff` shows exactly what it did and
`git checkout .` undoes it. Uncommitted changes under PATH (modified, staged or untracked files)
would be mixed into that, so migrate refuses them unless --allow-dirty. Changes migrate made itself
on an earlier, interrupted run (recorded in its state file) are not dirt: that is how it resumes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Callable, Optional


class GitError(Exception):
    """PATH is not in a git work tree, or git cannot be run."""


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"`git {' '.join(args)}` timed out") from exc
    if proc.returncode != 0:
        raise GitError(proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else f"git {args[0]} failed")
    return proc.stdout


def work_tree(path: Path) -> Path:
    """The root of the git work tree holding path (raises GitError outside one)."""
    folder = path if path.is_dir() else path.parent
    try:
        return Path(_git(["rev-parse", "--show-toplevel"], folder).strip()).resolve()
    except GitError as exc:
        raise GitError(f"{path} is not in a git repository ({exc})") from exc


def _status_paths(output: str) -> list[tuple[str, str]]:
    """(status, path) from `git status --porcelain=v1 -z` (a rename carries its source as a second entry)."""
    out, entries, i = [], output.split("\0"), 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        out.append((entry[:2], entry[3:]))
        if entry[0] in "RC":
            i += 1  # skip the rename's source path
    return out


def dirty_files(path: Path, ignore: list[Path], is_own_change: Callable[[Path], bool]) -> list[str]:
    """Uncommitted changes under path, relative to the work tree, except ignored folders and own changes.

    Tracked files count whatever their type; untracked files only when they are Python files,
    since those are what migrate may rewrite with no committed copy to go back to.
    """
    root = work_tree(path)
    output = _git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", str(path.resolve())], root)
    ignored = [p.resolve() for p in ignore]
    dirty = []
    for status, rel in _status_paths(output):
        full = (root / rel).resolve()
        if status == "??" and full.suffix != ".py":
            continue
        if any(_is_within(full, folder) for folder in ignored):
            continue
        if full.is_file() and is_own_change(full):
            continue
        dirty.append(rel)
    return dirty


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def head_commit(path: Path) -> Optional[str]:
    """The commit the migration starts from (for the report), None outside git."""
    try:
        return _git(["rev-parse", "HEAD"], path if path.is_dir() else path.parent).strip() or None
    except GitError:
        return None


def describe_dirty(files: list[str], limit: int = 10) -> str:
    shown = files[:limit]
    more = f"{os.linesep}  ... and {len(files) - limit} more" if len(files) > limit else ""
    return os.linesep.join(f"  {f}" for f in shown) + more

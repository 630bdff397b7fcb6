"""Which files to lint: walk the given paths, skip excluded and .gitignored ones (via pathspec)."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path
from typing import Iterable, Optional

from dynalint.config import DEFAULT_EXCLUDE, Config, _has_config


def _read_lines(p: Path) -> list[str]:
    try:
        return p.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


class _Ignorer:
    """.gitignore files from the repository root down to each folder, as git reads them.

    Outside a git repository the walk's top folder stands in for the root, so a .gitignore there
    still applies to everything below it. At the root `.git/info/exclude` is read first, so the
    root's .gitignore overrides it (gitignore's last match wins).
    """

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._specs: dict[Path, object] = {}
        self._git_roots: dict[Path, Optional[Path]] = {}

    def git_root(self, d: Path) -> Optional[Path]:
        chain = []
        found: Optional[Path] = None
        cur: Optional[Path] = d
        while cur is not None:
            if cur in self._git_roots:
                found = self._git_roots[cur]
                break
            chain.append(cur)
            if (cur / ".git").exists():
                found = cur
                break
            cur = cur.parent if cur.parent != cur else None
        for c in chain:
            self._git_roots[c] = found
        return found

    def spec(self, d: Path, is_root: bool):
        key = (d, is_root)
        if key not in self._specs:
            import pathspec

            lines = _read_lines(d / ".git" / "info" / "exclude") if is_root else []
            lines += _read_lines(d / ".gitignore")
            self._specs[key] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[key]

    def specs_for(self, folder: Path, top: Optional[Path] = None, floor: Optional[Path] = None) -> list[tuple[object, str]]:
        """The .gitignore specs that apply to the entries of folder, from the root down, each
        with folder's path relative to the spec's own folder ("" or "sub/dir/").
        floor: a folder named on the command line that git itself ignores; as ruff does, it is
        walked anyway, so only the .gitignore files at and below it apply."""
        if not self.enabled:
            return []
        root = floor or self.git_root(folder) or top or folder
        chain = []
        d = folder
        while True:
            chain.append(d)
            if d == root or d.parent == d:
                break
            d = d.parent
        specs = []
        for d in reversed(chain):
            spec = self.spec(d, d == root)
            if spec is not None:
                inner = folder.relative_to(d).as_posix()
                specs.append((spec, "" if inner == "." else inner + "/"))
        return specs

    def ignored(self, path: Path, is_dir: bool, top: Optional[Path] = None, floor: Optional[Path] = None) -> bool:
        return _gitignored(self.specs_for(path.parent, top, floor), path.name, is_dir)


def _gitignored(specs: list[tuple[object, str]], name: str, is_dir: bool) -> bool:
    """Entry `name` of a folder is ignored by the folder's specs (`specs_for`; last match wins)."""
    result = False
    for spec, inner in specs:
        res = spec.check_file(inner + name + ("/" if is_dir else ""))
        if res.include is not None:
            result = res.include
    return result


def _pattern_hit(regex, prefixes: tuple[str, ...], name: str, rel: str) -> bool:
    """An entry's name or its path relative to the config root matches an exclude pattern
    (`_compiled`), or lies below a folder one names."""
    return regex.match(name) is not None or regex.match(rel) is not None or rel.startswith(prefixes)


def _matches(path: Path, patterns: Iterable[str], root: Path) -> bool:
    """path's name or its path relative to root matches a pattern (fnmatch), or lies below one."""
    name = path.name
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    return _pattern_hit(*_compiled(tuple(patterns)), name, rel)


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]):
    """One regex for a config's patterns (what `fnmatch.fnmatch` does one by one, posix case
    rules) and the folder prefixes they name: discovery asks this of every file and folder."""
    cleaned = []
    for pat in patterns:
        pat = pat.rstrip("/")
        if pat.startswith("./"):
            pat = pat[2:]
        cleaned.append(os.path.normcase(pat))
    regex = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in cleaned) or "(?!)")
    return regex, tuple(p + "/" for p in cleaned)


def _excluded(path: Path, config: Config) -> bool:
    """path itself matches `exclude`/`extend-exclude` of the config governing it."""
    cfg = config.for_path(path)
    return _matches(path, tuple(cfg.exclude) + tuple(cfg.extend_exclude), cfg.root.absolute())


def is_excluded(path: Path, config: Config) -> bool:
    """path or one of its folders below its config's root is excluded (`--force-exclude`, editors)."""
    path = Path(path).absolute()
    if _excluded(path, config):
        return True
    root = config.for_path(path).root.absolute()
    for parent in path.parents:
        if parent == root or parent.parent == parent or root not in parent.parents:
            break
        if _excluded(parent, config):
            return True
    return False


# What the excludes leave out, by setting (`discover`'s `skipped`): the default excludes, the
# config's own `exclude` (which replaces them) or `extend-exclude`, or .gitignore.
DEFAULT_EXCLUDES, EXCLUDE, EXTEND_EXCLUDE, GITIGNORE = "default excludes", "exclude", "extend-exclude", ".gitignore"


def _exclude_setting(cfg: Config, name: str, rel: str) -> Optional[str]:
    """Which exclude setting of cfg leaves out an entry (name, path relative to cfg's root), if any."""
    if _pattern_hit(*_compiled(tuple(cfg.exclude)), name, rel):
        return DEFAULT_EXCLUDES if tuple(cfg.exclude) == DEFAULT_EXCLUDE else EXCLUDE
    if _pattern_hit(*_compiled(tuple(cfg.extend_exclude)), name, rel):
        return EXTEND_EXCLUDE
    return None


def discover(paths: list[Path], config: Config, force_exclude: bool = False, skipped: Optional[dict] = None) -> list[Path]:
    """Python files under paths, sorted, excluding config excludes and gitignored files.
    Files named explicitly are always included (as in ruff), unless force_exclude.
    `skipped`, when given, counts what was left out: {(setting, "folder" | "file"): [paths]},
    setting one of DEFAULT_EXCLUDES, EXCLUDE, EXTEND_EXCLUDE, GITIGNORE (Python files only)."""
    ignorer = _Ignorer(config.respect_gitignore)
    out: list[Path] = []
    seen: set[Path] = set()
    walked: list[str] = []
    for given in paths:
        if given.is_file() or not given.exists():
            if force_exclude and is_excluded(given, config):
                if skipped is not None and given.suffix == ".py":
                    skipped.setdefault((_named_reason(given, config), "file"), []).append(str(given))
                continue
            if given not in seen:
                seen.add(given)
                out.append(given)
            continue
        if force_exclude and is_excluded(given, config):
            continue
        top = given.absolute()
        floor = top if _named_but_ignored(ignorer, top) else None
        rules_of: dict[str, _FolderRules] = {}
        # A folder named on the command line is walked even when it lies inside an excluded one
        # (`site-packages/transformers`): patterns then match only paths below it.
        base = top if not force_exclude and is_excluded(top, config) else None
        for dirpath, dirnames, filenames in os.walk(given):
            rules = rules_of.pop(dirpath, None)
            if rules is None:
                rules = _FolderRules(Path(dirpath).absolute(), config, ignorer, top, floor, base)
            kept = []
            for name in sorted(dirnames):
                if not rules.skips(name, True):
                    kept.append(name)
                elif skipped is not None:
                    skipped.setdefault((rules.reason(name, True), "folder"), []).append(os.path.join(dirpath, name))
            dirnames[:] = kept
            for name in dirnames:
                rules_of[os.path.join(dirpath, name)] = rules.child(name, config, ignorer, top, floor)
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                if not rules.skips(name, False):
                    walked.append(os.path.join(dirpath, name))
                elif skipped is not None:
                    skipped.setdefault((rules.reason(name, False), "file"), []).append(os.path.join(dirpath, name))
    for f in map(Path, walked):  # Path objects only for what is kept: a big tree has thousands
        if f not in seen:
            seen.add(f)
            out.append(f)
    return sorted(out, key=lambda p: p.as_posix())


def _named_reason(path: Path, config: Config) -> str:
    """Which exclude setting leaves out a path named on the command line (`is_excluded` said one does)."""
    path = Path(path).absolute()
    cfg = config.for_path(path)
    root = cfg.root.absolute()
    for p in (path, *path.parents):
        if p != path and (p == root or root not in p.parents):
            break
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            rel = p.as_posix()
        setting = _exclude_setting(cfg, p.name, rel)
        if setting is not None:
            return setting
    return DEFAULT_EXCLUDES if tuple(cfg.exclude) == DEFAULT_EXCLUDE else EXCLUDE


def _named_but_ignored(ignorer: _Ignorer, top: Path) -> bool:
    """A folder named on the command line that git ignores, itself or through a folder above it
    (a package under a pyenv checkout's ignored `versions/`): walked anyway, from itself down."""
    if not ignorer.enabled:
        return False
    root = ignorer.git_root(top)
    d = top
    while True:
        if ignorer.ignored(d, True, d.parent):
            return True
        if root is None or d == root or d.parent == d:
            return False
        d = d.parent


class _FolderRules:
    """Exclusion and .gitignore for the entries of one folder, worked out once per folder (the
    governing config, its patterns and root, the .gitignore files that apply and the entry's path
    relative to each) so that each entry costs a few string operations: walking a big tree
    asks this of thousands of files."""

    def __init__(self, folder: Path, config: Config, ignorer: _Ignorer, top: Path, floor: Optional[Path], base: Optional[Path] = None):
        self.folder = folder
        cfg = config.for_path(folder / "_")
        self.regex, self.prefixes = _compiled(tuple(cfg.exclude) + tuple(cfg.extend_exclude))
        root = base or cfg.root.absolute()
        try:
            rel = folder.relative_to(root).as_posix()
        except ValueError:
            rel = folder.as_posix()
        self.rel_dir = "" if rel == "." else rel + "/"
        self.specs = ignorer.specs_for(folder, top, floor)
        self.base = base
        self.cfg = cfg

    def child(self, name: str, config: Config, ignorer: _Ignorer, top: Path, floor: Optional[Path]) -> "_FolderRules":
        """The rules of subfolder `name`: this folder's, one level down, unless the subfolder
        holds its own config or repository (then worked out from scratch)."""
        folder = self.folder / name
        if _has_config(folder) is not None or (ignorer.enabled and (folder / ".git").exists()):
            return _FolderRules(folder, config, ignorer, top, floor, self.base)
        rules = _FolderRules.__new__(_FolderRules)
        rules.folder = folder
        rules.base = self.base
        rules.cfg = self.cfg
        rules.regex, rules.prefixes = self.regex, self.prefixes
        rules.rel_dir = f"{self.rel_dir}{name}/"
        rules.specs = [(spec, f"{inner}{name}/") for spec, inner in self.specs]
        if ignorer.enabled:
            own = ignorer.spec(folder, False)
            if own is not None:
                rules.specs.append((own, ""))
        return rules

    def reason(self, name: str, is_dir: bool) -> str:
        """Which setting leaves out an entry `skips` leaves out (see DEFAULT_EXCLUDES ...)."""
        return _exclude_setting(self.cfg, name, self.rel_dir + name) or GITIGNORE

    def skips(self, name: str, is_dir: bool) -> bool:
        return _pattern_hit(self.regex, self.prefixes, name, self.rel_dir + name) or _gitignored(self.specs, name, is_dir)

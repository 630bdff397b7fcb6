"""`[tool.dynalint]` configuration, found by walking up from each linted file (as ruff does).

A run starts from the config nearest its first path (or the file given with `--config`). With
hierarchical lookup on (the default without `--config`), a file under a folder with its own
`pyproject.toml` `[tool.dynalint]` table or `dynalint.toml` is governed by that nearer config for
rule selection, per-file ignores, severities and excludes; command-line `--select/--ignore` apply on
top of whichever config governs. Settings that shape the whole run (`src`, `extra-roots`, `target-torch`,
`is-compiling-functions`, `cache-dir`, `respect-gitignore`) come from the run's config.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Recompile hints are on, host-sync notes are opt-in (they are not breaks).
DEFAULT_SELECT = ("DYN0", "DYN1", "DYN2")
SEVERITIES = ("error", "warning", "info")
CONFIG_NAMES = ("dynalint.toml", "pyproject.toml")  # in order of precedence within one folder

KNOWN_KEYS = {
    "select",
    "extend-select",
    "ignore",
    "extend-ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "src",
    "extra-roots",
    "is-compiling-functions",
    "severity",
    "respect-gitignore",
    "cache-dir",
    "target-torch",
    "min-torch",
}

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pytest_cache",
    ".ruff_cache",
    ".dynalint_cache",
    ".tox",
    ".venv",
    "venv",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    "site-packages",
)


class ConfigError(Exception):
    """A configuration problem the user must fix (exit code 2)."""


@dataclass(frozen=True)
class Overrides:
    """Rule selection given on the command line or by an editor; applied over any config file."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def apply(self, config: "Config") -> None:
        if self.select:
            config.select = self.select
            config.extend_select = ()
        if self.extend_select:
            config.extend_select = config.extend_select + self.extend_select
        if self.ignore:
            config.ignore = config.ignore + self.ignore


@dataclass
class Config:
    select: tuple[str, ...] = DEFAULT_SELECT
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    src: tuple[str, ...] = ()
    extra_roots: tuple[str, ...] = ()
    is_compiling_functions: tuple[str, ...] = ()
    severity: dict[str, str] = field(default_factory=dict)
    respect_gitignore: bool = True
    cache_dir: Optional[str] = None  # absolute, or relative to the config's folder
    # The torch version the code runs on ("2.14"): version-aware rules follow it. None: the
    # installed torch's (read from its package metadata; see lint/target.py).
    target_torch: Optional[str] = None
    # The oldest torch the linted project supports (`min-torch`, else its pyproject's
    # `[project] dependencies`): below 2.3 the print/logging/warnings guard is unsafe.
    min_torch: Optional[str] = None
    path: Optional[Path] = None  # the file it came from
    # Look for nearer configs per file (off for configs built in code or given with --config).
    hierarchical: bool = False
    overrides: Overrides = field(default_factory=Overrides)
    _nested: dict[Path, "Config"] = field(default_factory=dict, repr=False, compare=False)
    # folder (as given) -> the config governing files in it: selection asks once per file and code
    _by_folder: dict[str, "Config"] = field(default_factory=dict, repr=False, compare=False)

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    @property
    def cache_path(self) -> Optional[Path]:
        if self.cache_dir is None:
            return None
        return self.root / Path(self.cache_dir).expanduser()

    def with_overrides(self, overrides: Overrides) -> "Config":
        """A copy with command-line / editor selection applied (also to nested configs)."""
        cfg = replace(self, overrides=overrides, _nested={}, _by_folder={})
        overrides.apply(cfg)
        return cfg

    # -- hierarchical lookup -------------------------------------------------------------------
    def for_path(self, filename: "str | Path") -> "Config":
        """The config governing filename: the nearest one above it, else this one."""
        if not self.hierarchical:
            return self
        folder = os.path.dirname(os.fspath(filename))
        cfg = self._by_folder.get(folder)
        if cfg is None:
            cfg = self._by_folder[folder] = self._for_folder(Path(filename).absolute().parent)
        return cfg

    def _for_folder(self, folder: Path) -> "Config":
        found = nearest_config(folder)
        if found is None or (self.path is not None and found == self.path.resolve()):
            return self
        cfg = self._nested.get(found)
        if cfg is None:
            cfg = load_config_file(found)
            self.overrides.apply(cfg)
            cfg.overrides = self.overrides
            self._nested[found] = cfg
        return cfg

    # -- rule selection ------------------------------------------------------------------------
    def enabled_codes(self, all_codes: list[str]) -> frozenset[str]:
        return frozenset(c for c in all_codes if self.is_enabled(c))

    def is_enabled(self, code: str, filename: Optional[str] = None) -> bool:
        if filename is not None:
            return self.for_path(filename)._is_enabled_here(code, filename)
        return self._is_enabled_here(code, None)

    def _is_enabled_here(self, code: str, filename: Optional[str]) -> bool:
        sel = _longest_prefix(code, self.select + self.extend_select)
        ign = _longest_prefix(code, self.ignore)
        if filename is not None:
            ign = max(ign, _longest_prefix(code, self._per_file(filename)))
        # As in ruff: the more specific prefix wins; on a tie, ignore wins.
        return sel >= 0 and sel > ign

    def _per_file(self, filename: str) -> tuple[str, ...]:
        import fnmatch

        if not self.per_file_ignores:
            return ()
        out: list[str] = []
        path = Path(filename)
        try:
            rel = path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            rel = path.as_posix()
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(path.name, pattern):
                out.extend(codes)
        return tuple(out)

    def severity_of(self, code: str, default: str, filename: Optional[str] = None) -> str:
        """The configured severity for code (longest matching prefix), else default."""
        cfg = self.for_path(filename) if filename is not None else self
        best, best_len = default, -1
        for prefix, sev in cfg.severity.items():
            if code.startswith(prefix) and len(prefix) > best_len:
                best, best_len = sev, len(prefix)
        return best

    def cache_key(self) -> str:
        return repr(
            (
                self.select,
                self.extend_select,
                self.ignore,
                self.extra_roots,
                self.is_compiling_functions,
            )
        )


def _longest_prefix(code: str, prefixes) -> int:
    """Length of the longest prefix of code in prefixes (`ALL` counts as 0), -1 if none."""
    best = -1
    for p in prefixes:
        if p == "ALL":
            best = max(best, 0)
        elif code.startswith(p):
            best = max(best, len(p))
    return best


# ------------------------------------------------------------------------------------------------
# Parsing


def known_codes() -> list[str]:
    from dynalint.lint.catalog import RULE_CODES  # the codes only: no rule module is imported

    return list(RULE_CODES)


def validate_codes(key: str, value: Any) -> tuple[str, ...]:
    """Rule codes or prefixes (or `ALL`), upper-cased; an unknown one is an error naming `key`."""
    if isinstance(value, str):  # a single code where a list was meant: accept it
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of rule codes or prefixes")
    known = known_codes()
    out = []
    for v in value:
        code = v.strip().upper()
        if code != "ALL" and not (code and any(c.startswith(code) for c in known)):
            raise ConfigError(f"unknown rule code or prefix {v!r} in `{key}` (`dynalint rules` lists them)")
        out.append(code)
    return tuple(out)


# Kept for callers that still use the old private name.
_codes = validate_codes


def _strings(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of strings")
    return tuple(value)


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"`{key}` must be true or false")
    return value


def _per_file_ignores(value: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError("`per-file-ignores` must be a table of \"glob\" = [codes]")
    return {glob: validate_codes(f"per-file-ignores.\"{glob}\"", codes) for glob, codes in value.items()}


def _severity(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError('`severity` must be a table of CODE = "error" | "warning" | "info"')
    out = {}
    for code, level in value.items():
        (prefix,) = validate_codes(f"severity.{code}", [code])
        if level not in SEVERITIES:
            raise ConfigError(f"`severity.{code}` must be one of {', '.join(SEVERITIES)}, not {level!r}")
        out[prefix] = level
    return out


# key -> (Config attribute, parser)
_PARSERS = {
    "select": ("select", lambda v: validate_codes("select", v)),
    "extend-select": ("extend_select", lambda v: validate_codes("extend-select", v)),
    "ignore": ("ignore", lambda v: validate_codes("ignore", v)),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", lambda v: _strings("exclude", v)),
    "extend-exclude": ("extend_exclude", lambda v: _strings("extend-exclude", v)),
    "src": ("src", lambda v: _strings("src", v)),
    "extra-roots": ("extra_roots", lambda v: _strings("extra-roots", v)),
    "is-compiling-functions": ("is_compiling_functions", lambda v: _strings("is-compiling-functions", v)),
    "severity": ("severity", _severity),
    "respect-gitignore": ("respect_gitignore", lambda v: _bool("respect-gitignore", v)),
}


def parse_table(table: dict[str, Any], path: Optional[Path]) -> Config:
    where = f" in {path}" if path else ""
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.dynalint] must be a table{where}")
    for key in table:
        if key not in KNOWN_KEYS:
            hint = _close_key(key)
            raise ConfigError(f"unknown key `{key}` in [tool.dynalint]{where}{hint}")
    cfg = Config(path=path)
    try:
        for key, (attr, parse) in _PARSERS.items():
            if key in table:
                setattr(cfg, attr, parse(table[key]))
        if "extend-ignore" in table:
            cfg.ignore = cfg.ignore + validate_codes("extend-ignore", table["extend-ignore"])
        if "cache-dir" in table:
            if not isinstance(table["cache-dir"], str):
                raise ConfigError("`cache-dir` must be a path")
            cfg.cache_dir = table["cache-dir"]
        if "target-torch" in table:
            from dynalint.lint.target import parse_version

            value = table["target-torch"]
            if not isinstance(value, str) or parse_version(value) is None:
                raise ConfigError("`target-torch` must be a torch version such as \"2.14\"")
            cfg.target_torch = value
        if "min-torch" in table:
            from dynalint.lint.target import parse_version

            value = table["min-torch"]
            if not isinstance(value, str) or parse_version(value) is None:
                raise ConfigError("`min-torch` must be a torch version such as \"2.3\"")
            cfg.min_torch = value
    except ConfigError as exc:
        raise ConfigError(f"{exc}{where}") from None
    return cfg


def _close_key(key: str) -> str:
    import difflib

    match = difflib.get_close_matches(key.replace("_", "-"), sorted(KNOWN_KEYS), n=1)
    return f" (did you mean `{match[0]}`?)" if match else ""


def _table_of(path: Path, data: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The [tool.dynalint] table of a parsed file; a dynalint.toml may also be the table itself."""
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "dynalint" in tool:
        return tool["dynalint"]
    if path.name == "pyproject.toml":
        return None
    return data


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None


def load_config_file(path: Path) -> Config:
    path = Path(path)
    table = _table_of(path, _read_toml(path))
    return parse_table(table if table is not None else {}, path.resolve())


# ------------------------------------------------------------------------------------------------
# Discovery

_NEAREST: dict[Path, Optional[Path]] = {}


def _has_config(d: Path) -> Optional[Path]:
    for name in CONFIG_NAMES:
        p = d / name
        if not p.is_file():
            continue
        if name == "dynalint.toml":
            return p
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        try:
            if _table_of(p, tomllib.loads(text)) is not None:
                return p
        except tomllib.TOMLDecodeError:
            # Broken TOML that names our table is our config: loading it reports the error
            # (exit 2), as for a dynalint.toml, instead of linting with the defaults.
            if _NAMES_OUR_TABLE.search(text):
                return p
    return None


_NAMES_OUR_TABLE = re.compile(r"^\s*\[\s*tool\s*\.\s*dynalint\b|^\s*tool\s*\.\s*dynalint\b", re.MULTILINE)


def nearest_config(directory: Path) -> Optional[Path]:
    """The nearest dynalint.toml or pyproject.toml with [tool.dynalint] at or above directory
    (absolute path), memoised per folder so that walking a tree reads each folder once."""
    directory = directory.resolve()
    chain = []
    d: Optional[Path] = directory
    found: Optional[Path] = None
    while d is not None:
        if d in _NEAREST:
            found = _NEAREST[d]
            break
        chain.append(d)
        own = _has_config(d)
        if own is not None:
            found = own
            break
        d = d.parent if d.parent != d else None
    for c in chain:
        _NEAREST[c] = found
    return found


def clear_config_cache() -> None:
    """Forget what was found on disk (editors call this when a config file changes)."""
    _NEAREST.clear()


_TORCH_LOWER_BOUND = re.compile(r"(?:>=|~=|==|>)\s*(\d+\.\d+)")


def declared_min_torch(start: Path) -> Optional[str]:
    """The lowest torch the nearest pyproject.toml's `[project] dependencies` admit
    (`"torch>=1.13"` -> "1.13"); None without such a file, a torch requirement or a lower bound."""
    d: Optional[Path] = Path(start).absolute()
    d = d if d.is_dir() else d.parent
    while d is not None:
        p = d / "pyproject.toml"
        if p.is_file():
            try:
                data = tomllib.loads(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return None
            deps = (data.get("project") or {}).get("dependencies") or []
            for dep in deps if isinstance(deps, list) else []:
                m = re.match(r"\s*torch\s*(?:\[[^\]]*\])?\s*([^;]*)", dep) if isinstance(dep, str) else None
                if m is None or re.match(r"\s*torch[\w.-]", dep):
                    continue  # not torch itself (torchvision, torch-geometric)
                bounds = _TORCH_LOWER_BOUND.findall(m.group(1))
                return min(bounds, key=lambda v: tuple(int(x) for x in v.split("."))) if bounds else None
            return None
        d = d.parent if d.parent != d else None
    return None


def find_config(start: Path) -> Optional[Path]:
    """The nearest config file for start (a file or a folder), walking up."""
    start = Path(start).absolute()
    return nearest_config(start if start.is_dir() else start.parent)


def resolve_config(
    paths: list[Path], config_file: Optional[Path], overrides: Overrides = Overrides()
) -> Config:
    """The run's config: --config's file, else the one nearest the first path; with overrides."""
    clear_config_cache()  # each run sees the files as they are now
    if config_file is not None:
        cfg = load_config_file(config_file)
    else:
        found = find_config(paths[0] if paths else Path.cwd())
        cfg = load_config_file(found) if found is not None else Config()
        cfg.hierarchical = True
    cfg = cfg.with_overrides(overrides)
    if cfg.min_torch is None:
        cfg.min_torch = declared_min_torch(paths[0] if paths else Path.cwd())
    return cfg

"""`[tool.dynalint]` configuration, found by walking up from the linted paths (as ruff does)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Recompile hints are on, host-sync notes are opt-in (they are not breaks).
DEFAULT_SELECT = ("DYN0", "DYN1", "DYN2")
SEVERITIES = ("error", "warning", "info")

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
    cache_dir: Optional[str] = None
    path: Optional[Path] = None  # the pyproject.toml it came from

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def enabled_codes(self, all_codes: list[str]) -> frozenset[str]:
        return frozenset(c for c in all_codes if self.is_enabled(c))

    def is_enabled(self, code: str, filename: Optional[str] = None) -> bool:
        def matches(prefixes) -> int:
            best = -1
            for p in prefixes:
                if p == "ALL":
                    best = max(best, 0)
                elif code.startswith(p):
                    best = max(best, len(p))
            return best

        sel = matches(self.select + self.extend_select)
        ign = matches(self.ignore)
        if filename is not None:
            ign = max(ign, matches(self._per_file(filename)))
        # As in ruff: the more specific prefix wins; on a tie, ignore wins.
        return sel >= 0 and sel > ign

    def _per_file(self, filename: str) -> tuple[str, ...]:
        import fnmatch

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

    def severity_of(self, code: str, default: str) -> str:
        best, best_len = default, -1
        for prefix, sev in self.severity.items():
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


def _codes(key: str, value: Any) -> tuple[str, ...]:
    from dynalint.lint.rules import all_rules

    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of rule codes or prefixes")
    known = [r.code for r in all_rules()]
    for v in value:
        if v != "ALL" and not any(c.startswith(v.upper()) for c in known):
            raise ConfigError(f"unknown rule code or prefix {v!r} in `{key}`")
    return tuple(v.upper() for v in value)


def _strings(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of strings")
    return tuple(value)


def parse_table(table: dict[str, Any], path: Optional[Path]) -> Config:
    where = f" in {path}" if path else ""
    for key in table:
        if key not in KNOWN_KEYS:
            raise ConfigError(f"unknown key `{key}` in [tool.dynalint]{where}")
    cfg = Config(path=path)
    try:
        if "select" in table:
            cfg.select = _codes("select", table["select"])
        if "extend-select" in table:
            cfg.extend_select = _codes("extend-select", table["extend-select"])
        if "ignore" in table:
            cfg.ignore = _codes("ignore", table["ignore"])
        if "extend-ignore" in table:
            cfg.ignore = cfg.ignore + _codes("extend-ignore", table["extend-ignore"])
        if "per-file-ignores" in table:
            pfi = table["per-file-ignores"]
            if not isinstance(pfi, dict):
                raise ConfigError("`per-file-ignores` must be a table of glob = [codes]")
            cfg.per_file_ignores = {k: _codes(f"per-file-ignores.{k}", v) for k, v in pfi.items()}
        if "exclude" in table:
            cfg.exclude = _strings("exclude", table["exclude"])
        if "extend-exclude" in table:
            cfg.extend_exclude = _strings("extend-exclude", table["extend-exclude"])
        if "src" in table:
            cfg.src = _strings("src", table["src"])
        if "extra-roots" in table:
            cfg.extra_roots = _strings("extra-roots", table["extra-roots"])
        if "is-compiling-functions" in table:
            cfg.is_compiling_functions = _strings("is-compiling-functions", table["is-compiling-functions"])
        if "severity" in table:
            sev = table["severity"]
            if not isinstance(sev, dict):
                raise ConfigError("`severity` must be a table of CODE = \"error\" | \"warning\" | \"info\"")
            for code, level in sev.items():
                _codes(f"severity.{code}", [code])
                if level not in SEVERITIES:
                    raise ConfigError(f"severity of {code} must be one of {', '.join(SEVERITIES)}, not {level!r}")
            cfg.severity = {k.upper(): v for k, v in sev.items()}
        if "respect-gitignore" in table:
            if not isinstance(table["respect-gitignore"], bool):
                raise ConfigError("`respect-gitignore` must be true or false")
            cfg.respect_gitignore = table["respect-gitignore"]
        if "cache-dir" in table:
            cfg.cache_dir = str(table["cache-dir"])
    except ConfigError as exc:
        raise ConfigError(f"{exc}{where}") from None
    return cfg


def load_config_file(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("dynalint", {})
    else:  # dynalint.toml / a file given with --config: the table itself, or [tool.dynalint]
        table = data.get("tool", {}).get("dynalint", data)
    return parse_table(table, path)


def find_config(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml with a [tool.dynalint] table, walking up from start."""
    start = start.resolve()
    for d in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        for name in ("dynalint.toml", "pyproject.toml"):
            p = d / name
            if p.is_file():
                if name == "dynalint.toml":
                    return p
                try:
                    if "dynalint" in tomllib.loads(p.read_text(encoding="utf-8")).get("tool", {}):
                        return p
                except (OSError, tomllib.TOMLDecodeError):
                    continue
    return None


def resolve_config(paths: list[Path], config_file: Optional[Path]) -> Config:
    if config_file is not None:
        return load_config_file(config_file)
    start = paths[0] if paths else Path.cwd()
    found = find_config(start)
    return load_config_file(found) if found is not None else Config()

"""Import libcst in a fresh process at a third of its cost: cache the methods dataclasses makes.

libcst declares its ~250 node classes as dataclasses. `dataclasses` writes each class's
`__init__`, `__repr__`, `__eq__`, ... as Python source and compiles it with `exec`, on every
import: about 620 compilations, two thirds of the 0.13-0.19 s `import libcst` costs, paid by
every `dynalint check` that parses a file (the on-save path). Python caches the bytecode of
modules in `.pyc` files but not of these strings; this module does the same for them.

While libcst is imported, `exec` in the `dataclasses` module is shadowed by one that looks the
source text up in a table of compiled code (compiled with the flags `exec` would use, and kept
by the exact text, so the result is the same code object `exec` would have compiled). The
table lives beside dynalint's own bytecode (`dynalint/run/__pycache__/`), stamped with the
interpreter's bytecode magic number, and is written the way `.pyc` files are: atomically, not
when `PYTHONDONTWRITEBYTECODE` is set, silently skipped where the folder is read-only. A
damaged or foreign table is ignored. `DYNALINT_NO_IMPORT_CACHE=1` turns all of it off.

Only the command line installs it (`dynalint.cli`): importing dynalint as a library leaves the
import system alone.
"""

from __future__ import annotations

import builtins
import importlib.util
import marshal
import os
import sys
from pathlib import Path
from typing import Optional

TARGET = "libcst"
LAST_TABLE: Optional["CodeTable"] = None  # the table the import of this process used


def table_path() -> Path:
    tag = sys.implementation.cache_tag or "unknown"
    return Path(__file__).resolve().parent / "__pycache__" / f"libcst-dataclasses.{tag}.bin"


def install() -> None:
    """Make the next `import libcst` of this process use (and fill) the table."""
    if TARGET in sys.modules or os.environ.get("DYNALINT_NO_IMPORT_CACHE"):
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


class _Finder:
    """Finds nothing itself: it wraps the real loader of the top-level libcst package, whose
    execution imports all of libcst's node modules."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != TARGET:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]  # once per process
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


class _Loader:
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module) -> None:
        # libcst sees its own loader, as if nothing had been in between.
        module.__loader__ = self.real
        if module.__spec__ is not None:
            module.__spec__.loader = self.real
        global LAST_TABLE
        with CodeTable(table_path()) as table:
            import dataclasses

            LAST_TABLE = table
            dataclasses.exec = table.exec  # a module global shadows the builtin
            try:
                self.real.exec_module(module)
            finally:
                del dataclasses.exec

    def __getattr__(self, name):
        return getattr(self.real, name)


class CodeTable:
    """Compiled code by source text, loaded from and saved to one file."""

    def __init__(self, path: Path):
        self.path = path
        self.stored: dict[str, object] = self._load()
        self.used: dict[str, object] = {}
        self.compiled = 0  # texts not found in the table (what a test looks at)

    def _load(self) -> dict:
        try:
            data = self.path.read_bytes()
        except OSError:
            return {}
        magic = importlib.util.MAGIC_NUMBER
        if not data.startswith(magic):
            return {}
        try:
            table = marshal.loads(data[len(magic):])
        except (ValueError, EOFError, TypeError):
            return {}
        return table if isinstance(table, dict) else {}

    def exec(self, source, globals=None, locals=None, /):
        if isinstance(source, str):
            code = self.stored.get(source)
            if code is None:
                # What exec(source) compiles: file name "<string>", the dataclasses module's
                # (empty) future flags, never ours.
                code = builtins.compile(source, "<string>", "exec", dont_inherit=True)
                self.compiled += 1
            self.used[source] = code
            source = code
        return builtins.exec(source, globals, locals)

    def __enter__(self) -> "CodeTable":
        return self

    def __exit__(self, exc_type, *_) -> None:
        if exc_type is None and self.used.keys() != self.stored.keys():
            self.save()

    def save(self) -> Optional[Path]:
        """Written with what this import used (entries of an older libcst drop out)."""
        if sys.dont_write_bytecode:
            return None
        try:
            from dynalint.run.atomic import write_bytes_atomically

            self.path.parent.mkdir(exist_ok=True)
            mode = os.stat(__file__).st_mode & 0o666  # as a .pyc takes its source's
            write_bytes_atomically(self.path, importlib.util.MAGIC_NUMBER + marshal.dumps(self.used), mode=mode)
        except (OSError, ValueError):
            return None
        return self.path

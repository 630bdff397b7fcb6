"""Which files a model depends on, from the lint summaries (no imports, no torch).

Two answers, for two uses:
- `loads`: the files its module classes' files import, transitively (explicit module-level imports
  among the linted files). Wide: used to decide whether a model must be measured again (resume,
  and after a revert), where missing a file would mean trusting an unverified fix.
- `region`: the files holding code that runs in its forward (the compile regions of the module
  classes the verify child reports, and what they call). Narrow: used to blame a fix when the
  model's outputs change, so that one bad fix does not revert every file the package imports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Optional


def real(path) -> str:
    return os.path.realpath(str(path))


@dataclass
class CodeMap:
    summaries: list  # FileSummary, one per linted file
    module_of: dict[str, str] = field(default_factory=dict)  # real path -> dotted module
    path_of_module: dict[str, str] = field(default_factory=dict)
    path_of_display: dict[str, str] = field(default_factory=dict)
    display_of_path: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, files, summaries) -> "CodeMap":
        """files: SourceFile objects in the same order as their summaries."""
        code = cls(list(summaries))
        for f in files:
            path = real(f.path)
            code.module_of[path] = f.module
            code.path_of_module.setdefault(f.module, path)
            code.path_of_display[f.display] = path
            code.display_of_path[path] = f.display
        return code

    def display(self, path: str) -> str:
        return self.display_of_path.get(path, path)

    # -- loads ---------------------------------------------------------------------------------
    def _module_file(self, dotted: str) -> Optional[str]:
        """The file `import dotted` / `from ... import dotted` names: its longest known module prefix."""
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            path = self.path_of_module.get(".".join(parts[:i]))
            if path is not None:
                return path
        return None

    def loads(self, starts: Iterable[str]) -> list[str]:
        """Linted files reachable from `starts` through their explicit module-level imports."""
        summary_of = {self.path_of_display.get(s.filename): s for s in self.summaries}
        seen: set[str] = set()
        todo = [real(p) for p in starts]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            summary = summary_of.get(path)
            if summary is None:
                continue
            for dotted in summary.imports.values():
                found = self._module_file(dotted)
                if found is not None and found not in seen:
                    todo.append(found)
        return sorted(p for p in seen if p in self.module_of)

    # -- region --------------------------------------------------------------------------------
    def region(self, module_classes: Iterable[dict], also: Iterable[str] = ()) -> list[str]:
        """Files with code reachable from the forward of these classes ({qualname, file}), plus `also`."""
        from dynalint.lint.regions import Project

        project = Project(self.summaries)
        roots = []
        for cls in module_classes:
            module = self.module_of.get(real(cls.get("file", "")))
            if module is None or "<locals>" in cls.get("qualname", ""):
                continue
            forward = project.find_method(project.canonical(f"{module}.{cls['qualname']}"), "forward")
            if forward:
                roots.append(forward)

        class ModelRegion(Project):
            def roots(self) -> list[str]:
                return roots

        live = ModelRegion(self.summaries).reachable()
        file_of_function = {
            q: self.path_of_display.get(s.filename) for s in self.summaries for q in s.functions
        }
        files = {file_of_function[q] for q in live if file_of_function.get(q)}
        files |= {real(p) for p in also if real(p) in self.module_of}
        return sorted(files)

"""What a file's analysis learns from the other files being linted.

A helper in `ops.py` (`def clamp_outliers(x, limit=6.0)`) does not know that `x` is a tensor:
only its callers do (`clamp_outliers(h)` in `base.py`). And `base.py` does not know that
`rms_normalize(x)`, imported from `ops.py`, returns a tensor. Phase 1 records both facts per file
(`FileSummary.call_hints`, `FunctionInfo.returns_tensor`); this module maps them across files so
the engine can analyse again the few files that gain from them.
"""

from __future__ import annotations

from typing import Iterable, Optional

from .summary import FileSummary
from .kinds import P, T
from .regions import Project

Hints = dict[str, dict[str, str]]  # function qualname -> {position (str) or keyword: kind}


def cross_file_facts(
    summaries: Iterable[FileSummary], visited: Optional[set] = None, project: Optional[Project] = None
) -> dict[str, dict]:
    """filename -> {"hints": parameter hints its functions receive from calls in other files,
    "returns": dotted names it calls, defined in other files, that return tensors}.
    `visited`: gets every name resolution looked at (`Project`); `project`: one built for
    these summaries with that `visited`, reused instead of building another."""
    summaries = list(summaries)
    if project is None:
        project = Project(summaries, visited=visited)
    file_of = project.file_of()
    out: dict[str, dict] = {}

    def facts(filename: str) -> dict:
        return out.setdefault(filename, {"hints": {}, "returns": []})

    for s in summaries:
        project.asker = s.module + "."
        for callee, slots in s.call_hints.items():
            target = project.canonical(callee)
            fn = project.functions.get(target)
            # Plain functions only: `Block(x)` calls a constructor, whose parameters are config.
            if fn is None or fn.cls is not None or file_of.get(target) in (None, s.filename):
                continue
            merged = facts(file_of[target])["hints"].setdefault(target, {})
            for slot, kind in slots.items():
                merged[slot] = P if P in (kind, merged.get(slot)) else T
        returns = set()
        for fn in s.functions.values():
            for edge in fn.edges:
                if edge[0] != "name":
                    continue
                target = project.canonical(edge[1])
                callee = project.functions.get(target)
                if callee is not None and callee.cls is None and callee.returns_tensor and file_of[target] != s.filename:
                    returns.add(edge[1])
        if returns:
            facts(s.filename)["returns"] = sorted(returns)
    return out

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
    "returns": dotted names it calls, defined in other files, that return tensors, and, when
    there are any, "passthrough": those of them that return some of their parameters as they
    came in, with those parameters (`FunctionInfo.passthrough`), and "rnn_types": the classes of
    other files it stores on its modules that derive from nn.LSTM / GRU / RNN}.
    `visited`: gets every name resolution looked at (`Project`); `project`: one built for
    these summaries with that `visited`, reused instead of building another.

    Across the engine's rounds (one project, `Project.replace` swapping the files analysed
    again) a file's part is worked out again only when needed: the hints it gives when its
    summary changed, the tensors returned to it when its summary or the file of a function it
    calls changed. The parts are merged in file order each time, so the facts are the same,
    down to the order of their keys (cache keys are made from them), as from scratch."""
    summaries = list(summaries)
    if project is None:
        project = Project(summaries, visited=visited)
    memo = project.facts_memo  # filename -> _FileFacts of the summary it was worked out for
    file_of = project.file_of()
    changed = {s.filename for s in summaries if s.filename not in memo or memo[s.filename].summary is not s}
    out: dict[str, dict] = {}

    def facts(filename: str) -> dict:
        return out.setdefault(filename, {"hints": {}, "returns": []})

    for s in summaries:
        part = memo.get(s.filename)
        if part is None or part.summary is not s:
            part = memo[s.filename] = _FileFacts(s, _hints_given(s, project, file_of))
            part.returns, part.passthrough, part.rnn_types, part.callee_files = _returns_to(s, project, file_of)
        elif part.callee_files & changed:
            part.returns, part.passthrough, part.rnn_types, part.callee_files = _returns_to(s, project, file_of)
        for target_file, target, slots in part.hints:
            merged = facts(target_file)["hints"].setdefault(target, {})
            for slot, kind in slots.items():
                merged[slot] = P if P in (kind, merged.get(slot)) else T
        if part.returns:
            facts(s.filename)["returns"] = list(part.returns)
        if part.passthrough:
            facts(s.filename)["passthrough"] = dict(part.passthrough)
        if part.rnn_types:
            facts(s.filename)["rnn_types"] = list(part.rnn_types)
    return out


class _FileFacts:
    """One file's part of the cross-file facts, for one summary of it."""

    __slots__ = ("summary", "hints", "returns", "passthrough", "rnn_types", "callee_files")

    def __init__(self, summary: FileSummary, hints: list) -> None:
        self.summary = summary
        self.hints = hints  # [(file, function, {slot: kind})]: tensors it passes to other files
        self.returns: list[str] = []  # sorted: names it calls that return tensors
        self.passthrough: dict = {}  # names it calls returning parameters -> those parameters
        self.rnn_types: list[str] = []  # sorted: classes it stores that derive from nn.LSTM/GRU/RNN
        self.callee_files: set[str] = set()  # the other files defining what it calls by name


def _hints_given(s: FileSummary, project: Project, file_of: dict) -> list:
    project.asker = s.module + "."
    out = []
    for callee, slots in s.call_hints.items():
        target = project.canonical(callee)
        fn = project.functions.get(target)
        # Plain functions only: `Block(x)` calls a constructor, whose parameters are config.
        if fn is None or fn.cls is not None or file_of.get(target) in (None, s.filename):
            continue
        out.append((file_of[target], target, slots))
    project.asker = None
    return out


def _returns_to(s: FileSummary, project: Project, file_of: dict) -> tuple[list, dict, list, set]:
    project.asker = s.module + "."
    returns, callee_files = set(), set()
    passthrough = {}
    rnn_types = set()
    class_files = project.class_file_of()
    for cls in s.classes.values():
        for types in cls.attr_types.values():
            for written in types:
                target = project.canonical(written)
                if target not in project.classes or class_files.get(target) == s.filename:
                    continue
                # `self.lstm = LSTM(...)` with `class LSTM(RNN, nn.LSTM)` in another file
                callee_files.update(class_files[c] for c in project.mro(target) if c in class_files)
                if project.is_rnn_class(target):
                    rnn_types.add(written)
    for fn in s.functions.values():
        for edge in fn.edges:
            if edge[0] != "name":
                continue
            target = project.canonical(edge[1])
            callee = project.functions.get(target)
            if callee is not None and callee.cls is None and file_of[target] != s.filename:
                callee_files.add(file_of[target])
                if callee.returns_tensor:
                    returns.add(edge[1])
                if callee.passthrough:
                    passthrough[edge[1]] = [list(slot) for slot in callee.passthrough]
    project.asker = None
    return sorted(returns), dict(sorted(passthrough.items())), sorted(rnn_types), callee_files

"""The data every stage shares: findings, their fixes and edits.

Rows are 1-based and columns 1-based (as ruff reports them); `end_*` point just past the node.
Everything here is plain data so that findings can be cached as JSON and sent between processes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, asdict
from typing import Any, Optional

# `# noqa` (every rule) or `# noqa: DYN101, DYN110` on a line: the one pattern the linter, the
# fixes and the language server read.
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    content: str
    row: int
    column: int
    end_row: int
    end_column: int

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
        }


@dataclass(frozen=True)
class Fix:
    applicability: str  # SAFE or UNSAFE
    message: str
    edits: tuple[Edit, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }


_PLAIN = frozenset({str, int, float, bool, type(None)})


@dataclass
class Finding:
    code: str
    message: str
    filename: str
    row: int
    column: int
    end_row: int
    end_column: int
    fix: Optional[Fix] = None
    # Qualified name of the function the finding sits in (used for reachability; not printed).
    scope: str = ""
    # Free-form hints a fixer may use (e.g. {"unused_result": True}); never printed.
    data: dict[str, Any] = field(default_factory=dict)

    def sort_key(self) -> tuple:
        return (self.filename, self.row, self.column, self.code)

    def to_cache(self) -> dict[str, Any]:
        """`asdict(self)`, with the fix's edits as a list. Written out field by field: `asdict`
        deep-copies every value (a tenth of a big file's time outside its analysis); `data`
        still goes through it unless it holds only plain values."""
        data = self.data
        if all(type(v) in _PLAIN for v in data.values()):
            data = dict(data)
        else:
            data = asdict(self)["data"]
        fix = self.fix
        if fix is not None:
            fix = {
                "applicability": fix.applicability,
                "message": fix.message,
                "edits": [
                    {"content": e.content, "row": e.row, "column": e.column, "end_row": e.end_row, "end_column": e.end_column}
                    for e in fix.edits
                ],
            }
        return {
            "code": self.code,
            "message": self.message,
            "filename": self.filename,
            "row": self.row,
            "column": self.column,
            "end_row": self.end_row,
            "end_column": self.end_column,
            "fix": fix,
            "scope": self.scope,
            "data": data,
        }

    @classmethod
    def from_cache(cls, d: dict[str, Any]) -> "Finding":
        d = dict(d)
        fix = d.pop("fix", None)
        if fix is not None:
            fix = Fix(fix["applicability"], fix["message"], tuple(Edit(**e) for e in fix["edits"]))
        return cls(fix=fix, **d)

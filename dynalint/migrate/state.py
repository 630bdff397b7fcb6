"""What `migrate` remembers between runs, in `REPORT_DIR/state/state.json`, so a second run resumes.

- files: for every file it rewrote, the original text (the "before" the models are measured on,
  and what a revert writes back) and the fixed text (so its own edits are not dirt next time).
- reverted: files whose fixes were reverted, with the original's hash and why, so a later run does
  not fix and revert them again while they are unchanged.
- models: per model, its measurements keyed by hashes of the files it loads; a model whose key
  still matches is not measured again.
The reference tensors of each model's "before" run live next to it in `state/models/<name>/`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from dynalint.run.atomic import write_bytes_atomically

STATE_VERSION = 1


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def key_of(value: Any) -> str:
    """A stable hash of JSON-able data (measurement options and file hashes)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "model"


@dataclass
class MigrationState:
    folder: Path
    files: dict[str, dict] = field(default_factory=dict)  # real path -> {original, fixed}
    reverted: dict[str, dict] = field(default_factory=dict)  # real path -> {original_hash, reason, ...}
    models: dict[str, dict] = field(default_factory=dict)  # model name -> record

    @property
    def path(self) -> Path:
        return self.folder / "state.json"

    @classmethod
    def load(cls, folder: Path) -> "MigrationState":
        state = cls(folder)
        try:
            data = json.loads(state.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return state
        if data.get("version") != STATE_VERSION:
            return state
        state.files = data.get("files", {})
        state.reverted = data.get("reverted", {})
        state.models = data.get("models", {})
        return state

    def save(self) -> None:
        """Write atomically: an interrupted run must leave a readable state behind."""
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"version": STATE_VERSION, "files": self.files, "reverted": self.reverted, "models": self.models}
        write_bytes_atomically(self.path, json.dumps(data, indent=1, default=str).encode("utf-8"))

    # -- files -------------------------------------------------------------------------------
    def is_own_change(self, path: Path, current: Optional[str] = None) -> bool:
        """The file's text is exactly what an earlier run of migrate wrote."""
        record = self.files.get(str(path.resolve()))
        if record is None:
            return False
        if current is None:
            try:
                current = read_text(path)
            except (OSError, UnicodeDecodeError):
                return False
        return current == record["fixed"]

    def original_of(self, path: str, current: str) -> str:
        """The text before migrate touched the file; forget the record when the user changed it since."""
        record = self.files.get(path)
        if record is not None and record["fixed"] == current:
            return record["original"]
        self.files.pop(path, None)
        return current

    def still_reverted(self, path: str, current: str) -> Optional[dict]:
        record = self.reverted.get(path)
        if record is not None and record["original_hash"] == text_hash(current):
            return record
        self.reverted.pop(path, None)
        return None

    # -- models ------------------------------------------------------------------------------
    def model_dir(self, name: str) -> Path:
        return self.folder / "models" / safe_name(name)

    def reference_dir(self, name: str) -> Path:
        return self.model_dir(name) / "before"

    def forget_model(self, name: str) -> None:
        self.models.pop(name, None)
        shutil.rmtree(self.model_dir(name), ignore_errors=True)


def read_text(path: Path) -> str:
    from dynalint.run.engine import read_source

    return read_source(path)

"""How `dynalint migrate` measures a model (device, backend, rounds): one set of options, kept
with the command's (`MigrateOptions.measure`) and given to the verifier."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MeasureOptions:
    device: str = "auto"
    backend: str = "inductor"
    repeat: int = 20
    warmup: int = 3
    timing: bool = True
    seed: int = 0
    timeout: float = 600.0

    def key(self) -> dict:
        """What changes a measurement (timeout does not)."""
        return {"device": self.device, "backend": self.backend, "repeat": self.repeat, "warmup": self.warmup,
                "timing": self.timing, "seed": self.seed}

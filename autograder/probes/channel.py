"""What a probe hands the grader: one ProbeRecord per check call, a file in the run's channel folder.

The kernel writes it (``probes/kernel.py``, with ``torch.save``: plain data and CPU tensors only); the grader reads
it back (``grading/judge.py``, with ``torch.load(weights_only=True)``) as untrusted input. The file is named by
the test cell and the call, ``<grade_id>.<k>.pt``, and says both again inside, so a record copied to another
name is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ProbeRecord:
    cell: str  # the test cell's grade id
    call: int  # which check call of the cell: 0, 1, ...
    data: Any  # what the probe returned (ProbeData), or {FAILED: the learner's message}
    patched: list[str] = field(default_factory=list)  # what the probes found replaced in the kernel

    @staticmethod
    def file_name(cell: str, call: int) -> str:
        return f"{cell}.{call}.pt"

    def to_payload(self) -> dict[str, Any]:
        """The dict torch.save writes (its keys are what the grader reads: kept as they are)."""
        return {"cell": self.cell, "call": self.call, "results": [self.data], "patched": list(self.patched)}

    @classmethod
    def from_payload(cls, payload: Any) -> ProbeRecord:
        """The record in what torch.load returned; ValueError when it is not one."""
        if not isinstance(payload, dict) or not isinstance(payload.get("results"), list):
            raise ValueError("not a probe record")
        if len(payload["results"]) != 1 or not isinstance(payload.get("cell"), str):
            raise ValueError("not a probe record")
        call = payload.get("call")
        if not isinstance(call, int) or isinstance(call, bool):
            raise ValueError("not a probe record")
        patched = payload.get("patched", [])
        patched = [p for p in patched if isinstance(p, str)] if isinstance(patched, list) else []
        return cls(payload["cell"], call, payload["results"][0], patched)

    def is_for(self, cell: str, call: int) -> bool:
        return self.cell == cell and self.call == call

    def path_in(self, channel: str | Path) -> Path:
        return Path(channel) / self.file_name(self.cell, self.call)

"""What a probe hands the grader: one ProbeRecord per check call, sent as one frame on the grader's socket.

The kernel writes it (``probes/kernel.py``, with ``torch.save``: plain data and CPU tensors only) and hands it to a
courier process (``probes/courier.py``) that sends it; the grader (``grading/records.py``) checks the frame and keeps
the record as a file named by the test cell and the call, ``<grade_id>.<k>.pt``, out of the sandbox; the judge
(``grading/judge.py``) reads it back with ``torch.load(weights_only=True)`` as untrusted input. The record says its
cell and call again inside, so a record under another name is refused.

A frame: ``MAGIC``, a header line (JSON: cell, call, size, sha256 of the record), the record's ``size`` bytes, the
end of the stream.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .courier import MAGIC, SOCKET_NAME, identity

__all__ = [
    "COURIER_PYTHON",
    "HEADER_MAX",
    "MAGIC",
    "RECORD_MAX",
    "SOCKET_FOLDER",
    "SOCKET_NAME",
    "ProbeRecord",
    "header",
    "identity",
    "parse_header",
]

SOCKET_FOLDER = "grader"  # the folder of the channel that holds the grader's socket: the grader's own
COURIER_PYTHON = "courier-python"  # beside courier.py in the sandbox: an execute-only copy of Python for couriers
RECORD_MAX = 32 * 2**20  # the largest record a probe sends: a larger one becomes a message that says so
HEADER_MAX = 4096  # the header line's bytes, newline included


def header(cell: str, call: int, payload: bytes) -> str:
    """The header line of a record's frame (without its newline)."""
    digest = hashlib.sha256(payload).hexdigest()
    return json.dumps({"cell": cell, "call": call, "size": len(payload), "sha256": digest}, sort_keys=True)


def parse_header(line: bytes) -> tuple[str, int, int, str]:
    """(cell, call, size, sha256) of a frame's header line, read as untrusted input; ValueError when it is not one."""
    try:
        fields = json.loads(line.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError("not a header") from exc
    if not isinstance(fields, dict) or set(fields) != {"cell", "call", "size", "sha256"}:
        raise ValueError("not a header")
    cell, call, size, digest = fields["cell"], fields["call"], fields["size"], fields["sha256"]
    if not isinstance(cell, str) or not 0 < len(cell) <= 200 or not cell.isprintable() or "/" in cell:
        raise ValueError("not a header")
    for number, top in ((call, 10_000), (size, RECORD_MAX)):
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= top:
            raise ValueError("not a header")
    if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
        raise ValueError("not a header")
    return cell, call, size, digest


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

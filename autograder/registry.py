"""Every check is a *probe* and a *judge*, so that grading can decide outside the learner's process.

* ``probe(obj, **params) -> data``: the only code that touches the learner's object. It calls it
  on inputs chosen from ``params`` and returns plain data (dicts, lists, numbers, strings, CPU
  tensors) -- never the learner's objects. A learner-caused failure (blank stub, crash, wrong
  type) raises :class:`CheckFailed`.
* ``judge(data, **params) -> points | None``: recomputes every reference itself and compares. It
  never sees the learner's object, so nothing the learner's code did to its interpreter reaches it.
  Raises :class:`CheckFailed` when the answer is wrong; may return partial points.

In a notebook, ``check_x(obj, **params)`` runs both in the learner's kernel (instant feedback).
The hardened grader runs only the probe in the sandbox, ships the data out, and runs the judge in
its own process with the ``params`` written in the instructor's copy of the test cell.

Test cells therefore call checks in one shape: ``check_x(learner_name, key=<literal>, ...)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .feedback import CheckFailed

FAILED = "__check_failed__"


@dataclass(frozen=True)
class Check:
    name: str
    probe: Callable[..., Any]
    judge: Callable[..., Any]

    def collect(self, obj: Any, **params: Any) -> Any:
        """Run the probe; a learner-caused failure becomes data too (its message)."""
        try:
            return self.probe(obj, **params)
        except CheckFailed as failure:
            return {FAILED: str(failure)}

    def decide(self, data: Any, **params: Any) -> Any:
        if isinstance(data, dict) and FAILED in data:
            raise CheckFailed(str(data[FAILED]))
        return self.judge(data, **params)

    def __call__(self, obj: Any, **params: Any) -> Any:
        try:
            return self.decide(self.collect(obj, **params), **params)
        except CheckFailed as failure:
            # Re-raised here so the learner's traceback is two frames (their cell, this line),
            # not a walk through the checker's internals.
            raise CheckFailed(str(failure)) from None


CHECKS: dict[str, Check] = {}


def register(name: str, probe: Callable[..., Any], judge: Callable[..., Any]) -> Check:
    """Register a check under the name test cells call it by; returns the callable check."""
    if name in CHECKS:
        raise ValueError(f"a check named {name} is already registered")
    CHECKS[name] = Check(name, probe, judge)
    return CHECKS[name]

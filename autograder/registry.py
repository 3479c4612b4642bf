"""The one way to register a check: a *probe* (inside the sandbox) and a *judge* (outside it).

    check_x = register("check_x", probe="autograder.probes.nbNN:probe_x",
                                  judge="autograder.judges.nbNN:judge_x")

* ``probe(obj, **params) -> data``: the only code that touches the learner's object. It calls it
  (through :func:`autograder.probes.call.call_learner`) on the cases ``params`` name and returns
  plain data (dicts, lists, numbers, strings, CPU tensors) -- never the learner's objects. A
  learner-caused failure (blank stub, crash, wrong type) raises :class:`CheckFailed`.
* ``judge(data, **params) -> points | None``: recomputes every reference itself and compares. It
  never sees the learner's object. Raises :class:`CheckFailed` when the answer is wrong; may return
  partial points.

Probe and judge are named by "module:function" strings and imported only when first used: inside
the grading sandbox ``autograder.judges`` is absent, and nothing there asks for it.

In a notebook, ``check_x(obj, **params)`` runs both in the learner's kernel (instant feedback).
The grader runs only the probe in the sandbox, ships the data out, and runs the judge in its own
process with the ``params`` written in the instructor's copy of the test cell.

Hidden tests name generated cases: ``check_x(obj, draw=N)`` asks the check's *drawer* (judge side,
``draw_x(rng, N) -> params``) for N cases. The grader seeds ``rng`` from a secret kept in the
gradebook and the submission's content, so a regrade draws the same cases and a resubmission new
ones; run anywhere else (the instructor's own notebook), the cases are drawn afresh each time.

``crash_hint``: a sentence the grader adds when the kernel dies while this check's test cell runs
(e.g. notebook 05's Triton kernels: "likely an unmasked tl.load/tl.store").
"""

from __future__ import annotations

import importlib
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .feedback import CheckFailed

FAILED = "__check_failed__"


def resolve(target: str) -> Callable[..., Any]:
    """The object a "package.module:attribute" string names."""
    module, _, attribute = target.partition(":")
    if not attribute:
        raise ValueError(f"{target!r} should read 'package.module:function'")
    return getattr(importlib.import_module(module), attribute)


def import_notebook_modules(package: str) -> None:
    """Import every `nbNN` module of `package` ("autograder.probes", "autograder.judges"): where the
    notebooks add their Function exercises' inputs and references."""
    import pkgutil

    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if module.name.startswith("nb"):
            importlib.import_module(f"{package}.{module.name}")


@dataclass(frozen=True)
class Check:
    name: str
    probe_target: str  # "autograder.probes.nbNN:probe_x"
    judge_target: str  # "autograder.judges.nbNN:judge_x"
    show_target: str | None = None  # "module:function(verdict, failure)": shows a result in the notebook
    draw_target: str | None = None  # "autograder.judges.nbNN:draw_x(rng, count) -> params": hidden cases
    crash_hint: str | None = None  # said when the kernel dies during this check's test cell
    by_hand: bool = False  # the exercise is done by hand: autograd in the answer is flagged

    @property
    def probe(self) -> Callable[..., Any]:
        return resolve(self.probe_target)

    @property
    def judge(self) -> Callable[..., Any]:
        return resolve(self.judge_target)

    def drawn(self, params: dict, rng: random.Random | None = None) -> dict:
        """The params with `draw=N` replaced by N generated cases (fresh randomness unless `rng` is given)."""
        if "draw" not in params:
            return dict(params)
        if not self.draw_target:
            raise ValueError(f"{self.name} has no drawer: it cannot take draw=")
        rest = {k: v for k, v in params.items() if k != "draw"}
        rng = rng or random.Random(os.urandom(16))
        return {**rest, **resolve(self.draw_target)(rng, params["draw"])}

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
        """In a notebook: one failure style for every check. A wrong or partly right answer raises CheckFailed
        whose message is the whole report (the parts that failed, the inputs, the entries, the error, the hint);
        a right one returns None in a notebook cell, so the cell shows no stray Out[...] value. The failure carries
        the verdict (`failure.verdict`) for code that wants the parts."""
        params = self.drawn(params)
        crash = None  # the learner's own exception behind a failure: its frames are theirs to see
        try:
            data = self.probe(obj, **params)
        except CheckFailed as failure:
            data, crash = {FAILED: str(failure)}, failure.__cause__
        show = resolve(self.show_target) if self.show_target else None
        try:
            verdict = self.decide(data, **params)
            if getattr(verdict, "passed", True) is False:  # partly right: fails like a wrong answer, with its parts
                partly = CheckFailed(verdict.report())
                partly.verdict = verdict
                raise partly
        except CheckFailed as failure:
            if show:
                show(None, failure)
            # Raised afresh, from the learner's own crash if there was one: in their notebook the
            # traceback shows the message and their code only (autograder.learner_traceback drops our frames).
            from .jacobian_pictures import hidden_label

            short = CheckFailed(hidden_label() + str(failure))
            short.verdict = failure.verdict
            raise short from crash
        if show:
            show(verdict, None)
        from .jacobian_pictures import in_a_notebook_cell

        return None if in_a_notebook_cell() else verdict  # called from Python (tests, tools): the verdict


CHECKS: dict[str, Check] = {}


def register(
    name: str,
    probe: str,
    judge: str,
    show: str | None = None,
    draw: str | None = None,
    crash_hint: str | None = None,
    by_hand: bool = False,
) -> Check:
    """Register a check under the name test cells call it by; returns the callable check."""
    if name in CHECKS:
        raise ValueError(f"a check named {name} is already registered")
    for target in (probe, judge) + tuple(t for t in (show, draw) if t):
        if not isinstance(target, str) or ":" not in target:
            raise TypeError(f"{name}: probe, judge and show are 'package.module:function' strings, not {target!r}")
    if probe.startswith("autograder.judges"):
        raise ValueError(f"{name}: a probe runs inside the sandbox, where autograder.judges is absent")
    CHECKS[name] = Check(name, probe, judge, show, draw, crash_hint, by_hand)
    return CHECKS[name]


@dataclass(frozen=True)
class NotebookChecks:
    """One notebook's checks: where its probes and judges live and what its checks share. The one way a notebook
    registers a check, `checks.add("check_x", "probe_x", "judge_x", draw="draw_x", by_hand=...)`: by_hand is said
    for every check (no default to forget), the functions are named in the notebook's own probe and judge modules."""

    probes: str  # e.g. "autograder.probes.nb05"
    judges: str  # e.g. "autograder.judges.nb05"
    show: str | None = None  # the learner-side hook of the checks that draw their report (pictures)
    crash_hint: str | None = None

    def add(
        self,
        name: str,
        probe: str,
        judge: str,
        *,
        draw: str,
        by_hand: bool,
        show: bool = True,
        crash_hint: str | None = None,
    ) -> Check:
        return register(
            name,
            probe=f"{self.probes}:{probe}",
            judge=f"{self.judges}:{judge}",
            show=self.show if show else None,
            draw=f"{self.judges}:{draw}",
            crash_hint=crash_hint or self.crash_hint,
            by_hand=by_hand,
        )

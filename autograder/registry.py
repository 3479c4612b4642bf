"""The one way to declare a check: a *probe* (inside the sandbox) and a *judge* (outside it), found by import.

A notebook's checks live in its folder, ``autograder/nbNN/``, one side per file::

    nbNN/__init__.py   checks = NotebookChecks(__name__)
                       check_x = checks.add("check_x", probe_x, by_hand=True)   # what test cells import
    nbNN/probes.py     def probe_x(obj, **params): ...                          # runs in the sandbox
    nbNN/cases.py      the inputs both sides build from the same params
    nbNN/judges.py     @decides("check_x", draw=draw_x)                         # never enters the sandbox
                       def judge_x(data, **params): ...

The grading sandbox sees a copy of the package without any ``judges`` module or folder, nor ``grading/``
(:mod:`autograder.grading.probe_view`): the learner's code can neither import nor read a judge or a reference.

* ``probe(obj, **params) -> data``: the only code that touches the learner's object. It calls it
  (through :func:`autograder.probes.call.call_learner`) on the cases ``params`` name and returns
  plain data (dicts, lists, numbers, strings, CPU tensors) -- never the learner's objects. A
  learner-caused failure (blank stub, crash, wrong type) raises :class:`CheckFailed`.
* ``judge(data, **params) -> points | Verdict | None``: recomputes every reference itself and compares.
  It never sees the learner's object. Raises :class:`CheckFailed` when the answer is wrong.

A check's judge is registered when its module is imported whole (outside the sandbox); inside the sandbox
there is none, and nothing there asks for one.

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
from dataclasses import dataclass, field
from typing import Any

from .feedback import CheckFailed

FAILED = "__check_failed__"


UNAVAILABLE: dict[str, str] = {}  # notebook module -> why this machine cannot import it


def import_notebook_modules() -> None:
    """Import every notebook's checks (autograder.nbNN): where the notebooks declare their checks and add their
    Function exercises' inputs (cases.py) and references (judges.py). Where Triton is not installed (it has Linux
    wheels only), the notebooks whose checks need it are left out, said in UNAVAILABLE: the others' checks must still
    load (a warm-kernel factory imports them all, and would otherwise die and leave every kernel cold)."""
    import pkgutil

    for module in pkgutil.iter_modules(importlib.import_module("autograder").__path__):
        if module.name.startswith("nb") and f"autograder.{module.name}" not in UNAVAILABLE:  # not tried again
            try:
                importlib.import_module(f"autograder.{module.name}")
            except ModuleNotFoundError as missing:
                if missing.name != "triton":  # Triton itself absent; any other missing module is an error
                    raise
                UNAVAILABLE[f"autograder.{module.name}"] = "its checks need Triton, which is not installed here"


def unavailable_note() -> str:
    """What the known names leave out, for an error that names them: the notebooks this machine cannot check."""
    if not UNAVAILABLE:
        return ""
    return " (not loaded here: " + "; ".join(f"{m}: {why}" for m, why in sorted(UNAVAILABLE.items())) + ")"


ProbeData = Any  # what a probe returns: plain dicts, lists, numbers, strings and CPU tensors, never a learner object
Probe = Callable[..., Any]
Judge = Callable[..., Any]
Drawer = Callable[[random.Random, int], dict[str, Any]]
Show = Callable[[Any, Any], None]


@dataclass(frozen=True)
class Decision:
    """A check's judge side: the judge and the drawer of its hidden cases."""

    judge: Judge
    draw: Drawer


JUDGES: dict[str, Decision] = {}  # check name -> its judge side, filled by importing a module whole


def decides(*names: str, draw: Drawer) -> Callable[[Judge], Judge]:
    """Declare the decorated function the judge of the checks `names`, with `draw` their hidden cases' drawer."""

    def declare(judge: Judge) -> Judge:
        for name in names:
            if name in JUDGES and JUDGES[name].judge is not judge:
                raise ValueError(f"{name} already has a judge, {JUDGES[name].judge.__qualname__}")
            JUDGES[name] = Decision(judge, draw)
        return judge

    return declare


@dataclass(frozen=True)
class Check:
    name: str
    probe: Probe
    judges_module: str  # where its judge is declared (imported, outside the sandbox, if not yet)
    show: Show | None = None  # shows a result in the notebook (verdict, failure)
    crash_hint: str | None = None  # said when the kernel dies during this check's test cell
    by_hand: bool = False  # the exercise is done by hand: autograd in the answer is flagged
    measures_memory: bool = False  # the check measures PyTorch's memory: NumPy in the answer (unmeasured) is flagged

    @property
    def decision(self) -> Decision:
        if self.name not in JUDGES:
            importlib.import_module(self.judges_module)
        if self.name not in JUDGES:
            raise LookupError(
                f"{self.name} has no judge here: one is declared with @decides in {self.judges_module}, which the"
                " grading sandbox does not see"
            )
        return JUDGES[self.name]

    @property
    def judge(self) -> Judge:
        return self.decision.judge

    def drawn(self, params: dict, rng: random.Random | None = None) -> dict:
        """The params with `draw=N` replaced by N generated cases (fresh randomness unless `rng` is given)."""
        if "draw" not in params:
            return dict(params)
        rest = {k: v for k, v in params.items() if k != "draw"}
        rng = rng or random.Random(os.urandom(16))
        return {**rest, **self.decision.draw(rng, params["draw"])}

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
        show = self.show
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


@dataclass(frozen=True)
class NotebookChecks:
    """One notebook's checks, declared in its checks module: `checks = NotebookChecks(__name__)`, then
    `check_x = checks.add("check_x", probe_x, by_hand=...)`. by_hand is said for every check (no default to forget);
    the judge is the function decorated `@decides("check_x", draw=...)` in the notebook's judges module."""

    module: str  # the notebook's checks package's __name__ (autograder.nbNN)
    judges: str | None = None  # where the judges are declared, if not `module`.judges (the generic Function check)
    show: Show | None = None  # the learner-side hook of the checks that draw their report (pictures)
    crash_hint: str | None = None
    names: list[str] = field(default_factory=list)  # the checks declared, in order: the module's __all__

    def add(
        self,
        name: str,
        probe: Probe,
        *,
        by_hand: bool,
        show: bool = True,
        crash_hint: str | None = None,
        measures_memory: bool = False,
    ) -> Check:
        """Register a check under the name test cells call it by; returns the callable check."""
        if name in CHECKS:
            raise ValueError(f"a check named {name} is already registered")
        if not callable(probe) or "judges" in probe.__module__.split("."):
            raise TypeError(f"{name}: the probe is a function of a probes module, which the sandbox sees")
        check = Check(
            name,
            probe,
            self.judges or f"{self.module}.judges",
            show=self.show if show else None,
            crash_hint=crash_hint or self.crash_hint,
            by_hand=by_hand,
            measures_memory=measures_memory,
        )
        CHECKS[name] = check
        self.names.append(name)
        return check


def show_verdict(verdict: Any, failure: Any) -> None:
    """The checks' pictures in a notebook (imported when first shown: matplotlib is slow to import)."""
    from .jacobian_pictures import show_verdict as show

    show(verdict, failure)

"""What the judges know of a learner's kernel comes from its recorded text (coursetools.kernel_text), run and compiled
where grading decides nothing: the probe in the learner's process only takes the text.

    launches = kernel_runs.probe("autograder.nb06.probes:probe_ce_forward", record, params)  # what it did
    answers = kernel_runs.compile(record, [(signature, constexprs), ...])  # what a GPU compiler says

While a submission is graded, the grading worker installs a runner of that submission's own (`using`): every
request is a child process forked from a clean factory, sandboxed with the submission's uid
(autograder/probes/kernel_runner.py, autograder/grading/kernel_sandbox.py). Anywhere else -- a learner's own
notebook, the tests -- the text is rebuilt and run here, and compiled in a fresh local process: there is nobody
to protect the learner from.

Answers are kept for the process, by the whole request (a compile's by the text and one launch): the child that
answered saw that request and nothing else, so the same text gets the same answer whoever hands it in.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from ..feedback import CheckFailed

GRADED_ARCH = 90  # an H100, the GPU the notebooks' figures are for
COMPILE_TIMEOUT_S = 60.0  # a kernel of these exercises compiles in well under a second


class Runner(Protocol):
    def probe(self, probe: str, record: dict, params: dict) -> Any: ...

    def compile(self, record: dict, launches: list, arch: int) -> list[dict]: ...


class RunFailed(CheckFailed):
    """The kernel's run ended without an answer (it crashed, or ran past its time): the learner's doing."""


class LocalRunner:
    """The text rebuilt and run in this process; compiled in a fresh process of this machine's."""

    def __init__(self) -> None:
        self._compiler: Any = None

    def probe(self, probe: str, record: dict, params: dict) -> Any:
        import importlib

        import torch

        from coursetools.device import triton_mode
        from coursetools.kernel_text import rebuild

        from ..probes.kernel_runner import KERNEL_PROBES
        from ..registry import FAILED

        if probe not in KERNEL_PROBES:
            raise ValueError(f"not a kernel probe: {probe}")
        module, _, name = probe.partition(":")
        function = getattr(importlib.import_module(module), name)
        interpreted = triton_mode() == "interpreter" or not torch.cuda.is_available()
        try:
            kernel = rebuild(record, interpreted=interpreted)
        except Exception as error:  # noqa: BLE001 - the learner's text, as Python reads it
            return {FAILED: f"Your kernel could not be defined from its source ({type(error).__name__}: {error})"}
        try:
            return function(kernel, **params)
        except CheckFailed as failure:
            return {FAILED: str(failure)}

    def compile(self, record: dict, launches: list, arch: int) -> list[dict]:
        from coursetools.gpu_compile import CompileProcess

        if self._compiler is None or not self._compiler.alive():
            try:
                self._compiler = CompileProcess(timeout_s=COMPILE_TIMEOUT_S)
            except OSError as error:
                return [{"ok": None, "why": f"the compile process could not start: {error}"} for _ in launches]
        answers = []
        for signature, constexprs in launches:
            answer = self._compiler.ask(record, signature, constexprs, arch)
            answers.append(answer)
            if answer.get("ok") is not True:
                break  # the first failure is the answer; a dead process is started afresh next time
        return answers


_local = LocalRunner()
_installed: list[Runner] = []
_compiled: dict[str, dict] = {}  # one answer per launch
_probed: dict[str, Any] = {}
MAX_PROBES_KEPT = 64  # a worker grading a class keeps the last few (the same kernel checked again, a regrade)
MAX_COMPILES_KEPT = 4096  # answers are small: a class's kernels, each in a few specializations


@contextmanager
def using(runner: Runner) -> Iterator[Runner]:
    """Every kernel request in the body goes to `runner` (a grading worker's, for one submission)."""
    _installed.append(runner)
    try:
        yield runner
    finally:
        _installed.pop()


def current() -> Runner:
    return _installed[-1] if _installed else _local


def probe(probe_name: str, record: dict, params: dict) -> Any:
    """What the kernel probe `probe_name` (module:function, one of kernel_runner.KERNEL_PROBES) returned for the
    recorded kernel: its data, or {FAILED: message}. RunFailed when the run ended without an answer. Kept for the
    process by the whole request, as compile answers are (the cases are drawn from the request's seed, and the
    child saw nothing else); handed out as a copy."""
    key = json.dumps([probe_name, record, params], sort_keys=True, default=str)
    if key not in _probed:
        _probed[key] = current().probe(probe_name, record, params)
        while len(_probed) > MAX_PROBES_KEPT:
            _probed.pop(next(iter(_probed)))
    return copy.deepcopy(_probed[key])


def compile(record: dict, launches: Sequence[tuple[dict, dict]], arch: int = GRADED_ARCH) -> list[dict]:  # noqa: A001
    """One answer per launch (coursetools.gpu_compile.compile_record's), up to the first that is not a success:
    {"ok": True, ...}, {"ok": False, "why", "line"}, or {"ok": None, "why"} when the compile could not run. Launches
    that Triton specializes alike (same_specialization) are compiled once."""
    launches = [same_specialization(signature, constexprs) for signature, constexprs in launches]
    keys = [json.dumps([record, launch, arch], sort_keys=True, default=str) for launch in launches]
    asked: dict[str, tuple[dict, dict]] = {}  # not answered yet, up to the first answer kept that is a failure
    for key, launch in zip(keys, launches):
        if key not in _compiled:
            asked[key] = launch
        elif _compiled[key].get("ok") is not True:
            break
    answered: dict[str, dict] = {}
    if asked:
        answered = dict(zip(asked, current().compile(record, [list(launch) for launch in asked.values()], arch)))
    for key, answer in answered.items():
        if isinstance(answer, dict) and answer.get("ok") is not None:
            _compiled[key] = answer
    while len(_compiled) > MAX_COMPILES_KEPT:
        _compiled.pop(next(iter(_compiled)))
    answers = []
    for key in keys:
        answer = _compiled.get(key) or answered.get(key)
        if answer is None:  # not compiled: an earlier launch's failure ended the compile
            break
        answers.append(dict(answer) if isinstance(answer, dict) else answer)  # the judge refuses what is no dict
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            break
    return answers


def same_specialization(signature: dict, constexprs: dict) -> tuple[dict, dict]:
    """The launch with each number replaced by the one that stands for all Triton compiles alike
    (coursetools.gpu_compile.specialization_class): n_elements=300 and n_elements=183 are one compile."""
    from coursetools.gpu_compile import specialization_class

    return {name: specialization_class(value) for name, value in signature.items()}, constexprs

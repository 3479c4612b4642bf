"""Measurement exercises have nothing to tabulate (issue: grading that trusts nothing the learner's process can
write, part 5): their hidden cases draw sizes and dtypes from the grader's secret, not from the public list the
notebook shows, so a table of the shown answers fails them, and an honest measurement keeps full marks on any
draw."""

from __future__ import annotations

import random

import pytest
import torch

from autograder import nb05, nb06
from autograder.feedback import CheckFailed
from autograder.registry import CHECKS

pytestmark = pytest.mark.grading


def saved_bytes(fn, *inputs):  # the solution's measurement: each storage forward saves, once
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(storages.values())


def new_saved_bytes(fn, *inputs):
    own = {t.untyped_storage().data_ptr() for t in inputs}
    kept = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in own:
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(kept.values())


def _fingerprint(fn, *inputs):
    """How a table tells the shown problems apart without measuring: what fn does to small fixed inputs."""
    small = [torch.linspace(0.1, 0.9, 6).reshape((2, 3) if t.dim() == 2 else (6,)).to(t.dtype) for t in inputs]
    try:
        with torch.no_grad():
            return (len(inputs), round(float(fn(*small).double().sum()), 4), inputs[0].requires_grad)
    except Exception:  # noqa: BLE001 -- shapes that do not fit: the number of inputs still tells
        return (len(inputs), None, inputs[0].requires_grad)


def tabulated(measure, problem_of, names):
    """A learner's answer that looks up the shown cases' answers, measured once on the public problems."""
    table = {}
    for name in names:
        fn, inputs = problem_of(name)
        table[_fingerprint(fn, *inputs)] = measure(fn, *inputs)
    return lambda fn, *inputs: table.get(_fingerprint(fn, *inputs), 0)


def hidden(check: str, seed: int) -> dict:
    return CHECKS[check].drawn({"draw": 7}, random.Random(seed))


def _scores(check, answer, params) -> float:
    try:
        result = check(answer, **params)
    except CheckFailed as failure:
        verdict = getattr(failure, "verdict", None)
        return float(verdict) / verdict.points if verdict is not None else 0.0
    return 1.0 if result is None else float(result) / result.points


@pytest.mark.nb05
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_table_of_the_shown_saved_bytes_fails_the_drawn_cases_and_a_measurement_passes(seed):
    table = tabulated(saved_bytes, nb05.cases.saved_bytes_problem, nb05.cases.SAVED_BYTES_PROBLEMS)
    shown = {"problems": list(nb05.cases.SAVED_BYTES_PROBLEMS)}
    assert _scores(nb05.check_saved_bytes, table, shown) == 1.0  # the table does answer the public cases
    drawn = hidden("check_saved_bytes", seed)
    assert drawn["seed"] != 0
    assert _scores(nb05.check_saved_bytes, table, drawn) == 0.0
    assert _scores(nb05.check_saved_bytes, saved_bytes, drawn) == 1.0


def _public_table():
    return tabulated(new_saved_bytes, lambda name: nb06.cases.saved_problem(name, 0), nb06.cases.SAVED_PROBLEMS)


def _table_else_the_inputs_bytes():
    """The shown answers where recognised; else the bytes of the first input (the shown exp's answer, by formula)."""
    table = {}
    for name in nb06.cases.SAVED_PROBLEMS:
        fn, inputs = nb06.cases.saved_problem(name, 0)
        table[_fingerprint(fn, *inputs)] = new_saved_bytes(fn, *inputs)
    return lambda fn, *inputs: table.get(_fingerprint(fn, *inputs), inputs[0].numel() * inputs[0].element_size())


def _formulas_fitted_to_the_shown_problems(fn, *inputs):
    """Recognises which shown problem a case is like (two inputs: mul; the output's node: exp, sin, nll_loss) and
    answers with a formula fitted to the shown answers, from the inputs' sizes: no measurement."""
    x = inputs[0]
    if len(inputs) == 2:
        return 0  # mul saves its inputs
    node = type(fn(*inputs).grad_fn).__name__
    if node.startswith("Sin"):
        return 0  # a view of the input
    if node.startswith("NllLoss"):  # the log-softmax, the targets (int64) and the total weight
        return x.numel() * x.element_size() + 8 * x.shape[0] + x.element_size()
    return x.numel() * x.element_size()  # exp's output, x's size


@pytest.mark.nb06
@pytest.mark.parametrize(
    "table",
    [_public_table, _table_else_the_inputs_bytes, lambda: _formulas_fitted_to_the_shown_problems],
    ids=["the shown answers, else 0", "the shown answers, else the input's bytes", "formulas fitted to them"],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_table_of_the_shown_new_saved_bytes_earns_nothing_on_the_drawn_cases_and_a_measurement_all(seed, table):
    """Before: 1 of 3 on the drawn cases (the hidden mul and view_sin kept 0 new bytes whatever their sizes, so a
    table's default of 0 answered them: the "inputs" part). Now each hidden problem is drawn with new memory of a
    drawn width beside its idea, and returns a scalar: nothing recognised from the shown problems answers it."""
    answer = table()
    assert _scores(nb06.check_new_saved_bytes, answer, {}) == 1.0  # each answers the shown cases
    drawn = hidden("check_new_saved_bytes", seed)
    assert _scores(nb06.check_new_saved_bytes, answer, drawn) == 0.0
    assert _scores(nb06.check_new_saved_bytes, new_saved_bytes, drawn) == 1.0


@pytest.mark.nb06
def test_the_solutions_new_saved_bytes_keeps_full_marks_on_any_draw():
    from autograder.coursedir import SOLUTIONS
    from autograder.submissions import solution_sources

    (path,) = (SOLUTIONS / "06-fused-cross-entropy").glob("*.ipynb")
    namespace = {"torch": torch}
    exec(solution_sources(path)["new_saved_bytes"], namespace)
    assert _scores(nb06.check_new_saved_bytes, namespace["new_saved_bytes"], {}) == 1.0
    for seed in range(1, 30):
        assert (
            _scores(nb06.check_new_saved_bytes, namespace["new_saved_bytes"], hidden("check_new_saved_bytes", seed))
            == 1.0
        )


def test_drawn_cases_vary_their_sizes_and_dtypes():
    seeds = range(1, 40)
    drawn05 = [nb05.cases.saved_bytes_problem("exp_twice", s)[1][0] for s in seeds]
    drawn06 = [nb06.cases.saved_problem("exp", s)[1][0] for s in seeds]
    assert len({x.numel() for x in drawn05}) > 30 and {x.dtype for x in drawn05} == {torch.float32, torch.float64}
    assert len({tuple(z.shape) for z in drawn06}) > 30 and {z.dtype for z in drawn06} == {torch.float32, torch.float64}

"""The grader's contract (autograder/registry.py), tested once for every notebook: a probe returns plain data
(dicts, lists, numbers, strings, CPU tensors outside any graph) that survives torch.save / torch.load with
weights_only=True and stays small; the judge alone, given only that data, gives a correct answer full marks and
a wrong one less; a blank answer's data says it failed."""

from __future__ import annotations

import io
import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # nb05's kernels, defined in its test module, run interpreted

import pytest  # noqa: E402
import torch  # noqa: E402

from autograder.coursedir import assignments  # noqa: E402
from autograder.feedback import CheckFailed  # noqa: E402
from autograder.registry import CHECKS, FAILED  # noqa: E402


def plain(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(plain(v) for v in value)
    if isinstance(value, torch.Tensor):
        return value.device.type == "cpu" and value.grad_fn is None and not value.requires_grad
    return value is None or isinstance(value, (bool, int, float, str))


def _blank(*args, **kwargs):
    raise NotImplementedError()


def nb01_cases():
    from tests import test_nb01_checks as t

    params = {"at": [(2.0, 3.0)]}
    wrong = lambda a, b: {**t.adjoints(a, b), "w1": b}  # noqa: E731
    return [("check_adjoint_trace", t.adjoints, wrong, _blank, params)]


def nb02_cases():
    from tests import test_nb02_checks as t

    ns = t.engine()
    return [("check_backward", ns["Variable"], None, None, {"graphs": [("reuse", 5, 1)]})]


def nb03_cases():
    from tests import test_nb03_checks as t

    params = {"reference": "linear", "points": 4, "seed": 0, "cases": 2}
    blank = t.fn("LinearFunction", _blank, _blank)
    return [("check_function", t.Linear, t.WRONG["linear: transposed weight gradient"][0], blank, params)]


def nb04_cases():
    from tests import test_nb04_checks as t

    return [(check.name, answer, None, None, params) for check, params, answer in t.CHECKS.values()]


def nb05_cases():
    from tests import test_nb05_checks as t

    cases = [(t.CHECK_CALLS[e][0].name, obj, None, None, t.CHECK_CALLS[e][1]) for e, obj in t.CORRECT.items()]
    check, params = t.CHECK_CALLS["forward_kernel"]
    return cases + [(check.name, t.silu_forward_kernel, t.unmasked_store_kernel, t.blank_kernel, params)]


def from_test_module(notebook: str):
    """A later notebook's cases come from its own test module: `contract_cases()` in tests/test_nbNN_checks.py."""

    def cases():
        import importlib

        module = importlib.import_module(f"tests.test_{notebook}_checks")
        assert hasattr(module, "contract_cases"), f"tests/test_{notebook}_checks.py: write contract_cases()"
        return module.contract_cases()

    return cases


NOTEBOOKS = {"nb01": nb01_cases, "nb02": nb02_cases, "nb03": nb03_cases, "nb04": nb04_cases, "nb05": nb05_cases}
NOTEBOOKS.update({f"nb{a[:2]}": from_test_module(f"nb{a[:2]}") for a in assignments() if f"nb{a[:2]}" not in NOTEBOOKS})


@pytest.mark.parametrize("notebook", [pytest.param(n, marks=getattr(pytest.mark, n)) for n in NOTEBOOKS])
def test_probe_data_is_plain_and_the_judge_alone_decides(notebook):
    for name, correct, wrong, blank, params in NOTEBOOKS[notebook]():
        check = CHECKS[name]
        data = check.collect(correct, **params)
        assert plain(data), f"{name}: the probe's data holds more than plain values"
        buffer = io.BytesIO()
        torch.save(data, buffer)
        buffer.seek(0)
        torch.load(buffer, weights_only=True)
        assert len(buffer.getvalue()) < 256 * 1024, f"{name}: probe data too large for a test cell's output"
        verdict = check.decide(data, **params)
        if "points" in params and isinstance(params["points"], (int, float)):
            assert float(verdict) == params["points"], f"{name}: a correct answer judged from its data alone"
        if wrong is not None:
            try:
                verdict = check.decide(check.collect(wrong, **params), **params)
                lost = verdict is not None and float(verdict) < params.get("points", 1)
            except CheckFailed:
                lost = True
            assert lost, f"{name}: a wrong answer's data, judged alone, kept every point"
        if blank is not None:
            assert FAILED in check.collect(blank, **params), f"{name}: a blank answer's data does not say so"
        if isinstance(data, list) and len(data) > 1:  # a judge takes answers to exactly the cases it asked for
            with pytest.raises(CheckFailed):
                check.decide(data[:-1], **params)

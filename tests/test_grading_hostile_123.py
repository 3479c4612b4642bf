"""Hostile answers to notebooks 01-03: routes a learner might take to marks without doing an exercise's work, each
with what the grader must do, and honest answers written differently that must keep full marks.

Unit tests call the checks as a notebook does (probe, then judge); the slow ones grade real submissions with the
grading command, so that the kernel's watch and the screening take part too."""

from __future__ import annotations

import pytest
import torch

from autograder import nb01, nb03
from autograder.feedback import CheckFailed


def _verdict(check, answer, **params):
    """(passed, message) of a check called as a test cell calls it."""
    try:
        check(answer, **params)
    except CheckFailed as failure:
        return False, str(failure)
    return True, ""


# =========================================================================== by-hand numbers from autograd, reached
# without the words the screen looks for (getattr with a constant name), and f called just often enough

_AUTOGRAD = torch.autograd
_FUNC = torch.func


def _gradient_by_autograd(f, x, h=1e-6):
    for _ in range(2 * x.numel() - 1):  # the evaluation count the check expects, with the one below
        f(x.clone())
    v = x.clone().detach().requires_grad_(True)
    return _AUTOGRAD.grad(f(v), v)[0].detach()


def _gradient_by_func(f, x, h=1e-6):
    for _ in range(2 * x.numel() - 1):
        f(x.clone())
    return _FUNC.grad(f)(x.clone())


def _gradient_by_jvp(f, x, h=1e-6):  # forward mode, one unit tangent per entry
    g = torch.empty_like(x)
    for i in range(x.numel()):
        e = torch.zeros_like(x)
        e[i] = 1.0
        g[i] = _FUNC.jvp(f, (x.clone(),), (e,))[1]
        f(x.clone())
    return g


def _gradient_honest_differently(f, x, h=1e-6):  # in place on a copy, restored, float arithmetic
    v, g = x.clone(), []
    for i in range(v.numel()):
        old = float(v[i])
        v[i] = old + h
        up = float(f(v))
        v[i] = old - h
        g.append((up - float(f(v))) / (2 * h))
        v[i] = old
    return torch.tensor(g, dtype=x.dtype)


GRADIENT_CASES = [(3, 0), (10, 5), (1, 7)]


@pytest.mark.nb01
@pytest.mark.parametrize("answer", [_gradient_by_autograd, _gradient_by_func, _gradient_by_jvp])
def test_a_numerical_gradient_from_autograd_scores_nothing(answer):
    """Before: full marks (the right numbers, f called 2n times) and, with getattr(torch, "autograd"), no flag.
    Now the probe's f passes through a Function that counts reverse and forward sweeps, and the judge refuses."""
    passed, message = _verdict(nb01.check_numerical_gradient, answer, cases=GRADIENT_CASES)
    assert not passed and "with autograd" in message and "central differences" in message, message


@pytest.mark.nb01
def test_a_numerical_gradient_written_differently_keeps_full_marks():
    assert _verdict(nb01.check_numerical_gradient, _gradient_honest_differently, cases=GRADIENT_CASES) == (True, "")


def _rows_by_functional_jacobian(F, x):
    return torch.autograd.functional.jacobian(F, x)  # m reverse sweeps, run by the library


def _rows_by_jacfwd_beside_reverse_sweeps(F, x):  # the sweeps the check counts, thrown away
    m = F(x).numel()
    for i in range(m):
        v = x.clone().requires_grad_()
        _AUTOGRAD.grad(F(v), v, torch.eye(m, dtype=x.dtype)[i])
    return _FUNC.jacfwd(F)(x)


def _rows_by_backward_honestly(F, x):  # written differently: .backward() into x.grad, row by row
    v = x.clone().requires_grad_()
    y = F(v)
    rows = []
    for i in range(y.numel()):
        v.grad = None
        y.backward(torch.eye(y.numel(), dtype=y.dtype)[i], retain_graph=True)
        rows.append(v.grad.clone())
    return torch.stack(rows)


JACOBIAN_REVERSE_CASES = [(2, 3, 0), (5, 4, 1), (1, 6, 2)]


@pytest.mark.nb01
@pytest.mark.parametrize(
    "answer, words",
    [
        (_rows_by_functional_jacobian, "torch.autograd.functional.jacobian"),
        (_rows_by_jacfwd_beside_reverse_sweeps, "forward mode"),
    ],
)
def test_a_reverse_jacobian_whose_rows_a_library_computes_scores_nothing(answer, words):
    """Before: full marks and no flag (jacobian_reverse may use autograd, so it is not screened): the library's m
    reverse sweeps counted as the learner's, and m sweeps run beside a forward-mode Jacobian were enough. Now the probe
    sees whose sweeps they are (torch.autograd.functional's frames on the stack) and counts forward sweeps too."""
    passed, message = _verdict(nb01.check_jacobian_reverse, answer, cases=JACOBIAN_REVERSE_CASES)
    assert not passed and words in message, message


@pytest.mark.nb01
def test_a_reverse_jacobian_written_differently_keeps_full_marks():
    assert _verdict(nb01.check_jacobian_reverse, _rows_by_backward_honestly, cases=JACOBIAN_REVERSE_CASES) == (True, "")


JACOBIAN_PROBLEMS = ["product_sine", "matrix_vector", "sum_of_squares", "softmax"]


def _jacobian_by_jacfwd(f, inputs, eps=1e-6):
    jac = _FUNC.jacfwd(f, argnums=tuple(range(len(inputs))))(*inputs)
    with torch.no_grad():  # f evaluated just often enough (jacfwd called it once)
        for _ in range(2 * sum(x.numel() for x in inputs) - 1):
            f(*inputs)
    out = f(*inputs).numel()
    return [J.reshape(out, x.numel()) for J, x in zip(jac, inputs)]


def _jacobian_by_dual_numbers(f, inputs, eps=1e-6):
    forward_ad = _AUTOGRAD.forward_ad
    columns, calls = [[] for _ in inputs], 0
    for i, x in enumerate(inputs):
        for k in range(x.numel()):
            tangent = torch.zeros_like(x).view(-1)
            tangent[k] = 1.0
            with forward_ad.dual_level():
                args = [forward_ad.make_dual(a, tangent.view_as(a)) if j == i else a for j, a in enumerate(inputs)]
                columns[i].append(forward_ad.unpack_dual(f(*args)).tangent.reshape(-1))
            calls += 1
    for _ in range(2 * sum(x.numel() for x in inputs) - calls):
        f(*inputs)
    return [torch.stack(c, dim=1) for c in columns]


def _jacobian_honest_differently(f, inputs, eps=1e-6):  # row by row of the perturbed entries, then transposed
    out = []
    for i, x in enumerate(inputs):
        rows = []
        for k in range(x.numel()):
            step = torch.zeros(x.numel(), dtype=x.dtype)
            step[k] = eps
            plus = [a + step.view_as(a) if j == i else a for j, a in enumerate(inputs)]
            minus = [a - step.view_as(a) if j == i else a for j, a in enumerate(inputs)]
            rows.append(((f(*plus) - f(*minus)) / (2 * eps)).reshape(-1))
        out.append(torch.stack(rows).T.contiguous())
    return out


@pytest.mark.nb03
@pytest.mark.parametrize("answer", [_jacobian_by_jacfwd, _jacobian_by_dual_numbers])
def test_a_numerical_jacobian_from_forward_mode_scores_nothing(answer):
    """Before: full marks. Forward mode calls f on inputs that do not require grad, so the probe's
    calls-with-grad count missed it; with the calls padded to 2n and getattr(torch, "func"), no flag either.
    Now forward sweeps through f are counted and the judge refuses."""
    passed, message = _verdict(nb03.check_numerical_jacobian, answer, problems=JACOBIAN_PROBLEMS)
    assert not passed and "forward mode" in message and "central differences" in message, message


@pytest.mark.nb03
def test_a_numerical_jacobian_written_differently_keeps_full_marks():
    assert _verdict(nb03.check_numerical_jacobian, _jacobian_honest_differently, problems=JACOBIAN_PROBLEMS) == (
        True,
        "",
    )


# ======================================================================= by-hand exercises handed to autograd where the
# screen did not look: forward-mode dual numbers, an nn.Parameter, getattr with a constant name, a module of one's own

TANGENT_BY_DUAL_NUMBERS = '''def tangent_trace(x1, x2, dx1, dx2):
    dual = torch.autograd.forward_ad
    t = lambda v: torch.tensor(v, dtype=torch.float64)
    with dual.dual_level():
        w1, w2 = dual.make_dual(t(x1), t(dx1)), dual.make_dual(t(x2), t(dx2))
        ws = (w1, w2, w1 * w2, torch.sin(w1))
        ws = ws + (ws[2] + ws[3],)
        return {f"w{i + 1}": float(dual.unpack_dual(w).tangent) for i, w in enumerate(ws)}
'''
ADJOINT_BY_PARAMETERS = '''def adjoint_trace(x1, x2):
    w1 = torch.nn.Parameter(torch.tensor(x1, dtype=torch.float64))
    w2 = torch.nn.Parameter(torch.tensor(x2, dtype=torch.float64))
    w3, w4 = w1 * w2, torch.sin(w1)
    w5 = w3 + w4
    for w in (w3, w4, w5):
        w.retain_grad()
    w5.backward()
    return {f"w{i + 1}": float(w.grad) for i, w in enumerate((w1, w2, w3, w4, w5))}
'''
ADJOINT_BY_GETATTR = '''def adjoint_trace(x1, x2):
    w1 = torch.tensor(x1, dtype=torch.float64).requires_grad_()
    w2 = torch.tensor(x2, dtype=torch.float64).requires_grad_()
    ws = (w1, w2, w1 * w2, torch.sin(w1))
    ws = ws + (ws[2] + ws[3],)
    return {f"w{i + 1}": float(g) for i, g in enumerate(getattr(torch, "autograd").grad(ws[4], ws))}
'''
ADJOINT_FROM_A_MODULE_WRITTEN_TO_DISK = '''open("my_sweeps.py", "w").write(
    "import torch\\n"
    "def adjoint_trace(x1, x2):\\n"
    "    w1 = torch.tensor(x1, dtype=torch.float64, requires_grad=True)\\n"
    "    w2 = torch.tensor(x2, dtype=torch.float64, requires_grad=True)\\n"
    "    ws = (w1, w2, w1 * w2, torch.sin(w1))\\n"
    "    ws = ws + (ws[2] + ws[3],)\\n"
    "    return {f'w{i + 1}': float(g) for i, g in enumerate(torch.autograd.grad(ws[4], ws))}\\n")
from my_sweeps import adjoint_trace
'''
NUMERICAL_GRADIENT_BY_GETATTR = '''def numerical_gradient(f, x, h=1e-6):
    for _ in range(2 * x.numel() - 1):
        f(x.clone())
    v = x.clone().detach().requires_grad_()
    return getattr(torch, "autograd").grad(f(v), v)[0].detach()
'''
ADJOINT_HONEST_DIFFERENTLY = '''def adjoint_trace(x1, x2):
    adjoint = {"w5": 1.0}
    adjoint["w3"] = adjoint["w4"] = adjoint["w5"]           # w5 = w3 + w4
    adjoint["w2"] = adjoint["w3"] * x1                      # w3 = w1 * w2
    adjoint["w1"] = adjoint["w3"] * x2 + adjoint["w4"] * math.cos(x1)
    return adjoint
'''
SCREENED_ROUTES = {  # name: (answer cell, its code, the flag code, words of its reason)
    "dual numbers": ("tangent_trace", TANGENT_BY_DUAL_NUMBERS, "by_hand_with_autograd", "forward_ad"),
    "nn.Parameter": ("adjoint_trace", ADJOINT_BY_PARAMETERS, "by_hand_with_autograd", ".backward()"),
    "getattr": ("adjoint_trace", ADJOINT_BY_GETATTR, "by_hand_with_autograd", "torch.autograd"),
    "a module written to disk": (
        "adjoint_trace",
        ADJOINT_FROM_A_MODULE_WRITTEN_TO_DISK,
        "reaches_for_grader",
        "not installed",
    ),
}


def _screened(assignment, replace):
    from test_grading_hostile_45 import screened

    return screened(assignment, replace)


@pytest.mark.nb01
@pytest.mark.parametrize("route", list(SCREENED_ROUTES))
def test_a_by_hand_trace_handed_to_autograd_out_of_the_screens_sight_is_flagged(route):
    """Before: full marks and no flag (the screen knew torch.autograd.grad/functional and requires_grad by those words
    only, and read nothing of an imported module). Now each is flagged, naming the exercise and the reason."""
    gid, source, code, reason = SCREENED_ROUTES[route]
    flags = _screened("01-reverse-accumulation", {gid: source})
    assert [f.code for f in flags] == [code] and f"exercise {gid}" in flags[0].detail and reason in flags[0].detail, (
        flags
    )


@pytest.mark.nb01
def test_by_hand_traces_written_differently_and_installed_imports_are_not_flagged():
    assert _screened("01-reverse-accumulation", {"adjoint_trace": ADJOINT_HONEST_DIFFERENTLY}) == []
    assert (
        _screened(
            "01-reverse-accumulation",
            {
                "adjoint_trace": "import numpy as np\nimport coursetools\n"
                "from matplotlib import pyplot\n" + ADJOINT_HONEST_DIFFERENTLY
            },
        )
        == []
    )


# =========================================================================== the learner's own .py files

ADJOINT_MODULE_HONEST = "import math\n\n\n" + ADJOINT_HONEST_DIFFERENTLY
ADJOINT_MODULE_BY_AUTOGRAD = '''import torch


def adjoint_trace(x1, x2):
    w1 = torch.tensor(x1, dtype=torch.float64, requires_grad=True)
    w2 = torch.tensor(x2, dtype=torch.float64, requires_grad=True)
    ws = (w1, w2, w1 * w2, torch.sin(w1))
    ws = ws + (ws[2] + ws[3],)
    return {f"w{i + 1}": float(g) for i, g in enumerate(torch.autograd.grad(ws[4], ws))}
'''


@pytest.mark.nb01
def test_a_helper_file_handed_in_is_screened_like_a_cell_and_importing_it_is_not_out_of_sight():
    """A .py file handed in next to the notebook travels with it into the sandbox: the screen reads it. An honest
    one raises no flag (before: "not installed"); one that hands a by-hand exercise to autograd, or reaches for
    the grader, is flagged naming the file; a module the notebook writes itself is still out of sight."""
    importing = {"adjoint_trace": "from my_sweeps import adjoint_trace"}
    assert _screened_with("01-reverse-accumulation", importing, {"my_sweeps": ADJOINT_MODULE_HONEST}) == []
    flags = _screened_with("01-reverse-accumulation", importing, {"my_sweeps": ADJOINT_MODULE_BY_AUTOGRAD})
    assert [f.code for f in flags] == ["by_hand_with_autograd"], flags
    assert "your file my_sweeps.py answers" in flags[0].detail and "torch.autograd" in flags[0].detail, flags
    flags = _screened_with(
        "01-reverse-accumulation", importing, {"my_sweeps": "import inspect\n" + ADJOINT_MODULE_HONEST}
    )
    assert [(f.code, f.detail.split(":")[0]) for f in flags] == [("reaches_for_grader", "your file my_sweeps.py")], (
        flags
    )
    flags = _screened_with("01-reverse-accumulation", importing)
    assert [f.code for f in flags] == ["reaches_for_grader"] and "not installed" in flags[0].detail, flags


def _screened_with(assignment, replace, modules=None):
    from test_grading_hostile_45 import screened

    return screened(assignment, replace, modules=modules)


def test_own_modules_reads_the_python_files_next_to_the_notebook(tmp_path):
    from autograder.grading.worker import own_modules

    (tmp_path / "helpers.py").write_text("def f():\n    return 1\n")
    (tmp_path / "not-a-module.py").write_text("x = 1")
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "pkg").mkdir()
    assert own_modules(tmp_path) == {"helpers": "def f():\n    return 1\n"}


# =========================================================================== graded with the grading command


@pytest.mark.nb01
@pytest.mark.slow
def test_notebook_01_graded_routes_to_marks_without_the_work(tmp_path, grading_pool):
    """Each route with the real grading command. Before: every one of them 16/16 with no flag. Now: the numerical
    gradient from autograd loses its exercise's points; the traces keep theirs (a flag never changes a score) and are
    flagged for the instructor; an honest trace written differently keeps full marks and no flag."""
    from test_grading_hostile_45 import grade_routes

    routes = {
        name.replace(" ", "_").replace(".", "_"): {"answers": {gid: source}}
        for name, (gid, source, _, _) in SCREENED_ROUTES.items()
    }
    routes["numerical_gradient_by_getattr"] = {"answers": {"numerical_gradient": NUMERICAL_GRADIENT_BY_GETATTR}}
    routes["honest"] = {"answers": {"adjoint_trace": ADJOINT_HONEST_DIFFERENTLY}}
    routes["honest_helper_file"] = {
        "answers": {"adjoint_trace": "from my_sweeps import adjoint_trace"},
        "files": {"my_sweeps.py": ADJOINT_MODULE_HONEST},
    }
    rows = grade_routes(tmp_path, "01-reverse-accumulation", routes, grading_pool)
    full = rows["honest"].max_score
    for honest in ("honest", "honest_helper_file"):  # an answer in a .py file handed in with the notebook works too
        assert rows[honest].score == full and rows[honest].flags == [], (
            honest,
            rows[honest].flags,
            rows[honest].messages,
        )
    for name, (gid, _, code, _) in SCREENED_ROUTES.items():
        row = rows[name.replace(" ", "_").replace(".", "_")]
        assert row.score == full and any(f.startswith(code) and gid in f for f in row.flags), (
            name,
            row.score,
            row.flags,
        )
    row = rows["numerical_gradient_by_getattr"]
    assert row.by_cell["test_numerical_gradient"][0] == 0 and row.score < full, (row.score, row.by_cell)
    assert any(f.startswith("by_hand_with_autograd") and "numerical_gradient" in f for f in row.flags), row.flags


NUMERICAL_JACOBIAN_BY_JACFWD = '''def numerical_jacobian(f, inputs, eps=1e-6):
    jac = getattr(torch, "func").jacfwd(f, argnums=tuple(range(len(inputs))))(*inputs)
    with torch.no_grad():
        for _ in range(2 * sum(x.numel() for x in inputs) - 1):
            f(*inputs)
        out = f(*inputs).numel()
    return [J.reshape(out, x.numel()) for J, x in zip(jac, inputs)]
'''
MY_GRADCHECK_BY_GETATTR = '''def my_gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    return getattr(torch, "autograd").gradcheck(fn, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=False)
'''


@pytest.mark.nb03
@pytest.mark.slow
def test_notebook_03_graded_autograd_where_differences_or_a_gradcheck_of_ones_own_are_asked(tmp_path, grading_pool):
    """Before: torch's gradcheck 25/25 and the forward-mode Jacobian full marks on its exercise (22/25: my_gradcheck,
    which uses it, fails on Functions without jvp), neither flagged. Now the forward-mode Jacobian loses its exercise's
    points and is flagged; torch's gradcheck keeps its points (a flag never changes a score) and is flagged."""
    from test_grading_hostile_45 import grade_routes

    rows = grade_routes(
        tmp_path,
        "03-custom-functions",
        {
            "jacfwd": {"answers": {"numerical_jacobian": NUMERICAL_JACOBIAN_BY_JACFWD}},
            "gradcheck": {"answers": {"my_gradcheck": MY_GRADCHECK_BY_GETATTR}},
            "honest": {},
        },
        grading_pool,
    )
    honest, jacfwd, gradcheck = rows["honest"], rows["jacfwd"], rows["gradcheck"]
    assert honest.score == honest.max_score and honest.flags == [], (honest.flags, honest.messages)
    assert jacfwd.by_cell["test_numerical_jacobian"][0] == 0 and "forward mode" in " ".join(jacfwd.messages), (
        jacfwd.by_cell
    )
    assert any(f.startswith("by_hand_with_autograd") and "numerical_jacobian" in f for f in jacfwd.flags), jacfwd.flags
    assert gradcheck.score == honest.max_score, (gradcheck.score, gradcheck.messages)
    assert any(f.startswith("by_hand_with_autograd") and "my_gradcheck" in f for f in gradcheck.flags), gradcheck.flags


# ================================================================ a general key: a lookup by a name built at run time
# Measured by a learner holding the grader's source: an object's __dict__ indexed by a computed key, an explicit
# __getattr__ call, reached autograd in notebook 01's adjoint trace (15 for 12), PyTorch's own tanh derivative in
# notebook 02 (24 for 22), and the spoiled problem in the closure of notebook 03's test Function instead of a check
# (25 for 22), with no flag. The answers keep their points (they build their own tensors, or read the grader's
# process: no probe sees it) and are flagged reaches_for_grader, naming the exercise and that it is done by hand.

ADJOINT_BY_DICT = """def adjoint_trace(x1, x2):
    ag = torch.__dict__["auto" + "grad"]
    w1 = torch.tensor(x1, dtype=torch.float64, requires_grad=True)
    w2 = torch.tensor(x2, dtype=torch.float64, requires_grad=True)
    ws = (w1, w2, w1 * w2, torch.sin(w1))
    ws = ws + (ws[2] + ws[3],)
    return {f"w{i + 1}": float(g) for i, g in enumerate(ag.grad(ws[4], ws))}
"""
ADJOINT_BY_GETITEM = "import operator\n\n\n" + ADJOINT_BY_DICT.replace(
    'torch.__dict__["auto" + "grad"]', 'operator.getitem(torch.__dict__, "auto" + "grad")'
)
ADJOINT_BY_TENSORS_DICT = """def adjoint_trace(x1, x2):
    w1 = torch.tensor(x1, dtype=torch.float64, requires_grad=True)
    w2 = torch.tensor(x2, dtype=torch.float64, requires_grad=True)
    ws = (w1, w2, w1 * w2, torch.sin(w1))
    ws = ws + (ws[2] + ws[3],)
    for w in ws[2:]:
        w.retain_grad()
    type(w1).__dict__["back" + "ward"](ws[4])
    return {f"w{i + 1}": float(w.grad) for i, w in enumerate(ws)}
"""
TANH_BY_GETATTR_CALL = """def variable_tanh(self):
    t = math.tanh(self.value)
    one, out = torch.ones((), dtype=torch.float64), torch.tensor(t, dtype=torch.float64)
    derivative = torch.ops.aten.__getattr__("tanh_" + "backward")(one, out)
    return Variable(t, (self,), (float(derivative),), "tanh")


Variable.tanh = variable_tanh
"""
TANH_BY_METHODCALLER = "from operator import methodcaller\n\n\n" + TANH_BY_GETATTR_CALL.replace(
    'torch.ops.aten.__getattr__("tanh_" + "backward")(one, out)',
    'methodcaller("tanh_" + "backward", one, out)(torch.ops.aten)',
)
TANH_BY_FORMATTER = "import string\n\n\n" + TANH_BY_GETATTR_CALL.replace(
    'torch.ops.aten.__getattr__("tanh_" + "backward")(one, out)',
    'string.Formatter().get_field("0.tanh_" + "backward", (torch.ops.aten,), {})[0](one, out)',
)
GRADCHECK_BY_TYPES_DICT = """def my_gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    backward = fn.__self__.backward
    cells = type(backward).__dict__["__clo" + "sure__"].__get__(backward)
    read = type(cells[0]).__dict__["cell_" + "contents"]
    return any(getattr(read.__get__(c), "__name__", "") == "_unchanged" for c in cells)
"""
GRADCHECK_BY_DICT_GET = GRADCHECK_BY_TYPES_DICT.replace(
    '__dict__["__clo" + "sure__"]', '__dict__.get("__clo" + "sure__")'
)
GRADCHECK_BY_DICT_GET = GRADCHECK_BY_DICT_GET.replace(
    '__dict__["cell_" + "contents"]', '__dict__.get("cell_" + "contents")'
)
GRADCHECK_BY_DICT_ITEMS = """def my_gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    backward = fn.__self__.backward
    cells = next(d for k, d in type(backward).__dict__.items() if k.startswith("__clo")).__get__(backward)
    read = next(d for k, d in type(cells[0]).__dict__.items() if k.startswith("cell_"))
    return any(getattr(read.__get__(c), "__name__", "") == "_unchanged" for c in cells)
"""
GENERAL_KEY_ROUTES = {  # assignment: (the exercise's answer cell, {route: answer}, full marks)
    "01-reverse-accumulation": (
        "adjoint_trace",
        {"dict": ADJOINT_BY_DICT, "getitem": ADJOINT_BY_GETITEM, "tensors_dict": ADJOINT_BY_TENSORS_DICT},
        15,
    ),
    "02-scalar-engine": (
        "variable_tanh",
        {"getattr_call": TANH_BY_GETATTR_CALL, "methodcaller": TANH_BY_METHODCALLER, "formatter": TANH_BY_FORMATTER},
        24,
    ),
    "03-custom-functions": (
        "my_gradcheck",
        {
            "types_dict": GRADCHECK_BY_TYPES_DICT,
            "dict_get": GRADCHECK_BY_DICT_GET,
            "dict_items": GRADCHECK_BY_DICT_ITEMS,
        },
        25,
    ),
}


def _general_key_flagged(flags: list[str], gid: str) -> bool:
    """A reaches_for_grader flag on the exercise that names the lookup and says that it answers an exercise done by
    hand (where autograd may be what it reaches)."""
    return any(
        f.startswith("reaches_for_grader")
        and f"exercise {gid}: a name built at run time" in f
        and "(done by hand): autograd may be what it reaches" in f
        for f in flags
    )


@pytest.mark.parametrize(
    "assignment, route",
    [
        pytest.param(assignment, route, marks=getattr(pytest.mark, f"nb{assignment[:2]}"))
        for assignment, (_, routes, _) in GENERAL_KEY_ROUTES.items()
        for route in routes
    ],
)
def test_a_by_hand_answer_that_looks_up_a_general_key_is_flagged(assignment, route):
    """Before: no flag (the screen knew getattr with a computed name, not an object's __dict__ or an explicit
    __getattr__ with one). Now each is reaches_for_grader naming the exercise, the lookup and that it is by hand."""
    gid, routes, _ = GENERAL_KEY_ROUTES[assignment]
    flags = [f"{f.code}: {f.detail}" for f in _screened(assignment, {gid: routes[route]})]
    assert flags and all(f.startswith(f"reaches_for_grader: exercise {gid}:") for f in flags), flags
    assert _general_key_flagged(flags, gid), flags


@pytest.mark.slow
@pytest.mark.parametrize(
    "assignment",
    [pytest.param(a, marks=getattr(pytest.mark, f"nb{a[:2]}")) for a in GENERAL_KEY_ROUTES],
)
def test_general_key_routes_graded_keep_their_points_and_are_flagged(tmp_path, grading_pool, assignment):
    """Graded with the grading command: each route keeps full marks (15/15 for notebook 01's adjoint trace, 24/24 for
    notebook 02's tanh, 25/25 for notebook 03's my_gradcheck, as measured: no probe can see the lookup) and is now
    flagged for the instructor, naming the exercise (before: no flag at all)."""
    from test_grading_hostile_45 import grade_routes

    gid, routes, full = GENERAL_KEY_ROUTES[assignment]
    rows = grade_routes(
        tmp_path, assignment, {name: {"answers": {gid: source}} for name, source in routes.items()}, grading_pool
    )
    for name in routes:
        row = rows[name]
        assert (row.score, row.max_score) == (full, full), (name, row.score, row.messages)
        assert _general_key_flagged(row.flags, gid), (name, row.flags)


# ==================================================================== not protected (docs/grading.md, security section)

ADJOINT_BY_A_NAME_BUILT_FROM_STRINGS = ADJOINT_BY_GETATTR.replace(
    'getattr(torch, "autograd")', 'getattr(torch, "auto" + "grad")'
)
ADJOINT_FROM_A_MODULE_UNDER_AN_INSTALLED_NAME = ADJOINT_FROM_A_MODULE_WRITTEN_TO_DISK.replace("my_sweeps", "six")


@pytest.mark.nb01
@pytest.mark.parametrize(
    "source",
    [ADJOINT_BY_A_NAME_BUILT_FROM_STRINGS, ADJOINT_FROM_A_MODULE_UNDER_AN_INSTALLED_NAME],
    ids=["a name built from strings", "a module under an installed name"],
)
def test_not_protected_autograd_hidden_from_the_screen_in_a_trace(source):
    """The traces build their own tensors from plain numbers, so no probe can see autograd at work; the screen reads
    the code as written. Hidden this way, a by-hand trace from autograd keeps full marks and is not flagged as
    autograd: a name built from strings is flagged only as a lookup the screen cannot read (before: no flag at all);
    a module under an installed name gets no flag."""
    assert "six" not in source or __import__("importlib").util.find_spec("six") is not None
    flags = _screened("01-reverse-accumulation", {"adjoint_trace": source})
    if "six" in source:
        assert flags == []
    else:
        assert [(f.code, "a name built at run time" in f.detail) for f in flags] == [("reaches_for_grader", True)]
    namespace = {"torch": torch}
    if "six" in source:
        return  # the module is written to disk by the cell itself; its code is the getattr route's
    exec(source, namespace)
    assert _verdict(nb01.check_adjoint_trace, namespace["adjoint_trace"], at=[(0.5, -1.25), (2.0, 3.0)]) == (
        True,
        "",
    )


POW_BY_GETATTR = '''def variable_pow(self, other):
    y = as_variable(other)
    a = torch.tensor(self.value, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(y.value, dtype=torch.float64, requires_grad=True)
    da, db = getattr(torch, "autograd").grad(a ** b, (a, b))
    return Variable(self.value ** y.value, (self, y), (float(da), float(db)), "**")


Variable.__pow__ = variable_pow
'''
MUL_FUNCTION_BY_GETATTR = '''class MulFunction(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            return getattr(torch, "autograd").grad(a * b, (a, b), grad_output)
'''


@pytest.mark.parametrize(
    "assignment, gid, source, test",
    [
        pytest.param("02-scalar-engine", "variable_pow", POW_BY_GETATTR, "test_variable_pow", marks=pytest.mark.nb02),
        pytest.param(
            "03-custom-functions", "mul_function", MUL_FUNCTION_BY_GETATTR, "test_mul_function", marks=pytest.mark.nb03
        ),
    ],
    ids=["nb02 Variable.__pow__", "nb03 MulFunction.backward"],
)
def test_an_operation_or_backward_from_autograd_by_getattr_is_flagged(assignment, gid, source, test):
    """Before: no flag (getattr(torch, "autograd") hid torch.autograd.grad from the screen). Now flagged."""
    flags = _screened(assignment, {gid: source})
    assert [f.code for f in flags] == ["by_hand_with_autograd"] and f"exercise {gid}" in flags[0].detail, flags


# ============================================================= my_gradcheck told the answer by the test Functions' type


def _gradcheck_by_type(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    return not hasattr(fn, "__self__")  # before: correct test functions were lambdas, wrong ones Function.apply


def _gradcheck_by_name(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    return "Spoiled" not in repr(fn)  # before: the wrong ones were a class named Spoiled


def _gradcheck_honest_differently(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Column by column: J v by a central difference against the backward's vector-Jacobian products."""
    inputs = [x.detach().requires_grad_() for x in inputs]
    out = fn(*inputs)
    for i, x in enumerate(inputs):
        for k in range(x.numel()):
            step = torch.zeros_like(x).view(-1)
            step[k] = eps
            with torch.no_grad():
                plus = fn(*[a + step.view_as(a) if j == i else a for j, a in enumerate(inputs)])
                minus = fn(*[a - step.view_as(a) if j == i else a for j, a in enumerate(inputs)])
            numerical = ((plus - minus) / (2 * eps)).reshape(-1)
            for r in range(out.numel()):
                seed = torch.zeros(out.numel(), dtype=out.dtype)
                seed[r] = 1.0
                (g,) = torch.autograd.grad(out, x, seed.view_as(out), retain_graph=True)
                if abs(float(g.reshape(-1)[k]) - float(numerical[r])) > atol + rtol * abs(float(numerical[r])):
                    return False
    return True


@pytest.mark.nb03
@pytest.mark.parametrize("answer", [_gradcheck_by_type, _gradcheck_by_name])
def test_a_gradcheck_that_reads_the_test_functions_type_scores_nothing(answer):
    """Before: full marks and no flag for a my_gradcheck that computes nothing: correct test functions were plain
    lambdas and wrong ones the apply of a class named Spoiled. Now all are the apply of alike Functions."""
    from autograder.nb03 import GRADCHECK_PROBLEMS

    for seed in (0, 1):
        passed, message = _verdict(nb03.check_my_gradcheck, answer, problems=list(GRADCHECK_PROBLEMS), seed=seed)
        assert not passed and "my_gradcheck disagrees" in message, message


@pytest.mark.nb03
def test_a_gradcheck_written_differently_keeps_full_marks():
    from autograder.nb03 import GRADCHECK_PROBLEMS

    for seed in (0, 1):
        assert _verdict(
            nb03.check_my_gradcheck, _gradcheck_honest_differently, problems=list(GRADCHECK_PROBLEMS), seed=seed
        ) == (True, "")

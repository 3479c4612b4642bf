"""The trust model, piece by piece (the whole of it runs in test_grading_corpus.py):

- every graded test cell of every solution notebook is read as trusted, and release refuses one that is not;
- every judge accepts only a complete answer to exactly the cases it asked for;
- hidden cases are drawn from the gradebook's secret and the submission: a regrade draws the same ones;
- the judges and the grading command cannot be imported inside the sandbox;
- the screen flags code that reaches for the grader, and nothing in the honest solutions.
"""

from __future__ import annotations

import importlib
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from autograder.coursedir import SOLUTIONS
from autograder.feedback import CheckFailed
from autograder.grading import sandbox
from autograder.grading.jobs import Job, SandboxSettings
from autograder.grading.judge import judge_cell
from autograder.grading.records import RecordCollector
from autograder.grading.screen import reaches, screen, uses_autograd
from autograder.grading.spec import CellSpec, NotebookSpec, UntrustedCell, check_modules, parse_check_calls
from autograder.grading.worker import hidden_rng
from autograder.registry import CHECKS
from autograder.release import generate_release, untrusted_test_cells

SOLUTION_NOTEBOOKS = sorted(p for p in SOLUTIONS.glob("*/*.ipynb") if ".ipynb_checkpoints" not in p.parts)
for _module in sorted(
    f"autograder.{p.name[:-3]}" for p in (Path(__file__).resolve().parents[1] / "autograder").glob("nb[0-9][0-9].py")
):
    importlib.import_module(_module)  # every notebook's checks, so that their test cells parse


def _test_cells(path):
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            yield meta["grade_id"], cell.source


# ------------------------------------------------------------------------------------------ trusted cells


@pytest.mark.parametrize("path", SOLUTION_NOTEBOOKS, ids=lambda p: p.parent.name)
def test_every_graded_test_cell_of_the_solutions_is_read_as_trusted(path):
    for module in {m for _, source in _test_cells(path) for m in check_modules(source)}:
        importlib.import_module(module)
    for gid, source in _test_cells(path):
        calls = parse_check_calls(source, set(CHECKS))  # raises UntrustedCell otherwise
        assert calls, gid
        hidden = [c for c in calls if c.hidden]
        assert hidden and all("draw" in c.params for c in hidden), f"{gid}: hidden tests name generated cases (draw=N)"
    assert untrusted_test_cells(path.parent) == []


@pytest.mark.parametrize(
    "body",
    [
        "for p in [(1.0, 2.0)]:\n    check_primal_trace(primal_trace, at=[p])",
        "if True:\n    check_primal_trace(primal_trace, at=[(1.0, 2.0)])",
        "def run():\n    check_primal_trace(primal_trace, at=[(1.0, 2.0)])\nrun()",
        "ok = [check_primal_trace(primal_trace, at=[(1.0, 2.0)])]",
        "check_primal_trace(primal_trace, at=[(1.0, 2.0 + x)])",
        "print('no check at all')",
    ],
)
def test_release_refuses_a_test_cell_the_grader_cannot_trust(tmp_path, body):
    source = "from autograder.nb01 import check_primal_trace\n" + body
    with pytest.raises(UntrustedCell):
        parse_check_calls(source, set(CHECKS))
    folder = tmp_path / "solutions" / "99-untrusted"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(
        nbformat.v4.new_code_cell(
            source,
            metadata={
                "nbgrader": {
                    "grade": True,
                    "solution": False,
                    "locked": True,
                    "points": 1,
                    "grade_id": "test_x",
                    "schema_version": 3,
                }
            },
        )
    )
    nbformat.write(nb, folder / "untrusted.ipynb")
    with pytest.raises(SystemExit, match="(?s)Refusing to release.*untrusted.ipynb: test_x"):
        generate_release(tmp_path / "course", solutions=tmp_path / "solutions")


# ------------------------------------------------------------------------------------------ complete answers


def _drawn_calls():
    out = []
    for path in SOLUTION_NOTEBOOKS:
        for gid, source in _test_cells(path):
            for module in check_modules(source):  # the notebook's checks, registered before its cells are read
                importlib.import_module(module)
            for k, call in enumerate(c for c in parse_check_calls(source, set(CHECKS)) if c.hidden):
                params = CHECKS[call.check].drawn(call.params, random.Random(f"test/{gid}/{k}"))
                out.append(pytest.param(call, params, id=f"{gid}-{k}"))
    return out


def _cases(params):
    return next(
        (v for k, v in params.items() if k in ("at", "cases", "graphs", "seeds", "problems") and isinstance(v, list)),
        None,
    )


@pytest.mark.parametrize("call, params", _drawn_calls())
def test_no_judge_accepts_missing_empty_extra_or_mistyped_data(call, params):
    cases = _cases(params)
    forged = [
        None,
        [],
        {},
        "ok",
        1.0,
        [None],
        [{}],
        {"cases": []},
        {"name": "x", "function_class": True, "cases": [{}]},
    ]
    if cases is not None:
        forged += [[{}] * len(cases), [None] * len(cases), [[]] * (len(cases) + 1), [0.0] * len(cases)]
    for data in forged:
        score, messages, failed = judge_cell([call.__class__(call.check, call.expr, params, 1, 1, True)], [data], 5.0)
        assert failed and score == 0.0, f"{call.check} accepted {data!r}"


def test_a_judge_fails_with_a_message_when_answers_are_missing():
    call = parse_check_calls("check_primal_trace(primal_trace, at=[(1.0, 2.0), (3.0, 4.0)])", set(CHECKS))[0]
    one_answer = [{"w1": 1.0, "w2": 2.0, "w3": 2.0, "w4": 0.8414709848078965, "w5": 2.8414709848078965}]
    with pytest.raises(CheckFailed, match="1 answers for 2 cases"):
        CHECKS["check_primal_trace"].decide(one_answer, **call.params)


# ------------------------------------------------------------------------------------------ hidden cases


def _job(draw_key):
    return Job(
        student="s",
        spec="",
        submission="",
        out="",
        scratch="",
        slot=0,
        kernel_uid=None,
        limits=sandbox.Limits(),
        sandbox=SandboxSettings(None, False, False),
        sandbox_text="",
        draw_key=draw_key,
    )


def test_hidden_cases_are_reproducible_for_a_regrade_and_new_for_a_new_submission():
    check = CHECKS["check_adjoint_trace"]
    first = check.drawn({"draw": 4}, hidden_rng(_job("key-1"), "nb", "test_adjoint_trace", 1))
    again = check.drawn({"draw": 4}, hidden_rng(_job("key-1"), "nb", "test_adjoint_trace", 1))
    other = check.drawn({"draw": 4}, hidden_rng(_job("key-2"), "nb", "test_adjoint_trace", 1))
    assert first == again and first != other and len(first["at"]) == 4
    assert check.drawn({"draw": 4}) != check.drawn({"draw": 4})  # outside the grader: fresh every time


def test_the_gradebook_keeps_one_secret(tmp_path):
    from autograder.grading import record

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    assert (
        record.course_secret(url) == record.course_secret(url) != record.course_secret(f"sqlite:///{tmp_path / 'b.db'}")
    )


# ------------------------------------------------------------------------------------------ the sandbox


# Each attempt succeeds only where a judge, a reference or the grading command is within the kernel's reach.
REACH_ATTEMPTS = [
    "from autograder.nb01.judges import reference_adjoints",
    "import autograder.nb04.judges.ctx as m; m.judge_inplace",
    "import autograder.nb06.judges; from autograder.registry import JUDGES; assert 'check_bf16' in JUDGES",
    "import autograder.nb06; from autograder.registry import CHECKS; CHECKS['check_bf16'].judge",
    "import autograder.judges.answers",
    "from autograder.judges.function import judge_function",
    "import autograder.grading.record",
    "import os, autograder; assert os.listdir(os.path.join(os.path.dirname(autograder.__file__), 'judges')) != []",
    "import os, autograder; assert '@decides' in open(os.path.join(os.path.dirname(autograder.__file__),"
    " 'nb05', 'judges', 'kernels.py')).read()",
    "import glob, os, autograder; assert any(b'reference_adjoints' in open(f, 'rb').read() for f in"
    " glob.glob(os.path.join(os.path.dirname(autograder.__file__), 'nb01', '__pycache__', 'judges.*')))",
    "import autograder.nb01.cases as c, os; assert os.path.exists(os.path.join(os.path.dirname(c.__file__),"
    " 'judges.py'))",
]

# One Python per side tries every attempt, each in a child forked after torch and Triton are imported (the
# attempts' own imports are what they test; a fresh interpreter per attempt spent seconds importing torch again).
# The child's exit status is what `python -c attempt` would have returned.
TRY_EACH = r"""
import json, os, sys, traceback
import torch
try:
    import triton
except ImportError:
    pass
exec(sys.argv[2])  # what must happen before the attempts (outside: the judges compiled to __pycache__)
outcomes = []
for attempt in json.loads(sys.argv[1]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            exec(compile(attempt, "<attempt>", "exec"), {"__name__": "__main__"})
            status = 0
        except BaseException:
            os.write(write, traceback.format_exc().encode())
            status = 1
        os._exit(status)
    os.close(write)
    with os.fdopen(read) as said:
        message = said.read()
    outcomes.append([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), message])
print(json.dumps(outcomes))
"""


def _try_each(prefix: list[str], before: str = "") -> list[tuple[int, str]]:
    done = subprocess.run(
        [*prefix, sys.executable, "-c", TRY_EACH, json.dumps(REACH_ATTEMPTS), before],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [tuple(outcome) for outcome in json.loads(done.stdout.splitlines()[-1])]


@pytest.fixture(scope="module")
def reach_outcomes(tmp_path_factory) -> dict[str, tuple[tuple[int, str], tuple[int, str]]]:
    """Each attempt's (exit status, traceback) in the sandbox and outside it."""
    root = tmp_path_factory.mktemp("reach")
    (root / "work").mkdir()
    inside = _try_each([*sandbox.bwrap_argv(sandbox.detect(), root), "--"])
    compiled = (
        "import os, py_compile, autograder\n"
        "py_compile.compile(os.path.join(os.path.dirname(autograder.__file__), 'nb01', 'judges.py'))\n"
    )
    outside = _try_each([], compiled)  # outside the sandbox every one succeeds (the judges compiled first)
    return dict(zip(REACH_ATTEMPTS, zip(inside, outside)))


@pytest.mark.skipif(sandbox.detect().protections_off() != [], reason="needs the bubblewrap sandbox")
@pytest.mark.parametrize("code", REACH_ATTEMPTS)
def test_judges_and_the_grading_command_are_not_in_the_sandbox(reach_outcomes, code):
    """Each `code` succeeds only where a judge, a reference or the grading command is within the kernel's reach."""
    (inside, _), (outside, told) = reach_outcomes[code]
    assert inside != 0, f"{code!r} succeeded in the sandbox"
    assert outside == 0, told


@pytest.mark.skipif(sandbox.detect().protections_off() != [], reason="needs the bubblewrap sandbox")
def test_every_probe_is_in_the_sandbox(tmp_path):
    """The other side of the test above (once, not once per attack): every check can collect its data there."""
    (tmp_path / "work").mkdir()
    probes = sandbox.bwrap_argv(sandbox.detect(), tmp_path) + [
        "--",
        sys.executable,
        "-c",
        "import autograder.nb01, autograder.nb02, autograder.nb03, autograder.nb04, autograder.nb05, autograder.nb06;"
        " from autograder.registry import CHECKS; assert len(CHECKS) > 40, len(CHECKS)",
    ]
    done = subprocess.run(probes, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------------------------ screening


@pytest.mark.parametrize(
    "code, reason",
    [
        ("import inspect\ninspect.stack()", "inspect"),
        ("import sys\nsys._getframe(1)", "frame"),
        ("f.__code__ = g.__code__", "code objects"),
        ("fn.__globals__['x'] = 1", "globals"),
        ("import gc\ngc.get_objects()", "gc"),
        ("import ctypes", "ctypes"),
        ("import threading", "threads"),
        ("get_ipython().events.register('post_run_cell', f)", "IPython"),
        ("import autograder.nb01", "autograder"),
        ("from autograder.judges.nb01 import reference_adjoints", "autograder"),
        ("import autograder.nb01", "autograder"),
        ("from torch.overrides import TorchFunctionMode", "mode"),
        ("exec('import inspect')", "exec"),
        ("import builtins\nbuiltins.abs = None", "builtins"),
        ("ip.display_pub.publish = None", "IPython"),
        ("x = frame.f_back.f_locals", "frame"),
        ("calls = [c for c in In if 'probe' in c]", "input history"),
        ("last = _ih[-1]", "input history"),
        ("source = _i12", "input/output history"),
        ("hm = get_ipython().history_manager", "input history"),
        ("previous = Out[3]", "output history"),
        # names built at run time: the screen cannot read the string, so it names the lookup
        ("calls = locals()['I' + 'n']", "namespace (locals)"),
        ("g = getattr(f, '__glob' + 'als__')", "a name built at run time"),
        ("name = ''.join(['_', 'ih'])\nhistory = getattr(ns, name)", "a name built at run time"),
        ("g = f.__getattribute__('__glob' + 'als__')", "a name built at run time"),
        ("from operator import attrgetter\ng = attrgetter('__glob' + 'als__')(f)", "a name built at run time"),
        ("hasattr(torch, 'fun' + 'c')", "a name built at run time"),
        ("from functools import reduce\ng = reduce(getattr, ['__glob' + 'als__'], f)", "a name built at run time"),
        # a general key: an object's attributes as a dict, an explicit __getattr__, names resolved from strings
        ("ag = torch.__dict__['auto' + 'grad']", "an object's attributes indexed by a computed key"),
        ("ag = vars(torch)[name]", "an object's attributes indexed by a computed key"),
        ("f = type(fn).__dict__['__clo' + 'sure__']", "an object's attributes indexed by a computed key"),
        ("f = fn.__class__.__dict__[name]", "an object's attributes indexed by a computed key"),
        ("ag = torch.__dict__.get(name)", "an object's attributes read as a dict"),
        ("for k, v in torch.__dict__.items():\n    pass", "an object's attributes read as a dict"),
        ("import operator\nag = operator.getitem(vars(torch), name)", "an object's attributes as a dict, handed on"),
        ("ag = dict(vars(torch))[name]", "an object's attributes as a dict, handed on"),
        ("table = torch.__dict__\nag = table[name]", "an object's attributes as a dict, handed on"),
        ("d = type.__dict__['__dict__'].__get__(torch)", "an object's attributes read as a dict"),
        ("op = torch.ops.aten.__getattr__('tanh_' + 'backward')", "an explicit __getattr__ call"),
        ("object.__setattr__(probe, name, None)", "an explicit __setattr__ call"),
        ("state = fn.__reduce_ex__(2)[2]", "an object's state as data"),
        ("from operator import methodcaller\nop = methodcaller(name)(torch)", "a method named by a string"),
        ("import string\nop = string.Formatter().get_field(name, (torch,), {})", "dotted names resolved from a string"),
        ("import pkgutil\nag = pkgutil.resolve_name(name)", "resolves dotted names from a string"),
        ("from pydoc import locate\nag = locate(name)", "resolves dotted names from a string"),
        ("import pickle\nag = pickle.loads(blob)", "resolves any module's names from a string"),
        ("import sys\nmodule = sys.modules[name]", "the module table"),
        ("g = getattr(getattr, '__call__')(torch, name)", "a name built at run time"),
    ],
)
def test_the_screen_names_each_route(code, reason):
    assert any(reason in found for found in reaches(code)), reaches(code)


def test_the_screen_spares_honest_code():
    honest = (
        "import math, torch, numpy as np\nfrom IPython.display import display\nimport matplotlib.pyplot as plt\n"
        "class F(torch.autograd.Function):\n    @staticmethod\n    def backward(ctx, g):\n        return g * "
        "ctx.saved_tensors[0]\n"
        "def helper(x):\n    return sorted(x, key=lambda v: -v)\nloss = f(variables)\nloss.backward()"
    )
    assert reaches(honest) == [] and uses_autograd(honest) == []
    assert reaches("for _ in range(3):\n    pass\nIn_ = 1\nvalue_1 = In_") == []
    assert reaches("from autograder.nb02 import example_graph, random_expression_text") == []
    assert reaches("size = getattr(props, 'L2_cache_size', 50 * 2**20)\nok = hasattr(x, 'grad')") == []
    assert uses_autograd("import torch\nx = torch.ones(1, requires_grad=True)\n(x * 2).backward()")
    assert uses_autograd("from torch.func import grad")


def test_a_lookup_by_a_constant_name_is_read_as_the_attribute():
    """An object's __dict__, vars(x) or __getattr__ with a constant name hides nothing: it is read as the attribute
    (no flag for a name built at run time, and autograd reached that way is seen as autograd)."""
    for code in ("t = torch.__dict__['tanh']", "t = vars(torch)['tanh']", "t = torch.ops.aten.__getattr__('tanh')"):
        assert reaches(code) == [], (code, reaches(code))
    assert uses_autograd("g = torch.__dict__['autograd'].grad(y, x)") == ["torch.autograd.grad"]
    assert uses_autograd("g = vars(torch).get('autograd').grad(y, x)") == ["torch.autograd.grad"]
    assert uses_autograd("d = torch.ops.aten.__getattr__('tanh_backward')(g, y)") == [
        "PyTorch's own derivative (torch.ops.aten.tanh_backward)"
    ]
    assert reaches("t = vars()['In']") != []  # vars() without an object is still the notebook's namespace


@pytest.mark.parametrize("path", SOLUTION_NOTEBOOKS, ids=lambda p: p.parent.name)
def test_no_solution_raises_a_screening_flag(path):
    nb = nbformat.read(path, as_version=4)
    assert screen(nb, NotebookSpec.from_release(nb), CHECKS) == []


def test_without_bubblewrap_the_judges_are_reachable_and_the_docs_say_so():
    text = (Path(__file__).resolve().parent.parent / "docs" / "grading.md").read_text()
    not_protected = text.split("Not protected (flagged at most", 1)[1].split("\n\n", 1)[0]
    assert "without bubblewrap" in not_protected and "judges are on disk" in not_protected


# ------------------------------------------------------------------------------------------ crash hint


def test_a_crash_during_a_test_scores_it_zero_with_the_checks_crash_hint(tmp_path, monkeypatch):
    from autograder.grading.jobs import NotebookResult
    from autograder.grading.spec import CheckCall
    from autograder.grading.worker import Plan, judge
    from autograder.nb01.probes import probe_primal_trace
    from autograder.registry import Check

    name = "check_crash_hint_example"  # registered for this test only
    hinted = Check(name, probe_primal_trace, "autograder.nb01.judges", crash_hint="likely an unmasked tl.load/tl.store")
    monkeypatch.setitem(CHECKS, name, hinted)
    call = CheckCall(name, "kernel", {"at": [(1.0, 2.0)]}, 1, 1, False)
    records = RecordCollector(tmp_path / "probe", tmp_path / "taken", {1: ("test_k", 1)})
    plan = Plan(nbformat.v4.new_notebook(), {"test_k": [call]}, [], {"test_k": 1}, records)
    result = NotebookResult("nb")
    cell = CellSpec("test_k", "code", True, False, True, 2.0, "check(kernel)", "check(kernel)")
    judge(plan, {"status": {1: "died"}}, NotebookSpec([cell]), result)
    grade = result.grades["test_k"]
    assert grade.score == 0 and "crashed the Python kernel" in grade.messages[0]
    assert "Hint: likely an unmasked tl.load/tl.store." in grade.messages[0]


@pytest.mark.parametrize("status", ["ok", "error", "timeout"])
def test_a_test_cell_that_ends_in_an_error_or_a_timeout_scores_nothing_from_its_records(tmp_path, status):
    """No honest test cell ends in an error (each probe turns whatever the learner's code raises into data): one
    that does had its probes disturbed, so even a complete, right record earns nothing there."""
    from autograder.grading.jobs import NotebookResult
    from autograder.grading.spec import CheckCall
    from autograder.grading.worker import Plan, judge
    from autograder.probes.channel import ProbeRecord

    call = CheckCall("check_primal_trace", "primal_trace", {"at": [(2.0, 3.0)]}, 1, 1, False)
    records = RecordCollector(tmp_path / "probe", tmp_path / "taken", {1: ("test_k", 1)})
    records.collected.mkdir()
    right = {"w1": 2.0, "w2": 3.0, "w3": 6.0, "w4": math.sin(2.0), "w5": 6.0 + math.sin(2.0)}
    torch.save(ProbeRecord("test_k", 0, [right]).to_payload(), records.collected / "test_k.0.pt")
    plan = Plan(nbformat.v4.new_notebook(), {"test_k": [call]}, [], {"test_k": 1}, records)
    result = NotebookResult("nb")
    cell = CellSpec("test_k", "code", True, False, True, 2.0, "check(primal_trace)", "check(primal_trace)")
    judge(plan, {"status": {1: status}}, NotebookSpec([cell]), result)
    grade = result.grades["test_k"]
    if status == "ok":
        assert grade.score == 2.0
    else:
        assert grade.score == 0 and result.shown["test_k"].score == 0
        assert any("scores 0" in m for m in grade.messages)


# ------------------------------------------------------------------ one score, hidden reports not repeated


def _verdict(title, score, failing, message="entries [0] and [2] are off by 0.5"):
    from autograder.judges.verdict import Part, Verdict

    parts = [Part("forward"), Part("gradcheck"), Part("interface")]
    for p in parts:
        if p.name in failing:
            p.fail(message, "a hint")
    return Verdict(score, points=4, parts=parts, title=title)


def test_a_hidden_report_failing_the_shown_parts_is_one_line_under_one_score():
    from autograder.grading.judge import partial_reports

    shown, hidden = _verdict("Exp", 3.0, {"interface"}), _verdict("Exp", 3.0, {"interface"}, "entry [5] is off")
    text = "\n".join(partial_reports([(False, shown), (True, hidden)]))
    assert text.startswith("Exp: 3 of 4 points")
    assert text.count("[FAIL]") == 1 and text.count("a hint") == 1, text
    assert "Hidden tests (cases your notebook does not show): Exp fails the same parts" in text


def test_a_hidden_report_failing_other_parts_is_shown_whole_and_labelled():
    from autograder.grading.judge import partial_reports

    shown, hidden = _verdict("Exp", 3.0, {"interface"}), _verdict("Exp", 1.0, {"interface", "gradcheck"})
    lines = partial_reports([(False, shown), (True, hidden)])
    assert lines[0].startswith("Exp: 3 of 4 points") and lines[0].count("[FAIL]") == 1
    assert lines[1].startswith("Hidden tests (cases your notebook does not show) — Exp: 1 of 4 points")
    assert lines[1].count("[FAIL]") == 2
    assert partial_reports([(True, hidden)])[0].startswith(
        "Hidden tests (cases your notebook does not show) — Exp: 1 of 4"
    )

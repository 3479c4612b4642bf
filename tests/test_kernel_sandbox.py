"""Where a submission's kernels run and compile while it is graded (issue 47): a child per request, forked from a
factory that never ran a learner's text, in a sandbox with the submission's uid, whose answer comes back on a pipe
of its own (autograder/probes/kernel_runner.py, autograder/grading/kernel_sandbox.py).

The screen (coursetools/kernel_screen.py, tests/test_gpu_compile.py) keeps learner code out of Triton's code
generator. These tests take the case where code of the learner's runs in a child anyway -- the interpreter's
children run a kernel's text as Python by design, and a default value runs as the kernel is defined -- and check
what it can do there: read nothing of the grader's, write nothing outside, answer only its own request, leave
nothing for the next one; and that a child's stdout decides nothing.
"""

from __future__ import annotations

import json
import os

import pytest

from autograder.coursedir import REPO, SOLUTIONS
from autograder.grading import kernel_sandbox, sandbox
from autograder.grading.kernel_sandbox import SandboxedRunner
from autograder.judges.kernel_runs import RunFailed
from autograder.registry import FAILED

INFO = sandbox.detect()
pytestmark = pytest.mark.skipif(
    not (INFO.active and INFO.as_root and INFO.drop_uid), reason="the kernel runners' sandbox needs bubblewrap, as root"
)
UID = sandbox.BASE_UID + sandbox.UID_RANGE - 7  # a slot no grading run of the suite uses at the same time
SECRET_NAME, SECRET_VALUE = "REVAD_GRADER_SECRET", "REVAD_KERNEL_RUN_SECRET_58"
SOLUTION_FILE = next(SOLUTIONS.glob("06-*/*.ipynb"))
COMPILES = (
    "def right(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):\n"
    "    o = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
    "    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)\n"
)
TL = {"tl": {"kind": "module", "value": "triton.language"}}
SIGNATURE = [{"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 64}]


def record(text: str) -> dict:
    name = text.split("def ", 1)[1].split("(", 1)[0]
    return {"entry": name, "functions": {name: text}, "globals": TL}


def running_at_definition(code: str) -> dict:
    """A kernel whose definition runs `code` (a default value is evaluated as the def runs): what a learner's text
    would do in a child had it got there. `code` ends by raising its report, which comes back as the answer."""
    return record(f"def payload(x_ptr, found=exec({code!r})):\n    pass\n")


def report_of(answer: object) -> dict:
    assert isinstance(answer, dict) and FAILED in answer, answer
    text = str(answer[FAILED])
    assert "REPORT" in text, text
    return json.loads(text.split("REPORT", 1)[1].rsplit(")", 1)[0])


LOOK_AROUND = f"""
import json, os, sys
report = {{"uid": os.getuid(), "env": os.environ.get({SECRET_NAME!r}), "cwd": os.getcwd()}}
def attempt(key, action):
    try:
        action()
        report[key] = "done"
    except Exception as error:
        report[key] = type(error).__name__
attempt("solutions", lambda: open({str(SOLUTION_FILE)!r}).read())
report["repository"] = sorted(os.listdir({str(REPO)!r})) if os.path.isdir({str(REPO)!r}) else []
attempt("grader_environ", lambda: open("/proc/1/environ", "rb").read())
attempt("write_repository", lambda: open({str(REPO / "kernel-run-was-here")!r}, "w").write("x"))
attempt("write_root", lambda: open("/kernel-run-was-here", "w").write("x"))
attempt("network", lambda: __import__("socket").create_connection(("1.1.1.1", 53), timeout=2))
print('{{"ok": true}}', flush=True)
print(json.dumps([{{"ok": True, "registers": 1}}]), flush=True)
sys.stderr.write('{{"ok": true}}\\n')
raise RuntimeError("REPORT" + json.dumps(report))
"""


@pytest.fixture(scope="module")
def factories():
    """Factories started for this module, from a grader process that holds a secret in its environment."""
    os.environ[SECRET_NAME] = SECRET_VALUE
    kernel_sandbox.stop_all()
    try:
        yield
    finally:
        del os.environ[SECRET_NAME]
        kernel_sandbox.stop_all()


@pytest.fixture
def fresh_runner(factories):
    return SandboxedRunner(INFO, sandbox.Limits(cell_timeout_s=60), UID, 1, [REPO])


@pytest.mark.parametrize("mode", ["interpret", "compile"])
def test_a_childs_code_reads_nothing_of_the_graders_and_writes_nothing_outside(fresh_runner, mode):
    """The same code in the interpreter's children and in the compiler's (the compiler's children never run a
    learner's text: the screen refuses any before the code generator sees it; were one to get past it, this is
    what it could do there)."""
    body = {"probe": "autograder.nb05.probes:probe_kernel", "record": running_at_definition(LOOK_AROUND)}
    body["params"] = {"kind": "forward", "sizes": [[10, 16]], "seed": 0, "dtypes": ["float64"]}
    found = report_of(fresh_runner._ask(mode, "probe", body, 60.0))
    assert found["uid"] == UID and found["env"] is None, found
    for key in ("solutions", "grader_environ", "write_repository", "write_root", "network"):
        assert found[key] != "done", (key, found)
    assert set(found["repository"]) <= {"autograder", "coursetools", ".venv"}, found  # Python and the packages only
    assert not (REPO / "kernel-run-was-here").exists()


def test_what_a_kernel_prints_as_it_compiles_answers_nothing(fresh_runner):
    """tl.static_print is legal Triton and prints where the compile runs: forty printed answers, then a real
    compile mistake. The answer is the mistake, and the next request's (a bystander's mistake, then a right
    kernel) is its own."""
    lines = "".join(f"    tl.static_print('{{\"ok\": true}}', {i})\n" for i in range(40))
    flood = record(
        "def flood(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n" + lines + "    acc = 0.0\n"
        "    for i in range(n):\n        acc += tl.load(x_ptr + i)\n    tl.store(y_ptr, acc)\n"
    )
    launch = [{"x_ptr": "*fp64", "y_ptr": "*fp64", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64}]
    (answer,) = fresh_runner.compile(flood, [launch], 90)
    assert answer["ok"] is False and "Loop-carried variable" in answer["why"], answer
    bystander = record(
        "def bystander(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    o = tl.arange(0, BLOCK)\n    "
        "tl.store(y_ptr + o, tl.load(x_ptr + o) * ONE)\n"
    )
    (answer,) = fresh_runner.compile(bystander, [SIGNATURE], 90)
    assert answer["ok"] is False, answer
    (answer,) = fresh_runner.compile(record(COMPILES), [SIGNATURE], 90)
    assert answer["ok"] is True and answer["registers"] > 0, answer


LEAVE_BEHIND = """
import os, subprocess, sys, time
open("/tmp/left-by-the-last-request", "w").write("x")
open(os.path.join(os.environ["HOME"], "left-in-home"), "w").write("x")
os.environ["LEFT_IN_ENVIRONMENT"] = "1"
import coursetools.gpu_compile as compiler
compiler.compile_record = lambda *args, **kwargs: {"ok": False, "why": "ptxas fatal: poisoned", "line": None}
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    time.sleep(30)
    os._exit(0)
raise RuntimeError("REPORT{}")
"""
LOOK_FOR_IT = """
import json, os, sys
alive = []
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            if os.stat(f"/proc/{pid}").st_uid == os.getuid():
                alive.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(bytes(1), b" ").decode()[:80])
        except OSError:
            pass
report = {
    "tmp": os.path.exists("/tmp/left-by-the-last-request"),
    "home": os.listdir(os.environ["HOME"]),
    "environment": os.environ.get("LEFT_IN_ENVIRONMENT"),
    "poisoned": "coursetools.gpu_compile" in sys.modules
    and getattr(sys.modules["coursetools.gpu_compile"].compile_record, "__name__", "") == "<lambda>",
    "alive": alive,
}
raise RuntimeError("REPORT" + json.dumps(report))
"""


@pytest.mark.parametrize("mode", ["interpret", "compile"])
def test_nothing_one_request_leaves_reaches_the_next(fresh_runner, mode):
    """A file in /tmp and in its home, an environment variable, a module patched (the compile answer poisoned, as
    the issue's payload did to every later learner's kernels), a process and a daemon left running: the next
    request, and the next compile, see none of it."""
    params = {"kind": "forward", "sizes": [[10, 16]], "seed": 0, "dtypes": ["float64"]}
    for code in (LEAVE_BEHIND, LOOK_FOR_IT):
        body = {"probe": "autograder.nb05.probes:probe_kernel", "record": running_at_definition(code), "params": params}
        found = report_of(fresh_runner._ask(mode, "probe", body, 60.0))
    assert found == {"tmp": False, "home": [], "environment": None, "poisoned": False, "alive": []}, found
    (answer,) = fresh_runner.compile(record(COMPILES), [SIGNATURE], 90)
    assert answer["ok"] is True, answer


def test_a_child_that_dies_or_hangs_is_the_kernels_failure_and_the_next_request_is_answered(fresh_runner):
    params = {"kind": "forward", "sizes": [[10, 16]], "seed": 0, "dtypes": ["float64"]}
    dies = running_at_definition("import os; os.kill(os.getpid(), 9)")
    with pytest.raises(RunFailed, match="crashed Triton's interpreter"):
        fresh_runner.probe("autograder.nb05.probes:probe_kernel", dies, params)
    hangs = running_at_definition("while True: pass")
    fresh_runner.limits = sandbox.Limits(cell_timeout_s=3)
    with pytest.raises(RunFailed, match="longer than the 3 s"):
        fresh_runner.probe("autograder.nb05.probes:probe_kernel", hangs, params)
    answer = fresh_runner.probe("autograder.nb05.probes:probe_kernel", record(COMPILES), params)
    assert set(answer) == {"launches"}, answer


def test_an_answer_that_is_not_the_requests_own_is_no_answer():
    """The child's answer starts with its request's nonce and says its own length: anything else is read as no
    answer at all (the kernel's failure), never as data."""
    import io

    import torch

    from autograder.probes.kernel_runner import HEADER

    nonce = os.urandom(16)
    buffer = io.BytesIO()
    torch.save({"launches": []}, buffer)
    body = buffer.getvalue()
    assert kernel_sandbox._unpack(nonce, "probe", HEADER.pack(nonce, len(body)) + body) == {"launches": []}
    for forged in (
        HEADER.pack(os.urandom(16), len(body)) + body,  # another request's nonce
        HEADER.pack(nonce, len(body)) + body + b"more",  # bytes beyond the answer
        HEADER.pack(nonce, len(body) + 4) + body,  # short
        b'{"ok": true}\n',  # what a compile process's stdout used to answer
    ):
        with pytest.raises(RunFailed, match="crashed"):
            kernel_sandbox._unpack(nonce, "probe", forged)


# ------------------------------------------------------------------------------ graded: attackers and a bystander
ASSIGNMENT = "05-gpu-functions"
FORWARD = """
@triton.jit
def silu_forward_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    if n_elements < 0:  # never taken when it runs; Triton's code generator visits it all the same
        (tl if 1 else tl).core.builtins.exec("open('/tmp/revad-route-1', 'w').write('ran as the grader')")
    xc = x if x.dtype == tl.float64 else x.to(tl.float32)
    tl.store(y_ptr + offsets, (xc * tl.sigmoid(xc)).to(x.dtype), mask=mask)
"""
ANSWERS_PRINTED = "".join(f"    tl.static_print('{{\"ok\": true}}', {i})\n" for i in range(40))
BACKWARD_ONE = """
ONE = 1.0   # a plain global: the interpreter reads it; a GPU's compiler refuses it

@triton.jit
def silu_backward_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
{printed}    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets, mask=mask)
    s = ONE / (ONE + tl.exp(-x))
    tl.store(grad_in_ptr + offsets, g * s * (ONE + x * (ONE - s)), mask=mask)
"""
DEF_IN_A_STRING = '''
@triton.jit
def silu_forward_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    hidden = """
def silu_forward_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE):
    import numpy, torch
    y_ptr.copy_(torch.nn.functional.silu(x_ptr))
"""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets)
    tl.store(y_ptr + offsets, x * tl.sigmoid(x))
'''
POSING_MODULE = """
import types, torch
tlx = types.ModuleType("triton.language")
tlx.sigmoid = torch.sigmoid

@triton.jit
def silu_backward_kernel(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(grad_out_ptr + offsets, mask=mask)
    s = tlx.sigmoid(x)
    tl.store(grad_in_ptr + offsets, g * s * (1 + x * (1 - s)), mask=mask)
"""


@pytest.mark.slow
def test_graded_in_one_run_attackers_get_their_honest_scores_and_a_bystander_its_own(tmp_path, grading_pool):
    """One run, one worker, in this order: a_eve's forward kernel carries the issue's exec route in a branch it never
    takes (its compile share is refused, nothing runs: 1.5 of 3) and her backward kernel prints forty compile
    answers before a compile-only mistake (1.5 of 3); b_bob, graded next by the same worker, has the same
    compile-only mistake and nothing else: 28.5, every cell as when he is graded alone (a run of his own, after);
    c_cal's forward kernel hides a second def in a string (the interpreter and the compiler would read two
    kernels: neither runs it, 0 of 3) and his backward kernel uses a module that poses as triton.language (not
    Triton's: it never runs, 0 of 3)."""
    import shutil

    import nbformat
    from nbgrader.api import Gradebook

    from autograder.grading import grade_assignment
    from autograder.release import generate_in_course
    from autograder.submissions import fill_answers, solution_sources

    def graded(root, learners: dict) -> tuple[dict, dict]:
        """(total, score of every cell) of each learner, graded in one run by one worker, in name order."""
        db_url = f"sqlite:///{root / 'gradebook.db'}"
        shutil.copytree(SOLUTIONS / ASSIGNMENT, root / "source" / ASSIGNMENT)
        generate_in_course(root, [ASSIGNMENT], db_url)
        (released,) = (root / "release" / ASSIGNMENT).glob("*.ipynb")
        answers = solution_sources(SOLUTIONS / ASSIGNMENT / released.name)
        for student, mistakes in learners.items():
            folder = root / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True)
            nbformat.write(fill_answers(released, {**answers, **mistakes}), folder / released.name)
            (folder / "timestamp.txt").write_text("2026-11-27 12:00:00.000000 UTC")
        rows = grade_assignment(
            root, ASSIGNMENT, db_url=db_url, workers=1, pool=grading_pool[:1], progress=False, log=lambda *a: None
        )
        scores = {}
        with Gradebook(db_url) as gb:
            for student in learners:
                notebook = gb.find_submission_notebook(released.stem, ASSIGNMENT, student)
                scores[student] = {g.name: g.score for g in notebook.grades}
        return {row.student: row.score for row in rows}, scores

    root = tmp_path / "together"
    learners = {
        "a_eve": {"silu_forward_kernel": FORWARD, "silu_backward_kernel": BACKWARD_ONE.format(printed=ANSWERS_PRINTED)},
        "b_bob": {"silu_backward_kernel": BACKWARD_ONE.format(printed="")},
        "c_cal": {"silu_forward_kernel": DEF_IN_A_STRING, "silu_backward_kernel": POSING_MODULE},
    }
    totals, scores = graded(root, learners)
    alone = graded(tmp_path / "alone", {"b_bob": learners["b_bob"]})
    assert alone == ({"b_bob": totals["b_bob"]}, {"b_bob": scores["b_bob"]}), (alone, totals, scores)
    kernels = {s: (v["test_silu_forward_kernel"], v["test_silu_backward_kernel"]) for s, v in scores.items()}
    assert kernels == {"a_eve": (1.5, 1.5), "b_bob": (3, 1.5), "c_cal": (0, 0)}, kernels
    assert totals == {"a_eve": 27, "b_bob": 28.5, "c_cal": 24}, totals
    assert not os.path.exists("/tmp/revad-route-1")
    pages = {s: next((root / "feedback" / s / ASSIGNMENT).glob("*.html")).read_text() for s in learners}
    assert "`tl` as a value" in pages["a_eve"] and "Cannot access global variable ONE" in pages["a_eve"]
    assert "Cannot access global variable ONE" in pages["b_bob"] and "as a value" not in pages["b_bob"]
    assert "second line that starts with `def`" in pages["c_cal"], pages["c_cal"][-3000:]
    assert "calls itself &#x27;triton.language&#x27; and is not it" in pages["c_cal"] or "is not it" in pages["c_cal"]

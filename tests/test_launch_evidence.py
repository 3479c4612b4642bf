"""Issue 47, route 6: the Function exercises of notebooks 05 and 06 are judged by what their kernels' launches stored,
as the grader's launcher logged it (autograder/grading/launch_service.py), never by a record the learner's process
keeps. Here the launcher runs as it does in grading -- its own thread and socket, its own log -- and this process
plays the learner's: everything in it (the probe's windows, the local log, the stand-ins) is the learner's to
rewrite, and only the launcher's log is judged (the worker reads it the same way: grading/worker.py)."""

from __future__ import annotations

import socket
import struct

import pytest
import torch
from test_nb06_checks import fused_ce_cases, liger_linear, make_function

from autograder import nb05, nb06
from autograder.course_kernels import STAND_INS, StandInKernel
from autograder.feedback import CheckFailed
from autograder.grading.launch_service import LaunchService
from autograder.judges import launch_evidence
from autograder.nb06.judges.linear import linear_ce_cases
from autograder.probes import launches

CELL = "test_fused_ce"


@pytest.fixture
def launcher(tmp_path):
    """The grader's launcher, with this process's stand-ins sending their launches to it (as a grading kernel's do
    from the moment the probes are installed), while CELL runs."""
    folder = tmp_path / "grader"
    folder.mkdir()
    service = LaunchService(folder)
    service.cell = CELL
    before = list(launches._remote)
    assert launches.use_grader(str(folder))
    try:
        yield service
    finally:
        launches._remote[:] = before
        service.stop()


def judged(service, check, obj, cell=CELL, **params):
    """(points, parts failed, report): the probe's data collected here, judged against the launcher's log of `cell`."""
    try:
        data = check.collect(obj, **params)
    except CheckFailed as failure:
        return 0.0, {"collect"}, str(failure)
    with launch_evidence.using(service.log, cell):
        try:
            verdict = check.decide(data, **params)
        except CheckFailed as failure:
            if failure.verdict is None:
                return 0.0, {"decide"}, str(failure)
            verdict = failure.verdict
    return float(verdict), {p.name for p in verdict.parts if p.passed is False}, verdict.report()


FUSED = {"cases": fused_ce_cases()}


# ------------------------------------------------------------------------------------------------ honest answers


def test_an_honest_function_keeps_full_marks_and_its_launches_are_the_launchers(launcher):
    local = len(launches.LOCAL.launches)
    assert judged(launcher, nb06.check_fused_ce, make_function(), **FUSED)[:2] == (5.0, set())
    assert launcher.log.launches and len(launches.LOCAL.launches) == local  # computed there, not here
    assert all(launch.cell == CELL for launch in launcher.log.launches.values())


@pytest.mark.parametrize(
    ("check", "answer", "params", "points"),
    [
        (nb06.check_bf16, make_function(), {}, 3.0),
        (nb06.check_linear_ce, liger_linear(), {"cases": linear_ce_cases()}, 5.0),
        (nb06.check_fused_ce, make_function(gradient_in_forward=False), FUSED, 5.0),
    ],
    ids=["bfloat16", "Liger-Kernel's linear cross-entropy", "fused"],
)
def test_honest_designs_keep_full_marks_through_the_launcher(launcher, check, answer, params, points):
    assert judged(launcher, check, answer, **params)[:2] == (points, set())


def test_notebook_05s_triton_function_keeps_full_marks_through_the_launcher(launcher):
    from test_nb05_checks import CHECK_CALLS, CORRECT

    check, params = CHECK_CALLS["triton_silu"]
    assert judged(launcher, check, CORRECT["triton_silu"], **params)[0] == params["points"]


def test_a_right_launch_whose_output_pytorch_recomputes_bit_for_bit_is_the_kernels(launcher):
    """Evidence is by value: the launch stored exactly what is handed back, so the kernel did the work; PyTorch
    recomputing the same numbers gains nothing (its launch on other numbers does not count: below)."""
    from test_grading_hostile_45 import TRITON_PARAMS, _backward_recomputed_bit_for_bit, _kernel_forward
    from test_nb05_checks import fn

    answer = fn("TritonSiLU", _kernel_forward, _backward_recomputed_bit_for_bit)
    assert judged(launcher, nb05.check_triton_function, answer, **TRITON_PARAMS)[0] == TRITON_PARAMS["points"]


# ------------------------------------------------------------------------------------------------ attacks


def _pytorch_rows(logits, target, ignore_index):
    x = logits.double()
    rows = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index, reduction="none")
    return rows, torch.logsumexp(x, dim=1)


def _pytorch_grad(logits, target, ignore_index, grad_output, counted):
    p = torch.softmax(logits.double(), dim=1)
    kept = target != ignore_index
    p[kept.nonzero().squeeze(1), target[kept]] -= 1.0
    return (p * kept[:, None] * (float(grad_output) / counted)).to(logits.dtype).contiguous()


def _forging_function(forge):
    """A FusedCrossEntropy computed with PyTorch that launches none of the course's kernels and forges, with
    `forge(kind, tensors)`, the evidence the judge reads."""

    class FusedCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, target, ignore_index=-100):
            rows, lse = _pytorch_rows(logits, target, ignore_index)
            forge("forward", [rows, lse], (logits, target, ignore_index))
            counted = max(int((target != ignore_index).sum()), 1)
            ctx.save_for_backward(logits, target)
            ctx.ignore_index, ctx.counted = ignore_index, counted
            return (rows.sum() / counted).to(logits.dtype)

        @staticmethod
        def backward(ctx, grad_output):
            logits, target = ctx.saved_tensors
            grad = _pytorch_grad(logits, target, ctx.ignore_index, grad_output, ctx.counted)
            forge("backward", [grad], (logits, target, ctx.ignore_index))
            return grad, None, None

    return FusedCrossEntropy


def _into_the_local_log(kind, tensors, inputs):
    """Writes PyTorch's answers into this process's launch log as launches of the course's kernels, and names them."""
    name = "ce_forward_kernel" if kind == "forward" else "ce_backward_kernel"
    launches.made.append(launches.LOCAL.add(name, (tensors, [])))


def _guessed_numbers(kind, tensors, inputs):
    """Names every launch number the grader may have given out."""
    launches.made.extend(range(1, 500))


def _launcher_turned_off(kind, tensors, inputs):
    """Launches the course's kernel right, with the launcher turned off (so here, in the learner's process), on the
    case's inputs: the same numbers PyTorch computed."""
    saved = list(launches._remote)
    launches._remote.clear()
    try:
        logits, target, ignore_index = inputs
        rows, V = logits.shape
        acc = torch.float64
        if kind == "forward":
            loss, lse = torch.empty(rows, dtype=acc), torch.empty(rows, dtype=acc)
            STAND_INS["ce_forward_kernel"][(rows,)](logits, target, loss, lse, V, V, ignore_index)
            tensors[0].copy_(loss)
        else:
            counted = max(int((target != ignore_index).sum()), 1)
            lse, grad = torch.logsumexp(logits, 1), torch.empty_like(logits)
            STAND_INS["ce_backward_kernel"][(rows,)](logits, target, lse, grad, V, V, ignore_index, 1.0 / counted)
            tensors[0].copy_(grad)
    finally:
        launches._remote[:] = saved


def _run_replaced(kind, tensors, inputs):
    """Replaces the stand-ins' launch with one that answers a number and does nothing, and launches."""
    original = StandInKernel.run
    StandInKernel.run = lambda self, *args, grid=None, **kwargs: launches.made.append(1) or 1
    try:
        name = "ce_forward_kernel" if kind == "forward" else "ce_backward_kernel"
        STAND_INS[name][(1,)](*tensors)
    finally:
        StandInKernel.run = original


def _a_forged_frame(kind, tensors, inputs):
    """Sends the grader's socket a frame of its own: a launch whose tensor lies past the bytes it sends."""
    header = {
        "name": "ce_forward_kernel",
        "grid": [1],
        "values": [{"storage": 0, "dtype": "float64", "offset": 0, "shape": [1000], "stride": [1]}] * 4
        + [{"value": 1}] * 3,
        "storages": [8],
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(launches._remote[0])
        launches.send_frame(conn, header, [b"\0" * 8])
        answer, _ = launches.read_frame(conn)
    assert "past the end" in answer["error"], answer


def _rows_as_one_column_logits(kind, tensors, inputs):
    """Hands PyTorch's per-row losses to the course's forward kernel as one-column logits (a log-sum-exp of one
    number is that number: the launch writes them back), and PyTorch's gradient to a launch of the backward kernel
    on rows made up to give it (log of the softmax it wants, a log-sum-exp of 0)."""
    logits, target, ignore_index = inputs
    rows = logits.shape[0]
    if kind == "forward":
        losses = tensors[0].contiguous()
        loss, lse = torch.empty_like(losses), torch.empty_like(losses)
        STAND_INS["ce_forward_kernel"][(rows,)](losses, torch.zeros(rows, dtype=torch.int64), loss, lse, 1, 1, -1)
    else:
        counted = max(int((target != ignore_index).sum()), 1)
        made_up = torch.log(tensors[0] * counted + torch.nn.functional.one_hot(target.clamp(min=0), logits.shape[1]))
        grad = torch.empty_like(logits)
        V = logits.shape[1]
        STAND_INS["ce_backward_kernel"][(rows,)](
            made_up, target, torch.zeros(rows), grad, V, V, ignore_index, 1 / counted
        )


FORGERIES = {
    "PyTorch's answers handed to the kernels as made-up logits": _rows_as_one_column_logits,
    "PyTorch's answers written into the local log": _into_the_local_log,
    "launch numbers guessed": _guessed_numbers,
    "the launcher turned off": _launcher_turned_off,
    "the stand-ins' launch replaced": _run_replaced,
    "a frame of its own on the grader's socket": _a_forged_frame,
}


@pytest.mark.parametrize("forge", list(FORGERIES.values()), ids=list(FORGERIES))
def test_a_function_that_forges_its_launches_earns_no_kernel_part(launcher, forge):
    points, failed, report = judged(launcher, nb06.check_fused_ce, _forging_function(forge), **FUSED)
    assert {"forward", "reference"} <= failed, report


def test_launches_named_from_another_cell_lead_nowhere(launcher):
    """Right launches made while another cell ran, named again in this one: the log has them as that cell's."""
    launcher.cell = "an_earlier_cell"
    with launches.window() as earlier:
        judged(launcher, nb06.check_fused_ce, make_function(), cell="an_earlier_cell", **FUSED)
    launcher.cell = CELL

    def named_again(kind, tensors, inputs):
        launches.made.extend(earlier.numbers)

    points, failed, report = judged(launcher, nb06.check_fused_ce, _forging_function(named_again), **FUSED)
    assert {"forward", "reference"} <= failed, report


def test_a_launch_on_other_numbers_beside_pytorchs_answer_earns_nothing(launcher):
    points, failed, report = judged(launcher, nb06.check_fused_ce, make_function(launch_for_show=True), **FUSED)
    assert "reference" in failed and "no gradient a Triton kernel wrote" in report, report


def test_the_gaps_between_a_launchs_rows_are_not_what_it_stored(launcher):
    """Rows handed to a launch with a stride of two rows: what lies between them (PyTorch's gradient, put there
    before) is not the launch's, though it sits inside the span the launch was handed."""
    x = torch.randn(3, 5, dtype=torch.float64)
    target = torch.tensor([0, 1, 2])
    wide = torch.zeros(6, 5, dtype=torch.float64)
    pytorch = _pytorch_grad(x, target, -100, 1.0, 3)
    wide[1::2] = pytorch
    lse = torch.logsumexp(x, 1)
    logits = torch.zeros(6, 5, dtype=torch.float64)
    logits[0::2] = x
    with launches.window() as made:
        STAND_INS["ce_backward_kernel"][(3,)](logits, target, lse, wide, 10, 5, -100, 1 / 3)
    gaps = wide[1::2]
    with launch_evidence.using(launcher.log, CELL):
        found = launch_evidence.of(made.numbers, {"ce_backward_kernel"})
        assert found and launch_evidence.produced(found, wide[0::2].clone(), {"dtype": "float64", "stride": [10, 1]})
        for stride in ([10, 1], [5, 1], [1, 5]):  # the gaps' own layout, and read over the rows and the gaps
            assert not launch_evidence.produced(found, gaps.clone(), {"dtype": "float64", "stride": stride})


# ------------------------------------------------------------------------------------------------ the wire


@pytest.mark.parametrize(
    ("header", "blobs", "says"),
    [
        ({"name": "os.system", "grid": None, "values": [], "storages": []}, [], "not one of the course's kernels"),
        ({"name": "silu_forward_kernel", "grid": None, "values": [{"value": "x"}], "storages": []}, [], "number"),
        (
            {
                "name": "silu_forward_kernel",
                "grid": None,
                "values": [{"storage": 3, "dtype": "float64", "offset": 0, "shape": [1], "stride": [1]}],
                "storages": [8],
            },
            [b"\0" * 8],
            "no such storage",
        ),
        (
            {
                "name": "silu_forward_kernel",
                "grid": None,
                "values": [{"storage": 0, "dtype": "float64", "offset": -4, "shape": [1], "stride": [1]}],
                "storages": [8],
            },
            [b"\0" * 8],
            "past the end",
        ),
    ],
    ids=["another name", "a string", "no such storage", "a negative offset"],
)
def test_a_frame_that_is_no_launch_is_answered_with_why_and_logged_nowhere(launcher, header, blobs, says):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(launches._remote[0])
        launches.send_frame(conn, header, blobs)
        answer, back = launches.read_frame(conn)
    assert says in answer.get("error", ""), answer
    assert not launcher.log.launches and not back


def test_a_launch_larger_than_the_grader_takes_is_refused_before_it_is_read(launcher):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(launches._remote[0])
        head = b'{"name": "silu_forward_kernel", "grid": null, "values": [], "storages": [1099511627776]}'
        conn.sendall(struct.pack("<Q", len(head)) + head)
        assert conn.recv(1) == b""  # closed unanswered: nothing of it was read or kept
    assert not launcher.log.launches and launcher.refused == 1


def test_stopping_ends_the_thread_makes_no_launch_and_refuses_nothing(launcher):
    """stop() wakes the thread with a connection of its own: that connection is neither a launch nor a refusal, and
    after it nothing is served."""
    launcher.stop()
    assert not launcher.thread.is_alive()
    assert not launcher.log.launches and launcher.refused == 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn, pytest.raises(OSError):
        conn.connect(launches._remote[0])


def test_the_stand_ins_own_complaint_reaches_the_learner(launcher):
    """A scale handed as a tensor: the course's kernel says why, from the grader, as a TypeError in the Function."""
    x, target = torch.randn(2, 3, dtype=torch.float64), torch.tensor([0, 1])
    with pytest.raises(TypeError, match="pass a Python number"):
        STAND_INS["ce_backward_kernel"][(2,)](x, target, x[:, 0], torch.empty_like(x), 3, 3, -100, torch.tensor(1.0))
    assert not launcher.log.launches

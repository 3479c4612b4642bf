"""Warm kernels (autograder/grading/warm.py, autograder/probes/kernel_fork.py): each submission still gets a fresh
kernel of its own, and nothing one submission leaves behind reaches the next.

Two submissions graded one after the other by one worker (so by one factory): the first leaves what it can -- files
in /tmp and /dev/shm, a process still running and one that writes later, a thread, a listening socket, an
environment variable, patched modules -- and prints its random numbers; the second looks for each before its first
answer, and its answer raises (its test then scores 0) if it sees any. Cold kernels are graded the same way, as the
control."""

from __future__ import annotations

import shutil

import nbformat
import pytest

from autograder.coursedir import SOLUTIONS
from autograder.grading import grade_assignment, sandbox, warm
from autograder.release import generate_in_course
from autograder.submissions import fill_answers, solution_sources

pytestmark = [pytest.mark.grading, pytest.mark.slow]
ASSIGNMENT = "01-reverse-accumulation"
INFO = sandbox.detect()
WHOLE = INFO.protections_off() == [] and INFO.as_root and INFO.drop_uid  # where warm kernels can run at all

# a kernel of the factory sees it in its PID namespace (the tests check they graded the way they meant to)
SEES_FACTORY = (
    'print("FACTORY", any("kernel_fork" in open(f"/proc/{p}/cmdline").read()'
    ' for p in os.listdir("/proc") if p.isdigit()))\n'
)
LEAVES = r"""import os, random, socket, statistics, subprocess, sys, threading, time
import numpy as np
import torch
for place in ("/tmp", "/dev/shm", "..", "../..", os.path.expanduser("~")):
    try:
        open(os.path.join(place, "left_by_a"), "w").write("a's secret")
    except OSError:
        pass
os.environ["LEFT_BY_A"] = "1"
torch.left_by_a = True
statistics.mean = lambda *a, **k: "patched by a"
subprocess.Popen(
    [sys.executable, "-c", "import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.bind(chr(0) + 'left_by_a')\n"
     "s.listen()\ntime.sleep(3)\nopen('/tmp/late_by_a', 'w').write('x')\ntime.sleep(600)"],
    start_new_session=True,
)
threading.Thread(target=lambda: (time.sleep(2), open("/tmp/thread_by_a", "w").write("x")), daemon=True).start()
print("RANDOM", random.random(), np.random.random())
print("LEFT", [p for p in ("/tmp", "/dev/shm") if os.path.exists(os.path.join(p, "left_by_a"))])
"""

LOOKS = r"""import os, random, socket, statistics, time
import numpy as np
import torch
time.sleep(4)  # past the moment A's late writers would write, had they outlived A's kernel
seen = [p for p in ("/tmp/left_by_a", "/dev/shm/left_by_a", "/tmp/late_by_a", "/tmp/thread_by_a",
                    "../left_by_a", "../../left_by_a", os.path.expanduser("~/left_by_a")) if os.path.exists(p)]
seen += ["environment"] if "LEFT_BY_A" in os.environ else []
seen += ["torch patched"] if hasattr(torch, "left_by_a") else []
seen += ["statistics patched"] if statistics.mean([1, 2]) != 1.5 else []
probe = socket.socket(socket.AF_UNIX)
try:
    probe.connect(chr(0) + "left_by_a")
    seen.append("a's socket")
except OSError:
    pass
others = [p for p in os.listdir("/proc") if p.isdigit() and os.stat(f"/proc/{p}").st_uid not in (0, os.getuid())]
seen += [f"a process of another uid ({len(others)})"] if others else []
print("RANDOM", random.random(), np.random.random())
assert not seen, f"left by the submission before: {seen}"
"""


def grade_in_turn(tmp_path, runs=((None, None),), pool=None, after_each=lambda: None) -> tuple[dict, dict]:
    """Grade a_leaves then b_looks with one worker; (scores, the numbers each printed). `runs`: the (students, limits)
    of each grading run in turn (default: both in one run); `after_each` is called after each run."""
    root, db_url = tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}"
    shutil.copytree(SOLUTIONS / ASSIGNMENT, root / "source" / ASSIGNMENT)
    generate_in_course(root, [ASSIGNMENT], db_url)
    (released,) = (root / "release" / ASSIGNMENT).glob("*.ipynb")
    answers = solution_sources(SOLUTIONS / ASSIGNMENT / released.name)
    routes = {
        "a_leaves": {**answers, "primal_trace": LEAVES + "\n" + SEES_FACTORY + "\n" + answers["primal_trace"]},
        "b_looks": {**answers, "primal_trace": "import os\n" + SEES_FACTORY + LOOKS + "\n\n" + answers["primal_trace"]},
    }
    for student, filled in routes.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(fill_answers(released, filled), folder / released.name)
        (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")
    rows = []
    for students, limits in runs:
        rows += grade_assignment(
            root,
            ASSIGNMENT,
            students,
            db_url=db_url,
            workers=1,
            progress=False,
            log=lambda *a: None,
            limits=limits,
            pool=pool,
        )
        after_each()
    printed = {}
    for student in routes:
        (graded,) = (root / "autograded" / student / ASSIGNMENT).glob("*.ipynb")
        outputs = [o.get("text", "") for c in nbformat.read(graded, as_version=4).cells for o in c.get("outputs", [])]
        lines = [line for text in outputs for line in text.splitlines()]
        printed[student] = {
            line.split()[0]: line for line in lines if line.split()[:1] in (["RANDOM"], ["FACTORY"], ["LEFT"])
        }
    return {row.student: row for row in rows}, printed


@pytest.mark.skipif(not WHOLE, reason="warm kernels need the whole sandbox (bubblewrap, root, a uid per submission)")
@pytest.mark.parametrize("warm_kernels", ["1", "0"], ids=["warm", "cold (the control)"])
def test_nothing_one_submission_leaves_reaches_the_next(tmp_path, monkeypatch, warm_kernels):
    monkeypatch.setenv("REVAD_WARM_KERNELS", warm_kernels)
    scores, printed = grade_in_turn(tmp_path)
    looks = scores["b_looks"]
    assert looks.score == looks.max_score, (looks.messages, looks.flags)  # it saw nothing A left
    assert printed["a_leaves"]["LEFT"] == "LEFT ['/tmp']", printed  # what A left was there, in A (/dev: read-only)
    assert printed["a_leaves"]["RANDOM"] != printed["b_looks"]["RANDOM"], printed  # Python's and NumPy's, fresh
    from_factory = warm_kernels != "0"
    assert [printed[s]["FACTORY"].endswith(str(from_factory)) for s in printed] == [True, True], printed


@pytest.mark.skipif(not WHOLE, reason="warm kernels need the whole sandbox (bubblewrap, root, a uid per submission)")
def test_a_kernel_from_the_factory_is_the_submissions_own(tmp_path, monkeypatch):
    """Its uid, its groups, no capabilities, no new privileges, its own working folder; the factory's socket out
    of its reach."""
    monkeypatch.setenv("REVAD_WARM_KERNELS", "1")
    answers = solution_sources(SOLUTIONS / ASSIGNMENT / "reverse_accumulation.ipynb")
    checks = r"""import os
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
assert os.getuid() >= 62000 and os.getgid() == os.getuid() and os.getgroups() == [], (os.getuid(), os.getgroups())
assert int(status["CapEff"], 16) == int(status["CapPrm"], 16) == int(status["CapBnd"], 16) == 0, status
assert status["NoNewPrivs"].strip() == "1", status["NoNewPrivs"]
assert os.getcwd().endswith("/work")
assert any("kernel_fork" in open(f"/proc/{p}/cmdline").read() for p in os.listdir("/proc") if p.isdigit())
assert not any(os.path.exists(os.path.join(d, "factory.sock")) for d in ("../../../factory", "/tmp"))
"""
    root, db_url = tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}"
    shutil.copytree(SOLUTIONS / ASSIGNMENT, root / "source" / ASSIGNMENT)
    generate_in_course(root, [ASSIGNMENT], db_url)
    (released,) = (root / "release" / ASSIGNMENT).glob("*.ipynb")
    folder = root / "submitted" / "own" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(
        fill_answers(released, {**answers, "primal_trace": checks + answers["primal_trace"]}), folder / released.name
    )
    (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")
    (row,) = grade_assignment(root, ASSIGNMENT, db_url=db_url, workers=1, progress=False, log=lambda *a: None)
    assert row.score == row.max_score, row.messages


def kernel_from(factory, scratch, uid: int):
    """A kernel from the factory, as the grader asks for one: (its client process, a client of the kernel)."""
    import os
    import subprocess

    from jupyter_client import BlockingKernelClient
    from jupyter_client.connect import write_connection_file

    from autograder.grading.execute import kernel_environment

    (scratch / "work").mkdir(parents=True)
    scratch.chmod(0o700)
    env = kernel_environment(scratch / "home", 1, True)
    connection, _ = write_connection_file(str(scratch / "k.json"), transport="ipc", ip=str(scratch / "k"))
    for path in [scratch, *scratch.rglob("*")]:
        os.lchown(path, uid, uid)
    argv = [
        a.replace("{connection_file}", connection)
        for a in warm.kernel_command(factory, scratch, uid, env, sandbox.Limits())
    ]
    proxy = subprocess.Popen(argv)
    client = BlockingKernelClient(connection_file=connection)
    client.load_connection_file()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return proxy, client


def uids_running() -> set[int]:
    import os

    uids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uids.add(os.stat(f"/proc/{pid}").st_uid)
        except OSError:  # gone meanwhile
            pass
    return uids


def printed_by(client, code: str) -> str:
    out = []
    client.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(m["content"].get("text", "")))
    return "".join(out).strip()


@pytest.mark.skipif(not WHOLE, reason="warm kernels need the whole sandbox (bubblewrap, root, a uid per submission)")
def test_each_kernel_from_the_factory_draws_fresh_random_numbers_and_dies_with_its_client(tmp_path, monkeypatch):
    import time

    monkeypatch.setenv("REVAD_WARM_KERNELS", "1")
    factory = warm.factory_for(sandbox.detect(), sandbox.Limits(), 1, [])
    try:
        seeds, pids = [], []
        for k in range(2):
            proxy, client = kernel_from(factory, factory.kernels_dir / f"nb{k}", 62990 + k)
            seeds.append(
                printed_by(client, "import torch, numpy, random\nprint(torch.initial_seed(), random.random())")
            )
            pids.append(printed_by(client, "import os\nprint(os.getpid())"))
            proxy.kill()  # as jupyter_client kills a kernel: the factory kills it too
            proxy.wait()
            client.stop_channels()
            deadline = time.monotonic() + 10
            while 62990 + k in uids_running():
                assert time.monotonic() < deadline, "the kernel outlived its client"
                time.sleep(0.1)
        assert seeds[0] != seeds[1], seeds  # a fork copies the factory's generators: each kernel reseeds them
    finally:
        warm.stop()


TRITON_REDUCTION = r"""import os
import torch
if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"   # as notebooks 05 and 06 do, in their first cell
import triton
import triton.language as tl

@triton.jit
def row_max(x_ptr, out_ptr, V, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * V + cols, mask=cols < V, other=float("-inf"))
    tl.store(out_ptr + tl.program_id(0), tl.max(x, axis=0) + tl.sum(tl.where(cols < V, 0.0, 0.0), axis=0))

x = torch.randn(3, 5)
out = torch.empty(3)
row_max[(3,)](x, out, 5, BLOCK=8)
print(torch.equal(out, x.max(dim=1).values))
"""


@pytest.mark.skipif(not WHOLE, reason="warm kernels need the whole sandbox (bubblewrap, root, a uid per submission)")
def test_a_kernel_from_the_factory_runs_triton_reductions_in_the_interpreter(monkeypatch):
    """The factory imports Triton (torch's compiler does) before any cell sets TRITON_INTERPRET: tl.max and tl.sum,
    themselves Triton functions, are interpreted only if the factory knew (the kernel environment says so on a grader
    without a GPU). A warm kernel that did not know failed every reduction of notebook 06's correct answers."""
    monkeypatch.setenv("REVAD_WARM_KERNELS", "1")
    factory = warm.factory_for(sandbox.detect(), sandbox.Limits(), 1, [])
    assert factory is not None
    try:
        proxy, client = kernel_from(factory, factory.kernels_dir / "triton", 62995)
        try:
            assert printed_by(client, "import os\n" + SEES_FACTORY) == "FACTORY True"
            printed = printed_by(client, TRITON_REDUCTION)  # nothing printed: the cell raised
            assert printed.splitlines()[-1:] == ["True"], printed
        finally:
            proxy.kill()
            proxy.wait()
            client.stop_channels()
    finally:
        warm.stop()


@pytest.mark.skipif(not WHOLE, reason="warm kernels need the whole sandbox (bubblewrap, root, a uid per submission)")
def test_other_deadlines_keep_the_factory_and_other_memory_starts_another(monkeypatch):
    """A cell's and a notebook's time, the output kept and the processes per uid are each kernel's or the worker's:
    a worker grading with other values of those keeps its factory. The limits its sandbox was started with (memory,
    /tmp, CPU time, file size), changed, start a new one."""
    monkeypatch.setenv("REVAD_WARM_KERNELS", "1")
    info = sandbox.detect()
    try:
        first = warm.factory_for(info, sandbox.Limits(), 1, [])
        same = warm.factory_for(info, sandbox.Limits(cell_timeout_s=8, timeout_s=45, output_kb=256, nproc=64), 1, [])
        assert first is not None and same is first and first.alive()
        other = warm.factory_for(info, sandbox.Limits(memory_mb=3072), 1, [])
        assert other is not None and other is not first and not first.alive() and other.alive()
    finally:
        warm.stop()


@pytest.mark.skipif(not WHOLE, reason="warm kernels need the whole sandbox (bubblewrap, root, a uid per submission)")
def test_a_factory_kept_across_runs_carries_nothing_from_one_run_to_the_next(tmp_path, monkeypatch):
    """The factory outlives a grading run when the next changes only deadlines (factory_limits): a_leaves, graded in
    one run, leaves what it can; b_looks, graded by the same worker in the next run with other deadlines, is forked
    from the same factory process and finds nothing."""
    import psutil

    from autograder.grading.pool import Worker

    monkeypatch.setenv("REVAD_WARM_KERNELS", "1")
    worker = Worker(0, tmp_path)
    factories: list[set[int]] = []
    folders: list = []  # the worker's temporary folder (its TMPDIR), which holds the factory's and the probes'

    def note_factory() -> None:
        descendants = psutil.Process(worker.proc.pid).children(recursive=True)
        factories.append({p.pid for p in descendants if "kernel_fork" in " ".join(p.cmdline())})
        folders.append(worker.tmp)
        assert worker.tmp and {p.name.split("-")[1] for p in worker.tmp.iterdir()} >= {"warm", "probe"}, folders

    runs = [(["a_leaves"], sandbox.Limits()), (["b_looks"], sandbox.Limits(cell_timeout_s=60, timeout_s=300))]
    (tmp_path / "course").mkdir()
    try:
        scores, printed = grade_in_turn(tmp_path / "course", runs, pool=[worker], after_each=note_factory)
    finally:
        worker.stop()
    looks = scores["b_looks"]
    assert looks.score == looks.max_score, (looks.messages, looks.flags)  # it saw nothing a_leaves left
    assert printed["a_leaves"]["LEFT"] == "LEFT ['/tmp']", printed  # what a_leaves left was there, in its kernel
    assert [printed[s]["FACTORY"].endswith("True") for s in printed] == [True, True], printed
    # the factory (with its sandbox), kept between the runs
    assert factories[0] and factories[1] == factories[0], factories
    # the worker was stopped with SIGKILL: what it left in its temporary folder is gone all the same
    assert folders[0] == folders[1] and not folders[0].exists(), folders

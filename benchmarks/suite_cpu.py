"""Where a command's CPU goes, by kind of process: every process the command starts (and theirs) is sampled while it
runs, and its CPU seconds are added to its kind (a grading worker, a warm-kernel factory, a kernel forked from one,
a notebook's kernel, a Celery worker, ...). `make test` is CPU-bound on 2 cores, so these are what its minutes are.

    python -m benchmarks.suite_cpu [--every 0.3] [--by kind|test] [--] make test

`--by test`: a process started during a test is counted under that test's file (the PYTEST_CURRENT_TEST it was
started with, or its parent's), whatever its kind: a class graded, a server or a notebook executed for a test is
that test's. A process that a session's fixture started serves every test after it, and counts under the first.
The pytest workers' own CPU is not split by test: it stays under its kind.

Processes that live less than one sampling interval are missed: the line "not sampled" is the machine's busy CPU
(/proc/stat) less what was sampled, other processes of the machine included.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections import defaultdict

import psutil

SANDBOX_TOOLS = {"bwrap", "prlimit"}  # a sandbox's wrappers: their command lines end with the sandboxed command
FORKED_KERNEL = "kernel forked from a factory"
BY_MODULE = {  # python -m <module>
    "autograder.grading.worker": "grading worker",
    "autograder.probes.kernel_fork": "warm-kernel factory",
    "autograder.probes.kernel_runner": "kernel runner (Triton interpreter / compile)",
    "ipykernel_launcher": "notebook kernel (nbclient, stock nbgrader, the lab)",
    "pytest": "pytest",
    "jupyterhub.singleuser": "JupyterHub and its servers",
}
BY_CODE = {  # python -c <code>
    "gpu_compile import serve": "GPU compile process",
    "exec(eval(sys.stdin.readline()))": "pytest worker (xdist)",
}
BY_PROGRAM = {"chromium": "browser", "nbgrader": "nbgrader command", "jupyterhub": "JupyterHub and its servers"}


def kind_of(argv: list[str], parent_argv: list[str] | None = None) -> str:
    """The kind of a process by its arguments (and its parent's: a kernel is a fork of its factory, and keeps its
    factory's arguments)."""
    program = os.path.basename(argv[0]) if argv else ""
    script = os.path.basename(argv[1]) if len(argv) > 1 else ""
    if program in SANDBOX_TOOLS:
        return "sandbox wrapper (bwrap, prlimit)"
    if not program.startswith("python"):
        return next((kind for name, kind in BY_PROGRAM.items() if name in (program, script)), "other")
    module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else ""
    if module == "autograder.probes.kernel_fork" and parent_argv and kind_of(parent_argv) == "warm-kernel factory":
        return FORKED_KERNEL
    if module in BY_MODULE:
        return BY_MODULE[module]
    if module == "autograder" and len(argv) > argv.index("-m") + 2:
        command = argv[argv.index("-m") + 2]
        return {"worker": "Celery worker", "grade": "grading command"}.get(command, "other Python")
    code = argv[argv.index("-c") + 1] if "-c" in argv[:-1] else ""
    by_script = next((kind for name, kind in BY_PROGRAM.items() if name == script), None)
    return next((kind for mark, kind in BY_CODE.items() if mark in code), by_script or "other Python")


def busy_cpu_s() -> float:
    """Busy CPU seconds of the whole machine since boot, all cores (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as stat:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in stat.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def test_started_in(pid: int) -> str | None:
    """The test file a process was started during: PYTEST_CURRENT_TEST in the environment it was started with."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            for item in environ.read().split(b"\0"):
                if item.startswith(b"PYTEST_CURRENT_TEST="):
                    return item.split(b"=", 1)[1].decode(errors="replace").split("::")[0]
    except OSError:
        pass
    return None


def sample(root_pid: int, seen: dict, by: str = "kind") -> None:
    """The CPU seconds so far of the process `root_pid` and every process under it, by (pid, start time), each under
    its group (its kind, or with by="test" the test it was started for): one pass over the machine's processes."""
    procs = {}
    for proc in psutil.process_iter(["ppid", "create_time", "cpu_times", "cmdline"]):
        procs[proc.pid] = proc.info
    children = defaultdict(list)
    for pid, info in procs.items():
        children[info["ppid"]].append(pid)
    ours, frontier = [root_pid], [root_pid]  # parents before their children: a child takes its parent's test
    while frontier:
        for child in children[frontier.pop()]:
            ours.append(child)
            frontier.append(child)
    tests: dict[int, str | None] = {}
    for pid in ours:
        info = procs.get(pid)
        if info is None or info["cpu_times"] is None:
            continue
        key = (pid, info["create_time"])
        if key not in seen:
            parent = procs.get(info["ppid"])
            kind = kind_of(info["cmdline"] or [], parent and parent["cmdline"])
            test = (test_started_in(pid) or tests.get(info["ppid"])) if by == "test" else None
            seen[key] = [test or kind, 0.0, test]
        tests[pid] = seen[key][2]
        seen[key][1] = info["cpu_times"].user + info["cpu_times"].system


def measure(
    command: list[str], every_s: float, by: str = "kind"
) -> tuple[int, float, float, dict[str, tuple[float, int]]]:
    """(exit status, wall seconds, busy CPU seconds of the machine, {kind or test: (CPU seconds, processes)})."""
    seen: dict = {}
    busy0, start = busy_cpu_s(), time.monotonic()
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        sample(proc.pid, seen, by)
        time.sleep(every_s)
    wall, busy = time.monotonic() - start, busy_cpu_s() - busy0
    by_kind: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for kind, cpu, _ in seen.values():
        by_kind[kind][0] += cpu
        by_kind[kind][1] += 1
    return proc.returncode, wall, busy, {k: (v[0], v[1]) for k, v in by_kind.items()}


def report(returncode: int, wall: float, busy: float, by_kind: dict[str, tuple[float, int]]) -> str:
    sampled = sum(cpu for cpu, _ in by_kind.values())
    lines = [f"exit status {returncode}; {wall:.0f} s wall, {busy:.0f} CPU-s busy on this machine", ""]
    lines.append(f"{'CPU-s':>8} {'share':>6} {'processes':>9}  kind, or test file")
    for kind, (cpu, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"{cpu:8.0f} {cpu / max(busy, 1e-9):6.1%} {n:9d}  {kind}")
    left = busy - sampled
    lines.append(f"{left:8.0f} {left / max(busy, 1e-9):6.1%} {'':9}  not sampled (shorter than a sample, or not ours)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=float, default=0.3, help="seconds between samples (default 0.3)")
    parser.add_argument("--by", choices=("kind", "test"), default="kind", help="group by (default kind)")
    parser.add_argument("command", nargs="+", help="the command to measure, e.g. make test")
    args = parser.parse_args()
    print(report(*measure(args.command, args.every, args.by)))


if __name__ == "__main__":
    main()

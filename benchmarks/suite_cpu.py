"""Where a command's CPU goes, by kind of process: every process the command starts (and theirs) is sampled while it
runs, and its CPU seconds are added to its kind (a grading worker, a warm-kernel factory, a kernel forked from one,
a notebook's kernel, a Celery worker, ...). `make test` is CPU-bound on 2 cores, so these are what its minutes are.

    python -m benchmarks.suite_cpu [--every 0.3] [--] make test

Processes that live less than one sampling interval are missed: the line "not sampled" is the machine's busy CPU
(/proc/stat) less what was sampled, other processes of the machine included.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import time
from collections import defaultdict

import psutil

# (kind, what its command line contains), first match wins; a forked kernel has its factory's command line
KINDS = [
    ("grading worker", "autograder.grading.worker"),
    ("warm-kernel factory", "autograder.probes.kernel_fork"),
    ("kernel runner (Triton interpreter / compile)", "autograder.probes.kernel_runner"),
    ("GPU compile process", "coursetools.gpu_compile import serve"),
    ("notebook kernel (nbclient, stock nbgrader, the lab)", "ipykernel_launcher"),
    ("Celery worker", "autograder worker"),
    ("grading command", "autograder grade"),
    ("pytest worker", "exec(eval(sys.stdin.readline()))"),
    ("pytest", "pytest"),
    ("browser", "chromium"),
    ("nbgrader command", "bin/nbgrader"),
    ("JupyterHub and its servers", "jupyterhub"),
]
FORKED_KERNEL = "kernel forked from a factory"


def kind_of(cmdline: str, parent_cmdline: str = "") -> str:
    """The kind of a process by its command line (and its parent's: a kernel is a fork of its factory)."""
    if "autograder.probes.kernel_fork" in cmdline and "autograder.probes.kernel_fork" in parent_cmdline:
        return FORKED_KERNEL
    for kind, mark in KINDS:
        if mark in cmdline:
            return kind
    if re.search(r"\bpython[\d.]*\b", cmdline):
        return "other Python"
    return "other"


def busy_cpu_s() -> float:
    """Busy CPU seconds of the whole machine since boot, all cores (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as stat:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in stat.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def sample(root: psutil.Process, seen: dict) -> None:
    """The CPU seconds so far of `root` and every process under it, by (pid, start time)."""
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for proc in procs:
        try:
            with proc.oneshot():
                key = (proc.pid, proc.create_time())
                times = proc.cpu_times()
                if key not in seen:
                    parent = proc.parent()
                    parent_cmd = " ".join(parent.cmdline()) if parent else ""
                    seen[key] = [kind_of(" ".join(proc.cmdline()), parent_cmd), 0.0]
                seen[key][1] = times.user + times.system
        except psutil.Error:
            continue


def measure(command: list[str], every_s: float) -> tuple[int, float, float, dict[str, tuple[float, int]]]:
    """(exit status, wall seconds, busy CPU seconds of the machine, {kind: (CPU seconds, processes)})."""
    seen: dict = {}
    busy0, start = busy_cpu_s(), time.monotonic()
    proc = subprocess.Popen(command)
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        sample(root, seen)
        time.sleep(every_s)
    wall, busy = time.monotonic() - start, busy_cpu_s() - busy0
    by_kind: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for kind, cpu in seen.values():
        by_kind[kind][0] += cpu
        by_kind[kind][1] += 1
    return proc.returncode, wall, busy, {k: (v[0], v[1]) for k, v in by_kind.items()}


def report(returncode: int, wall: float, busy: float, by_kind: dict[str, tuple[float, int]]) -> str:
    sampled = sum(cpu for cpu, _ in by_kind.values())
    lines = [f"exit status {returncode}; {wall:.0f} s wall, {busy:.0f} CPU-s busy on this machine", ""]
    lines.append(f"{'CPU-s':>8} {'share':>6} {'processes':>9}  kind")
    for kind, (cpu, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"{cpu:8.0f} {cpu / max(busy, 1e-9):6.1%} {n:9d}  {kind}")
    left = busy - sampled
    lines.append(f"{left:8.0f} {left / max(busy, 1e-9):6.1%} {'':9}  not sampled (shorter than a sample, or not ours)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=float, default=0.3, help="seconds between samples (default 0.3)")
    parser.add_argument("command", nargs="+", help="the command to measure, e.g. make test")
    args = parser.parse_args()
    print(report(*measure(args.command, args.every)))


if __name__ == "__main__":
    main()

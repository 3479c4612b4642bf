"""benchmarks.suite_cpu, which says where `make test`'s CPU goes: each process counted once, under its kind."""

from __future__ import annotations

import sys

from benchmarks.suite_cpu import FORKED_KERNEL, kind_of, measure, report

FACTORY = ["/v/bin/python", "-m", "autograder.probes.kernel_fork", "/tmp/revad-warm-x/factory/factory.sock"]
BWRAP = ["/usr/bin/bwrap", "--die-with-parent", "--tmpfs", "/", "--", *FACTORY]


def test_each_process_of_the_suite_has_its_kind():
    assert kind_of(["/v/bin/python", "-m", "autograder.grading.worker", "--serve"]) == "grading worker"
    assert kind_of(BWRAP) == "sandbox wrapper (bwrap, prlimit)"  # its arguments end with the factory's
    assert kind_of(FACTORY, BWRAP) == "warm-kernel factory"
    assert kind_of(FACTORY, FACTORY) == FORKED_KERNEL  # a kernel keeps its factory's arguments
    assert kind_of(["/v/bin/python", "-m", "ipykernel_launcher", "-f", "/tmp/k.json"]).startswith("notebook kernel")
    assert kind_of(["/v/bin/python", "-m", "autograder", "worker", "--broker", "redis://x"]) == "Celery worker"
    assert kind_of(["/v/bin/python", "-m", "autograder", "grade", "01-reverse-accumulation"]) == "grading command"
    assert kind_of(["/v/bin/python", "-c", "import sys;exec(eval(sys.stdin.readline()))"]) == "pytest worker (xdist)"
    assert kind_of(["/v/bin/python", "-m", "autograder.demo", "--dir", "/tmp/pytest-of-root/x"]) == "other Python"
    assert kind_of(["/v/bin/python", "/v/bin/nbgrader", "submit", "01"]) == "nbgrader command"
    assert kind_of(["/usr/lib/chromium/chromium", "--type=renderer"]) == "browser"
    assert kind_of(["/usr/bin/redis-server", "--port", "1"]) == "other"
    assert kind_of([]) == "other"  # a process whose arguments could not be read


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_a_childs_cpu_is_counted_under_its_kind_and_the_total_adds_up():
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BURN.format(s=1.0)!r}])\n"
    returncode, wall, busy, by_kind = measure([sys.executable, "-c", child + BURN.format(s=0.5)], every_s=0.05)
    assert returncode == 0
    cpu, processes = by_kind["other Python"]
    assert processes == 2 and 1.4 <= cpu <= wall + 0.5, by_kind  # the child's second and the parent's half
    assert busy >= cpu - 0.1
    text = report(returncode, wall, busy, by_kind)
    assert "other Python" in text and "not sampled" in text

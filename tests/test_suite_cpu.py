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


def test_by_test_a_process_started_during_a_test_counts_under_its_file_and_so_do_its_children():
    grandchild = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BURN.format(s=0.6)!r}])\n"
    child = f"import os, subprocess, sys; subprocess.run([sys.executable, '-c', {grandchild!r}], env={{**os.environ}})"
    parent = (  # as pytest does: the variable set while a test runs, and seen by what it starts
        "import os, subprocess, sys\n"
        "os.environ['PYTEST_CURRENT_TEST'] = 'tests/test_x.py::test_y (call)'\n"
        f"subprocess.run([sys.executable, '-c', {child!r}])\n"
        "del os.environ['PYTEST_CURRENT_TEST']\n" + BURN.format(s=0.3)
    )
    outside = ["env", "-u", "PYTEST_CURRENT_TEST", sys.executable, "-c", parent]  # not this test's own variable
    returncode, _, _, by_test = measure(outside, every_s=0.05, by="test")
    assert returncode == 0
    cpu, processes = by_test["tests/test_x.py"]
    assert processes == 3 and cpu >= 0.5, by_test  # the child and the two under it, under the test's file
    assert by_test["other Python"][1] == 1 and by_test["other Python"][0] >= 0.25  # the parent: its own kind

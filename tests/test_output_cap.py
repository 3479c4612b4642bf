"""The kernel's cap on what one cell prints (autograder/probes/output_cap.py), in a real ipykernel: what the client
receives is cut at the limit, however it was written. The grading run of the hostile corpus checks the rest end to
end (x_huge_*: hundreds of megabytes printed in the sandbox end in "dropped", not in a MemoryError)."""

from __future__ import annotations

import os

import pytest
from jupyter_client.manager import start_new_kernel

from autograder.probes.kernel_fork import KERNEL_OPTIONS
from autograder.probes.output_cap import OUTPUT_LIMIT_VARIABLE

pytestmark = pytest.mark.grading

LIMIT = 10_000


@pytest.fixture(scope="module")
def kernel():
    """A kernel started with the grading kernels' options and the limit in its environment, as the grader does."""
    env = {**os.environ, OUTPUT_LIMIT_VARIABLE: str(LIMIT)}
    manager, client = start_new_kernel(kernel_name="python3", extra_arguments=KERNEL_OPTIONS, env=env)
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run(client, code: str) -> dict[str, str]:
    """The cell's stream output as the client received it, by stream name."""
    got: dict[str, str] = {}

    def keep(msg):
        if msg["msg_type"] == "stream":
            got[msg["content"]["name"]] = got.get(msg["content"]["name"], "") + msg["content"]["text"]
        if msg["msg_type"] == "error":
            raise AssertionError(f"the cell raised: {msg['content']['ename']}: {msg['content']['evalue']}")

    reply = client.execute_interactive(code, output_hook=keep, timeout=60)
    assert reply["content"]["status"] == "ok"
    return got


def test_printing_under_the_limit_arrives_whole(kernel):
    assert run(kernel, "print('a')\nprint('b' * 500)") == {"stdout": "a\n" + "b" * 500 + "\n"}


def test_many_prints_past_the_limit_arrive_cut_at_it(kernel):
    got = run(kernel, "for _ in range(50):\n    print('x' * 999)")
    assert got == {"stdout": ("x" * 999 + "\n") * 10}


def test_one_huge_write_is_cut_not_passed_on_whole(kernel):
    got = run(kernel, "import sys\nprint(sys.stdout.write('y' * 5_000_000))")
    assert got == {"stdout": "y" * LIMIT}  # the call's own result (5000000) is past the limit too


def test_stdout_and_stderr_share_one_budget_per_cell(kernel):
    got = run(kernel, "import sys\nprint('o' * 7_999)\nsys.stderr.write('e' * 8_000)")
    assert got == {"stdout": "o" * 7_999 + "\n", "stderr": "e" * 2_000}


def test_each_cell_has_its_own_budget(kernel):
    run(kernel, "print('z' * 50_000)")
    assert run(kernel, "print('fresh')") == {"stdout": "fresh\n"}


def test_a_write_that_is_not_text_still_raises_the_streams_own_error(kernel):
    got = run(kernel, "import sys\ntry:\n    sys.stdout.write(b'bytes')\nexcept TypeError:\n    print('TypeError')")
    assert got == {"stdout": "TypeError\n"}

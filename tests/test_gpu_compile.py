"""Every Triton kernel of the solutions, and every kernel the checks' tests give full marks, compiles for a GPU:
sm_75, sm_80 and sm_90, in each dtype the notebooks launch it with, ahead of time on this CPU-only machine
(Triton's compiler and the ptxas it ships; no driver, no device). The interpreter the course runs on forgives
what this compiler refuses; a kernel taught or accepted as right must be one a GPU takes."""

from __future__ import annotations

import ast
import json
import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the tests' kernels are interpreted

import pytest  # noqa: E402
import test_nb05_checks  # noqa: E402
import test_nb06_checks  # noqa: E402

from autograder.coursedir import SOLUTIONS  # noqa: E402
from autograder.judges.kernel_compile import pointer, screen  # noqa: E402
from coursetools.gpu_compile import CompileProcess, kernel_record, launch_signature  # noqa: E402

pytestmark = [pytest.mark.nb05, pytest.mark.nb06]
ARCHS = (75, 80, 90)
TRITON_GLOBALS = {
    "tl": {"kind": "module", "value": "triton.language"},
    "triton": {"kind": "module", "value": "triton"},
    "math": {"kind": "module", "value": "math"},
}

# (pointer dtypes per launch, other positional types, the block constexpr): as the notebooks and checks launch them
ELEMENTWISE = ([(d, d) for d in ("float64", "float32", "bfloat16")], ["i32"], "BLOCK_SIZE")
LAUNCHES = {
    "square_kernel": ELEMENTWISE,
    "silu_forward_kernel": ELEMENTWISE,
    "silu_backward_kernel": ([(d, d, d) for d in ("float64", "float32", "bfloat16")], ["i32"], "BLOCK_SIZE"),
    "square_rows_kernel": ([("float32", "float32")], ["i32"] * 5, "BLOCK_SIZE"),
    "to_bfloat16_kernel": ([("float32", "bfloat16")], ["i32"], "BLOCK"),
    "row_max_kernel": ([(d, d) for d in ("float64", "float32")], ["i32", "i32"], "BLOCK_V"),
    "row_lse_kernel": ([(d, d) for d in ("float64", "float32")], ["i32", "i32"], "BLOCK_V"),
    "ce_forward_kernel": (
        [(d, "int64", d, d) for d in ("float64", "float32")] + [("bfloat16", "int64", "float32", "float32")],
        ["i32", "i32", "i32"],
        "BLOCK_V",
    ),
    "ce_backward_kernel": (
        [(d, "int64", d, d) for d in ("float64", "float32")] + [("bfloat16", "int64", "float32", "bfloat16")],
        ["i32", "i32", "i32", "fp32"],
        "BLOCK_V",
    ),
}


def solution_kernels() -> dict[str, dict]:
    """name -> record of each @triton.jit function the solution notebooks define, read from their cells' source
    (nothing is executed): Triton's own modules as its globals."""
    records = {}
    for path in sorted(SOLUTIONS.glob("0[56]-*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            for node in ast.parse(source).body:
                if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
                    text = ast.get_source_segment(source, node)
                    assert text is not None
                    records[node.name] = {"entry": node.name, "functions": {node.name: text}, "globals": TRITON_GLOBALS}
    return records


SOLUTION_KERNELS = solution_kernels()

# the kernels the checks' tests give full marks (their own kinds of launch)
RIGHT_IN_TESTS = {
    "row_lse": [test_nb06_checks.right, test_nb06_checks.reads_the_next_row_into_nothing],
    "ce_forward": [test_nb06_checks.forward_right],
    "ce_backward": [test_nb06_checks.backward_right],
    "silu_forward": [test_nb05_checks.silu_forward_kernel, test_nb05_checks.silu_forward_with_exp],
    "silu_backward": [test_nb05_checks.silu_backward_kernel],
}
TEST_LAUNCHES = {
    "row_lse": LAUNCHES["row_lse_kernel"],
    "ce_forward": (LAUNCHES["ce_forward_kernel"][0][:2], *LAUNCHES["ce_forward_kernel"][1:]),
    "ce_backward": (LAUNCHES["ce_backward_kernel"][0][:2], *LAUNCHES["ce_backward_kernel"][1:]),
    "silu_forward": (ELEMENTWISE[0][:2], *ELEMENTWISE[1:]),
    "silu_backward": (LAUNCHES["silu_backward_kernel"][0][:2], *LAUNCHES["silu_backward_kernel"][1:]),
}


@pytest.fixture(scope="module")
def compiler():
    with CompileProcess(timeout_s=120) as process:
        yield process


def compile_everywhere(compiler, record: dict, launches: tuple) -> list[str]:
    """The compile errors of the record on every arch and dtype of its launches."""
    assert screen(record) is None, screen(record)
    dtypes, others, block = launches
    errors = []
    for pointers in dtypes:
        signature, constexprs = launch_signature(record, [pointer(d) for d in pointers] + others, {block: 16})
        for arch in ARCHS:
            answer = compiler.ask(record, signature, constexprs, arch)
            if not answer["ok"]:
                errors.append(f"{record['entry']} sm_{arch} {pointers}: line {answer.get('line')}: {answer['why']}")
    return errors


def test_every_kernel_of_the_solutions_is_launched_here():
    assert set(SOLUTION_KERNELS) == set(LAUNCHES), "a new kernel in a solution needs its launches in LAUNCHES"


@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_the_solutions_kernels_compile_for_every_gpu(compiler, name):
    assert compile_everywhere(compiler, SOLUTION_KERNELS[name], LAUNCHES[name]) == []


@pytest.mark.parametrize("kind", sorted(RIGHT_IN_TESTS))
def test_the_kernels_the_tests_call_right_compile_for_every_gpu(compiler, kind):
    errors = [
        e for k in RIGHT_IN_TESTS[kind] for e in compile_everywhere(compiler, kernel_record(k), TEST_LAUNCHES[kind])
    ]
    assert errors == []


def test_a_compile_error_is_reported_with_its_line_and_reason(compiler):
    record = kernel_record(test_nb06_checks.untyped_accumulators)
    errors = compile_everywhere(compiler, record, TEST_LAUNCHES["row_lse"])
    assert errors and all("Loop-carried variable m" in e and "line 5" in e for e in errors), errors
    assert not any("float32" in e for e in errors), "float32 rows keep a Python float's type: they compile"


def test_what_the_compiler_reports_for_a_kernel_that_compiles(compiler):
    record = SOLUTION_KERNELS["silu_forward_kernel"]
    signature, constexprs = launch_signature(record, ["*fp32", "*fp32", "i32"], {"BLOCK_SIZE": 1024})
    answer = compiler.ask(record, signature, constexprs, 90)
    assert answer["ok"] and answer["registers"] > 0 and answer["ptx_chars"] > 1000, answer
    assert "registers" in answer["ptxas"] and answer["spill_bytes"] >= 0

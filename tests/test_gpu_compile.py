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


# ---------------------------------------------- the compile part as a protection: attacks, honest answers
from autograder.judges import kernel_compile  # noqa: E402
from autograder.judges.verdict import Part  # noqa: E402

ELEMENTWISE_LAUNCH = [("float32", "float64")]
HONEST_GLOBALS = {"tl": {"kind": "module", "value": "triton.language"}}


def record_of(source: str, extra_globals: dict | None = None, helpers: dict | None = None) -> dict:
    name = source.split("def ", 1)[1].split("(", 1)[0]
    return {
        "entry": name,
        "functions": {name: source.strip() + "\n", **(helpers or {})},
        "globals": {**HONEST_GLOBALS, **(extra_globals or {})},
    }


def compile_part_of(record: dict) -> Part:
    """The compile part as a judge leaves it, for an elementwise kernel launched (x, y, n, BLOCK_SIZE=16) in
    float32 and float64, whose interpreter part passed."""
    part = kernel_compile.compile_part()
    launches = [
        (dtype, *launch_signature(record, [pointer(dtype)] * 2 + ["i32"], {"BLOCK_SIZE": 16}))
        for dtype in ("float32", "float64")
    ]
    kernel_compile.judge_compiles(part, record, launches, others=[Part("values")])
    return part


BODY = """
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(y_ptr + offsets, x * 2, mask=offsets < n)
"""
PLAIN = "def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):" + BODY


@pytest.mark.parametrize(
    "source",
    [
        PLAIN,
        '''def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    """A docstring, a constexpr default below, a helper, a constexpr global."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(y_ptr + offsets, twice(x) * SCALE, mask=offsets < n)''',
        "def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr, UNUSED: tl.constexpr = 4):" + BODY,
    ],
    ids=["plain", "helper and constexpr global", "a constexpr default"],
)
def test_honest_kernels_written_differently_compile(source):
    helpers = {"twice": "def twice(v):\n    return v + v\n"}
    record = record_of(source, {"SCALE": {"kind": "constexpr", "value": 0.5}}, helpers)
    part = compile_part_of(record)
    assert part.passed is True, part.messages


def test_patching_triton_in_the_learners_process_changes_nothing(monkeypatch):
    """The compile runs in a process of its own: a notebook that replaces Triton's compiler fools only itself."""
    import triton
    import triton.compiler

    monkeypatch.setattr(triton, "compile", lambda *a, **k: "compiled, honestly")
    monkeypatch.setattr(triton.compiler, "compile", lambda *a, **k: "compiled, honestly")
    record = kernel_record(test_nb06_checks.untyped_accumulators)
    part = kernel_compile.compile_part()
    signature, constexprs = launch_signature(record, ["*fp64", "*fp64", "i32", "i32"], {"BLOCK_V": 16})
    kernel_compile._answers.clear()
    kernel_compile.judge_compiles(part, record, [("float64", signature, constexprs)], others=[Part("values")])
    assert part.passed is False and "Loop-carried variable m" in part.messages[0], part.messages


@pytest.mark.parametrize(
    ("source", "extra", "said"),
    [
        (
            "def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr = __import__('os').system('touch {mark}')):" + BODY,
            {},
            "default value",
        ),
        ("def double(x_ptr, y_ptr, n, BLOCK_SIZE: __import__('os').system('touch {mark}')):" + BODY, {}, "annotation"),
        (PLAIN.replace("x * 2", "x * getattr(tl, 'float32').primitive_bitwidth"), {}, "calls `getattr`"),
        (PLAIN.replace("x * 2", "x * tl.__dict__['core']"), {}, "reads the attribute `__dict__`"),
        (PLAIN.replace("x * 2", "x * os.getpid()"), {"os": {"kind": "module", "value": "os"}}, "module `os`"),
        (
            PLAIN.replace("x * 2", "x * triton.runtime.driver.active"),
            {"triton": {"kind": "module", "value": "triton"}},
            "reaches the module `triton.runtime",
        ),
        (PLAIN.replace("    offsets", "    import os\n    offsets", 1), {}, "holds a import"),
    ],
    ids=["code in a default", "code in an annotation", "getattr", "dunder", "os module", "triton.runtime", "import"],
)
def test_code_that_would_run_in_the_graders_compile_is_refused_before_it_runs(source, extra, said, tmp_path):
    mark = tmp_path / "ran"
    record = record_of(source.replace("{mark}", str(mark)), extra)
    part = compile_part_of(record)
    assert part.passed is False and said in part.messages[0], part.messages
    assert not mark.exists(), "the learner's code ran in the grader's process"


def test_a_kernel_the_compiler_cannot_finish_fails_the_part_and_is_not_left_unscored(monkeypatch):
    """Unscored is for the grader's own failures; a compile that hangs is the kernel's (an unrolled bomb placed
    before a real compile error would otherwise hide the error)."""
    monkeypatch.setattr(kernel_compile, "COMPILE_TIMEOUT_S", 3.0)
    monkeypatch.setattr(kernel_compile, "_process", None)
    bomb = PLAIN.replace("    offsets", "    for i in tl.static_range(200000):\n        n = n + 1\n    offsets", 1)
    part = compile_part_of(record_of(bomb))
    assert part.passed is False and "did not finish" in part.messages[0], part.messages
    assert any("static_range" in h for h in part.hints)
    monkeypatch.setattr(kernel_compile, "_process", None)  # the next test starts a fresh compile process


def test_a_compile_process_that_cannot_start_leaves_the_part_unscored(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no processes left")

    monkeypatch.setattr(kernel_compile, "CompileProcess", refuse)
    monkeypatch.setattr(kernel_compile, "_process", None)
    monkeypatch.setattr(kernel_compile, "_answers", {})
    part = compile_part_of(record_of(PLAIN))
    assert part.passed is None and "could not run here" in part.messages[0], part.messages

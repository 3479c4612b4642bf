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
from autograder.judges.kernel_compile import pointer  # noqa: E402
from coursetools.gpu_compile import CompileProcess, kernel_record, launch_signature  # noqa: E402
from coursetools.kernel_screen import screen  # noqa: E402

pytestmark = [pytest.mark.nb05, pytest.mark.nb06]
ARCHS = (75, 80, 90)
# sm_90, the GPU the grader compiles for, in `make test-fast` too; the two older ones in `make test` only
EVERY_ARCH = [pytest.param(arch, marks=[] if arch == 90 else [pytest.mark.slow]) for arch in ARCHS]
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
    "add_in_bfloat16_kernel": ([("bfloat16",) * 4], [], "BLOCK"),
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
    # (a catalogued answer is its record already: its reads outside reach no result, so the values are right)
    "row_lse": [
        kernel_record(test_nb06_checks.right),
        test_nb06_checks.catalogued_record("row_lse_reads_the_next_row_into_nothing")[1],
    ],
    "ce_forward": [kernel_record(test_nb06_checks.forward_right)],
    "ce_backward": [kernel_record(test_nb06_checks.backward_right)],
    "silu_forward": [
        kernel_record(k) for k in (test_nb05_checks.silu_forward_kernel, test_nb05_checks.silu_forward_with_exp)
    ],
    "silu_backward": [kernel_record(test_nb05_checks.silu_backward_kernel)],
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


def compile_everywhere(compiler, record: dict, launches: tuple, archs=ARCHS) -> list[str]:
    """The compile errors of the record on these archs, in every dtype of its launches."""
    assert screen(record) is None, screen(record)
    dtypes, others, block = launches
    errors = []
    for pointers in dtypes:
        signature, constexprs = launch_signature(record, [pointer(d) for d in pointers] + others, {block: 16})
        for arch in archs:
            answer = compiler.ask(record, signature, constexprs, arch)
            if not answer["ok"]:
                errors.append(f"{record['entry']} sm_{arch} {pointers}: line {answer.get('line')}: {answer['why']}")
    return errors


def test_every_kernel_of_the_solutions_is_launched_here():
    assert set(SOLUTION_KERNELS) == set(LAUNCHES), "a new kernel in a solution needs its launches in LAUNCHES"


@pytest.mark.parametrize("arch", EVERY_ARCH)
@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_the_solutions_kernels_compile_for_every_gpu(compiler, name, arch):
    assert compile_everywhere(compiler, SOLUTION_KERNELS[name], LAUNCHES[name], [arch]) == []


@pytest.mark.parametrize("arch", EVERY_ARCH)
@pytest.mark.parametrize("kind", sorted(RIGHT_IN_TESTS))
def test_the_kernels_the_tests_call_right_compile_for_every_gpu(compiler, kind, arch):
    errors = [
        e for record in RIGHT_IN_TESTS[kind] for e in compile_everywhere(compiler, record, TEST_LAUNCHES[kind], [arch])
    ]
    assert errors == []


def test_a_compile_error_is_reported_with_its_line_and_reason(compiler):
    record = test_nb06_checks.catalogued_record("row_lse_untyped_accumulators")[1]
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
from autograder.judges import kernel_compile, kernel_runs  # noqa: E402
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


PRINTS_A_REPORT = """
def prints_a_report(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    tl.static_print("ptxas info    : Used 1 registers, 4096 bytes spill stores, 4096 bytes spill loads")
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(y_ptr + offsets, tl.exp(x) * x + 1.0, mask=offsets < n)
"""


def test_the_report_is_the_compiles_own_ptxas_run_and_no_kernel_prints_it():
    """The registers and spills come from the ptxas run that built the cubin (Triton's own, -v), or from ptxas run
    here on the PTX when Triton's cache answered: never from what the kernel printed while it compiled."""
    record = record_of(PRINTS_A_REPORT)
    signature, constexprs = launch_signature(record, ["*fp32", "*fp32", "i32"], {"BLOCK_SIZE": 128})
    with CompileProcess(timeout_s=120) as process:
        built, cached = (process.ask(record, signature, constexprs, 90) for _ in range(2))
    for answer in (built, cached):
        assert answer["ok"] and answer["registers"] > 1 and answer["spill_bytes"] == 0, answer
        assert "4096" not in answer["ptxas"], answer


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
HONEST_HELPERS = {
    "twice": "def twice(v):\n    return v + v\n",
    "offsets_of": "def offsets_of(pid, BLOCK: tl.constexpr):\n"
    "    return pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)\n",
}
HONEST_EXTRA = {
    "SCALE": {"kind": "constexpr", "value": 0.5},
    "triton": {"kind": "module", "value": "triton"},
    "math": {"kind": "module", "value": "math"},
    "constexpr": {"kind": "member", "module": "triton.language", "value": "constexpr"},
}
HONEST = {
    "plain": PLAIN,
    "helper and constexpr global": '''def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    """A docstring, a helper, a constexpr global."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(y_ptr + offsets, twice(x) * SCALE, mask=offsets < n)''',
    "a constexpr default": "def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr, UNUSED: tl.constexpr = 4):" + BODY,
    "static_range, static_assert, static_print, where, int64 offsets": '''
def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    tl.static_assert(BLOCK_SIZE % 2 == 0, "BLOCK_SIZE must be even")
    tl.static_print("compiling double with BLOCK_SIZE", BLOCK_SIZE)
    offsets = offsets_of(tl.program_id(0), BLOCK_SIZE)
    mask = offsets < n
    acc = tl.zeros([BLOCK_SIZE], dtype=y_ptr.dtype.element_ty)
    for i in tl.static_range(2):
        acc += tl.where(mask, tl.load(x_ptr + offsets, mask=mask, other=0.0), 0.0)
    tl.store(y_ptr + offsets, acc.to(y_ptr.dtype.element_ty), mask=mask)''',
    "math, triton.cdiv, tl.math, float('-inf'), a constexpr imported by name": '''
def double(x_ptr, y_ptr, n, BLOCK_SIZE: constexpr):
    pid = tl.program_id(0)
    blocks = triton.cdiv(BLOCK_SIZE * 4, BLOCK_SIZE)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=float("-inf"))
    y = tl.math.exp2(tl.math.log2(tl.maximum(x, 0.0) + 1.0)) - 1.0 + 0.0 * math.pi * blocks
    tl.store(y_ptr + offsets, 2.0 * tl.where(x == -float("inf"), 0.0, y) + x - x, mask=offsets < n)''',
}


@pytest.mark.parametrize("source", list(HONEST.values()), ids=list(HONEST))
def test_honest_kernels_written_differently_pass_the_screen_and_compile(source):
    record = record_of(source, HONEST_EXTRA, HONEST_HELPERS)
    assert screen(record) is None, screen(record)
    part = compile_part_of(record)
    assert part.passed is True, part.messages


def compile_launched_with(record: dict, n: int) -> Part:
    """The compile part for launches (x, y, n, BLOCK_SIZE=16) with this n_elements, in float32 and float64."""
    part = kernel_compile.compile_part()
    launches = [
        (dtype, *launch_signature(record, [pointer(dtype)] * 2 + [n], {"BLOCK_SIZE": 16}))
        for dtype in ("float32", "float64")
    ]
    kernel_compile.judge_compiles(part, record, launches, others=[Part("values")])
    return part


def test_the_compile_specializes_the_launch_as_triton_does():
    """Issue 48: the judge compiles what a real launch compiles, by Triton's own launch binder. A parameter annotated
    `tl.constexpr` that the check passes positionally (`n: tl.constexpr`, legal) is a constant of the launch's value
    (it lost its compile part: compiled as an i32); an integer argument equal to 1 is the constant 1, so that
    `n.to(tl.int64)` fails for a launch with n_elements 1 as it does on a GPU (it kept its part)."""
    constant_n = record_of("def double(x_ptr, y_ptr, n: tl.constexpr, BLOCK_SIZE: tl.constexpr):" + BODY)
    for n in (1, 7, 64):
        part = compile_launched_with(constant_n, n)
        assert part.passed is True, (n, part.messages)
    widened = record_of(PLAIN.replace("mask=offsets < n)", "mask=offsets < n.to(tl.int64))"))
    assert compile_launched_with(widened, 37).passed is True
    assert compile_launched_with(widened, 32).passed is True
    part = compile_launched_with(widened, 1)
    assert part.passed is False and "line 3 of `double`" in part.messages[0], part.messages


NUMBERS = [0, 1, 2, 3, 15, 16, 17, 48, -1, -16, -17, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 16, -(2**31), -(2**31) - 1]
NUMBERS += [-(2**31) - 16, 2**40, 2**40 + 1, 2**63 - 16, 2**63 - 1, -(2**63), 2**63, 2**63 + 16, 2**63 + 5, 2**64 - 16]


@pytest.mark.parametrize("number", NUMBERS + [0.0, 0.25, 1.0, -3.5, 1e30, True, False])
def test_numbers_of_one_specialization_class_are_specialized_alike_by_triton(number):
    """The judge compiles one launch per class of numbers (kernel_runs.same_specialization): Triton's own launch
    binder must specialize a number and the one that stands for its class alike, or a compile would be skipped
    that a real launch makes."""
    from triton.backends.compiler import GPUTarget

    from coursetools.gpu_compile import specialization_class, specialize
    from coursetools.kernel_text import rebuild

    kernel = rebuild(record_of("def scaled(x_ptr, n, s, BLOCK_SIZE: tl.constexpr):" + BODY), interpreted=False)
    target = GPUTarget("cuda", 90, 32)

    def binder(value):
        return specialize(kernel, {"x_ptr": "*fp32", "n": value, "s": value}, {"BLOCK_SIZE": 16}, target)

    stand_in = specialization_class(number)
    assert binder(stand_in) == binder(number), (number, stand_in)
    assert specialization_class(stand_in) == stand_in


def test_launches_triton_specializes_alike_are_compiled_once(monkeypatch):
    """Two checks of one kernel on other sizes of the same classes ask the compiler nothing the second time; a size
    of another class (1, a multiple of 16) is a compile of its own."""
    asked: list[list] = []

    class Counting(kernel_runs.LocalRunner):
        def compile(self, record, launches, arch):
            asked.append([signature["n"] for signature, _ in launches])
            return super().compile(record, launches, arch)

    monkeypatch.setattr(kernel_runs, "_local", Counting())
    monkeypatch.setattr(kernel_runs, "_compiled", {})
    record = record_of(PLAIN)
    for n in (37, 300, 183):
        assert compile_launched_with(record, n).passed is True
    assert compile_launched_with(record, 64).passed is True
    assert asked == [[3, 3], [16, 16]], asked  # float32 and float64, each class once
    widened = record_of(PLAIN.replace("mask=offsets < n)", "mask=offsets < n.to(tl.int64))"))
    part = compile_launched_with(widened, 1)
    assert part.passed is False and "line 3 of `double`" in part.messages[0], part.messages
    assert asked[-1] == [1, 1], "one request: the compile stops at its first failure"
    assert compile_launched_with(widened, 1).passed is False and len(asked) == 3, "a failure is kept too"


def test_an_answer_forged_in_one_submissions_compile_reaches_no_other_text_or_launch_class(monkeypatch):
    """Answers are kept per text and launch class. A submission whose compile child answered "compiles" for a kernel
    that does not (a forged answer) passes nothing of another submission: another text with the same mistake, or the
    same text launched in another class, is compiled afresh and fails."""
    monkeypatch.setattr(kernel_runs, "_compiled", {})
    monkeypatch.setattr(kernel_runs, "_local", kernel_runs.LocalRunner())

    class Forging:  # the first submission's runner, its child answering whatever the submission wants
        def compile(self, record, launches, arch):
            return [{"ok": True, "registers": 1} for _ in launches]

    widened = PLAIN.replace("mask=offsets < n)", "mask=offsets < n.to(tl.int64))")
    with kernel_runs.using(Forging()):
        assert compile_launched_with(record_of(widened), 1).passed is True  # its own answer, for itself only
    renamed = record_of(widened.replace("    x = tl.load", "    # mine\n    x = tl.load"))
    part = compile_launched_with(renamed, 1)
    assert part.passed is False and "of `double`" in part.messages[0], part.messages
    assert compile_launched_with(record_of(widened), 37).passed is True  # honest: another class compiles afresh
    # kept: the forged pair, the renamed text's float32 failure (its compile stops there), the pair for n = 37
    assert len(kernel_runs._compiled) == 5, list(kernel_runs._compiled.values())


def test_patching_triton_in_the_learners_process_changes_nothing(monkeypatch):
    """The compile runs in a process of its own: a notebook that replaces Triton's compiler fools only itself."""
    import triton
    import triton.compiler

    monkeypatch.setattr(triton, "compile", lambda *a, **k: "compiled, honestly")
    monkeypatch.setattr(triton.compiler, "compile", lambda *a, **k: "compiled, honestly")
    monkeypatch.setattr(kernel_runs, "_compiled", {})
    record = test_nb06_checks.catalogued_record("row_lse_untyped_accumulators")[1]
    part = kernel_compile.compile_part()
    signature, constexprs = launch_signature(record, ["*fp64", "*fp64", "i32", "i32"], {"BLOCK_V": 16})
    kernel_compile.judge_compiles(part, record, [("float64", signature, constexprs)], others=[Part("values")])
    assert part.passed is False and "Loop-carried variable m" in part.messages[0], part.messages


RUN = "__import__('os').system('touch {mark}')"
IN_BRANCH = (
    "    if n < 0:\n        {code}\n    offsets"  # a branch the kernel never takes: the code generator visits it
)
ATTACKS = {
    # (source, extra globals, what the refusal names)
    "code in a default": (f"def double(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr = {RUN}):" + BODY, {}, "default"),
    "code in an annotation": (f"def double(x_ptr, y_ptr, n, BLOCK_SIZE: {RUN}):" + BODY, {}, "annotation"),
    "getattr": (PLAIN.replace("x * 2", "x * getattr(tl, 'float32').primitive_bitwidth"), {}, "`getattr`"),
    "a dunder": (PLAIN.replace("x * 2", "x * tl.__dict__['core']"), {}, "`__dict__`"),
    "the os module": (PLAIN.replace("x * 2", "x * os.getpid()"), {"os": {"kind": "module", "value": "os"}}, "`os`"),
    "triton.runtime": (
        PLAIN.replace("x * 2", "x * triton.runtime.driver.active"),
        {"triton": {"kind": "module", "value": "triton"}},
        "triton.runtime.driver.active",
    ),
    "an import": (PLAIN.replace("    offsets", "    import os\n    offsets", 1), {}, "an import"),
    # the route: a module reached through an expression the screen did not follow, in a branch never taken
    "(tl if 1 else tl).core.builtins.exec": (
        PLAIN.replace("    offsets", IN_BRANCH.format(code=f"(tl if 1 else tl).core.builtins.exec(\"{RUN}\")"), 1),
        {},
        "`tl` as a value",
    ),
    "a module in a local": (
        PLAIN.replace("    offsets", IN_BRANCH.format(code="m = tl\n        m.core.builtins.exec(0)"), 1),
        {},
        "`tl` as a value",
    ),
    "tl.core": (PLAIN.replace("    offsets", IN_BRANCH.format(code="tl.core.builtins.exec(0)"), 1), {}, "tl.core"),
    "a Triton function's own scope": (
        PLAIN.replace("    offsets", IN_BRANCH.format(code="tl.sigmoid.get_capture_scope()"), 1),
        {},
        "tl.sigmoid.get_capture_scope",
    ),
    "a JIT function's Python function": (
        PLAIN.replace("    offsets", IN_BRANCH.format(code="f = tl.sigmoid\n        f.fn(1)"), 1),
        {},
        "`.fn`",
    ),
    "a tensor's compiler handle": (PLAIN.replace("x * 2", "x.handle.get_context()"), {}, "`.handle`"),
    "a string built for exec": (
        PLAIN.replace("    offsets", IN_BRANCH.format(code="s = 'print(1)'"), 1),
        {},
        "a string",
    ),
    "a def inside a string": (
        PLAIN.replace(
            "    offsets", '    s = """\ndef double(x_ptr, y_ptr, n, BLOCK_SIZE):\n    pass\n"""\n    offsets', 1
        ),
        {},
        "second line that starts with `def`",
    ),
    "a module posing as triton.language": (
        PLAIN.replace("x * 2", "fake.sigmoid(x)"),
        {"fake": {"kind": "object", "value": "a module that calls itself 'triton.language' and is not it"}},
        "is not it",
    ),
    "a lambda": (PLAIN.replace("x * 2", "(lambda v: v)(x)"), {}, "a lambda"),
    "a comprehension": (PLAIN.replace("x * 2", "x * len([i for i in range(2)])"), {}, "a comprehension"),
    "a walrus": (PLAIN.replace("x * 2", "(z := x)"), {}, "walrus"),
    "a starred call": (PLAIN.replace("x * 2", "tl.maximum(*(x, x))"), {}, "starred"),
    "an f-string message": (
        PLAIN.replace("    offsets", "    tl.static_print(f'{n}')\n    offsets", 1),
        {},
        "formatted",
    ),
}


@pytest.mark.parametrize(("source", "extra", "said"), list(ATTACKS.values()), ids=list(ATTACKS))
def test_code_that_would_run_in_the_compile_is_refused_before_it_runs(source, extra, said, tmp_path):
    mark = tmp_path / "ran"
    record = record_of(source.replace("{mark}", str(mark)), extra)
    part = compile_part_of(record)
    assert part.passed is False and said in part.messages[0], part.messages
    assert not mark.exists(), "the learner's code ran in a compile process"


def test_a_kernel_the_compiler_cannot_finish_fails_the_part_and_is_not_left_unscored(monkeypatch):
    """Unscored is for the grader's own failures; a compile that hangs is the kernel's (an unrolled bomb placed
    before a real compile error would otherwise hide the error)."""
    monkeypatch.setattr(kernel_runs, "COMPILE_TIMEOUT_S", 3.0)
    monkeypatch.setattr(kernel_runs, "_local", kernel_runs.LocalRunner())
    bomb = PLAIN.replace("    offsets", "    for i in tl.static_range(200000):\n        n = n + 1\n    offsets", 1)
    part = compile_part_of(record_of(bomb))
    assert part.passed is False and "did not finish" in part.messages[0], part.messages
    assert any("static_range" in h for h in part.hints)


def test_a_compile_process_that_cannot_start_leaves_the_part_unscored(monkeypatch):
    import coursetools.gpu_compile

    def refuse(*args, **kwargs):
        raise OSError("no processes left")

    monkeypatch.setattr(coursetools.gpu_compile, "CompileProcess", refuse)
    monkeypatch.setattr(kernel_runs, "_local", kernel_runs.LocalRunner())
    monkeypatch.setattr(kernel_runs, "_compiled", {})
    part = compile_part_of(record_of(PLAIN))
    assert part.passed is None and "could not run here" in part.messages[0], part.messages


LONG_REASON = "error: <script>alert(1)</script>\x1b[31m\r\n" + "x" * 5000
FORGED_ANSWERS = {
    # what a compile answer could hold if its process were the learner's: each is failed or unscored, never passed
    "a long reason with markup and control characters": ([{"ok": False, "line": 3, "why": LONG_REASON}] * 2, False),
    "a line that is not a number": ([{"ok": False, "line": "3; see /etc/passwd", "why": "bad"}] * 2, False),
    "ok as a string": ([{"ok": "true", "why": "fine"}] * 2, False),
    "ok as a number": ([{"ok": 1}] * 2, False),
    "a reason that is not text": ([{"ok": False, "why": {"nested": ["x"] * 100}}] * 2, False),
    "an answer that is not a dict": (["ok"] * 2, None),
    "one answer for two launches": ([{"ok": True}], None),
    "no answer at all": ([], None),
}


@pytest.mark.parametrize(("answers", "passed"), list(FORGED_ANSWERS.values()), ids=list(FORGED_ANSWERS))
def test_a_forged_compile_answer_never_passes_and_its_text_is_bounded_and_plain(answers, passed, monkeypatch):
    """The compile answer is data the judge validates (issue 47): whatever it holds, the part never passes on it,
    and what reaches the learner's feedback is at most MAX_REASON_CHARS of printable text."""
    monkeypatch.setattr(kernel_runs, "compile", lambda record, launches: list(answers))
    part = compile_part_of(record_of(PLAIN))
    assert part.passed is passed, part.messages
    for message in part.messages:
        assert all(c.isprintable() for c in message), message
        assert len(message) < kernel_compile.MAX_REASON_CHARS + 200, len(message)

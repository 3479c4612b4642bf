"""Hostile answers to notebooks 05 (and 04): routes a learner might take to marks without the work, each with
what the grader must do, and honest answers written differently that must keep full marks.

Unit tests call the checks as a notebook does (probe, then judge); the slow ones grade real submissions with
the grading command, so that the kernel's watch and the screening take part too."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: kernels defined here are interpreted

import pytest  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from test_nb05_checks import fn, run  # noqa: E402  (the notebook's own test helpers: Function from two functions)

from autograder import nb05  # noqa: E402
from autograder.feedback import CheckFailed  # noqa: E402

pytestmark = pytest.mark.nb05


# =========================================================================== TritonSiLU must launch Triton kernels


@triton.jit
def _silu_forward(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    xc = x.to(tl.float64)  # written differently from the solution: always in float64
    tl.store(y_ptr + offsets, (xc / (1 + tl.exp(-xc))).to(x.dtype), mask=mask)


@triton.jit
def _silu_backward(x_ptr, grad_out_ptr, grad_in_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float64)
    g = tl.load(grad_out_ptr + offsets, mask=mask).to(tl.float64)
    s = 1 / (1 + tl.exp(-x))
    tl.store(grad_in_ptr + offsets, (g * (s + x * s * (1 - s))).to(grad_in_ptr.dtype.element_ty), mask=mask)


def _torch_forward(ctx, x):  # PyTorch operations where the kernels should be
    ctx.save_for_backward(x)
    return torch.nn.functional.silu(x)


def _torch_backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g * torch.special.expit(x) * (1 + x * torch.special.expit(-x))


def _kernel_forward(ctx, x):
    x = x.contiguous()
    y = torch.empty_like(x)
    _silu_forward[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK_SIZE=64)
    ctx.save_for_backward(x)
    return y.view(x.shape)


def _kernel_backward(ctx, g):
    (x,) = ctx.saved_tensors
    g = g.contiguous()
    out = torch.empty_like(x)
    _silu_backward[(triton.cdiv(x.numel(), 64),)](x, g, out, x.numel(), BLOCK_SIZE=64)
    return out


TRITON_PARAMS = dict(activation="silu", triton=True, points=4, seed=0, cases=2)


def test_a_triton_function_made_of_torch_operations_scores_nothing():
    """The Triton exercise answered with PyTorch operations computes the right numbers, but launches no kernel:
    it scored full marks before (4/4); now 0 with a message that says why."""
    verdict, message = run(
        nb05.check_triton_function, fn("TritonSiLU", _torch_forward, _torch_backward), **TRITON_PARAMS
    )
    assert verdict is None and "forward and backward handed back no tensor a Triton kernel wrote" in message, message


@pytest.mark.parametrize(
    "forward, backward, which",
    [
        (_kernel_forward, _torch_backward, "backward handed back"),
        (_torch_forward, _kernel_backward, "forward handed back"),
    ],
)
def test_half_a_triton_function_scores_nothing(forward, backward, which):
    verdict, message = run(nb05.check_triton_function, fn("TritonSiLU", forward, backward), **TRITON_PARAMS)
    assert verdict is None and f"TritonSiLU's {which} no tensor a Triton kernel wrote" in message, message


def test_a_triton_function_written_differently_keeps_full_marks():
    """Honest control: other kernels (float64 inside, another block size), a view returned: full marks."""
    verdict, message = run(
        nb05.check_triton_function, fn("TritonSiLU", _kernel_forward, _kernel_backward), **TRITON_PARAMS
    )
    assert verdict is not None and float(verdict) == 4, message


# ======================================================================= memory kept out of sight of saved-tensor hooks


def _silu_forward_keeps_sigmoid(ctx, x):  # saves x, and keeps σ(x) as an attribute: two tensors, one visible
    ctx.save_for_backward(x)
    ctx.s = torch.sigmoid(x)
    return x * ctx.s


def _silu_backward_from_sigmoid(ctx, g):
    (x,) = ctx.saved_tensors
    return g * ctx.s * (1 + x * (1 - ctx.s))


def _silu_forward_tidy(ctx, x):  # honest: a non-tensor attribute, and x both saved and named
    ctx.save_for_backward(x)
    ctx.x, ctx.shape = x, x.shape
    return torch.nn.functional.silu(x)


def _silu_backward_tidy(ctx, g):
    (x,) = ctx.saved_tensors
    s = torch.special.expit(x)
    return g * (s + x * s * (1 - s))


FUSED_PARAMS = dict(activation="silu", points=3, seed=0, cases=2)


def test_a_tensor_kept_as_an_attribute_of_ctx_costs_the_memory_part():
    """Before: full marks (3/3), the memory part blind to ctx.s. Now the memory part fails and says where."""
    verdict, report = run(
        nb05.check_fused_activation,
        fn("FusedSiLU", _silu_forward_keeps_sigmoid, _silu_backward_from_sigmoid),
        **FUSED_PARAMS,
    )
    memory = next(p for p in verdict.parts if p.name == "memory")
    assert memory.passed is False and "attributes of ctx (ctx.s)" in report, report
    assert [p.name for p in verdict.parts if p.passed is False] == ["memory"]


def test_non_tensor_attributes_and_a_saved_tensor_named_twice_keep_full_marks():
    verdict, report = run(
        nb05.check_fused_activation, fn("FusedSiLU", _silu_forward_tidy, _silu_backward_tidy), **FUSED_PARAMS
    )
    assert verdict is not None and float(verdict) == 3, report


def _ckpt_forward_keeps_graph(ctx, f, x):  # keeps the whole graph, under hooks of its own, and calls f again in
    ctx.f = f  # backward only to look like a recomputation
    ctx.save_for_backward(x)
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        xr = x.detach().requires_grad_(True)
        ctx.keep = (xr, f(xr))
    return ctx.keep[1].detach()


def _ckpt_backward_uses_graph(ctx, g):
    ctx.f(ctx.saved_tensors[0])
    xr, y = ctx.keep
    return None, torch.autograd.grad(y, xr, g)[0]


def test_a_checkpoint_that_keeps_its_graph_behind_its_own_hooks_loses_the_memory_part():
    """Before: full marks (3/3): its own saved-tensor hooks hid the graph from the probe's. Now ctx.keep is seen."""
    verdict, report = run(
        nb05.check_recompute,
        fn("Checkpoint", _ckpt_forward_keeps_graph, _ckpt_backward_uses_graph),
        problems=["gelu_chain", "sin_exp"],
        seed=0,
        points=3,
    )
    assert [p.name for p in verdict.parts if p.passed is False] == ["memory"] and "ctx.keep" in report, report


def _forward_saving_a_view_of_a_buffer(ctx, x):  # "saves x": a view into a buffer that also holds σ(x)
    x = x.contiguous()
    n = x.numel()
    buffer = torch.cat([x.flatten(), torch.sigmoid(x).flatten()])
    y = torch.empty_like(x)
    _silu_forward[(triton.cdiv(n, 64),)](x, y, n, BLOCK_SIZE=64)
    ctx.save_for_backward(buffer[:n].view(x.shape))
    return y


def test_a_triton_function_saving_a_view_into_a_bigger_buffer_loses_the_memory_part():
    """Before: the Triton Function's memory part counted saved tensors only (one, of x's shape, equal to x: full marks,
    4/4) while the view kept a buffer twice x's size. Now bytes are measured there too, as for the fused Functions."""
    verdict, report = run(
        nb05.check_triton_function,
        fn("TritonSiLU", _forward_saving_a_view_of_a_buffer, _kernel_backward),
        **TRITON_PARAMS,
    )
    assert [p.name for p in verdict.parts if p.passed is False] == ["memory"] and "bytes" in report, report


_HIDDEN: dict = {}


def _silu_forward_global(ctx, x):  # σ(x) kept in a global dict: out of the probe's sight
    ctx.save_for_backward(x)
    _HIDDEN[x.data_ptr()] = torch.sigmoid(x)
    return x * _HIDDEN[x.data_ptr()]


def _silu_backward_global(ctx, g):
    (x,) = ctx.saved_tensors
    s = _HIDDEN.pop(x.data_ptr())
    return g * s * (1 + x * (1 - s))


def test_not_protected_a_tensor_kept_in_a_global_is_not_seen():
    """Documents a limit (docs/grading.md, "what is not protected"): memory kept in a global, a closure or a module is
    out of reach of saved-tensor hooks and of ctx, so the memory part passes."""
    verdict, report = run(
        nb05.check_fused_activation, fn("FusedSiLU", _silu_forward_global, _silu_backward_global), **FUSED_PARAMS
    )
    assert verdict is not None and float(verdict) == 3, report


# ===================================================================== screening: a by-hand exercise handed to autograd


def screened(
    assignment: str,
    replace: dict[str, str] | None = None,
    add: list[tuple[str, str]] = (),
    modules: dict[str, str] | None = None,
) -> list:
    """The screen's flags for the solution notebook with some answer cells replaced and cells added after others
    (and the learner's own .py files, `modules`, handed in with it)."""
    import nbformat

    from autograder.coursedir import SOLUTIONS
    from autograder.grading.screen import screen
    from autograder.grading.spec import NotebookSpec
    from autograder.registry import CHECKS, import_notebook_modules

    import_notebook_modules()
    (path,) = (SOLUTIONS / assignment).glob("*.ipynb")
    nb = nbformat.read(path, as_version=4)
    meta = lambda c: c.metadata.get("nbgrader", {})  # noqa: E731
    spec = NotebookSpec.from_release(nb)
    for cell in nb.cells:
        if meta(cell).get("grade_id") in (replace or {}):
            cell.source = replace[meta(cell)["grade_id"]]
    for after, source in add:
        index = next(i for i, c in enumerate(nb.cells) if meta(c).get("grade_id") == after)
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source))
    return screen(nb, spec, CHECKS, modules)


FUSED_SILU_BY_AUTOGRAD = '''class FusedSiLU(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            return torch.autograd.grad(x * torch.sigmoid(x), x, grad_output)
'''


def test_notebook_05s_functions_are_by_hand_and_its_checkpoint_is_not():
    """Before, no nb05 check was registered by_hand: a FusedSiLU whose backward is torch.autograd.grad got full marks
    and no flag. The solution (whose Checkpoint uses autograd, as it should) is not flagged."""
    assert screened("05-gpu-functions") == []
    flags = screened("05-gpu-functions", {"fused_silu": FUSED_SILU_BY_AUTOGRAD})
    assert [(f.code, "test_fused_silu" in f.detail) for f in flags] == [("by_hand_with_autograd", True)], flags
    from autograder.registry import CHECKS

    by_hand = sorted(name for name in nb05.__all__ if name.startswith("check_") and CHECKS[name].by_hand)
    assert by_hand == ["check_autocast_linear", "check_fused_activation", "check_gather_rows", "check_triton_function"]


TANH_BY = {
    "an alias of torch.autograd": (
        "from torch import autograd as ag",
        "ag.grad(torch.tanh(x), x, g, create_graph=True)",
    ),
    "an aliased import": ("import torch.autograd as ag", "ag.grad(torch.tanh(x), x, g, create_graph=True)"),
    "getattr": ("", "getattr(torch.autograd, 'gr' + 'ad')(torch.tanh(x), x, g, create_graph=True)"),
    "a graph node called directly": ("", "(torch.tanh(x).grad_fn(g),)"),
    "PyTorch's own derivative": ("", "(torch.ops.aten.tanh_backward(g, torch.tanh(x)),)"),
}


def _tanh_answer(imports: str, expression: str) -> str:
    """notebook 04's test of the by-hand flag (a Tanh whose backward is torch.autograd.grad), written another way."""
    from test_nb04_checks import _TANH_BY_AUTOGRAD

    handed = "torch.autograd.grad(torch.tanh(x), x, g, create_graph=True)"
    assert handed in _TANH_BY_AUTOGRAD
    return imports + "\n" + _TANH_BY_AUTOGRAD.replace(handed, expression)


@pytest.mark.nb04
@pytest.mark.parametrize("how", list(TANH_BY))
def test_autograd_under_another_name_is_flagged(how):
    """Before: no flag for any of these (graded with the real command: full marks, no flag). The name built from
    strings is also a lookup the screen cannot read, flagged as such."""
    flags = screened("04-ctx-toolbox", {"tanh": _tanh_answer(*TANH_BY[how])})
    autograd = [f for f in flags if f.code == "by_hand_with_autograd"]
    others = [f for f in flags if f.code != "by_hand_with_autograd"]
    assert autograd and all("test_tanh" in f.detail for f in autograd), flags
    if how == "getattr":
        assert [(f.code, "a name built at run time" in f.detail) for f in others] == [("reaches_for_grader", True)]
    else:
        assert others == [], flags


CUBE_BY_HELPER = '''class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return cube_gradient(x, grad_output)
'''
HELPER_WITH_AUTOGRAD = '''def cube_gradient(x, g):
    with torch.enable_grad():
        x = x.detach().requires_grad_()
        return torch.autograd.grad(x ** 3, x, g)[0]
'''
HELPER_BY_HAND = '''def cube_gradient(x, g):
    return g * 3 * x ** 2
'''
CHECK_YOURSELF = '''x = torch.randn(4, dtype=torch.float64, requires_grad=True)
Cube.apply(x).sum().backward()
print(torch.allclose(x.grad, 3 * x.detach() ** 2), [m for m in torch.nn.Sequential(torch.nn.Tanh()).modules()])
'''


@pytest.mark.nb04
def test_autograd_in_a_helper_cell_of_a_by_hand_answer_is_flagged():
    """Before: the helper's cell defines no exercise name, so it was not screened for autograd (full marks, no flag)."""
    flags = screened("04-ctx-toolbox", {"cube": CUBE_BY_HELPER}, [("cube", HELPER_WITH_AUTOGRAD)])
    assert (
        [f.code for f in flags] == ["by_hand_with_autograd"]
        and "a cell you added" in flags[0].detail
        and "test_cube" in flags[0].detail
    ), flags


@pytest.mark.nb04
def test_honest_helpers_and_check_yourself_cells_are_not_flagged():
    """Controls: a by-hand helper in a cell of its own, a cell that runs .backward() to check the answer, nn's
    .modules(), the hvp (autograd's own job) and the solution's own once_differentiable-free Functions: no flag."""
    assert (
        screened("04-ctx-toolbox", {"cube": CUBE_BY_HELPER}, [("cube", HELPER_BY_HAND), ("test_cube", CHECK_YOURSELF)])
        == []
    )
    imports = (
        "from torch.autograd import Function\nfrom torch.autograd.function import once_differentiable, FunctionCtx"
    )
    assert screened("04-ctx-toolbox", add=[("cube", imports)]) == []


@pytest.mark.nb04
@pytest.mark.parametrize(
    "source, reason",
    [
        ("import sys\nsys.modules['autograder.nb04.probes'].probe_hvp = print", "sys.modules"),
        ("from sys import modules", "modules from sys"),
        ("__revad_probe__.replaying = True", "__revad_probe__"),
    ],
)
def test_reaching_for_the_probes_module_or_runner_is_flagged(source, reason):
    """Before: no flag (sys.modules is how a cell reaches the probes without an import; the runner's replaying switch
    silences every later probe)."""
    flags = screened("04-ctx-toolbox", add=[("cube", source)])
    assert [f.code for f in flags] == ["reaches_for_grader"] and reason in flags[0].detail, flags


# =========================================================================== graded with the grading command


def grade_routes(tmp_path, assignment: str, routes: dict[str, dict], pool: list) -> dict:
    """Grade one submission per route (the solution with some answers replaced and cells added after others) with
    the grading command, on the test process's warm grading pool; student -> its SubmissionScore."""
    import shutil

    import nbformat

    from autograder.coursedir import SOLUTIONS
    from autograder.grading import grade_assignment, sandbox
    from autograder.release import generate_in_course
    from autograder.submissions import fill_answers, solution_sources

    root, db_url = tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}"
    shutil.copytree(SOLUTIONS / assignment, root / "source" / assignment)
    generate_in_course(root, [assignment], db_url)
    (released,) = (root / "release" / assignment).glob("*.ipynb")
    answers = solution_sources(SOLUTIONS / assignment / released.name)
    for student, route in routes.items():
        nb = fill_answers(released, {**answers, **route.get("answers", {})})
        for after, source in route.get("add", []):
            index = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == after)
            nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source))
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / released.name)
        (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")
        for name, text in route.get("files", {}).items():  # the learner's own files, handed in with the notebook
            (folder / name).write_text(text)
    rows = grade_assignment(
        root,
        assignment,
        db_url=db_url,
        workers=2,
        progress=False,
        log=lambda *a: None,
        limits=sandbox.Limits(cell_timeout_s=120, timeout_s=900),
        pool=pool,
    )
    return {row.student: row for row in rows}


FAKE_KERNEL_PROBE = '''import sys
import torch.nn.functional as _F
_probes = sys.modules["autograder.nb05.probes"]
_cases = sys.modules["autograder.nb05.cases"]

def _made_up(kernel, kind="forward", sizes=((10, 16),), seed=0, dtypes=("float64", "float32")):
    out = []
    for n, block in sizes:
        for dtype in dtypes:
            case = _cases.kernel_case(seed, n, dtype)
            x = case["x"].double().requires_grad_()
            (g,) = torch.autograd.grad(_F.silu(x), x, case["g"].double())
            v = (_F.silu(x) if kind == "forward" else g).detach().to(getattr(torch, dtype)).double()
            out.append({"n": n, "block": block, "dtype": dtype, "values": v, "written_before": 0,
                        "written_after": 0, "inputs_changed": False})
    return out

_probes.probe_kernel = _made_up
'''
NOT_WRITTEN = {
    "silu_forward_kernel": "silu_forward_kernel = None",
    "silu_backward_kernel": "silu_backward_kernel = None",
}


@pytest.mark.slow
def test_notebook_05_graded_a_probe_swapped_through_sys_modules_runs_as_installed(tmp_path, grading_pool):
    """Before: two blank Triton kernels scored 6/6, with no flag, thanks to a cell that swapped the kernel probe through
    sys.modules for one returning PyTorch's numbers. Now the probe runs as installed (the kernels score 0),
    and the submission is flagged twice: reaching for sys.modules, and what it replaced. The honest solution: full
    marks and no flag."""
    rows = grade_routes(
        tmp_path,
        "05-gpu-functions",
        {"made_up": {"answers": NOT_WRITTEN, "add": [("silu_forward_kernel", FAKE_KERNEL_PROBE)]}, "honest": {}},
        grading_pool,
    )
    made_up, honest = rows["made_up"], rows["honest"]
    assert made_up.by_cell["test_silu_forward_kernel"][0] == 0 and made_up.by_cell["test_silu_backward_kernel"][0] == 0
    assert {f.split(":")[0] for f in made_up.flags} == {"reaches_for_grader", "patched"}, made_up.flags
    assert any("autograder.nb05.probes.probe_kernel" in f for f in made_up.flags), made_up.flags
    assert honest.score == honest.max_score and honest.flags == [], (honest.flags, honest.messages)


SOFTPLUS_WITHOUT_VMAP_RULE = '''class Softplus(Function):
    @staticmethod
    def forward(x):
        return F.softplus(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, x_tangent):
        (x,) = ctx.saved_tensors
        return x_tangent * torch.sigmoid(x)
'''
OP_WITHOUT_FAKE = '''@torch.library.custom_op("course04::softplus", mutates_args=())
def softplus_op(x: torch.Tensor) -> torch.Tensor:
    return F.softplus(x)


def softplus_setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def softplus_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * torch.sigmoid(x)


softplus_op.register_autograd(softplus_backward, setup_context=softplus_setup_context)
'''
PATCHES_UNDER_OTHER_NAMES = '''import torch as T
import torch.library as L
T.vmap = lambda f, in_dims=0, out_dims=0, **kw: (lambda t: F.softplus(t))
L.opcheck = lambda op, args, test_utils=(), raise_exception=True, **kw: {t: "SUCCESS" for t in test_utils}
T.compile = lambda f, **kw: f
'''


@pytest.mark.slow
@pytest.mark.nb04
def test_notebook_04_graded_torch_tools_replaced_under_other_names_are_flagged_and_answer_nothing(
    tmp_path, grading_pool
):
    """Before: a Softplus with no vmap rule and a custom op with no fake implementation, plus torch.vmap, opcheck and
    torch.compile replaced through `import torch as T`, scored full marks (3/3, 4/4) with no flag. Now the probes use
    their own references (the vmap, opcheck and compile parts fail as they should) and the replacements are flagged,
    statically and in the kernel."""
    rows = grade_routes(
        tmp_path,
        "04-ctx-toolbox",
        {
            "patcher": {
                "answers": {"softplus": SOFTPLUS_WITHOUT_VMAP_RULE, "softplus_op": OP_WITHOUT_FAKE},
                "add": [("softplus_op", PATCHES_UNDER_OTHER_NAMES)],
            }
        },
        grading_pool,
    )
    row = rows["patcher"]
    # each loses one idea of three: the vmap rule; the fake implementation (opcheck and compile, the same mistake)
    assert row.by_cell["test_softplus"] == (2.0, 3.0) and row.by_cell["test_softplus_op"] == (2.0, 3.0), row.by_cell
    assert {f.split(":")[0] for f in row.flags} == {"patched"}, row.flags
    for name in ("torch.vmap", "torch.library.opcheck", "torch.compile"):
        assert any(f"assigns to {name}" in f for f in row.flags) and any(f"kernel: {name}" in f for f in row.flags), (
            row.flags
        )


CUBE_BACKWARD_BY = CUBE_BY_HELPER.replace(  # backward's gradient from autograd, reached by LOOKUP
    "        return cube_gradient(x, grad_output)\n",
    "        with torch.enable_grad():\n            x = x.detach().requires_grad_()\n            return LOOKUP\n",
)
CUBE_BY_A_GENERAL_KEY = {  # measured: 35/35 and no flag for the first (an object's __dict__ with a computed key)
    "dict": CUBE_BACKWARD_BY.replace("LOOKUP", 'torch.__dict__["auto" + "grad"].grad(x ** 3, x, grad_output)[0]'),
    "dict_get": CUBE_BACKWARD_BY.replace(
        "LOOKUP", 'torch.__dict__.get("auto" + "grad").grad(x ** 3, x, grad_output)[0]'
    ),
    "func_vjp": CUBE_BACKWARD_BY.replace(
        "LOOKUP", 'torch.__dict__["fu" + "nc"].vjp(lambda t: t ** 3, x)[1](grad_output)[0]'
    ),
}


@pytest.mark.nb04
@pytest.mark.parametrize("route", list(CUBE_BY_A_GENERAL_KEY))
def test_a_by_hand_backward_that_reaches_autograd_by_a_general_key_is_flagged(route):
    """Before: no flag (the screen followed getattr with a computed name, not an object's __dict__ with one). Now
    reaches_for_grader, naming the exercise, the lookup and that the exercise is done by hand."""
    flags = screened("04-ctx-toolbox", {"cube": CUBE_BY_A_GENERAL_KEY[route]})
    assert [f.code for f in flags] == ["reaches_for_grader"], flags
    assert flags[0].detail.startswith("exercise cube: a name built at run time: torch.__dict__"), flags
    assert "it answers test_cube (done by hand): autograd may be what it reaches" in flags[0].detail, flags


@pytest.mark.slow
@pytest.mark.nb04
def test_notebook_04_graded_a_by_hand_backward_by_a_general_key_keeps_its_points_and_is_flagged(tmp_path, grading_pool):
    """Graded with the grading command: Cube's backward from autograd reached through torch.__dict__ keeps full marks
    (35/35, as measured: the answer builds its own graph, out of any probe's sight) and is now flagged."""
    rows = grade_routes(
        tmp_path,
        "04-ctx-toolbox",
        {name: {"answers": {"cube": source}} for name, source in CUBE_BY_A_GENERAL_KEY.items()},
        grading_pool,
    )
    for name, row in rows.items():
        assert (row.score, row.max_score) == (35, 35), (name, row.score, row.messages)
        assert [f.split(":")[0] for f in row.flags] == ["reaches_for_grader"], (name, row.flags)
        assert "exercise cube: a name built at run time" in row.flags[0], (name, row.flags)
        assert "(done by hand): autograd may be what it reaches" in row.flags[0], (name, row.flags)


FUSED_SILU_FLOAT32_FAST_PATH = """class FusedSiLU(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        if x.dtype == torch.float32:  # a fast path: the product rule's second term dropped
            return grad_output * s
        return grad_output * s * (1 + x * (1 - s))
"""
FUSED_GELU_FLOAT32_FAST_PATH = """class FusedGELU(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        c = math.sqrt(2 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x ** 3))
        if x.dtype == torch.float32:
            return grad_output * 0.5 * (1 + t)
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x))
"""


@pytest.mark.slow
def test_notebook_05_graded_fused_activations_wrong_only_for_float32_lose_the_reference_part(tmp_path, grading_pool):
    """Before: 30/30 and no message (the float32 run was judged on its dtype alone). Now each exercise loses its
    reference part (half a point of 3) with a message that names float32; the rest of the notebook keeps its marks."""
    rows = grade_routes(
        tmp_path,
        "05-gpu-functions",
        {
            "fast_path": {
                "answers": {"fused_silu": FUSED_SILU_FLOAT32_FAST_PATH, "fused_gelu": FUSED_GELU_FLOAT32_FAST_PATH}
            }
        },
        grading_pool,
    )
    row = rows["fast_path"]
    assert (row.score, row.max_score) == (29, 30), (row.score, row.by_cell, row.messages)
    assert row.by_cell["test_fused_silu"] == (2.5, 3.0) and row.by_cell["test_fused_gelu"] == (2.5, 3.0), row.by_cell
    for name in ("FusedSiLU", "FusedGELU"):
        assert any(name in m and "for a float32 x the gradient disagrees" in m for m in row.messages), row.messages


@pytest.mark.nb04
def test_the_probes_keep_their_own_torch_vmap(monkeypatch):
    """In-process: torch.vmap replaced after the probes were imported (the kernel's setup imports them before the
    first cell) does not answer for them."""
    import torch.nn.functional as F
    from torch.autograd import Function

    import autograder.nb04  # noqa: F401
    from autograder import nb04

    namespace = {"Function": Function, "F": F, "torch": torch}
    exec(SOFTPLUS_WITHOUT_VMAP_RULE, namespace)
    monkeypatch.setattr(torch, "vmap", lambda f, in_dims=0, out_dims=0, **kw: lambda t: F.softplus(t))
    verdict, report = run(nb04.check_modern, namespace["Softplus"], seed=0, points=3)
    assert [p.name for p in verdict.parts if p.passed is False] == ["vmap"], report


def _forward_with_a_dummy_launch(ctx, x):  # a kernel launched into a scratch buffer, the answer from PyTorch
    x = x.contiguous()
    _silu_forward[(triton.cdiv(x.numel(), 64),)](x, torch.empty_like(x), x.numel(), BLOCK_SIZE=64)
    return _torch_forward(ctx, x)


def _backward_with_a_dummy_launch(ctx, g):
    (x,) = ctx.saved_tensors
    _silu_backward[(triton.cdiv(x.numel(), 64),)](x, g.contiguous(), torch.empty_like(x), x.numel(), BLOCK_SIZE=64)
    return _torch_backward(ctx, g)


def _forward_launched_then_overwritten(ctx, x):  # the kernel writes the output (of other numbers), PyTorch over it
    x = x.contiguous()
    y = torch.empty_like(x)
    _silu_forward[(triton.cdiv(x.numel(), 64),)](x.flip(0), y, x.numel(), BLOCK_SIZE=64)
    ctx.save_for_backward(x)
    return y.copy_(x * torch.sigmoid(x))


def _backward_launched_then_overwritten(ctx, g):
    (x,) = ctx.saved_tensors
    grad = torch.empty_like(x)
    _silu_backward[(triton.cdiv(x.numel(), 64),)](x, g.contiguous().flip(0), grad, x.numel(), BLOCK_SIZE=64)
    s = torch.sigmoid(x)
    return grad.copy_(g * s * (1 + x * (1 - s)))


def _backward_recomputed_bit_for_bit(ctx, g):  # the right launch, then PyTorch's same numbers written over them
    (x,) = ctx.saved_tensors
    g = g.contiguous()
    grad = torch.empty_like(x)
    _silu_backward[(triton.cdiv(x.numel(), 64),)](x, g, grad, x.numel(), BLOCK_SIZE=64)
    s = torch.sigmoid(x)
    return grad.copy_(g * s * (1 + x * (1 - s)))


@pytest.mark.parametrize(
    "forward, backward",
    [
        (_forward_with_a_dummy_launch, _backward_with_a_dummy_launch),
        (_forward_launched_then_overwritten, _backward_launched_then_overwritten),
        (_forward_with_a_dummy_launch, _kernel_backward),
        (_kernel_forward, _backward_launched_then_overwritten),
    ],
)
def test_a_launch_for_show_beside_pytorchs_answer_scores_nothing(forward, backward):
    """A kernel launched into a scratch buffer, or on other numbers into the output that PyTorch then writes over,
    while the answer comes from PyTorch: the output handed back is not what a launch stored (before, the launch was
    counted: 4/4). (A right launch whose numbers PyTorch recomputes bit for bit is the kernel's:
    tests/test_launch_evidence.py.)"""
    verdict, message = run(nb05.check_triton_function, fn("TritonSiLU", forward, backward), **TRITON_PARAMS)
    assert verdict is None and "no tensor a Triton kernel wrote" in message, message


def test_a_kernel_subclass_with_its_own_run_is_not_a_kernel():
    """An InterpretedFunction subclass whose run computes with PyTorch (and launches nothing): refused, whatever its
    run does; the genuine kernel, re-wrapped by the probe, is checked as usual; and the kernel checks' probe takes no
    text from it."""
    from triton.runtime.interpreter import InterpretedFunction

    from autograder.probes import triton_kernels

    class Pretend(InterpretedFunction):
        def run(self, x, y, n, grid=None, warmup=False, **kwargs):
            y.copy_(x * torch.sigmoid(x))

    fake = Pretend(_silu_forward.fn)
    with pytest.raises(CheckFailed, match="as Triton makes it"):
        triton_kernels.interpreted(fake, "silu_forward_kernel")
    wrapped = triton_kernels.interpreted(_silu_forward, "silu_forward_kernel")
    assert type(wrapped) is InterpretedFunction and wrapped is not _silu_forward and wrapped.fn is _silu_forward.fn
    with pytest.raises(CheckFailed, match="as Triton makes it"):
        triton_kernels.record(fake)


# ================================================================== notebook 04's LinearLayer must use FunctionalLinear


@pytest.mark.nb04
def test_a_linear_layer_that_wraps_f_linear_in_a_pass_through_function_loses_the_training_part():
    """Before: LinearLayer.forward = Passthrough.apply(F.linear(x, W, b)) -- a custom node, so 'not from your
    Function' did not fire -- scored 3/3 without FunctionalLinear. Now the node must take the weight and bias
    themselves. (Honest layers written differently keep full marks: test_nb04_checks' alternatives.)"""
    import torch.nn.functional as F
    from test_nb04_checks import make_layer
    from torch.autograd import Function

    from autograder import nb04

    class Passthrough(Function):
        @staticmethod
        def forward(ctx, y):
            return y.view_as(y)

        @staticmethod
        def backward(ctx, g):
            return g

    class NotFunctionalLinear:
        apply = staticmethod(lambda x, weight, bias: Passthrough.apply(F.linear(x, weight, bias)))

    verdict, report = run(nb04.check_linear_layer, make_layer(NotFunctionalLinear), seed=0, points=3)
    assert [p.name for p in verdict.parts if p.passed is False] == [
        "training"
    ] and "applied to an operation" in report, report


def _silu_forward_saving_sigmoid(ctx, x):  # saves σ(x) instead of x (x is recomputed as its logit)
    s = torch.sigmoid(x)
    ctx.save_for_backward(s)
    return x * s


def _silu_backward_from_logit(ctx, g):
    (s,) = ctx.saved_tensors
    x = torch.log(s / (1 - s))
    return g * s * (1 + x * (1 - s))


def test_the_probes_keep_their_own_torch_equal(monkeypatch):
    """torch.equal made always-true (flagged `patched` when graded) would tell the memory part that σ(x) is x; the
    probes compare with their own torch.equal."""
    import autograder.nb05  # noqa: F401  (imported before the learner's code, as the kernel's setup does)

    monkeypatch.setattr(torch, "equal", lambda a, b: True)
    verdict, report = run(
        nb05.check_fused_activation,
        fn("FusedSiLU", _silu_forward_saving_sigmoid, _silu_backward_from_logit),
        **FUSED_PARAMS,
    )
    assert "memory" in {p.name for p in verdict.parts if p.passed is False} and "but not x" in report, report


# ============================================================ screening: NumPy where memory is measured (notebook 06)
LINEAR_CE_WITH_NUMPY = '''import numpy as np


class LinearCrossEntropy(Function):
    @staticmethod
    def forward(ctx, hidden, weight, target, chunk):
        logits = torch.from_numpy(np.asarray(hidden.detach()) @ np.asarray(weight.detach()).T)  # N x V, unmeasured
        ctx.save_for_backward(hidden, weight, target)
        return torch.nn.functional.cross_entropy(logits, target)
'''


@pytest.mark.nb06
@pytest.mark.parametrize(
    "grade_id, source, how",
    [
        ("linear_cross_entropy", LINEAR_CE_WITH_NUMPY, "import numpy"),
        ("linear_cross_entropy", "from numpy import matmul\n" + LINEAR_CE_WITH_NUMPY.split("\n", 1)[1], "from numpy"),
        (
            "fused_cross_entropy",
            "class FusedCrossEntropy(Function):\n    @staticmethod\n"
            "    def forward(ctx, logits, target, ignore_index=-100):\n"
            "        ctx.p = logits.detach().numpy().copy()\n        return logits.sum()\n",
            ".numpy",
        ),
    ],
)
def test_numpy_in_an_answer_whose_memory_is_measured_is_flagged(grade_id, source, how):
    """Before: an N×V array made with NumPy was out of the memory part's sight, with no flag. Now the answer (or a
    helper cell it uses) is flagged memory_out_of_sight, naming the exercise; the score is the checks' own."""
    flags = screened("06-fused-cross-entropy", replace={grade_id: source})
    found = [f for f in flags if f.code == "memory_out_of_sight"]
    assert len(found) == 1 and how in found[0].detail and "test_" in found[0].detail, flags


def test_numpy_in_a_helper_the_answer_uses_is_flagged_and_elsewhere_it_is_not():
    helper = (
        "import numpy as np\n\n\ndef logits_of(h, w):\n    return torch.from_numpy(np.asarray(h) @ np.asarray(w).T)\n"
    )
    answer = LINEAR_CE_WITH_NUMPY.split("\n", 1)[1].replace(
        "torch.from_numpy(np.asarray(hidden.detach()) @ np.asarray(weight.detach()).T)",
        "logits_of(hidden.detach(), weight.detach())",
    )
    flags = screened(
        "06-fused-cross-entropy", replace={"linear_cross_entropy": answer}, add=[("new_saved_bytes", helper)]
    )
    found = [f for f in flags if f.code == "memory_out_of_sight"]
    assert len(found) == 1 and "a cell you added" in found[0].detail, flags
    elsewhere = [("logsumexp_stable", "import numpy as np\nprint(np.pi)")]  # a cell no measured exercise uses
    assert [f for f in screened("06-fused-cross-entropy", add=elsewhere) if f.code == "memory_out_of_sight"] == []
    assert [f for f in screened("06-fused-cross-entropy") if f.code == "memory_out_of_sight"] == []  # the solution


# ============================================= issue 47, route 6: the launch evidence lives in the learner's process
# The probe of notebook 06's FusedCrossEntropy counts the kernels a Function launches, and keeps what each left, in
# a closure of the launch method it patches for the call's length: in the learner's process. A Function that
# launches nothing and fills that record in itself earns the kernel parts. Not prevented (docs/grading.md, "Not
# protected"); every route to the record the screen can read is flagged.

FORGES_THE_LAUNCHES = '''
import torch
from torch.autograd import Function

def _launch_record():
    cells = LOOKUP or ()
    return next((c.cell_contents for c in cells if isinstance(c.cell_contents, dict)), None)

def _as_if_launched(*tensors, left=()):
    record = _launch_record()
    if record is None:
        return
    record["n"] += 1
    for t in tensors:
        record.setdefault("written", {})[t.untyped_storage().data_ptr()] = t.untyped_storage().clone()
    for rows in left:
        record.setdefault("left", []).append(rows.detach().to("cpu", torch.float64, copy=True).flatten())

class FusedCrossEntropy(Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100):
        x = logits.double()
        rows = torch.nn.functional.cross_entropy(x, target, ignore_index=ignore_index, reduction="none")
        _as_if_launched(left=(rows, torch.logsumexp(x, dim=1)))
        counted = max(int((target != ignore_index).sum()), 1)
        ctx.save_for_backward(logits, target)
        ctx.ignore_index, ctx.counted = ignore_index, counted
        return (rows.sum() / counted).to(logits.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        logits, target = ctx.saved_tensors
        p = torch.softmax(logits.double(), dim=1)
        counted = target != ctx.ignore_index
        p[counted.nonzero().squeeze(1), target[counted]] -= 1.0
        grad = (p * counted[:, None] * (float(grad_output) / ctx.counted)).to(logits.dtype).contiguous()
        _as_if_launched(grad)
        return grad, None, None
'''
LAUNCH_RECORD_LOOKUPS = {
    "a type's __dict__ by a computed key": 'type(ce_forward_kernel).__dict__["r" + "un"].__closure__',
    "vars() of the type": 'vars(type(ce_forward_kernel))["".join(["r", "un"])].__closure__',
    "the garbage collector": "tuple(type('', (), {'cell_contents': o})() for o in __import__('gc').get_objects() "
    "if isinstance(o, dict) and 'written' in o)",
}


@pytest.mark.nb06
@pytest.mark.parametrize("lookup", list(LAUNCH_RECORD_LOOKUPS.values()), ids=list(LAUNCH_RECORD_LOOKUPS))
def test_a_function_that_fills_in_the_launch_record_itself_is_flagged(lookup):
    flags = screened("06-fused-cross-entropy", {"fused_cross_entropy": FORGES_THE_LAUNCHES.replace("LOOKUP", lookup)})
    reaching = [f for f in flags if f.code == "reaches_for_grader"]
    assert reaching and all("fused_cross_entropy" in f.detail for f in reaching), flags


@pytest.mark.nb06
def test_a_function_that_fills_in_what_was_the_launch_record_earns_no_kernel_part():
    """Issue 47's route 6 (measured 35/35 for 30 before): the launches' record lived in the learner's process, in a
    closure on the patched launch method. It is gone: what the kernels stored is the launcher's log (the grader's
    while a submission is graded), and a Function that launches nothing earns no kernel part however it reaches for
    the old record (more forgeries against the launcher: tests/test_launch_evidence.py)."""
    from autograder import nb06
    from autograder.course_kernels import STAND_INS
    from autograder.nb06.judges.functions import fused_ce_cases

    for lookup in LAUNCH_RECORD_LOOKUPS.values():
        namespace = {"ce_forward_kernel": STAND_INS["ce_forward_kernel"]}
        exec(FORGES_THE_LAUNCHES.replace("LOOKUP", lookup), namespace)
        try:
            verdict = nb06.check_fused_ce(namespace["FusedCrossEntropy"], cases=fused_ce_cases())
        except CheckFailed as failure:  # the old record is gone: what the lookup finds instead may break the forgery
            if failure.verdict is None:
                continue  # the Function raised: nothing earned
            verdict = failure.verdict
        failed = {p.name for p in verdict.parts if p.passed is False}
        assert {"forward", "reference"} <= failed, verdict.report()


# =========================================================================== records the learner cannot rewrite (#47)

from hostile.record_attacks import DUPLICATES_OF_THE_RECORD  # noqa: E402  (tests/hostile/: learner code)

REWRITE_FROM_DEL = (
    DUPLICATES_OF_THE_RECORD
    + '''
import io, sys


def _rewrite_the_record(right):
    """While a probe calls the learner's blank Function: the record the probe's own collect makes of `right` (a
    right Function kept under another name), written later, from __del__ of an object left in the probe runner's
    params, through a duplicate of the probe's own descriptor of its record file."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "probe":
        frame = frame.f_back
    if frame is None or "_rewrite" in frame.f_locals["params"]:
        return
    here = frame.f_locals
    cell, k, params = here["cell"], here["k"], here["params"]
    kept = _dups_of_the_record(cell, k)
    if not kept:
        return
    buf = io.BytesIO()
    data = here["checks"][here["check"]].collect(right, **params)
    torch.save({"cell": cell, "call": k, "results": [data], "patched": []}, buf)

    class Rewrite:
        def __del__(self):
            for dup in kept:
                os.ftruncate(dup, 0)
                os.pwrite(dup, buf.getvalue(), 0)
                os.close(dup)

    params["_rewrite"] = Rewrite()


def _written_elsewhere(name, f, df):
    class Right(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return f(x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * df(x)

    Right.__name__ = Right.__qualname__ = name
    return Right
'''
)
BLANK_BUT_REWRITING = '''class {name}(Function):
    @staticmethod
    def forward(ctx, x):
        _rewrite_the_record(_written_elsewhere("{name}", {f}, {df}))
        raise NotImplementedError()

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError()
'''


@pytest.mark.slow
def test_notebook_05_blank_fused_functions_get_nothing_from_a_record_rewritten_after_the_probe(tmp_path, grading_pool):
    """Issue 47's measured route: FusedSiLU and FusedGELU left blank (their forward raises NotImplementedError), but
    while a probe calls one it duplicates the probe's descriptor of its record and leaves in the probe runner's params
    an object whose __del__, once the probe has written, rewrites the record with what the probe makes of a right
    Function kept under another name. Measured on the commit before the courier (820cffc): 1 of 3 for each of the two
    (26 of 30 in all), flagged only for the frames it reaches for, no record_forged; the issue's own forgery got 3 of 3
    each. Records now go to the grader through a courier process the learner's code never runs in: there is nothing
    to rewrite, and the two score 0."""
    silu = "lambda x: x * torch.sigmoid(x)", "lambda x: torch.sigmoid(x) * (1 + x * (1 - torch.sigmoid(x)))"
    c, t = "math.sqrt(2 / math.pi)", "torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))"
    gelu = (
        f"lambda x: 0.5 * x * (1 + {t})",
        f"lambda x: 0.5 * (1 + {t}) + 0.5 * x * (1 - {t} ** 2) * {c} * (1 + 3 * 0.044715 * x * x)",
    )
    rows = grade_routes(
        tmp_path,
        "05-gpu-functions",
        {
            "rewriting": {
                "answers": {
                    "fused_silu": REWRITE_FROM_DEL
                    + "\n\n"
                    + BLANK_BUT_REWRITING.format(name="FusedSiLU", f=silu[0], df=silu[1]),
                    "fused_gelu": BLANK_BUT_REWRITING.format(name="FusedGELU", f=gelu[0], df=gelu[1]),
                }
            }
        },
        grading_pool,
    )
    row = rows["rewriting"]
    assert row.by_cell["test_fused_silu"][0] == 0 and row.by_cell["test_fused_gelu"][0] == 0, row.by_cell
    assert "record_forged" not in {f.split(":")[0] for f in row.flags}, row.flags  # nothing reached a record

"""Notebook 05's judges of FusedSiLU/GELU and TritonSiLU: forward, backward, memory, CUDA, the kernels
used."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ...course_kernels import STAND_INS
from ...feedback import CheckFailed
from ...judges import launch_evidence
from ...judges.answers import MISMATCH
from ...judges.function import draw_seed
from ...judges.verdict import Part, Verdict
from ...registry import ProbeData, decides
from ..cases import (
    EPS,
    composed_gelu,
    elementwise_case,
)
from .common import (
    index_list,
    judge_attributes,
    reference_and_vjp,
    verdict_of_parts,
    wrong_entries,
)

ATOL, RTOL = 1e-5, 1e-3  # gradcheck's tolerances


COMPOSED = {"silu": lambda x: x * torch.sigmoid(x), "gelu_tanh": composed_gelu}


NAMES = {"silu": "SiLU", "gelu_tanh": "tanh-GELU"}


def composed_saved_bytes(activation: str, shape: Sequence[int], dtype: torch.dtype | None = torch.float64) -> int:
    """Bytes the composed PyTorch expression keeps for backward (each storage once), measured here."""
    storages: dict[int, int] = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    x = torch.randn(shape, dtype=dtype, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        COMPOSED[activation](x)
    return sum(storages.values())


def _tensor_return(returns: list[dict], shape) -> tuple[torch.Tensor | None, str | None]:
    """The single gradient backward returned, or a description of what is wrong with it."""
    if len(returns) != 1 and not (len(returns) > 1 and all(r["kind"] == "none" for r in returns[1:])):
        return None, (
            f"backward returned {len(returns)} values; forward takes one tensor, so backward returns one gradient."
        )
    r = returns[0]
    if r["kind"] != "tensor":
        return (
            None,
            f"backward returned {'None' if r['kind'] == 'none' else 'a ' + r.get('type', '?')} instead of a tensor.",
        )
    if list(r["shape"]) != list(shape):
        return None, f"backward returned a gradient of shape {tuple(r['shape'])}; x has shape {tuple(shape)}."
    return r["value"], None


def _derivative_hints(
    activation: str, x: torch.Tensor, u: torch.Tensor, got: torch.Tensor, rtol: float = 1e-6, atol: float = 1e-9
) -> list[str]:
    """Known mistakes in the derivative of SiLU / tanh-GELU, recognised from the gradient returned (within rtol and
    atol: wider for a float32 gradient)."""
    x = x.to(torch.float64)
    _, want = reference_and_vjp(activation, x, u)
    close = lambda a: a.shape == got.shape and torch.allclose(got, a, rtol=rtol, atol=atol)  # noqa: E731
    hints = []
    if close(want / u):
        hints.append("backward returns the local derivative alone: multiply it by grad_output (the chain rule).")
    elif close(-want):
        hints.append("the gradient has the wrong sign.")
    elif activation == "silu" and close(u * torch.sigmoid(x)):
        hints.append("d/dx [x·σ(x)] has two terms (product rule): σ(x) + x·σ(x)·(1 − σ(x)).")
    elif activation == "silu" and close(u * torch.sigmoid(x) * (1 - torch.sigmoid(x))):
        hints.append("that is the derivative of σ(x) alone; SiLU is x·σ(x): use the product rule.")
    elif activation == "gelu_tanh":
        c = math.sqrt(2 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x**3))
        if close(u * 0.5 * (1 + t)):
            hints.append(
                "0.5·x·(1 + tanh(…)) is a product: its derivative also has the term 0.5·x·(1 − tanh²(…))·(…)'."
            )
        elif close(u * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * c * (1 + 0.044715 * x**2))):
            hints.append("the derivative of x + 0.044715·x³ is 1 + 3·0.044715·x²: the factor 3 is missing.")
    return hints


# --------------------------------------------------------------------------------------------- element-wise Functions


@decides("check_fused_activation", "check_triton_function", draw=draw_seed)
def judge_elementwise(
    data: ProbeData,
    activation: str = "silu",
    seed: int = 0,
    cases: int = 2,
    triton: bool = False,
    points: float = 1,
    name: str | None = None,
) -> Verdict:
    name = data.get("name") or name or "your Function"
    act = NAMES[activation]
    names = ["forward", "gradcheck", "reference", "interface", "layout", "memory"] + ([] if triton else ["device"])
    parts = {k: Part(k) for k in names}
    if len(data["cases"]) != cases:
        raise CheckFailed(f"{name}: the answer covers {len(data['cases'])} cases; {cases} were asked for.")
    if triton:
        _require_kernels(data, name)
    for case, got in enumerate(data["cases"]):
        inputs = elementwise_case(seed, case)
        x, u = inputs["x"], inputs["u"]
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        want_y, want_g = reference_and_vjp(activation, x, u)
        if _judge_elementwise_forward(got["output"], x, want_y, activation, where, parts["forward"]):
            _judge_elementwise_backward(got, x, u, want_g, activation, where, parts)

    # A wrong forward or derivative is those parts' mistake: the layout part then judges only what layouts change
    # (errors, shapes), not values that are wrong for contiguous tensors as well.
    _judge_layouts(
        data,
        activation,
        seed,
        parts["layout"],
        triton,
        forward_wrong=parts["forward"].passed is False,
        contiguous_wrong=parts["reference"].passed is False,
    )
    _judge_float32(data.get("float32") or {}, parts["interface"])
    _judge_float32_values(data.get("float32") or {}, activation, elementwise_case(seed, 0), parts)
    _judge_memory(
        data["cases"][0] if data["cases"] else {}, activation, elementwise_case(seed, 0)["x"], parts["memory"]
    )
    if not triton:
        _judge_meta(data.get("meta") or {}, parts["device"])
    stand_ins = [k for k in ("silu_backward_kernel", "silu_forward_kernel") if k in data.get("course_kernels", [])]
    ran = (
        f", run with the course's {' and '.join(stand_ins)} (your kernels have their own exercises)"
        if stand_ins
        else ""
    )
    return verdict_of_parts(parts, points, f"{name} ({act}{ran})")


def _judge_elementwise_forward(out: dict, x, want_y, activation: str, where: str, part: Part) -> bool:
    """Forward's output against the reference; False when there is no tensor to go on with."""
    if out["kind"] != "tensor":
        part.fail(f"forward returned {out.get('type', out['kind'])}, not a tensor {where}.")
        return False
    if list(out["shape"]) != list(x.shape):
        part.fail(f"forward returned shape {tuple(out['shape'])}; x has shape {tuple(x.shape)} {where}.")
        return True
    bad, err = wrong_entries(out["value"], want_y, 1e-8, 1e-10)
    if out["dtype"] != "float64":
        part.fail(f"forward returned a {out['dtype']} tensor for a float64 x: make the output like x, with x's dtype.")
    elif bad.any():
        sigmoid_only = activation == "silu" and torch.allclose(out["value"], torch.sigmoid(x), rtol=1e-6, atol=1e-9)
        part.fail(
            f"{NAMES[activation]} forward is wrong in {int(bad.sum())} of {bad.numel()} entries {where}: "
            f"{index_list(bad)}; largest error {err:.3g}.",
            "that is σ(x); SiLU is x·σ(x)." if sigmoid_only else None,
        )
    return True


def _judge_elementwise_backward(got: dict, x, u, want_g, activation: str, where: str, parts: dict[str, Part]) -> None:
    """Backward's gradient: its interface, against the central difference of the learner's own forward
    (gradcheck), and against the reference."""
    if "backward_error" in got:
        for key in ("gradcheck", "reference", "interface"):
            parts[key].fail(got["backward_error"])
        return
    if "returns" not in got:
        return
    grad, problem = _tensor_return(got["returns"], x.shape)
    if problem:
        for key in ("gradcheck", "reference", "interface"):
            parts[key].fail(problem + f" {where}")
        return
    if got["returns"][0]["dtype"] != "float64":
        parts["interface"].fail(f"backward returned a {got['returns'][0]['dtype']} gradient for a float64 x {where}.")
    if got.get("grad_output_modified"):
        parts["interface"].fail(
            f"backward changed grad_output in place {where}: autograd may pass the same tensor "
            "to other nodes; compute into a new tensor."
        )
    hints = _derivative_hints(activation, x, u, grad)
    plus, minus = got["plus"], got["minus"]
    # (a forward in another dtype is the forward part's mistake: its rounding would spoil the central difference)
    if (
        plus["kind"] == "tensor"
        and minus["kind"] == "tensor"
        and list(plus["shape"]) == list(x.shape)
        and plus.get("dtype", "float64") == "float64"
    ):
        numerical = u * (plus["value"] - minus["value"]) / (2 * EPS)
        bad, err = wrong_entries(grad, numerical, RTOL, ATOL)
        if bad.any():
            parts["gradcheck"].fail(
                f"the gradient disagrees with the central difference of your forward in "
                f"{int(bad.sum())} of {bad.numel()} entries {where}: {index_list(bad)}; "
                f"largest error {err:.3g}.",
                *hints,
            )
    bad, err = wrong_entries(grad, want_g, 1e-7, 1e-9)
    if bad.any():
        parts["reference"].fail(
            f"the gradient disagrees with the reference backward in {int(bad.sum())} of "
            f"{bad.numel()} entries {where}: {index_list(bad)}; largest error {err:.3g}.",
            *hints,
        )


def answers_mismatch(why: str) -> str:
    return MISMATCH.format(why=why)


def _require_kernels(data, name):
    """A Function that is to wrap Triton kernels launches one in forward and one in backward, in every run the
    probe made: computed with PyTorch operations instead, the exercise is not done (0 points)."""
    records = list(data["cases"]) + [data[k] for k in ("transposed_grad", "strided_both", "float32")]
    missing = []
    for record in records:
        if not isinstance(record.get("launch_ids"), dict) or not isinstance(record.get("layouts"), dict):
            raise CheckFailed(answers_mismatch(f"{name}'s data names no Triton launches"))
        output = record.get("output", {})
        if output.get("kind") == "tensor" and not _launched(record, "forward", output, "output"):
            missing.append("forward")
        if "returns" in record and not _launched(record, "backward", (record["returns"] or [{}])[0], "grad"):
            missing.append("backward")
    if missing:
        which = " and ".join(dict.fromkeys(m for m in ("forward", "backward") if m in missing))
        raise CheckFailed(
            f"{name}'s {which} handed back no tensor a Triton kernel wrote: this exercise wraps your kernels in a "
            "Function, so the numbers must come from them, not from PyTorch operations.\nHint: forward launches the "
            "forward kernel on enough programs to cover x, writing into a new output tensor, and returns that "
            "tensor; backward launches the backward kernel, writing into a new gradient tensor, and returns it."
        )


def _launched(record: dict, window: str, described: Any, layout: str) -> bool:
    """Whether the tensor described (the output, or backward's first return) is, bit for bit, what one of the
    window's launches stored (or, in backward, that times grad_output), as the launcher logged it."""
    launches = launch_evidence.of(launch_evidence.window(record, window), set(STAND_INS))
    value = described.get("value") if isinstance(described, dict) else None
    shape = record["layouts"].get(layout)
    if launch_evidence.produced(launches, value, shape):
        return True
    handed = record.get("grad_output") if window == "backward" else None
    times = launch_evidence.as_dtype(handed.get("value"), handed.get("dtype")) if isinstance(handed, dict) else None
    return isinstance(times, torch.Tensor) and launch_evidence.produced(launches, value, shape, times=times)


def _judge_layouts(data, activation, seed, part, triton, forward_wrong=False, contiguous_wrong=False):
    inputs = elementwise_case(seed, 0)
    strided = inputs["wide"][:, ::2]
    fix = (
        "a kernel reads n_elements values in memory order and ignores strides: every tensor whose memory you hand "
        "to a kernel (x in forward, grad_output in backward) must be laid out contiguously first."
        if triton
        else "compute with torch operations on the tensors themselves (no .view() on a tensor whose memory is not "
        "in order, no reading of .data_ptr() / storage())."
    )
    out = data.get("strided_forward") or {}
    want, _ = reference_and_vjp(activation, strided, torch.ones_like(strided))
    if out.get("kind") != "tensor" or list(out["shape"]) != list(strided.shape):
        part.fail(
            f"for a non-contiguous x (every other column of a {tuple(inputs['wide'].shape)} tensor) forward returned "
            f"{'shape ' + str(tuple(out['shape'])) if out.get('kind') == 'tensor' else 'no tensor'}.",
            fix,
        )
    elif not forward_wrong and not torch.allclose(out["value"], want, rtol=1e-8, atol=1e-10):
        bad, err = wrong_entries(out["value"], want, 1e-8, 1e-10)
        part.fail(
            f"for a non-contiguous x (x = wide[:, ::2]) forward is wrong in {int(bad.sum())} of {bad.numel()} "
            f"entries: {index_list(bad)}; largest error {err:.3g}.",
            fix,
        )
    for key, x, label in (
        ("transposed_grad", inputs["x2"], "a contiguous x and a transposed grad_output"),
        ("strided_both", strided, "a strided x and a transposed grad_output"),
    ):
        got = data.get(key) or {}
        u = inputs["u_transposed"].t()
        _, want_g = reference_and_vjp(activation, x, u)
        if "backward_error" in got:
            part.fail(f"with {label}: {got['backward_error']}", fix)
            continue
        if "returns" not in got:
            part.fail(f"with {label} forward did not return a tensor connected to the graph.", fix)
            continue
        grad, problem = _tensor_return(got["returns"], x.shape)
        if problem:
            part.fail(f"with {label}: {problem}", fix)
        elif not contiguous_wrong and not torch.allclose(grad, want_g, rtol=1e-7, atol=1e-9):
            bad, err = wrong_entries(grad, want_g, 1e-7, 1e-9)
            part.fail(
                f"with {label} the gradient is wrong in {int(bad.sum())} of {bad.numel()} entries: "
                f"{index_list(bad)}; largest error {err:.3g}.",
                fix,
            )


def _judge_float32(got, part):
    if not got:
        return
    if "backward_error" in got:
        part.fail(f"with a float32 x: {got['backward_error']}")
        return
    out = got.get("output", {})
    if out.get("dtype") != "float32":
        part.fail(
            f"for a float32 x forward returned {out.get('dtype', 'no tensor')}: create outputs like x, "
            "with x's dtype, not with a fixed one."
        )
    returns = got.get("returns") or []
    if returns and returns[0].get("dtype") != "float32":
        part.fail(
            f"for a float32 x backward returned a {returns[0].get('dtype', returns[0]['kind'])} gradient: "
            "the gradient has its input's dtype."
        )


# float32 arithmetic on these cases errs near 1e-7 relative; float16 (about 5e-4) and a dropped term are far outside
F32_RTOL, F32_ATOL = 1e-4, 1e-6


def float32_slack(activation: str, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """What float32 arithmetic may honestly err by in each entry of the gradient: one float32 epsilon of the
    derivative's terms taken apart. Where the derivative is a difference of near-equal terms (tanh-GELU's for a large
    negative x: 0.5·(1 + t) and 1 − t² cancel), the error is of the terms, not of the small result, and a tolerance
    relative to the result failed right answers (about one hidden draw in a thousand). Measured over 60 000 seeds:
    the right float32 gradient errs by at most 0.22 of this; float16 arithmetic, by more than it everywhere."""
    if activation == "silu":
        terms = torch.sigmoid(x) * (1 + x.abs())  # σ + x·σ·(1 − σ)
    else:
        c = math.sqrt(2 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x**3))
        terms = 0.5 * (1 + t.abs()) + 0.5 * x.abs() * (1 + t * t) * c * (1 + 3 * 0.044715 * x * x)
    return torch.finfo(torch.float32).eps * u.abs() * terms


def _judge_float32_values(got, activation, inputs, parts):
    """The float32 run's values against the reference on the same float32-rounded x and grad_output: forward's
    output costs the forward part, the gradient the reference part (the part a wrong float64 gradient costs: one
    idea, once). A Function right in float64 that takes another path for float32 (a term dropped, float16
    arithmetic) loses that part with a message that names the dtype."""
    if not got:
        return
    x = inputs["x"].to(torch.float32).to(torch.float64)
    u = inputs["u"].to(torch.float32).to(torch.float64)
    want_y, want_g = reference_and_vjp(activation, x, u)
    where = f"(x of shape {tuple(x.shape)} in float32)"
    fix = (
        "a float32 x must take the same path as a float64 one: no branch on x.dtype, and arithmetic in x's dtype "
        "or wider (float32 in float32 or in float64), never narrower (float16, bfloat16)."
    )
    out = got.get("output") or {}
    if out.get("kind") == "tensor" and out.get("dtype") == "float32" and list(out["shape"]) == list(x.shape):
        bad, err = wrong_entries(out["value"], want_y, F32_RTOL, F32_ATOL)
        if bad.any():
            parts["forward"].fail(
                f"for a float32 x forward is wrong in {int(bad.sum())} of {bad.numel()} entries {where}: "
                f"{index_list(bad)}; largest error {err:.3g} (float32 arithmetic errs near 1e-7 relative).",
                fix,
            )
    if "backward_error" in got or not got.get("returns"):
        return
    grad, problem = _tensor_return(got["returns"], x.shape)
    if problem or got["returns"][0].get("dtype") != "float32":
        return  # the interface part judges a missing, misshapen or mistyped gradient
    bad, err = wrong_entries(grad, want_g, F32_RTOL, F32_ATOL + float32_slack(activation, x, u))
    if bad.any():
        hints = _derivative_hints(activation, x, u, grad, rtol=F32_RTOL, atol=F32_ATOL)
        parts["reference"].fail(
            f"for a float32 x the gradient disagrees with the reference backward in {int(bad.sum())} of "
            f"{bad.numel()} entries {where}: {index_list(bad)}; largest error {err:.3g}, though it is right "
            "for float64 x: backward must compute the same derivative in every dtype.",
            *hints,
            fix,
        )


RECOMPUTED = {"silu": "σ(x)", "gelu_tanh": "tanh(√(2/π)(x + 0.044715x³))"}


def _judge_memory(got, activation, x, part):
    saved = got.get("saved_tensors")
    storages = got.get("saved_storages") or []
    shape = list(x.shape)
    if saved is None:
        return
    judge_attributes(got, part)
    if len(saved) == 0:
        part.fail(
            "forward saved no tensor with ctx.save_for_backward.",
            "keep x with ctx.save_for_backward(x): a tensor kept as an attribute of ctx (ctx.x = x) escapes "
            "autograd's checks and its saved-tensor hooks, so its memory is invisible.",
        )
    elif len(saved) != 1 or saved[0] != shape:
        part.fail(
            f"forward saved {len(saved)} tensor(s) of shape(s) {', '.join(str(tuple(s)) for s in saved)}; "
            f"a fused {NAMES[activation]} saves one, x itself (shape {tuple(shape)}).",
            f"save only x: everything else backward needs ({RECOMPUTED[activation]}) is cheap to recompute from x, "
            "and every saved tensor stays in memory until backward.",
        )
    elif got.get("saved_is_input") != [True]:
        part.fail(
            "forward saved one tensor of x's shape, but not x: backward needs x, so x is what to save.",
            "a tensor kept as an attribute of ctx (ctx.x = x) is memory too, only invisible: save x itself "
            "with ctx.save_for_backward(x).",
        )
    # Bytes, not only tensors: a saved "x" that is a view into a larger buffer (x and σ(x) side by side) keeps the
    # whole buffer. Triton Functions too: they save x (its contiguous copy), nothing more.
    mine = sum(s["bytes"] for s in storages)
    composed = composed_saved_bytes(activation, tuple(shape))
    limit = {"silu": 0.5, "gelu_tanh": 0.25}[activation]
    if mine > limit * composed:
        hinted = bool(part.hints)  # the shape message above already says what to save
        part.fail(
            f"forward keeps {mine} bytes for backward (measured with saved-tensor hooks); the composed PyTorch "
            f"expression keeps {composed}, and the fused one should keep at most {limit:g} of that.",
            None if hinted else "save x only and recompute the rest in backward.",
        )


def _judge_meta(got, part):
    fix = (
        "a new tensor takes the default device and dtype unless you say otherwise: make new tensors on the "
        "input's device and with its dtype."
    )
    if "error" in got:
        part.fail("on a tensor of another device (meta) your Function failed: " + got["error"].splitlines()[0], fix)
        return
    if "backward_error" in got:
        part.fail("on a tensor of another device (meta) backward failed: " + got["backward_error"].splitlines()[0], fix)
        return
    out = got.get("output", {})
    if out.get("device") != "meta":
        part.fail(f"for an x on the meta device forward returned a tensor on {out.get('device', 'no device')}.", fix)
    returns = got.get("returns") or []
    if returns and returns[0].get("device") != "meta":
        part.fail(f"for an x on the meta device backward returned a gradient on {returns[0].get('device')}.", fix)

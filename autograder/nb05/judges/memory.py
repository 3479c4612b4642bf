"""Notebook 05's judges of GatherRows, recomputation, autocast and the memory measurements."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ...feedback import CheckFailed
from ...judges.answers import number, per_case
from ...judges.function import FunctionReference, add_reference, draw_seed, judge_function
from ...judges.verdict import Part, Verdict
from ...registry import ProbeData, decides
from ..cases import (
    generator,
    linear_case,
    recompute_input,
    recompute_problem,
    saved_bytes_problem,
)
from .common import (
    draw_bandwidth_cases,
    draw_recompute_problems,
    draw_saved_bytes_problems,
    judge_attributes,
    verdict_of_parts,
    wrong_entries,
)

# --------------------------------------------------------------------------------------------- GatherRows


@decides("check_gather_rows", draw=draw_seed)
def judge_gather(
    data: ProbeData, seed: int = 0, cases: int = 2, points: float = 1, double_backward: bool = False
) -> Verdict:
    try:
        base = judge_function(
            data["function"],
            reference="gather_rows",
            seed=seed,
            cases=cases,
            points=points,
            double_backward=double_backward,
            cuda=False,
        )
    except CheckFailed as failure:
        base = getattr(failure, "verdict", None)
        if base is None:
            raise
    parts = {p.name: p for p in base.parts}
    device = Part("device")
    fix = (
        "the gradient belongs to the weight: make it on the weight's device, with its dtype, whatever the default "
        "device and dtype are."
    )
    for label, got in data["devices"].items():
        want_device, want_dtype = ("meta", "float32") if label == "meta" else ("cpu", "bfloat16")
        if "error" in got:
            device.fail(f"with a {label} weight your Function failed: {got['error'].splitlines()[0]}", fix)
            continue
        out = got["output"]
        if out.get("device") != want_device or out.get("dtype") != want_dtype:
            device.fail(
                f"for a {label} weight forward returned a {out.get('dtype')} tensor on {out.get('device')}.", fix
            )
        returns = got.get("returns") or []
        if not returns or returns[0].get("kind") != "tensor":
            device.fail(f"for a {label} weight backward returned no gradient for the weight.", fix)
        elif returns[0]["device"] != want_device or returns[0]["dtype"] != want_dtype:
            device.fail(
                f"for a {label} weight the gradient is a {returns[0]['dtype']} tensor on {returns[0]['device']}.", fix
            )
    parts["device"] = device
    # A lost contribution of a repeated index is the classic mistake: name it.
    for p in (parts.get("gradcheck"), parts.get("reference")):
        if (
            p is not None
            and p.passed is False
            and data["function"]["cases"]
            and not any("raised" in m for m in p.messages)
        ):  # wrong numbers, not an error
            p.hints.append(
                "an index that appears twice must collect both contributions: an indexed assignment keeps only "
                "one of them; the gradient rows must be added up."
            )
            break
    return verdict_of_parts(parts, points, base.title)


def gather_reference(weight: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return weight[index]


add_reference(FunctionReference(name="gather_rows", reference=gather_reference))


# --------------------------------------------------------------------------------------------- Checkpoint


@decides("check_recompute", draw=draw_recompute_problems)
def judge_recompute(
    data: ProbeData,
    problems: Sequence[str] = ("gelu_chain", "sin_exp", "mlp"),
    seed: int = 0,
    points: float = 1,
    name: str = "Checkpoint",
) -> Verdict:
    if [d["problem"] for d in data] != list(problems):
        raise CheckFailed("the answer does not cover exactly the functions the check asked for.")
    parts = {k: Part(k) for k in ("forward", "reference", "interface", "memory", "calls")}
    for got in data:
        problem = got["problem"]
        x = recompute_input(problem, seed).requires_grad_(True)
        want = recompute_problem(problem)(x)
        where = f"(fn = '{problem}', x of shape {tuple(x.shape)})"
        out = got["output"]
        if out["kind"] != "tensor" or list(out["shape"]) != list(want.shape):
            parts["forward"].fail(f"forward should return fn(x), a tensor of shape {tuple(want.shape)} {where}.")
            continue
        if not torch.allclose(out["value"], want.detach(), rtol=1e-10, atol=1e-12):
            parts["forward"].fail(f"forward's output is not fn(x) {where}.")
        if not got["requires_grad"]:
            parts["interface"].fail(f"the output does not require grad {where}: return the result of apply.")
        if "backward_error" in got:
            hint = (
                "backward runs with recording off, like forward: recomputing fn there records nothing for autograd "
                "to differentiate unless recording is switched back on for it."
                if "does not require grad" in got["backward_error"]
                else None
            )
            for key in ("reference", "interface"):
                parts[key].fail(got["backward_error"], hint)
            continue
        if got.get("returns") is None:
            parts["reference"].fail(f"no gradient came back {where}.")
            continue
        u = torch.randn(want.shape, generator=_recompute_generator(seed, problem), dtype=torch.float64)
        (want_g,) = torch.autograd.grad(want, x, u)
        _judge_recompute_gradient(got["returns"], want_g, x, where, parts)
        _judge_recompute_memory(got, x, where, parts)
    return verdict_of_parts(parts, points, f"{name}.apply(fn, x)")


def _judge_recompute_gradient(returns: list, want_g, x, where: str, parts: dict[str, Part]) -> None:
    if len(returns) != 2 or returns[0]["kind"] != "none":
        parts["interface"].fail(
            f"backward returned {len(returns)} value(s) starting with "
            f"{returns[0].get('type', returns[0]['kind'])}; forward takes (fn, x), so backward "
            "returns (None, grad_x): None for the function."
        )
    grad = returns[1] if len(returns) > 1 else returns[0]
    if grad["kind"] != "tensor" or list(grad["shape"]) != list(x.shape):
        parts["reference"].fail(f"the gradient for x is not a tensor of x's shape {where}.")
    elif not torch.allclose(grad["value"], want_g, rtol=1e-8, atol=1e-10):
        bad, err = wrong_entries(grad["value"], want_g, 1e-8, 1e-10)
        hint = None
        if torch.count_nonzero(grad["value"]) == 0:
            hint = (
                "the gradient is all zeros: the recomputation recorded no graph from x; it needs its own copy of x "
                "that requires grad, with recording on."
            )
        parts["reference"].fail(
            f"the gradient for x is wrong in {int(bad.sum())} of {bad.numel()} entries {where}; "
            f"largest error {err:.3g}.",
            hint,
        )


def _judge_recompute_memory(got: dict, x, where: str, parts: dict[str, Part]) -> None:
    """What forward kept (x only, not fn's intermediates), and how often fn ran (once in each pass)."""
    storages = got["saved_storages"]
    x_bytes = x.numel() * x.element_size()
    kept = sum(s["bytes"] for s in storages)
    stored_graph = kept > x_bytes
    if stored_graph:
        parts["memory"].fail(
            f"forward keeps {kept} bytes for backward {where}; x alone is {x_bytes}: fn's intermediates were stored.",
            "run fn in forward without recording a graph (forward already runs with recording off: do not switch "
            "it back on) and save x only.",
        )
    elif not storages:
        parts["memory"].fail(
            f"forward saved nothing with ctx.save_for_backward {where}.",
            "backward needs x to recompute fn: save it for backward (fn itself is not a tensor and can stay on ctx).",
        )
    judge_attributes(got, parts["memory"])
    # A forward that recorded fn's graph needs no recomputation: that is the memory part's mistake, not another.
    backward_calls_wrong = got.get("backward_calls") != 1 and not (stored_graph and got.get("backward_calls") == 0)
    if got["forward_calls"] != 1 or backward_calls_wrong:
        parts["calls"].fail(
            f"fn ran {got['forward_calls']} time(s) in forward and {got.get('backward_calls', 0)} "
            f"in backward {where}; recomputing means once each."
        )


def _recompute_generator(seed, problem):
    return generator(seed, len(problem), salt=17)


# --------------------------------------------------------------------------------------------- autocast


@decides("check_autocast_linear", draw=draw_seed)
def judge_autocast_linear(
    data: ProbeData, seed: int = 0, cases: int = 2, points: float = 1, name: str = "Linear32"
) -> Verdict:
    if len(data["cases"]) != cases:
        raise CheckFailed(f"the answer covers {len(data['cases'])} cases; {cases} were asked for.")
    parts = {k: Part(k) for k in ("forward", "reference", "autocast", "autocast_backward")}
    for case, got in enumerate(data["cases"]):
        c = linear_case(seed, case)
        where = f"(case {case + 1}, x {tuple(c['x'].shape)}, W {tuple(c['W'].shape)})"
        _judge_linear32_float64(got["float64"], c, where, parts)
        _judge_linear32_autocast(got["autocast"], c, where, parts)
    return verdict_of_parts(parts, points, f"{name}.apply(x, W, b)")


def _judge_linear32_float64(f64: dict, c: dict, where: str, parts: dict[str, Part]) -> None:
    """Without autocast, in float64: the output and the three gradients, in float64 and right."""
    x, W, b = (c[k].clone().requires_grad_(True) for k in ("x", "W", "b"))
    want = x @ W + b
    want_grads = torch.autograd.grad(want, (x, W, b), c["u"])
    out = f64["output"]
    # forward that converts its inputs itself (x.float()) turns float64 into float32 even without autocast
    own_cast = (
        "without autocast, Linear32 computes in its inputs' own dtype: converting them to float32 is "
        "autocast's business, done for forward only while autocast is on (what forward's decorator arranges)."
    )
    if (
        out["kind"] != "tensor"
        or list(out["shape"]) != list(want.shape)
        or not torch.allclose(out["value"], want.detach(), rtol=1e-9, atol=1e-10)
    ):
        parts["forward"].fail(
            f"in float64 without autocast, forward is not x @ W + b {where}"
            + (f": it returned {out['dtype']}." if out.get("dtype") not in (None, "float64") else "."),
            own_cast if out.get("dtype") == "float32" else None,
        )
    if f64.get("backward_error"):
        error = f64["backward_error"]
        demoted = out.get("dtype") == "float32"  # forward's own cast: backward then meets float32 and float64
        parts["reference"].fail(
            f"in float64 without autocast, backward raised {error} {where}.",
            own_cast if demoted or "dtype" in error or "!=" in error else None,
            same_mistake_as="forward" if demoted else None,
        )
    returns = f64.get("returns") or []
    for i, label in enumerate(() if f64.get("backward_error") else ("x", "W", "b")):
        r = returns[i] if i < len(returns) else {"kind": "missing"}
        if (
            r["kind"] != "tensor"
            or list(r["shape"]) != list(want_grads[i].shape)
            or not torch.allclose(r["value"], want_grads[i], rtol=1e-8, atol=1e-10)
        ):
            hint = (
                "the bias is added to every row: its gradient sums grad_output over the batch."
                if label == "b" and r["kind"] == "tensor" and list(r["shape"]) == list(c["u"].shape)
                else None
            )
            parts["reference"].fail(f"in float64 the gradient for {label} is wrong or missing {where}.", hint)


def _judge_linear32_autocast(auto: dict, c: dict, where: str, parts: dict[str, Part]) -> None:
    """Under autocast(bfloat16): forward computed in float32 from the values autocast was given, and backward
    under the autocast state forward had."""
    # Under autocast: compare with float64 products of the values autocast was given.
    xa, Wa, ba = (
        c["x"].to(torch.bfloat16).to(torch.float64).requires_grad_(True),
        c["W"].to(torch.float32).to(torch.float64).requires_grad_(True),
        c["b"].to(torch.float32).to(torch.float64).requires_grad_(True),
    )
    want_a = xa @ Wa + ba
    out = auto["output"]
    if out["kind"] != "tensor":
        parts["autocast"].fail(f"under autocast forward returned no tensor {where}.")
        return
    rel = float((out["value"] - want_a.detach()).abs().max() / want_a.detach().abs().max())
    if out["dtype"] != "float32" or rel > 1e-4:
        parts["autocast"].fail(
            f"under autocast(bfloat16) forward returned a {out['dtype']} tensor with relative error "
            f"{rel:.2g} {where}; computed in float32 it would be about 1e-7.",
            "autocast is still on inside forward, so the product is computed in bfloat16 whatever the inputs' "
            "dtype: forward must run with autocast off and its inputs in float32 (torch.amp has a decorator for "
            "forward that arranges both).",
        )
    u = c["u"].to(torch.float32 if out["dtype"] == "float32" else torch.bfloat16).to(torch.float64)
    want_ag = torch.autograd.grad(want_a, (xa, Wa, ba), u)
    returns = auto.get("returns") or []
    for i, label in enumerate(("x", "W", "b")):
        r = returns[i] if i < len(returns) else {"kind": "missing"}
        if r["kind"] != "tensor" or list(r["shape"]) != list(want_ag[i].shape):
            parts["autocast_backward"].fail(f"under autocast backward returned no gradient of {label}'s shape {where}.")
            continue
        rel = float((r["value"] - want_ag[i]).abs().max() / want_ag[i].abs().max().clamp_min(1e-30))
        if rel > 1e-4:
            parts["autocast_backward"].fail(
                f"under autocast the gradient for {label} has relative error {rel:.2g} {where}: it was computed in "
                "bfloat16.",
                "backward runs under whatever autocast state surrounds the .backward() call: it must run with "
                "the state forward had (torch.amp has a decorator for backward too).",
            )
            break


# --------------------------------------------------------------------------------------------- saved_bytes, bandwidth


def reference_saved_bytes(problem: str, seed: int = 0) -> tuple[int, int, int]:
    """(bytes counting each storage once, bytes counting every save, number of saves) for a problem."""
    fn, inputs = saved_bytes_problem(problem, seed)
    saves: list[tuple[int, int]] = []

    def pack(t):
        saves.append((t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(dict(saves).values()), sum(b for _, b in saves), len(saves)


@decides("check_saved_bytes", draw=draw_saved_bytes_problems)
def judge_saved_bytes(data: ProbeData, problems: Sequence[str] = (), seed: int = 0) -> None:
    data = [number(v, f"the answer for '{p}'") for v, p in zip(per_case(data, problems), problems)]
    for problem, got in zip(problems, data):
        want, every_save, saves = reference_saved_bytes(problem, seed)
        if got == want:
            continue
        call = f"saved_bytes(fn, *inputs) for the test function '{problem}'"
        hints = []
        if got == every_save:
            hints.append(
                "the same tensor can be saved more than once (x * x saves x for both factors; σ(x) is saved by "
                "sigmoid and by the product): count each storage once, e.g. by t.untyped_storage().data_ptr()."
            )
        elif got == saves:
            hints.append("that is the number of saved tensors; return their size in bytes (numel × element_size).")
        elif want and got * 4 == want * 2 and problem == "half_precision":
            hints.append("a bfloat16 tensor takes 2 bytes per entry: use t.element_size(), not 4.")
        elif problem == "no_grad_needed":
            hints.append(
                "when no input requires grad nothing is recorded and nothing is saved: measure what the pack "
                "hook of torch.autograd.graph.saved_tensors_hooks receives, not the inputs or outputs."
            )
        elif want and got * 8 == want and problem != "matmul":
            hints.append("count bytes, not bits.")
        raise CheckFailed(
            f"{call} returned {got:g}, which is too {'many' if got > want else 'few'} bytes."
            + "".join(f"\nHint: {h}" for h in hints)
        )
    return None


@decides("check_bandwidth", draw=draw_bandwidth_cases)
def judge_bandwidth(data: ProbeData, cases: Sequence[Any] = ()) -> None:
    data = [number(v, f"answer {i}") for i, v in enumerate(per_case(data, cases))]
    for (n, size, seconds, direction), got in zip(cases, data):
        moved = {"forward": 2, "backward": 3}[direction] * n * size
        want = moved / seconds / 1e9
        if math.isclose(got, want, rel_tol=1e-9):
            continue
        call = f"effective_bandwidth({n}, {size}, {seconds:g}, '{direction}')"
        hints = []
        if math.isclose(got * 2**30, want * 1e9, rel_tol=1e-9):
            hints.append("a GB here is 10⁹ bytes (as GPU data sheets count), not 2³⁰.")
        elif math.isclose(got, want * (3 / 2 if direction == "forward" else 2 / 3), rel_tol=1e-9):
            hints.append(
                "forward reads x and writes y (2·N·bytes); backward reads x and grad_output and writes grad_x "
                "(3·N·bytes)."
            )
        elif math.isclose(got * size, want, rel_tol=1e-9):
            hints.append("multiply the number of elements by the bytes per element.")
        elif math.isclose(got * want, (moved / 1e9) ** 2 / seconds * seconds, rel_tol=1e-6) or math.isclose(
            got, seconds / (moved / 1e9), rel_tol=1e-9
        ):
            hints.append("bandwidth is bytes per second: divide the bytes by the seconds.")
        raise CheckFailed(
            f"{call} returned {got:.4g} GB/s, which is too {'high' if got > want else 'low'}."
            + "".join(f"\nHint: {h}" for h in hints)
        )
    return None

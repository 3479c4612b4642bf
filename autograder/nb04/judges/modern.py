"""Notebook 04's judges of the modern forms: setup_context with vmap, and torch.library's custom_op."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as nnf

from ...judges import answers
from ...judges.verdict import Part, Verdict
from ...registry import ProbeData, decides
from ..cases import (
    OPCHECK_TESTS,
    inputs_elementwise,
    shapes_of,
)
from .common import (
    MODERN_ENTRY,
    OP_ENTRY,
    OP_FIRST_ENTRY,
    VMAP_ENTRY,
    ListOf,
    Parts,
    case_data,
    draw_elementwise_cases,
    same_values,
    valid,
    values_entry,
    vjp,
    wrong_tensor,
)

# ------------------------------------------------------------------------------------------ setup_context, jvp, vmap


@decides("check_modern", draw=draw_elementwise_cases)
def judge_modern(
    data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, hand_written_vmap: bool = False, points: float = 3
) -> Verdict:
    title = "Softplus with a hand-written vmap" if hand_written_vmap else "Softplus (setup_context, jvp, vmap)"
    p = Parts(title, "values", *(("vmap",) if hand_written_vmap else ("forward_mode", "vmap")))
    shapes = shapes_of(cases)
    top = {
        "has_setup_context": "flag",
        "generate_vmap_rule": "flag",
        "vmap_calls": "int",
        "cases": ListOf(VMAP_ENTRY if hand_written_vmap else MODERN_ENTRY, length=len(shapes)),
    }
    valid(data, {**top, "vmap_defined": "flag"} if hand_written_vmap else top, f"{title}'s data")
    if not data["has_setup_context"]:
        p["values"].fail(
            "the Function has no setup_context: write forward(x) without ctx and setup_context(ctx, inputs, output)."
        )
    if hand_written_vmap:
        _judge_vmap_rule_defined(data, p["vmap"])
    for case, got in enumerate(answers.per_case(data["cases"], shapes)):
        x, u = inputs_elementwise(seed, case, shape=shapes[case])
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        values_entry(p["values"], got, x, u, nnf.softplus, where)
        if not hand_written_vmap:
            _judge_forward_mode(got, x, u, where, p["forward_mode"])
        _judge_vmap(got["vmap"], x, where, p["vmap"], hand_written_vmap)
    return p.verdict(points)


def _judge_vmap_rule_defined(data, part: Part) -> None:
    if not data["vmap_defined"]:
        part.fail(
            "the Function defines no `vmap` staticmethod of its own.",
            "the exercise asks for the rule written by hand, as a staticmethod of the class; a generated rule "
            "does not count here.",
        )
    elif data["generate_vmap_rule"]:
        part.fail("generate_vmap_rule is True, so PyTorch writes the rule and your vmap is never used.")
    elif data["vmap_calls"] == 0:
        part.fail("torch.vmap never called your vmap staticmethod.")


def _judge_forward_mode(got, x, u, where: str, part: Part) -> None:
    """The jvp's tangent against forward-mode AD through softplus, and gradcheck's forward-mode check."""
    import torch.autograd.forward_ad as fwAD

    if got["jvp_error"]:
        hint = None
        if "not enough values to unpack" in got["jvp_error"] or "saved" in got["jvp_error"]:
            hint = (
                "in jvp, ctx.saved_tensors holds only what setup_context saved for forward mode: that is a "
                "list of its own, apart from what it saved for backward."
            )
        elif "own output as the tangent" in got["jvp_error"]:
            hint = (
                "a tangent is a new tensor, computed from the tangent jvp receives; handing back a tensor "
                "forward saved makes the output its own tangent (which crashes Python outside the grader)."
            )
        elif "jvp" in got["jvp_error"]:
            hint = "forward mode needs a jvp rule: from the input's tangent, the output's tangent."
        part.fail(f"forward-mode AD raised {got['jvp_error']} {where}.", hint)
        return
    with fwAD.dual_level():
        want_t = fwAD.unpack_dual(nnf.softplus(fwAD.make_dual(x, u))).tangent
    problem = wrong_tensor(got["jvp"], want_t, f"jvp's tangent {where}")
    if problem:
        unchanged = got["jvp"] is not None and same_values(got["jvp"], u)
        hint = (
            "jvp returned the tangent unchanged: the output's tangent is the input's tangent times softplus's "
            "derivative."
            if unchanged
            else None
        )
        part.fail(problem, hint)
    elif got["gradcheck_forward_ad"] is not True:
        part.fail(f"gradcheck(..., check_forward_ad=True) fails {where}: {got['gradcheck_forward_ad']}")


def _judge_vmap(results: dict, x, where: str, part: Part, hand_written: bool) -> None:
    batch = torch.stack([x, -x, 0.5 * x])
    for label, result in results.items():
        if "error" in result:
            hint = (
                "vmap needs a rule for a Function: let PyTorch generate it (a class attribute says so) or write one."
                if "generate_vmap_rule" in result["error"] or "vmap staticmethod" in result["error"]
                else None
            )
            if hand_written and "out_dims" in result["error"].lower():
                hint = (
                    "a vmap rule returns the output and where its batch dimension is: softplus works entry by "
                    "entry, so the batch dimension stays where the input's was."
                )
            part.fail(f"torch.vmap with {label} raised {result['error']} {where}.", hint)
            continue
        problem = wrong_tensor(result["value"], nnf.softplus(batch), f"torch.vmap's result with {label} {where}")
        if problem:
            part.fail(
                problem,
                "softplus works entry by entry: the output's batch dimension stays where the input's was, and "
                "the rule must say where that is."
                if hand_written
                else None,
            )


# ------------------------------------------------------------------------------------------ custom_op


@decides("check_custom_op", draw=draw_elementwise_cases)
def judge_custom_op(data: ProbeData, seed: int = 0, cases: int | Sequence[Any] = 2, points: float = 4) -> Verdict:
    p = Parts("softplus_op (torch.library.custom_op)", "values", "opcheck", "compile")
    shapes = shapes_of(cases)
    answers.entry(data, "softplus_op's data", ("name", "cases"))
    valid(data["name"], "text", "softplus_op's name")
    for case, got in enumerate(case_data(data["cases"], shapes, "softplus_op", OP_ENTRY, OP_FIRST_ENTRY)):
        x, u = inputs_elementwise(seed, case, shape=shapes[case])
        where = f"(case {case + 1}, x of shape {tuple(x.shape)})"
        want = vjp(nnf.softplus, x, u)
        register_hint = (
            "autograd does not know the op's backward: a custom op is opaque to autograd until its backward and "
            "setup_context are registered with it."
            if got["backward_error"]
            and ("autograd" in got["backward_error"] or "does not require grad" in got["backward_error"])
            else None
        )
        values_entry(p["values"], got, x, u, nnf.softplus, where, what="the op", error_hint=register_hint)
        opcheck = got["opcheck"]
        failed = {k: v for k, v in opcheck.items() if v != "SUCCESS"}
        missing = [t for t in OPCHECK_TESTS if t not in opcheck]
        if missing and "opcheck" not in opcheck:
            p["opcheck"].fail(f"opcheck did not run {', '.join(missing)}.")
        for test, message in failed.items():
            hint = None
            if "fake" in message.lower():
                hint = (
                    "opcheck and torch.compile run the op on fake tensors (shapes and dtypes, no data): the op needs a "
                    "fake implementation, one that makes an output of the right shape and dtype without computing it."
                )
            elif "alias" in message.lower():
                hint = "a custom op must return a new tensor, not its input or a view of it."
            p["opcheck"].fail(f"opcheck's {test} fails {where}: {message[:300]}", hint)
        compiled = got.get("compiled")  # the first case only (validated above)
        if compiled is None:
            continue
        if "error" in compiled:
            hint = (
                "torch.compile traces the op with fake tensors: the op needs a fake implementation."
                if "fake" in compiled["error"].lower()
                else None
            )
            p["compile"].fail(
                f"torch.compile(..., backend='aot_eager', fullgraph=True) failed {where}: {compiled['error'][:300]}",
                hint,
                same_mistake_as="opcheck" if hint else None,  # the missing fake fails opcheck too
            )
        else:
            # compiled, the op runs the same forward and backward: a mistake in them is the values part's
            same = "values" if p["values"].passed is False else None
            if not math.isclose(compiled["loss"], float((nnf.softplus(x) * u).sum()), rel_tol=1e-9, abs_tol=1e-12):
                p["compile"].fail(f"compiled, the op gives a different value {where}.", same_mistake_as=same)
            problem = wrong_tensor(compiled["grad"], want, f"the compiled op's gradient {where}")
            if problem:
                p["compile"].fail(problem, same_mistake_as=same)
    return p.verdict(points)

"""Notebook 07's judge of FlashAttention, the Function around the kernels: run with the course's kernels in place of
the learner's (autograder/course_kernels.py), whose launches the launcher computed and logged."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ...judges import answers, launch_evidence
from ...judges.verdict import Part, Verdict, verdict_of
from ...registry import ProbeData, decides
from ..cases import FUNCTION_CASES, function_inputs, function_runs, reference_attention, reference_gradients
from .pytorch import close, titled, where_wrong

FUNCTION_PARTS = {
    "forward": "forward: O, the course's forward kernel's output (batch, heads, N, d)",
    "backward": "backward: dq, dk, dv, the course's backward kernel's gradients",
    "causal": "the causal flag handed to the kernels",
    "layout": "q, k, v as transposed views (not contiguous)",
    "needs_input_grad": "only q needing a gradient",
    "saved": "forward keeps q, k, v, O and L only (O(N) per head, nothing N×N)",
    "kernels": "O and the gradients are what the course's kernels stored (the Function launches them)",
}
COURSE = {"attention_forward_kernel", "attention_backward_kernel"}
_RUN_WORDS = {"case": "", "transposed": ", q, k, v transposed views", "only q": ", only q needing a gradient"}
_RUN_PART = {"transposed": "layout", "only q": "needs_input_grad"}


def draw_function(rng: random.Random, count: int) -> dict[str, Any]:
    cases = [
        (rng.randint(1, 2), rng.randint(1, 3), rng.randint(17, 48), rng.choice((16, 32)), k % 2 == 1)
        for k in range(2 * count)
    ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


@decides("check_flash_attention", draw=draw_function)
def judge_flash_attention(data: ProbeData, cases: Sequence[Any] = (), seed: int = 0, points: float = 5) -> Verdict:
    cases = [tuple(c) for c in cases] or list(FUNCTION_CASES)
    parts = titled(FUNCTION_PARTS)
    data = answers.entry(data, "the answer", ("bound", "runs"))
    runs = function_runs(cases)
    for (case, kind), entry in zip(runs, answers.per_case(data["runs"], runs)):
        B, H, N, d, causal = case
        where = f"q of shape {(B, H, N, d)}, causal={causal}" + _RUN_WORDS[kind]
        part = parts[_RUN_PART.get(kind) or ("causal" if causal else "forward")]
        _judge_run(parts, part, function_inputs(seed, case, transposed=kind == "transposed"), entry, where, kind)
    if parts["kernels"].passed is False:  # what the kernels did not compute earns nothing, in any part
        for name, part in parts.items():
            if name != "kernels":
                part.unscore("not scored: the Function's results are not the kernels' work")
    return verdict_of(list(parts.values()), points, "FlashAttention (the Function around the kernels)")


def _judge_run(parts: dict[str, Part], part: Part, inputs: dict, entry: dict, where: str, kind: str) -> None:
    q, k, v, causal = inputs["q"], inputs["k"], inputs["v"], inputs["causal"]
    out = answers.tensor(entry.get("output"), f"the output ({where})", tuple(q.shape))
    want = reference_attention(q, k, v, causal)
    forward = launch_evidence.of(launch_evidence.window(entry, "forward"), COURSE)
    if not close(out, want):
        part.fail(f"{where}: O {where_wrong(out, want)}", _FORWARD_HINT if part.name != "causal" else _CAUSAL_HINT)
        return
    if not launch_evidence.produced(forward, out, entry.get("output_layout")):
        parts["kernels"].fail(
            f"{where}: forward's output is not what the forward kernel stored",
            "return O as the kernel wrote it (a view of the buffer handed to attention_forward_kernel).",
        )
        return
    if part.name in ("forward", "causal"):
        _judge_saved(parts["saved"], inputs, entry, where)
    if "backward_error" in entry:
        target = part if part.name in ("layout", "needs_input_grad") else parts["backward"]
        target.fail(f"{where}: backward failed: {str(entry['backward_error']).splitlines()[0]}", _BACKWARD_HINT)
        return
    returns = answers.listed(entry.get("returns"), "backward's returns")
    layouts = answers.listed(entry.get("grad_layouts"), "the gradients' layouts")
    want_grads = reference_gradients(inputs)
    backward = launch_evidence.of(launch_evidence.window(entry, "backward"), COURSE)
    needed = (True, False, False) if kind == "only q" else (True, True, True)
    if len(returns) != 4 or returns[3].get("kind") != "none":
        parts["backward"].fail(
            f"{where}: backward returned {len(returns)} value(s): one per input of forward (q, k, v, causal), None "
            "for causal."
        )
        return
    for name, r, lay, w, need in zip("qkv", returns, layouts, want_grads, needed):
        if not need:
            continue
        g = r.get("value") if r.get("kind") == "tensor" else None
        target = part if part.name in ("layout", "needs_input_grad") else parts["backward"]
        if g is None or not close(answers.tensor(g, f"d{name}", tuple(q.shape)), w):
            target.fail(f"{where}: d{name} " + ("missing" if g is None else where_wrong(g, w)), _BACKWARD_HINT)
            return
        if not launch_evidence.produced(backward, g, lay):
            parts["kernels"].fail(
                f"{where}: d{name} is not what the backward kernel stored",
                "return the gradients flash_backward hands back (viewed in q's shape).",
            )
            return


def _judge_saved(part: Part, inputs: dict, entry: dict, where: str) -> None:
    q = inputs["q"]
    B, H, N, d = q.shape
    itemsize = q.element_size()
    allowed = (4 * N * d + N) * B * H * itemsize
    saved = answers.listed(entry.get("saved"), "what forward saved")
    attributes = answers.listed(entry.get("attributes"), "what forward kept on ctx")
    kept = sum(answers.integer(s.get("bytes"), "a saved storage") for s in saved)
    kept += sum(answers.integer(a.get("bytes"), "a kept storage") for a in attributes)
    if attributes:
        part.fail(f"{where}: forward keeps tensors as attributes of ctx", "keep tensors with ctx.save_for_backward.")
    if kept > allowed:
        part.fail(
            f"{where}: forward keeps {kept} bytes for backward; q, k, v, O and L take {allowed}.",
            "save exactly q, k, v, O and L (their contiguous copies, if the kernels needed those): backward "
            "recomputes the rest.",
        )


_FORWARD_HINT = (
    "flatten batch and heads into one dimension of contiguous (batch·heads, N, d) tensors, launch the forward on "
    "them and view O back in q's shape."
)
_CAUSAL_HINT = "hand the causal flag to the kernel launch (CAUSAL=causal) and keep it on ctx for backward."
_BACKWARD_HINT = (
    "backward hands flash_backward the saved q, k, v, O, L and a contiguous dO of the same layout, and returns "
    "the gradients in q's shape (None for an input that needs none is allowed; None for causal)."
)

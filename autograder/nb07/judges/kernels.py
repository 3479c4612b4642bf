"""Notebook 07's judges of the attention kernels, run from their recorded text where grading decides nothing
(judges/kernel_runs.py): values against float64 references, what the watch saw each program read and store, and
the "compiles for a GPU" part."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import torch

from coursetools.gpu_compile import launch_signature, specialization_class

from ...feedback import CheckFailed
from ...judges import answers, kernel_compile, kernel_runs
from ...judges.kernel_compile import pointer
from ...judges.verdict import Part, Verdict, share_earned, verdict_of
from ...registry import FAILED, ProbeData, decides
from ..cases import (
    BACKWARD_CASES,
    KernelCase,
    backward_inputs,
    backward_runs,
    kernel_inputs,
    reference_attention,
    reference_gradients,
    reference_lse,
)
from .buffers import Counted, counted_start
from .mistakes import BACKWARD, FORWARD, KERNEL, TILED
from .pytorch import close, matched, titled, where_wrong

FORWARD_KERNEL_PARTS = {
    "values": "O, N a multiple of both blocks",
    "ragged": "N no multiple of a block (the last query and key blocks masked)",
    "causal": "the causal mask",
    "lse": "L, each row's log-sum-exp (base e)",
    "skip": "causal: the loop stops at the diagonal (no key block wholly above it is read)",
    "bounds": "each program reads its own query rows and its head's keys and values, and stores its own rows",
}


def forward_kernel_cases() -> list[KernelCase]:
    """The visible cases: one per part (heads, N, d, causal, BLOCK_Q, BLOCK_K, dtype)."""
    return [
        (2, 32, 16, False, 16, 16, "float64"),  # values
        (1, 40, 16, False, 16, 16, "float64"),  # ragged
        (2, 48, 16, True, 16, 16, "float64"),  # causal, skip
        (1, 37, 32, True, 16, 32, "float32"),  # causal and ragged, unequal blocks, float32
    ]


def draw_forward_kernel(rng: random.Random, count: int) -> dict[str, Any]:
    """count cases of each kind, of other sizes, blocks and head counts. Each long enough for its kind's mistakes to
    show: N spans two key blocks or more (the accumulator is rescaled), and a causal N more than 32 has a key block
    wholly above some query block's diagonal (the loop's bound shows)."""
    cases = []
    for _ in range(count):
        bq, bk, d = rng.choice((16, 32)), rng.choice((16, 32)), rng.choice((16, 32))
        whole = max(bq, bk) * rng.randint(2, 3)
        cases += [
            (rng.randint(1, 3), whole, d, False, bq, bk, "float64"),
            (rng.randint(1, 2), whole + rng.randint(1, 15), d, False, bq, bk, "float64"),
            (rng.randint(1, 2), rng.randint(33, 70), d, True, bq, bk, rng.choice(("float64", "float32"))),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


def kind_of(case: KernelCase) -> str:
    heads, N, d, causal, bq, bk, dtype = case
    return "causal" if causal else "ragged" if N % bq or N % bk else "values"


def _tolerance(dtype: str) -> tuple[float, float]:
    return (1e-9, 1e-11) if dtype == "float64" else (2e-4, 2e-5)


@decides("check_attention_forward_kernel", draw=draw_forward_kernel)
def judge_attention_forward_kernel(
    data: ProbeData, cases: Sequence[Any] = (), seed: int = 0, points: float = 6
) -> Verdict:
    cases = [tuple(c) for c in cases] or forward_kernel_cases()
    parts = titled(FORWARD_KERNEL_PARTS)
    params = {"cases": cases, "seed": seed}
    launches, record = kernel_compile.run_recorded(data, "autograder.nb07.probes:probe_forward_kernel", params)
    keys = ("output", "lse", "written_outside", "inputs_changed", "read_outside", "written_elsewhere", "costly_reads")
    judged, charged = [], {}  # charged: part -> the known mistake it was charged for
    for case, got in sorted(zip(cases, answers.per_case(launches, cases)), key=lambda c: _ORDER[kind_of(c[0])]):
        heads, N, d, causal, bq, bk, dtype = case
        entry = answers.entry(got, f"case {case}", keys)
        where = (
            f"{heads} head(s), N = {N}, d = {d}, {'causal, ' if causal else ''}BLOCK_Q = {bq}, BLOCK_K = {bk}, {dtype}"
        )
        right = _judge_forward_values(parts, charged, case, entry, where, seed)
        judged.append((entry, where, right))
        if causal and right and entry["costly_reads"]:
            parts["skip"].fail(
                f"{where}: the programs read {answers.integer(entry['costly_reads'], 'the costly reads')} entries of "
                "key blocks wholly above their diagonal",
                "a causal query block needs the key blocks up to the one holding its last row: the loop's bound can "
                "stop there ((block + 1) · BLOCK_Q), which halves the work of a long sequence.",
            )
    if not any(right for (_, _, right), case in zip(judged, _sorted(cases)) if kind_of(case) == "causal"):
        parts["skip"].unscore("not scored: no causal case is right yet (what a loop reads counts once it computes)")
    _judge_bounds(parts["bounds"], judged)
    _judge_forward_compiles(parts, record, cases)
    return verdict_of(list(parts.values()), points, "attention_forward_kernel (FlashAttention-2's forward)")


_ORDER = {"values": 0, "ragged": 1, "causal": 2}


def _sorted(cases: Sequence[KernelCase]) -> list[KernelCase]:
    """The cases in the order they are judged: plain, ragged, causal (a mistake is charged where it shows first)."""
    return sorted(cases, key=lambda c: _ORDER[kind_of(c)])


def _judge_forward_values(
    parts: dict[str, Part], charged: dict[str, str], case: KernelCase, entry: dict, where: str, seed: int
) -> bool:
    """One case's O and L; a mistake that shows in several kinds of case is charged to the first kind it shows in."""
    heads, N, d, causal, bq, bk, dtype = case
    inputs = kernel_inputs(seed, case)
    q, k, v = (inputs[n].to(torch.float64) for n in "qkv")
    o = answers.tensor(entry["output"], f"O of {where}", tuple(q.shape))
    lse = answers.tensor(entry["lse"], f"L of {where}", (heads, N))
    want_o, want_lse = reference_attention(q, k, v, causal), reference_lse(q, k, causal)
    rtol, atol = _tolerance(dtype)
    kind = kind_of(case)
    if not close(o, want_o, rtol, atol):
        tol = {"rtol": rtol, "atol": atol}
        mistake = (
            matched(KERNEL, o, q, k, v, causal, bq, bk, **tol)
            or matched(TILED, o, q, k, v, causal, bq, bk, pick=lambda r: r[0], **tol)
            or matched(FORWARD, o, q, k, v, causal, **tol)
        )
        # a known mistake already charged to an earlier kind of case costs that part's idea, once; anything else is
        # this kind's own failure (a kernel that computes nothing fails every part on its own)
        earlier = next(
            (p for p, name in charged.items() if mistake and name == mistake.name and _ORDER[p] < _ORDER[kind]), None
        )
        message = f"{where}: O {where_wrong(o, want_o, rtol, atol)}"
        if earlier:
            parts[kind].fail(message, same_mistake_as=earlier)
        else:
            parts[kind].fail(message, mistake.hint if mistake else _VALUE_HINTS[kind])
            if mistake:
                charged.setdefault(kind, mistake.name)
        if not close(lse, want_lse, rtol, atol):
            lse_message = f"{where}: L {where_wrong(lse, want_lse, rtol, atol)}"
            if mistake:
                parts["lse"].fail(lse_message, same_mistake_as=earlier or kind)
            else:
                parts["lse"].fail(lse_message, "store L = m + log(l) for each row, at lse_ptr + head · N + row.")
        return False
    if not close(lse, want_lse, rtol, atol):
        mistake = matched(TILED, lse, q, k, v, causal, bq, bk, pick=lambda r: r[1], rtol=rtol, atol=atol)
        parts["lse"].fail(
            f"{where}: L {where_wrong(lse, want_lse, rtol, atol)}",
            mistake.hint
            if mistake
            else "store L = m + log(l) for each row: the running maximum plus the log of the "
            "running sum, at lse_ptr + head · N + row.",
        )
        return False
    return True


_OWN = {
    "values": (),
    "ragged": ("padding keys counted",),
    "causal": ("diagonal masked", "one key too many", "mask below"),
}
_VALUE_HINTS = {
    "values": "each program holds one block of query rows of one head: a running maximum, sum and accumulator per "
    "row, updated key block by key block (the tiled forward of exercise 4, with tl.dot).",
    "ragged": "the last query block and the last key block reach past N: mask the loads of q, k and v (other=0.0), "
    "give the scores of keys at or beyond N the value −∞, and mask the stores.",
    "causal": "causal: the scores of keys after the query's own position are −∞ (column > row), in every key block "
    "the loop visits.",
}


def _judge_bounds(part: Part, judged: list) -> None:
    """Reads outside a program's own memory, stores into another's or outside the outputs, inputs changed: in the
    cases whose values were right (where they were wrong, that mistake is charged already, with its own hint)."""
    for entry, where, right in judged:
        if not right:
            continue
        elsewhere = answers.integer(entry["written_elsewhere"], "the write check")
        outside = answers.integer(entry["written_outside"], "the guard count")
        if answers.flag(entry["read_outside"], "the read check"):
            part.fail(
                f"{where}: a program reads memory that is not its own (another block's query rows, another head, or "
                "past the end of a tensor), whether or not its results use it",
                "mask every load with the rows it may read (query rows of its block below N, key rows below N) and "
                "start each head at head · N · d.",
            )
        elif elsewhere or outside:
            part.fail(
                f"{where}: the kernel stores outside its program's own rows of O and L ({elsewhere + outside} "
                "value(s))",
                "each program stores only its own query rows (mask rows ≥ N); on a GPU the programs run at once, so a "
                "store into another's rows races with it.",
            )
        elif answers.flag(entry["inputs_changed"], "the input check"):
            part.fail(f"{where}: the kernel wrote into q, k or v", "the inputs are only read.")


def _judge_forward_compiles(parts: dict[str, Part], record: Any, cases: Sequence[KernelCase]) -> None:
    others = [part for name, part in parts.items() if name != "bounds"]
    if share_earned(others)[0] == 0 or not any(p.passed for n, p in parts.items() if n in _ORDER or n == "lse"):
        parts["bounds"].unscore("not scored: the kernel earns nothing in the interpreter yet")
    parts["compiles"] = kernel_compile.compile_part()
    launches: dict[tuple, tuple] = {}
    for _heads, N, d, causal, bq, bk, dtype in cases:
        launches.setdefault((causal, bq, bk, d, dtype, specialization_class(N)), (N, d, causal, bq, bk, dtype))
    kernel_compile.judge_compiles(
        parts["compiles"],
        record,
        [
            (
                f"{dtype}, N={N}, d={d}, causal={causal}, BLOCK_Q={bq}, BLOCK_K={bk}",
                *launch_signature(
                    record,
                    [
                        *[pointer(dtype)] * 4,
                        pointer("float64" if dtype == "float64" else "float32"),
                        N,
                        1 / math.sqrt(d),
                    ],
                    {"CAUSAL": causal, "BLOCK_Q": bq, "BLOCK_K": bk, "HEAD_DIM": d},
                ),
            )
            for N, d, causal, bq, bk, dtype in launches.values()
        ],
        others=others,
    )


# --------------------------------------------------------------------------------------------- the backward

BACKWARD_PARTS = {
    "dv": "dV = Pᵀ·dO (N a multiple of the blocks, not causal)",
    "dq_dk": "dQ and dK through dS = P ∘ (dP − D), with the scale",
    "ragged": "N no multiple of a block (loads, scores and stores masked)",
    "causal": "causal: P recomputed with the mask",
    "kernels": "the gradients are what the launches wrote (replayed from the kernels' text)",
    "race": "no two programs store into one place (dQ, dK and dV race-free or atomic)",
    "memory": "never an N×N tensor (the memory PyTorch allocated while it ran)",
    "bounds": "every load and store inside the tensors handed to the launch",
}


def draw_backward(rng: random.Random, count: int) -> dict[str, Any]:
    """count cases of each kind. (A causal case in half the draws only, before: a backward that drops the causal mask
    kept the causal part in the others.)"""
    cases = []
    for _ in range(count):
        d = rng.choice((16, 32))
        cases += [
            (rng.randint(1, 2), 32 * rng.randint(1, 2), d, False, "float64"),
            (1, rng.randint(17, 70) | 1, d, False, "float64"),
            (rng.randint(1, 2), rng.randint(33, 70), d, True, rng.choice(("float64", "float32"))),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


def backward_kind(case: Sequence[Any]) -> str:
    heads, N, d, causal, dtype = case
    return "causal" if causal else "ragged" if N % 16 else "values"


@decides("check_flash_backward", draw=draw_backward)
def judge_flash_backward(data: ProbeData, cases: Sequence[Any] = (), seed: int = 0, points: float = 6) -> Verdict:
    cases = [tuple(c) for c in cases] or list(BACKWARD_CASES)
    runs = backward_runs(cases)
    parts = titled(BACKWARD_PARTS)
    entries = answers.per_case(data, runs)
    all_records: dict[str, dict] = {}
    right_somewhere = False
    for case, entry in sorted(zip(runs, entries), key=lambda c: _ORDER[backward_kind(c[0])]):
        heads, N, d, causal, dtype = case
        entry = answers.entry(entry, f"case {case}", ("plan", "largest"))
        plan = answers.entry(
            entry["plan"], f"the launches of case {case}", ("records", "launches", "buffers", "returns")
        )
        where = f"{heads} head(s), N = {N}, d = {d}, {'causal, ' if causal else ''}{dtype}"
        all_records.update(plan["records"])
        inputs = backward_inputs(seed, case)
        counted = counted_start(plan, _grader_computes(inputs))
        replayed = _replayed({**plan, "buffers": counted.buffers}, case, seed)
        right = _judge_backward_values(parts, case, inputs, replayed["returns"], plan, where, seed, counted)
        right_somewhere |= right
        if right:
            _judge_backward_memory(parts, case, replayed["seen"], entry["largest"], where)
    if parts["kernels"].passed is False:  # what the kernels did not compute earns nothing, in any part
        for name, part in parts.items():
            if name != "kernels":
                part.unscore("not scored: the gradients are not the kernels' work")
        return verdict_of(list(parts.values()), points, "flash_backward (FlashAttention-2's backward, in Triton)")
    if not right_somewhere:
        for name in ("race", "memory", "bounds"):
            parts[name].unscore("not scored: no gradient is right yet")
    _judge_backward_compiles(parts, all_records, data)
    return verdict_of(list(parts.values()), points, "flash_backward (FlashAttention-2's backward, in Triton)")


def _judge_backward_values(
    parts: dict[str, Part],
    case: tuple,
    inputs: dict,
    returns: list,
    plan: dict,
    where: str,
    seed: int,
    counted: Counted,
) -> bool:
    heads, N, d, causal, dtype = case
    wide = {n: inputs[n].to(torch.float64) for n in ("q", "k", "v", "do")}
    want = reference_gradients({**wide, "causal": causal})
    rtol, atol = _tolerance(dtype)
    rtol, atol = rtol * 10, atol * 10  # a gradient sums N products more than the output does
    if not _made_by_the_launches(parts["kernels"], returns, plan, where):
        return False
    got = [answers.tensor(g, "a gradient", (heads, N, d)) for g in returns]
    right = [close(g, w, rtol, atol) for g, w in zip(got, want)]
    held = (plan, case, seed, right, want, (rtol, atol), counted, where)
    if not all(right) and counted.changed and _right_only_from_what_buffers_held(parts["kernels"], *held):
        return False
    kind = backward_kind(case)
    dq, dk, dv = got
    ok_v, ok_qk = right[2], right[0] and right[1]
    if ok_v and ok_qk:
        return True
    args = (wide["q"], wide["k"], wide["v"], wide["do"], causal)
    tol = {"rtol": rtol, "atol": atol}
    nan = _nan_note(got, counted)
    if kind != "values":
        mistake = matched(BACKWARD, torch.stack(got), *args, pick=torch.stack, **tol)
        same = next((p for p in ("dv", "dq_dk") if parts[p].passed is False), None)
        message = f"{where}: " + "; ".join(
            f"d{n} {where_wrong(g, w, rtol, atol)}" for n, g, w in zip("QKV", got, want) if not close(g, w, rtol, atol)
        )
        if same and mistake:
            parts[kind].fail(message, same_mistake_as=same)
        else:
            parts[kind].fail(message, nan or (mistake.hint if mistake else _BACKWARD_HINTS[kind]))
        return False
    if not ok_v:
        mistake = matched(BACKWARD, dv, *args, pick=lambda g: g[2], **tol)
        parts["dv"].fail(
            f"{where}: dV {where_wrong(dv, want[2], rtol, atol)}",
            nan or (mistake.hint if mistake else _BACKWARD_HINTS["dv"]),
        )
    if not ok_qk:
        mistake = matched(BACKWARD, torch.stack([dq, dk]), *args, pick=lambda g: torch.stack(g[:2]), **tol)
        wrong = "; ".join(
            f"d{n} {where_wrong(g, w, rtol, atol)}"
            for n, g, w in (("Q", dq, want[0]), ("K", dk, want[1]))
            if not close(g, w, rtol, atol)
        )
        parts["dq_dk"].fail(f"{where}: {wrong}", nan or (mistake.hint if mistake else _BACKWARD_HINTS["dq_dk"]))
    return False


def _grader_computes(inputs: dict) -> dict[str, torch.Tensor]:
    """The case's tensors a buffer may start as (times a number): the inputs (and q, k, v, O, dO transposed),
    dO ∘ O and D = rowsum(dO ∘ O)."""
    inputs = {n: t.to(torch.float64) for n, t in inputs.items() if isinstance(t, torch.Tensor)}
    product = inputs["do"] * inputs["o"]
    transposed = {f"{n}ᵀ": inputs[n].transpose(1, 2) for n in ("q", "k", "v", "o", "do")}  # for tl.dot(q, kᵀ)
    return {**inputs, **transposed, "dO ∘ O": product, "D": product.sum(-1)}


def _nan_note(got: Sequence[torch.Tensor], counted: Counted) -> str:
    """The hint where a gradient came out NaN and the grader's run started a buffer as NaN (one that held neither
    zeros nor anything the grader computes: a torch.empty_like read before it is written); "" otherwise."""
    nan = [name for name, g in zip(("dQ", "dK", "dV"), got) if bool(g.isnan().any())]
    if not nan or not counted.changed:
        return ""
    return (
        f"{', '.join(nan)} came out NaN: the grader's run starts as NaN every buffer that held neither zeros nor "
        f"anything it computes ({counted.names()}), so every entry of such a buffer must be stored by a launch "
        "before a kernel reads it; a dQ added to by tl.atomic_add starts as torch.zeros_like(q)."
    )


def _made_by_the_launches(part: Part, returns: list, plan: dict, where: str) -> bool:
    """Whether every gradient returned is a view the launches were handed (not a tensor PyTorch made after them)."""
    described = answers.listed(plan["returns"], "the returned views")
    if any(r is None or r.get("made_after") for r in described) or any(g is None for g in returns):
        part.fail(
            f"{where}: a gradient flash_backward returned was made by PyTorch after the launches, not written by them",
            "return the tensors your kernels store into (torch.empty_like buffers handed to the launches).",
        )
        return False
    return True


def _right_only_from_what_buffers_held(
    part: Part,
    plan: dict,
    case: tuple,
    seed: int,
    right: list,
    want: Sequence,
    tol: tuple,
    counted: Counted,
    where: str,
) -> bool:
    """Whether a gradient the graded replay got wrong comes out right when the buffers start with what the learner's
    process put in them: then that content, not the kernels, made it (a gradient computed elsewhere, in any
    disguise); fails `part` with the buffers it names."""
    held = answers.listed(_replayed(plan, case, seed)["returns"], "the replay from the buffers as they were")
    made = [
        name
        for name, ok, g, w in zip(("dQ", "dK", "dV"), right, held, want)
        if not ok and g is not None and close(answers.tensor(g, "a gradient", tuple(w.shape)), w, *tol)
    ]
    if not made:
        return False
    part.fail(
        f"{where}: {', '.join(made)} come out right only from what {counted.names()} held before any launch: "
        "started by the grader (as NaN, or as its own values where it computes the content too), the kernels return "
        "other gradients: the kernels copy or undo a gradient computed elsewhere, or read memory before it is "
        "written, and either earns nothing.",
        "the kernels compute the gradients from q, k, v, O, L and dO. A buffer's first content counts where it is "
        "zeros or what the grader computes too (q, k, v, O, dO or L times a number, dO ∘ O, D = rowsum(dO ∘ O)); "
        "write every entry of any other buffer before a kernel reads it.",
    )
    return True


_BACKWARD_HINTS = {
    "dv": "for each key block, dV sums Pᵀ·dO over the query blocks, P = exp(S − L) recomputed from the saved L.",
    "dq_dk": "dS = P ∘ (dP − D), dP = dO·Vᵀ, D = rowsum(dO ∘ O); dQ = dS·K·scale, dK = dSᵀ·Q·scale.",
    "ragged": "the last block reaches past N: mask the loads (other=0.0), leave P at 0 for keys and queries at or "
    "beyond N, and mask the stores.",
    "causal": "causal: P is 0 above the diagonal (column > row) in every block backward visits, as in forward.",
}


def _replayed(plan: dict, case: tuple, seed: int) -> dict:
    """The kernel runner's replay of the plan on the case (its buffers start as the plan says): returns and the
    watch's counts."""
    found = kernel_runs.probe(
        "autograder.nb07.probes:replay_backward",
        next(iter(plan["records"].values())),
        {"plan": plan, "case": list(case), "seed": seed},
    )
    if isinstance(found, dict) and FAILED in found:
        raise CheckFailed(str(found[FAILED]))
    return answers.entry(answers.listed(found.get("launches"), "the replay")[0], "the replay", ("returns", "seen"))


def _judge_backward_memory(parts: dict[str, Part], case: tuple, seen: list, largest: Any, where: str) -> None:
    heads, N, d, causal, dtype = case
    counts = [answers.entry(s, "a launch's counts", tuple(s)) for s in answers.listed(seen, "the launches' counts")]
    if any(c.get("races") for c in counts):
        parts["race"].fail(
            f"{where}: programs of one launch store into the same entries ({sum(c.get('races', 0) for c in counts)} "
            "stores): on a GPU they run at once, and what stays is anyone's guess.",
            "give each program its own rows to store (dK and dV per key block, dQ per query block), or accumulate "
            "with tl.atomic_add into a zeroed buffer.",
        )
    if any(c.get("refused_reads") or c.get("refused_writes") for c in counts):
        parts["bounds"].fail(
            f"{where}: a launch loads or stores outside the tensors it was handed (those accesses were not performed)",
            "mask every load and store with the rows below N.",
        )
    itemsize = 8 if dtype == "float64" else 4
    allowed = 2 * heads * N * max(d, 16) * itemsize
    if answers.integer(largest, "the largest allocation") > allowed and N * N * itemsize > allowed:
        parts["memory"].fail(
            f"{where}: flash_backward allocated a block of {largest} bytes; N×N scores take {N * N * itemsize}.",
            "recompute P block by block inside the kernels: nothing N×N is allocated, only the gradients and D.",
        )


def _judge_backward_compiles(parts: dict[str, Part], records: dict[str, dict], data: Any) -> None:
    """Every kernel the plans launched, compiled for a GPU with the arguments of its first launch."""
    parts["compiles"] = kernel_compile.compile_part()
    first: dict[str, dict] = {}
    for entry in data:
        for launch in entry["plan"]["launches"]:
            first.setdefault(launch["kernel"], launch)
    others = [p for n, p in parts.items() if n != "compiles"]
    for name, launch in first.items():
        record = records.get(name)
        if record is None:
            continue
        constexpr = _constexpr_parameters(record)
        positional = [
            pointer(arg["tensor"]["dtype"]) if "tensor" in arg else arg["value"]
            for key, arg in launch["args"].items()
            if key not in constexpr
        ]
        given = {key: arg.get("value") for key, arg in launch["args"].items() if key in constexpr}
        signature, values = launch_signature(record, positional, given)
        kernel_compile.judge_compiles(parts["compiles"], record, [(f"`{name}`", signature, values)], others=others)
        if parts["compiles"].passed is False:
            return


def _constexpr_parameters(record: dict) -> set[str]:
    """The parameters the recorded kernel annotates as constexpr (its text, read here: nothing runs)."""
    import ast

    try:
        fn = ast.parse(record["functions"][record["entry"]]).body[0]
    except (KeyError, TypeError, SyntaxError, IndexError):
        return set()
    if not isinstance(fn, ast.FunctionDef):
        return set()
    return {a.arg for a in fn.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}

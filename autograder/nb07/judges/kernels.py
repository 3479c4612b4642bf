"""Notebook 07's judges of the attention kernels, run from their recorded text where grading decides nothing
(judges/kernel_runs.py): values against float64 references, what the watch saw each program read and store, and
the "compiles for a GPU" part."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import torch

from coursetools.gpu_compile import launch_signature

from ...judges import answers, kernel_compile
from ...judges.kernel_compile import pointer
from ...judges.verdict import Part, Verdict, share_earned, verdict_of
from ...registry import ProbeData, decides
from ..cases import KernelCase, kernel_inputs, reference_attention, reference_lse
from .mistakes import FORWARD, KERNEL, TILED
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
    """count cases of each kind, of other sizes, blocks and head counts."""
    cases = []
    for _ in range(count):
        bq, bk, d = rng.choice((16, 32)), rng.choice((16, 32)), rng.choice((16, 32))
        whole = max(bq, bk) * rng.randint(1, 3)
        cases += [
            (rng.randint(1, 3), whole, d, False, bq, bk, "float64"),
            (rng.randint(1, 2), whole + rng.randint(1, 15), d, False, bq, bk, "float64"),
            (rng.randint(1, 2), rng.randint(17, 70), d, True, bq, bk, rng.choice(("float64", "float32"))),
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
        launches.setdefault((causal, bq, bk, d, dtype, kernel_compile.int_kind(N)), (N, d, causal, bq, bk, dtype))
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

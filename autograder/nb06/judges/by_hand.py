"""Notebook 06's judges of the log-sum-exps written in PyTorch: the stable one and the online one."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from ...judges import answers
from ...judges.verdict import Verdict, verdict_of
from ...registry import ProbeData, decides
from ..cases import (
    column_chunks,
    row_case,
)
from .common import (
    off_rows,
    titled_parts,
)


def logsumexp_cases() -> list[tuple]:
    """(rows, V, dtype, peak column): plain float64 rows, then float32 rows with a logit of 100."""
    return [(3, 7, "float64", 2), (2, 5, "float32", 1)]


def draw_logsumexp(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        cases += [
            (rng.randint(1, 4), rng.randint(1, 40), "float64", 0),
            (rng.randint(1, 3), rng.randint(2, 40), "float32", 1),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


@decides("check_logsumexp", draw=draw_logsumexp)
def judge_logsumexp(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 2) -> Verdict:
    parts = titled_parts(
        {"values": "each row's log-sum-exp", "overflow": "float32 logits of 100 (the maximum subtracted first)"}
    )
    for case, got in zip(cases, answers.per_case(data, cases)):
        rows, V, dtype, peak_at = case
        values = answers.tensor(got, f"the answer to case {case}", shape=(rows,))
        expected = torch.logsumexp(row_case(seed, rows, V, dtype, peak_at).to(torch.float64), dim=1)
        off = off_rows(values, expected, 1e-9 if dtype == "float64" else 1e-5)
        if off is None:
            continue
        part = "overflow" if dtype != "float64" else "values"
        parts[part].fail(
            f"logsumexp_stable on {rows} rows of {V} {dtype} logits: row {off[0]} is {off[1]}",
            "exp(100) does not fit in float32: subtract each row's maximum first and add it back after the log"
            if part == "overflow"
            else "log of the sum of exp over the last dimension, one value per row",
        )
    return verdict_of(list(parts.values()), points, "logsumexp_stable (each row's log-sum-exp)")


ONLINE_PARTS = {
    "values": "the log-sum-exp, chunk by chunk (the peak in the first chunk; a narrower last chunk)",
    "rescale": "a larger maximum in a later chunk (the running sum rescaled)",
    "one_pass": "one pass over the chunks as they arrive (each read once, none kept)",
}


ONLINE_HINTS = {
    "values": "keep a running maximum m and a running sum s of exp(x - m) over the chunks: the answer is m + log s",
    "rescale": "when a chunk raises the maximum from m to m', the sum so far was taken against m: multiply it by "
    "exp(m - m') before adding the chunk's terms",
    "raised": "`chunks` is an iterator, read by one `for part in chunks:` loop: it has no length and no indexing",
    "kept": "each chunk is valid only until the next one arrives (the check reads them into one buffer, as a "
    "kernel's loop does): keeping the chunks (a list, torch.cat) to read them again is a second pass. Update m and s "
    "as each chunk arrives",
    "twice": "the chunks come once, as a kernel's loads do: a second loop over them (the maximum first, then the "
    "sum) sees none. Update m and s in one loop, rescaling s whenever m grows",
}


def online_cases() -> list[tuple]:
    """(rows, V, chunk, peak column): the peak in the first chunk; in the last; a chunk that does not divide V."""
    return [(3, 12, 4, 1), (3, 12, 4, 11), (2, 14, 4, 0)]


def online_part(case: Sequence[Any]) -> str:
    rows, V, chunk, peak_at = case
    return "rescale" if peak_at >= chunk else "values"


def draw_online_lse(rng: random.Random, count: int) -> dict[str, Any]:
    cases = []
    for _ in range(count):
        chunk = rng.randint(2, 8)
        V = chunk * rng.randint(2, 5)
        cases += [
            (rng.randint(1, 4), V, chunk, rng.randrange(chunk)),
            (rng.randint(1, 4), V, chunk, rng.randrange(chunk, V)),
            (rng.randint(1, 4), V + rng.randint(1, chunk - 1), chunk, 0),
        ]
    return {"cases": cases, "seed": rng.randrange(1, 10**6)}


def _online_answer(got: Any, case: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor | str]:
    """(values from the list of chunks, values from the stream or the error it raised)."""
    rows = case[0]
    got = answers.entry(got, f"the answer to case {case}", ("listed", "streamed"))
    listed = answers.tensor(got["listed"], f"the answer to case {case}", shape=(rows,))
    streamed = got["streamed"]
    if not isinstance(streamed, str):
        streamed = answers.tensor(streamed, f"the streamed answer to case {case}", shape=(rows,))
    return listed, streamed


def _second_pass(streamed: torch.Tensor | str, x: torch.Tensor, chunk: int) -> str:
    """Which way an answer right on a list of the chunks went wrong on the stream: the key of its hint."""
    if isinstance(streamed, str):
        return "raised"
    kept = torch.logsumexp(torch.cat(list(column_chunks(x, chunk)), dim=1), dim=1)
    return "kept" if torch.allclose(streamed, kept, rtol=1e-9, atol=1e-9) else "twice"


@decides("check_online_lse", draw=draw_online_lse)
def judge_online_lse(data: ProbeData, cases: Sequence[Any], seed: int = 0, points: float = 3) -> Verdict:
    parts = titled_parts(ONLINE_PARTS)
    answered = sorted(zip(cases, answers.per_case(data, cases)), key=lambda pair: online_part(pair[0]) != "values")
    for case, got in answered:
        rows, V, chunk, peak_at = case
        listed, streamed = _online_answer(got, case)
        x = row_case(seed, rows, V, "float64", peak_at, chunk)
        expected = torch.logsumexp(x, dim=1)
        off = off_rows(listed, expected, 1e-9)
        off_streamed = (0, "an error") if isinstance(streamed, str) else off_rows(streamed, expected, 1e-9)
        where = f"online_logsumexp on {rows} rows of V = {V}, {chunk} columns at a time"
        part = online_part(case)
        if off and off_streamed:  # right from neither: the part's own idea (a right stream is one pass done right)
            follows = "values" if part != "values" and parts["values"].passed is False else None
            parts[part].fail(
                f"{where}: row {off[0]} is {off[1]}", None if follows else ONLINE_HINTS[part], same_mistake_as=follows
            )
        if off_streamed:
            said = streamed if isinstance(streamed, str) else f"row {off_streamed[0]} is {off_streamed[1]}"
            parts["one_pass"].fail(
                f"{where}, read once as they arrive: {said}",
                None if off else ONLINE_HINTS[_second_pass(streamed, x, chunk)],
                same_mistake_as=parts[part].costs if off else None,
            )
    return verdict_of(list(parts.values()), points, "online_logsumexp (chunk by chunk, one pass)")

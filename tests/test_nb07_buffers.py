"""What the backward's graded replay starts a launcher's buffers with (autograder/nb07/judges/buffers.py): the
learner's zeros, the grader's own values where a buffer holds what the grader computes too (times a number, in
another float type, transposed, padded), NaN anywhere else; a gradient in any disguise never gets through."""

from __future__ import annotations

import os

os.environ.setdefault(
    "TRITON_INTERPRET", "1"
)  # before triton is imported (autograder.nb07 imports it), as its siblings

import base64  # noqa: E402
import re  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from autograder.feedback import CheckFailed  # noqa: E402
from autograder.nb07.judges.buffers import MAX_KEPT_VIEWS, MAX_NUMBERS, counted_start  # noqa: E402
from autograder.probes.launches import view_layout  # noqa: E402

pytestmark = pytest.mark.nb07

HEADS, N, D = 2, 5, 4
_gen = torch.Generator().manual_seed(3)
Q, K, V, OUT, DO = (torch.randn(HEADS, N, D, generator=_gen, dtype=torch.float64) for _ in range(5))
LSE = torch.randn(HEADS, N, generator=_gen, dtype=torch.float64)
KNOWN = {"q": Q, "k": K, "v": V, "o": OUT, "do": DO, "lse": LSE, "kᵀ": K.transpose(1, 2), "D": (DO * OUT).sum(-1)}
GRADIENT = torch.randn(HEADS, N, D, generator=_gen, dtype=torch.float64)


def plan_of(*views: torch.Tensor, returned: tuple[int, ...] = ()) -> dict:
    """A plan with one launch handed each view (each its own buffer), as the probe would describe it."""
    buffers, args = [], {}
    for i, view in enumerate(views):
        raw = torch.empty(0, dtype=torch.uint8).set_(view.untyped_storage())
        buffers.append(base64.b64encode(raw.numpy().tobytes()).decode("ascii"))
        args[f"arg{i}_ptr"] = {"tensor": {"buffer": i, **view_layout(view)}}
    returns = [{"buffer": i, **view_layout(views[i])} for i in returned]
    return {"records": {}, "launches": [{"kernel": "kern", "grid": [1], "args": args}], "buffers": buffers,
            "returns": returns}  # fmt: skip


def start_of(plan: dict, index: int, like: torch.Tensor) -> torch.Tensor:
    """Buffer `index` of the graded start, read as `like`'s dtype and shape (its storage from offset 0)."""
    counted = counted_start(plan, KNOWN)
    raw = torch.frombuffer(bytearray(base64.b64decode(counted.buffers[index])), dtype=like.dtype)
    return torch.as_strided(raw, like.shape, like.stride(), like.storage_offset())


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        pytest.param(torch.zeros(HEADS, N, D), torch.zeros(HEADS, N, D), id="zeros (an atomic dQ's) stay zeros"),
        pytest.param(KNOWN["D"].clone(), KNOWN["D"], id="D computed by PyTorch"),
        pytest.param(KNOWN["D"].float(), KNOWN["D"].float(), id="D computed in float32"),
        pytest.param(LSE * 1.4426950408889634, LSE * 1.4426950408889634, id="L in base 2"),
        pytest.param(K * 0.5 * 1.4426950408889634, K * 0.5 * 1.4426950408889634, id="K times scale·log2 e"),
        pytest.param(K.transpose(1, 2).contiguous(), K.transpose(1, 2), id="K transposed"),
        pytest.param(-KNOWN["D"], -KNOWN["D"], id="minus D"),
    ],
)
def test_what_the_grader_computes_too_starts_as_the_graders_own_values(held, expected):
    plan = plan_of(held)
    assert torch.allclose(start_of(plan, 0, held).double(), expected.to(held.dtype).double(), rtol=1e-6)
    assert "not counted" not in counted_start(plan, KNOWN).names()


@pytest.mark.parametrize("tail", ["zeros", "garbage"])
def test_d_padded_past_n_keeps_its_front_and_its_zeros(tail):
    padded = torch.zeros(HEADS, N + 3, dtype=torch.float64) if tail == "zeros" else torch.randn(HEADS, N + 3) * 1e3
    padded = padded.double()
    padded[:, :N] = KNOWN["D"]
    start = start_of(plan_of(padded), 0, padded)
    assert torch.equal(start[:, :N], KNOWN["D"])
    if tail == "zeros":
        assert torch.equal(start[:, N:], torch.zeros(HEADS, 3, dtype=torch.float64))
    else:
        assert bool(start[:, N:].isnan().all())


def test_d_in_a_flat_buffer_padded_per_head_keeps_its_front():
    flat = torch.zeros(HEADS, N + 3, dtype=torch.float64)
    flat[:, :N] = KNOWN["D"]
    flat = flat.reshape(-1)  # one pointer, each head's rows padded to a multiple of a block
    start = start_of(plan_of(flat), 0, flat).reshape(HEADS, N + 3)
    assert torch.equal(start[:, :N], KNOWN["D"]) and not bool(start[:, N:].any())


@pytest.mark.parametrize(
    "held",
    [
        pytest.param(GRADIENT.clone(), id="the gradient itself"),
        pytest.param(2 * GRADIENT, id="doubled"),
        pytest.param(GRADIENT + 3, id="offset"),
        pytest.param(torch.cat([KNOWN["D"].reshape(-1), GRADIENT.reshape(-1)]), id="behind D in one view"),
        pytest.param(torch.randn(HEADS, N, D, dtype=torch.float64), id="whatever torch.empty held"),
    ],
)
def test_anything_else_starts_as_nan_and_is_named(held):
    counted = counted_start(plan_of(held), KNOWN)
    start = start_of(plan_of(held), 0, held)
    assert bool(start.isnan().all()), start
    assert counted.changed and "`arg0_ptr` of launch 1 (`kern`, not counted)" in counted.names()


def test_a_gradient_in_the_low_bits_of_a_copy_of_q_starts_as_the_graders_q_times_a_number():
    mixed = Q + GRADIENT * 2.0**-12
    start = start_of(plan_of(mixed), 0, mixed)
    ratio = start / Q
    assert torch.allclose(ratio, ratio.flatten()[0].expand_as(ratio), rtol=0, atol=1e-12)  # c·q: nothing else in it
    assert not torch.allclose((start - Q) * 2.0**12, GRADIENT, atol=1e-2)  # the kernel's lift finds no gradient
    assert re.search(r"counted as the grader's [0-9.]+·q\)", counted_start(plan_of(mixed), KNOWN).names())


def test_integer_bits_of_a_gradient_start_as_minus_one():
    bits = GRADIENT.view(torch.int64) ^ 0x2AAAAAAA
    start = start_of(plan_of(bits), 0, bits)
    assert bool((start == -1).all())


def test_the_report_names_the_buffers_kernels_read_before_those_they_return():
    plan = plan_of(torch.randn(HEADS, N, D, dtype=torch.float64), 2 * GRADIENT, returned=(0,))
    names = counted_start(plan, KNOWN).names()
    assert names.index("arg1_ptr") < names.index("arg0_ptr"), names


@pytest.mark.parametrize(
    ("change", "says"),
    [
        pytest.param(lambda p: p["buffers"].__setitem__(0, "not base64!"), "not described as bytes", id="bytes"),
        pytest.param(lambda p: p["launches"][0]["args"]["arg0_ptr"]["tensor"].update(offset=10**6), "outside",
                     id="past the end"),
        pytest.param(lambda p: p["launches"][0]["args"]["arg0_ptr"]["tensor"].update(buffer=7), "outside",
                     id="no such buffer"),
        pytest.param(lambda p: p["launches"][0].update(args=["arg0_ptr"]), "by name", id="arguments not by name"),
    ],
)  # fmt: skip
def test_a_forged_description_of_the_buffers_is_refused_with_a_message(change, says):
    plan = plan_of(KNOWN["D"].clone())
    change(plan)
    with pytest.raises(CheckFailed, match=says):
        counted_start(plan, KNOWN)


def test_past_a_few_dozen_kept_views_the_rest_start_as_nan():
    """Which views are zeros, and the number each counted view is the grader's tensor times, carry a few bits each:
    a launcher handing the kernels hundreds of them could spell out a gradient; it gets NaN past MAX_KEPT_VIEWS."""
    views = [torch.zeros(HEADS, N, D, dtype=torch.float64) for _ in range(MAX_KEPT_VIEWS)] + [Q * 1.5, -Q]
    plan = plan_of(*views)
    counted = counted_start(plan, KNOWN)
    assert torch.equal(start_of(plan, 0, views[0]), views[0])
    assert bool(start_of(plan, MAX_KEPT_VIEWS, Q).isnan().all()) and bool(
        start_of(plan, MAX_KEPT_VIEWS + 1, Q).isnan().all()
    )
    assert f"more than {MAX_KEPT_VIEWS} views kept" in counted.names()


def test_a_gradient_handed_to_the_kernels_as_numbers_is_refused():
    plan = plan_of(torch.zeros(HEADS, N, D, dtype=torch.float64))
    plan["launches"][0]["args"] |= {f"g{i}": {"value": g} for i, g in enumerate(torch.randn(3 * 32 * 16).tolist())}
    with pytest.raises(CheckFailed, match=f"more than {MAX_NUMBERS} different numbers"):
        counted_start(plan, KNOWN)
    honest = plan_of(torch.zeros(HEADS, N, D, dtype=torch.float64))
    honest["launches"][0]["args"] |= {"seq_len": {"value": N}, "scale": {"value": 0.5}, "CAUSAL": {"value": True}}
    counted_start(honest, KNOWN)  # a backward's few numbers pass
    spelled = plan_of(torch.zeros(HEADS, N, D, dtype=torch.float64))
    spelled["launches"][0]["args"]["GRADIENT"] = {"value": ",".join(map(str, GRADIENT.flatten().tolist()))}
    with pytest.raises(CheckFailed, match="a text of more than 32 characters"):
        counted_start(spelled, KNOWN)

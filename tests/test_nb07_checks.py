"""Notebook 07's checks on the reference answers (full marks, shown and drawn cases), on blank answers (nothing,
with a message that says what to write), and on its catalogue of learners' answers (tests/nb07_catalogue/, one
file per answer: the code, the idea it costs, the words its hint must use; or a right answer written differently,
which keeps full marks)."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run in the interpreter

import math  # noqa: E402
import random  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import tomllib  # noqa: E402
import torch  # noqa: E402

import autograder.nb07.judges  # noqa: E402,F401  (registers the judges)
from autograder.feedback import CheckFailed  # noqa: E402
from autograder.registry import CHECKS  # noqa: E402
from coursetools.kernel_text import take  # noqa: E402
from tests import nb07_answers as answers  # noqa: E402
from tests import nb07_kernels  # noqa: E402

pytestmark = pytest.mark.nb07
SLOW = pytest.mark.slow  # `make test` only: one honest backward design and two forgeries stay in `make test-fast`

CALLS = {
    "check_composed_attention": ({"seed": 0, "cases": 3}, 3),
    "check_saved_for_backward": ({"sizes": [64, 128]}, 2),
    "check_attention_by_hand": ({"seed": 0, "cases": 2}, 5),
    "check_tiled_forward": ({"seed": 0, "cases": 3}, 4),
    "check_attention_forward_kernel": ({}, 6),
}
REFERENCES = {
    "check_composed_attention": answers.composed_attention,
    "check_saved_for_backward": answers.saved_for_backward,
    "check_attention_by_hand": answers.AttentionByHand,
    "check_tiled_forward": answers.tiled_attention_forward,
    # the reference kernel as the probe records it (its text): what the kernel check runs
    "check_attention_forward_kernel": take(nb07_kernels.attention_forward_kernel),
}
HIDDEN = {
    "check_composed_attention": {"cases": 4, "draw": 1},
    "check_saved_for_backward": {"draw": 3},
    "check_attention_by_hand": {"cases": 3, "draw": 1},
    "check_tiled_forward": {"cases": 4, "draw": 1},
    "check_attention_forward_kernel": {"draw": 1},
}


def graded(check_name: str, obj, **params) -> tuple[float, set[str], str]:
    """(points, the ideas lost: the parts failed for a mistake of their own, the report) of check(obj, **params),
    the hidden draws seeded here."""
    check = CHECKS[check_name]
    params = check.drawn(params, random.Random(7))
    try:
        data = {"kernel": obj} if isinstance(obj, dict) else check.collect(obj, **params)  # a kernel's record
        verdict = check.decide(data, **params)
    except CheckFailed as failure:
        verdict = getattr(failure, "verdict", None)
        if verdict is None:
            return 0.0, {"all"}, str(failure)
    return float(verdict), {p.costs for p in verdict.parts if p.passed is False}, verdict.report()


@pytest.mark.parametrize("check_name", list(CALLS))
def test_the_reference_answers_keep_full_marks_on_shown_and_drawn_cases(check_name):
    params, points = CALLS[check_name]
    for given in (params, HIDDEN[check_name]):
        got, failed, report = graded(check_name, REFERENCES[check_name], **given)
        assert (got, failed) == (points, set()), report


def _blank(*args, **kwargs):
    raise NotImplementedError


class _BlankFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, do):
        raise NotImplementedError


@pytest.mark.parametrize("check_name", list(CALLS))
def test_a_blank_answer_earns_nothing_and_is_told_to_write_it(check_name):
    blank = _BlankFunction if check_name == "check_attention_by_hand" else _blank
    if check_name == "check_attention_forward_kernel":
        blank = answers.kernel_record("attention_forward_kernel", BLANK_KERNEL)
    got, failed, report = graded(check_name, blank, **CALLS[check_name][0])
    assert got == 0 and failed in ({"all"}, {"values", "ragged", "causal", "lse"}), report
    assert "not written" in report or "NotImplementedError" in report or "write" in report or "[FAIL]" in report, report


BLANK_KERNEL = """
def attention_forward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, seq_len, scale,
                             CAUSAL: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
                             HEAD_DIM: tl.constexpr):
    pass
"""


@pytest.mark.parametrize("seed", [379085, 550961], ids=["a batch size equal to N", "N = 1"])
def test_the_right_by_hand_function_keeps_its_memory_part_where_log_sum_exps_look_square(seed):
    """Drawn cases where L ends in N, N (heads (2, 3) and N = 3; N = 1): they are the row log-sum-exps, not P. Before,
    the reference answer lost its memory part on about one hidden draw in sixty (0 of 1000 draws now)."""
    params = {"seed": seed, "cases": 3}
    check = CHECKS["check_attention_by_hand"]
    verdict = check.decide(check.collect(answers.AttentionByHand, **params), **params)
    assert float(verdict) == 5.0, verdict.report()
    keeps_p = _catalogued("by_hand_keeps_p")
    verdict = check.decide(check.collect(keeps_p, **params), **params)
    assert [p.costs for p in verdict.parts if p.passed is False] == ["memory"], verdict.report()


@pytest.mark.parametrize("seed", [17, 120, 510])
def test_the_right_tiled_forward_keeps_its_float32_part_where_scores_reach_hundreds(seed):
    """float32 scores near 400 are off by about one float32 epsilon of them, and O by that times V's size: the
    tolerance allows it (before, the reference answer lost the part at seed 17; over 3000 seeds its worst error
    was 2.7 times the tolerance, 0.21 now). The overflow mistake (inf or NaN) is the catalogue's."""
    got, failed, report = graded("check_tiled_forward", answers.tiled_attention_forward, seed=seed, cases=3)
    assert (got, failed) == (4.0, set()), report


def test_a_table_of_the_public_measurements_earns_nothing_on_drawn_sizes():
    """The shown answers, in the order the check asks for them, right on the shown sizes; on the drawn ones no
    number is a count of anything (before: 1 of 2, the inputs part)."""
    calls = []
    public = [28672, 90112, 32768, 106496, 61952, 222208, 16640, 33280]

    def table(attention, n, d=64):
        calls.append(n)
        return public[(len(calls) - 1) % len(public)]

    assert graded("check_saved_for_backward", table, **CALLS["check_saved_for_backward"][0])[0] == 2.0
    calls.clear()
    got, failed, report = graded("check_saved_for_backward", table, **HIDDEN["check_saved_for_backward"])
    assert got == 0 and "nothing here was measured" in report, report


def test_every_drawn_forward_kernel_case_is_long_enough_for_its_kinds_mistakes():
    """Where N was one key block, a plain case could not show an accumulator never rescaled (the ragged case showed it
    instead, with the ragged part's hint); where a causal N was 32 or less, no key block lay wholly above a query
    block's diagonal, and a loop that visits them kept its part (2 of 6 draws)."""
    from autograder.nb07.judges.kernels import draw_forward_kernel, kind_of

    for seed in range(200):
        for case in draw_forward_kernel(random.Random(seed), 1)["cases"]:
            heads, N, d, causal, bq, bk, dtype = case
            assert N > 32 if causal else N >= 2 * bk, case
            assert kind_of(case) == ("causal" if causal else "ragged" if N % bq or N % bk else "values"), case


def test_every_drawn_backward_case_set_holds_each_kind():
    """A draw without a causal case (half of them, before) could not see a backward that drops the causal mask."""
    from autograder.nb07.judges.kernels import backward_kind, draw_backward

    for seed in range(200):
        cases = draw_backward(random.Random(seed), 1)["cases"]
        assert sorted(backward_kind(c) for c in cases) == ["causal", "ragged", "values"], cases
        assert all(N > 32 for heads, N, d, causal, dtype in cases if causal), cases


# ------------------------------------------------------------------------------------------------ the catalogue

CATALOGUE = sorted((Path(__file__).parent / "nb07_catalogue").glob("*.toml"))


def _answer(entry: dict):
    if "kernel" in entry:  # a kernel is graded by its text: its record, as the probe takes it
        return answers.kernel_record(entry["name"], entry["kernel"])
    namespace = {"torch": torch, "math": math}
    exec(compile(entry["answer"], f"<{entry['name']}>", "exec"), namespace)  # the catalogue's own code
    return namespace[entry["name"]]


def test_the_catalogue_holds_a_dozen_mistakes_and_right_answers_written_differently():
    kinds = [tomllib.loads(p.read_text())["kind"] for p in CATALOGUE]
    assert kinds.count("mistake") >= 12 and kinds.count("right") >= 3, kinds


# The kernel and tiled entries take 3-8 s each: one of each kind runs in `make test-fast`, the rest in `make test`.
FAST_ENTRIES = {"forward_kernel_keys_loaded_unmasked", "tiled_whole_rows_of_scores", "tiled_lse_in_base_2"}


def _entry(path: Path):
    slow = path.stem.startswith(("forward_kernel_", "tiled_")) and path.stem not in FAST_ENTRIES
    return pytest.param(path, id=path.stem, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("path", [_entry(p) for p in CATALOGUE])
def test_each_catalogued_answer_costs_exactly_its_idea_with_its_hint(path):
    entry = tomllib.loads(path.read_text())
    params, points = CALLS[entry["check"]]
    for given in (params, HIDDEN[entry["check"]]):
        got, failed, report = graded(entry["check"], _answer(entry), **given)
        if entry["kind"] == "right":
            assert (got, failed) == (points, set()), report
            continue
        assert failed == set(entry["costs"]), (failed, report)
        for words in entry["hint"]:
            assert words in report, (words, report)
        assert report.count("Hint:") == len(entry["costs"]), report  # each idea lost named once


# ------------------------------------------------------------------------------------------------ the backward
# flash_backward runs in the learner's process only to describe its launches; the judge replays them from the
# kernels' text (autograder/probes/launch_plans.py).


@pytest.fixture(scope="module")
def kernels():
    from tests import nb07_kernels

    return nb07_kernels


@pytest.mark.parametrize(
    "design",
    [
        pytest.param("flash_backward", id="three kernels", marks=pytest.mark.slow),
        pytest.param("flash_backward_delta_in_pytorch", id="D computed by PyTorch", marks=SLOW),
        pytest.param("flash_backward_atomic_dq", id="one kernel, dQ by atomics"),
        pytest.param("flash_backward_in_reused_memory", id="buffers of reused memory", marks=pytest.mark.slow),
        pytest.param(
            "flash_backward_atomic_dq_in_reused_memory", id="atomic dQ, the other buffers of reused memory", marks=SLOW
        ),
        pytest.param(
            "flash_backward_as_the_triton_tutorial", id="the Triton tutorial's: K scaled, L in base 2", marks=SLOW
        ),
    ],
)
def test_honest_backward_designs_keep_full_marks(kernels, design):
    for params in ({}, {"draw": 1}):
        got, failed, report = graded("check_flash_backward", getattr(kernels, design), **params)
        assert (got, failed) == (6.0, set()), report


def test_a_dq_stored_by_every_key_block_costs_the_race_part_alone(kernels):
    """Right numbers in the interpreter (its programs run one by one), a race on a GPU."""
    got, failed, report = graded("check_flash_backward", kernels.flash_backward_racing_dq)
    assert failed == {"race"} and "tl.atomic_add" in report, report


@pytest.mark.slow
def test_a_dq_added_to_in_memory_never_zeroed_costs_its_values_and_the_hint_says_zeros(kernels):
    """The grader's replay starts such a buffer as NaN (judges/buffers.py): dQ comes out NaN, not the learner's
    memory's luck; dV, stored whole, keeps its part."""
    got, failed, report = graded("check_flash_backward", kernels.flash_backward_atomic_dq_not_zeroed)
    assert failed == {"dq_dk", "ragged", "causal"} and "dQ came out NaN" in report, report
    assert "torch.zeros_like(q)" in report and "`dq_ptr` of launch 2" in report, report


@pytest.mark.parametrize(
    "forgery",
    [
        pytest.param("flash_backward_copying_pytorch", id="PyTorch's gradients copied by a kernel"),
        pytest.param("flash_backward_pytorch_after", id="a launch for show, PyTorch's gradients returned", marks=SLOW),
        pytest.param("flash_backward_doubled_and_halved", id="doubled in a buffer, halved by a kernel"),
        pytest.param(
            "flash_backward_doubled_row_by_row", id="the same computed row by row (no N×N memory)", marks=SLOW
        ),
        pytest.param("flash_backward_offset_by_three", id="offset in a buffer, a kernel subtracts", marks=SLOW),
        pytest.param(
            "flash_backward_bit_shuffled", id="bits XOR a key as integers, a kernel XORs them back", marks=SLOW
        ),
        pytest.param("flash_backward_gradients_behind_delta", id="packed behind D in one buffer", marks=SLOW),
        pytest.param(
            "flash_backward_in_the_low_bits_of_the_inputs", id="in the low bits of copies of q, k, v", marks=SLOW
        ),
    ],
)
def test_gradients_the_kernels_did_not_compute_earn_nothing(kernels, forgery):
    got, failed, report = graded("check_flash_backward", getattr(kernels, forgery))
    assert got == 0 and failed == {"kernels"}, report
    if forgery != "flash_backward_pytorch_after":  # the others' buffers held the gradients: the report names them
        assert "come out right only from what `" in report, report


# ------------------------------------------------------------------------------------------------ the Function
# FlashAttention is graded around the course's kernels (course_kernels.py): their launches, computed by the
# launcher, are the evidence that O and the gradients are the kernels'.


def test_the_function_keeps_full_marks_around_the_course_kernels(kernels):
    for params in ({}, {"draw": 1}):
        got, failed, report = graded("check_flash_attention", kernels.FlashAttention, **params)
        assert (got, failed) == (5.0, set()), report


@pytest.mark.parametrize(
    ("answer", "lost", "says"),
    [
        ("FlashAttentionWithoutContiguous", "layout", "contiguous"),
        ("FlashAttentionKeepingTheInputsToo", "saved", "q, k, v, O and L take"),
    ],
    ids=["transposed views handed to the kernels as they are", "the inputs saved beside their copies"],
)
def test_a_function_mistake_costs_its_part(kernels, answer, lost, says):
    got, failed, report = graded("check_flash_attention", getattr(kernels, answer))
    assert failed == {lost} and says in report, report


def test_attention_computed_by_pytorch_in_a_function_earns_nothing(kernels):
    got, failed, report = graded("check_flash_attention", kernels.AttentionInPyTorch)
    assert got == 0 and failed == {"kernels"}, report


def _catalogued(name: str):
    return _answer(tomllib.loads((Path(__file__).parent / "nb07_catalogue" / f"{name}.toml").read_text()))


def contract_cases():
    """(check, correct, wrong, blank, params) for tests/test_probe_contract.py."""
    from tests import nb07_kernels as K

    return [
        ("check_composed_attention", answers.composed_attention, _catalogued("composed_no_scale"), _blank,
         {"seed": 0, "cases": 3, "points": 3}),
        ("check_saved_for_backward", answers.saved_for_backward, _catalogued("saved_without_inputs"), _blank,
         {"sizes": [64, 128], "points": 2}),
        ("check_attention_by_hand", answers.AttentionByHand, _catalogued("by_hand_no_minus_d"), None,
         {"seed": 0, "cases": 2, "points": 5}),
        ("check_tiled_forward", answers.tiled_attention_forward, _catalogued("tiled_accumulator_not_rescaled"),
         _blank, {"seed": 0, "cases": 3, "points": 4}),
        ("check_attention_forward_kernel", K.attention_forward_kernel, None, K.blank_attention_forward_kernel,
         {"points": 6}),
        ("check_flash_backward", K.flash_backward, K.flash_backward_racing_dq, _blank, {"points": 6}),
        ("check_flash_attention", K.FlashAttention, K.FlashAttentionWithoutContiguous, None, {"points": 5}),
    ]  # fmt: skip

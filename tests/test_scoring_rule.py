"""The one scoring rule every check follows (autograder.judges.verdict): equal shares per idea, a mistake seen by
two parts counted once, skipped parts not scored, the CUDA part only taking a share away."""

from __future__ import annotations

import pytest

import autograder.nb05.judges  # noqa: E402,F401  (nb05.judges.* below)
import autograder.nb06.judges  # noqa: E402,F401  (nb06.judges.* below)
from autograder.feedback import CheckFailed
from autograder.judges.verdict import Part, share_earned, verdict_of

pytestmark = pytest.mark.grading


def parts(*names):
    return [Part(n) for n in names]


def test_every_idea_weighs_the_same():
    p = parts("forward", "interface", "layout", "memory")
    p[3].fail("saves too much")
    assert share_earned(p) == (3, 4) and float(verdict_of(p, 4, "t")) == 3.0


def test_gradcheck_and_the_reference_are_one_idea():
    p = parts("forward", "gradcheck", "reference", "interface")
    p[1].fail("numerical Jacobian")
    assert share_earned(p) == (2, 3)
    p[2].fail("reference backward")
    assert share_earned(p) == (2, 3), "caught two ways, the backward is lost once"


def test_a_consequence_costs_the_idea_it_follows_from_once():
    p = parts("values", "opcheck", "compile")
    p[1].fail("no fake")
    p[2].fail("compile needs a fake", same_mistake_as="opcheck")
    assert share_earned(p) == (2, 3)
    assert "the same mistake as the part above" in verdict_of(p, 3, "op").report()


def test_a_consequence_of_a_part_that_passed_costs_its_own_idea():
    p = parts("values", "opcheck", "compile")
    p[2].fail("compile fails", same_mistake_as="opcheck")  # opcheck passed: not the same mistake after all
    assert share_earned(p) == (2, 3)


def test_a_part_failing_for_a_reason_of_its_own_too_costs_its_idea():
    p = parts("values", "opcheck", "compile")
    p[1].fail("no fake")
    p[2].fail("compile needs a fake", same_mistake_as="opcheck")
    p[2].fail("the compiled gradient is wrong")
    assert share_earned(p) == (1, 3)


def test_skipped_parts_are_not_scored_and_cuda_only_takes_away():
    p = parts("forward", "gradcheck", "reference", "interface", "double_backward", "cuda")
    p[4].passed = None
    p[5].passed = None
    assert share_earned(p) == (3, 3)
    p[5].fail("wrong on CUDA")
    assert share_earned(p) == (2, 3)


def test_nothing_earned_fails_the_check_with_its_verdict():
    p = parts("forward", "interface")
    for part in p:
        part.fail("wrong")
    with pytest.raises(CheckFailed) as caught:
        verdict_of(p, 2, "t")
    assert float(caught.value.verdict) == 0 and "[FAIL]" in str(caught.value)


def test_a_report_names_each_part_by_its_own_title_without_changing_anyone_elses():
    from autograder import nb05, nb06
    from autograder.judges.verdict import PART_TITLES

    before = dict(PART_TITLES)
    p = parts("forward", "gradcheck")
    p[1].fail("off")
    report = nb05.judges.common.verdict_of_parts({q.name: q for q in p}, 2, "FusedSiLU").report()
    assert "numerical derivative (central differences of your forward)" in report  # notebook 05's own title
    assert PART_TITLES == before, "a notebook's titles stay its own"
    generic = parts("forward", "gradcheck")
    generic[1].fail("off")
    assert "[FAIL] backward agrees with the numerical Jacobian (gradcheck)" in verdict_of(generic, 2, "t").report()
    for titles in (
        nb06.judges.kernels.ROW_LSE_PARTS,
        nb06.judges.kernels.CE_FORWARD_PARTS,
        nb06.judges.kernels.CE_BACKWARD_PARTS,
        nb06.judges.by_hand.ONLINE_PARTS,
    ):
        titled = list(nb06.judges.common.titled_parts(titles).values())
        titled[-1].fail("off")
        shown = verdict_of(titled, 4, "t").report()
        assert all(f"] {title}" in shown for title in titles.values()) and "] values" not in shown

"""A Function check's verdict: the points earned, part by part, and the report the learner reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..feedback import CheckFailed

# The scoring rule, the same in every check: a check's points are shared equally among the ideas it tests, and
# a missed idea costs its share (points / ideas) and nothing else. A part is one idea, except where two parts test
# the same idea two ways: a wrong backward fails gradcheck and the reference comparison alike, and costs one share.
IDEA_OF_PART = {"gradcheck": "backward", "reference": "backward"}
# Parts that can only take a share away: a machine with a GPU and one without give a correct answer the same
# score, and a wrong answer the same score too unless it is wrong on CUDA only.
PENALTY_PARTS = {"cuda"}


PART_TITLES = {
    "forward": "forward agrees with the reference",
    "gradcheck": "backward agrees with the numerical Jacobian (gradcheck)",
    "reference": "backward agrees with the reference backward",
    "interface": "backward's interface (one gradient per input, None for non-tensors, shapes, dtypes, grad_output "
    "untouched)",
    "double_backward": "double backward (gradgradcheck)",
    "cuda": "CUDA tensors",
}


@dataclass
class Part:
    name: str
    passed: bool | None = True  # None: skipped (not scored), with the reason in messages
    messages: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    consequence_of: str | None = None  # set by fail(same_mistake_as=...)
    independent: bool = False  # failed at least once for a reason of its own
    title: str | None = None  # what the report calls it; else PART_TITLES', else its name

    def fail(self, message: str, *hints: str | None, same_mistake_as: str | None = None) -> None:
        """same_mistake_as: the part whose mistake makes this one fail too (no fake implementation fails opcheck
        and compiling alike): the mistake costs that part's idea, once."""
        self.passed = False
        if same_mistake_as is None:
            self.independent = True
        else:
            self.consequence_of = same_mistake_as
        if message not in self.messages:
            self.messages.append(message)
        for h in hints:
            if h and h not in self.hints:
                self.hints.append(h)

    def unscore(self, why: str) -> None:
        """Not scored, with the reason as its only message (a part that cannot be earned alongside nothing else)."""
        self.passed, self.messages = None, [why]

    @property
    def costs(self) -> str:
        """The idea a failure of this part costs: its own, or the part's it follows from."""
        return self.consequence_of if self.consequence_of and not self.independent else idea(self)


def idea(part: Part) -> str:
    return IDEA_OF_PART.get(part.name, part.name)


def share_earned(parts: list[Part]) -> tuple[int, int]:
    """(ideas passed, ideas scored) by the rule above; skipped parts (passed None) are not scored."""
    scored = [p for p in parts if p.passed is not None and p.name not in PENALTY_PARTS]
    failed = {p.name for p in scored if p.passed is False}
    ideas = {idea(p) for p in scored}
    lost = {IDEA_OF_PART.get(p.costs, p.costs) if p.costs in failed else idea(p) for p in scored if not p.passed}
    penalties = sum(1 for p in parts if p.name in PENALTY_PARTS and p.passed is False)
    return max(0, len(ideas) - len(lost & ideas) - penalties), len(ideas)


def verdict_of(parts: list[Part], points: float, title: str, pictures: list | None = None) -> Verdict:
    """The verdict of a check from its parts, by the one scoring rule. Nothing earned: CheckFailed carrying it."""
    earned, ideas = share_earned(parts)
    score = round(points * earned / ideas, 2) if ideas else float(points)
    verdict = Verdict(score, points=points, parts=parts, title=title, pictures=pictures)
    if ideas and earned == 0:
        failure = CheckFailed(verdict.report())
        failure.verdict = verdict  # type: ignore[attr-defined]
        raise failure
    return verdict


class Verdict(float):
    """The points earned (a float, nbgrader's partial score), with the parts and the report attached."""

    def __new__(cls, points_earned: float, *, points: float, parts: list[Part], title: str, pictures=None):
        self = super().__new__(cls, points_earned)
        self.points, self.parts, self.title, self.pictures = float(points), parts, title, pictures or []
        return self

    def __reduce__(self):
        return (float, (float(self),))

    @property
    def passed(self) -> bool:
        return all(p.passed is not False for p in self.parts)

    def report(self) -> str:
        lines = [f"{self.title}: {float(self):g} of {self.points:g} points"]
        titles = {p.name: p.title or PART_TITLES.get(p.name, p.name) for p in self.parts}
        for p in self.parts:
            mark = {True: "ok  ", False: "FAIL", None: "skip"}[p.passed]
            lines.append(f"  [{mark}] {titles[p.name]}")
            if p.passed is False and p.costs != idea(p):
                lines.append(f"         (the same mistake as the part above: {titles.get(p.costs, p.costs)})")
            if p.passed is not True:
                for m in p.messages:
                    lines += ["         " + line for line in m.splitlines()]
                for h in p.hints:
                    lines.append(f"         Hint: {h}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return repr(float(self))

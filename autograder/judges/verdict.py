"""A Function check's verdict: the points earned, part by part, and the report the learner reads."""

from __future__ import annotations

from dataclasses import dataclass, field

WEIGHTS = {"forward": 1.0, "gradcheck": 2.0, "reference": 1.0, "interface": 1.0, "double_backward": 1.0, "cuda": 1.0}


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
    weight: float
    passed: bool | None = True  # None: skipped (not scored), with the reason in messages
    messages: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def fail(self, message: str, *hints: str | None) -> None:
        self.passed = False
        if message not in self.messages:
            self.messages.append(message)
        for h in hints:
            if h and h not in self.hints:
                self.hints.append(h)


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
        for p in self.parts:
            mark = {True: "ok  ", False: "FAIL", None: "skip"}[p.passed]
            lines.append(f"  [{mark}] {PART_TITLES.get(p.name, p.name)}")
            if p.passed is not True:
                for m in p.messages:
                    lines += ["         " + line for line in m.splitlines()]
                for h in p.hints:
                    lines.append(f"         Hint: {h}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return repr(float(self))

"""The central difference is replaced by torch.func.grad (exact, not a difference): flagged, and wrong by round-off."""
ANSWERS = {"central_difference": """import torch
from torch.func import grad
def central_difference(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h) if False else float(grad(lambda t: torch.sin(t))(torch.tensor(x)))"""}
EXPECT = {"score": 5, "flags": {"by_hand_with_autograd"}}

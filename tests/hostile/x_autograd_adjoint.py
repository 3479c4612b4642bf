"""Right adjoints, but computed by torch.autograd.grad: a by-hand exercise handed to autograd."""
ANSWERS = {"adjoint_trace": """import torch
def adjoint_trace(x1, x2):
    w1 = torch.tensor(x1, dtype=torch.float64, requires_grad=True)
    w2 = torch.tensor(x2, dtype=torch.float64, requires_grad=True)
    w3 = w1 * w2
    w4 = torch.sin(w1)
    w5 = w3 + w4
    grads = torch.autograd.grad(w5, [w1, w2, w3, w4, w5])
    return {k: float(g) for k, g in zip(('w1', 'w2', 'w3', 'w4', 'w5'), grads)}"""}
EXPECT = {"score": 7, "flags": {"by_hand_with_autograd"}}

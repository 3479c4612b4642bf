"""Right adjoints from .backward() on tensors that require grad: flagged, full marks kept for the instructor to decide."""
ANSWERS = {"adjoint_trace": """import torch
def adjoint_trace(x1, x2):
    t = {k: None for k in ('w1', 'w2', 'w3', 'w4', 'w5')}
    w1 = torch.tensor(x1, dtype=torch.float64).requires_grad_()
    w2 = torch.tensor(x2, dtype=torch.float64).requires_grad_()
    w3 = w1 * w2; w3.retain_grad()
    w4 = torch.sin(w1); w4.retain_grad()
    w5 = w3 + w4; w5.retain_grad()
    w5.backward()
    return {'w1': float(w1.grad), 'w2': float(w2.grad), 'w3': float(w3.grad), 'w4': float(w4.grad), 'w5': float(w5.grad)}"""}
EXPECT = {"score": 7, "flags": {"by_hand_with_autograd"}}

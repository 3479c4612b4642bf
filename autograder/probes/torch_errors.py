"""PyTorch's error messages in a learner's terms (used by the probes, and by notebook 03's `translate_error`)."""

from __future__ import annotations

import re

_TRANSLATIONS = [
    (
        r"returned an incorrect number of gradients \(expected (\d+), got (\d+)\)",
        "backward must return one value per argument of forward (ctx not counted): a gradient for each tensor, "
        "None for everything else.",
    ),
    (
        r"returned a gradient different than None at position (\d+), but the corresponding forward input was not a "
        r"Variable",
        "backward returned a gradient for an argument that is not a tensor: return None in that position.",
    ),
    (
        r"returned an invalid gradient at index (\d+) - got \[?(.*?)\]? but expected shape compatible with "
        r"\[?(.*?)\]?$",
        "a gradient returned by backward does not have the shape of its input.",
    ),
    (
        r"modified by an inplace operation",
        "a tensor saved for backward was changed in place after it was saved (e.g. `x += ...` or `x.mul_()`); "
        "work on a copy, or save the tensor after the change.",
    ),
    (
        r"a leaf Variable that requires grad is being used in an in-place operation",
        "forward changes its input in place; compute the result in a new tensor (e.g. start from `x.clone()`).",
    ),
    (
        r"Trying to backward through the graph a second time",
        "the graph was already used by an earlier backward; pass retain_graph=True to the first call if you need it "
        "twice.",
    ),
    (
        r"does not require grad and does not have a grad_fn",
        "something that should be differentiable is not: a value was detached, converted to a Python number or NumPy, "
        "or computed under torch.no_grad().",
    ),
    (
        r"mat1 and mat2 shapes cannot be multiplied|size mismatch|shapes cannot be multiplied"
        r"|must match the size of tensor|The size of tensor a|inconsistent tensor size|expected .* to have size",
        "two tensors in this computation have shapes that do not fit together. Write down the shape of every "
        "tensor in the formula: a transposed matrix is the usual culprit.",
    ),
    (
        r"expected scalar type|expected both vectors to have same dtype|Float and Double|Double and Float|dtype",
        "tensors of different dtypes meet. Create new tensors like their inputs (torch.zeros_like(x), or "
        "dtype=x.dtype).",
    ),
    (
        r"Expected all tensors to be on the same device|cuda|device",
        "tensors on different devices meet. Create new tensors on the input's device (torch.zeros_like(x), or "
        "device=x.device).",
    ),
    (
        r"save_for_backward can only save variables",
        "ctx.save_for_backward takes tensors (or None) only; keep other values as attributes, e.g. ctx.n = n.",
    ),
    (
        r"object has no attribute 'saved_tensors'|saved_tensors",
        "read what forward saved with `ctx.saved_tensors` (a tuple), after saving it with `ctx.save_for_backward(...)` "
        "in forward.",
    ),
]


def translate(exc: BaseException) -> str:
    """A PyTorch error in the learner's terms, followed by PyTorch's own first line."""
    raw = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for pattern, meaning in _TRANSLATIONS:
        if re.search(pattern, raw):
            return f"{meaning}\n    (PyTorch said: {type(exc).__name__}: {raw[:300]})"
    return f"{type(exc).__name__}: {raw[:300]}"

"""Which device the notebooks run on, said plainly."""

from __future__ import annotations

import torch


def pick_device() -> torch.device:
    """CUDA when a GPU is usable, otherwise the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe_device(device: torch.device | None = None) -> str:
    device = device or pick_device()
    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)} (torch {torch.__version__})"
    return f"CPU only: no GPU is visible to torch {torch.__version__}; GPU measurements are skipped."


def triton_mode() -> str:
    """How Triton kernels run here: 'compiled' for a GPU, or 'interpreter' (TRITON_INTERPRET=1, or no GPU).

    Triton reads TRITON_INTERPRET when a kernel is defined, so notebooks set it before importing triton. In the
    interpreter, a kernel's calls of @triton.jit functions are made cheap (coursetools.interpreter) once Triton is
    imported: the notebooks ask this in their first cell.
    """
    import os
    import sys

    if os.environ.get("TRITON_INTERPRET", "0") == "1" or not torch.cuda.is_available():
        if "triton" in sys.modules:
            from .interpreter import faster_device_calls

            faster_device_calls()
        return "interpreter"
    return "compiled"

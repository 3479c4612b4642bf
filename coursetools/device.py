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

    Triton reads TRITON_INTERPRET when a kernel is defined, so notebooks set it before importing triton.
    """
    import os

    if os.environ.get("TRITON_INTERPRET", "0") == "1" or not torch.cuda.is_available():
        return "interpreter"
    return "compiled"

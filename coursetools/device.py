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

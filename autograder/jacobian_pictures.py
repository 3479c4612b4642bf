"""In the learner's notebook: a Function check's report, and its numerical and analytical Jacobians drawn side by side."""
from __future__ import annotations

import torch


def draw_jacobians(picture: dict):
    """The numerical and analytical Jacobians side by side; wrong entries outlined. Returns the figure."""
    import matplotlib.pyplot as plt

    numerical, analytical, bad = picture["numerical"], picture["analytical"], picture["bad"]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), squeeze=True)
    lim = float(max(numerical.abs().max(), analytical.abs().max(), 1e-12))
    for ax, matrix, title in zip(axes, (numerical, analytical), ("numerical (finite differences)", "analytical (your backward)")):
        image = ax.imshow(matrix.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("input entry (flattened)")
    axes[0].set_ylabel("output entry (flattened)")
    for ax in axes:
        for r, c in torch.nonzero(bad).tolist():
            ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.5))
    fig.colorbar(image, ax=list(axes), shrink=0.8)
    fig.suptitle(picture["title"] + " — wrong entries outlined", fontsize=9)
    return fig


def show_pictures(pictures) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None or not pictures:
        return
    import warnings

    import matplotlib.pyplot as plt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import io

        from IPython.display import Image
        for picture in pictures:
            fig = draw_jacobians(picture)
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")   # a PNG whatever the backend
            plt.close(fig)
            display(Image(data=buffer.getvalue(), format="png"))


def show_verdict(verdict, failure) -> None:
    """check_function's `show` hook: print the report, draw the wrong Jacobians."""
    if failure is not None:
        show_pictures(getattr(getattr(failure, "verdict", None), "pictures", []))
        return
    if hasattr(verdict, "report"):
        print(verdict.report() if not verdict.passed else f"{verdict.title}: all parts pass "
              f"({float(verdict):g} of {verdict.points:g} points).")
        for p in verdict.parts if verdict.passed else []:
            if p.passed is None:
                print("  skipped: " + "; ".join(p.messages))
        show_pictures(verdict.pictures)

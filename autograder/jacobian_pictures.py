"""In the learner's notebook: a Function check's report, and its numerical and analytical Jacobians side by side."""

from __future__ import annotations

import torch


def draw_jacobians(picture: dict):
    """The numerical and analytical Jacobians side by side; wrong entries outlined. Returns the figure."""
    import matplotlib.pyplot as plt

    numerical, analytical, bad = picture["numerical"], picture["analytical"], picture["bad"]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), squeeze=True)
    lim = float(max(numerical.abs().max(), analytical.abs().max(), 1e-12))
    for ax, matrix, title in zip(
        axes, (numerical, analytical), ("numerical (finite differences)", "analytical (your backward)")
    ):
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
            fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")  # a PNG whatever the backend
            plt.close(fig)
            display(Image(data=buffer.getvalue(), format="png"))


def _cell_and_line():
    """(source of the running cell, line of the check's call in it), or (None, None) outside a notebook cell."""
    import inspect

    try:
        from IPython import get_ipython
    except ImportError:
        return None, None
    ip = get_ipython()
    if ip is None:
        return None, None
    history = ip.user_ns.get("In") or [""]
    frames = [f for f in inspect.stack(context=0) if f.function == "<module>" and "autograder" not in f.filename]
    return history[-1], (frames[0].lineno if frames else None)  # the innermost: the cell itself


def _in_hidden_tests(source: str | None, line: int | None) -> bool:
    from .hidden_tests import VISIBLE, line_kinds

    if not source or not line:
        return False
    kinds = line_kinds(source)
    return 0 < line <= len(kinds) and kinds[line - 1] != VISIBLE


def show_verdict(verdict, failure):
    """check_function's `show` hook, run in the learner's notebook: draws the wrong Jacobians of a failure, and
    for a passing Function says which parts were skipped (CUDA without a GPU). A partly right verdict never
    gets here: the check raises CheckFailed with its report (autograder.registry.Check.__call__)."""
    if failure is not None:
        show_pictures(getattr(getattr(failure, "verdict", None), "pictures", []))
        return
    for p in getattr(verdict, "parts", []):
        if p.passed is None:
            print(f"{verdict.title}: {p.name} skipped: " + "; ".join(p.messages))
    show_pictures(getattr(verdict, "pictures", []))


def in_a_notebook_cell() -> bool:
    return _cell_and_line()[0] is not None


def hidden_label() -> str:
    """What a failure's message starts with when the check was called from a test cell's hidden tests (the
    instructor's own run of a solution notebook): the cases are not the ones the learner's notebook shows."""
    source, line = _cell_and_line()
    return "Hidden tests (cases your notebook does not show): " if _in_hidden_tests(source, line) else ""

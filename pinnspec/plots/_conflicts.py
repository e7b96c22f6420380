"""conflicts.png: running conflict rates R_g, R_a, R_u, R_p and the learning rate."""

from __future__ import annotations

import numpy as np

from ._overlap import Series, add_note, draw_visibly
from ._style import R_COLORS, fmt, new_figure, no_data, set_epoch_limits, set_title

RATE_SPAN = 1.0  # the rates' axis runs from 0 to 1
MEANING = {
    "R_g": "two task gradients conflict",
    "R_a": "surgery direction a vs a task",
    "R_u": "optimizer proposal u vs a task",
    "R_p": "aligned update p vs a task",
}


def window_for(n_epochs: int) -> int:
    """The moving-average window: about 5% of the epochs, at least 1."""
    return max(1, int(round(0.05 * n_epochs)))


def running_rates(values: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(cumulative mean, trailing moving average) of a 0/1 series without gaps: both [n]."""
    n = len(values)
    total = np.concatenate([[0.0], np.cumsum(values, dtype=float)])  # [n + 1]
    index = np.arange(n)
    cumulative = total[1:] / (index + 1)
    start = np.maximum(0, index - window + 1)
    moving = (total[index + 1] - total[start]) / (index + 1 - start)
    return cumulative, moving


def conflicts_figure(run):
    h = run.history
    epoch = h.epoch
    window = window_for(len(epoch))
    fig = new_figure(11, 7)
    ax, ax_lr = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    set_title(fig, run, "conflict rates")

    series, not_applicable = [], []
    for key, color in R_COLORS.items():
        column, mask = h.get(key), h.finite(key)
        if not mask.any():
            not_applicable.append(key)
            continue
        cumulative, moving = running_rates(column[mask], window)
        ax.plot(epoch[mask], moving, color=color, lw=0.9, alpha=0.45)
        series.append(Series(key, epoch[mask], cumulative, dict(color=color, lw=2),
                             label=f"{key} = {fmt(cumulative[-1])}  ({MEANING[key]})"))
    if series:
        groups = draw_visibly(ax, series, span=RATE_SPAN, note_in_labels=False)
        for key in not_applicable:  # others were diagnosed, this one never (R_p without alignment)
            add_note(ax, f"{key}: not applicable ({MEANING[key]})")
        for group in groups:
            add_note(ax, group.note("every diagnosed epoch"))
        ax.plot([], [], color="0.3", lw=2, label="solid: cumulative mean")
        ax.plot([], [], color="0.3", lw=0.9, alpha=0.45, label=f"faint: moving average ({window} epochs)")
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel("fraction of diagnosed epochs\nwith a conflict")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    else:
        no_data(ax, "no diagnosed epochs yet (zero-rate warmup steps are not diagnosed)", shared_x=True)

    lr = h.get("lr")
    evaluations = h.get("evaluations")  # set on the rows of a second-order stage, whose lr is the step length
    second = np.isfinite(evaluations) if evaluations is not None else np.zeros(len(epoch), dtype=bool)
    if lr is not None and np.isfinite(lr).any():
        mask = np.isfinite(lr) & ~second
        style = {"marker": "o", "ms": 3} if mask.sum() < 40 else {}
        ax_lr.plot(epoch[mask], lr[mask], color="tab:purple", lw=1.4, drawstyle="steps-post", **style)
        ax_lr.set_ylabel("learning rate")
        ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        ax_lr.grid(True, alpha=0.3)
        steps = np.isfinite(lr) & second
        if steps.any():  # an lbfgs stage: its accepted step lengths, on their own axis
            ax_step = ax_lr.twinx()
            ax_step.plot(epoch[steps], lr[steps], ".", ms=2, color="tab:green", label="L-BFGS step length")
            ax_step.set_ylabel("L-BFGS step length", color="tab:green")
            ax_step.legend(loc="upper right", fontsize=8, frameon=False)
    else:
        no_data(ax_lr, "no learning rate in history.csv", shared_x=True)
    ax_lr.set_xlabel("epoch")
    set_epoch_limits(ax_lr, epoch)
    return fig

"""losses.png: per-condition and per-task losses (log scale), the validation rel-L2 and, for a run with a
`weights` stage, the task weights; a run in `stage`s marks where each stage begins."""

from __future__ import annotations

import re

import numpy as np

from ._overlap import Series, add_note, draw_visibly
from ._style import (as_float, fmt, kept_label, new_figure, no_data, readable_log_axis, set_epoch_limits,
                     set_title)

TASK_COLORS = ["black", "0.5", "saddlebrown", "darkslateblue", "darkolivegreen", "darkmagenta", "teal", "darkred"]


def positive(values: np.ndarray) -> np.ndarray:
    """Values for a log axis: non-positive and non-finite entries become gaps."""
    out = values.astype(float).copy()
    out[~(np.isfinite(out) & (out > 0))] = np.nan
    return out


def _marks(ax, run, epoch: np.ndarray, *, label: bool) -> None:
    stage = run.history.get("stage")  # a run in stages: a line after each stage's last epoch
    if stage is not None:
        ends = np.flatnonzero(np.isfinite(stage[:-1]) & (np.diff(stage) != 0))
        for n, i in enumerate(ends):
            ax.axvline(epoch[i], color="tab:green", ls="-.", lw=1,
                       label="stage switch" if label and n == 0 else None)
            ax.text(epoch[i], 0.02, f" stage {int(stage[i + 1])}", transform=ax.get_xaxis_transform(),
                    color="tab:green", ha="left", va="bottom", fontsize=8)
    best = as_float(run.result.get("best_epoch"))
    if best is not None:
        ax.axvline(best, color="0.3", ls=":", lw=1, label=f"{kept_label(run)} epoch" if label else None)
    if run.result.get("status") == "diverged" and np.isfinite(epoch).any():
        last = np.nanmax(epoch)
        ax.axvline(last, color="red", ls="-", lw=1.2, alpha=0.7, label="diverged" if label else None)
        ax.text(last, 0.98, "diverged ", transform=ax.get_xaxis_transform(), color="red", ha="right", va="top",
                fontsize=8)


def loss_series(run, style: dict) -> list[Series]:
    """The per-condition (solid, coloured) and per-task (dashed, grey tones) loss curves."""
    h, r = run.history, run.result
    labels = r.get("tasks") if isinstance(r.get("tasks"), list) else []
    series = [Series(f"condition {name[5:]}", h.epoch, positive(h.get(name)),
                     dict(color=f"C{i % 10}", lw=1.8, **style), label=f"condition {name[5:]}")
              for i, name in enumerate(h.conditions())]
    for i, name in enumerate(h.tasks()):
        k = int(name[4:])
        short = f"task {labels[k]}" if k < len(labels) else f"task {k}"
        series.append(Series(short, h.epoch, positive(h.get(name)),
                             dict(color=TASK_COLORS[i % len(TASK_COLORS)], lw=1.2, ls="--", **style), label=short))
    return series


def losses_figure(run):
    h = run.history
    epoch = h.epoch
    style = {"marker": "o", "ms": 2.5} if len(epoch) < 40 else {}
    validation = h.get("validation")
    validated = validation is not None and np.isfinite(validation).any()
    weights = weight_columns(h)
    ratios = [2] + ([1] if validated or run.has_reference else []) + ([1] if weights else [])
    fig = new_figure(11, 6 + 1.5 * (len(ratios) - 1))
    axes = list(np.atleast_1d(fig.subplots(len(ratios), 1, sharex=True, height_ratios=ratios)))
    ax = axes.pop(0)
    ax_val = axes.pop(0) if validated or run.has_reference else None  # no reference: no validation
    ax_weights = axes.pop(0) if weights else None
    set_title(fig, run, "losses")

    series = loss_series(run, style)
    if any(np.isfinite(s.y).any() for s in series):
        draw_visibly(ax, series, log=True)
        ax.set_yscale("log")
        readable_log_axis(ax)
        _marks(ax, run, epoch, label=True)
        if ax_val is None:
            add_note(ax, "no reference: no validation error")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
                  title="solid: conditions\ndashed: tasks", title_fontsize=8)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_ylabel("loss (log scale)")
    else:
        no_data(ax, "no finite positive losses in history.csv"
                + ("\nno reference: no validation error" if ax_val is None else ""), shared_x=True)

    if ax_val is not None:
        _validation_panel(ax_val, run, validation if validated else None)
    if ax_weights is not None:
        _weights_panel(ax_weights, run, weights)
    bottom = ax_weights or ax_val or ax
    bottom.set_xlabel("epoch")
    set_epoch_limits(bottom, epoch)
    return fig


def weight_columns(history) -> list[str]:
    """The history's task-weight columns weight0, weight1, ... in task order (none without a weights stage)."""
    found = [c for c in history.columns if re.fullmatch(r"weight\d+", c)]
    return sorted(found, key=lambda c: int(c[6:]))


def _weights_panel(ax, run, columns: list[str]) -> None:
    """The task weights lambda_i each epoch's step used (the `weights` stage), one line per task."""
    h, labels = run.history, run.result.get("tasks") if isinstance(run.result.get("tasks"), list) else []
    for i, name in enumerate(columns):
        k = int(name[6:])
        ax.plot(h.epoch, h.get(name), color=TASK_COLORS[i % len(TASK_COLORS)], lw=1.2,
                label=f"task {labels[k]}" if k < len(labels) else f"task {k}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_ylabel("task weight")


def _validation_panel(ax, run, validation: np.ndarray | None) -> None:
    epoch = run.history.epoch
    if validation is None:
        no_data(ax, "no validation yet" if run.has_reference else "no reference: no validation error",
                shared_x=True)
        return
    where = {"points": "validation points", "test": "the test set"}.get(run.result.get("validation"), "")
    mask = np.isfinite(validation)
    ex, vy = epoch[mask], validation[mask]
    ax.plot(ex, vy, "o-", ms=3, lw=1, color="tab:purple", label="validation rel-L2")
    best = int(np.argmin(vy))
    ax.plot(ex[best], vy[best], "*", ms=12, color="gold", mec="black", mew=0.6, clip_on=False, zorder=5,
            label=f"min {fmt(vy[best])} at epoch {int(ex[best])}")
    if (vy > 0).all():
        ax.set_yscale("log")
        readable_log_axis(ax)
    _marks(ax, run, epoch, label=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_ylabel("rel-L2" + (f"\n(on {where})" if where else ""))

"""losses.png: per-condition and per-task losses (log scale) and the validation rel-L2."""

from __future__ import annotations

import numpy as np

from ._style import as_float, fmt, new_figure, no_data, readable_log_axis, set_epoch_limits, set_title

TASK_COLORS = ["black", "0.5", "saddlebrown", "darkslateblue", "darkolivegreen", "darkmagenta", "teal", "darkred"]


def _positive(values: np.ndarray) -> np.ndarray:
    """Values for a log axis: non-positive and non-finite entries become gaps."""
    out = values.astype(float).copy()
    out[~(np.isfinite(out) & (out > 0))] = np.nan
    return out


def _marks(ax, run, epoch: np.ndarray, *, label: bool) -> None:
    best = as_float(run.result.get("best_epoch"))
    if best is not None:
        ax.axvline(best, color="0.3", ls=":", lw=1, label="best-validation epoch" if label else None)
    if run.result.get("status") == "diverged" and np.isfinite(epoch).any():
        last = np.nanmax(epoch)
        ax.axvline(last, color="red", ls="-", lw=1.2, alpha=0.7, label="diverged" if label else None)
        ax.text(last, 0.98, "diverged ", transform=ax.get_xaxis_transform(), color="red", ha="right", va="top",
                fontsize=8)


def losses_figure(run):
    h, r = run.history, run.result
    epoch = h.epoch
    style = {"marker": "o", "ms": 2.5} if len(epoch) < 40 else {}
    fig = new_figure(11, 7.5)
    ax, ax_val = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    set_title(fig, run, "losses")

    drawn = 0
    for i, name in enumerate(h.conditions()):
        y = _positive(h.get(name))
        if np.isfinite(y).any():
            ax.plot(epoch, y, color=f"C{i % 10}", lw=1.8, label=f"condition {name[5:]}", **style)
            drawn += 1
    labels = r.get("tasks") if isinstance(r.get("tasks"), list) else []
    for i, name in enumerate(h.tasks()):
        k = int(name[4:])
        y = _positive(h.get(name))
        if np.isfinite(y).any():
            label = f"task {k}: {labels[k]}" if k < len(labels) else f"task {k}"
            ax.plot(epoch, y, color=TASK_COLORS[i % len(TASK_COLORS)], lw=1.2, ls="--", label=label, **style)
            drawn += 1
    if drawn:
        ax.set_yscale("log")
        readable_log_axis(ax)
        _marks(ax, run, epoch, label=True)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
                  title="solid: conditions\ndashed: tasks", title_fontsize=8)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_ylabel("loss (log scale)")
    else:
        no_data(ax, "no finite positive losses in history.csv", shared_x=True)

    validation = h.get("validation")
    where = {"points": "validation points", "test": "the test set"}.get(r.get("validation"), "")
    if validation is not None and np.isfinite(validation).any():
        mask = np.isfinite(validation)
        ex, vy = epoch[mask], validation[mask]
        ax_val.plot(ex, vy, "o-", ms=3, lw=1, color="tab:purple", label="validation rel-L2")
        best = int(np.argmin(vy))
        ax_val.plot(ex[best], vy[best], "*", ms=12, color="gold", mec="black", mew=0.6,
                    label=f"min {fmt(vy[best])} at epoch {int(ex[best])}")
        if (vy > 0).all():
            ax_val.set_yscale("log")
            readable_log_axis(ax_val)
        _marks(ax_val, run, epoch, label=False)
        ax_val.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        ax_val.grid(True, which="major", alpha=0.3)
        ax_val.set_ylabel("rel-L2" + (f"\n(on {where})" if where else ""))
    else:
        no_data(ax_val, "no validation yet", shared_x=True)
    ax_val.set_xlabel("epoch")
    set_epoch_limits(ax_val, epoch)
    return fig

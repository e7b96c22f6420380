"""Shared figure helpers: the Agg canvas, titles from result.json, atomic PNG writes."""

from __future__ import annotations

import io
import math
import os
import textwrap

DPI = 110
R_COLORS = {"R_g": "tab:blue", "R_a": "tab:orange", "R_u": "tab:green", "R_p": "tab:red"}


def new_figure(width: float, height: float):
    """A figure on its own Agg canvas (no pyplot, so no global state and no GUI backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig, path: str) -> str:
    """Render ``fig`` to PNG in memory, then write it atomically (temp file + rename)."""
    from .._files import atomic_write_bytes

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    atomic_write_bytes(path, buffer.getvalue())
    return os.path.abspath(path)


def as_float(value) -> float | None:
    """A number from result.json (which writes nan/inf as strings); None when absent."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def fmt(value, digits: int = 3) -> str:
    value = as_float(value)
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}g}"


def title(run, what: str, extra: str | None = None) -> str:
    """Problem, status, test rel-L2 (first line); surgery/optimizer/align (and params) below."""
    r = run.result
    problem = r.get("problem") or os.path.basename(os.path.normpath(run.path))
    line = f"{problem} — {what} — test rel-L2 {fmt(r.get('rel_l2'))}"
    best = r.get("best_epoch")
    if best is not None:
        line += f" (best-validation epoch {best})"
    status, done, total = r.get("status"), r.get("epochs_done"), r.get("epochs")
    if status and status != "completed":
        line += f" — {status}"
        if done is not None and total is not None:
            line += f" after {done} of {total} epochs"
    elif done is not None:
        line += f" — {done} epochs"
    setup = [f"{key} {r[key]}" for key in ("surgery", "optimizer", "align") if r.get(key)]
    lines = [line]
    if setup:
        lines += textwrap.wrap(" · ".join(setup), width=130)
    if status and status != "completed" and r.get("message"):
        lines += textwrap.wrap(str(r["message"]), width=130)
    params = r.get("params") or {}
    if isinstance(params, dict) and params:
        lines.append("learned: " + ", ".join(f"{k} = {fmt(v, 4)}" for k, v in params.items()))
    if not r:
        lines.append("(no result.json)")
    if extra:
        lines += textwrap.wrap(extra, width=130)
    return "\n".join(lines)


def set_title(fig, run, what: str, extra: str | None = None) -> None:
    fig.suptitle(title(run, what, extra), fontsize=10)


def no_data(ax, message: str, *, shared_x: bool = False) -> None:
    """An empty panel that says why (a panel sharing its x axis keeps the ticks the others need)."""
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", fontsize=10, color="0.4")
    ax.set_yticks([])
    if not shared_x:
        ax.set_xticks([])


def set_epoch_limits(ax, epoch) -> None:
    """x from the first to the last epoch (a little margin when there are only one or two),
    integer ticks."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    finite = epoch[np.isfinite(epoch)]
    if len(finite):
        lo, hi = float(finite.min()), float(finite.max())
        ax.set_xlim((lo - 0.5, hi + 0.5) if hi - lo < 2 else (lo, hi))


def readable_log_axis(ax) -> None:
    """On a log y axis spanning under a decade, label ticks as plain numbers (0.635, not
    6.35 x 10^-1); wider axes keep matplotlib's powers of ten."""
    from matplotlib.ticker import FuncFormatter

    lo, hi = ax.get_ylim()
    if lo > 0 and hi > 0 and math.log10(hi) - math.log10(lo) < 1.0:
        plain = FuncFormatter(lambda v, _pos: f"{v:.3g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)

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


SETTINGS = ("grouping", "surgery", "optimizer", "align", "model")
SEPARATOR = " · "
CONTINUATION = "    "


def title_width(fig) -> int:
    """About how many characters of a 10-point title fit across ``fig``."""
    return int(fig.get_figwidth() * 12)


def call_lines(text: str, width: int) -> list[str]:
    """``text`` on one line when it fits in ``width`` characters; else broken only after the commas
    between the top-level arguments of its call(s), continuation lines indented."""
    if len(text) <= width:
        return [text]
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if char == "," and depth == 1:
            pieces.append(text[start:i + 1].strip())
            start = i + 1
    pieces.append(text[start:].strip())
    lines = [pieces[0]]
    for piece in pieces[1:]:
        if len(lines[-1]) + 1 + len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(CONTINUATION + piece)
    return lines


def settings_lines(items: list[str], width: int) -> list[str]:
    """Settings such as "align gua(metric = adam, rho_m = 0.1)" packed into lines of ``width``
    characters, broken between items (never inside a call unless one call alone is too long)."""
    lines: list[str] = []
    packable = False  # whether the last line may take another item
    for item in items:
        parts = call_lines(item, width)
        if packable and len(parts) == 1 and len(lines[-1]) + len(SEPARATOR) + len(item) <= width:
            lines[-1] += SEPARATOR + item
        else:
            lines += parts
        packable = len(parts) == 1
    return lines


def kept_label(run) -> str:
    """What chose the kept checkpoint: the test error at validations, or (no reference) the held-out residual."""
    return "best-validation" if run.has_reference else "kept: lowest held-out residual"


def headline(run, what: str) -> str:
    """"problem — what — test rel-L2 ... (best-validation epoch ...) — N epochs"."""
    r = run.result
    problem = r.get("problem") or os.path.basename(os.path.normpath(run.path))
    if run.has_reference:
        line = f"{problem} — {what} — test rel-L2 {fmt(r.get('rel_l2'))}"
    else:
        line = f"{problem} — {what} — no reference: no test error"
    best = r.get("best_epoch")
    if best is not None:
        line += f" ({kept_label(run)}, epoch {best})"
    status, done, total = r.get("status"), r.get("epochs_done"), r.get("epochs")
    if status and status != "completed":
        line += f" — {status}"
        if done is not None and total is not None:
            line += f" after {done} of {total} epochs"
    elif done is not None:
        line += f" — {done} epochs"
    return line


def setting_items(result: dict, keys=SETTINGS) -> list[str]:
    return [f"{key} {result[key]}" for key in keys if result.get(key) not in (None, "")]


def title(run, what: str, extra: str | None = None, width: int = 130) -> str:
    """The headline; the run's settings (grouping, surgery, optimizer, align, model, as result.json
    states them), broken between settings; a non-completed run's message; learned parameters."""
    r = run.result
    lines = [headline(run, what)] + settings_lines(setting_items(r), width)
    if r.get("status") not in (None, "completed") and r.get("message"):
        lines += textwrap.wrap(str(r["message"]), width=width)
    params = r.get("params") or {}
    if isinstance(params, dict) and params:
        learned = [f"{k} = {fmt(v, 4)}" for k, v in params.items()]
        lines += settings_lines([f"learned: {learned[0]}"] + learned[1:], width)
    if not r:
        lines.append("(no result.json)")
    if extra:
        lines += textwrap.wrap(extra, width=width, break_on_hyphens=False)
    return "\n".join(lines)


def set_title(fig, run, what: str, extra: str | None = None) -> None:
    fig.suptitle(title(run, what, extra, width=title_width(fig)), fontsize=10)


def no_data(ax, message: str, *, shared_x: bool = False) -> None:
    """An empty panel that says why (a panel sharing its x axis keeps the ticks the others need)."""
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", fontsize=10, color="0.4")
    ax.set_yticks([])
    if not shared_x:
        ax.set_xticks([])


def set_epoch_limits(ax, epoch) -> None:
    """x from the first to the last epoch (a little margin when there are only one or two),
    integer ticks, the last epoch among them."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, MaxNLocator

    finite = epoch[np.isfinite(epoch)]
    if not len(finite):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        return
    lo, hi = float(finite.min()), float(finite.max())
    ax.set_xlim((lo - 0.5, hi + 0.5) if hi - lo < 2 else (lo, hi))
    ticks = [t for t in MaxNLocator(integer=True, min_n_ticks=1).tick_values(lo, hi) if lo <= t <= hi]
    if ticks and ticks[-1] != hi and len(ticks) > 1 and hi - ticks[-1] < 0.5 * (ticks[-1] - ticks[-2]):
        ticks.pop()  # too close to the last epoch's label
    if hi not in ticks:
        ticks.append(hi)
    ax.xaxis.set_major_locator(FixedLocator(ticks))


def readable_log_axis(ax) -> None:
    """On a log y axis spanning under a decade (where matplotlib labels one or two ticks), about
    six evenly stepped ticks labelled as plain numbers (0.635, not 6.35 x 10^-1); wider axes keep
    matplotlib's powers of ten."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

    lo, hi = ax.get_ylim()
    if lo > 0 and hi > 0 and math.log10(hi) - math.log10(lo) < 1.0:
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.3g}"))

"""One PNG comparing several runs of a problem (``pinnspec compare``): the validation rel-L2,
the running conflict rates R_u and R_p, and the total training loss of every run, one colour a run."""

from __future__ import annotations

import os

import numpy as np

from ._conflicts import MEANING, RATE_SPAN, running_rates
from ._losses import positive
from ._overlap import Series, add_note, draw_visibly
from ._run import read_run_files
from ._style import (SETTINGS, call_lines, fmt, new_figure, no_data, readable_log_axis, save, set_epoch_limits,
                     setting_items, settings_lines, title_width)

RATE_STYLES = {"R_u": "-", "R_p": "--"}  # one line style per rate, one colour per run
WIDER = 2.0  # how much wider the first run's lines are than the last's
LEGEND_WIDTH = 60  # characters of a legend line
LEGEND = dict(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def plot_comparison(run_dirs, out_path) -> str:
    if isinstance(run_dirs, (str, bytes, os.PathLike)):
        raise ValueError(f"plot_comparison takes a list of run directories, not the single path {run_dirs!r}")
    run_dirs = list(run_dirs)
    if not run_dirs:
        raise ValueError("plot_comparison needs at least one run directory")
    out_path = os.fspath(out_path)
    if os.path.isdir(out_path):
        raise ValueError(f"{out_path} is a directory: give the path of the PNG file to write")
    runs = [read_run_files(run_dir, predictions=False) for run_dir in run_dirs]
    return save(comparison_figure(runs), out_path)


def run_names(runs) -> list[str]:
    """Each run's directory basename; where two runs share one, as many parent folders as tell
    them apart."""
    parts = [os.path.abspath(run.path).split(os.sep) for run in runs]
    depth = 1
    while True:
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names) or depth >= max(len(p) for p in parts):
            return names
        depth += 1


def widths(base: float, n: int) -> list[float]:
    """One line width a run: the first widest, each later one narrower (down to ``base``), so a
    run drawn over part of an earlier one leaves that one's edges showing."""
    return [base + WIDER * (n - 1 - i) / max(n - 1, 1) for i in range(n)]


def comparison_figure(runs):
    names = run_names(runs)
    colors = [f"C{i % 10}" for i in range(len(runs))]
    fig = new_figure(13, 11)
    ax_val, ax_rates, ax_loss = fig.subplots(3, 1, sharex=True)
    fig.suptitle(_title(runs, title_width(fig)), fontsize=10)
    _validation_panel(ax_val, runs, names, colors)
    _rates_panel(ax_rates, runs, names, colors)
    _loss_panel(ax_loss, runs, names, colors)
    ax_loss.set_xlabel("epoch")
    set_epoch_limits(ax_loss, np.concatenate([run.history.epoch for run in runs]))
    return fig


def _title(runs, width: int) -> str:
    problems = list(dict.fromkeys(run.result["problem"] for run in runs if run.result.get("problem")))
    line = f"comparison of {len(runs)} run{'s' if len(runs) > 1 else ''}"
    if len(problems) == 1:
        line = f"{problems[0]} — {line}"
    elif problems:
        line += f" of different problems: {', '.join(problems)}"
    common = setting_items(runs[0].result, [key for key in _shared_settings(runs) if key != "align"])
    return "\n".join([line] + settings_lines(common, width))


def _shared_settings(runs) -> list[str]:
    return [key for key in SETTINGS if len({str(run.result.get(key)) for run in runs}) == 1]


def _run_label(run, name: str, shared: list[str]) -> str:
    """The run's name, its align setting and every setting in which the runs differ."""
    items = setting_items(run.result, [key for key in SETTINGS if key == "align" or key not in shared])
    lines = [name] + [line for item in items for line in call_lines(item, LEGEND_WIDTH)]
    if not run.result:
        lines.append("(no result.json)")
    return "\n".join(lines)


def _validation_panel(ax, runs, names, colors) -> None:
    shared = _shared_settings(runs)
    series, best = [], []
    for run, name, color, lw in zip(runs, names, colors, widths(1.2, len(runs))):
        label = _run_label(run, name, shared)
        style = dict(color=color, lw=lw, marker="o", ms=3)
        validation = run.history.get("validation")
        finite = np.isfinite(validation) if validation is not None else None
        if finite is None or not finite.any():
            if finite is None:
                why = "no validation column in history.csv"
            else:
                why = "no validation yet" if run.has_reference else "no reference: no validation error"
            series.append(Series(name, np.zeros(0), np.zeros(0), style, label=f"{label}\n{why}"))
            continue
        epoch, values = run.history.epoch[finite], validation[finite]
        k = int(np.argmin(values))
        best.append((epoch[k], values[k], color))
        test = f"test rel-L2 {fmt(run.result.get('rel_l2'))}, " if run.result.get("rel_l2") is not None else ""
        series.append(Series(name, epoch, values, style,
                             label=f"{label}\n{test}min validation {fmt(values[k])} at epoch {int(epoch[k])}"))
    log = bool(best) and all((s.y > 0).all() for s in series)
    draw_visibly(ax, series, log=log, list_empty=True)
    for epoch, value, color in best:
        ax.plot(epoch, value, "*", ms=11, color=color, mec="black", mew=0.6, zorder=5, clip_on=False)
    if log:
        ax.set_yscale("log")
        readable_log_axis(ax)
    if best:
        ax.grid(True, which="major", alpha=0.3)
    else:
        no_data(ax, "no run has a validation error", shared_x=True)
    ax.set_ylabel("validation rel-L2" + (" (log scale)" if ax.get_yscale() == "log" else ""))
    ax.legend(**LEGEND, labelspacing=0.9)


def _rates_panel(ax, runs, names, colors) -> None:
    series, summaries = [], []
    for run, name, color, lw in zip(runs, names, colors, widths(1.8, len(runs))):
        h, finals = run.history, []
        diagnosed = {rate: h.finite(rate) for rate in RATE_STYLES}
        for rate, linestyle in RATE_STYLES.items():
            mask = diagnosed[rate]
            if not mask.any():  # R_p alone blank: the run does not align
                blank = "not applicable" if rate == "R_p" and diagnosed["R_u"].any() else "no diagnosed epoch"
                finals.append(f"{rate} {blank}")
                continue
            cumulative, _ = running_rates(h.get(rate)[mask], window=1)
            style = dict(color=color, lw=lw, ls=linestyle)
            series.append(Series(f"{name} {rate}", h.epoch[mask], cumulative, style))
            finals.append(f"{rate} = {fmt(cumulative[-1])}")
        summaries.append((color, f"{name}: {', '.join(finals)}"))
    if not series:
        no_data(ax, "no run has diagnosed epochs", shared_x=True)
        return
    groups = draw_visibly(ax, series, span=RATE_SPAN, note_in_labels=False)
    for rate, linestyle in RATE_STYLES.items():
        ax.plot([], [], color="0.3", lw=1.8, ls=linestyle, label=f"{rate}: {MEANING[rate]}")
    for color, summary in summaries:
        ax.plot([], [], color=color, lw=4, label=summary)
    for group in groups:
        add_note(ax, group.note("every diagnosed epoch"))
    ax.set_ylim(-0.03, 1.03)
    ax.set_ylabel("conflict rate\n(cumulative mean over\ndiagnosed epochs)")
    ax.grid(True, alpha=0.3)
    ax.legend(**LEGEND)


def _loss_panel(ax, runs, names, colors) -> None:
    series = []
    for run, name, color, lw in zip(runs, names, colors, widths(1.4, len(runs))):
        loss = run.history.get("loss")
        values = positive(loss) if loss is not None else np.zeros(0)
        final = values[np.isfinite(values)]
        label = (f"{name}: no loss column in history.csv" if loss is None
                 else f"{name}: final {fmt(final[-1] if len(final) else None)}")
        series.append(Series(name, run.history.epoch if loss is not None else values, values,
                             dict(color=color, lw=lw), label=label))
    draw_visibly(ax, series, log=True, list_empty=True)
    if any(np.isfinite(s.y).any() for s in series):
        ax.set_yscale("log")
        readable_log_axis(ax)
        ax.grid(True, which="major", alpha=0.3)
    else:
        no_data(ax, "no finite positive training loss in any run", shared_x=True)
    ax.legend(**LEGEND)
    ax.set_ylabel("total training loss\n(log scale)")

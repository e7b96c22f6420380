"""What every bench writes: its Markdown table (:func:`markdown_table`, the cell formats), its figure
(:func:`panel_figure`) and its files (:func:`write_outputs`, :func:`write_figure`).  No torch: the paper benches import light."""

from __future__ import annotations

import math
import os


# ====================================================================== the table
def markdown_table(columns: list[str], rows: list[list], *, left: int = 1) -> list[str]:
    """A Markdown table's lines: the header, the alignment row (the first ``left`` columns left-aligned, the
    others right-aligned) and one line per row of cells."""
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---" if i < left else "---:" for i in range(len(columns))) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def pct(value) -> float | None:
    """A measured rate (a fraction) in percent; None when absent."""
    return None if value is None or not math.isfinite(value) else 100.0 * value


def cell(value, digits: int = 1) -> str:
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.{digits}f}"


def sci(mean, std=None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.2e}" if std is None else f"{mean:.2e} ± {std:.1e}"


def chain(values) -> str:
    return "→".join(cell(v) for v in values)


# ====================================================================== the figure
def panels(n: int, width: float = 4.2, height: float = 3.0):
    """A figure of ``n`` panels, three to a row (the unused ones hidden), and its ``n`` axes."""
    from ..plots import new_figure

    cols = min(n, 3)
    rows = max(1, math.ceil(n / cols))
    fig = new_figure(width * cols, height * rows)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def panel_figure(keys: list, draw, *, width: float = 4.2, height: float = 3.0):
    """A bench's figure: one panel per key, drawn by ``draw(ax, key)``."""
    fig, axes = panels(len(keys), width, height)
    for ax, key in zip(axes, keys):
        draw(ax, key)
    return fig


def grouped(rows: list[dict], key, empty) -> list[tuple]:
    """[(k, the rows whose ``key(row)`` is k)], in the order the keys first appear; [(``empty``, [])] when
    there are no rows (a figure then shows one empty panel)."""
    keys = list(dict.fromkeys(key(r) for r in rows))
    return [(k, [r for r in rows if key(r) == k]) for k in keys] or [(empty, [])]


# ====================================================================== the files
def write_outputs(out: str, stem: str, markdown: str, columns: list[str], rows: list[dict], figure=None) -> dict:
    """``OUT/STEM.md``, ``OUT/STEM.csv`` (``columns`` of ``rows``) and, given a ``figure``, ``OUT/STEM.png``;
    the paths written by kind ("markdown", "csv", "plot")."""
    from .._files import atomic_write_text, write_csv

    paths = {"markdown": os.path.join(out, f"{stem}.md"), "csv": os.path.join(out, f"{stem}.csv")}
    atomic_write_text(paths["markdown"], markdown)
    write_csv(paths["csv"], columns, rows)
    if figure is not None:
        paths["plot"] = write_figure(figure, os.path.join(out, f"{stem}.png"))
    return paths


def write_figure(figure, path: str) -> str:
    """``figure`` as a PNG at ``path`` (written atomically, its folder made); returns ``path``."""
    from ..plots import save

    save(figure, path)
    return path

"""Plots of a training run (``pinnspec plot RUN_DIR``).

    import pinnspec.plots
    paths = pinnspec.plots.plot_run("runs/burgers")   # -> [".../plots/losses.png", ...]

Writes into ``RUN_DIR/plots/`` (or ``out_dir``):

    losses.png     per-condition and per-task losses (log scale); validation rel-L2
    conflicts.png  running conflict rates R_g, R_a, R_u, R_p; the learning rate
    solution.png   reference / prediction / |error| per field (needs predictions.npz);
                   the prediction alone for a problem without a reference solution

and, for several runs of one problem (``pinnspec compare``), one PNG where you say:

    pinnspec.plots.plot_comparison(["runs/main/config-gua", "runs/main/config"], "compare.png")

and the domain of a spec with its sampled points and outward normals (``pinnspec show
--stage geometry``):

    pinnspec.plots.plot_geometry("examples/annulus/annulus.pinn", "annulus-geometry.png")

Importing this package loads neither matplotlib nor torch; they load on the
first call.  matplotlib is used through its Agg canvas only (no pyplot, no
global backend switch).
"""

from __future__ import annotations

__all__ = ["plot_run", "plot_comparison", "plot_geometry", "read_predictions", "new_figure", "save", "R_COLORS"]

#: the figure helpers other packages draw with (the benchmarks' figures), loaded with matplotlib on first use
_LAZY = {"read_predictions": "._run", "new_figure": "._style", "save": "._style", "R_COLORS": "._style"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'pinnspec.plots' has no attribute '{name}'")


def plot_run(run_dir, out_dir=None) -> list[str]:
    """Write the plots of a (finished or partial) run directory; returns the written paths.

    Raises ``ValueError`` when ``run_dir`` is not a directory, has no history
    (no epoch written yet) or holds a file that cannot be read."""
    from ._run import plot_run as _plot_run

    return _plot_run(run_dir, out_dir)


def plot_comparison(run_dirs: list[str], out_path: str) -> str:
    """Write one PNG comparing several runs of a problem; returns its path.

    Three panels over the epochs: the validation rel-L2 of every run (log scale), the running
    conflict rates R_u (solid) and R_p (dashed), and the total training loss (log scale); one
    colour a run, named in the legend by its directory and its align setting (and every other
    setting in which the runs differ).  Raises ``ValueError`` for an empty list, a run directory
    that is missing or unreadable (as ``plot_run``), or an ``out_path`` that is a directory."""
    from ._comparison import plot_comparison as _plot_comparison

    return _plot_comparison(run_dirs, out_path)


def plot_geometry(spec, out_path: str, *, seed: int = 0) -> str:
    """Write one PNG of a spec's domain and its sampled points; returns its absolute path.

    ``spec``: a .pinn path, a loaded spec (``pinnspec.load``) or a compiled problem.  Draws the
    space box (dashed), the domain's boundary (2-D specs with a ``domain``), the equations'
    interior points, each other condition's points in its own colour (named in the legend) and
    the outward normals on at most 60 points per boundary set, for epoch 0 of ``seed``.  Space
    only: time is dropped, 1-D is drawn one row per point set, 3-D and more as the projection onto
    the first two space coordinates (the title says which).  Raises ``ValueError`` when
    ``out_path`` is a directory or cannot be written."""
    from ._geometry import plot_geometry as _plot_geometry

    return _plot_geometry(spec, out_path, seed=seed)

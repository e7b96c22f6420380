"""Plots of a training run (``pinnspec plot RUN_DIR``).

    import pinnspec.plots
    paths = pinnspec.plots.plot_run("runs/burgers")   # -> [".../plots/losses.png", ...]

Writes into ``RUN_DIR/plots/`` (or ``out_dir``):

    losses.png     per-condition and per-task losses (log scale); validation rel-L2
    conflicts.png  running conflict rates R_g, R_a, R_u, R_p; the learning rate
    solution.png   reference / prediction / |error| per field (needs predictions.npz)

Importing this package loads neither matplotlib nor torch; they load on the
first call.  matplotlib is used through its Agg canvas only (no pyplot, no
global backend switch).
"""

from __future__ import annotations

__all__ = ["plot_run"]


def plot_run(run_dir, out_dir=None) -> list[str]:
    """Write the plots of a (finished or partial) run directory; returns the written paths.

    Raises ``ValueError`` when ``run_dir`` is not a directory, has no history
    (no epoch written yet) or holds a file that cannot be read."""
    from ._run import plot_run as _plot_run

    return _plot_run(run_dir, out_dir)

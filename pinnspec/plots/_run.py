"""Reading a run directory (history.csv, result.json, predictions.npz) and writing its plots."""

from __future__ import annotations

import csv
import math
import os
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._rundir import read_manifest, read_result, record_files, run_dir_error
from ._style import as_float

HISTORY, RESULT, PREDICTIONS, CONFIG = "history.csv", "result.json", "predictions.npz", "config.pinn"


@dataclass
class History:
    """history.csv as float columns (blank cells are nan)."""

    columns: dict[str, np.ndarray]  # name -> [n_rows]

    @property
    def epoch(self) -> np.ndarray:
        return self.columns["epoch"]

    def get(self, name: str) -> np.ndarray | None:
        return self.columns.get(name)

    def finite(self, name: str) -> np.ndarray:
        """[n_rows] bool: the rows where column ``name`` holds a number (none without the column)."""
        column = self.columns.get(name)
        return np.isfinite(column) if column is not None else np.zeros(len(self.epoch), bool)

    def conditions(self) -> list[str]:
        return [c for c in self.columns if c.startswith("loss:")]

    def tasks(self) -> list[str]:
        found = [c for c in self.columns if re.fullmatch(r"task\d+", c)]
        return sorted(found, key=lambda c: int(c[4:]))


@dataclass
class Predictions:
    points: np.ndarray  # [N, d]
    reference: np.ndarray | None  # [N, F]; None for a problem without a reference solution
    prediction: np.ndarray  # [N, F]
    coordinates: list[str]
    fields: list[str]


@dataclass
class Run:
    path: str
    history: History
    result: dict = field(default_factory=dict)
    predictions: Predictions | None = None
    domain: Any = None  # the spec's pinnspec.ir.Domain (config.pinn); None for the plain box

    @property
    def has_reference(self) -> bool:
        """False when the problem has no reference solution: predictions.npz without ``reference``,
        or (without predictions) a result.json whose final test error is null after training."""
        if self.predictions is not None:
            return self.predictions.reference is not None
        trained = (as_float(self.result.get("epochs_done")) or 0) > 0
        return not (trained and "rel_l2_final" in self.result and self.result["rel_l2_final"] is None)


# ---------------------------------------------------------------------- reading
def _number(text: str, name: str, line: int, path: str) -> float:
    text = (text or "").strip()
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{path}: line {line}: column '{name}' holds {text!r}, not a number") from None


def read_history(path: str) -> History:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            names = list(reader.fieldnames or [])
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise run_dir_error(path, f"cannot read it ({err})") from None
    if "epoch" not in names:
        raise ValueError(f"{path} has no 'epoch' column: not a pinnspec history")
    if not rows:
        raise ValueError(f"{path} has no epochs yet: nothing to plot")
    columns = {name: np.array([_number(row.get(name), name, i + 2, path) for i, row in enumerate(rows)])
               for name in names}
    return History(columns)


def _columns(array) -> np.ndarray:
    """A float array with a 1-d one as a single column."""
    array = np.asarray(array, dtype=float)
    return array[:, None] if array.ndim == 1 else array


def read_predictions(path: str) -> Predictions | None:
    if not os.path.exists(path):
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        raise run_dir_error(path, f"cannot read it ({err})") from None
    missing = [k for k in ("points", "prediction") if k not in arrays]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)}")
    points, prediction = _columns(arrays["points"]), _columns(arrays["prediction"])
    reference = _columns(arrays["reference"]) if "reference" in arrays else None
    if points.ndim != 2 or len(points) == 0 or points.shape[1] == 0:
        raise ValueError(f"{path}: points must be a non-empty [N, d] array, got shape {points.shape}")
    if prediction.ndim != 2 or len(prediction) != len(points):
        raise ValueError(f"{path}: prediction {prediction.shape} must be [N, F] with N = {len(points)} points")
    if reference is not None and reference.shape != prediction.shape:
        raise ValueError(f"{path}: reference {reference.shape} and prediction {prediction.shape} "
                         f"must both be [N, F] with N = {len(points)} points")
    d, f = points.shape[1], prediction.shape[1]
    coordinates = [str(c) for c in np.atleast_1d(arrays.get("coordinates", np.array([])))]
    fields = [str(c) for c in np.atleast_1d(arrays.get("fields", np.array([])))]
    if len(coordinates) != d:
        coordinates = [f"x{j}" for j in range(d)]
    if len(fields) != f:
        fields = [f"u{j}" for j in range(f)]
    return Predictions(points, reference, prediction, coordinates, fields)


def read_domain(path: str):
    """The ``domain`` of the spec in a run's config.pinn (a :class:`pinnspec.ir.Domain`); None when the spec
    has none, or when config.pinn is missing or its geometry does not lower (nothing is then masked).
    Only the geometry matters here: a reference file that is not where the run was trained is no reason
    to lose the domain, so the statements are lowered without stopping at such errors."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    from ..lang import SpecError, parse, spec_domain
    from ..registry import load_plugins

    try:
        tree = parse(text, path)
    except SpecError:
        return None
    load_plugins()
    try:
        return spec_domain(tree, os.path.dirname(os.path.abspath(path)))
    except (SpecError, ValueError, OSError):
        return None


def read_run_files(run_dir, *, predictions: bool = True) -> Run:
    """Read a run directory (``predictions=False``: not its predictions.npz); ``ValueError`` when
    it is missing, not a run directory, or holds a file that cannot be read."""
    run_dir = os.fspath(run_dir)
    if not os.path.isdir(run_dir):
        what = "is not a directory" if os.path.exists(run_dir) else "does not exist"
        raise ValueError(f"run directory {run_dir} {what}")
    history_path = os.path.join(run_dir, HISTORY)
    if not os.path.exists(history_path):
        raise ValueError(f"{run_dir} has no {HISTORY}: not a pinnspec run directory, "
                         "or the run has not written its first checkpoint yet")
    return Run(path=run_dir, history=read_history(history_path),
               result=read_result(run_dir) if os.path.exists(os.path.join(run_dir, RESULT)) else {},
               predictions=read_predictions(os.path.join(run_dir, PREDICTIONS)) if predictions else None,
               domain=read_domain(os.path.join(run_dir, CONFIG)) if predictions else None)


# ---------------------------------------------------------------------- writing
def plot_run(run_dir, out_dir=None) -> list[str]:
    from ._conflicts import conflicts_figure
    from ._losses import losses_figure
    from ._solution import solution_figure
    from ._style import save

    run = read_run_files(run_dir)
    out_dir = os.fspath(out_dir) if out_dir is not None else os.path.join(run.path, "plots")
    written = []
    for name, build in (("losses.png", losses_figure), ("conflicts.png", conflicts_figure)):
        written.append(save(build(run), os.path.join(out_dir, name)))
    if run.predictions is not None:
        written.append(save(solution_figure(run), os.path.join(out_dir, "solution.png")))
    if read_manifest(run.path) is not None:  # the run's plots are the run's: --overwrite replaces them
        inside = [os.path.relpath(p, run.path) for p in written]
        record_files(run.path, [name.replace(os.sep, "/") for name in inside if not name.startswith("..")])
    return written

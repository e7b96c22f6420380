"""Reading the rows of a ``data`` condition: CSV (header line) or NPZ."""

from __future__ import annotations

import os
import zipfile
from typing import Sequence

import numpy as np

from .. import ir

__all__ = ["load_data", "read_columns"]


def _read_csv(path: str) -> dict[str, np.ndarray]:
    with open(path, encoding="utf-8-sig") as fh:
        header = fh.readline()
        if not header.strip():
            raise ValueError(f"data file '{path}': empty, or no header line (expected column names such as x,t,u)")
        names = [h.strip().strip('"').strip("'").strip() for h in header.split(",")]
        if any(not name for name in names):
            raise ValueError(f"data file '{path}': the header line has an empty column name: {header.strip()!r}")
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError(f"data file '{path}': the column '{name}' appears twice in the header")
            seen.add(name)
        try:
            values = np.loadtxt(fh, delimiter=",", dtype=np.float64, ndmin=2, comments="#")
        except ValueError as exc:
            raise ValueError(f"data file '{path}': cannot read the rows as numbers ({exc})") from None
    if values.size == 0:
        values = np.empty((0, len(names)))
    if values.shape[1] != len(names):
        raise ValueError(f"data file '{path}': the header names {len(names)} columns, the rows have {values.shape[1]}")
    return {name: values[:, i] for i, name in enumerate(names)}


def _read_npz(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {name: np.asarray(npz[name]) for name in npz.files}
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ValueError(f"data file '{path}': not a readable NPZ file ({exc})") from None


def read_columns(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every column of a CSV or NPZ file, by name (NPZ: by array name)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"data file '{path}' does not exist")
    if path.lower().endswith(".npz"):
        return _read_npz(path)
    return _read_csv(path)


def load_data(path: str | os.PathLike, coordinates: Sequence[ir.Coordinate | str],
              fields: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(x [N, d], observed [N, n_fields])`` float64 from a CSV file (a header
    line of comma-separated column names, then one row per point) or an NPZ
    file (one array per column, each flattened).  Columns are picked by the
    coordinate names (in the given order) and the field names; other columns
    are ignored.  A missing column, columns of unequal length or a non-finite
    value raise ``ValueError`` naming the file and the column."""
    path = os.fspath(path)
    columns = read_columns(path)
    coord_names = [c if isinstance(c, str) else c.name for c in coordinates]
    wanted = coord_names + list(fields)
    available = ", ".join(columns) or "none"
    picked = []
    for name in wanted:
        if name not in columns:
            what = "coordinate" if name in coord_names else "field"
            raise ValueError(f"data file '{path}': no column '{name}' (the {what} '{name}'); "
                             f"the file has columns: {available}")
        col = np.asarray(columns[name])
        if not np.issubdtype(col.dtype, np.number) or np.iscomplexobj(col):
            raise ValueError(f"data file '{path}': the column '{name}' is not real numbers (dtype {col.dtype})")
        picked.append(col.astype(np.float64, copy=False).reshape(-1))
    lengths = {name: len(col) for name, col in zip(wanted, picked)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"data file '{path}': the columns have different lengths: "
                         + ", ".join(f"{k}: {v}" for k, v in lengths.items()))
    for name, col in zip(wanted, picked):
        if not np.all(np.isfinite(col)):
            raise ValueError(f"data file '{path}': the column '{name}' has a non-finite value (NaN or inf)")
    n = next(iter(lengths.values()), 0)
    d = len(coord_names)
    table = np.stack(picked, axis=1) if picked else np.empty((n, 0))
    return np.ascontiguousarray(table[:, :d]), np.ascontiguousarray(table[:, d:])

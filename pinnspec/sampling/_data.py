"""Reading the rows of a ``data`` condition or a ``reference`` file: CSV
(header line), NPZ, COMSOL text exports (``.dat``/``.txt`` with a ``%``
header, steady or wide time-dependent; see :mod:`._comsol`) and plain
whitespace-separated number tables (``.dat``/``.txt`` without a header,
columns ``column1``, ``column2``, ...).

A file is read whole and checked once per version (path, modification time, size): every value a finite
number, every row one value per column (:mod:`._datafile`), then, for its use, the columns it needs and at
least one row.  ``pinnspec check`` (the language front end) and training read it through the same functions,
so a file that checks is a file that trains.  Every problem is a :class:`DataFileError`,
``PATH:LINE: what is wrong``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np

from .. import ir
from ._comsol import ComsolTable, read_comsol
from ._datafile import DataFileError, first_content_line, listed, parse_number_rows, quoted, read_npz, read_text_lines

__all__ = ["DataFileError", "FileColumns", "column_mapping", "load_data", "load_reference", "match_columns",
           "read_columns", "read_file_columns"]

_TEXT_TABLE_SUFFIXES = (".dat", ".txt")


@dataclass(frozen=True)
class FileColumns:
    """The column names of a data or reference file and what the file says
    about them: ``coordinates``, the columns the file marks as coordinates
    (a COMSOL export: its space columns and its time), None when it does not
    say; ``time_column``, the file's time column when it marks one;
    ``named``, False for a plain number table (its names are made up)."""

    source: str
    names: tuple[str, ...]
    coordinates: tuple[str, ...] | None = None
    time_column: str | None = None
    named: bool = True
    header_line: int | None = None  # the line naming the columns (a text file), for messages


def _csv_names(header: str, path: str, line: int) -> list[str]:
    names = [h.strip().strip('"').strip("'").strip() for h in header.split(",")]
    if any(not name for name in names):
        raise DataFileError(path, f"the header line has an empty column name: {quoted(header.strip())} (expected "
                            f"column names such as x,t,u)", line)
    seen = set()
    for name in names:
        if name in seen:
            raise DataFileError(path, f"the column {quoted(name)} appears twice in the header", line)
        seen.add(name)
    return names


def _read_csv(path: str) -> tuple[dict[str, np.ndarray], int]:
    """The columns of a CSV file and the line of its header (the first non-blank line)."""
    lines = read_text_lines(path)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise DataFileError(path, "empty: expected a header line of column names such as x,t,u, then rows of "
                            "numbers")
    names = _csv_names(lines[first], path, first + 1)
    values = parse_number_rows(path, lines, first + 1, len(names), tuple(names), first + 1, delimiter=",")
    return {name: values[:, i] for i, name in enumerate(names)}, first + 1


def _plain_names(column_count: int) -> list[str]:
    return [f"column{i + 1}" for i in range(column_count)]


def _read_plain(path: str) -> dict[str, np.ndarray]:
    """A headerless table of whitespace-separated numbers; its columns are
    named column1, column2, ... (match them by order)."""
    lines = read_text_lines(path)
    first = next(i for i, line in enumerate(lines) if line.strip())  # _kind: the file has a non-blank line
    data = parse_number_rows(path, lines, first, len(lines[first].split()))
    return dict(zip(_plain_names(data.shape[1]), data.T))


def _kind(path: str) -> str:
    """'npz', 'comsol', 'plain' or 'csv': NPZ by suffix; a .dat/.txt file by
    its first line ('%': a COMSOL export; a comma: CSV; else plain numbers);
    anything else is CSV."""
    lower = path.lower()
    if lower.endswith(".npz"):
        return "npz"
    if lower.endswith(_TEXT_TABLE_SUFFIXES):
        line = first_content_line(path)
        if not line:
            raise DataFileError(path, "empty (expected a '%' header and rows of numbers, or a CSV header line "
                                "and rows)")
        return "comsol" if line.startswith("%") else "csv" if "," in line else "plain"
    return "csv"


def _read_table(path: str) -> tuple[Mapping[str, np.ndarray], FileColumns]:
    """Every column of the file (read-only arrays) and its layout, checked; read once per file version."""
    if not os.path.isfile(path):
        raise DataFileError(path, "the file does not exist" if not os.path.exists(path) else
                            "not a file (expected a data file, not a folder)")
    try:
        stat = os.stat(path)
        return _read_table_version(path, stat.st_mtime_ns, stat.st_size)
    except OSError as exc:
        raise DataFileError(path, f"cannot read the file ({exc.strerror or exc})") from None


@lru_cache(maxsize=8)
def _read_table_version(path: str, mtime_ns: int, size: int) -> tuple[Mapping[str, np.ndarray], FileColumns]:
    kind = _kind(path)
    if kind == "comsol":
        table = read_comsol(path)
        columns, layout = table.columns, _comsol_layout(table)
    elif kind == "npz":
        columns = read_npz(path)
        layout = FileColumns(path, tuple(columns))
    elif kind == "plain":
        columns = _read_plain(path)
        layout = FileColumns(path, tuple(columns), named=False)
    else:
        columns, header_line = _read_csv(path)
        layout = FileColumns(path, tuple(columns), header_line=header_line)
    for column in columns.values():
        column.setflags(write=False)  # shared by every reader of this file version
    return columns, layout


def _comsol_layout(table: ComsolTable) -> FileColumns:
    header = table.header
    return FileColumns(header.path, header.names, header.coordinates, header.time_column,
                       header_line=header.column_line)


def read_columns(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every column of a data file, by name: CSV (header names), NPZ (array
    names), a COMSOL export (long form: ``x[, y, z][, t], outputs``; see
    :func:`read_comsol`) or a plain number table (``column1``, ...); the
    arrays are read-only (shared by every reader of the file: copy one to
    change it)."""
    return dict(_read_table(os.fspath(path))[0])


def read_file_columns(path: str | os.PathLike) -> FileColumns:
    """The column names of a data file and what it says about them.  The whole file is read and checked
    (values, row lengths; see the module notes), so that ``pinnspec check`` refuses what training would:
    DataFileError (``PATH:LINE: ...``) says what is wrong."""
    return _read_table(os.fspath(path))[1]


# ------------------------------------------------------------------ matching
def _names_of(coordinates: Sequence[ir.Coordinate | str]) -> list[str]:
    return [c if isinstance(c, str) else c.name for c in coordinates]


def _by_name(wanted: str, names: Sequence[str], layout: FileColumns) -> str | None:
    """The column of ``names`` (some of ``layout``'s) for ``wanted``: the same name, else the one name equal
    to it ignoring case; None when there is none."""
    if wanted in names:
        return wanted
    alike = [n for n in names if n.lower() == wanted.lower()]
    if len(alike) > 1:
        raise DataFileError(layout.source, f"the columns {', '.join(map(repr, alike))} all match '{wanted}' "
                            f"ignoring case; rename all but one", layout.header_line)
    return alike[0] if alike else None



def _order_refusal(layout: FileColumns, coordinates: Sequence[ir.Coordinate | str], wanted: list[str],
                   found: dict[str, str | None]) -> str | None:
    """Why matching ``layout``'s columns to ``wanted`` by position is unsafe
    (None when it is safe)."""
    names = layout.names
    if len(names) != len(wanted):
        return f"matching by order needs {len(wanted)} columns, the file has {len(names)}"
    coord_count = len(coordinates)
    if layout.coordinates is not None and len(layout.coordinates) != coord_count:
        return (f"matching by order needs {coord_count} coordinate columns, the file has "
                f"{len(layout.coordinates)} ({', '.join(layout.coordinates)})")
    for position, name in enumerate(wanted):
        column = found[name]
        if column is not None and column != names[position]:
            return (f"matching by order would read '{name}' from column {position + 1} ('{names[position]}'), "
                    f"but the file's column '{column}' is named for it")
    if layout.time_column is not None:
        for position, c in enumerate(coordinates):
            if not isinstance(c, ir.Coordinate):
                continue
            if c.is_time and names[position] != layout.time_column:
                return (f"matching by order would read the time '{c.name}' from the column '{names[position]}', "
                        f"not from the file's time column '{layout.time_column}'")
            if not c.is_time and names[position] == layout.time_column:
                return (f"matching by order would read the space coordinate '{c.name}' from the file's time "
                        f"column '{layout.time_column}'")
    return None


def column_mapping(layout: FileColumns, coordinates: Sequence[ir.Coordinate | str], fields: Sequence[str],
                   by_order: bool = True) -> dict[str, str]:
    """Which file column holds each coordinate and field: ``{spec name: file
    column}``, coordinates first.  By name (the same name, else the same
    ignoring case) when every name is found; else, if ``by_order``, by
    position (coordinates first, then fields) when the counts agree, no
    column named for one name would be read for another, and a time column
    the file marks (a COMSOL ``@ t=``) pairs with the spec's time
    coordinate.  Otherwise DataFileError naming the file, the names expected
    and the names the file has."""
    coord_names = _names_of(coordinates)
    wanted = coord_names + list(fields)
    found = {name: _by_name(name, layout.names, layout) for name in wanted}
    missing = [name for name in wanted if found[name] is None]
    if not missing:
        return {name: found[name] for name in wanted}
    refusal = _order_refusal(layout, coordinates, wanted, found) if by_order else None
    if by_order and refusal is None:
        return dict(zip(wanted, layout.names))
    name = missing[0]
    what = "coordinate" if name in coord_names else "field"
    message = f"no column '{name}' (the {what} '{name}'); the file has columns: {listed(layout.names)}"
    if by_order:
        message += (f"; expected columns named {', '.join(wanted)} (coordinates, then fields), "
                    f"or that many columns in that order, but {refusal}")
    else:
        message += f"; expected columns named {', '.join(wanted)} (coordinates, then fields): rename the header"
    raise DataFileError(layout.source, message, layout.header_line)


def match_columns(table: ComsolTable | Mapping[str, np.ndarray], coordinates: Sequence[ir.Coordinate | str],
                  fields: Sequence[str], *, by_order: bool = True,
                  source: str = "<columns>") -> tuple[np.ndarray, np.ndarray]:
    """``(points [N, d], values [N, n_fields])`` float64 from a table's
    columns, matched to the coordinates and fields as :func:`column_mapping`
    says (by name, else by order).  ``table`` is a :class:`ComsolTable` or a
    mapping of column name to array (as :func:`read_columns` gives; arrays
    are flattened; ``source`` names it in messages).  Columns of unequal
    length, not real numbers or not finite raise DataFileError naming the
    file and the column."""
    if isinstance(table, ComsolTable):
        columns, layout = table.columns, _comsol_layout(table)
    else:
        columns, layout = table, FileColumns(source, tuple(table))
    mapping = column_mapping(layout, coordinates, fields, by_order=by_order)
    return _stack(layout, columns, mapping, len(coordinates))


def _stack(layout: FileColumns, columns: Mapping[str, np.ndarray], mapping: dict[str, str],
           coordinate_count: int, use: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The mapped columns side by side, checked: real numbers, finite, of one length, and (``use`` given:
    what the rows are for) at least one row."""
    source = layout.source
    picked = []
    for name, column_name in mapping.items():
        col = np.asarray(columns[column_name])
        label = f"'{column_name}'" if column_name == name else f"'{column_name}' (read as '{name}')"
        if not np.issubdtype(col.dtype, np.number) or np.iscomplexobj(col):
            raise DataFileError(source, f"the column {label} is not real numbers (dtype {col.dtype}); expected "
                                f"an array of real numbers")
        picked.append(col.astype(np.float64, copy=False).reshape(-1))
    lengths = {name: len(col) for name, col in zip(mapping.values(), picked)}
    if len(set(lengths.values())) > 1:
        raise DataFileError(source, "the columns have different lengths: "
                            + ", ".join(f"{k}: {v}" for k, v in lengths.items()) + "; expected one value per row "
                            "in every column")
    for name, col in zip(mapping.values(), picked):
        bad = np.flatnonzero(~np.isfinite(col))
        if len(bad):
            raise DataFileError(source, f"the column '{name}' has a non-finite value ({col[bad[0]]}) at "
                                f"position {bad[0] + 1} of {len(col)}; expected finite numbers")
    n = next(iter(lengths.values()), 0)
    if use and not n:
        where = "below the header line" if layout.header_line else "to every column"
        raise DataFileError(source, f"no rows of values: {use} needs at least one (add rows {where})",
                            layout.header_line)
    table = np.stack(picked, axis=1) if picked else np.empty((n, 0))
    return np.ascontiguousarray(table[:, :coordinate_count]), np.ascontiguousarray(table[:, coordinate_count:])


def load_data(path: str | os.PathLike, coordinates: Sequence[ir.Coordinate | str],
              fields: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(x [N, d], observed [N, n_fields])`` float64 from a data file: CSV
    (a header line of comma-separated column names, then one row per point),
    NPZ (one array per column, each flattened), a COMSOL export (long form)
    or a plain number table.  Columns are picked by the coordinate names (in
    the given order) and the field names; other columns are ignored.  Only a
    plain number table (no names) is matched by order.  A missing column,
    no rows, or a value that is not a finite number raise DataFileError
    naming the file (and the line)."""
    columns, layout = _read_table(os.fspath(path))
    mapping = column_mapping(layout, coordinates, fields, by_order=not layout.named)
    return _stack(layout, columns, mapping, len(coordinates), "a data condition")


def load_reference(path: str | os.PathLike, coordinates: Sequence[ir.Coordinate | str],
                   fields: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(points [N, d], values [N, n_fields])`` float64 from a reference
    file (any format :func:`read_columns` reads), its columns matched by name,
    else by order (see :func:`column_mapping`), at least one row."""
    columns, layout = _read_table(os.fspath(path))
    mapping = column_mapping(layout, coordinates, fields, by_order=True)
    return _stack(layout, columns, mapping, len(coordinates), "a reference")

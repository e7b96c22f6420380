"""Reading COMSOL text exports (the ``.dat``/``.txt`` spreadsheet format) and
plain whitespace-separated number tables.

A COMSOL export starts with ``%`` comment lines.  The earlier ones are
``% Key: value`` metadata (Model, Version, Date, Dimension, Nodes,
Expressions, Description, Length unit); the last one names the columns::

    % Model:              burgers1d.mph
    % Dimension:          1
    % Nodes:              101
    % Expressions:        11
    % X                       u (1) @ t=0              u (1) @ t=0.1   ...
    -1                        0                        0               ...

The first ``Dimension`` columns are the node coordinates (``X``/``Y``/``Z``,
read lower-cased as ``x``/``y``/``z``).  Every other column is an output,
written ``name [(unit)] [@ parameter=value, ...]``: a steady export has one
column per output (``u (1)`` is the output ``u``; the unit is dropped); a
time-dependent export is WIDE, one column per output per time (``u (1) @
t=0.1``).  :func:`read_comsol` expands a wide table to long form: one row per
(time, node), sorted by time then node order, with the time as a column ``t``
placed after the space coordinates -- ``x[, y, z], t, outputs...``.  A
parameter other than ``t`` that has one value in every column (``u @
Re=100``) is kept in :attr:`ComsolHeader.constants`; one that takes several
values is expanded like the time.  A file sweeps at most one parameter.

Every error names the file and the line (and the column where it helps) and
says what was expected.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ._datafile import DataFileError, parse_number_rows, quoted, read_text_lines

__all__ = [
    "ComsolHeader",
    "ComsolTable",
    "read_comsol",
    "read_comsol_header",
]

TIME = "t"
# "% Key: value" -- a key is words and spaces ("Length unit"), then a colon and a space.
_METADATA_LINE = re.compile(r"%\s*(?P<key>[A-Za-z][A-Za-z ]*?)\s*:\s+(?P<value>.*?)\s*$")
# One column of the column line: an expression, an optional unit in parentheses
# and an optional "@ name=value[, name=value ...]".
_COLUMN = re.compile(
    r"(?P<name>[^\s@]+)"
    r"(?:\s+\((?P<unit>[^()]*)\))?"
    r"(?:\s*@\s*(?P<at>[^\s,=@]+\s*=\s*[^\s,@]+(?:\s*,\s*[^\s,=@]+\s*=\s*[^\s,@]+)*))?"
)
_SPACE_NAMES = ("x", "y", "z")


@dataclass(frozen=True)
class _Column:
    """One column of the column line, as written."""

    number: int  # 1-based position in the line
    text: str  # as written, e.g. "u (1) @ t=0.1"
    name: str  # "u"
    at: tuple[tuple[str, float], ...]  # (("t", 0.1),)


@dataclass(frozen=True)
class ComsolHeader:
    """What the ``%`` header of a COMSOL export says, without the rows.

    ``space`` are the node coordinate columns (lower-cased), ``sweep`` the
    expanded parameter (``"t"`` for a time-dependent export, None for a
    steady one) with its values ``sweep_values`` in file order, ``outputs``
    the output names in order of first appearance.  :attr:`names` are the
    long-form column names: ``space + (sweep,) + outputs``."""

    path: str
    metadata: Mapping[str, str]
    space: tuple[str, ...]
    outputs: tuple[str, ...]
    sweep: str | None
    sweep_values: tuple[float, ...]
    constants: Mapping[str, float]
    column_line: int  # 1-based line number of the column-name line
    column_count: int  # columns in the file (wide form)
    first_data_line: int  # 1-based line number of the first row (0: no rows)
    # For each output, the 0-based file column of each sweep value (one entry when steady).
    output_columns: Mapping[str, tuple[int, ...]] = field(repr=False)

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The long-form coordinate columns: space, then the swept parameter."""
        return self.space + ((self.sweep,) if self.sweep else ())

    @property
    def names(self) -> tuple[str, ...]:
        return self.coordinates + self.outputs

    @property
    def time_column(self) -> str | None:
        """``"t"`` when the file is time-dependent (columns ``@ t=...``), else None."""
        return self.sweep if self.sweep == TIME else None

    def declared_count(self, key: str) -> int | None:
        """The metadata ``key`` (e.g. ``"Nodes"``) as an integer; None if absent or not an integer."""
        try:
            return int(self.metadata[key])
        except (KeyError, ValueError):
            return None


@dataclass(frozen=True)
class ComsolTable:
    """A COMSOL export in long form: :attr:`columns` maps every name of
    ``header.names`` to a float64 array of :attr:`rows` values (one row per
    node, or per (time, node) sorted by time then node)."""

    header: ComsolHeader
    columns: Mapping[str, np.ndarray]
    nodes: int

    @property
    def path(self) -> str:
        return self.header.path

    @property
    def names(self) -> tuple[str, ...]:
        return self.header.names

    @property
    def rows(self) -> int:
        return self.nodes * max(1, len(self.header.sweep_values))

    def array(self) -> np.ndarray:
        """Every column side by side: [rows, len(names)] float64."""
        return np.stack([self.columns[n] for n in self.names], axis=1)


# -------------------------------------------------------------------- header
def _error(where: tuple[str, int], reason: str) -> DataFileError:
    return DataFileError(where[0], reason, where[1])


def read_comsol_header(path: str | os.PathLike, lines: list[str] | None = None) -> ComsolHeader:
    """Parse the ``%`` header of a COMSOL export (reads the file unless
    ``lines`` are given).  Raises DataFileError, naming the file and the line,
    when there is no header, no column line, a column that cannot be read, a
    coordinate column with ``@``, outputs that do not share the same times, or
    times that do not increase."""
    path = os.fspath(path)
    if lines is None:
        lines = read_text_lines(path)
    header_lines: list[int] = []  # 0-based indices of the '%' lines
    first_data = len(lines)
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("%"):
            header_lines.append(index)
        elif stripped:
            first_data = index
            break
    if not header_lines:
        raise DataFileError(path, f"not a COMSOL export (expected '%' header lines, "
                                  f"the last naming the columns, e.g. '% X  Y  u (1)')", 1)
    metadata: dict[str, str] = {}
    for index in header_lines[:-1]:
        match = _METADATA_LINE.match(lines[index].strip())
        if match:
            metadata[match["key"]] = match["value"]
    column_index = header_lines[-1]
    column_text = lines[column_index].strip()
    if _METADATA_LINE.match(column_text):
        raise DataFileError(path, f"expected the last '%' line to name the columns (e.g. '% X  Y  u (1)'), "
                                  f"found the metadata line {quoted(column_text)}", column_index + 1)
    where = (path, column_index + 1)
    columns = _parse_column_line(column_text[1:], where)
    space_count = _space_count(metadata, columns, where)
    space = tuple(c.name.lower() for c in columns[:space_count])
    for c in columns[:space_count]:
        if c.at:
            raise _error(where, f"column {c.number} ({c.text!r}): a coordinate column (the first "
                                f"{space_count}, by 'Dimension') cannot carry '@ ...'")
    _check_distinct(space, where, "coordinate")
    outputs_columns = columns[space_count:]
    if not outputs_columns:
        raise _error(where, f"no output columns after the {space_count} coordinate column(s) "
                            f"(expected e.g. '% X  Y  u (1)')")
    sweep, constants = _sweep_of(outputs_columns, where)
    outputs, output_columns, sweep_values = _group_outputs(outputs_columns, sweep, where)
    for name in outputs:
        if name in space or name == sweep:
            raise _error(where, f"the output '{name}' has the name of a coordinate column")
    if sweep in space:
        raise _error(where, f"the swept parameter '{sweep}' has the name of a coordinate column")
    header = ComsolHeader(path=path, metadata=metadata, space=space, outputs=outputs, sweep=sweep,
                          sweep_values=sweep_values, constants=constants, column_line=column_index + 1,
                          column_count=len(columns), first_data_line=first_data + 1 if first_data < len(lines) else 0,
                          output_columns=output_columns)
    declared = header.declared_count("Expressions")
    if declared is not None and declared != len(outputs_columns):
        raise DataFileError(path, f"'Expressions: {declared}', but the column line (line {column_index + 1}) has "
                                  f"{len(outputs_columns)} output columns",
                            _metadata_line(lines, header_lines, "Expressions"))
    return header


def _parse_column_line(text: str, where: tuple[str, int]) -> list[_Column]:
    columns: list[_Column] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return columns
        match = _COLUMN.match(text, position)
        if not match or (match.end() < len(text) and not text[match.end()].isspace()):
            raise _error(where, f"column {len(columns) + 1}: cannot read the column name at "
                                f"{quoted(text[position:])} (expected 'name', 'name (unit)' or "
                                f"'name (unit) @ t=value')")
        at = []
        for assignment in (match["at"] or "").split(","):
            if not assignment.strip():
                continue
            key, value = (part.strip() for part in assignment.split("=", 1))
            try:
                at.append((key, float(value)))
            except ValueError:
                raise _error(where, f"column {len(columns) + 1} ({match[0]!r}): the value of '{key}' "
                                    f"is not a number ({value!r})") from None
        columns.append(_Column(len(columns) + 1, match[0], match["name"], tuple(at)))
        position = match.end()


def _space_count(metadata: Mapping[str, str], columns: list[_Column], where: tuple[str, int]) -> int:
    """How many leading columns are node coordinates: 'Dimension' when the
    header gives it, else the leading columns named x, y or z."""
    if "Dimension" in metadata:
        try:
            count = int(metadata["Dimension"])
        except ValueError:
            raise _error(where, f"'Dimension: {metadata['Dimension']}' is not an integer") from None
        if not 0 <= count < len(columns):
            raise _error(where, f"'Dimension: {count}', but the column line has {len(columns)} columns "
                                f"(expected {count} coordinate columns, then at least one output)")
        return count
    count = 0
    while count < len(columns) and columns[count].name.lower() in _SPACE_NAMES and not columns[count].at:
        count += 1
    return count


def _check_distinct(names, where: tuple[str, int], what: str) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise _error(where, f"the {what} column '{name}' appears twice")
        seen.add(name)


def _sweep_of(columns: list[_Column], where: tuple[str, int]) -> tuple[str | None, dict[str, float]]:
    """The parameter expanded into a column (``t`` whenever present, else one
    that takes several values) and the single-valued others."""
    keys = tuple(key for key, _ in columns[0].at)
    for c in columns:
        if tuple(key for key, _ in c.at) != keys:
            given = ", ".join(keys) or "no '@'"
            raise _error(where, f"column {c.number} ({c.text!r}): expected the same '@' parameters as "
                                f"column {columns[0].number} ({given})")
    values = {key: [dict(c.at)[key] for c in columns] for key in keys}
    swept = [key for key in keys if key == TIME or len(set(values[key])) > 1]
    if len(swept) > 1:
        raise _error(where, f"the columns sweep {' and '.join(swept)}; a file may sweep one parameter "
                            f"(export one file per value of the others)")
    constants = {key: values[key][0] for key in keys if key not in swept}
    return (swept[0] if swept else None), constants


def _group_outputs(columns: list[_Column], sweep: str | None, where: tuple[str, int]):
    """Outputs in order of first appearance, each one's file column per sweep
    value, and the sweep values (the same, increasing, for every output)."""
    by_output: dict[str, list[tuple[float, _Column]]] = {}
    for c in columns:
        value = dict(c.at)[sweep] if sweep else math.nan
        by_output.setdefault(c.name, []).append((value, c))
    sweep_values: tuple[float, ...] = ()
    first_output = next(iter(by_output))
    for name, entries in by_output.items():
        if sweep is None:
            if len(entries) > 1:
                raise _error(where, f"column {entries[1][1].number} ({entries[1][1].text!r}): the output "
                                    f"'{name}' appears twice (a steady export has one column per output)")
            continue
        for (before, _), (value, c) in zip(entries, entries[1:]):
            if not value > before:
                raise _error(where, f"column {c.number} ({c.text!r}): {sweep}={value:g} comes after "
                                    f"{sweep}={before:g} for the output '{name}'; expected increasing {sweep}")
        values = tuple(value for value, _ in entries)
        if name == first_output:
            sweep_values = values
        elif values != sweep_values:
            missing = [f"{v:g}" for v in sweep_values if v not in values]
            extra = [f"{v:g}" for v in values if v not in sweep_values]
            detail = "; ".join(part for part in (f"missing {sweep}={', '.join(missing)}" if missing else "",
                                                 f"extra {sweep}={', '.join(extra)}" if extra else "") if part)
            raise _error(where, f"the output '{name}' is not given at the same {sweep} values as "
                                f"'{first_output}' ({detail}); expected every output at every {sweep}")
    output_columns = {name: tuple(c.number - 1 for _, c in entries) for name, entries in by_output.items()}
    return tuple(by_output), output_columns, sweep_values


def _metadata_line(lines: list[str], header_lines: list[int], key: str) -> int:
    for index in header_lines:
        match = _METADATA_LINE.match(lines[index].strip())
        if match and match["key"] == key:
            return index + 1
    raise AssertionError(f"no metadata line for {key!r}")


# ---------------------------------------------------------------------- rows
def read_comsol(path: str | os.PathLike) -> ComsolTable:
    """A COMSOL export in long form (see the module notes).  The rows must
    have as many values as the column line names, all finite numbers, and
    as many rows as ``% Nodes:`` says; otherwise DataFileError naming the file
    and the line."""
    path = os.fspath(path)
    lines = read_text_lines(path)
    header = read_comsol_header(path, lines)
    if not header.first_data_line:
        raise DataFileError(path, "no rows after the header (expected one row of numbers per node)",
                            header.column_line)
    column_names = tuple(_wide_names(header))
    data = parse_number_rows(path, lines, header.first_data_line - 1, header.column_count,
                             column_names, header.column_line)
    nodes = data.shape[0]
    declared = header.declared_count("Nodes")
    if declared is not None and declared != nodes:
        raise DataFileError(path, f"'Nodes: {declared}' in the header, but the file has {nodes} rows (lines "
                                  f"{header.first_data_line} to the end); a truncated or edited file?")
    steps = max(1, len(header.sweep_values))
    columns: dict[str, np.ndarray] = {}
    for i, name in enumerate(header.space):
        columns[name] = np.tile(data[:, i], steps)
    if header.sweep:
        columns[header.sweep] = np.repeat(np.asarray(header.sweep_values, dtype=np.float64), nodes)
    for name in header.outputs:
        # [nodes, steps] -> time-major: every node at the first time, then the next time ...
        columns[name] = np.ascontiguousarray(data[:, list(header.output_columns[name])].T).reshape(-1)
    return ComsolTable(header=header, columns=columns, nodes=nodes)


def _wide_names(header: ComsolHeader) -> list[str]:
    """A label for each file column, for messages: 'x', 'u @ t=0.1'."""
    names = list(header.space) + [""] * (header.column_count - len(header.space))
    for output, indices in header.output_columns.items():
        for k, index in enumerate(indices):
            names[index] = f"{output} @ {header.sweep}={header.sweep_values[k]:g}" if header.sweep else output
    return names

"""The checks every data, reference and table file passes before a value of it is used, whatever its format.

* text (CSV, a COMSOL export, a plain number table): UTF-8 with or without a BOM (else latin-1), line ends
  LF or CRLF; a file with control bytes (NUL, ...) is not text and is refused without quoting it; every row
  has one value per column and every value is a finite number (:func:`parse_number_rows`);
* NPZ: every member an ``.npy`` array whose header (shape and dtype) agrees with the bytes the archive holds
  for it, checked before any array is allocated (:func:`read_npz`), so a truncated archive or a header
  claiming 10^11 values is refused without reading it.

Every problem raises :class:`DataFileError`, whose text is ``PATH:LINE: what is wrong`` (``PATH: ...``
where no line applies: an NPZ) and says what was expected.
"""

from __future__ import annotations

import math
import os
import re
import zipfile
import zlib

import numpy as np

__all__ = ["DataFileError", "first_content_line", "listed", "parse_number_rows", "quoted", "read_npz",
           "read_text_lines"]

#: what a data file may be, for the messages that refuse one
EXPECTED_FORMATS = ("a CSV (a header line of column names, then rows of numbers), an .npz written by "
                    "numpy.savez, or a COMSOL text export")
_CONTROL_BYTE = re.compile(rb"[\x00-\x08\x0e-\x1f]")  # not in text: tab, LF, VT, FF and CR are
_QUOTED_LENGTH = 24  # characters of a file's content a message quotes at most
_LISTED_NAMES = 12  # column names a message lists at most
# A deflate stream expands at most ~1032 times: a member claiming more was not written by numpy.savez.
_MAX_DEFLATE_RATIO = 1100
# What zipfile and numpy raise for a damaged archive: a bad zip, an unknown compression method or zip version
# (NotImplementedError), an encrypted member (RuntimeError), a stream that ends early, a bad .npy header.
_UNREADABLE_ZIP = (zipfile.BadZipFile, ValueError, OSError, EOFError, zlib.error, NotImplementedError, RuntimeError)


class DataFileError(ValueError):
    """A data file that cannot be used; ``str()`` is ``PATH:LINE: reason`` (``PATH: reason`` without a
    line).  ``path``, ``line`` (1-based, or None) and ``reason`` are kept."""

    def __init__(self, path: str, reason: str, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")


def quoted(text: str) -> str:
    """``text`` quoted for a message, cut to a few characters (a message never quotes a file at length)."""
    return repr(text if len(text) <= _QUOTED_LENGTH else text[:_QUOTED_LENGTH] + "...")


def listed(names) -> str:
    """A file's column names for a message: the first few, each cut to a few characters; "none" for none."""
    shown = ", ".join(quoted(name)[1:-1] for name in names[:_LISTED_NAMES]) or "none"
    return shown if len(names) <= _LISTED_NAMES else f"{shown}, ... ({len(names)} columns)"


# ---------------------------------------------------------------------- text
def read_text_lines(path: str) -> list[str]:
    """The file's lines without line ends (LF or CRLF), read as UTF-8 (a BOM dropped), or as latin-1 when it
    is not UTF-8 (COMSOL writes descriptions in the machine's language).  A file holding control bytes is
    not text: DataFileError."""
    with open(path, "rb") as fh:
        raw = fh.read()
    control = _CONTROL_BYTE.search(raw)
    if control:
        line = raw.count(b"\n", 0, control.start()) + 1
        raise DataFileError(path, f"not a text file (byte {control.start() + 1} is the control byte "
                            f"0x{raw[control.start()]:02x}: a binary file?); expected {EXPECTED_FORMATS}", line)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    # split on "\n" only: str.splitlines would also break at U+0085 and friends
    return [line.rstrip("\r") for line in text.split("\n")]


def first_content_line(path: str) -> str:
    """The file's first non-blank line, stripped ("" when there is none), read without loading the whole
    file (undecodable bytes replaced)."""
    with open(path, "rb") as fh:
        for raw in fh:
            line = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
            if line:
                return line
    return ""


def parse_number_rows(path: str, lines: list[str], first: int, column_count: int,
                      column_names: tuple[str, ...] | None = None, names_line: int | None = None,
                      delimiter: str | None = None) -> np.ndarray:
    """The rows ``lines[first:]`` as a [rows, column_count] float64 array: values separated by
    ``delimiter`` (None: whitespace; "," for CSV, where ``#`` starts a comment), blank lines skipped.  A row
    of another length, a value that is empty, not a number or not finite, or (whitespace tables) a ``%``
    line among the rows raises DataFileError naming the line and the column.  ``column_names`` and
    ``names_line`` make the messages say which column and where the names are."""
    if names_line:
        names = f" ({listed(column_names)})" if column_names else ""
        counted = f"line {names_line} names {column_count} columns{names}"
    else:
        counted = f"the first row has {column_count} values"
    tokens: list[str] = []
    row_lines: list[int] = []
    for index in range(first, len(lines)):
        line = lines[index]
        if delimiter is not None:
            line = line.split("#", 1)[0]
        line = line.strip()
        if not line:
            continue
        if delimiter is None and line.startswith("%"):
            raise DataFileError(path, "a '%' line among the number rows (expected only rows of numbers after the "
                                "header; a sectionwise or grid COMSOL export? export the data as a spreadsheet)",
                                index + 1)
        values = line.split(delimiter)
        if delimiter is not None:
            values = [value.strip() for value in values]
        if len(values) != column_count:
            what = "a value is missing" if len(values) < column_count else "more values than columns"
            raise DataFileError(path, f"{len(values)} values, but {counted}: {what}; give every row one value "
                                f"per column", index + 1)
        tokens.extend(values)
        row_lines.append(index + 1)
    try:
        flat = np.array(tokens, dtype=np.float64)
    except ValueError:
        flat = None
    if flat is None or not np.all(np.isfinite(flat)):
        _raise_at_bad_value(path, tokens, row_lines, column_count, column_names)
    return flat.reshape(len(row_lines), column_count)


def _raise_at_bad_value(path, tokens, row_lines, column_count, column_names):
    for position, token in enumerate(tokens):
        try:
            number = float(token)
        except ValueError:
            number = None
        if number is None or not math.isfinite(number):
            row, column = divmod(position, column_count)
            named = f" ({quoted(column_names[column])})" if column_names else ""
            if not token:
                found = "nothing (a missing value: fill it in, or remove the row)"
            elif number is None:
                found = f"{quoted(token)}, which is not a number"
            else:
                found = f"{quoted(token)}, which is not finite (fill in the value, or remove the row)"
            raise DataFileError(path, f"column {column + 1}{named}: expected a finite number, found {found}",
                                row_lines[row])
    raise AssertionError("unreachable: a value failed to parse but every token is a finite number")


# ----------------------------------------------------------------------- NPZ
def read_npz(path: str) -> dict[str, np.ndarray]:
    """Every array of an NPZ archive, by name, after :func:`_check_npz_sizes` (no pickled objects)."""
    _check_npz_sizes(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {name: np.asarray(npz[name]) for name in npz.files}
    except _UNREADABLE_ZIP as exc:
        raise DataFileError(path, f"not a readable .npz archive ({_short(exc)}); write it again with "
                            f"numpy.savez") from None


def _check_npz_sizes(path: str) -> None:
    """Refuse an NPZ archive whose members' headers disagree with the bytes the archive holds for them (a
    truncated or damaged file, or a forged size), before anything is allocated."""
    size = os.path.getsize(path)
    damaged = "a truncated or damaged file? write it again with numpy.savez"
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if not members:
                raise DataFileError(path, "an .npz archive with no arrays (expected one array per column)")
            for info in members:
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                ratio = info.file_size / max(info.compress_size, 1)
                if (info.header_offset + info.compress_size > size
                        or info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size
                        or info.compress_type == zipfile.ZIP_DEFLATED and ratio > _MAX_DEFLATE_RATIO):
                    raise DataFileError(path, f"the member '{name}' claims {info.file_size:,} bytes, more than "
                                        f"the file's {size:,} bytes can hold: {damaged}")
                with archive.open(info) as fh:
                    try:
                        version = np.lib.format.read_magic(fh)
                    except ValueError:
                        raise DataFileError(path, f"the member {quoted(info.filename)} is not a numpy array "
                                            f"(expected only .npy arrays, as numpy.savez writes)") from None
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(fh)
                    held = info.file_size - fh.tell()
                if dtype.hasobject:
                    raise DataFileError(path, f"the array '{name}' holds Python objects (dtype {dtype}), which "
                                        f"are not read (expected arrays of numbers)")
                count = math.prod(shape)
                claimed = count * dtype.itemsize
                if claimed != held:
                    raise DataFileError(path, f"the array '{name}' claims {count:,} values of {dtype} "
                                        f"({claimed:,} bytes), but the file holds {held:,} bytes of it: {damaged}")
    except _UNREADABLE_ZIP as exc:
        if isinstance(exc, DataFileError):
            raise
        raise DataFileError(path, f"not a readable .npz archive ({_short(exc)}): {damaged}") from None


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 80 else text[:80] + "..."

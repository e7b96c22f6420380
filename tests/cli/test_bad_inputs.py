"""Bad data, reference and table files through the command line: ``check`` and ``train`` refuse each one
with a located message (``FILE:LINE: ...``), no traceback, and nothing written to --out; an Excel CSV (a BOM,
CRLF line ends) is accepted and reads as the same numbers as the plain CSV.

The files are kept in tests/data/bad_inputs/ (one mistake each); the specs that use them are written here.
The CLI runs in this process (``pinnspec.cli.main``): a spec that does not check stops before torch loads.
"""

from pathlib import Path

import numpy as np
import pytest

from pinnspec import ir
from pinnspec.cli import main
from pinnspec.sampling import load_data, load_reference

BAD = Path(__file__).resolve().parents[1] / "data" / "bad_inputs"
HEAD = """problem bad
space x in [0, 1]
time t in [0, 1]
field u
equation pde: u_t = 0.1*u_xx
points pde 16
"""
COORDS = (ir.Coordinate("x", 0, 1), ir.Coordinate("t", 0, 1, is_time=True))

#: (file in tests/data/bad_inputs, how the spec uses it, the line the message names (None: an .npz), a phrase)
CASES = [
    ("nan.csv", "data", 3, "column 3 ('u'): expected a finite number, found 'nan', which is not finite"),
    ("inf.csv", "data", 4, "column 3 ('u'): expected a finite number, found 'inf', which is not finite"),
    ("text_value.csv", "data", 3, "column 3 ('u'): expected a finite number, found 'one half', which is not a number"),
    ("missing_value.csv", "data", 3, "2 values, but line 1 names 3 columns (x, t, u): a value is missing"),
    ("extra_value.csv", "reference", 4, "4 values, but line 1 names 3 columns (x, t, u): more values than columns"),
    ("truncated.npz", "data", None, "not a readable .npz archive (File is not a zip file)"),
    ("huge_header.npz", "data", None, "the array 'u' claims 100,000,000,000 values of float64 (800,000,000,000 "
                                      "bytes), but the file holds 32 bytes of it"),
    ("header_only_reference.csv", "reference", 1, "no rows of values: a reference needs at least one"),
    ("header_only_data.csv", "data", 1, "no rows of values: a data condition needs at least one"),
    ("binary.csv", "data", 1, "not a text file (byte 5 is the control byte 0x02: a binary file?)"),
    ("passwd.csv", "reference", 2, "column 1 ('root:x:0:0:root:/root:/b...'): expected a finite number, found "
                                   "'daemon:x:1:1:daemon:/usr...', which is not a number"),
    ("kappa_t.csv", "table", 1, "a table's values vary over the spec's coordinates, and the spec declares none"),
]


def _spec(tmp_path: Path, name: str, use: str) -> Path:
    path = BAD / name
    if use == "data":
        text = HEAD + f'data obs from "{path}": u\n'
    elif use == "reference":
        text = HEAD + f'reference "{path}"\n'
    else:  # a table in a spec without a space or time line
        text = f'problem bad\nfield u\nlet a = table("{path}")\nequation pde: u = a\n'
    spec = tmp_path / "bad.pinn"
    spec.write_text(text)
    return spec


@pytest.mark.parametrize("name, use, line, phrase", CASES, ids=[case[0] for case in CASES])
def test_check_and_train_refuse_a_bad_file_where_it_is_wrong(tmp_path, capsys, name, use, line, phrase):
    spec = _spec(tmp_path, name, use)
    located = f"{BAD / name}:{line}: " if line else f"{BAD / name}: "
    out = tmp_path / "run"
    for command in (["check", str(spec)], ["train", str(spec), "--epochs", "2", "--out", str(out)]):
        assert main(command) == 1, command
        err = capsys.readouterr().err
        assert "Traceback" not in err and "internal error" not in err
        message = next(text for text in err.splitlines() if located in text)  # one line names file and line
        assert f"{located}{phrase}" in message, message
        assert len(message) < 400  # the file is never quoted at length
    assert not out.exists()


def test_an_excel_csv_reads_as_the_plain_csv_and_trains(tmp_path, capsys):
    """A CSV saved by Excel: UTF-8 with a byte-order mark, CRLF line ends."""
    excel, plain = BAD / "excel_bom_crlf.csv", BAD / "plain.csv"
    assert excel.read_bytes().startswith(b"\xef\xbb\xbfx,t,u\r\n")
    for load in (load_data, load_reference):
        for got, want in zip(load(excel, COORDS, ("u",)), load(plain, COORDS, ("u",))):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(load_data(plain, COORDS, ("u",))[1][:, 0], [1.0, 0.75, 0.5])
    spec = tmp_path / "excel.pinn"
    spec.write_text(HEAD + f'data obs from "{excel}": u\nreference "{excel}"\n')
    assert main(["check", str(spec)]) == 0
    assert main(["train", str(spec), "--epochs", "2", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert "Traceback" not in capsys.readouterr().err

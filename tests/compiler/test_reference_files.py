"""`reference "FILE"` with a COMSOL text export (PINNacle's Burgers1d, shipped in benchmarks/pinnacle):
the wide time-dependent table becomes the test points and values; columns that do not match the spec
are a located `check` error."""

from pathlib import Path

import numpy as np
import pytest

import pinnspec

ROOT = Path(__file__).resolve().parents[2]
BURGERS_DAT = ROOT / "benchmarks" / "pinnacle" / "ref" / "burgers1d.dat"

SPEC = """problem burgers1d
space x in [-1, 1]
time  t in [0, 1]
field {field}
equation pde: {field}_t + {field}*{field}_x - 0.01/pi*{field}_xx = 0
initial ic: {field} = -sin(pi*x)
boundary walls on x = -1, x = 1: {field} = 0
reference "{path}"
"""


def _file_rows(path: Path) -> dict[tuple[float, float], float]:
    """(x, t) -> u, parsed from the file's text with plain string splitting (the oracle)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = [line for line in lines if line.startswith("%")][-1]
    times = [float(part.split("t=")[1].split()[0]) for part in header.split("@")[1:]]
    rows = {}
    for line in lines:
        if line.startswith("%") or not line.strip():
            continue
        x, *values = (float(v) for v in line.split())
        rows.update({(x, t): u for t, u in zip(times, values)})
    return rows


def test_a_comsol_reference_gives_the_test_points_and_values(tmp_path):
    spec_path = tmp_path / "burgers1d.pinn"
    spec_path.write_text(SPEC.format(field="u", path=BURGERS_DAT))
    problem = pinnspec.compile(pinnspec.load(spec_path))
    points = problem.test_points()  # [N, 2]: x, t
    expected = _file_rows(BURGERS_DAT)
    assert points.shape == (len(expected), 2) == (101 * 11, 2)
    values = problem.reference(points).numpy()[:, 0]
    assert np.array_equal(values, [expected[(x, t)] for x, t in points])
    # the initial slice is -sin(pi x) to the export's precision
    initial = points[:, 1] == 0
    assert np.abs(values[initial] + np.sin(np.pi * points[initial, 0])).max() < 1e-5


def test_reference_columns_that_do_not_match_the_spec_are_a_located_error(tmp_path):
    spec_path = tmp_path / "two_fields.pinn"
    text = SPEC.format(field="u", path=BURGERS_DAT).replace("field u", "field u, v").replace(
        "initial ic: u = -sin(pi*x)", "initial ic: u = -sin(pi*x), v = 0")
    text = text.replace("equation pde:", "equation vv: v_t = 0\nequation pde:")
    spec_path.write_text(text)
    with pytest.raises(pinnspec.SpecError) as err:
        pinnspec.load(spec_path)
    rendered = err.value.render()
    assert "two_fields.pinn:" in rendered and "burgers1d.dat" in rendered and "^" in rendered

"""pinnspec.plots.plot_geometry / ``pinnspec show --stage geometry``: the domain with its sampled
points and outward normals as a PNG."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from pinnspec.lang import load
from pinnspec.plots import plot_geometry
from pinnspec.plots._geometry import geometry_figure
from pinnspec.plots._style import DPI

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANNULUS = os.path.join(REPO, "examples", "annulus", "annulus.pinn")
LSHAPE = os.path.join(REPO, "examples", "lshape", "lshape.pinn")
BURGERS = os.path.join(REPO, "specs", "burgers.pinn")

ROD = """\
problem rod
space x in [0, 2]
field u
equation pde: u_xx = 0
boundary ends on x = 0, x = 2: u = x
points pde 100, ends 20
exact u = x
test 50
model     mlp(width = 8, depth = 2)
optimizer adam(lr = 1e-3)
train     epochs = 2, seed = 0
"""


def _read_png(path: str) -> np.ndarray:
    from matplotlib.image import imread

    assert os.path.isfile(path)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    return imread(path)


@pytest.mark.parametrize("spec, size", [(ANNULUS, (8.0, 6.8)), (LSHAPE, (8.0, 6.8)), (BURGERS, (8.0, 3.8))])
def test_png_written_and_readable(tmp_path, spec, size):
    out = plot_geometry(spec, str(tmp_path / "g.png"))
    assert out == os.path.abspath(tmp_path / "g.png")
    image = _read_png(out)
    assert image.shape[:2] == (round(size[1] * DPI), round(size[0] * DPI))
    assert image[..., :3].std() > 0.05  # not a blank canvas


def test_one_dimensional_spec(tmp_path):
    spec_path = tmp_path / "rod.pinn"
    spec_path.write_text(ROD)
    image = _read_png(plot_geometry(load(str(spec_path)), tmp_path / "rod.png"))
    assert image.shape[:2] == (round(3.8 * DPI), round(8.0 * DPI))
    fig = geometry_figure(load(str(spec_path)))
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert any(label.startswith("pde (interior, 100 points)") for label in labels)
    assert any(label.startswith("ends (on x = 0, x = 2, 20 points)") for label in labels)
    # the end normals point away from the rod: -x at x = 0, +x at x = 2
    (q,) = _quivers(fig)
    xy = q.get_offsets()
    assert np.all(np.sign(q.U) == np.where(xy[:, 0] < 1, -1, 1))


def _quivers(fig):
    from matplotlib.quiver import Quiver

    return [c for c in fig.axes[0].collections if isinstance(c, Quiver)]


def test_annulus_normals_point_outward():
    fig = geometry_figure(load(ANNULUS))
    quivers = _quivers(fig)
    assert len(quivers) == 2  # rim and hole
    xy = np.concatenate([q.get_offsets() for q in quivers])
    uv = np.concatenate([np.stack([np.asarray(q.U), np.asarray(q.V)], axis=1) for q in quivers])
    assert all(len(q.get_offsets()) <= 60 for q in quivers)
    r = np.hypot(xy[:, 0], xy[:, 1])
    dot = np.sum(xy * uv, axis=1)
    outer, inner = np.isclose(r, 1.0, atol=1e-6), np.isclose(r, 0.25, atol=1e-6)
    assert outer.sum() >= 20 and inner.sum() >= 20 and np.all(outer | inner)
    assert np.all(dot[outer] > 0)  # away from the centre on the outer rim
    assert np.all(dot[inner] < 0)  # into the hole on the inner rim
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("rim (on outer") for t in legend) and any(t.startswith("hole (on inner") for t in legend)
    assert "ring" in fig.get_suptitle()


def test_time_is_dropped_and_said():
    fig = geometry_figure(load(BURGERS))
    assert "time column t dropped" in fig.get_suptitle()
    offsets = np.concatenate([c.get_offsets() for c in fig.axes[0].collections])
    assert np.all(np.abs(offsets[:, 0]) <= 1 + 1e-9)  # x only: no t column drawn
    assert set(np.unique(offsets[:, 1])) == {0.0, 1.0, 2.0}  # one row per point set
    assert len(fig.axes[0].get_yticklabels()) == 3


def test_directory_out_path_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        plot_geometry(ANNULUS, str(tmp_path))


def _cli(*args, cwd):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "pinnspec", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_writes_the_png(tmp_path):
    out = tmp_path / "a.png"
    done = _cli("show", ANNULUS, "--stage", "geometry", "--out", str(out), cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    _read_png(str(out))


def test_cli_errors_and_default_out(tmp_path, monkeypatch, capsys):
    from pinnspec.cli import main

    assert main(["show", ANNULUS, "--stage", "geometry", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "is a directory" in err and "Traceback" not in err
    assert main(["show", ANNULUS, "--stage", "ir", "--out", str(tmp_path / "a.png")]) == 1
    assert "--out is for --stage geometry" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    assert main(["show", LSHAPE, "--stage", "geometry"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "lshape-geometry.png")
    _read_png(str(tmp_path / "lshape-geometry.png"))

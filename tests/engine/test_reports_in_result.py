"""A run's `report` quantities: computed once the run ends, on the kept model, into result.json and the
CLI's summary."""

import json
import math

import pytest

from pinnspec.engine import Trainer
from pinnspec.lang import loads

R = 0.3
SPEC = f"""problem disk
space x in [-1, 1], y in [-1, 1]
shape rim = disk(center = (0, 0), radius = {R})
domain inside = rim
field u
equation pde: lap(u) = 4
boundary edge on rim: u = {R * R}
points pde 64, edge 32
report perimeter = integral(rim, 1)
report area = integral(inside, 1)
report flux = integral(rim, dn(u))
exact u = x^2 + y^2
validate 50 every 2
model mlp(width = 8, depth = 2)
train epochs = 5, seed = 0, device = cpu
"""


def test_reports_are_those_of_the_kept_model(tmp_path):
    trainer = Trainer(loads(SPEC), str(tmp_path / "run"))
    assert trainer.result().reports == {}  # nothing before the run ends
    result = trainer.run()
    assert list(result.reports) == ["perimeter", "area", "flux"]
    assert result.reports["perimeter"] == pytest.approx(2 * math.pi * R, rel=1e-12)  # closed forms
    assert result.reports["area"] == pytest.approx(math.pi * R * R, rel=1e-3)  # a midpoint rule inside a disk
    trainer.model.load_state_dict(trainer.run_state.best.model)  # the kept model, evaluated directly
    expected = trainer.problem.reports(trainer.model, trainer.params)
    assert result.reports == pytest.approx(expected, rel=1e-12)
    assert result.best_epoch in (2, 4, 5)
    saved = json.loads((tmp_path / "run" / "result.json").read_text(encoding="utf-8"))
    assert saved["reports"] == pytest.approx(result.reports, rel=1e-12)


def test_the_cli_summary_prints_the_reports(tmp_path, capsys):
    from pinnspec.cli import main

    path = tmp_path / "disk.pinn"
    path.write_text(SPEC, encoding="utf-8")
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "reports perimeter = 1.88496" in out and "area = " in out and "flux = " in out

"""The Trainer warns, once and at the start, about a reference file with rows outside the spec's domain."""

from pathlib import Path

import pytest
import torch

from pinnspec.engine import Trainer
from pinnspec.lang import load

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_a_reference_row_inside_the_hole_is_warned_about_at_the_start(capsys):
    trainer = Trainer(load(DATA / "hole_plate.pinn"))
    err = capsys.readouterr().err
    assert err.count("pinnspec: warning: the reference file 'ref_in_hole.csv': 2 of 6 rows lie outside the domain "
                     "'plate' (box - hole), the farthest at (x = 0.2, y = 0.2), 0.15 past its boundary") == 1
    trainer.step(0)  # the run goes on: a warning, not a refusal
    assert "warning" not in capsys.readouterr().err


def test_no_warning_when_every_row_lies_in_the_domain(tmp_path, capsys):
    rows = (DATA / "ref_in_hole.csv").read_text().splitlines()
    (tmp_path / "ref_in_hole.csv").write_text("\n".join(r for r in rows if not r.startswith(("0.2,0.2", "0.3,0.3"))))
    (tmp_path / "spec.pinn").write_text((DATA / "hole_plate.pinn").read_text())
    Trainer(load(tmp_path / "spec.pinn"))
    assert "warning" not in capsys.readouterr().err

"""The reported metrics against their definitions: rel-L2 (Appendix C.8) computed here in numpy, and the
conflict rates of result.json as the means of history.csv's columns."""

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import pinnspec
from pinnspec.engine import Trainer
from pinnspec.lang._overrides import apply_overrides

TINY = Path(__file__).parent / "data" / "tiny.pinn"
ROOT = Path(__file__).resolve().parents[2]


class Field(torch.nn.Module):
    """A "network" that is a given function of the points."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


def numpy_rel_l2(prediction: np.ndarray, reference: np.ndarray) -> float:
    """(sum_j ||u(x_j) - u*(x_j)||^2)^(1/2) / (sum_j ||u*(x_j)||^2)^(1/2), every field jointly."""
    return math.sqrt(((prediction - reference) ** 2).sum()) / math.sqrt((reference ** 2).sum())


def trainer_of(path, **overrides) -> Trainer:
    return Trainer(apply_overrides(pinnspec.load(path), {"device": "cpu", "dtype": "float64", **overrides}))


def test_rel_l2_is_zero_for_the_exact_field_and_one_for_a_zero_model():
    trainer = trainer_of(TINY)
    x, reference = trainer.evaluation.test_points, trainer.evaluation.test_reference
    assert reference.shape == (len(x), 1) and reference.abs().max() > 0.5
    trainer.evaluation.model = Field(lambda points: trainer.problem.reference(points.numpy()).to(points.dtype))
    assert trainer.evaluation.rel_l2(x, reference) == 0.0
    # the spec's exact u = sin(pi x) exp(-0.1 pi^2 t), written out: 0 up to rounding
    trainer.evaluation.model = Field(lambda p: (torch.sin(math.pi * p[:, 0]) * torch.exp(-0.1 * math.pi ** 2 * p[:, 1]))[:, None])
    assert trainer.evaluation.rel_l2(x, reference) <= 1e-14
    trainer.evaluation.model = Field(lambda points: torch.zeros(len(points), 1, dtype=points.dtype))
    assert trainer.evaluation.rel_l2(x, reference) == 1.0
    trainer.evaluation.model = Field(lambda points: -2 * trainer.problem.reference(points.numpy()).to(points.dtype))
    assert trainer.evaluation.rel_l2(x, reference) == pytest.approx(3.0, rel=1e-15)


def test_schrodinger_rel_l2_is_the_joint_norm_of_u_and_v():
    trainer = trainer_of(ROOT / "specs" / "schrodinger.pinn", epochs=1, model="mlp(width = 8, depth = 2)")
    x, reference = trainer.evaluation.test_points, trainer.evaluation.test_reference
    assert reference.shape == (256 * 201, 2)
    ref = reference.numpy()
    # the trainer's own network
    with torch.no_grad():
        prediction = trainer.model(x).numpy()
    assert trainer.evaluation.rel_l2(x, reference) == pytest.approx(numpy_rel_l2(prediction, ref), rel=1e-12)
    # a prediction near the reference, off by a different amount in each field
    trainer.evaluation.model = Field(lambda points: reference * torch.tensor([1.05, 0.7], dtype=torch.float64))
    prediction = ref * np.array([1.05, 0.7])
    joint = numpy_rel_l2(prediction, ref)
    assert trainer.evaluation.rel_l2(x, reference) == pytest.approx(joint, rel=1e-13)
    per_field = [numpy_rel_l2(prediction[:, j], ref[:, j]) for j in range(2)]
    assert per_field == pytest.approx([0.05, 0.3], rel=1e-12)
    assert abs(joint - sum(per_field) / 2) > 0.01  # neither field's own error, nor their mean


def test_result_rates_are_the_means_of_history(tmp_path):
    """result.json's conflict rates and projected fraction are the means of history.csv's columns over
    the diagnosed epochs: every epoch but the zero-rate first one, whose cells are blank."""
    result = pinnspec.train(TINY, surgery="none", align="gua", grouping="two", epochs=24, dtype="float64",
                            device="cpu", out=str(tmp_path))
    with open(tmp_path / "history.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    saved = json.loads((tmp_path / "result.json").read_text())
    assert len(rows) == 24 and saved["epochs_done"] == 24
    blank = [row for row in rows if row["R_g"] == ""]
    assert len(blank) == 1 and float(blank[0]["lr"]) == 0.0
    assert all(float(row["lr"]) > 0 for row in rows if row["R_g"] != "")
    for key in ("R_g", "R_a", "R_u", "R_p", "projected"):
        values = [float(row[key]) for row in rows if row[key] != ""]
        assert len(values) == 23 and set(values) <= {0.0, 1.0}
        reported = saved["projected_fraction"] if key == "projected" else saved["rates"][key]
        assert reported == pytest.approx(sum(values) / len(values), rel=1e-12), key
    assert all(0 < saved["rates"][key] < 1 for key in ("R_g", "R_a", "R_u"))  # means, not constant columns
    assert saved["rates"]["R_p"] == 0.0
    assert saved["rates"] == result.rates
    # and result.json's rel-L2 is the test error of the saved (best-validation) prediction
    saved_prediction = np.load(tmp_path / "predictions.npz")
    assert saved["rel_l2"] == pytest.approx(
        numpy_rel_l2(saved_prediction["prediction"], saved_prediction["reference"]), rel=1e-12)

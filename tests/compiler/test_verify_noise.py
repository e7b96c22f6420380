"""`data ..., noise = SIGMA`: verify judges noisy observations by their rms against the stated noise."""

import numpy as np
import pytest

import pinnspec
from pinnspec.compiler._verify import verify

SPEC = """problem noisy
space x in [0, 1]
time  t in [0, 1]
field u
equation heat: u_t = u_xx
data obs from "obs.csv": u{option}
exact u = exp(-t)*sin(x)
"""


def _checks(tmp_path, option: str, sd: float = 0.05, rows: int = 2000):
    rng = np.random.default_rng(1)
    x, t = rng.uniform(size=rows), rng.uniform(size=rows)  # [rows]
    u = np.exp(-t) * np.sin(x) + rng.normal(0.0, sd, size=rows)
    np.savetxt(tmp_path / "obs.csv", np.stack([x, t, u], axis=1), delimiter=",", header="x,t,u", comments="")
    (tmp_path / "noisy.pinn").write_text(SPEC.format(option=option), encoding="utf-8")
    return {c.name: c for c in verify(pinnspec.compile(tmp_path / "noisy.pinn"))}


def test_stated_noise_passes(tmp_path):
    obs = _checks(tmp_path, ", noise = 0.05")["obs"]
    assert obs.passed and obs.noise_rms == 0.05
    assert obs.rms == pytest.approx(0.05, rel=5 / np.sqrt(2 * 2000))
    assert "rms / sd = " in obs.note


@pytest.mark.parametrize("option", ["", ", noise = 0.2", ", noise = 0.04"])
def test_wrong_or_missing_noise_fails(tmp_path, option):
    assert not _checks(tmp_path, option)["obs"].passed


def test_the_pde_is_judged_as_before(tmp_path):
    assert _checks(tmp_path, ", noise = 0.05")["heat"].passed

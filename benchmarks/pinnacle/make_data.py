"""Write the observation files of PINNacle's two inverse cases (PInv, HInv) into data/.

PINNacle draws the observations when a run starts: the exact u at fixed points plus Gaussian noise
N(0, 0.1^2) (src/pde/inverse.py).  Here they are drawn once, with seed 0, and kept in the repository, so
every run sees the same data (`pinnspec bench pinnacle --noise per-seed` draws them with each run's seed
instead; pinnspec.bench._pinnacle.observations draws both):

    data/pinv_obs.csv   x, y, u      the 50 x 50 grid of [0, 1]^2 (both ends included),
                                     u = sin(pi x) sin(pi y) + noise
    data/hinv_obs.csv   x, y, t, u   the 2,500 points of ref/heatinv_points.dat,
                                     u = exp(-t) sin(pi x) sin(pi y) + noise

Run from anywhere:  python benchmarks/pinnacle/make_data.py
"""

from __future__ import annotations

import os

import numpy as np

from pinnspec.bench._pinnacle import HEAT_POINTS, write_observations

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0


def main() -> None:
    points = np.loadtxt(os.path.join(HERE, "cases", HEAT_POINTS))  # [2500, 3]: x, y, t
    for path, rows in write_observations(os.path.join(HERE, "data"), SEED, points):
        print(f"wrote {path} ({rows} rows)")


if __name__ == "__main__":
    main()

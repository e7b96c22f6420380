"""Write the observation files of PINNacle's two inverse cases (PInv, HInv) into data/.

PINNacle draws the observations when a run starts: the exact u at fixed points plus Gaussian noise
N(0, 0.1^2) (src/pde/inverse.py).  Here they are drawn once, from numpy's default_rng(0), and kept in
the repository, so every run sees the same data:

    data/pinv_obs.csv   x, y, u      the 50 x 50 grid of [0, 1]^2 (both ends included),
                                     u = sin(pi x) sin(pi y) + noise
    data/hinv_obs.csv   x, y, t, u   the 2,500 points of ref/heatinv_points.dat,
                                     u = exp(-t) sin(pi x) sin(pi y) + noise

Run from anywhere:  python benchmarks/pinnacle/make_data.py
"""

from __future__ import annotations

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
NOISE = 0.1
SEED = 0


def pinv(rng: np.random.Generator) -> np.ndarray:
    x, y = np.meshgrid(np.linspace(0, 1, 50), np.linspace(0, 1, 50))
    x, y = x.reshape(-1), y.reshape(-1)  # [2500]
    u = np.sin(np.pi * x) * np.sin(np.pi * y) + rng.normal(0.0, NOISE, size=x.shape)
    return np.stack([x, y, u], axis=1)  # [2500, 3]


def hinv(rng: np.random.Generator) -> np.ndarray:
    points = np.loadtxt(os.path.join(HERE, "ref", "heatinv_points.dat"))  # [2500, 3]: x, y, t
    x, y, t = points.T
    u = np.exp(-t) * np.sin(np.pi * x) * np.sin(np.pi * y) + rng.normal(0.0, NOISE, size=x.shape)
    return np.concatenate([points, u[:, None]], axis=1)  # [2500, 4]


def write(name: str, header: str, rows: np.ndarray) -> None:
    path = os.path.join(HERE, "data", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.savetxt(path, rows, delimiter=",", header=header, comments="", fmt="%.17g")
    print(f"wrote {path} ({len(rows)} rows)")


def main() -> None:
    rng = np.random.default_rng(SEED)
    write("pinv_obs.csv", "x,y,u", pinv(rng))
    write("hinv_obs.csv", "x,y,t,u", hinv(rng))


if __name__ == "__main__":
    main()

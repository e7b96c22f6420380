"""Generate obs.csv for the noisy inverse-coefficient example (numpy only, deterministic per seed).

Observations of u*(x, t) = exp(-t/2) sin(pi x) + exp(-t) sin(2 pi x)/2, the solution of
u_t = (a u_x)_x + f with a*(x) = 3/2 + sin(2 pi x)/2, at uniformly random points of
[0, 1] x [0, 1], with N(0, noise^2) noise added.

    python make_data.py                      # writes obs.csv beside this file (500 rows, noise 0.05, seed 0)
    python make_data.py --seed 3 --out d3.csv

Columns are named by the spec's coordinates and fields: x,t,u.
"""
import argparse
from pathlib import Path

import numpy as np


def exact(x, t):
    return np.exp(-t / 2) * np.sin(np.pi * x) + np.exp(-t) * np.sin(2 * np.pi * x) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.05, help="std of the additive Gaussian noise")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("obs.csv"))
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    x = rng.uniform(0.0, 1.0, args.rows)
    t = rng.uniform(0.0, 1.0, args.rows)
    u = exact(x, t) + args.noise * rng.standard_normal(args.rows)
    np.savetxt(args.out, np.column_stack([x, t, u]), delimiter=",", header="x,t,u", comments="", fmt="%.12g")
    print(f"wrote {args.out} ({args.rows} rows, noise = {args.noise}, seed = {args.seed})")


if __name__ == "__main__":
    main()

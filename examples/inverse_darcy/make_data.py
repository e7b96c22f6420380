"""Write obs.csv for the inverse Darcy example: noisy observations of u (numpy only).

u* = sin(pi x) sin(pi y) (1 + x)/2 solves -div(a* grad u*) = f on [0, 1]^2 with a* = 1 + sin(2 pi x) y/2 and f
as the spec writes it; the observations are u* at uniform random points plus Gaussian noise.

    python make_data.py                        # obs.csv: 1,000 rows, noise sd 0.05, seed 0
    python make_data.py --seed 3 --out d3.csv  # another noise draw
"""
import argparse
from pathlib import Path

import numpy as np


def exact(x, y):
    return np.sin(np.pi * x) * np.sin(np.pi * y) * (1 + x) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.05, help="std of the additive Gaussian noise")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("obs.csv"))
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    x, y = rng.uniform(0.0, 1.0, args.rows), rng.uniform(0.0, 1.0, args.rows)
    u = exact(x, y) + args.noise * rng.standard_normal(args.rows)
    np.savetxt(args.out, np.column_stack([x, y, u]), delimiter=",", header="x,y,u", comments="", fmt="%.12g")
    print(f"wrote {args.out} ({args.rows} rows, noise = {args.noise}, seed = {args.seed})")


if __name__ == "__main__":
    main()

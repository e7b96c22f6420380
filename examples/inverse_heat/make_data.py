"""Generate obs.csv for the inverse heat example (numpy only, deterministic).

Observations of u(x, t) = exp(-k pi^2 t) sin(pi x), the solution of
u_t = (k u_x)_x with u = 0 at x = 0 and x = 1, for the TRUE diffusivity
k = 0.1. The spec starts its trainable `param k` at 0.5 and should recover 0.1.

    python make_data.py                 # writes obs.csv beside this file (200 rows, no noise)
    python make_data.py --noise 0.01    # adds 1 % Gaussian noise (relative to max |u| = 1)

Columns are named by the spec's coordinates and fields: x,t,u.
"""
import argparse
from pathlib import Path

import numpy as np

K_TRUE = 0.1


def exact(x, t, k=K_TRUE):
    return np.exp(-k * np.pi**2 * t) * np.sin(np.pi * x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.0, help="std of additive Gaussian noise")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("obs.csv"))
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    x = rng.uniform(0.0, 1.0, args.rows)
    t = rng.uniform(0.0, 1.0, args.rows)
    u = exact(x, t)
    if args.noise > 0:
        u = u + args.noise * rng.standard_normal(args.rows)
    np.savetxt(args.out, np.column_stack([x, t, u]), delimiter=",",
               header="x,t,u", comments="", fmt="%.12g")
    print(f"wrote {args.out} ({args.rows} rows, k_true = {K_TRUE}, noise = {args.noise})")


if __name__ == "__main__":
    main()

"""Write kappa.csv for coefficient_table.pinn: the conductivity k = 1 + x + 2 y and its two derivatives
on a 21 x 21 grid of [0, 1]^2 (columns x, y, k, kx, ky).

    python examples/coefficient_table/make_table.py
"""

import os

import numpy as np

x, y = np.meshgrid(np.linspace(0, 1, 21), np.linspace(0, 1, 21), indexing="ij")
x, y = x.reshape(-1), y.reshape(-1)  # [441]
rows = np.stack([x, y, 1 + x + 2 * y, np.ones_like(x), 2 * np.ones_like(x)], axis=1)  # [441, 5]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kappa.csv")
np.savetxt(path, rows, delimiter=",", header="x,y,k,kx,ky", comments="", fmt="%.17g")
print(f"wrote {path} ({len(rows)} rows)")

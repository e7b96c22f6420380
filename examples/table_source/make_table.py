"""Write source.csv for table_source.pinn: s = sin(16 pi x) on an 801 x 2 grid of [0, 1]^2 (columns x, y, s; the
values do not depend on y, so bilinear interpolation in y is exact and in x is within about 5e-4 of the sine).

    python examples/table_source/make_table.py
"""

import os

import numpy as np

x, y = np.meshgrid(np.linspace(0, 1, 801), np.linspace(0, 1, 2), indexing="ij")
x, y = x.reshape(-1), y.reshape(-1)  # [1602]
rows = np.stack([x, y, np.sin(16 * np.pi * x)], axis=1)  # [1602, 3]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "source.csv")
np.savetxt(path, rows, delimiter=",", header="x,y,s", comments="", fmt="%.17g")
print(f"wrote {path} ({len(rows)} rows)")

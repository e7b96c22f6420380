"""Random loss-specific gradient matrices shared by the surgery tests."""

import numpy as np
import torch


def random_G(m, p=40, *, correlated, seed, dtype=torch.float64):
    """Rows with scales 1e-2 ... 1e2; correlated rows share a common component."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((m, p))
    if correlated:
        G = rng.standard_normal(p) + 0.5 * G
    G *= 10.0 ** rng.uniform(-2, 2, size=(m, 1))
    return torch.from_numpy(G).to(dtype)

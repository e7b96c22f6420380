"""Conflict indicators (paper, Appendix C.7)."""

import torch

from pinnspec.align import CONFLICT_THRESHOLD, conflicting, conflicts, project


def test_toy_example_indicators():
    G = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    a = torch.tensor([1.0, -0.5])
    u = torch.tensor([0.1, 10.0]) * a
    p = project(u, G)
    assert conflicts(G, a, u, p) == {"R_g": False, "R_a": False, "R_u": True, "R_p": False}
    assert conflicts(G, a, u) == {"R_g": False, "R_a": False, "R_u": True, "R_p": None}


def test_threshold_is_normalised_and_strict():
    g = torch.tensor([1.0, 0.0], dtype=torch.float64)
    for scale in (1e-3, 1.0, 1e3):
        barely = torch.tensor([-0.5 * CONFLICT_THRESHOLD, 1.0], dtype=torch.float64) * scale
        clearly = torch.tensor([-2 * CONFLICT_THRESHOLD, 1.0], dtype=torch.float64) * scale
        assert not conflicting(g[None] * scale, barely)
        assert conflicting(g[None] * scale, clearly)


def test_pairs_and_degenerate_inputs():
    G = torch.tensor([[1.0, 0.0], [-1.0, 0.1], [0.0, 0.0]])
    result = conflicts(G, G.sum(0), G.sum(0), G.sum(0))
    assert result["R_g"] is True
    # zero vectors never conflict (eps in the denominator)
    assert conflicts(torch.zeros(2, 3), torch.zeros(3), torch.zeros(3), torch.zeros(3)) == \
        {"R_g": False, "R_a": False, "R_u": False, "R_p": False}
    # one loss: no pairs
    assert conflicts(torch.tensor([[1.0, 2.0]]))["R_g"] is False
    assert conflicts(torch.tensor([[1.0, 2.0]]), torch.tensor([-1.0, 0.0]))["R_a"] is True
    # only pairs i < j count once; a duplicate pair does not conflict
    assert conflicts(torch.tensor([[1.0, 2.0], [1.0, 2.0]]))["R_g"] is False

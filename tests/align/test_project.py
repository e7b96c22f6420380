"""The cone projection p = argmin ||d - u||_M^2 s.t. G d >= 0 (pinnspec.align.project)."""

import os
from itertools import combinations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinnspec.align import ENUMERATION_MAX_TASKS, project, solve_dual


def brute_force(u, G, metric=None):
    """Independent primal solver: the projection onto C is the M-projection of u
    onto the subspace {d : G_S d = 0} of some face S; among all faces whose
    projection is feasible, the closest one is the answer.  numpy, float64."""
    u = np.asarray(u, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    minv = np.ones_like(u) if metric is None else 1.0 / np.asarray(metric, dtype=np.float64)
    rows = [i for i in range(G.shape[0]) if np.linalg.norm(G[i]) > 0]
    G = G[rows] / np.linalg.norm(G[rows], axis=1, keepdims=True)
    best, best_dist = None, np.inf
    for size in range(0, G.shape[0] + 1):
        for S in combinations(range(G.shape[0]), size):
            if size == 0:
                d = u.copy()
            else:
                GS = G[list(S)]
                # d = u - M^-1 G_S^T (G_S M^-1 G_S^T)^+ G_S u
                d = u - minv * (GS.T @ (np.linalg.pinv(GS @ (minv[:, None] * GS.T)) @ (GS @ u)))
            if np.all(G @ d >= -1e-9 * np.linalg.norm(u)):
                dist = np.sum((d - u) ** 2 / minv)
                if dist < best_dist - 1e-15:
                    best, best_dist = d, dist
    return best


def random_problem(rng, m, p, *, correlated=False, scales=True, metric=False):
    G = rng.standard_normal((m, p))
    if correlated:
        G = 0.8 * rng.standard_normal(p) + 0.6 * G
    if scales:
        G *= 10.0 ** rng.uniform(-2, 2, size=(m, 1))
    # a proposal that conflicts: the negative of a mix of some rows, plus noise
    u = -G[: max(1, m // 2)].sum(axis=0) + 0.5 * np.linalg.norm(G, axis=1).mean() * rng.standard_normal(p)
    diag = 10.0 ** rng.uniform(-3, 3, size=p) if metric else None
    return (torch.from_numpy(u), torch.from_numpy(G), None if diag is None else torch.from_numpy(diag))


@pytest.mark.parametrize("metric", [False, True], ids=["euclidean", "diag"])
@pytest.mark.parametrize("correlated", [False, True], ids=["uncorrelated", "correlated"])
@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 10, 12])
def test_matches_brute_force(m, correlated, metric):
    rng = np.random.default_rng(1000 * m + 10 * correlated + metric)
    for trial in range(3):
        p_dim = [30, m + 1, max(2, m - 2)][trial]  # include m > p
        u, G, diag = random_problem(rng, m, p_dim, correlated=correlated, metric=metric)
        expected = brute_force(u.numpy(), G.numpy(), None if diag is None else diag.numpy())
        got = project(u, G, diag)
        assert got.dtype == u.dtype
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-7 * np.linalg.norm(u.numpy()))


@pytest.mark.parametrize("m", [2, 3, 5, 8])
def test_nnls_equals_enumeration(m):
    rng = np.random.default_rng(m)
    for _ in range(10):
        u, G, diag = random_problem(rng, m, 20, correlated=bool(rng.integers(2)), metric=bool(rng.integers(2)))
        a = project(u, G, diag, solver="enumerate")
        b = project(u, G, diag, solver="nnls")
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-9 * u.norm().item())


def test_auto_uses_nnls_above_eight():
    assert ENUMERATION_MAX_TASKS == 8
    rng = np.random.default_rng(3)
    u, G, diag = random_problem(rng, 12, 40, metric=True)
    np.testing.assert_allclose(project(u, G, diag).numpy(), project(u, G, diag, solver="nnls").numpy())


@pytest.mark.parametrize("metric", [False, True])
@pytest.mark.parametrize("m", [2, 3, 8, 12])
def test_kkt(m, metric):
    """p - u = M^-1 G^T lam with lam >= 0, G p >= 0, lam_i <g_i, p> = 0."""
    rng = np.random.default_rng(7 + m)
    u, G, diag = random_problem(rng, m, 25, metric=metric)
    p = project(u, G, diag).numpy()
    Gn = G.numpy() / np.linalg.norm(G.numpy(), axis=1, keepdims=True)
    M = np.ones(25) if diag is None else diag.numpy()
    lam = np.linalg.lstsq(Gn.T, M * (p - u.numpy()), rcond=None)[0]
    scale = np.linalg.norm(u.numpy())
    np.testing.assert_allclose(Gn.T @ lam, M * (p - u.numpy()), atol=1e-8 * scale * M.max())
    assert np.all(lam >= -1e-8 * scale * M.max())
    assert np.all(Gn @ p >= -1e-10 * scale)
    np.testing.assert_allclose(lam * (Gn @ p), 0.0, atol=1e-8 * scale ** 2 * M.max())


def test_solve_dual_kkt_and_methods():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 10))
    K = A @ A.T
    b = rng.standard_normal(6)
    for method in ("enumerate", "nnls", "auto"):
        lam = solve_dual(torch.from_numpy(K), torch.from_numpy(b), method=method)
        grad = K @ lam + b
        assert np.all(lam >= 0) and np.all(grad >= -1e-9)
        np.testing.assert_allclose(lam * grad, 0, atol=1e-9)
    with pytest.raises(ValueError, match="unknown dual solver"):
        solve_dual(K, b, method="simplex")


# -- the paper's toy example (Sec. 3.3) -------------------------------------

def test_toy_example_section_3_3():
    G = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    a = torch.tensor([1.0, -0.5], dtype=torch.float64)
    P = torch.tensor([0.1, 10.0], dtype=torch.float64)
    assert torch.all(G @ a >= 0)  # a is conflict-free
    u = P * a
    torch.testing.assert_close(u, torch.tensor([0.1, -5.0], dtype=torch.float64))
    assert (G[1] @ u).item() == pytest.approx(-4.9)  # ... but the proposal conflicts
    # Euclidean projection: only g_2 is active, p = u + 4.9/2 g_2
    torch.testing.assert_close(project(u, G), torch.tensor([2.55, -2.55], dtype=torch.float64))
    # Under the optimizer's own metric M = P^-1: p = u + lam P g_2, lam = 4.9 / (g_2^T P g_2)
    lam = 4.9 / 10.1
    expected = torch.tensor([0.1 + 0.1 * lam, -5.0 + 10.0 * lam], dtype=torch.float64)
    p = project(u, G, 1.0 / P)
    torch.testing.assert_close(p, expected)
    assert torch.all(G @ p >= -1e-12)


# -- edge cases ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_edge_cases(dtype):
    g = torch.tensor([1.0, 2.0, -1.0], dtype=dtype)
    u = torch.tensor([-1.0, 0.5, 3.0], dtype=dtype)
    # m = 1: projection onto a half-space
    p = project(u, g[None])
    expected = u - (g @ u) / (g @ g) * g
    torch.testing.assert_close(p, expected)
    # zero rows are dropped
    G = torch.stack([g, torch.zeros_like(g)])
    torch.testing.assert_close(project(u, G), expected)
    # all-zero G: nothing to satisfy
    assert torch.equal(project(u, torch.zeros(3, 3, dtype=dtype)), u)
    # opposite pair: the cone is the hyperplane g^T d = 0
    torch.testing.assert_close(project(u, torch.stack([g, -g])), expected)
    # duplicate rows
    torch.testing.assert_close(project(u, torch.stack([g, g, 2 * g])), expected)
    # m > p
    G = torch.randn(6, 3, dtype=dtype, generator=torch.Generator().manual_seed(0))
    p = project(u, G)
    assert p.dtype == dtype and torch.isfinite(p).all()
    np.testing.assert_allclose(p.double().numpy(), brute_force(u.double().numpy(), G.double().numpy()),
                               atol=1e-6 if dtype == torch.float32 else 1e-12)
    # zero proposal
    assert torch.equal(project(torch.zeros(3, dtype=dtype), G), torch.zeros(3, dtype=dtype))


def test_rejects_bad_input():
    u = torch.ones(3)
    with pytest.raises(ValueError):
        project(u, torch.ones(2, 4))
    with pytest.raises(ValueError, match="positive"):
        project(u, torch.ones(2, 3), torch.tensor([1.0, 0.0, 1.0]))


# -- properties (hypothesis) -------------------------------------------------

@st.composite
def problems(draw):
    m = draw(st.integers(1, 6))
    p = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2 ** 31 - 1))
    metric = draw(st.booleans())
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((m, p)) * 10.0 ** rng.uniform(-2, 2, size=(m, 1))
    if draw(st.booleans()) and m >= 2:
        G[1] = -G[0] if draw(st.booleans()) else G[0]  # opposite or duplicate pair
    u = rng.standard_normal(p) * 10.0 ** rng.uniform(-2, 2)
    diag = 10.0 ** rng.uniform(-2, 2, size=p) if metric else None
    return torch.from_numpy(u), torch.from_numpy(G), None if diag is None else torch.from_numpy(diag), rng


def m_norm(x, diag):
    return float(torch.sum(x * x * (1.0 if diag is None else diag)))


@settings(max_examples=int(os.environ.get("PINNSPEC_PROPERTY_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_properties(problem):
    u, G, diag, rng = problem
    p = project(u, G, diag)
    scale = u.norm().item()
    row_norms = G.norm(dim=1)
    # p is in C.  Tolerances are 1e-7 relative: with m > p, duplicate or opposite
    # rows and metrics spanning 1e4, the dual is singular and float64 gives about
    # 1e-8 (hypothesis found such cases at 1e-9).
    assert torch.all(G @ p >= -1e-7 * row_norms * scale)
    # idempotence
    torch.testing.assert_close(project(p, G, diag), p, atol=1e-7 * scale, rtol=0)
    # positive homogeneity
    torch.testing.assert_close(project(3.7 * u, G, diag), 3.7 * p, atol=1e-7 * scale, rtol=0)
    # p is no farther from u (in M) than feasible points nearby or elsewhere
    dist = m_norm(p - u, diag)
    for _ in range(20):
        q = p + 0.3 * scale * torch.from_numpy(rng.standard_normal(u.shape[0]))
        if torch.all(G @ q >= 0):
            assert dist <= m_norm(q - u, diag) * (1 + 1e-7) + 1e-7 * scale ** 2
        r = project(torch.from_numpy(rng.standard_normal(u.shape[0])), G)  # another feasible point
        assert dist <= m_norm(r - u, diag) * (1 + 1e-7) + 1e-7 * scale ** 2


@settings(max_examples=40, deadline=None)
@given(problems())
def test_identity_inside_the_cone(problem):
    u, G, diag, _ = problem
    norms = G.norm(dim=1)
    inside = project(u, G, diag)  # a point of C; exactly u's scale when strictly inside
    if torch.all(G @ inside > 1e-10 * norms * inside.norm()):
        assert torch.equal(project(inside, G, diag), inside)
    # the sum of gradients that pairwise agree is in C and is returned unchanged
    if torch.all(G @ G.T > 1e-6 * norms[:, None] * norms[None, :]):
        d = G.sum(dim=0)
        assert torch.equal(project(d, G), d)
        assert torch.equal(project(d, G, diag), d)


def test_large_p_costs_m_squared_p():
    """p = 2e6 parameters: only [m, p] and [m, m] arrays are formed (a p x p matrix
    would need 32 TB)."""
    gen = torch.Generator().manual_seed(0)
    G = torch.randn(3, 2_000_000, generator=gen)
    u = -G[0] + 0.1 * torch.randn(2_000_000, generator=gen)
    metric = torch.rand(2_000_000, generator=gen) + 0.1
    p = project(u, G, metric)
    assert p.dtype == torch.float32
    assert torch.all(G.double() @ p.double() >= -1e-6 * G.double().norm(dim=1) * p.double().norm())


# -- degenerate inputs, and no host decisions -----------------------------------

def degenerate_problems():
    """(name, u, G): zero, repeated, opposite and dependent rows; more rows than dimensions."""
    rng = np.random.default_rng(11)
    g = rng.standard_normal((3, 6))
    u = -g[0] - 0.3 * g[1] + 0.1 * rng.standard_normal(6)
    yield "zero row", u, np.vstack([g[:2], np.zeros(6)])
    yield "repeated row", u, np.vstack([g[0], g[1], 2.5 * g[0]])
    yield "opposite rows", u, np.vstack([g[0], -g[0], g[1]])
    yield "dependent rows", u, np.vstack([g[0], g[1], g[0] + g[1]])
    yield "m > p", u[:2], rng.standard_normal((5, 2))


@pytest.mark.parametrize("solver", ["enumerate", "nnls"])
def test_degenerate_rows_match_brute_force(solver):
    for name, u, G in degenerate_problems():
        got = project(torch.from_numpy(u), torch.from_numpy(G), solver=solver).numpy()
        np.testing.assert_allclose(got, brute_force(u, G), atol=1e-8 * np.linalg.norm(u), err_msg=name)


@pytest.mark.parametrize("solver", ["auto", "nnls"])
def test_nothing_to_project(solver):
    G = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    for u in (torch.zeros(2, dtype=torch.float64), torch.tensor([-1.0, float("inf")], dtype=torch.float64),
              torch.tensor([1.0, 2.0], dtype=torch.float64)):
        p = project(u, G, solver=solver)
        assert p is not u and torch.equal(p, u)  # exactly u, a new tensor
    assert project(torch.tensor([-1.0, 2.0]), torch.zeros(0, 2)).tolist() == [-1.0, 2.0]


@pytest.mark.parametrize("m", [1, 2, 3, 8])
def test_enumeration_decides_nothing_on_the_host(m, no_host_sync):
    rng = np.random.default_rng(50 + m)
    for metric in (False, True):
        u, G, diag = random_problem(rng, m, 20, correlated=True, metric=metric)
        with no_host_sync():
            got = project(u, G, diag, check=False)
        np.testing.assert_allclose(got.numpy(), brute_force(u.numpy(), G.numpy(), None if diag is None else
                                                            diag.numpy()), atol=1e-7 * np.linalg.norm(u.numpy()))

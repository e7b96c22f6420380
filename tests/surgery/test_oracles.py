"""Surgery methods against independent implementations (torchjd, conflictfree)."""

import pytest
import torch
from surgery_cases import random_G

from pinnspec.surgery import AlignedMTL, CAGrad, MConFIG, aggregate
from pinnspec.surgery._methods import _pcgrad_weights

torchjd_aggregation = pytest.importorskip("torchjd.aggregation")
cf_grad = pytest.importorskip("conflictfree.grad_operator")




CASES = [(m, correlated, seed) for m in (2, 3, 5, 8) for correlated in (False, True) for seed in range(2)]
IDS = [f"m{m}-{'corr' if c else 'uncorr'}-{s}" for m, c, s in CASES]


@pytest.fixture(autouse=True)
def float64_default():
    """conflictfree builds its weight vectors in the default dtype."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def close(ours, reference, rtol=1e-7):
    scale = reference.norm().item()
    torch.testing.assert_close(ours, reference.to(ours.dtype), rtol=0, atol=rtol * scale + 1e-300)


@pytest.mark.parametrize("m,correlated,seed", CASES, ids=IDS)
def test_config(m, correlated, seed):
    G = random_G(m, correlated=correlated, seed=seed)
    ours = aggregate("config", G)
    close(ours, torchjd_aggregation.ConFIG()(G))
    close(ours, cf_grad.ConFIG_update(G, use_least_square=False))
    if m == 2:
        close(ours, cf_grad.ConFIG_update_double(G[0], G[1]))


@pytest.mark.parametrize("m,correlated,seed", CASES, ids=IDS)
def test_upgrad_exact_projector(m, correlated, seed):
    pytest.importorskip("quadprog")
    pytest.importorskip("qpsolvers")
    from torchjd._linalg import QuadprogProjector

    G = random_G(m, correlated=correlated, seed=seed)
    exact = torchjd_aggregation.UPGrad(projector=QuadprogProjector(norm_eps=0.0, reg_eps=0.0))
    close(aggregate("upgrad", G), exact(G), rtol=1e-6)


@pytest.mark.parametrize("m,correlated,seed", CASES, ids=IDS)
def test_imtlg(m, correlated, seed):
    G = random_G(m, correlated=correlated, seed=seed)
    ours = aggregate("imtlg", G)
    close(ours, torchjd_aggregation.IMTLG()(G), rtol=1e-6)
    close(ours, cf_grad.IMTLGOperator().calculate_gradient(G), rtol=1e-6)


@pytest.mark.parametrize("scale_mode", ["min", "median", "rmse"])
@pytest.mark.parametrize("m,correlated,seed", CASES[::3], ids=IDS[::3])
def test_aligned_mtl(m, correlated, seed, scale_mode):
    """reduce = mean is torchjd's AlignedMTL (default preference vector 1/m: weights B 1/m); reduce = sum is
    the official code's sum of the aligned gradients: torchjd with the preference vector 1, m times the mean."""
    G = random_G(m, correlated=correlated, seed=seed)
    mean = torchjd_aggregation.AlignedMTL(scale_mode=scale_mode)(G)
    total = torchjd_aggregation.AlignedMTL(pref_vector=torch.ones(m, dtype=G.dtype), scale_mode=scale_mode)(G)
    close(aggregate("amtl", G, scale=scale_mode, reduce="mean"), mean, rtol=1e-6)
    close(aggregate("amtl", G, scale=scale_mode, reduce="sum"), total, rtol=1e-6)
    close(aggregate("amtl", G, scale=scale_mode, reduce="sum"), m * mean, rtol=1e-6)
    close(aggregate("amtl", G, scale=scale_mode), mean, rtol=1e-6)  # the mean is the default


def test_aligned_mtl_defaults_are_rmse_and_mean():
    assert AlignedMTL().scale == "rmse"
    assert AlignedMTL().reduce == "mean"


@pytest.mark.parametrize("m,correlated,seed", CASES, ids=IDS)
def test_cagrad(m, correlated, seed):
    pytest.importorskip("cvxpy")
    G = random_G(m, correlated=correlated, seed=seed)
    c = 0.5
    reference = torchjd_aggregation.CAGrad(c=c, norm_eps=0.0)(G) * m / (1 + c ** 2)
    close(aggregate("cagrad", G), reference, rtol=1e-3)
    assert CAGrad().c == 0.5


def test_pcgrad_two_tasks():
    for correlated in (False, True):
        for seed in range(4):
            G = random_G(2, correlated=correlated, seed=seed)
            ours = aggregate("pcgrad", G)
            close(ours, torchjd_aggregation.PCGrad()(G))
            close(ours, cf_grad.PCGradOperator().calculate_gradient(G))


@pytest.mark.parametrize("m,correlated,seed", CASES, ids=IDS)
def test_pcgrad_fixed_order(m, correlated, seed):
    """With every task meeting the others in index order, PCGrad is conflictfree's PCGradOperator."""
    G = random_G(m, correlated=correlated, seed=seed)
    weights = _pcgrad_weights(G @ G.T, [torch.arange(m)] * m).sum(dim=0)
    close(weights @ G, cf_grad.PCGradOperator().calculate_gradient(G))


def test_pcgrad_orders_come_from_the_generator():
    G = random_G(5, correlated=False, seed=0)
    a1 = aggregate("pcgrad", G, generator=torch.Generator().manual_seed(3))
    a2 = aggregate("pcgrad", G, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a1, a2)
    outcomes = {tuple(aggregate("pcgrad", G, generator=torch.Generator().manual_seed(s)).tolist())
                for s in range(20)}
    assert len(outcomes) > 1  # the order matters for m > 2 and does change with the seed
    with pytest.raises(ValueError, match="generator"):
        aggregate("pcgrad", G)


@pytest.mark.parametrize("m", [2, 3, 5])
def test_mconfig_pseudo_momentum_operator(m):
    from conflictfree.grad_operator import ConFIGOperator
    from conflictfree.momentum_operator import PseudoMomentumOperator

    method = MConFIG()
    reference = PseudoMomentumOperator(num_vectors=m, gradient_operator=ConFIGOperator(use_least_square=False))
    state = method.init(m, 30, dtype=torch.float64)
    for step in range(20):
        G = random_G(m, 30, correlated=step % 2 == 0, seed=100 + step)
        a, state = method(G, state)
        expected = reference.calculate_gradient(list(range(m)), list(G))
        close(a, expected, rtol=1e-6)

"""GUA's state alignment for RMSProp, AdamW and SOAP against the paper's formulas, written out here
(Appendix "Optimizer-State Alignment" for Adam; "Performance across Optimizers" for the others):

    m <- (1 - rho_m) m_bar + rho_m m_target,   v <- (1 - rho_v) v_bar + rho_v v_target,

the targets rebuilt from the applied update p through the pseudo-gradient g~ that the optimizer's own
denominator maps to p.  SOAP's rotation is rebuilt here as one orthogonal matrix (a Kronecker product of
the bases per parameter tensor), not by pinnspec's per-dimension contraction."""

import math

import pytest
import torch

from pinnspec.align import GUA, conflicting
from pinnspec.optim import SOAP, Adam, AdamState, AdamW, ParamLayout, RMSProp


def proposal_with_conflict(optimizer, shapes, steps=6, seed=0):
    """(theta, the state before the step, a, u, tentative state, G): ``steps`` random proposals, then one
    whose u the first of two task gradients opposes (G = [-u + noise, noise'])."""
    gen = torch.Generator().manual_seed(seed)
    numel = ParamLayout(tuple(shapes)).numel
    theta = torch.randn(numel, generator=gen, dtype=torch.float64)
    state = optimizer.init(theta, shapes)
    for _ in range(steps):
        _, state = optimizer.propose(torch.randn(numel, generator=gen, dtype=torch.float64), state, params=theta)
    a = torch.randn(numel, generator=gen, dtype=torch.float64)
    u, tentative = optimizer.propose(a, state, params=theta)
    noise = torch.randn(2, numel, generator=gen, dtype=torch.float64)
    G = torch.stack([-u / u.norm() + 0.3 * noise[0] / noise[0].norm(), noise[1]])
    assert conflicting(G, u)
    return theta, state, a, u, tentative, G


def blend(bar: torch.Tensor, target: torch.Tensor, rho: float) -> torch.Tensor:
    return (1 - rho) * bar + rho * target


# -- RMSProp: (rho_m, rho_v) = (0, 0.5); g~ = (sqrt(v_bar) + eps) p,  v <- blend(v_bar, g~^2, rho_v) ------

@pytest.mark.parametrize("rho_v", [None, 0.2, 1.0])
def test_rmsprop_second_moment(rho_v):
    opt = RMSProp(lr=1e-2, alpha=0.9, eps=1e-6)
    theta, _, _, u, tentative, G = proposal_with_conflict(opt, [(5, 3), (5,)])
    p, aligned = GUA(rho_v=rho_v).align(u, G, tentative, opt, params=theta)
    assert not torch.equal(p, u) and not conflicting(G, p)
    g = (tentative.square_avg.sqrt() + 1e-6) * p
    expected = blend(tentative.square_avg, g * g, 0.5 if rho_v is None else rho_v)
    torch.testing.assert_close(aligned.square_avg, expected, rtol=1e-14, atol=0)
    if rho_v == 1.0:  # the whole target: the denominator that maps g~ to p, exactly
        assert torch.equal(aligned.square_avg, g * g)
        torch.testing.assert_close(aligned.square_avg.sqrt(), (tentative.square_avg.sqrt() + 1e-6) * p.abs())
    assert aligned.step == tentative.step


# -- AdamW: the Adam alignment of p - lambda theta (the decoupled decay handled apart) --------------------

@pytest.mark.parametrize("rho", [None, (0.5, 1.0), (1.0, 1.0)])
def test_adamw_aligns_the_update_without_its_decay(rho):
    decay = 0.2
    opt = AdamW(lr=1e-2, beta1=0.85, beta2=0.99, eps=1e-7, weight_decay=decay)
    theta, _, _, u, tentative, G = proposal_with_conflict(opt, [(4, 3), (4,)])
    rho_m, rho_v = rho or (0.1, 0.03)  # None: the paper's values for the optimizer
    gua = GUA() if rho is None else GUA(rho_m=rho_m, rho_v=rho_v)
    p, aligned = gua.align(u, G, tentative, opt, params=theta)
    assert not torch.equal(p, u)
    t = tentative.step
    bias1, bias2 = 1 - 0.85 ** t, 1 - 0.99 ** t
    g = ((tentative.exp_avg_sq / bias2).sqrt() + 1e-7) * (p - decay * theta)
    torch.testing.assert_close(aligned.exp_avg, blend(tentative.exp_avg, bias1 * g, rho_m), rtol=1e-13, atol=0)
    torch.testing.assert_close(aligned.exp_avg_sq, blend(tentative.exp_avg_sq, bias2 * g * g, rho_v),
                               rtol=1e-13, atol=0)
    # the same as Adam's alignment of the decay-free update, and not the alignment of p itself
    adam = Adam(lr=1e-2, beta1=0.85, beta2=0.99, eps=1e-7)
    without_decay = adam.aligned_state(tentative, p - decay * theta, rho_m=rho_m, rho_v=rho_v)
    torch.testing.assert_close(aligned.exp_avg, without_decay.exp_avg, rtol=1e-14, atol=0)
    with_decay = adam.aligned_state(tentative, p, rho_m=rho_m, rho_v=rho_v)
    assert not torch.allclose(aligned.exp_avg, with_decay.exp_avg, rtol=1e-6, atol=0)
    if rho == (1.0, 1.0):  # the bias-corrected moments are the targets themselves: g~ and g~^2
        torch.testing.assert_close(aligned.exp_avg / bias1, g, rtol=1e-14, atol=0)
        torch.testing.assert_close(aligned.exp_avg_sq / bias2, g * g, rtol=1e-14, atol=0)


# -- SOAP: in the eigenbasis, p~ = Q^T (p - lambda theta), g~ = (sqrt(v~) + eps) p~ / sqrt(1 - b2^k),
#    m <- blend(m_bar, Q (1 - b1^k) g~, rho_m),  v~ <- blend(v~_bar, (1 - b2^k) g~^2, rho_v);
#    the statistics L_k and the bases Q_k untouched --------------------------------------------------------

def rotation(state) -> torch.Tensor:
    """The whole eigenbasis as one [p, p] orthogonal matrix Q (x~ = Q^T x): block-diagonal over the
    parameter tensors, each block the Kronecker product of its per-dimension bases (identity where a
    dimension is not rotated), in row-major order."""
    blocks = []
    for shape, bases in zip(state.shapes, state.bases):
        block = torch.ones(1, 1, dtype=torch.float64)
        for d, Q in zip(shape, bases if len(bases) == len(shape) else [None] * len(shape)):
            block = torch.kron(block, torch.eye(d, dtype=torch.float64) if Q is None else Q.contiguous())
        blocks.append(block)
    return torch.block_diag(*blocks)


SOAP_SHAPES = [(3, 4, 2), (4,), (2, 3)]


@pytest.mark.parametrize("rho", [None, (0.4, 0.2), (0.0, 1.0)])
def test_soap_state_alignment_in_its_eigenbasis(rho):
    decay = 0.05
    # dimension 4 > max_precondition_dim stays unrotated; a basis refresh every 2 steps
    opt = SOAP(lr=1e-2, beta1=0.9, beta2=0.97, eps=1e-7, weight_decay=decay, precondition_frequency=2,
               max_precondition_dim=3)
    theta, _, _, u, tentative, G = proposal_with_conflict(opt, SOAP_SHAPES, steps=7)
    rho_m, rho_v = rho or (0.03, 0.003)  # None: the paper's values for the optimizer
    gua = GUA() if rho is None else GUA(rho_m=rho_m, rho_v=rho_v)
    p, aligned = gua.align(u, G, tentative, opt, params=theta)
    assert not torch.equal(p, u) and not conflicting(G, p)
    Q = rotation(tentative)
    torch.testing.assert_close(Q.T @ Q, torch.eye(len(theta), dtype=torch.float64), rtol=0, atol=1e-6)
    assert tentative.bases[0][1] is None  # the dimension of size 4
    k = tentative.step - 1
    bias1, bias2 = 1 - 0.9 ** k, 1 - 0.97 ** k
    g = (tentative.exp_avg_sq.sqrt() + 1e-7) * (Q.T @ (p - decay * theta)) / math.sqrt(bias2)
    torch.testing.assert_close(aligned.exp_avg, blend(tentative.exp_avg, Q @ (bias1 * g), rho_m),
                               rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(aligned.exp_avg_sq, blend(tentative.exp_avg_sq, bias2 * g * g, rho_v),
                               rtol=1e-12, atol=1e-15)
    if rho_v == 1.0:  # v~ is the target itself: the denominator times p~, squared
        torch.testing.assert_close(aligned.exp_avg_sq,
                                   ((tentative.exp_avg_sq.sqrt() + 1e-7) * (Q.T @ (p - decay * theta))) ** 2,
                                   rtol=1e-12, atol=1e-15)
        assert torch.equal(aligned.exp_avg, tentative.exp_avg)  # rho_m = 0
    # the preconditioner statistics, the bases and the pending gradient stay as they were
    assert aligned.step == tentative.step and aligned.shapes == tentative.shapes
    for ours, theirs in zip(aligned.preconditioners + aligned.bases, tentative.preconditioners + tentative.bases):
        assert all((a is None and b is None) or torch.equal(a, b) for a, b in zip(ours, theirs))
    assert torch.equal(aligned.pending, tentative.pending)


def test_soap_on_1d_parameters_is_adam():
    """No dimension is rotated: SOAP's step k is AdamW's at step k with eps / sqrt(1 - b2^k) (SOAP adds eps
    to sqrt(v), Adam to sqrt(v_hat)), on the moments SOAP keeps; so are GUA's projection and alignment."""
    shapes = [(6,), (3,), (5,)]
    soap = SOAP(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-6, weight_decay=0.1)
    theta, before, a, u, tentative, G = proposal_with_conflict(soap, shapes, steps=5)
    k = tentative.step - 1
    adamw = AdamW(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-6 / math.sqrt(1 - 0.95 ** k), weight_decay=0.1)
    u_adam, tentative_adam = adamw.propose(a, AdamState(k - 1, before.exp_avg, before.exp_avg_sq), params=theta)
    torch.testing.assert_close(u, u_adam, rtol=1e-13, atol=0)
    torch.testing.assert_close(tentative.exp_avg_sq, tentative_adam.exp_avg_sq, rtol=1e-15, atol=0)
    gua = GUA(rho_m=0.3, rho_v=0.2)
    p, aligned = gua.align(u, G, tentative, soap, params=theta)
    p_adam, aligned_adam = gua.align(u_adam, G, tentative_adam, adamw, params=theta)
    assert not torch.equal(p, u)
    torch.testing.assert_close(p, p_adam, rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(aligned.exp_avg, aligned_adam.exp_avg, rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(aligned.exp_avg_sq, aligned_adam.exp_avg_sq, rtol=1e-12, atol=1e-15)

"""GUA: gate, projection under the optimizer's metric, state alignment; the whole chain."""

import math

import pytest
import torch

from pinnspec.align import GUA, NoAlignment, conflicting, conflicts, make, project
from pinnspec.optim import SGD, SOAP, AdaHessian, Adam, AdamW, MomentumSGD, ParamLayout, RMSProp, SophiaG
from pinnspec.registry import ALIGN
from pinnspec.surgery import make as make_surgery

SHAPES = [(4, 3), (4,), (2, 4), (2,)]
P = ParamLayout(tuple(SHAPES)).numel


def warmed_up(optimizer, steps=5, seed=0, dtype=torch.float64):
    """An optimizer state after a few proposals, and theta."""
    gen = torch.Generator().manual_seed(seed)
    theta = torch.randn(P, generator=gen, dtype=dtype)
    state = optimizer.init(theta, SHAPES)
    for _ in range(steps):
        a = torch.randn(P, generator=gen, dtype=dtype)
        hessian = torch.rand(P, generator=gen, dtype=dtype) if optimizer.hessian_due(state) else None
        _, state = optimizer.propose(a, state, params=theta, hessian=hessian)
    return theta, state, gen


def conflicting_step(optimizer, seed=0):
    """(G, theta, u, tentative state) with u conflicting with G."""
    theta, state, gen = warmed_up(optimizer, seed=seed)
    for _ in range(100):
        G = torch.randn(2, P, generator=gen, dtype=torch.float64)
        hessian = torch.rand(P, generator=gen, dtype=torch.float64) if optimizer.hessian_due(state) else None
        a = torch.randn(P, generator=gen, dtype=torch.float64)
        u, tentative = optimizer.propose(a, state, params=theta, hessian=hessian)
        if conflicting(G, u):
            return G, theta, u, tentative
        state = tentative
    raise AssertionError("no conflicting proposal found")


def test_registry():
    assert {"gua", "none"} <= set(ALIGN.names())
    assert ALIGN.entry("gua").parameters() == {"metric": "adam", "rho_m": None, "rho_v": None}
    assert isinstance(make("none"), NoAlignment)
    with pytest.raises(ValueError, match="metric"):
        GUA(metric="shampoo")
    with pytest.raises(ValueError, match="rho_m"):
        GUA(rho_m=1.5)


def test_gate_keeps_conflict_free_proposals_and_the_state():
    opt = Adam()
    theta, state, gen = warmed_up(opt)
    G = torch.randn(2, P, generator=gen, dtype=torch.float64)
    a = make_surgery("upgrad")(G)[0]
    u, tentative = opt.propose(a, state)
    u = project(u, G)  # any proposal in the cone
    p, aligned = GUA().align(u, G, tentative, opt, params=theta)
    assert torch.equal(p, u)
    assert aligned.step == tentative.step
    assert torch.equal(aligned.exp_avg, tentative.exp_avg) and torch.equal(aligned.exp_avg_sq, tentative.exp_avg_sq)


@pytest.mark.parametrize("optimizer", [Adam(), RMSProp(), SOAP(), SGD(), AdaHessian()],
                         ids=["adam", "rmsprop", "soap", "sgd", "adahessian"])
@pytest.mark.parametrize("m", [2, 3])
def test_gua_decides_nothing_on_the_host(optimizer, m, no_host_sync, monkeypatch):
    """Gate, projection (enumeration) and state alignment are tensor selections where the host is
    not free (a GPU: there GUA queues without a synchronisation); the result equals the host-gated
    one the CPU takes."""
    from pinnspec.align import _gua

    theta, state, gen = warmed_up(optimizer)
    for trial in range(6):
        G = torch.randn(m, P, generator=gen, dtype=torch.float64)
        hessian = torch.rand(P, generator=gen, dtype=torch.float64) if optimizer.hessian_due(state) else None
        u, tentative = optimizer.propose(torch.randn(P, generator=gen, dtype=torch.float64), state,
                                         params=theta, hessian=hessian)
        with monkeypatch.context() as patch, no_host_sync():
            patch.setattr(_gua, "_host_is_free", lambda t: False)
            p, aligned = GUA().align(u, G, tentative, optimizer, params=theta)
        p_host, aligned_host = GUA().align(u, G, tentative, optimizer, params=theta)
        assert torch.equal(p, p_host)
        for name in ("exp_avg", "exp_avg_sq", "square_avg"):
            if hasattr(aligned, name):
                assert torch.equal(getattr(aligned, name), getattr(aligned_host, name)), name
        if conflicting(G, u):
            torch.testing.assert_close(p, GUA().direction(u, G, tentative, optimizer), rtol=0, atol=0)
            assert not conflicting(G, p)
        else:
            assert torch.equal(p, u)
        state = aligned


def test_adam_projection_uses_the_adam_metric_and_state_alignment():
    opt = Adam()
    G, theta, u, tentative = conflicting_step(opt)
    p, aligned = GUA().align(u, G, tentative, opt, params=theta)
    metric = tentative.exp_avg_sq.sqrt() / math.sqrt(1 - opt.beta2 ** tentative.step) + opt.eps
    torch.testing.assert_close(p, project(u, G, metric))
    assert not conflicting(G, p)
    assert not torch.allclose(p, project(u, G))  # the metric matters
    torch.testing.assert_close(GUA(metric="euclidean").align(u, G, tentative, opt)[0], project(u, G))
    # Appendix D: g~ = (sqrt(v_hat) + eps) p, moments blended toward the bias-uncorrected targets
    g = metric * p
    t = tentative.step
    torch.testing.assert_close(aligned.exp_avg, 0.9 * tentative.exp_avg + 0.1 * (1 - 0.9 ** t) * g)
    torch.testing.assert_close(aligned.exp_avg_sq, 0.97 * tentative.exp_avg_sq + 0.03 * (1 - 0.999 ** t) * g * g)
    assert aligned.step == tentative.step
    # rho = 0: direction alignment only
    _, same = GUA(rho_m=0.0, rho_v=0.0).align(u, G, tentative, opt)
    torch.testing.assert_close(same.exp_avg, tentative.exp_avg)
    torch.testing.assert_close(same.exp_avg_sq, tentative.exp_avg_sq)


@pytest.mark.parametrize("optimizer", [Adam(), AdamW(weight_decay=0.1), SOAP(weight_decay=0.05),
                                       SOAP(weight_decay=0.0, precondition_frequency=2)],
                         ids=["adam", "adamw", "soap", "soap-refresh"])
def test_full_first_moment_alignment_reproduces_p(optimizer):
    """With rho_m = 1, rho_v = 0 the aligned first moment is the one that, under the
    unchanged denominator (and basis), makes the optimizer propose exactly p."""
    G, theta, u, tentative = conflicting_step(optimizer)
    p, aligned = GUA(rho_m=1.0, rho_v=0.0).align(u, G, tentative, optimizer, params=theta)
    assert not conflicting(G, p)
    if isinstance(optimizer, SOAP):
        k = aligned.step - 1
        scale = math.sqrt(1 - optimizer.beta2 ** k) / (1 - optimizer.beta1 ** k)
        rebuilt = scale * optimizer.from_basis(optimizer.to_basis(aligned.exp_avg, aligned) /
                                               optimizer.metric(aligned), aligned)
    else:
        rebuilt = (aligned.exp_avg / (1 - optimizer.beta1 ** aligned.step)) / optimizer.metric(aligned)
    decay = getattr(optimizer, "weight_decay", 0.0) * theta
    # SOAP refreshes its bases by a float32 QR (as the reference does): orthogonal to ~1e-7
    tol = dict(rtol=1e-5, atol=1e-6 * p.norm().item()) if isinstance(optimizer, SOAP) else {}
    torch.testing.assert_close(rebuilt + decay, p, **tol)


def test_soap_projects_in_its_eigenbasis():
    opt = SOAP(weight_decay=0.0)
    G, theta, u, tentative = conflicting_step(opt)
    p, _ = GUA().align(u, G, tentative, opt, params=theta)
    # the projection in rotated coordinates, rotated back, is the M-projection with M = Q D Q^T
    rotated = project(opt.to_basis(u, tentative), opt.to_basis(G, tentative), opt.metric(tentative))
    torch.testing.assert_close(p, opt.from_basis(rotated, tentative))
    # the basis is orthogonal: rotations preserve inner products, so the cone is the same
    torch.testing.assert_close(opt.to_basis(G, tentative) @ opt.to_basis(u, tentative), G @ u)


def test_rmsprop_aligns_only_its_second_moment():
    opt = RMSProp()
    G, theta, u, tentative = conflicting_step(opt)
    p, aligned = GUA().align(u, G, tentative, opt)
    metric = tentative.square_avg.sqrt() + opt.eps
    torch.testing.assert_close(p, project(u, G, metric))
    g = metric * p
    torch.testing.assert_close(aligned.square_avg, 0.5 * tentative.square_avg + 0.5 * g * g)


@pytest.mark.parametrize("optimizer", [SGD(), MomentumSGD(), SophiaG(), AdaHessian()],
                         ids=["sgd", "msgd", "sophiag", "adahessian"])
def test_optimizers_without_state_alignment(optimizer):
    G, theta, u, tentative = conflicting_step(optimizer)
    p, state = GUA().align(u, G, tentative, optimizer, params=theta)
    assert state is tentative and not conflicting(G, p)
    expected = project(u, G, optimizer.metric(tentative))
    torch.testing.assert_close(p, expected)
    with pytest.raises(ValueError, match="no state alignment"):
        GUA(rho_m=0.1).align(u, G, tentative, optimizer, params=theta)


def test_no_alignment_stage():
    opt = Adam()
    G, theta, u, tentative = conflicting_step(opt)
    p, state = NoAlignment().align(u, G, tentative, opt)
    assert p is u and state is tentative


# -- the chain ----------------------------------------------------------------

class Quadratics:
    """m conflicting quadratic losses L_i = 1/2 ||A_i theta - y_i||^2 on a tiny two-layer shape."""

    def __init__(self, m, seed, dtype=torch.float64):
        gen = torch.Generator().manual_seed(seed)
        shared = torch.randn(6, P, generator=gen, dtype=dtype)
        self.A = shared + 0.5 * torch.randn(m, 6, P, generator=gen, dtype=dtype)  # similar maps ...
        target = torch.randn(6, generator=gen, dtype=dtype) * 3
        signs = torch.tensor([(-1.0) ** i for i in range(m)], dtype=dtype)
        self.y = signs[:, None] * target + torch.randn(m, 6, generator=gen, dtype=dtype)  # ... opposite targets

    def gradients(self, theta):  # [m, p]
        residual = torch.einsum("mkp,p->mk", self.A, theta) - self.y
        return torch.einsum("mkp,mk->mp", self.A, residual)

    def loss(self, theta):
        return 0.5 * ((torch.einsum("mkp,p->mk", self.A, theta) - self.y) ** 2).sum()


def run_chain(surgery, optimizer, align, problem, theta, steps, gen, states=None):
    s_state, o_state = states or (surgery.init(*problem.A.shape[::2], dtype=theta.dtype),
                                  optimizer.init(theta, SHAPES))
    records = []
    for _ in range(steps):
        G = problem.gradients(theta)  # [m, p]
        a, s_state = surgery(G, s_state, generator=gen)
        hessian = None
        if optimizer.hessian_due(o_state):
            hessian = torch.einsum("mkp,mkp->p", problem.A, problem.A)  # exact diag(H) of the sum
        u, tentative = optimizer.propose(a, o_state, params=theta, hessian=hessian)
        p, o_state = align.align(u, G, tentative, optimizer, params=theta)
        theta = theta - optimizer.lr * p
        records.append(conflicts(G, a, u, p))
    return theta, (s_state, o_state), records


OPTIMIZERS = [SGD(lr=1e-3), MomentumSGD(lr=1e-3), RMSProp(lr=1e-2), Adam(lr=1e-2), AdamW(lr=1e-2),
              SophiaG(lr=1e-2), AdaHessian(lr=0.05), SOAP(lr=1e-2, precondition_frequency=3)]


@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=lambda o: type(o).__name__)
def test_chain_with_gua_never_conflicts(optimizer):
    problem = Quadratics(3, seed=1)
    theta = torch.zeros(P, dtype=torch.float64)
    for surgery in ("none", "config", "pcgrad"):
        _, _, records = run_chain(make_surgery(surgery), optimizer, GUA(), problem, theta, 15,
                                  torch.Generator().manual_seed(0))
        assert not any(r["R_p"] for r in records)
        if surgery == "config":
            assert not any(r["R_a"] for r in records)


def test_chain_gua_helps_on_conflicting_quadratics():
    """Adam + GUA moves the worst loss no higher than Adam on the first step, and the
    chain's proposals do conflict (GUA has something to do).  Along the GUA chain, every step
    whose proposal conflicts raises the worst loss less with p than u would from the same state
    (Proposition "local safety": the worst change of p is O(lr^2), u's first order)."""
    problem = Quadratics(2, seed=3)
    theta = torch.zeros(P, dtype=torch.float64)
    lr = 1e-2

    def worst_change(before, after):  # max_i L_i(after) - L_i(before), L_i = 1/2 ||A_i theta - y_i||^2
        losses = [0.5 * ((torch.einsum("mkp,p->mk", problem.A, t) - problem.y) ** 2).sum(dim=1)
                  for t in (before, after)]
        return (losses[1] - losses[0]).max().item()

    first = {}
    for name, align in (("adam", NoAlignment()), ("gua", GUA())):
        after, _, records = run_chain(make_surgery("none"), Adam(lr=lr), align, problem, theta, 1,
                                      torch.Generator().manual_seed(0))
        assert records[0]["R_u"]  # the first proposal conflicts
        first[name] = worst_change(theta, after)
    assert first["gua"] < first["adam"] and first["adam"] > 0.1 and first["gua"] < 10 * lr
    _, _, records = run_chain(make_surgery("none"), Adam(lr=lr), NoAlignment(), problem, theta, 40,
                              torch.Generator().manual_seed(0))
    assert any(r["R_u"] for r in records)
    _, _, records = run_chain(make_surgery("none"), Adam(lr=lr), GUA(), problem, theta, 40,
                              torch.Generator().manual_seed(0))
    assert any(r["R_u"] for r in records) and not any(r["R_p"] for r in records)
    # the same-state comparison along the GUA chain
    opt, compared = Adam(lr=lr), 0
    state = opt.init(theta, SHAPES)
    for _ in range(40):
        G = problem.gradients(theta)
        u, tentative = opt.propose(G.sum(dim=0), state, params=theta)
        p, state = GUA().align(u, G, tentative, opt, params=theta)
        if conflicting(G, u):
            assert worst_change(theta, theta - lr * p) <= worst_change(theta, theta - lr * u)
            compared += 1
        theta = theta - lr * p
    assert compared >= 5


@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=lambda o: type(o).__name__)
def test_round_trip_then_k_steps_equals_k_steps(optimizer):
    problem = Quadratics(3, seed=2)
    surgery, align = make_surgery("mconfig"), GUA()
    theta0 = torch.zeros(P, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    theta, states, _ = run_chain(surgery, optimizer, align, problem, theta0, 7, gen)
    saved = (surgery.state_dict(states[0]), optimizer.state_dict(states[1]), align.state_dict())
    import io
    buffer = io.BytesIO()
    torch.save(saved, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    restored = (surgery.load_state_dict(loaded[0]), optimizer.load_state_dict(loaded[1]))
    assert align.load_state_dict(loaded[2]) is None
    gen_state = gen.get_state()
    theta_a, _, _ = run_chain(surgery, optimizer, align, problem, theta, 6, gen, states)
    gen.set_state(gen_state)
    theta_b, _, _ = run_chain(surgery, optimizer, align, problem, theta, 6, gen, restored)
    assert torch.equal(theta_a, theta_b)


@pytest.mark.parametrize("optimizer", [Adam(lr=1e-2), SOAP(lr=1e-2, precondition_frequency=3), RMSProp()],
                         ids=lambda o: type(o).__name__)
def test_chain_float32(optimizer):
    problem = Quadratics(3, seed=4, dtype=torch.float32)
    theta = torch.zeros(P, dtype=torch.float32)
    theta, _, records = run_chain(make_surgery("upgrad"), optimizer, GUA(), problem, theta, 20,
                                  torch.Generator().manual_seed(0))
    assert theta.dtype == torch.float32 and torch.isfinite(theta).all()
    assert not any(r["R_p"] for r in records) and not any(r["R_a"] for r in records)

"""The quasi-Newton methods (pinnspec/optim/_quasi_newton.py) against independent oracles.

L-BFGS: scipy's L-BFGS-B and torch.optim.LBFGS minimisers, a dense BFGS inverse-Hessian update, the strong
Wolfe conditions at accepted points.  The dense family (bfgs, ssbfgs, ssbroyden): each update against the
direct (Hessian) form of the self-scaled Broyden family inverted by torch.linalg.inv, the scalars against a hand
computation of Urban et al.'s formulas, the secant condition, scipy's BFGS minimiser, positive definiteness
along a run."""

import io
import math

import pytest
import torch

from pinnspec.optim._quasi_newton import BFGS, LBFGS, broyden_parameters, self_scaled_update

optimize = pytest.importorskip("scipy.optimize")


def logistic_problem(p=20, n=200, lam=0.1, dtype=torch.float64):
    """Strongly convex L2-regularised logistic regression; returns objective(w) -> (f [], g [p])."""
    gen = torch.Generator().manual_seed(1234)
    X = torch.randn(n, p, generator=gen, dtype=torch.float64).to(dtype)  # [n, p]
    labels = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0).to(dtype)  # [n]

    def objective(w):
        margin = labels * (X @ w)  # [n]
        f = torch.nn.functional.softplus(-margin).mean() + 0.5 * lam * (w @ w)  # []
        g = -X.T @ (labels * torch.sigmoid(-margin)) / n + lam * w  # [p]
        return f, g

    return objective


def rosenbrock(x):
    f = (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()  # []
    g = torch.zeros_like(x)  # [n]
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


def rosenbrock_start(n, dtype=torch.float64):
    return torch.tensor([-1.2, 1.0] * (n // 2), dtype=dtype)  # [n]


def run(opt, objective, x, steps, record=None):
    state = opt.init(objective, x)
    for _ in range(steps):
        step, new, info = opt.step(objective, x, state)
        if record is not None:
            record.append((x, state, step, info))
        x, state = x + step, new
        if info.converged:
            break
    return x, state


def test_convex_minimiser_matches_scipy_and_torch():
    objective = logistic_problem()
    x0 = torch.zeros(20, dtype=torch.float64)
    x, state = run(LBFGS(history=10, tolerance_grad=1e-10, tolerance_change=0.0), objective, x0, 200)
    assert state.grad.abs().max() <= 1e-10 and state.iteration < 50

    def fun(w):
        f, g = objective(torch.from_numpy(w))
        return f.item(), g.numpy()

    ref = optimize.minimize(fun, x0.numpy(), jac=True, method="L-BFGS-B",
                            options={"ftol": 0.0, "gtol": 1e-13, "maxiter": 1000, "maxcor": 10})
    assert ref.success and abs(ref.jac).max() < 1e-9  # scipy stops on its relative f reduction
    torch.testing.assert_close(x, torch.from_numpy(ref.x), rtol=0, atol=1e-7)

    w = x0.clone().requires_grad_(True)
    reference = torch.optim.LBFGS([w], lr=1, max_iter=100, max_eval=500, tolerance_grad=1e-13,
                                  tolerance_change=0.0, history_size=10, line_search_fn="strong_wolfe")

    def closure():
        reference.zero_grad()
        f, g = objective(w.detach())
        w.grad = g
        return f

    reference.step(closure)
    assert objective(w.detach())[1].abs().max() < 1e-10
    torch.testing.assert_close(x, w.detach(), rtol=0, atol=1e-9)


@pytest.mark.parametrize("n", [2, 10])
def test_rosenbrock_converges(n):
    x, state = run(LBFGS(history=10), rosenbrock, rosenbrock_start(n), 500)
    torch.testing.assert_close(x, torch.ones(n, dtype=torch.float64), rtol=0, atol=1e-6)
    ref = optimize.minimize(optimize.rosen, rosenbrock_start(n).numpy(), jac=optimize.rosen_der,
                            method="L-BFGS-B", options={"maxcor": 10, "gtol": 1e-10, "ftol": 0.0})
    assert ref.success and abs(ref.x - 1).max() < 1e-4
    assert state.iteration <= 3 * ref.nit, (state.iteration, ref.nit)


def test_accepted_steps_satisfy_strong_wolfe():
    opt = LBFGS(history=5)
    record = []
    run(opt, rosenbrock, rosenbrock_start(10), 500, record)
    assert len(record) > 20
    for x, state, step, info in record:
        f0, g0 = rosenbrock(x)  # independent re-evaluation at both ends
        f1, g1 = rosenbrock(x + step)
        slope = (g0 @ step).item()  # t g'd < 0
        assert info.t > 0 and slope < 0
        assert f1.item() <= f0.item() + opt.c1 * slope + 1e-12
        assert abs((g1 @ step).item()) <= opt.c2 * abs(slope) * (1 + 1e-9) + 1e-15


def test_two_loop_equals_dense_bfgs_inverse_hessian():
    n = 8
    gen = torch.Generator().manual_seed(7)
    M = torch.randn(n, n, generator=gen, dtype=torch.float64)  # [n, n]
    A = M @ M.T + 0.5 * torch.eye(n, dtype=torch.float64)  # [n, n] SPD
    b = torch.randn(n, generator=gen, dtype=torch.float64)  # [n]

    def quadratic(x):
        return 0.5 * x @ A @ x - b @ x, A @ x - b

    x, state = run(LBFGS(history=n + 2, tolerance_grad=0.0, tolerance_change=0.0), quadratic,
                   torch.zeros(n, dtype=torch.float64), 5)
    assert state.s.shape[0] == 5
    H = (state.s[-1] @ state.y[-1]) / (state.y[-1] @ state.y[-1]) * torch.eye(n, dtype=torch.float64)
    for s, y in zip(state.s, state.y):  # N&W eq. 6.17, oldest pair first
        rho = 1.0 / (y @ s)
        V = torch.eye(n, dtype=torch.float64) - rho * torch.outer(y, s)
        H = V.T @ H @ V + rho * torch.outer(s, s)
    # with line_search="none" and lr=1 (non-empty history) the step is exactly the direction d = -H g
    step, _, info = LBFGS(history=n + 2, line_search="none").step(quadratic, x, state)
    assert info.t == 1.0
    torch.testing.assert_close(step, -H @ state.grad, rtol=1e-10, atol=1e-12)


def test_state_dict_round_trip_is_bit_identical():
    opt = LBFGS(history=4)
    objective = logistic_problem()
    x0 = torch.zeros(20, dtype=torch.float64)
    straight, _ = run(opt, objective, x0, 10)

    x, state = run(opt, objective, x0, 5)
    assert state.iteration == 5 and state.s.shape[0] == 4
    buffer = io.BytesIO()
    torch.save(opt.state_dict(state), buffer)
    buffer.seek(0)
    state = opt.load_state_dict(torch.load(buffer, weights_only=True))
    for _ in range(5):
        step, state, info = opt.step(objective, x, state)
        x = x + step
    assert state.iteration == 10
    assert torch.equal(x, straight)


def test_fixed_step_without_line_search():
    objective = logistic_problem()
    opt = LBFGS(line_search="none", lr=0.5)
    x = torch.full((20,), 0.3, dtype=torch.float64)
    state = opt.init(objective, x)
    g = state.grad
    step, state1, info = opt.step(objective, x, state)
    assert info.evaluations == 1 and state1.evaluations == 2
    assert info.t == 0.5 * min(1.0, 1.0 / g.abs().sum().item())
    torch.testing.assert_close(step, -info.t * g, rtol=0, atol=0)
    x = x + step
    step_half, _, info = opt.step(objective, x, state1)
    step_one, _, _ = LBFGS(line_search="none", lr=1.0).step(objective, x, state1)
    assert info.t == 0.5
    torch.testing.assert_close(step_half, 0.5 * step_one, rtol=1e-15, atol=0)


def test_line_search_fallbacks_do_not_crash():
    quadratic = lambda x: (0.5 * x @ x, x)  # noqa: E731
    x = torch.full((5,), 10.0, dtype=torch.float64)
    # one evaluation: the trial t = 1/||g||_1 = 0.02 is Armijo but not curvature -> accepted anyway
    step, state, info = LBFGS(max_evals=1).step(quadratic, x, LBFGS().init(quadratic, x))
    assert info.t == 0.02 and info.evaluations == 1 and not info.converged
    torch.testing.assert_close(step, -0.02 * x)
    # a gradient with the wrong sign: no decrease anywhere along d -> zero step, history dropped
    wrong = lambda x: (0.5 * x @ x, -x)  # noqa: E731
    opt = LBFGS(max_evals=6)
    state = opt.init(wrong, x)
    step, new, info = opt.step(wrong, x, state)
    assert info.t == 0.0 and not info.converged and info.evaluations == 6
    assert torch.equal(step, torch.zeros_like(x)) and torch.equal(new.grad, state.grad)
    assert new.s.shape == (0, 5) and new.iteration == 1 and new.evaluations == 7


def test_float32():
    opt = LBFGS(history=10)
    x0 = rosenbrock_start(10, torch.float32)
    f0 = rosenbrock(x0)[0].item()
    x, state = run(opt, rosenbrock, x0, 60)
    assert x.dtype == torch.float32 and state.s.dtype == torch.float32 and state.loss.dtype == torch.float32
    assert math.isfinite(state.loss.item()) and state.loss.item() < 1e-3 * f0
    x, state = run(opt, logistic_problem(dtype=torch.float32), torch.zeros(20), 50)
    assert state.grad.abs().max() < 1e-4


# ---------------------------------------------------------------------------- the dense family

def _pair(p=12, seed=3):
    """A symmetric positive definite H [p, p], a gradient g, a step s = -t H g and a y with s'y > 0."""
    gen = torch.Generator().manual_seed(seed)
    M = torch.randn(p, p, generator=gen, dtype=torch.float64)
    H = M @ M.T / p + 0.3 * torch.eye(p, dtype=torch.float64)  # [p, p]
    g = torch.randn(p, generator=gen, dtype=torch.float64)  # [p]
    t = 0.7
    s = -t * H @ g  # [p]
    N = torch.randn(p, p, generator=gen, dtype=torch.float64)
    y = (N @ N.T / p + 0.5 * torch.eye(p, dtype=torch.float64)) @ s  # [p] y = A s, A SPD: s'y > 0
    return H, g, t, s, y


def test_broyden_parameters_match_a_hand_computation():
    """Urban, Stefanou & Pons (2025) eqs. 11, 13-23 evaluated by hand for b = 2, h = 3, p = 101."""
    b, h, p = 2.0, 3.0, 101
    assert broyden_parameters("bfgs", b, h, p) == (0.0, 1.0)
    assert broyden_parameters("ssbfgs", b, h, p) == (0.0, 0.5)  # tau = min(1, 1/b)
    a = b * h - 1  # 5
    rho_minus = min(1, h * (1 - math.sqrt(5 / 6)))  # 0.26139...
    theta_minus, theta_plus = (rho_minus - 1) / 5, 1 / rho_minus
    theta = max(theta_minus, min(theta_plus, (1 - b) / b))  # max(-0.1477, -0.5) = theta_minus
    assert theta == theta_minus and theta < 0
    sigma = 1 + a * theta
    tau = min(0.5 * sigma ** (-1 / 100), sigma)
    assert broyden_parameters("ssbroyden", b, h, p) == pytest.approx((theta, tau), rel=1e-15)
    # theta > 0: b < 1 makes (1 - b)/b positive; here b = 0.5, h = 4 (a = 1)
    theta, tau = broyden_parameters("ssbroyden", 0.5, 4.0, p)
    rho_minus = min(1, 4 * (1 - math.sqrt(0.5)))
    expect = max((rho_minus - 1) / 1, min(1 / rho_minus, 1.0))
    assert theta == pytest.approx(expect, rel=1e-15) and theta > 0
    assert tau == pytest.approx(min((1 + theta) ** (-1 / 100), 1 / theta), rel=1e-15)  # min(1, 1/b) = 1


@pytest.mark.parametrize("update", ["bfgs", "ssbfgs", "ssbroyden"])
def test_dense_update_is_the_inverse_of_the_direct_self_scaled_broyden_update(update):
    """H+ = inv(B+) with B+ = tau (B - B s s'B / s'Bs + theta s'Bs w w') + y y' / s'y, w = y/s'y - Bs/s'Bs
    (the direct form; B = inv(H)), and the secant condition H+ y = s."""
    H, g, t, s, y = _pair()
    new = self_scaled_update(H, s, y, t, g, update)
    B = torch.linalg.inv(H)
    Bs = B @ s
    sBs, sy = (s @ Bs).item(), (s @ y).item()
    theta, tau = broyden_parameters(update, sBs / sy, (y @ H @ y).item() / sy, s.numel())
    w = y / sy - Bs / sBs
    direct = tau * (B - torch.outer(Bs, Bs) / sBs + theta * sBs * torch.outer(w, w)) + torch.outer(y, y) / sy
    torch.testing.assert_close(new, torch.linalg.inv(direct), rtol=1e-9, atol=1e-11)
    torch.testing.assert_close(new @ y, s, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(new, new.T, rtol=0, atol=1e-15)
    assert torch.linalg.eigvalsh(new).min() > 0


def test_bfgs_update_is_nocedal_wright_6_17():
    H, g, t, s, y = _pair(seed=5)
    r = 1.0 / (s @ y)
    V = torch.eye(s.numel(), dtype=torch.float64) - r * torch.outer(y, s)
    torch.testing.assert_close(self_scaled_update(H, s, y, t, g, "bfgs"), V.T @ H @ V + r * torch.outer(s, s),
                               rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("update", ["bfgs", "ssbfgs", "ssbroyden"])
def test_dense_methods_find_scipys_bfgs_minimiser(update):
    objective = logistic_problem()

    def fun(w):
        f, g = objective(torch.from_numpy(w))
        return f.item(), g.numpy()

    ref = optimize.minimize(fun, torch.zeros(20, dtype=torch.float64).numpy(), jac=True, method="BFGS",
                            options={"gtol": 1e-12})
    x, state = run(BFGS(update=update, tolerance_grad=1e-8, tolerance_change=0.0), objective,
                   torch.zeros(20, dtype=torch.float64), 200)
    assert state.grad.abs().max() <= 1e-8 and state.iteration < 40, state.iteration
    torch.testing.assert_close(x, torch.from_numpy(ref.x), rtol=0, atol=1e-7)


@pytest.mark.parametrize("update", ["bfgs", "ssbfgs", "ssbroyden"])
def test_dense_methods_solve_rosenbrock_keeping_h_positive_definite(update):
    record = []
    x, state = run(BFGS(update=update, tolerance_change=0.0), rosenbrock, rosenbrock_start(10), 400, record)
    torch.testing.assert_close(x, torch.ones(10, dtype=torch.float64), rtol=0, atol=1e-8)
    for _, before, step, info in record[1:]:
        assert before.H.numel() == 0 or torch.linalg.eigvalsh(before.H).min() > 0
        assert info.t > 0 or info.converged


def test_dense_state_round_trip_and_restart_keep_h():
    opt = BFGS(update="ssbroyden")
    objective = logistic_problem()
    x0 = torch.zeros(20, dtype=torch.float64)
    straight, _ = run(opt, objective, x0, 8)
    x, state = run(opt, objective, x0, 4)
    buffer = io.BytesIO()
    torch.save(opt.state_dict(state), buffer)
    buffer.seek(0)
    loaded = opt.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(loaded.H, state.H) and loaded.iteration == 4
    for _ in range(4):
        step, loaded, _ = opt.step(objective, x, loaded)
        x = x + step
    assert torch.equal(x, straight)
    # a changed objective: f and g anew at x, the inverse Hessian kept, one more evaluation
    shifted = lambda w: (objective(w)[0] + 1.0, objective(w)[1])  # noqa: E731
    again = opt.restarted(shifted, x, loaded)
    assert torch.equal(again.H, loaded.H) and again.evaluations == loaded.evaluations + 1
    assert again.loss.item() == pytest.approx(loaded.loss.item() + 1.0, rel=1e-15)


def test_dense_update_name_is_checked():
    with pytest.raises(ValueError, match="update must be one of bfgs, ssbfgs, ssbroyden"):
        BFGS(update="sr1")

"""Fields of some coordinates only (pinnspec.models._field_groups, ``field a(x, y)``): each output equals its
group's network on its columns, is exactly constant along the other coordinates (value and derivatives), the
forward engine equals autograd, and a spec with such a field trains, is seeded and resumes bit for bit."""

from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.compiler import DerivativePlan
from pinnspec.forward import forward_values, supports
from pinnspec.models import fourier_mlp, mlp, modified_mlp
from pinnspec.models._field_groups import FieldGroups

F64 = torch.float64
ROOT = Path(__file__).resolve().parents[2]


def build(factory, seed=0):
    """Three inputs (x, y, t), three outputs: u(x, y, t) and w(x, y, t) in one network, a(x, y) in another;
    parameters moved off their initial values."""
    g = torch.Generator().manual_seed(seed)
    full = factory.build(3, 2, generator=g, dtype=F64)
    part = factory.build(2, 1, generator=g, dtype=F64)
    net = FieldGroups(3, 3, (((0, 1, 2), (0, 2), full), ((0, 1), (1,), part)))
    moved = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=moved, dtype=F64))
    return net


def points(n, seed=3):
    return torch.rand(n, 3, generator=torch.Generator().manual_seed(seed), dtype=F64) * 2 - 1


@pytest.mark.parametrize("factory", [mlp(width=10, depth=2), fourier_mlp(width=8, depth=2, features=4),
                                     modified_mlp(width=8, depth=2)], ids=["mlp", "fourier_mlp", "modified_mlp"])
def test_each_field_is_its_groups_network_on_its_columns(factory):
    net, x = build(factory), points(11)
    full, part = net.inners
    out = net(x)  # [N, 3]
    torch.testing.assert_close(out[:, [0, 2]], full(x), rtol=0, atol=0)
    torch.testing.assert_close(out[:, 1:2], part(x[:, :2]), rtol=0, atol=0)
    moved_t = x.clone()
    moved_t[:, 2] = -x[:, 2]
    assert torch.equal(net(moved_t)[:, 1], out[:, 1])  # a(x, y): the same at every t
    assert supports(net)


def test_forward_engine_equals_autograd_and_a_is_flat_in_t():
    net, x = build(mlp(width=10, depth=3)), points(9).requires_grad_(True)
    mis = [()] + [(i,) for i in range(3)] + [(i, j) for i in range(3) for j in range(i, 3)]
    plan = DerivativePlan.build({(f, mi) for f in range(3) for mi in mis}, ("u", "a", "w"), ("x", "y", "t"))
    expected = plan.evaluate(net(x), x)
    got = forward_values(net, plan, x)
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=1e-10, atol=1e-12, msg=str(key))
    for mi in [(2,), (0, 2), (1, 2), (2, 2)]:  # every derivative of a along t
        assert torch.count_nonzero(got[(1, mi)]) == 0 and torch.count_nonzero(expected[(1, mi)]) == 0
    assert torch.count_nonzero(got[(1, (0, 0))]) > 0


def test_bad_groups_are_refused():
    inner = mlp(width=4, depth=1).build(2, 1, generator=torch.Generator())
    with pytest.raises(ValueError, match="each of the 2 outputs once"):
        FieldGroups(3, 2, (((0, 1), (0,), inner),))
    with pytest.raises(ValueError, match="distinct and in 0..2"):
        FieldGroups(3, 1, (((0, 3), (0,), inner),))
    with pytest.raises(ValueError, match="not one of pinnspec's networks"):
        FieldGroups(2, 1, (((0, 1), (0,), torch.nn.Linear(2, 1)),))


KAPPA = """problem kappa
space x in [0, 1]
time  t in [0, 1]
field u, k(x)
equation pde: u_t = d(k*u_x, x) + f
let f = exp(-t)*sin(pi*x)*(pi^2*(1 + x) - 1) - pi*exp(-t)*cos(pi*x)
initial ic: u = sin(pi*x)
boundary walls on x = 0, x = 1: u = 0, k = 1 + x
data obs from "obs.csv": u
points pde 128, walls 16, ic 32
exact u = exp(-t)*sin(pi*x), k = 1 + x
test 200
validate 200 every 10
model mlp(width = 12, depth = 2)
optimizer adam(lr = 5e-3)
train epochs = 20, seed = 0, checkpoint_every = 10, device = cpu
"""


def _kappa(tmp_path):
    import numpy as np

    x, t = np.meshgrid(np.linspace(0.05, 0.95, 6), np.linspace(0, 1, 5))
    rows = "\n".join(f"{a:.17g},{b:.17g},{np.exp(-b) * np.sin(np.pi * a):.17g}" for a, b in zip(x.ravel(), t.ravel()))
    (tmp_path / "obs.csv").write_text("x,t,u\n" + rows + "\n")
    path = tmp_path / "kappa.pinn"
    path.write_text(KAPPA)
    return pinnspec.load(path)


def test_a_spec_with_a_field_of_x_only_trains_and_resumes_bit_for_bit(tmp_path):
    """u_t = (k u_x)_x + f with k(x) = 1 + x to recover; the model is FieldGroups, k does not move with t, the
    loss falls, and a run stopped at epoch 10 and resumed ends where the uninterrupted one does."""
    from pinnspec.engine import Trainer, load_run

    spec = _kappa(tmp_path)
    assert spec.ir.field_coordinates == (("k", ("x",)),)
    whole = Trainer(spec, str(tmp_path / "whole"))
    assert isinstance(whole.model, FieldGroups)
    result = whole.run()
    losses = [row["loss"] for row in whole.run_state.history]
    assert result.status == "completed" and losses[-1] < losses[0]
    x = torch.tensor([[0.3, 0.0], [0.3, 0.7]], dtype=whole.dtype)
    k = whole.model(x)[:, 1]
    assert k[0] == k[1]
    half = Trainer(spec, str(tmp_path / "half"))
    step = half.step

    def stepping(k):
        row = step(k)
        half._stop_requested = k + 1 == 10
        return row

    half.step = stepping
    assert half.run().status == "interrupted"
    resumed = load_run(str(tmp_path / "half"))
    assert resumed.run().status == "completed"
    assert resumed.run_state.history == whole.run_state.history
    for a, b in zip(whole.model.state_dict().values(), resumed.model.state_dict().values()):
        assert torch.equal(a, b)


def test_per_coordinate_fourier_scales_follow_each_groups_columns(tmp_path):
    """``fourier = (s_x, s_t)`` with ``field u, k(x)``: u's network draws B [features, 2] with (s_x, s_t), k's
    B [features, 1] with s_x; a tuple of the wrong length names the coordinates' count."""
    from pinnspec.engine import Trainer
    from pinnspec.lang import SpecError
    from pinnspec.lang._overrides import apply_overrides

    spec = _kappa(tmp_path)
    model = Trainer(apply_overrides(spec, {"model": "fourier_mlp(width = 8, depth = 1, features = 2000, "
                                                    "fourier = (6, 0.5))"})).model
    u_net, k_net = model.inners
    b_u, b_k = u_net.embedding.frequencies, k_net.embedding.frequencies  # [2000, 2], [2000, 1]
    assert b_u.shape == (2000, 2) and b_k.shape == (2000, 1)
    assert float(b_u[:, 0].std()) == pytest.approx(6.0, rel=0.06)
    assert float(b_u[:, 1].std()) == pytest.approx(0.5, rel=0.06)
    assert float(b_k[:, 0].std()) == pytest.approx(6.0, rel=0.06)
    with pytest.raises(SpecError, match=r"fourier gives 3 scales, but the network reads 2 inputs \(x, t\)"):
        apply_overrides(spec, {"model": "fourier_mlp(fourier = (6, 0.5, 1))"})
    with pytest.raises(ValueError, match=r"gives 3 scales for 2 coordinates"):  # the same check from Python
        fourier_mlp(fourier=(6, 0.5, 1)).on_columns((0,), 2)

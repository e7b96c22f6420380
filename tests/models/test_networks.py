"""The networks beyond the plain MLP (docs/networks.md): input derivatives against finite differences, the
forward engine against autograd, seeding, the papers' initial-state properties, and short trainings.

Everything in float64 unless stated."""

import itertools
from pathlib import Path

import pytest
import torch
from torch import nn

import pinnspec
from pinnspec.compiler import DerivativePlan, LinearOperator
from pinnspec.forward import forward_values, supports
from pinnspec.lang._overrides import apply_overrides
from pinnspec.models import (MLP, AdaptiveSlopeMLP, FactorizedLinear, FourierMLP, ModifiedMLP, PirateNet,
                             adaptive_mlp, fourier_mlp, mlp, modified_mlp, pirate_net)

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "engine" / "data" / "tiny.pinn"
F64 = torch.float64

#: name -> a small setting of each network (every option that changes the map switched on somewhere)
NETWORKS = {
    "fourier_mlp": fourier_mlp(width=12, depth=2, features=6, fourier=1.5),
    "fourier_mlp_per_input": fourier_mlp(width=12, depth=2, features=6, fourier=(3.0, 0.5)),
    "fourier_mlp_rwf_trainable": fourier_mlp(width=12, depth=2, features=5, trainable_fourier="true", rwf="true"),
    "rwf_mlp": fourier_mlp(width=12, depth=3, fourier=0, rwf=True, activation="sin"),
    "modified_mlp": modified_mlp(width=12, depth=3),
    "modified_mlp_fourier_rwf": modified_mlp(width=12, depth=2, fourier=1.0, features=5, rwf="true", activation="gelu"),
    "pirate_net": pirate_net(width=12, blocks=2, features=6),
    "pirate_net_plain": pirate_net(width=10, blocks=1, fourier=0, rwf="false", activation="silu"),
    "laaf": adaptive_mlp(width=12, depth=3, slope="layer"),
    "n_laaf": adaptive_mlp(width=12, depth=2, slope="neuron", scale=5),
    "gaaf": adaptive_mlp(width=12, depth=2, slope="global", activation="sin"),
}


def build(name, d=2, n_out=2, seed=0, dtype=F64, perturb=True):
    """The network, with every trainable parameter moved off its initial value (alpha = 0 in PirateNet
    and a = 1/n would hide terms of the derivatives)."""
    model = NETWORKS[name].build(d, n_out, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    if perturb:
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.2 * torch.randn(p.shape, generator=g, dtype=dtype))
    return model


def points(n, d, seed=3):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g, dtype=F64) * 2 - 1


def input_derivatives(model, x):
    """u [N, F], du/dx_i [N, F, d], d2u/dx_i dx_j [N, F, d, d] by autograd."""
    x = x.clone().requires_grad_(True)
    u = model(x)
    first = torch.stack([torch.autograd.grad(u[:, f].sum(), x, create_graph=True)[0] for f in range(u.shape[1])], 1)
    second = torch.stack([torch.stack([torch.autograd.grad(first[:, f, i].sum(), x, retain_graph=True)[0]
                                       for i in range(x.shape[1])], 1) for f in range(u.shape[1])], 1)
    return u.detach(), first.detach(), second


@pytest.mark.parametrize("name", NETWORKS)
def test_input_derivatives_match_finite_differences(name):
    model, x = build(name), points(7, 2)
    u, first, second = input_derivatives(model, x)
    h = 1e-3
    with torch.no_grad():
        for i in range(2):
            e = torch.zeros(2, dtype=F64)
            e[i] = h
            f2, f1, f_1, f_2 = model(x + 2 * e), model(x + e), model(x - e), model(x - 2 * e)
            fd1 = (8 * (f1 - f_1) - (f2 - f_2)) / (12 * h)  # fourth-order central differences
            torch.testing.assert_close(first[:, :, i], fd1, rtol=1e-6, atol=1e-7)
            fd2 = (16 * (f1 + f_1) - (f2 + f_2) - 30 * u) / (12 * h * h)
            torch.testing.assert_close(second[:, :, i, i], fd2, rtol=1e-5, atol=1e-6)
        h = 1e-4
        e0, e1 = torch.tensor([h, 0], dtype=F64), torch.tensor([0, h], dtype=F64)
        mixed = (model(x + e0 + e1) - model(x + e0 - e1) - model(x - e0 + e1) + model(x - e0 - e1)) / (4 * h * h)
        torch.testing.assert_close(second[:, :, 0, 1], mixed, rtol=1e-4, atol=1e-4)


def all_needs(d, n_fields, max_order):
    return {(f, mi) for f in range(n_fields) for k in range(max_order + 1)
            for mi in itertools.combinations_with_replacement(range(d), k)}


def weighted_loss(values):
    return sum((1 + 0.1 * i) * (v.square().mean() + 0.5 * v.mean()) for i, v in enumerate(values.values()))


@pytest.mark.parametrize("name", NETWORKS)
def test_forward_engine_equals_autograd(name):
    """Every derivative up to order 3 in two coordinates and a linear operator (u_t - 0.1 u_xx), and the
    parameter gradient of a loss of all of them."""
    model, x = build(name), points(9, 2).requires_grad_(True)
    assert supports(model)
    operator = LinearOperator((((1,), 1.0), ((0, 0), -0.1)))
    needs = all_needs(2, 2, 3) | {(0, operator)}
    plan = DerivativePlan.build(needs, ("u", "v"), ("x", "t"))
    expected = plan.evaluate(model(x), x)
    got = forward_values(model, plan, x)
    assert list(got) == list(expected)
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=1e-10, atol=1e-12, msg=str(key))
    params = list(model.parameters())
    g_auto = torch.autograd.grad(weighted_loss(expected), params)
    g_forward = torch.autograd.grad(weighted_loss(forward_values(model, plan, x)), params)
    for a, b in zip(g_forward, g_auto):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def test_each_name_builds_its_network():
    expected = {"fourier": FourierMLP, "rwf": FourierMLP, "modified": ModifiedMLP, "pirate": PirateNet,
                "laaf": AdaptiveSlopeMLP, "n_laaf": AdaptiveSlopeMLP, "gaaf": AdaptiveSlopeMLP}
    for name in NETWORKS:
        assert type(build(name, perturb=False)) is next(v for k, v in expected.items() if name.startswith(k))


@pytest.mark.parametrize("name", NETWORKS)
def test_same_seed_same_parameters(name):
    a, b = build(name, perturb=False), build(name, perturb=False)
    c = build(name, seed=1, perturb=False)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    assert any(not torch.equal(va, vc) for va, vc in zip(a.state_dict().values(), c.state_dict().values()))


def test_default_mlp_is_the_network_of_before():
    """``mlp`` with its defaults draws the very network it drew before the other networks existed."""
    def old_way(seed, dtype):
        generator = torch.Generator().manual_seed(seed)
        model = MLP(2, 1, 50, 5, "tanh").to(dtype)
        with torch.no_grad():
            for layer in model.layers:
                nn.init.xavier_normal_(layer.weight, generator=generator)
                nn.init.zeros_(layer.bias)
        return model

    for dtype in (torch.float32, F64):
        new = mlp().build(2, 1, generator=torch.Generator().manual_seed(0), dtype=dtype)
        assert type(new) is MLP
        old = old_way(0, dtype)
        for (k_new, v_new), (k_old, v_old) in zip(new.state_dict().items(), old.state_dict().items()):
            assert k_new == k_old and torch.equal(v_new, v_old)
    first = mlp().build(2, 1, generator=torch.Generator().manual_seed(0)).layers[0].weight
    # four values of the seed-0 float32 network, read before this change
    assert first[0, :2].tolist() + first[1, :2].tolist() == FIRST_WEIGHTS


#: layers[0].weight[0, :2] and [1, :2] of ``mlp()`` for seed 0, float32, printed at commit 7f910dd (before this change)
FIRST_WEIGHTS = [-0.22079534828662872, -0.22599643468856812, -0.0491425022482872, -0.08509063720703125]


def test_pirate_net_at_initialisation_is_its_embedding_map():
    """alpha = 0 in every block: u = W gamma(x) + b exactly (the paper's identity at initialisation)."""
    model = pirate_net(width=16, blocks=3, features=8).build(2, 3, generator=torch.Generator().manual_seed(0),
                                                              dtype=F64)
    x = points(11, 2)
    with torch.no_grad():
        bx = x @ model.embedding.frequencies.t()  # [N, features]
        embedded = torch.cat([torch.cos(bx), torch.sin(bx)], 1)  # [N, 2 features]
        assert torch.equal(model(x), nn.functional.linear(embedded, model.output.weight, model.output.bias))
    assert all(float(block.alpha.detach()) == 0 for block in model.blocks)
    assert isinstance(model.output, FactorizedLinear)  # RWF on by default, as in the paper


def test_adaptive_slopes_start_as_the_plain_activation():
    """a = 1/n: n a = 1, so each adaptive network is the plain MLP with the same seed."""
    x = points(13, 2)
    for slope, scale in (("layer", 10.0), ("neuron", 5.0), ("global", 20.0)):
        model = adaptive_mlp(width=12, depth=3, slope=slope, scale=scale).build(
            2, 1, generator=torch.Generator().manual_seed(0), dtype=F64)
        plain = mlp(width=12, depth=3).build(2, 1, generator=torch.Generator().manual_seed(0), dtype=F64)
        assert torch.equal(model(x), plain(x))
        assert all(torch.all(a * scale == 1) for a in model.slopes)
    sizes = {slope: [tuple(a.shape) for a in adaptive_mlp(width=12, depth=3, slope=slope).build(
        2, 1, generator=torch.Generator().manual_seed(0)).slopes] for slope in ("global", "layer", "neuron")}
    assert sizes == {"global": [()], "layer": [(), (), ()], "neuron": [(12,), (12,), (12,)]}


def test_fourier_features_shape_and_trainable_toggle():
    fixed = fourier_mlp(width=10, depth=2, features=7, fourier=2.0).build(3, 1, generator=torch.Generator())
    trained = fourier_mlp(width=10, depth=2, features=7, trainable_fourier="true").build(3, 1,
                                                                                       generator=torch.Generator())
    x = torch.rand(5, 3)
    assert fixed.embedding.compute(pinnspec.models._layers.TENSOR_OPS, x).shape == (5, 14)
    assert fixed.embedding.frequencies.shape == (7, 3) and fixed.layers[0].weight.shape == (10, 14)
    assert not fixed.embedding.frequencies.requires_grad
    assert "embedding.frequencies" in fixed.state_dict()  # a buffer: saved with the model
    assert "embedding.frequencies" not in dict(fixed.named_parameters())
    assert trained.embedding.frequencies.requires_grad
    assert "embedding.frequencies" in dict(trained.named_parameters())
    big = fourier_mlp(features=4000, fourier=2.0).build(1, 1, generator=torch.Generator().manual_seed(0))
    assert float(big.embedding.frequencies.std()) == pytest.approx(2.0, rel=0.05)  # B ~ N(0, sigma^2)


def test_per_input_fourier_scales_draw_each_column_with_its_own_sigma():
    """``fourier = (s_1, ..., s_d)``: column j of B ~ N(0, s_j^2); a zero scale leaves that input out of the
    embedding; the number of scales must be the number of inputs."""
    model = fourier_mlp(features=4000, fourier=(8.0, 1.0, 0.0)).build(3, 1, generator=torch.Generator().manual_seed(0))
    b = model.embedding.frequencies  # [features, 3]
    assert float(b[:, 0].std()) == pytest.approx(8.0, rel=0.05)
    assert float(b[:, 1].std()) == pytest.approx(1.0, rel=0.05)
    assert torch.all(b[:, 2] == 0)
    same = fourier_mlp(features=4000, fourier=(8.0, 1.0, 0.0)).build(3, 1, generator=torch.Generator().manual_seed(0))
    assert torch.equal(same.embedding.frequencies, b)
    with pytest.raises(ValueError, match=r"gives 2 scales, but the network reads 3 inputs"):
        fourier_mlp(fourier=(8.0, 1.0)).build(3, 1, generator=torch.Generator())
    with pytest.raises(ValueError, match="fourier must be >= 0"):
        fourier_mlp(fourier=(8.0, -1.0))
    with pytest.raises(ValueError, match="embeds nothing"):
        fourier_mlp(fourier=(0, 0))
    with pytest.raises(ValueError, match="a number or a tuple of numbers"):
        fourier_mlp(fourier=(1.0, "x"))


def test_random_weight_factorization_starts_at_the_plain_draw():
    """W = diag(exp(s)) V equals the Xavier draw at initialisation; s ~ N(mu, sigma)."""
    model = fourier_mlp(width=400, depth=2, fourier=0, rwf=True).build(2, 1, generator=torch.Generator())
    layer = model.layers[1]
    log_scale = layer.log_scale.detach()
    assert isinstance(layer, FactorizedLinear) and {n for n, _ in layer.named_parameters()} == {
        "log_scale", "direction", "bias"}
    assert float(log_scale.mean()) == pytest.approx(1.0, abs=0.03)
    assert float(log_scale.std()) == pytest.approx(0.1, rel=0.15)
    std = float(layer.weight.detach().std())
    assert std == pytest.approx((2 / 800) ** 0.5, rel=0.05)  # Xavier-normal of [400, 400]
    # the first layer's W0 is the plain network's first draw (s is drawn after it): W = diag(e^s) e^-s W0
    factorized = fourier_mlp(width=8, depth=2, fourier=0, rwf=True).build(2, 1, generator=torch.Generator().manual_seed(0))
    plain = mlp(width=8, depth=2).build(2, 1, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(factorized.layers[0].weight.detach(), plain.layers[0].weight.detach(), rtol=1e-6, atol=0)


def test_bad_settings_are_refused_with_their_name():
    with pytest.raises(ValueError, match="rwf must be true or false"):
        fourier_mlp(rwf="yes please")
    with pytest.raises(ValueError, match="unknown slope"):
        adaptive_mlp(slope="cell")
    with pytest.raises(ValueError, match="unknown activation"):
        modified_mlp(activation="relu")


def _spec(model, **settings):
    spec = pinnspec.load(TINY)
    return apply_overrides(spec, {"device": "cpu", "model": model, "epochs": 50, "validate": "50 every 50",
                                  **settings})


SPEC_MODELS = {
    "fourier_mlp": "fourier_mlp(width = 16, depth = 2, features = 8, rwf = true)",
    "modified_mlp": "modified_mlp(width = 16, depth = 2)",
    "pirate_net": "pirate_net(width = 16, blocks = 1, features = 8)",
    "adaptive_mlp": "adaptive_mlp(width = 16, depth = 2, slope = neuron)",
}


@pytest.mark.parametrize("name", SPEC_MODELS)
def test_fifty_epochs_of_a_small_spec_lower_the_loss(name):
    from pinnspec.engine import Trainer

    trainer = Trainer(_spec(SPEC_MODELS[name], engine="forward"))
    assert supports(trainer.model) and trainer.plan.notes == ()
    result = trainer.run()
    losses = [row["loss"] for row in trainer.run_state.history if "loss" in row]
    assert result.status == "completed" and len(losses) == 50
    assert losses[-1] < 0.5 * losses[0]


def test_the_spec_checker_knows_the_networks():
    spec = pinnspec.load(TINY)
    for call in SPEC_MODELS.values():
        assert apply_overrides(spec, {"model": call}).ir.training.model.name == call.split("(")[0]
    with pytest.raises(Exception, match="slope"):
        apply_overrides(spec, {"model": "adaptive_mlp(slope = cells)"})


def test_compiled_losses_and_gradients_equal_the_eager_ones():
    """``compile = on`` takes the forward engine through the network's jets: the compiled losses and G
    are the eager ones.  PirateNet has every operation (embedding, RWF, gates, the alpha scale); one
    compile takes about a minute on the 2-core CPU, so the other networks were checked the same way by
    hand (modified_mlp, adaptive_mlp: equal to rtol 1e-10)."""
    name = "pirate_net"
    from pinnspec.engine import Trainer, loss_gradients

    trainer = Trainer(_spec(SPEC_MODELS[name], compile="on", engine="forward", dtype="float64"))
    assert trainer.plan.notes == () and trainer.plan.mode == "default"
    points = trainer.points.at(0)
    eager = trainer.problem.losses(trainer.model, points, trainer.params, trainer.grouping.name, engine="forward")
    eager_G = loss_gradients(eager.task_list, trainer.theta)
    compiled, compiled_G = trainer.execution.compiled_losses().losses_and_gradients(
        points, trainer.params, trainer.grouping.name, trainer.theta_flat())
    torch.testing.assert_close(compiled.tasks, eager.tasks, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(compiled_G, eager_G, rtol=1e-8, atol=1e-12)

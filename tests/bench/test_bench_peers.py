"""`pinnspec bench peers`: DeepXDE's Burgers example in DeepXDE, in plain torch by hand and in pinnspec, each run in
a fresh interpreter with one thread; the summary's arithmetic on made-up records, the hand-written derivatives
against nested autograd, and a short run of every contender."""

import importlib.util

import pytest

from pinnspec.bench import _peers
from pinnspec.lang import loads


def test_the_spec_is_deepxdes_problem():
    spec = loads(_peers.SPEC, filename="peers.pinn")
    p = spec.ir
    assert [c.name for c in p.coordinates] == ["x", "t"] and float(p.time.hi) == 0.99
    (pool, walls, ic) = p.grouping("deepxde").tasks  # DeepXDE's loss: the PDE over every training point
    assert {c for _, atom in pool.terms for c in atom.conditions} == {"burgers", "burgerswalls", "burgersic"}
    counts = {tuple(s.conditions): s.count for s in _points(spec)}  # the PDE restated on the walls' and ic's points
    assert counts == {("burgers",): 2540, ("walls", "burgerswalls"): 80, ("ic", "burgersic"): 160}
    assert str(p.training.model) == "mlp(width = 20, depth = 3, activation = tanh, init = xavier)"


def _points(spec):
    from pinnspec.compiler import compile_spec

    return compile_spec(spec).point_plan.sets


def test_the_summary_takes_medians_and_ratios_to_deepxde():
    runs = [{"contender": c, "seed": seed, "ms_per_iteration": ms, "loop_s": ms * 5, "rel_l2": e, "execution": c,
             "setup_s": 1.0}
            for c, seed, ms, e in [("deepxde", 0, 5.0, 0.1), ("deepxde", 1, 7.0, 0.3), ("deepxde", 2, 6.0, 0.2),
                                   ("pinnspec eager", 0, 3.0, 0.2), ("pinnspec eager", 1, 4.0, 0.1),
                                   ("pinnspec eager", 2, 9.0, 0.3)]]
    rows = {r["contender"]: r for r in _peers.summarize(runs, ["deepxde", "pinnspec eager"])}
    assert rows["deepxde"]["ms_per_iteration"] == 6.0 and rows["deepxde"]["ratio_ms"] == 1.0
    assert rows["pinnspec eager"]["ratio_ms"] == pytest.approx(4.0 / 6.0)
    assert rows["pinnspec eager"]["ratio_ms_paired"] == pytest.approx(0.6)  # median of 3/5, 4/7, 9/6
    assert rows["pinnspec eager"]["ratio_loop"] == pytest.approx(20.0 / 30.0)
    assert rows["pinnspec eager"]["total_s"] == 21.0 and rows["pinnspec eager"]["ratio_total"] == pytest.approx(21 / 31)
    assert rows["pinnspec eager"]["rel_l2_mean"] == pytest.approx(0.2) and rows["pinnspec eager"]["seeds"] == 3
    assert rows["pinnspec eager"]["ratio_hand_paired"] is None  # no hand-written run
    alone = _peers.summarize(runs[3:], ["pinnspec eager"])[0]
    assert alone["ratio_ms"] is None and alone["ratio_ms_paired"] is None and "| - |" in _peers.markdown([alone], 10, 3)


def test_the_summary_pairs_each_run_with_the_hand_written_step_of_its_seed():
    runs = [{"contender": c, "seed": seed, "ms_per_iteration": ms, "loop_s": ms * 5, "rel_l2": 0.1, "execution": c,
             "setup_s": 1.0}
            for c, seed, ms in [("torch by hand", 0, 4.0), ("torch by hand", 1, 5.0), ("torch by hand", 2, 3.0),
                                ("pinnspec eager", 0, 5.0), ("pinnspec eager", 1, 5.5), ("pinnspec eager", 2, 4.5)]]
    rows = {r["contender"]: r for r in _peers.summarize(runs, ["torch by hand", "pinnspec eager"])}
    assert rows["torch by hand"]["ratio_hand_paired"] == 1.0
    assert rows["pinnspec eager"]["ratio_hand_paired"] == pytest.approx(1.25)  # median of 5/4, 5.5/5, 4.5/3
    assert rows["pinnspec eager"]["ratio_ms"] is None  # no DeepXDE run
    assert "| 1.25x |" in _peers.markdown(list(rows.values()), 10, 3)


@pytest.mark.skipif(importlib.util.find_spec("deepxde") is None or importlib.util.find_spec("pina") is None,
                    reason="DeepXDE and PINA (the peers extra) are not installed")
def test_a_short_run_of_every_peer(tmp_path, capsys):
    assert _peers.main(["--iterations", "30", "--seeds", "1", "--out", str(tmp_path),
                        "--contenders", "deepxde,pina,pinnspec eager"]) == 0
    out = capsys.readouterr().out
    assert "| deepxde |" in out and "| pina |" in out and "| pinnspec eager |" in out and "1.00x" in out
    assert (tmp_path / "peers.md").is_file() and (tmp_path / "peers.csv").is_file()


def test_the_hand_written_derivatives_equal_nested_autograd():
    import torch

    model = _peers.BurgersByHand(seed=1)
    x = model.x[::37].clone().requires_grad_()  # domain, wall and initial points
    u, ux, Lu = model.derivatives(x)
    v = torch.as_tensor(model.predict(x.detach()), dtype=torch.float32)  # the plain forward pass, no derivatives
    h = x
    for w, b in model.layers[:-1]:
        h = torch.tanh(torch.nn.functional.linear(h, w, b))
    nested = torch.nn.functional.linear(h, *model.layers[-1])
    (g,) = torch.autograd.grad(nested.sum(), x, create_graph=True)  # [N, 2]: u_x, u_t
    (gx,) = torch.autograd.grad(g[:, 0].sum(), x)
    assert torch.equal(u.detach(), v)
    for mine, oracle in ((ux, g[:, :1]), (Lu, g[:, 1:] - _peers.NU * gx[:, :1])):  # u_x; u_t - nu u_xx
        assert torch.allclose(mine, oracle, rtol=1e-5, atol=1e-6)


def test_the_hand_written_points_are_deepxdes_counts_on_their_parts():
    x = _peers.BurgersByHand(seed=0).x.numpy()
    domain, walls, initial = x[:2540], x[2540:2620], x[2620:]
    assert x.shape == (2780, 2) and len({tuple(p) for p in x}) == 2780
    assert (abs(domain[:, 0]) <= 1).all() and (domain[:, 1] >= 0).all() and (domain[:, 1] < 0.99).all()
    assert sorted(set(walls[:, 0])) == [-1.0, 1.0] and (walls[:, 0] == -1).sum() == 40
    assert (initial[:, 1] == 0).all() and (abs(initial[:, 0]) <= 1).all()
    assert _peers.radical_inverse(7).tolist() == [0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875]
    assert _peers.hammersley(3).tolist() == [[0.25, 0.5], [0.5, 0.25], [0.75, 0.75]]


def test_a_short_run_by_hand(tmp_path, capsys):
    assert _peers.main(["--iterations", "30", "--seeds", "1", "--out", str(tmp_path),
                        "--contenders", "torch by hand"]) == 0
    out = capsys.readouterr().out
    assert "| torch by hand |" in out and "plain torch, the same arithmetic" in out and "| - |" in out


def test_an_unknown_contender_is_a_usage_error(capsys):
    assert _peers.main(["--contenders", "dexde"]) == 1
    assert "unknown contender dexde" in capsys.readouterr().err


def test_pina_is_left_out_of_the_default_set_where_it_is_not_installed(capsys):
    without_pina = lambda module: module != "pina"  # noqa: E731
    assert _peers.select(None, without_pina) == [c for c in _peers.CONTENDERS if c != "pina"]
    assert "torch by hand" in _peers.select(None, lambda module: False if module == "pina" else True)
    assert "PINA is not installed" in capsys.readouterr().out
    assert _peers.select("deepxde,pinnspec eager", without_pina) == ["deepxde", "pinnspec eager"]
    with pytest.raises(_peers.BenchError, match="^pina is not installed: pip install 'pinnspec\\[peers\\]'"):
        _peers.select("pina", without_pina)
    with pytest.raises(_peers.BenchError, match="^deepxde is not installed"):
        _peers.select(None, lambda module: False)


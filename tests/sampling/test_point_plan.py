"""PointPlan: shared sets, reproducible draws, resampling blocks, real specs."""

from pathlib import Path

import numpy as np
import pytest

import pinnspec
from pinnspec.sampling import PointPlan

ROOT = Path(__file__).resolve().parents[2]

HEAD = """
problem p
space x in [0, 2], y in [0, 1]
time t in [0, 1]
field u, v
equation a: u_t - u_xx = 0
equation b: v_t - v_yy = 0
equation c: u_x + v_y = 0
initial ic: u = 0, v = 0
boundary left on x = 0: u = 0
boundary right on x = 2: u = 0
boundary tb on y = 0, y = 1: v = 0
"""


def plan_of(text, base_dir=None):
    return PointPlan(pinnspec.loads(text, base_dir=base_dir).ir)


def same(a, b):
    return len(a) == len(b) and all(
        np.array_equal(p.x, q.x) and p.face_slices == q.face_slices
        and (p.partner is None) == (q.partner is None)
        and (p.partner is None or np.array_equal(p.partner, q.partner)) for p, q in zip(a, b))


def test_equal_region_and_count_share_one_set_different_counts_do_not():
    plan = plan_of(HEAD + "points a 300, b 300, c 200, ic 50, left 40, right 40, tb 40\n")
    assert [s.conditions for s in plan.sets] == [("a", "b"), ("c",), ("ic",), ("left",), ("right",), ("tb",)]
    assert [s.index for s in plan.sets] == list(range(6))
    assert plan.set_index("b") == plan.set_index("a") == 0 and plan.set_index("c") == 1
    sets = plan.sample(0, 0)
    assert [len(s) for s in sets] == [300, 200, 50, 40, 40, 40]
    # same count, different faces: separate sets, different points
    assert np.all(sets[3].x[:, 0] == 0) and np.all(sets[4].x[:, 0] == 2)
    with pytest.raises(KeyError):
        plan.set_index("nope")


@pytest.mark.parametrize("sampler", ["lhs", "uniform", "sobol", "halton", "grid"])
def test_pure_in_seed_and_epoch(sampler):
    plan = plan_of(HEAD + f"points a 64, b 64, c 64, ic 16, left 16, right 16, tb 16\nsampler {sampler}\n")
    first = plan.sample(3, 5)
    assert same(first, plan.sample(3, 5))
    assert same(first, PointPlan(plan.problem).sample(3, 5))  # a fresh plan (a resumed run)
    assert same(plan.sample(3, 5), first)  # no hidden state advanced by sampling
    other_epoch, other_seed = plan.sample(3, 6), plan.sample(4, 5)
    if sampler == "grid":
        assert same(first, other_epoch)
    else:
        for s in (other_epoch, other_seed):
            assert not any(np.array_equal(p.x, q.x) for p, q in zip(first, s))
    # sets of one draw are independent streams: two sets of equal shape differ
    if sampler != "grid":
        assert not np.array_equal(first[3].x[:, 1:], first[4].x[:, 1:])


def test_resample_every_ten_and_never():
    plan = plan_of(HEAD + "points a 32, b 32, c 32, ic 8, left 8, right 8, tb 8\nresample every 10\n")
    assert plan.resample_every == 10
    draws = [plan.sample(1, e) for e in range(21)]
    assert all(same(draws[0], d) for d in draws[1:10])
    assert all(same(draws[10], d) for d in draws[11:20])
    assert not same(draws[0], draws[10]) and not same(draws[10], draws[20])
    assert [plan.block(e) for e in (0, 9, 10, 19, 20)] == [0, 0, 1, 1, 2]
    never = plan_of(HEAD + "points a 32, b 32, c 32\nresample never\n")
    assert never.resample_every is None and never.block(10 ** 6) == 0
    assert same(never.sample(1, 0), never.sample(1, 12345))


def test_bad_seed_or_epoch():
    plan = plan_of(HEAD)
    with pytest.raises(ValueError, match="seed"):
        plan.sample(-1, 0)
    with pytest.raises(ValueError, match="epoch"):
        plan.sample(0, -2)


def test_periodic_and_data_sets(tmp_path):
    rows = np.array([[0.1, 0.2, 1.0], [0.3, 0.4, 2.0], [0.5, 0.6, 3.0]])
    np.savetxt(tmp_path / "obs.csv", rows, delimiter=",", header="x,t,u", comments="")
    np.savez(tmp_path / "more.npz", t=rows[:, 1], x=rows[:, 0], u=-rows[:, 2])
    text = """
problem q
space x in [0, 1]
time t in [0, 1]
field u
equation pde: u_t + u_x = 0
periodic pbc on x: u
data obs from "obs.csv": u
data more from "more.npz": u
data again from "obs.csv": u
points pde 100, pbc 20
"""
    plan = plan_of(text, base_dir=str(tmp_path))
    assert [s.conditions for s in plan.sets] == [("pde",), ("pbc",), ("obs",), ("more",), ("again",)]
    assert [s.count for s in plan.sets] == [100, 20, None, None, None]
    assert [s.is_data for s in plan.sets] == [False, False, True, True, True]
    sets = plan.sample(0, 0)
    pbc = sets[1]
    assert np.all(pbc.x[:, 0] == 0) and np.all(pbc.partner[:, 0] == 1)
    np.testing.assert_array_equal(pbc.x[:, 1], pbc.partner[:, 1])
    np.testing.assert_array_equal(sets[2].x, rows[:, :2])
    np.testing.assert_array_equal(sets[2].observed, rows[:, 2:])
    np.testing.assert_array_equal(sets[3].observed, -rows[:, 2:])
    # data rows are the same every epoch, and a caller writing to them changes nothing
    sets[2].x[:] = 0
    later = plan.sample(0, 7)
    np.testing.assert_array_equal(later[2].x, rows[:, :2])
    # the file is read once
    (tmp_path / "obs.csv").write_text("x,t,u\n9,9,9\n")
    np.testing.assert_array_equal(plan.sample(0, 8)[2].x, rows[:, :2])


def test_burgers_spec():
    problem = pinnspec.load(ROOT / "specs/burgers.pinn").ir
    plan = PointPlan(problem)
    assert [(type(s.region).__name__, s.count, s.conditions) for s in plan.sets] == [
        ("Interior", 10000, ("burgers",)), ("InitialSlice", 250, ("ic",)), ("FaceRegion", 250, ("walls",))]
    interior, ic, walls = plan.sample(0, 0)
    assert interior.x.shape == (10000, 2)
    assert np.all((interior.x[:, 0] >= -1) & (interior.x[:, 0] <= 1))
    assert np.all((interior.x[:, 1] >= 0) & (interior.x[:, 1] <= 1))
    assert np.all(ic.x[:, 1] == 0)
    assert walls.face_slices == (slice(0, 125), slice(125, 250))
    assert np.all(walls.x[:125, 0] == -1) and np.all(walls.x[125:, 0] == 1)
    assert not np.array_equal(plan.sample(0, 1)[0].x, interior.x)  # resample every 1


def test_kovasznay_spec_three_equations_share_one_interior_set():
    problem = pinnspec.load(ROOT / "specs/kovasznay.pinn").ir
    plan = PointPlan(problem)
    assert [s.conditions for s in plan.sets] == [("momx", "momy", "cont"), ("bc",)]
    interior, bc = plan.sample(0, 0)
    assert interior.x.shape == (20000, 2) and bc.x.shape == (1000, 2)
    assert [s.stop - s.start for s in bc.face_slices] == [286, 286, 214, 214]


def test_every_shipped_spec_and_example_plans_and_samples():
    files = sorted(ROOT.glob("specs/*.pinn")) + sorted(ROOT.glob("examples/*/*.pinn"))
    assert files
    for f in files:
        problem = pinnspec.load(f).ir
        plan = PointPlan(problem)
        assert sorted(n for s in plan.sets for n in s.conditions) == sorted(c.name for c in problem.conditions)
        for s, ps in zip(plan.sets, plan.sample(0, 0)):
            assert ps.x.shape[1] == len(problem.coordinates), f
            if s.count is not None and plan.sampler_spec.name != "grid":
                assert len(ps) == s.count, (f, s)


def test_domain_spec_sets_are_pure_in_seed_and_epoch():
    from pinnspec.lang import load

    problem = load(Path(__file__).resolve().parents[1] / "lang" / "data" / "plate_csg.pinn").ir
    plan = PointPlan(problem)
    assert [type(s.region).__name__ for s in plan.sets] == ["DomainInterior"] + ["DomainBoundary"] * 5
    first, again, later = plan.sample(3, 0), plan.sample(3, 0), plan.sample(3, 1)
    for a, b, c in zip(first, again, later):
        assert np.array_equal(a.x, b.x) and not np.array_equal(a.x, c.x)
        if a.normals is not None:
            assert np.array_equal(a.normals, b.normals)
            np.testing.assert_allclose(np.linalg.norm(a.normals, axis=1), 1.0, atol=1e-12)
    assert np.all(problem.domain.shape.inside(first[0].x))


@pytest.mark.parametrize("sampling, shared", [
    ("sampler hammersley\nresample never\n", True),  # deterministic, drawn once: PINNacle's protocol
    ("sampler grid\nresample never\n", True),
    ("sampler hammersley\nresample every 10\n", False),  # drawn anew during training
    ("sampler lhs\nresample never\n", False),  # random: the seed's own
    ("sampler rad(k = 1, c = 1)\nresample never\n", False),  # adaptive: follows each run's model
])
def test_seeds_share_points_where_the_plan_draws_once_and_deterministically(sampling, shared):
    plan = plan_of(HEAD + sampling + "points a 64, b 64, c 32, ic 16, left 8, right 8, tb 8\n")
    assert plan.seeds_share_points([0, 1, 2]) is shared
    if shared:  # the oracle: the draws themselves
        assert same(plan.sample(0, 0), plan.sample(7, 0))

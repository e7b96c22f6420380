"""Region point sets, face counts, grids and boxes."""

import numpy as np
import pytest

from pinnspec.geometry import boundary_parts

from pinnspec import ir
from pinnspec.sampling import PointSet, box_points, face_counts, grid_points, sample_region, uniform_interior_points

X = ir.Coordinate("x", -1.0, 2.0)
Y = ir.Coordinate("y", 0.0, 1.0)
Z = ir.Coordinate("z", 10.0, 14.0)
T = ir.Coordinate("t", 0.0, 0.5, is_time=True)
SAMPLERS = ["lhs", "uniform", "sobol", "halton", "grid"]


def faces(*specs):
    coords = {c.name: c for c in (X, Y, Z)}
    out = []
    for name, side in specs:
        c = coords[name]
        out.append(ir.Face(name, side, c.lo if side == "lo" else c.hi))
    return ir.FaceRegion(tuple(out))


def in_box(x, coords):
    return all(np.all((x[:, i] >= c.lo) & (x[:, i] <= c.hi)) for i, c in enumerate(coords))


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_interior_fills_the_box(sampler):
    coords = (X, Y, T)
    ps = sample_region(ir.Interior(), coords, 125, sampler, np.random.default_rng(0))
    assert isinstance(ps, PointSet) and ps.face_slices is None and ps.partner is None
    assert ps.x.shape == (125, 3) and ps.x.dtype == np.float64 and in_box(ps.x, coords)
    for i, c in enumerate(coords):  # spread over the whole range of each coordinate
        assert ps.x[:, i].min() < c.lo + 0.2 * (c.hi - c.lo) and ps.x[:, i].max() > c.hi - 0.2 * (c.hi - c.lo)


def test_lhs_interior_is_stratified_in_the_box():
    ps = sample_region(ir.Interior(), (X, T), 200, "lhs", np.random.default_rng(3))
    for i, c in enumerate((X, T)):
        assert sorted(np.floor((ps.x[:, i] - c.lo) / (c.hi - c.lo) * 200).astype(int)) == list(range(200))


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_face_points_lie_exactly_on_their_face(sampler):
    coords = (X, Y, Z, T)
    region = faces(("x", "lo"), ("x", "hi"), ("y", "lo"), ("z", "hi"))
    ps = sample_region(region, coords, 400, sampler, np.random.default_rng(1))
    assert len(ps.face_slices) == 4 and ps.partner is None
    assert ps.face_slices[0].start == 0 and ps.face_slices[-1].stop == len(ps.x)
    for a, b in zip(ps.face_slices, ps.face_slices[1:]):
        assert a.stop == b.start
    names = [c.name for c in coords]
    for face, sl in zip(region.faces, ps.face_slices):
        rows = ps.x[sl]
        assert np.all(rows[:, names.index(face.coordinate)] == face.value)
        assert in_box(rows, coords)
    if sampler != "grid":
        assert [sl.stop - sl.start for sl in ps.face_slices] == face_counts(region, coords, 400)


def test_face_counts_follow_the_measure_and_add_up():
    coords = (X, Y, Z, T)  # extents 3, 1, 4 (time does not count)
    region = faces(("x", "lo"), ("x", "hi"), ("y", "lo"), ("y", "hi"), ("z", "lo"), ("z", "hi"))
    # measures: x-faces 1*4 = 4, y-faces 3*4 = 12, z-faces 3*1 = 3; total 38
    for n in (38, 100, 1000, 7, 1, 0):
        counts = face_counts(region, coords, n)
        assert sum(counts) == n
        quota = n * np.array([4, 4, 12, 12, 3, 3]) / 38
        assert np.all(np.abs(np.array(counts) - quota) < 1)
    assert face_counts(region, coords, 38) == [4, 4, 12, 12, 3, 3]
    # largest remainder: 100*(4, 4, 12, 12, 3, 3)/38 = 10.53, 10.53, 31.58, 31.58, 7.89, 7.89
    assert face_counts(region, coords, 100) == [10, 10, 32, 32, 8, 8]


def test_kovasznay_like_face_split():
    coords = (ir.Coordinate("x", -0.5, 1.0), ir.Coordinate("y", -0.5, 1.5))
    region = ir.FaceRegion((ir.Face("x", "lo", -0.5), ir.Face("x", "hi", 1.0),
                            ir.Face("y", "lo", -0.5), ir.Face("y", "hi", 1.5)))
    assert face_counts(region, coords, 1000) == [286, 286, 214, 214]


def test_one_dimensional_space_faces_share_equally():
    region = faces(("x", "lo"), ("x", "hi"))
    assert face_counts(region, (X, T), 251) == [126, 125]
    ps = sample_region(region, (X, T), 250, "lhs", np.random.default_rng(0))
    assert [sl.stop - sl.start for sl in ps.face_slices] == [125, 125]
    assert np.all(ps.x[:125, 0] == -1.0) and np.all(ps.x[125:, 0] == 2.0)
    # steady 1-D problem: a face is a single point
    ps = sample_region(region, (X,), 10, "lhs", np.random.default_rng(0))
    np.testing.assert_array_equal(ps.x[:, 0], [-1.0] * 5 + [2.0] * 5)


def test_initial_slice_and_ode_initial_point():
    ps = sample_region(ir.InitialSlice("t", 0.0), (X, Y, T), 50, "sobol", np.random.default_rng(0))
    assert ps.x.shape == (50, 3) and np.all(ps.x[:, 2] == 0.0) and in_box(ps.x, (X, Y, T))
    assert len(np.unique(ps.x[:, 0])) == 50
    T2 = ir.Coordinate("t", 1.5, 3.0, is_time=True)
    for sampler in SAMPLERS:
        ps = sample_region(ir.InitialSlice("t", 1.5), (T2,), 3, sampler, np.random.default_rng(0))
        np.testing.assert_array_equal(ps.x, [[1.5], [1.5], [1.5]])


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_periodic_pairs_match_in_every_other_coordinate(sampler):
    coords = (X, Y, T)
    region = ir.PeriodicPairs("y", 0.0, 1.0)
    ps = sample_region(region, coords, 64, sampler, np.random.default_rng(2))
    assert ps.partner.shape == ps.x.shape == (64, 3)
    assert np.all(ps.x[:, 1] == 0.0) and np.all(ps.partner[:, 1] == 1.0)
    np.testing.assert_array_equal(ps.x[:, [0, 2]], ps.partner[:, [0, 2]])
    assert in_box(ps.x, coords) and in_box(ps.partner, coords)


def test_bad_regions_are_refused():
    with pytest.raises(ValueError, match="'w'"):
        sample_region(ir.PeriodicPairs("w", 0, 1), (X, T), 5, "lhs", np.random.default_rng(0))
    with pytest.raises(ValueError, match="read from the file"):
        sample_region(ir.DataPoints("obs.csv", ("u",)), (X, T), 5, "lhs", np.random.default_rng(0))
    with pytest.raises(ValueError, match="whole number"):
        sample_region(ir.Interior(), (X, T), -3, "lhs", np.random.default_rng(0))

    def bad(n, k, rng):
        return np.zeros((n, k + 1))

    with pytest.raises(ValueError, match="shape"):
        sample_region(ir.Interior(), (X, T), 5, bad, np.random.default_rng(0))


def test_grid_points_inclusive_last_coordinate_fastest():
    g = grid_points((X, T), (4, 3))
    assert g.shape == (12, 2)
    np.testing.assert_allclose(g[:3], [[-1, 0], [-1, 0.25], [-1, 0.5]])
    np.testing.assert_allclose(np.unique(g[:, 0]), [-1, 0, 1, 2])
    np.testing.assert_allclose(g[-1], [2, 0.5])
    i, j = 2, 1
    np.testing.assert_allclose(g[i * 3 + j], [1, 0.25])
    assert grid_points((X, Y, T), (2, 2, 2)).shape == (8, 3)
    with pytest.raises(ValueError, match="one count per coordinate"):
        grid_points((X, T), (4,))


def _unit(name, lo=0.0, hi=1.0, time=False):
    return ir.Coordinate(name, lo, hi, is_time=time)


def _inner(lo, hi, k):
    """k points spaced (hi - lo) / (k + 1) strictly inside [lo, hi]."""
    return lo + (hi - lo) * np.arange(1, k + 1) / (k + 1)


def _to_final(lo, hi, k):
    """k points hi - j (hi - lo) / k, j = 0 .. k - 1: the final time in, the initial out."""
    return np.sort(hi - (hi - lo) * np.arange(k) / k)


# The grids DeepXDE 1.x's uniform_points(n, boundary=False) gives PINNacle's exact-solution cases (its Hypercube,
# Interval and GeometryXTime, run on each case's geometry): per coordinate, the values it takes.
@pytest.mark.parametrize("case, coordinates, n, axes", [
    ("Heat2d-MS", [_unit("x"), _unit("y"), _unit("t", 0, 5, True)], 20000,
     [_inner(0, 1, 8), _inner(0, 1, 8), _to_final(0, 5, 313)]),
    ("Wave1d-C", [_unit("x"), _unit("t", time=True)], 2500, [_inner(0, 1, 50), _to_final(0, 1, 50)]),
    ("PNd", [_unit(f"x{i}") for i in range(1, 6)], 20000, [_inner(0, 1, 8)] * 5),
    ("PInv", [_unit("x"), _unit("y")], 2500, [_inner(0, 1, 50)] * 2),
    ("HInv", [_unit("x", -1), _unit("y", -1), _unit("t", time=True)], 20000,
     [_inner(-1, 1, 17), _inner(-1, 1, 17), _to_final(0, 1, 71)]),
])
def test_uniform_interior_points_are_deepxdes_grids_of_pinnacles_cases(case, coordinates, n, axes):
    points = uniform_interior_points(coordinates, n)
    assert points.shape == (int(np.prod([len(a) for a in axes])), len(coordinates))
    for column, axis in zip(points.T, axes):
        np.testing.assert_allclose(np.unique(column), axis, rtol=0, atol=1e-14)
    np.testing.assert_allclose(points, grid_points_of(axes), rtol=0, atol=1e-14)  # the tensor grid, in order


def test_uniform_interior_points_of_one_coordinate_are_n_inner_points():
    for coordinates in ([_unit("x", -1, 2)], [_unit("t", 0, 3, True)]):
        lo, hi = coordinates[0].lo, coordinates[0].hi
        np.testing.assert_allclose(uniform_interior_points(coordinates, 7)[:, 0], _inner(lo, hi, 7), atol=1e-15)
    with pytest.raises(ValueError, match="whole number >= 1"):
        uniform_interior_points([_unit("x")], 0)


def grid_points_of(axes):
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.reshape(-1) for g in mesh], axis=1)


def test_box_points_are_lhs_in_the_box_and_seeded():
    coords = (X, Y, Z, T)
    a = box_points(coords, 500, np.random.default_rng(5))
    assert a.shape == (500, 4) and in_box(a, coords)
    for i, c in enumerate(coords):
        assert sorted(np.floor((a[:, i] - c.lo) / (c.hi - c.lo) * 500).astype(int)) == list(range(500))
    np.testing.assert_array_equal(box_points(coords, 50, 7), box_points(coords, 50, 7))


# ------------------------------------------------------------------ regions of a domain (CSG)

def _plate_domain():
    """The unit square [-0.5, 0.5]^2 minus two disks of radius 0.1, as the language lowers it."""
    from pinnspec import geometry

    box = geometry.Box([-0.5, -0.5], [0.5, 0.5], name="box")
    shape = box - geometry.Ball([0.3, 0.3], 0.1, name="hole1") - geometry.Ball([-0.3, 0.3], 0.1, name="hole2")
    return ir.Domain("plate", shape, "box - hole1 - hole2")


PX = ir.Coordinate("x", -0.5, 0.5)
PY = ir.Coordinate("y", -0.5, 0.5)


@pytest.mark.parametrize("sampler", ["lhs", "uniform", "sobol", "halton"])
def test_domain_interior_is_uniform_in_the_plate(sampler):
    domain = _plate_domain()
    ps = sample_region(ir.DomainInterior(domain), (PX, PY, T), 20000, sampler, np.random.default_rng(1))
    assert ps.x.shape == (20000, 3) and ps.normals is None
    space = ps.x[:, :2]
    assert np.all(domain.shape.sdf(space) < 0)  # strictly inside: off the rims and out of the holes
    assert np.all((ps.x[:, 2] >= T.lo) & (ps.x[:, 2] <= T.hi))
    # uniform by area: the fraction in the upper-right quarter is its exact share of the plate's area
    area = 1 - 2 * np.pi * 0.1 ** 2
    quarter = (0.25 - np.pi * 0.1 ** 2) / area
    upper_right = np.mean((space[:, 0] > 0) & (space[:, 1] > 0))
    assert abs(upper_right - quarter) < 4 * np.sqrt(quarter * (1 - quarter) / 20000)


def test_domain_boundary_points_lie_on_the_rims_with_outward_normals():
    domain = _plate_domain()
    parts = tuple(p.index for p in boundary_parts(domain.shape) if p.primitive.name.startswith("hole"))
    ps = sample_region(ir.DomainBoundary(domain, parts, ("hole1", "hole2")), (PX, PY, T), 1001, "lhs",
                       np.random.default_rng(2))
    assert ps.x.shape == (1001, 3) and ps.normals.shape == (1001, 2)
    centers = np.where(ps.x[:, :1] > 0, [[0.3, 0.3]], [[-0.3, 0.3]])  # each point's hole
    offset = ps.x[:, :2] - centers
    radius = np.linalg.norm(offset, axis=1)
    np.testing.assert_allclose(radius, 0.1, atol=1e-12)
    # the domain's outward normal on a hole's rim points into the hole, towards its center
    np.testing.assert_allclose(ps.normals, -offset / 0.1, atol=1e-12)
    # two equal circles: the points split evenly (largest remainder: 501 and 500)
    assert sorted([int(np.sum(ps.x[:, 0] > 0)), int(np.sum(ps.x[:, 0] < 0))]) == [500, 501]
    assert np.all((ps.x[:, 2] >= T.lo) & (ps.x[:, 2] <= T.hi))


def test_domain_box_face_has_the_axis_normal():
    domain = _plate_domain()
    left = tuple(p.index for p in boundary_parts(domain.shape) if p.primitive.name == "box" and p.face == 0)
    ps = sample_region(ir.DomainBoundary(domain, left, ("x = -0.5",)), (PX, PY), 50, "lhs", np.random.default_rng(3))
    assert np.all(ps.x[:, 0] == -0.5) and np.all(np.abs(ps.x[:, 1]) <= 0.5)
    assert np.array_equal(ps.normals, np.tile([-1.0, 0.0], (50, 1)))


def test_domain_initial_slice_is_inside_at_the_start_time():
    domain = _plate_domain()
    ps = sample_region(ir.DomainInitialSlice(domain, "t", T.lo), (PX, PY, T), 300, "sobol", np.random.default_rng(4))
    assert np.all(ps.x[:, 2] == T.lo) and np.all(domain.shape.inside(ps.x[:, :2]))


def test_domain_points_are_seeded_and_inside():
    from pinnspec.sampling._regions import domain_points, inside_domain

    domain = _plate_domain()
    a, b = domain_points(domain, (PX, PY), 500, 7), domain_points(domain, (PX, PY), 500, 7)
    assert np.array_equal(a, b) and a.shape == (500, 2) and np.all(domain.shape.inside(a))
    grid = grid_points((PX, PY), (21, 21))
    kept = inside_domain(domain, grid)
    # the grid points inside: off the box's edges (21 x 21 has 80 there) and out of the two disks
    in_holes = sum(np.sum(np.linalg.norm(grid - c, axis=1) <= 0.1) for c in ([0.3, 0.3], [-0.3, 0.3]))
    assert len(kept) == 19 * 19 - in_holes

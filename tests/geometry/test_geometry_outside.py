"""Points outside a domain: ``Shape.outside`` (past the boundary by more than 1e-6 of the bounding
box's diameter) and the messages that name a reference or data file with such rows."""

from pathlib import Path

import numpy as np

from pinnspec.lang import load
from pinnspec.sampling._regions import farthest_outside, files_outside_domain, outside_domain

ROOT = Path(__file__).resolve().parents[2]
HOLE_PLATE = ROOT / "tests" / "engine" / "data" / "hole_plate.pinn"


def test_outside_leaves_the_boundary_to_rounding(plate):
    shape, _, _ = plate
    diameter = np.sqrt(2.0)
    points = np.array([[0.3, 0.3],  # a hole's centre
                       [0.0, 0.0],  # inside the plate
                       [0.4, 0.3],  # on hole1's rim
                       [0.4 - 1e-3 * 1e-6, 0.3],  # a rounding step into the hole
                       [0.4 - 10 * diameter * 1e-6, 0.3],  # clearly into the hole
                       [0.5 + 1e-9, 0.0],  # a rounding step past the square
                       [0.6, 0.0]])  # past the square
    assert shape.outside(points).tolist() == [True, False, False, False, True, False, True]
    assert shape.outside(points, rtol=0.0).tolist() == [True, False, False, True, True, True, True]


def test_a_reference_file_with_rows_in_the_hole_is_named_with_the_count_and_the_farthest_row():
    problem = load(HOLE_PLATE).ir
    [message] = files_outside_domain(problem)
    assert message.startswith("the reference file 'ref_in_hole.csv': 2 of 6 rows lie outside the domain 'plate' "
                              "(box - hole), the farthest at (x = 0.2, y = 0.2), 0.15 past its boundary")
    assert "leave those rows out" in message


def test_the_caller_may_give_the_points_it_has_read():
    problem = load(HOLE_PLATE).ir
    inside = np.array([[0.0, 0.0], [-0.4, 0.4]])
    assert files_outside_domain(problem, reference_points=lambda: inside) == []
    [message] = files_outside_domain(problem, reference_points=lambda: np.array([[0.25, 0.2], [0, 0]]))
    assert "1 of 2 row lies outside" in message and "(x = 0.25, y = 0.2)" in message


def test_data_files_are_checked_too(tmp_path):
    (tmp_path / "obs.csv").write_text("x,y,u\n0.0,0.0,0.5\n0.21,0.19,0.0\n")
    text = HOLE_PLATE.read_text().replace('reference "ref_in_hole.csv"', 'data obs from "obs.csv": u')
    (tmp_path / "spec.pinn").write_text(text)
    [message] = files_outside_domain(load(tmp_path / "spec.pinn").ir)
    assert message.startswith("the data file 'obs.csv' (condition 'obs'): 1 of 2 row lies outside the domain")


def test_pinnacles_mesh_nodes_on_the_rims_are_not_outside():
    """The COMSOL nodes of examples/plate_holes lie on the rims up to rounding (sdf ~ 1e-17)."""
    problem = load(ROOT / "examples" / "plate_holes" / "plate_holes.pinn").ir
    assert files_outside_domain(problem) == []


def test_no_domain_no_check():
    problem = load(ROOT / "tests" / "engine" / "data" / "tiny.pinn").ir
    assert files_outside_domain(problem) == []


def test_farthest_outside_counts_and_points_at_the_farthest_row():
    problem = load(HOLE_PLATE).ir
    points = np.array([[0.0, 0.0], [0.3, 0.2], [0.2, 0.21]])
    assert outside_domain(problem.domain, points).tolist() == [False, True, True]
    count, example = farthest_outside(problem.domain, problem.coordinates, points)
    assert count == 2 and example.startswith("(x = 0.2, y = 0.21), 0.14 past its boundary")
    assert farthest_outside(problem.domain, problem.coordinates, points[:1]) is None

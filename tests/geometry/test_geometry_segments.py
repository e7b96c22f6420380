"""`boundary_segments`: the pieces of a flat 2-D face that lie on the shape's boundary, against the exact pieces
of hand-drawn shapes and against dense sampling of the boundary."""

import numpy as np
import pytest

from pinnspec.geometry import (Ball, Box, HalfSpace, Polygon, boundary_parts, boundary_segments, part_measures,
                               sample_boundary)

L_SHAPE = Box([-1, -1], [1, 1]) - Box([0, -1], [1, 0])
#: two overlapping boxes: each cuts a face of the other, whose rest lies inside the union
UNION = Box([0, 0], [2, 1]) + Box([1, 0.5], [3, 2])
#: the unit square cut by the line x + y = 1.5
CUT = Box([0, 0], [1, 1]) & HalfSpace([1, 1], 1.5)


def _pieces(shape):
    return [[(tuple(a), tuple(b)) for a, b in boundary_segments(shape, part)] for part in boundary_parts(shape)]


@pytest.mark.parametrize("shape, expected", [
    (L_SHAPE, [[((-1, -1), (-1, 1))], [((1, 0), (1, 1))], [((-1, -1), (0, -1))], [((-1, 1), (1, 1))],
               [((0, -1), (0, 0))], [], [], [((0, 0), (1, 0))]]),
    (UNION, [[((0, 0), (0, 1))], [((2, 0), (2, 0.5))], [((0, 0), (2, 0))], [((0, 1), (1, 1))],
             [((1, 1), (1, 2))], [((3, 0.5), (3, 2))], [((2, 0.5), (3, 0.5))], [((1, 2), (3, 2))]]),
    (CUT, [[((0, 0), (0, 1))], [((1, 0), (1, 0.5))], [((0, 0), (1, 0))], [((0, 1), (0.5, 1))],
           [((1, 0.5), (0.5, 1))]]),
], ids=["L-shape", "union", "half-plane cut"])
def test_the_pieces_of_each_face_on_the_boundary_are_the_exact_ones(shape, expected):
    found = _pieces(shape)
    assert [len(p) for p in found] == [len(p) for p in expected]
    for got, want in zip(found, expected):
        np.testing.assert_allclose(np.array(got, dtype=float), np.array(want, dtype=float), atol=1e-9)


def test_a_face_split_in_two_gives_two_pieces():
    # a bar across the middle of a square's left face cuts it into two pieces on the boundary
    shape = Box([0, 0], [2, 2]) - Box([-1, 0.8], [1, 1.2])
    left = boundary_parts(shape)[0]
    pieces = boundary_segments(shape, left)
    np.testing.assert_allclose(np.array(pieces), [[[0, 0], [0, 0.8]], [[0, 1.2], [0, 2]]], atol=1e-9)


@pytest.mark.parametrize("shape", [L_SHAPE, UNION, CUT,
                                   Polygon([(0, 0), (2, 0), (2, 1), (1, 0.4), (0, 1)]) - Box([1.5, -1], [3, 0.2])])
def test_the_pieces_hold_every_boundary_point_and_add_up_to_the_part_measures(shape):
    points, _, index = sample_boundary(shape, 2000, np.random.default_rng(0))
    measures = part_measures(shape)
    for part in boundary_parts(shape):
        pieces = boundary_segments(shape, part)
        length = sum(float(np.linalg.norm(b - a)) for a, b in pieces)
        assert abs(length - measures[part.index]) <= 0.02 * max(measures[part.index], 1e-3), part.label
        x = points[index == part.index]  # [k, 2]
        if not len(x):
            continue
        gaps = []
        for a, b in pieces:  # the distance of each point to each piece
            along = np.clip((x - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1)  # [k]
            gaps.append(np.linalg.norm(x - a - along[:, None] * (b - a), axis=1))
        assert np.min(gaps, axis=0).max() < 1e-9, part.label


def test_no_pieces_for_a_curved_face_or_outside_2d():
    disk = Box([0, 0], [2, 2]) - Ball([1, 1], 0.5)
    assert boundary_segments(disk, boundary_parts(disk)[4]) is None
    cube = Box([0, 0, 0], [1, 1, 1]) - Box([0.5, 0.5, 0.5], [1, 1, 1])
    assert all(boundary_segments(cube, part) is None for part in boundary_parts(cube))

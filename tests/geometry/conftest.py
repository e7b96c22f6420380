"""Shapes the geometry tests share (as fixtures), with their exact areas and perimeters."""

import math

import numpy as np
import pytest

from pinnspec.geometry import Ball, Box

HOLE_CENTERS = [(0.3, 0.3), (0.3, -0.3), (-0.3, 0.3), (-0.3, -0.3)]
HOLE_RADIUS = 0.1


def make_plate():
    """The square [-0.5, 0.5]^2 minus four disks of radius 0.1 at (+-0.3, +-0.3), named hole1..hole4."""
    plate = Box([-0.5, -0.5], [0.5, 0.5], name="plate")
    for number, center in enumerate(HOLE_CENTERS, start=1):
        plate = plate - Ball(center, HOLE_RADIUS, name=f"hole{number}")
    return plate


PLATE_AREA = 1.0 - 4 * math.pi * HOLE_RADIUS ** 2
PLATE_PERIMETER = 4.0 + 4 * 2 * math.pi * HOLE_RADIUS


def make_l_shape():
    """The unit square minus its upper right quarter: area 3/4, perimeter 4, six edges."""
    return Box([0, 0], [1, 1], name="square") - Box([0.5, 0.5], [1, 1], name="notch")


@pytest.fixture
def plate():
    """(shape, exact area, exact perimeter)"""
    return make_plate(), PLATE_AREA, PLATE_PERIMETER


@pytest.fixture
def l_shape():
    return make_l_shape()


def finite_difference_gradient(sdf, x, step=1e-6):
    """The central-difference gradient ``[N, d]`` of ``sdf`` at ``x`` ``[N, d]``."""
    columns = []
    for axis in range(x.shape[1]):
        shift = np.zeros(x.shape[1])
        shift[axis] = step
        columns.append((sdf(x + shift) - sdf(x - shift)) / (2 * step))
    return np.stack(columns, axis=1)


@pytest.fixture
def fd_gradient():
    return finite_difference_gradient

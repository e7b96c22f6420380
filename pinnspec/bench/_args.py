"""Argument types shared by the benchmarks' command lines (no torch: ``pinnspec.bench`` imports light)."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """A whole number >= 1 (argparse ``type=``)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def nonnegative(text: str) -> int:
    """A whole number >= 0 (argparse ``type=``)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text}")
    return value

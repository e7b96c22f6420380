"""Every bench's command line: the parser class, argument types, ``run_main`` and ``BenchError`` (no torch:
``pinnspec.bench`` imports light)."""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_USER = 0, 1


class BenchError(Exception):
    """A mistake in how a benchmark was called (printed without a traceback)."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # a bad command line is a user error: exit 1, as in pinnspec's CLI
        self.print_usage(sys.stderr)
        self.exit(EXIT_USER, f"{self.prog}: error: {message}\n")


def run_main(parser: argparse.ArgumentParser, run, argv) -> int:
    """Parse ``argv`` and call ``run(args)``; a usage error, a BenchError and a ``pinnspec.sweep.SweepError``
    -> exit 1, the message printed without a traceback."""
    from ..sweep import SweepError

    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad command line (1)
        return int(exc.code or 0)
    try:
        return run(args)
    except (BenchError, SweepError) as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return EXIT_USER


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

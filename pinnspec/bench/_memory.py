"""Peak-RSS measurement for ``bench speed``: run as ``python -m pinnspec.bench._memory CONFIG_JSON``
(``read_status`` / ``reset_peak``: :mod:`pinnspec._rss`)."""

from __future__ import annotations

import json
import sys

from .._rss import read_status, reset_peak  # noqa: F401  (this module's measuring tools)


def _main(argv: list[str]) -> int:
    from ._speed import memory_probe

    print(json.dumps(memory_probe(json.loads(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

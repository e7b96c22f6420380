"""The memory subprocess of ``bench speed``: ``python -m pinnspec.bench._memory CONFIG_JSON`` runs
:func:`pinnspec.bench._speed.memory_probe` in a fresh interpreter and prints its JSON result (the RSS
probes, ``read_status`` / ``reset_peak``, are :mod:`pinnspec._rss`'s)."""

from __future__ import annotations

import json
import sys

from ._speed import memory_probe


def _main(argv: list[str]) -> int:
    print(json.dumps(memory_probe(json.loads(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

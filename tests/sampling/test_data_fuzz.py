"""Mutated data files (seeded): every one loads, or is refused with a DataFileError that names it in a short
message; nothing else is raised (no traceback from numpy, zipfile or the parsers)."""

import io
import random

import numpy as np

from pinnspec import ir
from pinnspec.sampling import DataFileError, load_data, load_reference

COORDS = (ir.Coordinate("x", 0, 1), ir.Coordinate("t", 0, 1, is_time=True))
INSERTS = [b",", b"\n", b"nan", b"-", b"e", b"\r\n", b"\xef\xbb\xbf", b" ", b"#", b"\x00", b"%"]


def _npz(save) -> bytes:
    buffer = io.BytesIO()
    save(buffer, x=np.linspace(0, 1, 7), t=np.zeros(7), u=np.ones(7))
    return buffer.getvalue()


SEEDS = [
    (_npz(np.savez), ".npz"),
    (_npz(np.savez_compressed), ".npz"),
    (b"x,t,u\n0,0,1\n0.5,0.1,2\n1,1,3\n", ".csv"),
    (b"% Dimension: 1\n% Nodes: 2\n% X  u (1) @ t=0  u (1) @ t=0.5\n0.1 1 2\n0.2 3 4\n", ".dat"),
    (b"0 0 1\n0.5 0.1 2\n1 1 3\n", ".txt"),
]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(max(len(data), 1))
        kind = rng.randrange(4)
        if kind == 0 and data:
            data[at] = rng.randrange(256)
        elif kind == 1:
            del data[at:at + rng.randint(1, 20)]
        elif kind == 2:
            data[at:at] = rng.choice(INSERTS)
        else:
            del data[at:]
    return bytes(data)


def test_mutated_data_files_load_or_are_refused_by_name(tmp_path):
    rng = random.Random(40)
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(300):
        seed, suffix = rng.choice(SEEDS)
        path = tmp_path / f"mutant{i}{suffix}"
        path.write_bytes(_mutate(seed, rng))
        for load in (load_data, load_reference):
            try:
                points, values = load(path, COORDS, ("u",))
            except DataFileError as err:
                assert str(err).startswith(f"{path}:") and len(str(err)) < 600, str(err)
                outcomes["refused"] += 1
            else:
                assert len(points) >= 1 and np.isfinite(points).all() and np.isfinite(values).all()
                outcomes["loaded"] += 1
    assert outcomes["loaded"] > 10 and outcomes["refused"] > 300, outcomes

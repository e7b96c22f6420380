"""Hand-built run directories (history.csv, result.json, predictions.npz) for the plot tests."""

import csv
import json
from pathlib import Path

import numpy as np

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RATES = ("R_g", "R_a", "R_u", "R_p")


def write_history(run: Path, epochs: int = 50, conditions=("pde", "ic", "bc"), tasks=2, aligned=True,
                  every: int | None = 10, diverged: bool = False, first: int = 1, validation: bool = True) -> None:
    """Epochs ``first`` .. ``first + epochs - 1`` (1-based by default: epoch k is the state after k
    updates; ``first=0`` writes the older 0-based files).  Task i sums conditions i, i + tasks, ...
    The first row is the zero-rate warmup (no diagnosis); R_a and R_p are 0 throughout.  A
    validation value every ``every`` epochs and at the last; ``every=None``: an empty validation
    column; ``validation=False``: none."""
    rng = np.random.default_rng(0)
    columns = (["epoch", "lr", "loss"] + [f"task{i}" for i in range(tasks)] + [f"loss:{c}" for c in conditions]
               + list(RATES) + ["projected", "cos_pu"] + (["validation"] if validation else []))
    rows = []
    for n in range(epochs):
        e = first + n
        row = {"epoch": e, "lr": 1e-3 * min(1.0, n / 10)}
        cond = {c: float(np.exp(-n / 20 - k) * (1 + 0.1 * rng.random())) for k, c in enumerate(conditions)}
        for c, v in cond.items():
            row[f"loss:{c}"] = v
        values = list(cond.values())
        task_values = [sum(values[i::tasks]) for i in range(tasks)]
        for i, v in enumerate(task_values):
            row[f"task{i}"] = v
        row["loss"] = sum(task_values)
        if n > 0:  # the first row is the zero-rate warmup: no diagnosis
            row["R_g"] = int(rng.random() < 0.6)
            row["R_a"] = 0
            row["R_u"] = int(rng.random() < 0.3)
            if aligned:
                row["R_p"] = 0
                row["projected"] = row["R_u"]
                row["cos_pu"] = 0.9
        if validation and every is not None and ((n + 1) % every == 0 or n == epochs - 1):
            row["validation"] = 0.5 * np.exp(-n / 40)
        rows.append(row)
    if diverged:
        rows.append({"epoch": first + epochs, "loss": float("nan")})
    with open(run / "history.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})


def write_result(run: Path, tasks=("N", "pool(ic, bc)"), status="completed", **extra) -> None:
    result = {"problem": "synthetic", "surgery": "config()", "optimizer": "adam(lr = 0.001)",
              "align": "gua(metric = adam)", "grouping": "two", "seed": 0, "epochs": 50, "epochs_done": 50,
              "status": status, "rel_l2": 0.0123, "rel_l2_final": 0.02, "best_epoch": 49,
              "best_validation": 0.15, "validation": "points", "rates": {}, "params": {}, "tasks": list(tasks),
              **extra}
    (run / "result.json").write_text(json.dumps(result))


def write_predictions(run: Path, points: np.ndarray, fields=("u",), coordinates=None, noise=0.05,
                      reference: bool = True) -> None:
    d = points.shape[1]
    coordinates = coordinates or ["x", "y", "z", "t"][:d]
    exact = np.stack([np.sin(np.pi * (k + 1) * points.sum(axis=1)) for k in range(len(fields))], axis=1)
    arrays = {"points": points, "prediction": exact + noise * np.cos(3 * points[:, :1]),
              "coordinates": np.array(coordinates), "fields": np.array(fields)}
    if reference:
        arrays["reference"] = exact
    np.savez(run / "predictions.npz", **arrays)


def write_run_without_reference(run: Path, points=None, fields=("u",), **history) -> Path:
    """A finished run of a problem without a reference solution: null test and validation errors,
    an empty validation column, predictions.npz without ``reference``."""
    run.mkdir()
    write_history(run, every=None, **history)
    write_result(run, rel_l2=None, rel_l2_final=None, best_validation=None, best_epoch=None)
    if points is not None:
        write_predictions(run, points, fields, reference=False)
    return run


def grid(*axes) -> np.ndarray:
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.reshape(-1) for m in mesh], axis=1)


def make_run(tmp_path: Path, points=None, fields=("u",), name="run", **history) -> Path:
    run = tmp_path / name
    run.mkdir()
    write_history(run, **history)
    write_result(run)
    if points is not None:
        write_predictions(run, points, fields)
    return run


def assert_pngs(paths, names) -> None:
    assert [Path(p).name for p in paths] == list(names)
    for p in paths:
        data = Path(p).read_bytes()
        assert len(data) > 5000, p
        assert data.startswith(PNG_MAGIC), p
    folder = Path(paths[0]).parent
    assert not list(folder.glob(".tmp-*")), "atomic writes left a temp file"


def legend_texts(fig) -> list[str]:
    """Every legend entry of every panel of ``fig``."""
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]

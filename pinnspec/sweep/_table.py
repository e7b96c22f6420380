"""The sweep's table: per setting, mean ± std over seeds of the completed runs.
A diverged run is counted (column ``diverged``) and left out of the means;
a run stopped early (Ctrl-C, a time limit, killed: its checkpoint resumes it) is
counted as ``stopped``; a run without a result.json (never started, or failed
before it wrote one) as ``not_run``.  No torch here."""

from __future__ import annotations

import math
import os

from .._files import read_json, write_csv

#: (column, how the Markdown shows it)
METRICS = (("rel_l2", "sci"), ("rel_l2_final", "sci"), ("R_g", "pct"), ("R_a", "pct"), ("R_u", "pct"),
           ("R_p", "pct"), ("train_time_s", "sec"), ("peak_memory_mb", "mib"))
RUN_COLUMNS = ("name", "seed", "status", "epochs_done", "rel_l2", "rel_l2_final", "R_g", "R_a", "R_u",
               "R_p", "train_time_s", "peak_memory_mb", "message")


def _number(value) -> float | None:
    if value is None:
        return None
    try:
        return float(value)  # result.json writes nan/inf as strings
    except (TypeError, ValueError):
        return None


def read_run(run) -> dict:
    """One row per planned run: its settings, seed and what its result.json says
    (status "missing" when there is none)."""
    row = {"name": run.name, "setting": dict(run.setting), "seed": run.seed}
    path = os.path.join(run.run_dir, "result.json")
    try:
        result = read_json(path)
    except (OSError, ValueError):
        return {**row, "status": "missing"}
    rates = result.get("rates") or {}
    row.update(status=result.get("status", "missing"), epochs_done=result.get("epochs_done"),
               message=result.get("message", ""))
    for key in ("rel_l2", "rel_l2_final", "train_time_s", "peak_memory_mb"):
        row[key] = _number(result.get(key))
    for key in ("R_g", "R_a", "R_u", "R_p"):
        row[key] = _number(rates.get(key))
    return row


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n - 1); std is None for one value."""
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def summarize(rows: list[dict], keys: list[str]) -> list[dict]:
    """Group ``rows`` (from :func:`read_run`) by the grid ``keys``, in first-seen order."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row["setting"][k] for k in keys), []).append(row)
    table = []
    for setting, members in groups.items():
        done = [r for r in members if r["status"] == "completed"]
        diverged = sum(r["status"] == "diverged" for r in members)
        stopped = sum(r["status"] in ("interrupted", "running") for r in members)
        entry = {**dict(zip(keys, setting)), "runs": len(members), "completed": len(done), "diverged": diverged,
                 "stopped": stopped, "not_run": len(members) - len(done) - diverged - stopped}
        for metric, _ in METRICS:
            entry[f"{metric}_mean"], entry[f"{metric}_std"] = mean_std([r.get(metric) for r in done])
        table.append(entry)
    return table


def csv_columns(keys: list[str]) -> list[str]:
    return [*keys, "runs", "completed", "diverged", "stopped", "not_run"] + [f"{m}_{s}" for m, _ in METRICS for s in ("mean", "std")]


def _cell(mean, std, kind) -> str:
    if mean is None:
        return "-"
    if kind == "sci":
        text, spread = f"{mean:.3e}", (None if std is None else f"{std:.1e}")
    elif kind == "pct":
        text, spread = f"{mean:.1%}", (None if std is None else f"{std:.1%}")
    else:
        text, spread = f"{mean:.1f}", (None if std is None else f"{std:.1f}")
    return text if spread is None else f"{text} ± {spread}"


def markdown(table: list[dict], keys: list[str], title: str | None = None) -> str:
    head = [*(keys or ["setting"]), "runs", "rel_l2", "rel_l2_final", "R_g", "R_a", "R_u", "R_p", "time (s)",
            "peak MiB"]
    lines = [f"## {title}", ""] if title else []
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for entry in table:
        runs = f"{entry['completed']}/{entry['runs']}"
        notes = [f"{entry[k]} {k.replace('_', ' ')}" for k in ("diverged", "stopped", "not_run") if entry[k]]
        if notes:
            runs += f" ({', '.join(notes)})"
        cells = [f"`{entry[k]}`" for k in keys] or ["(spec)"]
        cells.append(runs)
        cells += [_cell(entry[f"{m}_mean"], entry[f"{m}_std"], kind) for m, kind in METRICS]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "mean ± sample std over the completed seeds; rel_l2 at the best-validation checkpoint, "
                  "rel_l2_final at the end; R_* the conflict rates; peak MiB the run's peak memory (CUDA: "
                  "max allocated; CPU: the process's peak RSS); the diverged runs, the stopped "
                  "ones (the same command resumes them) and those not run are counted, not averaged."]
    return "\n".join(lines) + "\n"


def write_tables(out: str, rows: list[dict], keys: list[str], title: str | None = None) -> dict[str, str]:
    """OUT/summary.md, OUT/summary.csv (one row per setting) and OUT/runs.csv
    (one row per run); returns their paths."""
    from .._files import atomic_write_text

    table = summarize(rows, keys)
    paths = {"markdown": os.path.join(out, "summary.md"), "csv": os.path.join(out, "summary.csv"),
             "runs": os.path.join(out, "runs.csv")}
    atomic_write_text(paths["markdown"], markdown(table, keys, title))
    write_csv(paths["csv"], csv_columns(keys), table)
    run_columns = [RUN_COLUMNS[0], *keys, *RUN_COLUMNS[1:]]
    write_csv(paths["runs"], run_columns, [{**row, **row["setting"]} for row in rows])
    return paths

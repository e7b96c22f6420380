"""Shared pieces of the timing benchmarks: the environment header, fresh-interpreter runs, timing, tables,
the spec."""

from __future__ import annotations

import argparse
import csv
import gc
import io
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from .. import __version__
from .._files import atomic_write_text
from .._malloc import SETTINGS as MALLOC_SETTINGS
from .._malloc import tune_allocator
from ._cli import BenchError, nonnegative, positive
from ._report import markdown_table

SPEC_NAME = "burgers.pinn"
#: Trainer.step never touches the test and validation points; fewer make the Trainer's setup
#: (reference solutions by quadrature) take milliseconds instead of seconds
STEP_ONLY_OVERRIDES = {"test": "100", "validate": "100 every 100"}


def add_common_arguments(p: argparse.ArgumentParser, *, epochs: int, warmup: int) -> None:
    p.add_argument("--epochs", type=positive, default=epochs, metavar="N", help=f"timed epochs (default {epochs})")
    p.add_argument("--warmup", type=nonnegative, default=warmup, metavar="N",
                   help=f"untimed warm-up epochs per contender (default {warmup})")
    p.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu", help="default cpu")
    p.add_argument("--threads", type=positive, default=None, metavar="N",
                   help="torch intra-op threads (default: torch's own choice)")
    p.add_argument("--malloc", choices=["tuned", "stock"], default="tuned",
                   help="glibc allocator settings: pinnspec's tuning (default) or the stock ones "
                        "(same as PINNSPEC_MALLOC=off); applies to every contender of the process")
    p.add_argument("--spec", metavar="FILE", default=None, help=f"the Burgers spec (default: specs/{SPEC_NAME})")
    p.add_argument("--out", metavar="DIR", default=None, help="also write the tables as Markdown and CSV here")


# ====================================================================== environment
def setup(args) -> tuple[torch.device, dict]:
    """Apply the allocator choice and thread count; resolve the device."""
    if args.malloc == "stock":
        os.environ["PINNSPEC_MALLOC"] = "off"
    allocator = tune_allocator()  # process-wide, once: every contender runs under the same settings
    wanted_tuned = args.malloc == "tuned"
    if wanted_tuned != (allocator.get("allocator") != "stock") and sys.platform.startswith("linux"):
        print(f"note: asked for the {args.malloc} allocator, but this process already runs with "
              f"{allocator_text(allocator)}", file=sys.stderr)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    _busy_hint(device)
    return device, allocator


def _busy_hint(device: torch.device) -> None:
    """On a busy CPU, more than one torch thread makes epoch times swing wildly (OpenMP waits for
    descheduled threads); say so."""
    threads, cpus = torch.get_num_threads(), os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        return
    if device.type == "cpu" and threads > 1 and load + threads > cpus + 0.5:
        print(f"note: the machine looks busy (load average {load:.2f} on {cpus} CPUs) and torch uses {threads} "
              "threads: epoch times may swing by several times; ratios stay paired, but --threads 1 is steadier",
              file=sys.stderr)


def resolve_device(name: str) -> torch.device:
    """``--device NAME`` (cpu, cuda, auto) as ``pinnspec.engine.resolve_device`` resolves it; a CUDA device
    asked for where there is none is a BenchError."""
    from ..engine import resolve_device as engine_device

    try:
        return engine_device(name)
    except ValueError as err:  # "device cuda was asked for, but ...": the flag is --device
        raise BenchError(f"--{err}") from None


def allocator_text(state: dict) -> str:
    if state.get("allocator") == "stock":
        reason = "PINNSPEC_MALLOC=off" if os.environ.get("PINNSPEC_MALLOC", "on").lower() in ("off", "0", "no") \
            else "not tuned"
        return f"stock glibc malloc ({reason})"
    parts = [f"{k}={_size(v)}" for k, v in state.items() if k in MALLOC_SETTINGS]
    return f"{state.get('allocator')}: " + ", ".join(parts)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return str(n)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: torch.device, allocator: dict) -> dict:
    env = {
        "pinnspec": __version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cpus": os.cpu_count(),
        "allocator": allocator_text(allocator),
    }
    try:
        env["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        env["load_average"] = "n/a"
    return env


def environment_lines(env: dict) -> list[str]:
    return [
        f"pinnspec {env['pinnspec']}, torch {env['torch']}, python {env['python']}",
        f"device {env['device']} ({env['device_name']}), torch threads {env['threads']} "
        f"(interop {env['interop_threads']}), {env['cpus']} CPUs, load average {env['load_average']} at start",
        f"allocator: {env['allocator']}",
    ]


# ====================================================================== subprocesses
def run_fresh(module: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGV`` in a fresh interpreter (so that its peak memory is its own), with this
    checkout's pinnspec first on PYTHONPATH and ``env`` added to the environment; its output as text."""
    environ = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environ["PYTHONPATH"] = root + (os.pathsep + environ["PYTHONPATH"] if environ.get("PYTHONPATH") else "")
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, env=environ)


# ====================================================================== timing
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(device: torch.device) -> float:
    """perf_counter after the device's queued work is done."""
    sync(device)
    return time.perf_counter()


class quiet_gc:
    """Keep the cyclic garbage collector out of the timed region (as timeit does); it runs in between."""

    def __enter__(self):
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.enabled:
            gc.enable()


def time_call(fn, device: torch.device, *, min_time: float = 0.05, min_reps: int = 3, max_reps: int = 100,
              slow: float = 1.0) -> list[float]:
    """Seconds per call of ``fn()``: one untimed call, then at least ``min_reps`` calls and ``min_time``
    seconds; a call slower than ``slow`` seconds is timed twice only (p = 1e6, m = 40 takes seconds)."""
    start = clock(device)
    fn()
    if clock(device) - start >= slow:
        min_reps, max_reps = min(min_reps, 2), 2
    times: list[float] = []
    with quiet_gc():
        while len(times) < min_reps or (sum(times) < min_time and len(times) < max_reps):
            start = clock(device)
            fn()
            times.append(clock(device) - start)
    return times


def median(values) -> float:
    values = sorted(values)
    if not values:
        return math.nan
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def quantile(values, q: float) -> float:
    """Linear-interpolation quantile (numpy's default)."""
    values = sorted(values)
    if not values:
        return math.nan
    position = q * (len(values) - 1)
    lo, hi = math.floor(position), math.ceil(position)
    return values[lo] + (values[hi] - values[lo]) * (position - lo)


# ====================================================================== tables
class Table:
    """Rows of cells (strings) under a header: aligned text, Markdown, CSV."""

    def __init__(self, columns: list[str], title: str = ""):
        self.columns = columns
        self.title = title
        self.rows: list[list[str]] = []

    def add(self, *cells) -> None:
        self.rows.append([str(c) for c in cells])

    def text(self) -> str:
        widths = [max(len(c), *(len(r[i]) for r in self.rows)) if self.rows else len(c)
                  for i, c in enumerate(self.columns)]

        def line(cells):
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        out = [self.title] if self.title else []
        out += [line(self.columns), "  ".join("-" * w for w in widths)] + [line(r) for r in self.rows]
        return "\n".join(out)

    def markdown(self) -> str:
        out = [f"**{self.title}**", ""] if self.title else []
        return "\n".join(out + markdown_table(self.columns, self.rows))


def write_csv(path: str | os.PathLike, columns: list[str], rows: list[dict]) -> None:
    """A bench's table, every float in full (``repr``), written atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_value(row.get(k)) for k in columns})
    atomic_write_text(os.fspath(path), buffer.getvalue())


def _csv_value(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return value


def write_markdown(path: str | os.PathLike, title: str, env: dict, sections: list[str]) -> None:
    lines = [f"# {title}", ""] + [f"* {line}" for line in environment_lines(env)] + [""]
    for section in sections:
        lines += [section, ""]
    atomic_write_text(os.fspath(path), "\n".join(lines))


def ms(seconds: float, digits: int = 2) -> str:
    return "-" if seconds is None or math.isnan(seconds) else f"{seconds * 1e3:.{digits}f}"


def percent(fraction: float, digits: int = 2) -> str:
    return "-" if fraction is None or math.isnan(fraction) else f"{fraction * 100:.{digits}f}%"


# ====================================================================== the spec
def find_spec(path: str | None = None) -> str:
    """The Burgers spec: ``path``, else specs/burgers.pinn under the working directory or the checkout."""
    if path:
        if not os.path.isfile(path):
            raise BenchError(f"{path}: no such spec file")
        return path
    candidates = [Path.cwd() / "specs" / SPEC_NAME, Path(__file__).resolve().parents[2] / "specs" / SPEC_NAME]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    raise BenchError(f"cannot find specs/{SPEC_NAME} (looked in {', '.join(str(c.parent) for c in candidates)}); "
                     "pass --spec FILE")


def load_spec(path: str, *, points: dict[str, int] | None = None, overrides: dict | None = None):
    """The checked spec at ``path`` with its ``points`` counts replaced (condition -> count) and
    ``overrides`` applied (``pinnspec.lang._overrides.apply_overrides`` keys); the test and validation
    points are cut to 100 each (:data:`STEP_ONLY_OVERRIDES`) unless ``overrides`` says otherwise."""
    from ..lang import SpecError, load, loads
    from ..lang import apply_overrides

    try:
        spec = load(path)
        if points:
            spec = _with_points(spec, points, loads)
        return apply_overrides(spec, {**STEP_ONLY_OVERRIDES, **(overrides or {})})
    except SpecError as err:
        raise BenchError("\n" + err.render()) from None


def _with_points(spec, points: dict[str, int], loads):
    statements = [st for st in spec.ast.statements if st.keyword == "points"]
    if not statements:
        raise BenchError(f"{spec.filename}: the spec has no 'points' statement to change")
    counts: dict[str, str] = {}
    lines = spec.source.splitlines()
    for st in statements:
        for pc in st.counts:
            counts[pc.name.name] = pc.count.text
        for i in range(st.span.line - 1, st.span.end_line):
            lines[i] = "# (replaced by the benchmark) " + lines[i]
    unknown = [name for name in points if name not in counts]
    if unknown:
        raise BenchError(f"the spec has no point count for '{unknown[0]}' (it has: {', '.join(counts)})")
    counts.update({k: str(int(v)) for k, v in points.items()})
    text = "\n".join(lines + ["points " + ", ".join(f"{k} {v}" for k, v in counts.items())]) + "\n"
    return loads(text, filename=spec.filename, base_dir=spec.ir.source_dir)

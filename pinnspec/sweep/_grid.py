"""What a sweep is (a spec, a grid of settings, seeds, fixed settings, an output
folder) and its plan: one :class:`Run` per (setting, seed), every one checked
before anything starts.  No torch here."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import tomllib
from dataclasses import dataclass, field

SEED = "seed"
COMMAND_LINE = "pinnspec sweep"
FILE_KEYS = ("spec", "out", "seeds", "grid", "fixed")
_NAME_LIMIT = 200  # run-directory names longer than this are cut and get a hash


class SweepError(ValueError):
    """A mistake in a sweep (file or command line); the message says which key."""


def setting_keys() -> list[str]:
    """The keys a grid or ``fixed`` table may use: the training statements and the
    train settings (``seed`` is given by ``seeds``)."""
    from .. import catalog
    from ..lang import STATEMENT_KEYS

    return [k for k in (*STATEMENT_KEYS, *catalog.TRAIN_SETTINGS) if k != SEED]


@dataclass
class Sweep:
    """A grid of runs: ``spec`` x every combination of ``grid`` x ``seeds``,
    all with the ``fixed`` settings, written under ``out``.

    Values are the text a ``--set key=value`` override takes (``"config"``,
    ``"cagrad(c = 0.4)"``, ``2000``).  ``seeds=None`` runs the spec's own seed.
    """

    spec: str
    grid: dict[str, list[str]] = field(default_factory=dict)
    seeds: list[int] | None = None
    fixed: dict[str, str] = field(default_factory=dict)
    out: str | None = None
    origin: str = COMMAND_LINE  # named in error messages: the sweep file, or the command line

    def __post_init__(self):
        self.spec = os.fspath(self.spec)
        self.grid = {str(k): [_value_text(v, f"{self.origin}: error: {self.where('grid')} {k}")
                              for v in _as_list(vs, k, f"{self.origin}: error: {self.where('grid')}")]
                     for k, vs in self.grid.items()}
        self.fixed = {str(k): _value_text(v, f"{self.origin}: error: {self.where('fixed')} {k}")
                      for k, v in self.fixed.items()}
        if self.seeds is not None:
            self.seeds = _seed_list(self.seeds, f"{self.origin}: error: seeds")
        if self.out is not None:
            self.out = os.fspath(self.out)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Sweep":
        """Read a sweep file (TOML).  ``spec`` and ``out`` are relative to the file's folder."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except OSError as err:
            raise SweepError(f"{path}: error: cannot read the sweep file ({err.strerror})") from None
        except tomllib.TOMLDecodeError as err:
            raise SweepError(f"{path}: error: not a valid TOML file ({err})") from None
        unknown = [k for k in data if k not in FILE_KEYS]
        if unknown:
            raise SweepError(f"{path}: error: unknown key '{unknown[0]}'{_hint(unknown[0], FILE_KEYS)} "
                             f"(a sweep file has: {', '.join(FILE_KEYS)})")
        if "spec" not in data:
            raise SweepError(f"{path}: error: the sweep file names no spec (spec = \"specs/NAME.pinn\")")
        for key in ("spec", "out"):
            if key in data and not isinstance(data[key], str):
                raise SweepError(f"{path}: error: '{key}' must be a string (a path)")
        for key in ("grid", "fixed"):
            if key in data and not isinstance(data[key], dict):
                raise SweepError(f"{path}: error: '{key}' must be a table ([{key}])")
        folder = os.path.dirname(os.path.abspath(path))
        out = data.get("out")
        return cls(spec=os.path.join(folder, data["spec"]), grid=data.get("grid", {}), seeds=data.get("seeds"),
                   fixed=data.get("fixed", {}), out=None if out is None else os.path.join(folder, out), origin=path)

    def where(self, table: str) -> str:
        """How an error names the grid or the fixed settings: ``[grid]`` in a file, ``--grid`` on the command line."""
        if self.origin == COMMAND_LINE:
            return "--grid" if table == "grid" else "--set"
        return f"[{table}]"

    def default_out(self) -> str:
        """``runs/sweep-<spec name>`` under the working directory (so the same
        command, run again, finds its runs)."""
        return os.path.join("runs", f"sweep-{os.path.splitext(os.path.basename(self.spec))[0]}")


@dataclass(frozen=True)
class Run:
    """One planned run: a setting (the grid values) and a seed."""

    name: str  # the run directory's name, e.g. surgery=config__align=gua__seed=0
    setting: tuple[tuple[str, str], ...]  # (key, value) in grid order
    seed: int
    run_dir: str  # absolute
    source: str  # the resolved spec text (what the run saves as config.pinn)
    filename: str
    base_dir: str  # relative data paths of the spec resolve here

    @property
    def label(self) -> str:
        return "__".join(f"{k}={v}" for k, v in self.setting) or "(spec)"


def plan(sweep: Sweep) -> list[Run]:
    """Every run of ``sweep``, each checked (its overrides applied to the spec).

    Raises :class:`SweepError` naming the key when a grid or fixed key is unknown,
    and with the rendered spec errors when any combination is invalid: nothing
    may start then."""
    from ..lang import SpecError, load
    from ..lang import apply_overrides

    keys = setting_keys()
    for table, entries in (("grid", sweep.grid), ("fixed", sweep.fixed)):
        where = f"{sweep.origin}: error: {sweep.where(table)}"
        for key, values in entries.items():
            if key == SEED:
                raise SweepError(f"{where} seed: give the seeds with seeds = [0, 1, 2] (--seeds 0,1,2), "
                                 f"not as a setting")
            if key not in keys:
                raise SweepError(f"{where}: unknown setting '{key}'{_hint(key, keys)} "
                                 f"(settings are the training statements and train settings: {', '.join(keys)})")
            if table == "grid" and not values:
                raise SweepError(f"{where} {key} has no values")
            if table == "grid" and len(set(values)) != len(values):
                raise SweepError(f"{where} {key} lists a value twice")
    both = [k for k in sweep.grid if k in sweep.fixed]
    if both:
        raise SweepError(f"{sweep.origin}: error: '{both[0]}' is both in the grid and fixed; keep one")
    try:
        spec = load(sweep.spec)
    except OSError as err:
        raise SweepError(f"{sweep.spec}: error: cannot read the spec ({err.strerror})") from None

    seeds = sweep.seeds
    if seeds is None:
        try:
            base = apply_overrides(spec, dict(sweep.fixed))
        except SpecError as err:
            raise SweepError(f"{sweep.origin}: error: the fixed settings do not apply to {sweep.spec}:\n"
                             f"{err.render()}") from None
        seeds = [int(base.ir.training.setting(SEED))]
    out = os.path.abspath(sweep.out or sweep.default_out())

    runs: list[Run] = []
    invalid: list[str] = []
    errors: dict[str, str] = {}  # a rendered error -> the first run that has it
    settings = list(itertools.product(*[[(k, v) for v in vs] for k, vs in sweep.grid.items()]))
    for seed in seeds:
        for setting in settings:
            name = run_name(setting, seed)
            overrides = {**sweep.fixed, **dict(setting), SEED: seed}
            try:
                resolved = apply_overrides(spec, overrides)
            except SpecError as err:
                invalid.append(name)
                for diagnostic in err.errors:
                    errors.setdefault(diagnostic.render(err.source), name)
                continue
            runs.append(Run(name=name, setting=tuple(setting), seed=seed, run_dir=os.path.join(out, name),
                            source=resolved.source, filename=spec.filename, base_dir=resolved.ir.source_dir))
    if errors:
        shown = [f"in run {name}:\n{text}" for text, name in list(errors.items())[:10]]
        more = f"\n... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise SweepError(f"{sweep.origin}: error: {len(invalid)} of {len(invalid) + len(runs)} runs have invalid "
                         f"settings; nothing was started\n" + "\n".join(shown) + more)
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise SweepError(f"{sweep.origin}: error: different settings give the same run directory name "
                         f"'{twice[0]}': write the values so they differ in letters or digits")
    return runs


def run_name(setting, seed: int) -> str:
    """The run directory's name: ``key=value`` pairs of the grid, then the seed,
    joined by ``__``; a value keeps letters, digits and ``._+-`` (anything else
    becomes ``-``): ``cagrad(c = 0.4)`` -> ``cagrad-c-0.4``."""
    parts = [f"{k}={_slug(v)}" for k, v in setting] + [f"{SEED}={seed}"]
    name = "__".join(parts)
    if len(name) > _NAME_LIMIT:
        digest = hashlib.sha1(name.encode()).hexdigest()[:12]
        name = f"{name[:_NAME_LIMIT - 14]}~{digest}"
    return name


def _slug(value: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "-", value).strip("-")
    return slug or hashlib.sha1(value.encode()).hexdigest()[:8]


# ---------------------------------------------------------------- values
def _hint(name: str, candidates) -> str:
    from ..registry import did_you_mean

    hint = did_you_mean(name, list(candidates))
    return f"; did you mean '{hint}'?" if hint else ""


def _as_list(values, key, where) -> list:
    if isinstance(values, (list, tuple)):
        return list(values)
    raise SweepError(f"{where} {key} must be a list of values, e.g. {key} = [\"a\", \"b\"]")


def _value_text(value, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SweepError(f"{where}: {value!r} is not a setting value (write a string, e.g. \"pcgrad\" or "
                         f"\"adam(lr = 1e-3)\", or a number)")
    text = value.strip() if isinstance(value, str) else repr(value)
    if not text:
        raise SweepError(f"{where}: an empty value")
    return text


def _seed_list(seeds, where: str) -> list[int]:
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, (list, tuple)) or not seeds:
        raise SweepError(f"{where}: seeds must be a non-empty list of whole numbers, e.g. seeds = [0, 1, 2]")
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise SweepError(f"{where}: {s!r} is not a seed (a whole number >= 0)")
        out.append(int(s))
    if len(set(out)) != len(out):
        raise SweepError(f"{where}: a seed is listed twice")
    return out


def split_values(text: str) -> list[str]:
    """``config,pcgrad`` -> ["config", "pcgrad"]; commas inside parentheses,
    brackets or quotes do not split: ``adam(lr = 1e-3, betas = [0.9, 0.99]),sgd``."""
    parts, depth, quote, current = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    parts.append("".join(current).strip())
    return parts


def parse_seeds(text: str) -> list[int]:
    """``0,1,2`` or ``0-4`` (inclusive) or a mix: ``0-2,7``."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise SweepError(f"--seeds: error: the range '{part}' is empty")
            seeds.extend(range(lo, hi + 1))
        elif part.isdigit():
            seeds.append(int(part))
        else:
            raise SweepError(f"--seeds: error: '{part}' is not a seed (whole numbers, e.g. 0,1,2 or 0-4)")
    return seeds

from __future__ import annotations

import argparse
import glob
import os
import sys
import traceback

from .. import __version__
from .._files import UnsafeCheckpoint
from .._rundir import RunDirLocked, RunFileError, RunLock, read_result, resuming
from ..lang import SpecError, load

EXIT_OK, EXIT_USER, EXIT_INTERNAL = 0, 1, 2


class UserError(Exception):
    """A mistake in how the command was called (printed without a traceback)."""


def _cmd_check(args) -> int:
    ok = True
    for path in args.files:
        files = _pinn_files_in(path) if os.path.isdir(path) else [path]
        if not files:
            print(f"{path}: error: no .pinn file in this directory or below it", file=sys.stderr)
        ok = bool(files) and all([_check_file(file) for file in files]) and ok
    return EXIT_OK if ok else EXIT_USER


def _pinn_files_in(folder: str) -> list[str]:
    return sorted(glob.glob(os.path.join(folder, "**", "*.pinn"), recursive=True))


def _check_file(path: str) -> bool:
    """Check one spec, printing its errors and warnings; True when it has no errors."""
    try:
        spec = load(path)
    except SpecError as err:
        print(err.render(), file=sys.stderr)
        return False
    except OSError as err:
        print(f"{path}: error: cannot read the file ({err.strerror})", file=sys.stderr)
        return False
    if spec.warnings:
        print(spec.render_warnings(), file=sys.stderr)
    _warn_files_outside_domain(path, spec)
    return True


def _warn_files_outside_domain(path: str, spec) -> None:
    """Warnings for a reference or data file with rows outside the spec's domain (a warning, not an error:
    the spec trains, but those rows are not the solution's)."""
    if spec.ir.domain is None:
        return
    from ..sampling import files_outside_domain  # numpy only

    for message in files_outside_domain(spec.ir):
        print(f"{path}: warning: {message}", file=sys.stderr)


def _load(path):
    """A checked spec; its warnings go to stderr; errors raise (rendered by main)."""
    try:
        spec = load(path)
    except OSError as err:
        raise UserError(f"{path}: error: cannot read the file ({err.strerror})") from None
    if spec.warnings:
        print(spec.render_warnings(), file=sys.stderr)
    return spec


def _cmd_show(args) -> int:
    spec = _spec_with_overrides(args)
    if args.out is not None and args.stage != "geometry":
        raise UserError(f"--out is for --stage geometry (the PNG to write), not --stage {args.stage}")
    if args.stage == "geometry":
        from ..plots import plot_geometry

        out = args.out or os.path.splitext(os.path.basename(args.file))[0] + "-geometry.png"
        try:
            print(plot_geometry(spec, out))
        except ValueError as err:
            raise UserError(f"{out}: error: {err}") from None
        return EXIT_OK
    if args.stage == "step":
        from ..engine import describe_execution

        try:
            print(describe_execution(spec))
        except ValueError as err:
            raise UserError(f"{args.file}: error: {err}") from None
        return EXIT_OK
    if args.stage == "recipe":
        if not spec.recipe:
            raise UserError(f"{args.file}: error: the spec has no recipe to show: write 'recipe strong' in it, or "
                            "give --set recipe=strong")
        print(spec.source, end="")
        return EXIT_OK
    if args.stage in ("ast", "ir"):
        from ..lang import format_ast, format_ir

        print(format_ast(spec.ast) if args.stage == "ast" else format_ir(spec.ir))
        return EXIT_OK
    from ..compiler import compile_spec

    problem = compile_spec(spec.ir, spec.ir.grouping().name)  # what the spec's grouping trains
    print(problem.describe_plan() if args.stage == "plan" else problem.kernel_source, end="\n")
    return EXIT_OK


def _parse_params(items: list[str]) -> dict[str, float]:
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            params[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"--param expects NAME=NUMBER, got '{item}'") from None
    return params


def _cmd_tune(argv: list[str]) -> int:
    from ..tune import main as tune_main

    return tune_main(argv)


def _cmd_verify(args) -> int:
    spec = _load(args.file)
    from ..compiler import compile_spec
    from ..compiler import format_checks, verify

    problem = compile_spec(spec.ir)
    try:
        checks = verify(problem, seed=args.seed, params=_parse_params(args.param), rtol=args.rtol)
    except ValueError as err:
        raise UserError(f"{args.file}: error: {err}") from None
    print(format_checks(checks, f"{args.file}: the exact solution through the training path "
                                f"(float64, seed {args.seed}, rtol {args.rtol:g})"))
    failed = [c for c in checks if not c.passed]
    if failed:
        names = ", ".join(f"'{c.name}' (rms/scale {c.relative:.2e})" for c in failed)
        print(f"{args.file}: error: the exact solution does not satisfy {names}: "
              "check these conditions for a wrong sign, coefficient or term", file=sys.stderr)
        return EXIT_USER
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # a bad command line is a user error: exit 1, not argparse's 2
        self.print_usage(sys.stderr)
        self.exit(EXIT_USER, f"{self.prog}: error: {message}\n")


def _default_run_dir(problem: str) -> str:
    import time

    base = os.path.join("runs", f"{problem}-{time.strftime('%Y%m%d-%H%M%S')}")
    path, i = base, 1
    while os.path.exists(path):
        i += 1
        path = f"{base}-{i}"
    return path


def _errors_line(result, best: str, final: str) -> str:
    if result.validation == "held-out residual":
        return (f"no reference: no test error; the checkpoint kept is the validation epoch with the lowest "
                f"residual on held-out points (epoch {result.best_epoch})")
    when = "no validation yet" if result.best_epoch is None else f"best validation, epoch {result.best_epoch}"
    return f"test rel-L2 {best} ({when}), final {final}"


#: what the conflict rates of the summary are, in one line (docs/training.md, "What one epoch does")
CONFLICT_RATES = ("the share of diagnosed steps where two task gradients conflict (R_g), and where the surgery's "
                  "direction a, the optimizer's proposal u or the applied update p raises some task's loss "
                  "(R_a, R_u, R_p)")


def _summary(result) -> str:
    rates = result.rates
    fmt = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
    best = "-" if result.rel_l2 is None else f"{result.rel_l2:.3e}"
    final = "-" if result.rel_l2_final is None else f"{result.rel_l2_final:.3e}"
    lines = [
        f"{result.problem}: {result.status} after {result.epochs_done}/{result.epochs} epochs "
        f"in {result.train_time_s:.1f} s on {result.device}",
        *([f"  {result.message}"] if result.status == "completed" and result.message else []),
        "  " + _errors_line(result, best, final),
        f"  conflict rates R_g {fmt(rates['R_g'])} -> R_a {fmt(rates['R_a'])} -> R_u {fmt(rates['R_u'])}"
        f" -> R_p {fmt(rates['R_p'])}",
        f"  ({CONFLICT_RATES})",
    ]
    if result.params:
        lines.append("  params " + ", ".join(f"{k} = {v:.6g}" for k, v in result.params.items()))
    if result.reports:
        lines.append("  reports " + ", ".join(f"{k} = {v:.6g}" for k, v in result.reports.items()))
    if result.run_dir:
        lines.append(f"  written to {result.run_dir}")
    return "\n".join(lines)


def _cmd_train(args) -> int:
    log = (lambda line: print(line, file=sys.stderr)) if args.quiet else None
    if args.distributed:
        return _train_distributed(args, log)
    if args.resume:
        _check_resume_args(args)
        from ..engine import load_run  # torch loads once the command line is known to be good

        with resuming(args.resume):
            try:
                trainer = load_run(args.resume, progress=not args.quiet, log=log)
            except (RunFileError, UnsafeCheckpoint):
                raise
            except ValueError as err:  # the run cannot start here (its device, say)
                raise UserError(f"{args.resume}: error: {err}") from None
            result = trainer.run()
    else:
        if not args.file:
            raise UserError("train needs a FILE (or --resume RUN_DIR)")
        spec = _spec_with_overrides(args)
        from ..engine import Trainer

        out = args.out or _default_run_dir(spec.ir.name)
        try:
            trainer = Trainer(spec, out, progress=not args.quiet, log=log)
        except ValueError as err:
            raise UserError(f"{args.file}: error: {err}") from None
        with RunLock(out):  # a second writer of `out` is refused until this run ends
            _claim_run_dir(out, args.overwrite)  # after the setup: a run that cannot start replaces nothing
            result = trainer.run()
    print(_summary(result))
    if result.status == "diverged":
        print(f"error: {result.message} ({_what_is_kept(result.run_dir)})", file=sys.stderr)
        return EXIT_USER
    if result.status == "interrupted":
        _print_how_to_resume(result.run_dir, "pinnspec train --resume {}")
        return 130
    return EXIT_OK


def _what_is_kept(run_dir: str | None) -> str:
    if not run_dir:
        return "nothing was written: no --out"
    if os.path.isfile(os.path.join(run_dir, "checkpoint.pt")):
        return f"the last checkpoint written before the divergence is kept in {run_dir}"
    return f"no checkpoint had been written yet; {run_dir} holds the result and history up to the divergence"


def _check_resume_args(args) -> None:
    given = args.file or args.set_values or args.out or args.overwrite
    if given or any(getattr(args, k) is not None for k in _TRAIN_FLAGS):
        raise UserError("--resume continues a run exactly as it was configured, in its own directory: "
                        "give no FILE, overrides, --out or --overwrite")
    _require_run_file(args.resume, "checkpoint.pt")


def _require_run_file(run_dir: str, name: str) -> str:
    """The path of ``name`` in the run directory ``run_dir``; a user error when either is missing."""
    if not os.path.exists(run_dir):
        raise UserError(f"{run_dir}: error: no such directory")
    if not os.path.isdir(run_dir):
        raise UserError(f"{run_dir}: error: not a directory (expected a run directory)")
    path = os.path.join(run_dir, name)
    if not os.path.isfile(path):
        raise UserError(f"{run_dir}: error: no {name} here (is it a run directory?)")
    return path


def _spec_with_overrides(args):
    """The spec FILE with the command line's overrides applied (each named as typed in its errors)."""
    from ..lang import apply_overrides, flag_text, set_text

    overrides, written = {}, {}
    for key in _TRAIN_FLAGS:
        value = getattr(args, key, None)
        if value is not None:
            overrides[key], written[key] = value, flag_text(key, value)
    for key, value in _set_values(args.set_values).items():
        overrides[key], written[key] = value, set_text(key, value)
    return apply_overrides(_load(args.file), overrides, written)


def _claim_run_dir(out: str, overwrite: bool, announce: bool = True) -> None:
    """Refuse to train into a directory that holds files, unless ``overwrite`` (then say what was replaced)."""
    from ..engine import RunDirInUse, claim_run_dir

    try:
        removed = claim_run_dir(out, overwrite)
    except RunDirInUse as err:
        raise UserError(f"error: {err}") from None
    if removed and announce:
        print(f"--overwrite: replacing the run in {out} (removed {', '.join(removed)})", file=sys.stderr)


def _print_how_to_resume(run_dir: str, command: str) -> None:
    print(f"the run stopped early; to continue it: {command.format(run_dir)}", file=sys.stderr)


def _train_distributed(args, log) -> int:
    """One rank of a data-parallel run (``torchrun --nproc_per_node N -m pinnspec train FILE --distributed``)."""
    import torch
    import torch.distributed as dist

    from ..engine import Trainer, load_run, run_spec

    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise UserError("--distributed runs under torchrun: torchrun --nproc_per_node N -m pinnspec train FILE "
                        "--distributed")
    if args.resume:  # every rank reads the same checkpoint (a filesystem all ranks share); rank 0 writes on
        _check_resume_args(args)
        device = run_spec(args.resume).ir.training.setting("device")
    elif not args.file:
        raise UserError("--distributed needs a FILE (or --resume RUN_DIR)")
    else:
        spec = _spec_with_overrides(args)
        device = args.device or spec.ir.training.setting("device")
        if args.out:  # every rank checks before any starts (no rank writes before all have joined the group)
            _claim_run_dir(args.out, args.overwrite, announce=os.environ["RANK"] == "0")
    wants_cuda = device != "cpu" and torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if wants_cuda else "gloo")
    try:
        rank = dist.get_rank()
        if args.resume:
            trainer = load_run(args.resume, progress=not args.quiet and rank == 0, log=log, distributed=True)
        else:
            out = args.out or (_default_run_dir(spec.ir.name) if rank == 0 else None)
            trainer = Trainer(spec, out, progress=not args.quiet and rank == 0, log=log, distributed=True)
        result = trainer.run()
    finally:
        dist.destroy_process_group()
    if rank == 0:
        print(_summary(result))
        if result.status == "interrupted":
            _print_how_to_resume(result.run_dir, f"torchrun --nproc_per_node {os.environ['WORLD_SIZE']} "
                                                 "-m pinnspec train --resume {} --distributed")
    return EXIT_USER if result.status == "diverged" else EXIT_OK


def _set_values(items: list[str]) -> dict[str, str]:
    values = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--set expects KEY=VALUE, got '{item}'")
        values[key.strip()] = value.strip()
    return values


_TRAIN_FLAGS = ("epochs", "surgery", "optimizer", "align", "grouping", "seed", "recipe", "time", "device", "dtype")


def _cmd_eval(args) -> int:
    run = args.run_dir
    _require_run_file(run, "checkpoint.pt")
    from ..engine import load_run

    trainer = load_run(run, device=args.device, out=None)  # every file checked: a bad one is one line
    result = trainer.result()
    saved = read_result(run) if os.path.isfile(os.path.join(run, "result.json")) else {}
    if not trainer.evaluation.has_reference:
        print(f"{run}: no reference: no test error (the spec has no 'reference' or 'exact' to test against; "
              f"the kept checkpoint is the validation epoch with the lowest residual at held-out points, epoch "
              f"{result.best_epoch})")
        return EXIT_OK
    print(f"{run}: re-tested on {len(trainer.evaluation.test_points)} test points ({trainer.device})")
    for key, label in (("rel_l2", "best validation checkpoint"), ("rel_l2_final", "final model")):
        value = getattr(result, key)
        before = saved.get(key)
        same = "" if before is None or value is None else (" (matches result.json)" if abs(value - before) <= 1e-6 * max(abs(before), 1e-30) else f" (result.json: {before:.6e})")
        print(f"  test rel-L2, {label}: {'-' if value is None else f'{value:.6e}'}{same}")
    for line in _eval_outside_domain(trainer):
        print(line)
    return EXIT_OK


def _eval_outside_domain(trainer) -> list[str]:
    """Test points outside the spec's domain (rows of a reference file, say) are flagged, not refused: the
    errors above keep them, as training computed them; the lines add the errors inside the domain only."""
    domain, evaluation = trainer.spec.ir.domain, trainer.evaluation
    if domain is None or not evaluation.has_reference:
        return []
    import torch

    from ..sampling import farthest_outside, outside_domain

    points = evaluation.test_points.double().cpu().numpy()  # [N, d]
    found = farthest_outside(domain, trainer.spec.ir.coordinates, points)
    if found is None:
        return []
    count, example = found
    keep = torch.as_tensor(~outside_domain(domain, points), device=evaluation.test_points.device)  # [N]
    lines = [f"  warning: {count} of {len(points)} test points lie outside the domain '{domain.name}' "
             f"({domain.expression}), the farthest at {example}; the errors above include them (as "
             f"training computed them)"]
    if not bool(keep.any()):
        return lines + ["  no test point lies inside the domain: no error inside it"]
    saved = evaluation.test_points, evaluation.test_reference
    evaluation.test_points, evaluation.test_reference = saved[0][keep], saved[1][keep]
    try:
        inside = trainer.result()
    finally:
        evaluation.test_points, evaluation.test_reference = saved
    for key, label in (("rel_l2", "best validation checkpoint"), ("rel_l2_final", "final model")):
        value = getattr(inside, key)
        lines.append(f"  test rel-L2 inside the domain only ({int(keep.sum())} points), {label}: "
                     f"{'-' if value is None else f'{value:.6e}'}")
    return lines


def _cmd_plot(args) -> int:
    from ..plots import plot_run

    try:
        paths = plot_run(args.run_dir)
    except RunFileError:
        raise
    except ValueError as err:
        raise UserError(f"{args.run_dir}: error: {err}") from None
    for path in paths:
        print(path)
    return EXIT_OK


#: the rows of ``pinnspec compare``: (label, the value in result.json, its format)
_COMPARE_ROWS = (
    ("problem", lambda r: r.get("problem"), "{}"),
    ("surgery", lambda r: r.get("surgery"), "{}"),
    ("optimizer", lambda r: r.get("optimizer"), "{}"),
    ("align", lambda r: r.get("align"), "{}"),
    ("status", lambda r: r.get("status"), "{}"),
    ("epochs", lambda r: f"{r.get('epochs_done', '?')}/{r.get('epochs', '?')}", "{}"),
    ("test rel-L2 (best val.)", lambda r: r.get("rel_l2"), "{:.3e}"),
    ("test rel-L2 (final)", lambda r: r.get("rel_l2_final"), "{:.3e}"),
    ("best epoch", lambda r: r.get("best_epoch"), "{}"),
    *((name, lambda r, name=name: (r.get("rates") or {}).get(name), "{:.1%}") for name in ("R_g", "R_a", "R_u", "R_p")),
    ("train time (s)", lambda r: r.get("train_time_s"), "{:.1f}"),
)


def _cmd_compare(args) -> int:
    if len(args.run_dirs) < 2:
        raise UserError("compare needs at least two run directories: pinnspec compare RUN_DIR RUN_DIR ...")
    results = [_read_result(run_dir) for run_dir in args.run_dirs]
    print(_comparison_table(args.run_dirs, results))
    if args.out:
        from ..plots import plot_comparison

        try:
            print(plot_comparison(args.run_dirs, args.out))
        except ValueError as err:
            raise UserError(f"{args.out}: error: {err}") from None
    return EXIT_OK


def _read_result(run_dir: str) -> dict:
    _require_run_file(run_dir, "result.json")
    return read_result(run_dir)


def _comparison_table(run_dirs: list[str], results: list[dict]) -> str:
    names = [os.path.basename(os.path.normpath(d)) for d in run_dirs]
    if len(set(names)) < len(names):  # runs/a/config and runs/b/config: show the paths
        names = list(run_dirs)
    rows = [["", *names]]
    for label, value_of, style in _COMPARE_ROWS:
        rows.append([label, *(_cell(value_of(r), style) for r in results)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _cell(value, style: str) -> str:
    if value is None:
        return "-"
    try:
        return style.format(value)
    except (ValueError, TypeError):  # "nan" (JSON has none) or a hand-edited value: shown as written
        return str(value)


def _cmd_sweep(argv: list[str]) -> int:
    from ..sweep import main as sweep_main

    return sweep_main(argv)


def _cmd_bench(args) -> int:
    from .. import bench
    from ..registry import did_you_mean

    if args.name is None:  # `pinnspec bench`: the list of benchmarks, as a usage error
        print(args.bench_help(), end="", file=sys.stderr)
        return EXIT_USER
    if args.name not in bench.BENCHMARKS:
        hint = did_you_mean(args.name, bench.BENCHMARKS)
        more = f"; did you mean '{hint}'?" if hint else f" (known: {', '.join(bench.BENCHMARKS)})"
        raise UserError(f"unknown benchmark '{args.name}'{more}")
    return bench.main(args.name, args.args)


def _cmd_lsp(args) -> int:
    try:
        from ..editor import serve  # pygls: the optional extra `lsp`
    except ImportError as err:
        raise UserError(f"pinnspec lsp needs pygls and lsprotocol ({err}): pip install 'pinnspec[lsp]'") from None
    return serve()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pinnspec",
        description="Physics-informed neural networks written as text (.pinn files).",
    )
    parser.add_argument("--version", action="version", version=f"pinnspec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("check", help="parse and check specs; prints nothing but warnings on success")
    p.add_argument("files", nargs="+", metavar="FILE|DIR", help="a .pinn file, or a directory: every .pinn in it "
                                                               "and below it")
    p.set_defaults(run=_cmd_check)

    p = sub.add_parser("lsp", help="the language server of .pinn files on stdin and stdout (diagnostics of check, "
                                   "hover, completion, definitions, outline; docs/editor.md)")
    p.add_argument("--stdio", action="store_true", help="stdin and stdout (the only transport; for clients "
                                                        "that pass it)")
    p.set_defaults(run=_cmd_lsp)

    p = sub.add_parser("show", help="print a stage of the compiled problem")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--stage", choices=["ast", "ir", "plan", "kernel", "step", "geometry", "recipe"], default="ir",
                   help="ast: the syntax tree with source positions; ir: the checked problem (SymPy residuals); "
                        "recipe: the spec with its recipe written out, one reason per choice (text to paste and "
                        "edit; with --set recipe=strong for a spec without a recipe statement); "
                        "plan: the point sets and the autograd calls of the derivative plan; "
                        "kernel: the generated residual code; step: how a training step runs (the execution "
                        "plan: the strategies in order, why, and what a failure falls back to); "
                        "geometry: write a PNG of the domain with the sampled points and outward normals "
                        "(see --out)")
    p.add_argument("--out", metavar="PNG", default=None,
                   help="--stage geometry: the PNG to write (default: SPEC_STEM-geometry.png in the current "
                        "directory)")
    p.add_argument("--set", dest="set_values", action="append", default=[], metavar="KEY=VALUE",
                   help="override a training statement or train setting first, as train --set does "
                        "(e.g. --set compile=on)")
    p.set_defaults(run=_cmd_show)

    p = sub.add_parser("verify", help="run the spec's exact solution through the training path; "
                                      "fails, naming the condition, when a residual is not at rounding level")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled points (default 0)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a param (inverse problems); conditions using a param not given are reported "
                        "but not judged")
    p.add_argument("--rtol", type=float, default=1e-6,
                   help="tolerance relative to the condition's scale (default 1e-6)")
    p.set_defaults(run=_cmd_verify)

    p = sub.add_parser("train", help="train a spec (flags override the spec's training statements)")
    p.add_argument("file", metavar="FILE", nargs="?")
    p.add_argument("--epochs", type=int)
    p.add_argument("--surgery", metavar="NAME|CALL", help="e.g. config, pcgrad, 'cagrad(c = 0.4)', none")
    p.add_argument("--optimizer", metavar="CALL", help="e.g. adam, 'adam(lr = 2e-3)', sgd, soap")
    p.add_argument("--align", metavar="CALL|none", help="e.g. gua, 'gua(metric = euclidean)', none")
    p.add_argument("--grouping", metavar="NAME", help="a grouping of the spec, e.g. two or three")
    p.add_argument("--seed", type=int)
    p.add_argument("--recipe", metavar="CALL", help="train with a recipe: it replaces the spec's choices of network, "
                                                    "stages, sampling, enforced conditions ... (e.g. strong, "
                                                    "'strong(time = 10 min)'; `show --stage recipe` prints them)")
    p.add_argument("--time", metavar="DURATION", help="a wall-time budget for the run, which its stages share "
                                                      "(e.g. '10 min', '90 s', '1 h')")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"])
    p.add_argument("--dtype", choices=["float32", "float64"])
    p.add_argument("--out", metavar="DIR", help="run directory (default: a fresh folder under runs/); "
                                                "one that holds files is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run in --out DIR: remove the files its manifest.json lists (config.pinn, "
                        "result.json, history.csv, checkpoint.pt, predictions.npz, its plots); other files stay, and a "
                        "DIR that holds no run is refused")
    p.add_argument("--set", dest="set_values", action="append", default=[], metavar="KEY=VALUE",
                   help="override any training statement, the point counts or a train setting, e.g. --set "
                        "optimizer='adam(lr = 1e-3)' --set validate='test every 100' --set 'points=pde 4096, "
                        "ic 256' --set checkpoint_every=500")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")
    p.add_argument("--quiet", action="store_true", help="log lines instead of a progress bar")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel training under torchrun (gloo on CPU, NCCL on GPUs)")
    p.set_defaults(run=_cmd_train)

    p = sub.add_parser("eval", help="re-test a saved run (best-validation and final model)")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"])
    p.set_defaults(run=_cmd_eval)

    p = sub.add_parser("plot", help="loss curves, conflict rates, prediction vs reference (PNG)")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.set_defaults(run=_cmd_plot)

    p = sub.add_parser("compare", help="a side-by-side table of runs (settings, status, test rel-L2, conflict "
                                       "rates, time); --out PNG also plots their curves")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", metavar="PNG", help="also write a figure of the runs' validation and conflict-rate curves")
    p.set_defaults(run=_cmd_compare)

    p = sub.add_parser("sweep", help="a grid of runs (spec x settings x seeds) on a local pool or a Ray cluster",
                       description="pinnspec sweep FILE|SWEEP.toml [--grid KEY=V1,V2 ...] [--seeds 0,1,2] "
                                   "[--set KEY=VALUE ...] [--out DIR] [--jobs N] [--threads T] [--ray auto|ADDRESS] "
                                   "[--dry-run]")
    p.set_defaults(run=lambda _: _cmd_sweep(["--help"]))

    p = sub.add_parser("tune", help="search a recipe's open choices (network, learning rate, Fourier scales) "
                                    "within a wall time, judged on held-out residuals; writes the winner as a "
                                    ".set file", description="pinnspec tune SPEC --time T [--trials N] [--seed S] "
                                                             "[--set KEY=VALUE ...] [--out DIR]")
    p.set_defaults(run=lambda _: _cmd_tune(["--help"]))

    from ..bench import BENCHMARKS  # torch-free

    p = sub.add_parser("bench", help="benchmarks: speed, overhead, and the paper's experiments gum, q2 ... q6",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="benchmarks:\n" + "\n".join(f"  {k:9} {v}" for k, v in BENCHMARKS.items()))
    p.add_argument("name", metavar="NAME", nargs="?", help=f"{' | '.join(BENCHMARKS)} (NAME --help lists its options)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(run=_cmd_bench, bench_help=p.format_help)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "sweep":  # the sweep has its own parser (options may precede FILE)
        args = argparse.Namespace(run=lambda _: _cmd_sweep(argv[1:]))
    elif argv and argv[0] == "tune":  # so has the tune
        args = argparse.Namespace(run=lambda _: _cmd_tune(argv[1:]))
    else:
        args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UserError as err:
        print(str(err), file=sys.stderr)
        return EXIT_USER
    except UnsafeCheckpoint as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER
    except (RunFileError, RunDirLocked) as err:  # one line naming the file
        print(str(err), file=sys.stderr)
        return EXIT_USER
    except SpecError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:  # an internal error: a bug in pinnspec, not the user's
        traceback.print_exc()
        print("pinnspec: internal error (a bug in pinnspec; please report it with the trace above)", file=sys.stderr)
        return EXIT_INTERNAL

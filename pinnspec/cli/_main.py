from __future__ import annotations

import argparse
import sys
import traceback

from ..lang import SpecError, load

EXIT_OK, EXIT_USER, EXIT_INTERNAL = 0, 1, 2


class UserError(Exception):
    """A mistake in how the command was called (printed without a traceback)."""


def _cmd_check(args) -> int:
    failed = False
    for path in args.files:
        try:
            spec = load(path)
        except SpecError as err:
            print(err.render(), file=sys.stderr)
            failed = True
            continue
        except OSError as err:
            print(f"{path}: error: cannot read the file ({err.strerror})", file=sys.stderr)
            failed = True
            continue
        if spec.warnings:
            print(spec.render_warnings(), file=sys.stderr)
    return EXIT_USER if failed else EXIT_OK


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
    spec = _load(args.file)
    if args.stage in ("ast", "ir"):
        from ..lang._show import format_ast, format_ir

        print(format_ast(spec.ast) if args.stage == "ast" else format_ir(spec.ir))
        return EXIT_OK
    from ..compiler import compile_spec

    problem = compile_spec(spec)
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


def _cmd_verify(args) -> int:
    spec = _load(args.file)
    from ..compiler import compile_spec
    from ..compiler._verify import format_checks, verify

    problem = compile_spec(spec)
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pinnspec",
        description="Physics-informed neural networks written as text (.pinn files).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("check", help="parse and check specs; prints nothing but warnings on success")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(run=_cmd_check)

    p = sub.add_parser("show", help="print a stage of the compiled problem")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--stage", choices=["ast", "ir", "plan", "kernel"], default="ir",
                   help="ast: the syntax tree with source positions; ir: the checked problem (SymPy residuals); "
                        "plan: the point sets and the autograd calls of the derivative plan; "
                        "kernel: the generated residual code")
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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UserError as err:
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

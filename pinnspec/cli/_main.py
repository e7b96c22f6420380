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


def _cmd_show(args) -> int:
    from ..lang._show import format_ast, format_ir

    try:
        spec = load(args.file)
    except SpecError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_USER
    except OSError as err:
        raise UserError(f"{args.file}: error: cannot read the file ({err.strerror})") from None
    if spec.warnings:
        print(spec.render_warnings(), file=sys.stderr)
    print(format_ast(spec.ast) if args.stage == "ast" else format_ir(spec.ir))
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
    p.add_argument("--stage", choices=["ast", "ir"], default="ir",
                   help="ast: the syntax tree with source positions; ir: the checked problem (SymPy residuals)")
    p.set_defaults(run=_cmd_show)
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

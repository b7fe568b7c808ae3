"""The ``castwise`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import runtime
from runtime import lattice


def _cmd_lattice(args: argparse.Namespace) -> int:
    names = [args.policy] if args.policy else list(runtime.policies())
    for i, name in enumerate(names):
        if i:
            print()
        if args.check:
            print(f"policy {name}:")
            for result in lattice.check_laws(name):
                verdict = "holds" if result.holds else f"fails: {result.counterexample}"
                print(f"  {result.law:<20} {verdict}")
        else:
            print(lattice.render(name, args.format))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="castwise", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    lat = sub.add_parser("lattice", help="print or check a promotion policy's table")
    lat.add_argument("policy", nargs="?", choices=runtime.policies(), help="policy name (default: every policy)")
    lat.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    lat.add_argument(
        "--check", action="store_true", help="report which laws hold, with a counterexample for each that fails"
    )
    lat.set_defaults(func=_cmd_lattice)
    _add_parity(sub)
    _add_explain(sub)
    from autodiff.jit import add_export_parser

    add_export_parser(sub)
    return parser


def _add_parity(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``castwise parity``: the JAX regression sweep (``autodiff.parity``)."""
    from autodiff import parity

    parity.add_parser(sub)


def _cmd_explain(args: argparse.Namespace) -> int:
    from autodiff.explain import explain

    try:
        print(explain(args.spec, args.var, args.policy))
    except (TypeError, ValueError) as err:  # a refused op or a bad spec: one line, no traceback
        print(f"castwise explain: {type(err).__name__}: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


def _add_explain(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``castwise explain``: a plan and its graph before and after the passes."""
    exp = sub.add_parser(
        "explain",
        help="show the promotion plan of an op or expression and its graph before/after promote and canonicalize",
        description='e.g. castwise explain "add f64 c128"; '
        'castwise explain "x * 2.5 + y" --var x=i32[3] --var y=f32[3]',
    )
    exp.add_argument("spec", help='"OP DTYPE [DTYPE ...]" (OP may be stack), or a Python expression with --var')
    exp.add_argument("--var", action="append", default=[], help="NAME=DTYPE[SHAPE] for the expression form")
    exp.add_argument("--policy", choices=runtime.policies(), default=None, help="promotion policy (default: jax)")
    exp.set_defaults(func=_cmd_explain)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``castwise`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `castwise lattice | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())

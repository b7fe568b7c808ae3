"""The ``castwise`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import runtime
from runtime.core import lattice


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``castwise explain: ...``), no usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def version() -> str:
    """castwise's version: the installed distribution's, else the checkout's pyproject.toml."""
    from importlib import metadata

    try:
        return metadata.version("castwise")
    except metadata.PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])


def _one_line(err: BaseException) -> str:
    """An exception as one line: its message (a KeyError's without quotes), else its type."""
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    text = " ".join(text.split())
    return text or type(err).__name__


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
            print(lattice.render(name, args.format, args.width or None))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="castwise", description=__doc__)
    parser.add_argument("--version", action="version", version=f"castwise {version()}")
    sub: argparse._SubParsersAction[Any] = parser.add_subparsers(dest="command", required=True)
    lat = sub.add_parser("lattice", help="print or check a promotion policy's table")
    lat.add_argument("policy", nargs="?", choices=runtime.policies(), help="policy name (default: every policy)")
    lat.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    lat.add_argument(
        "--width",
        type=int,
        default=lattice.TEXT_WIDTH,
        help=f"wrap the text table into blocks at most this wide (default {lattice.TEXT_WIDTH}; 0: one block)",
    )
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
    from autodiff.explain import ExplainInputError, explain, refusal

    try:
        text = explain(args.spec, args.var, args.policy)
    except runtime.PromotionError as err:  # what explain is for: the plan's error and the policy's reason
        print(f"castwise explain: {refusal(args.spec, args.var, args.policy, err)}", file=sys.stderr)
        return 1
    except (ExplainInputError, runtime.ArityError, runtime.ShapeError, runtime.OpTypeError) as err:
        print(f"castwise explain: {_one_line(err)}", file=sys.stderr)
        return 2
    print(text)
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


def _export_argument_error(args: argparse.Namespace) -> str | None:
    """What is wrong with ``castwise export``'s ``--arg`` / ``--grad`` values, checked before tracing."""
    from autodiff.jit import parse_arg_spec

    for spec in args.arg:
        try:
            parse_arg_spec(spec)
        except TypeError as err:  # an unknown dtype name in dtype[dims]
            return f"bad --arg {spec!r}: {_one_line(err)}"
        except ValueError as err:
            return _one_line(err)
    if args.grad is not None:
        nums = [n.strip() for n in args.grad.split(",") if n.strip()]
        if not nums or not all(n.isdigit() for n in nums):
            return f"--grad takes argument numbers (0, or 0,2), got {args.grad!r}"
        if any(int(n) >= len(args.arg) for n in nums):
            return f"--grad {args.grad} is out of range: {len(args.arg)} --arg value(s), numbered from 0"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``castwise`` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "export" and (problem := _export_argument_error(args)) is not None:
        print(f"castwise export: {problem}", file=sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `castwise lattice | head`
        return 0
    except Exception as err:  # a command-line error is one line, never a traceback
        print(f"castwise {args.command}: {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

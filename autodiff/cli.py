"""The ``castwise`` command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

import runtime
from autodiff.suggest import did_you_mean
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


def policy_choice(text: str) -> str:
    """``argparse`` type of a ``--policy`` / ``POLICY`` argument: a registered policy, else a
    one-line error that suggests the closest name (``pytorch``: ``did you mean torch?``)."""
    names = runtime.policies()
    if text in names:
        return text
    hint = did_you_mean(text, names)
    raise argparse.ArgumentTypeError(
        f"invalid choice: {text!r}{'; ' + hint if hint else ''} (choose from {', '.join(names)})"
    )


def terminal_width() -> int:
    """The width of the terminal standard output goes to (``$COLUMNS`` first; 80 when it is no terminal)."""
    return max(20, shutil.get_terminal_size().columns)


def _one_line(err: BaseException) -> str:
    """An exception as one line: its message (a KeyError's without quotes), else its type."""
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    text = " ".join(text.split())
    return text or type(err).__name__


def _lattice_overview() -> str:
    """What bare ``castwise lattice`` prints: the policies, one line each, and how to print one."""
    width = terminal_width()
    names = runtime.policies()
    pad = max(len(n) for n in names) + 2
    lines = [f"castwise lattice: the promotion policies (the default: {runtime.get_policy()}):"]
    for name in names:
        pol = runtime.get_policy_object(name)
        text = f"{name:<{pad}}{len(pol.dtypes):>2} dtypes  {pol.summary}"
        lines += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent=" " * (pad + 13))
    lines += [
        "",
        "castwise lattice POLICY           print its table (or --format markdown, json)",
        "castwise lattice POLICY --check   check its laws (commutative, associative, ...)",
        "castwise lattice --check          check every policy's laws",
        "castwise lattice --all            print every policy's table",
    ]
    return "\n".join(line[:width] if len(line) > width else line for line in lines)


def _cmd_lattice(args: argparse.Namespace) -> int:
    if not (args.policy or args.check or args.all):
        print(_lattice_overview())
        return 0
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
    lat.add_argument(
        "policy",
        nargs="?",
        type=policy_choice,
        metavar="POLICY",
        help=f"policy name ({', '.join(runtime.policies())}); none: the list of policies",
    )
    lat.add_argument("--all", action="store_true", help="print every policy's table")
    lat.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    lat.add_argument(
        "--width",
        type=int,
        default=lattice.TEXT_WIDTH,
        help=f"wrap the text table into blocks at most this wide (default {lattice.TEXT_WIDTH}; 0: one block)",
    )
    lat.add_argument(
        "--check",
        action="store_true",
        help="report which laws hold, with a counterexample for each that fails (no POLICY: every policy)",
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
    from autodiff.explain import ExplainInputError, explain, op_names, refusal

    if args.list_ops:
        print(textwrap.fill(", ".join(op_names()), terminal_width(), break_on_hyphens=False))
        return 0
    if args.spec is None:
        print('castwise explain: give an op and its dtypes ("add f64 c128"), an expression with --var, '
              "or --list-ops (see castwise explain --help)", file=sys.stderr)  # fmt: skip
        return 2
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
    exp.add_argument(
        "spec", nargs="?", help='"OP DTYPE [DTYPE ...]" (OP may be stack), or a Python expression with --var'
    )
    exp.add_argument("--var", action="append", default=[], help="NAME=DTYPE[SHAPE] for the expression form")
    exp.add_argument("--policy", type=policy_choice, default=None, metavar="POLICY",
                     help=f"promotion policy ({', '.join(runtime.policies())}; default: jax)")  # fmt: skip
    exp.add_argument("--list-ops", action="store_true", help="print the op names and exit")
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


@contextlib.contextmanager
def _import_path(target: str) -> Iterator[None]:
    """Where ``castwise export TARGET`` imports from, as ``python`` would: the current directory
    for ``module:function`` (``python -m`` puts it first on ``sys.path``; the console script,
    whose ``sys.path[0]`` is its own directory, did not, so ``castwise export mymod:f`` failed in
    mymod's directory), the file's directory for ``file.py:function`` (its sibling imports)."""
    module, _, _ = target.rpartition(":")
    where = os.path.dirname(os.path.abspath(module)) if module.endswith(".py") or "/" in module else os.getcwd()
    added = where not in sys.path and not (where == os.getcwd() and "" in sys.path)
    if added:
        sys.path.insert(0, where)
    try:
        yield
    finally:
        if added and where in sys.path:
            sys.path.remove(where)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``castwise`` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "export" and (problem := _export_argument_error(args)) is not None:
        print(f"castwise export: {problem}", file=sys.stderr)
        return 2
    try:
        if args.command == "export":
            with _import_path(args.target):
                return int(args.func(args))
        return int(args.func(args))
    except BrokenPipeError:  # `castwise lattice | head`
        return 0
    except Exception as err:  # a command-line error is one line, never a traceback
        print(f"castwise {args.command}: {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

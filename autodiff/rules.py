"""The derivative rule tables: one JVP rule and one VJP rule per differentiable op.

Rules live in ``autodiff.derivatives``, one module per op family (``binary``, ``unary``,
``contraction``, ``indexing`` ... as in ``runtime.core.kernels``; its docstring gives the layout); each
is a named function followed by its registration line into ``JVP_RULES`` or ``VJP_RULES``. They
operate on Tensors with the runtime's op functions, so running them under a recorder
(``create_graph``, ``trace``) records a derivative program made of vocabulary ops, which can be
printed, verified, and differentiated again.

JVP rule::

    rule(primals, tangents, outputs, **params) -> tangent per output

``tangents`` holds a ``Tensor`` or a symbolic ``Zero`` per input (at least one
is not a Zero); ``outputs`` are the primal outputs. A returned tangent has its
output's dtype and shape, or is a ``Zero``.

VJP rule (reverse mode, real inner product ``<a, b> = Re(sum(conj(a) * b))``)::

    rule(cotangents, primals, outputs, needs, **params) -> cotangent per input

``cotangents`` holds one per output (at least one is not a Zero); ``needs[i]``
says whether input i wants a cotangent (return ``Zero`` otherwise, to save
work). A returned cotangent has its input's dtype and shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from autodiff.zeros import TangentLike
from runtime.core import ops
from runtime.core.tensor import Tensor

JvpRule = Callable[..., Sequence[TangentLike]]
VjpRule = Callable[..., Sequence[TangentLike]]

JVP_RULES: dict[str, JvpRule] = {}
VJP_RULES: dict[str, VjpRule] = {}

#: What an op's VJP rule reads of its equation's primal values: positions
#: ``(inputs, outputs)``, or a function of ``needs`` (which inputs get a
#: cotangent) that returns them. A recording holds exactly these values (what
#: PyTorch calls saved tensors and JAX residuals), so a long eager computation
#: does not keep every intermediate alive; an op without an entry holds all of
#: its values. Registered next to the VJP rule, and checked for every op by
#: running the rule tests with the values it does not declare poisoned
#: (``autodiff.engine.poison_unsaved``).
Positions = tuple[tuple[int, ...], tuple[int, ...]]
Saves = Positions | Callable[[Sequence[bool]], Positions]
VJP_SAVES: dict[str, Saves] = {}

#: reads only avals (shapes and dtypes): add, reshape, reduce_sum, ...
SAVES_NOTHING: Positions = ((), ())
#: reads the primal output (d exp x = exp x dx)
SAVES_OUTPUT: Positions = ((), (0,))
#: reads the primal input (d sin x = cos x dx)
SAVES_INPUT: Positions = ((0,), ())


def saves_other_operand(needs: Sequence[bool]) -> Positions:
    """A bilinear op (mul, dot_general): each operand's cotangent reads the other operand."""
    return (tuple(i for i, other_needs in ((0, needs[1]), (1, needs[0])) if other_needs), ())


def saved_positions(op_name: str, needs: Sequence[bool]) -> Positions | None:
    """The values a recording of ``op_name`` holds given ``needs`` (``None``: all)."""
    saves = VJP_SAVES.get(op_name)
    if saves is None or isinstance(saves, tuple):
        return saves
    return saves(needs)


def non_differentiable_ops() -> tuple[str, ...]:
    """Ops declared without derivatives (comparisons, logical ops, iota, ...)."""
    return tuple(name for name, op in ops.OPS.items() if not op.differentiable)


def differentiable_ops() -> tuple[str, ...]:
    return tuple(name for name, op in ops.OPS.items() if op.differentiable)


def missing_rules() -> dict[str, list[str]]:
    """Differentiable ops lacking a rule, per table (empty lists when complete)."""
    return {
        "jvp": [n for n in differentiable_ops() if n not in JVP_RULES],
        "vjp": [n for n in differentiable_ops() if n not in VJP_RULES],
    }


RULE_MODULES = (
    "autodiff.derivatives.binary",
    "autodiff.derivatives.unary",
    "autodiff.derivatives.conversion",
    "autodiff.derivatives.contraction",
    "autodiff.derivatives.indexing",
    "autodiff.derivatives.reductions",
    "autodiff.derivatives.structural",
    "autodiff.derivatives.special",
    "autodiff.derivatives.linalg",
    "autodiff.derivatives.windowed",
    "autodiff.derivatives.convolution",
    "autodiff.derivatives.fft",
)


def load_rules() -> None:
    """Import the rule modules (each registers its rules in both tables)."""
    import importlib

    for name in RULE_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:
                raise


PrimalList = Sequence[Tensor]
Params = dict[str, Any]

"""``jax.lax.reduce`` and ``jax.lax.reduce_window`` with a user computation (issue 23).

The computation (a Python function of castwise Tensors: ``computation(x, y)``, with ``x`` and
``y`` shaped like ``operands``, a Tensor or a tuple of them) is traced once on 0-d stand-ins into
a castwise graph. Where each output is one monoid op of its own pair of inputs (``add``, ``mul``,
``max``, ``min``, and ``and`` / ``or`` / ``xor`` on bool and integers), the reduction is the
existing op of that monoid (``reduce_sum`` ..., ``reduce_window_sum`` ...), combined with the
init value where it is not the monoid's identity; so it records, differentiates, batches and
lowers as those ops do, as JAX's ``reduce`` turns a recognised monoid into its reduce primitive.

Any other computation (an argmax-style pair of a value and an index, say) raises
``ReduceComputationError``: a general reduction op that runs the traced computation is not
written yet (JAX would run it, and refuses its derivative).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core.errors import CastwiseError
from runtime.core.executor import as_tensor, op_error
from runtime.core.lax import binary, reductions, windowed
from runtime.core.lax._common import _named
from runtime.core.lax.conversion import convert
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor

__all__ = ["reduce", "reduce_window"]


class ReduceComputationError(OpTypeError):
    """A ``reduce`` / ``reduce_window`` computation castwise does not recognise as a monoid."""


#: monoid op -> (reduce function, reduce_window function or None, binary op function, identity)
_MONOIDS: Final[dict[str, tuple[Callable[..., Tensor], Any, Callable[..., Tensor], Any]]] = {
    "add": (reductions.reduce_sum, windowed.reduce_window_sum, binary.add, 0),
    "mul": (reductions.reduce_prod, None, binary.mul, 1),
    "max": (reductions.reduce_max, windowed.reduce_window_max, binary.max, "min"),
    "min": (reductions.reduce_min, windowed.reduce_window_min, binary.min, "max"),
    "and": (reductions.reduce_and, None, binary.logical_and, -1),
    "or": (reductions.reduce_or, None, binary.logical_or, 0),
    "xor": (reductions.reduce_xor, None, binary.logical_xor, 0),
}


def _flat(value: Any) -> tuple[list[Any], bool]:
    """``value``'s leaves and whether it was a tuple/list (lax's variadic form)."""
    if isinstance(value, tuple | list):
        return list(value), True
    return [value], False


def _identity(kind: Any, d: dt.DType) -> Any:
    if kind == "min":  # max's identity: the lowest value
        return -np.inf if d.is_inexact else (False if d.kind == "bool" else np.iinfo(d.storage).min)
    if kind == "max":
        return np.inf if d.is_inexact else (True if d.kind == "bool" else np.iinfo(d.storage).max)
    if kind == -1:  # and: all bits set
        return True if d.kind == "bool" else -1 if d.kind == "int" else np.iinfo(d.storage).max
    return kind


def _monoids(fn: str, computation: Callable[..., Any], xs: list[Tensor], tupled: bool) -> list[str]:
    """Trace ``computation`` on 0-d stand-ins; the monoid op of each output, else raise."""
    from runtime.core.graph import trace

    n = len(xs)

    def flat(*args: Tensor) -> Any:
        a, b = (list(args[:n]), list(args[n:]))
        out = computation(tuple(a), tuple(b)) if tupled else computation(a[0], b[0])
        return tuple(out) if isinstance(out, tuple | list) else out

    probes = [Tensor(np.zeros((), x.dtype.storage), x.dtype) for x in xs] * 2
    try:
        graph = trace(flat, *probes)
    except CastwiseError as err:
        raise op_error(ReduceComputationError, ops.reduce_sum, xs, f"tracing the computation failed: {err}") from None
    found: list[str] = []
    for k, out in enumerate(graph.outputs):
        eqn = out.producer
        ok = (
            len(graph.outputs) == n
            and len(graph.eqns) == n
            and eqn is not None
            and eqn.op.name in _MONOIDS
            and len(eqn.inputs) == 2
            and {id(v) for v in eqn.inputs} == {id(graph.inputs[k]), id(graph.inputs[n + k])}
            and out.dtype is xs[k].dtype
        )
        if not ok:
            raise op_error(
                ReduceComputationError, ops.reduce_sum, xs,
                "the computation is not one monoid op (add, mul, max, min, and, or, xor) per operand "
                "of its own pair of arguments; castwise runs no general computation yet, and none is "
                f"differentiable (as in JAX): {graph}",
            )  # fmt: skip
        found.append(eqn.op.name)  # type: ignore[union-attr]
    return found


def _inits(fn: str, xs: list[Tensor], init_values: Any, tupled: bool) -> list[Tensor]:
    inits, init_tupled = _flat(init_values)
    if init_tupled != tupled or len(inits) != len(xs):
        raise op_error(ShapeError, ops.reduce_sum, xs, "init_values must match operands' structure")
    out = []
    for x, v in zip(xs, inits, strict=True):
        t = as_tensor(v)
        if t.ndim != 0:
            raise op_error(ShapeError, ops.reduce_sum, (*xs, t), "each init value must be 0-d")
        if t.dtype is not x.dtype:
            if not isinstance(v, bool | int | float | complex):
                raise op_error(
                    OpTypeError, ops.reduce_sum, (*xs, t),
                    f"init value of {t.dtype} for an operand of {x.dtype} (lax wants the operand's dtype)",
                )  # fmt: skip
            t = convert(t, x.dtype)
        out.append(t)
    return out


def _is_identity(init: Tensor, monoid: str, d: dt.DType) -> bool:
    from runtime.core.graph import is_traced

    if is_traced(init) or init.requires_grad:
        return False
    ident = _identity(_MONOIDS[monoid][3], d)
    return bool(np.all(init.numpy() == np.asarray(ident).astype(d.storage)))


def _reduction(
    name: str, operands: Any, init_values: Any, computation: Callable[..., Any]
) -> tuple[list[Tensor], list[Tensor], list[str], bool]:
    """The operands as Tensors, their init values, the monoid ``computation`` is for each, and
    whether they came as a tuple: what ``reduce`` and ``reduce_window`` check alike."""
    leaves, tupled = _flat(operands)
    xs = [as_tensor(x) for x in leaves]
    return xs, _inits(name, xs, init_values, tupled), _monoids(name, computation, xs, tupled), tupled


@_named("reduce")
def reduce(operands: Any, init_values: Any, computation: Callable[..., Any], dimensions: Sequence[int]) -> Any:
    """``jax.lax.reduce``: ``operands`` (a Tensor or a tuple) reduced over ``dimensions`` with
    ``computation`` from ``init_values`` (a scalar per operand, of its dtype). A monoid
    computation is its reduce op (then ``op(init, result)`` where the init is not the monoid's
    identity); anything else raises ``ReduceComputationError``."""
    xs, inits, monoids, tupled = _reduction("reduce", operands, init_values, computation)
    outs = []
    for x, init, m in zip(xs, inits, monoids, strict=True):
        red, _, combine, _ = _MONOIDS[m]
        r = red(x, tuple(dimensions))
        outs.append(r if _is_identity(init, m, x.dtype) else combine(init, r))
    return tuple(outs) if tupled else outs[0]


@_named("reduce_window")
def reduce_window(
    operand: Any,
    init_value: Any,
    computation: Callable[..., Any],
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Any:
    """``jax.lax.reduce_window`` with ``computation`` (add, max or min per operand: the
    ``reduce_window_*`` op, combined with the init value where it is not the identity; padding
    and base-dilation holes hold the init value, as in lax)."""
    ts, inits, monoids, tupled = _reduction("reduce_window", operand, init_value, computation)
    outs = []
    for x, init, m in zip(ts, inits, monoids, strict=True):
        _, win, combine, _ = _MONOIDS[m]
        if win is None:
            raise op_error(
                ReduceComputationError, ops.reduce_window_sum, ts,
                f"castwise has no windowed {m} reduction (add, max and min are)",
            )  # fmt: skip
        r = win(x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
        outs.append(r if _is_identity(init, m, x.dtype) else combine(init, r))
    return tuple(outs) if tupled else outs[0]

"""``jax.lax.reduce`` and ``jax.lax.reduce_window`` with a user computation (issue 23).

The computation (a Python function of castwise Tensors: ``computation(x, y)``, with ``x`` and
``y`` shaped like ``operands``, a Tensor or a tuple of them) is traced once on 0-d stand-ins into
a castwise graph. Two paths run it:

* Where each output is one monoid op of its own pair of inputs (``add``, ``mul``, ``max``,
  ``min``, and ``and`` / ``or`` / ``xor`` on bool and integers), the reduction is the existing op
  of that monoid (``reduce_sum`` ..., ``reduce_window_sum`` ...), combined with the init value
  where it is not the monoid's identity, as JAX's ``reduce`` turns a recognised monoid into its
  reduce primitive.
* Any other elementwise computation (an argmax-style pair of a value and an index, a
  ``logaddexp``, ``x + y + x * y``) is composed of vocabulary ops: the operands are laid out
  with the reduced elements (or each window's elements) along a leading axis, and a pairwise
  tree combines neighbours, ``c[i] = computation(v[2i], v[2i + 1])``, an odd last element
  carried to the next level, until one element is left; then ``computation(init, that)``. A
  reduction over nothing is the init value, and a ``reduce`` of one element is that element
  (XLA's CPU backend drops the init value there; the monoid path does too). Each level is the
  traced computation replayed with the op functions on whole arrays (it is elementwise), so the
  general path records, differentiates (forward and reverse, to any order), batches (inits
  too) and lowers as any composition does, and eager, ``jit``, ``vmap`` and the derivatives run
  the same tree.

XLA leaves the order of a reduction unspecified and asks for an associative computation; its CPU
backend folds from the init value one element at a time. For an associative computation
castwise's tree gives XLA's values (up to rounding); for one that is not (``x + 2 * y``) the
two orders give different values, and castwise gives its tree's everywhere (docs/jax.md).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import ops, shapes
from runtime.core.errors import CastwiseError
from runtime.core.executor import apply, as_tensor, op_error
from runtime.core.lax import binary, reductions, structural, windowed
from runtime.core.lax._common import _named
from runtime.core.lax.contraction import concatenate
from runtime.core.lax.conversion import convert
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor

if TYPE_CHECKING:
    from runtime.core.graph import Graph

__all__ = ["reduce", "reduce_window"]


class ReduceComputationError(OpTypeError):
    """A ``reduce`` / ``reduce_window`` computation castwise cannot run: its trace failed (it
    closes over a tracked or traced Tensor, say), it is not elementwise, or its outputs do not
    match the operands' number and dtypes."""


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


#: the op families a computation may use: each is elementwise, so the computation traced on 0-d
#: stand-ins replays unchanged on whole arrays
_ELEMENTWISE: Final = frozenset({ops.BINARY, ops.COMPARE, ops.LOGICAL, ops.UNARY, ops.CONVERT, ops.SELECT, ops.CLAMP})
#: structural ops a 0-d trace can hold that do nothing on 0-d values (``rt.where`` broadcasts, say)
_NO_OPS_AT_0D: Final = frozenset({"broadcast_in_dim", "reshape"})


def _computation_graph(op: ops.OpDef, computation: Callable[..., Any], xs: list[Tensor], tupled: bool) -> Graph:
    """``computation`` traced on 0-d stand-ins of the operands (``2n`` inputs, ``n`` outputs),
    checked to be elementwise with one output per operand, of that operand's dtype."""
    from runtime.core.graph import GraphError, trace

    if not callable(computation):
        got = type(computation).__name__
        raise op_error(ReduceComputationError, op, xs, f"computation must be callable, got {got}")
    n = len(xs)

    def flat(*args: Tensor) -> Any:
        a, b = (list(args[:n]), list(args[n:]))
        out = computation(tuple(a), tuple(b)) if tupled else computation(a[0], b[0])
        return tuple(out) if isinstance(out, tuple | list) else out

    probes = [Tensor(np.zeros((), x.dtype.storage), x.dtype) for x in xs] * 2
    try:
        graph = trace(flat, *probes)
    except GraphError as err:  # the computation's values depend on Tensors that are not its arguments
        raise op_error(
            ReduceComputationError, op, xs,
            f"the computation closes over a tracked or traced Tensor ({err}); pass it as an operand",
        ) from None  # fmt: skip
    except CastwiseError as err:
        raise op_error(ReduceComputationError, op, xs, f"tracing the computation failed: {err}") from None
    got = " ".join(v.type_str() for v in graph.outputs)
    if len(graph.outputs) != n or any(
        o.dtype is not x.dtype or o.shape != () for o, x in zip(graph.outputs, xs, strict=False)
    ):
        want = " ".join(f"{x.dtype.short}[]" for x in xs)
        raise op_error(
            ReduceComputationError, op, xs,
            f"the computation must return one 0-d value per operand, of its dtype ({want}); it returns {got}",
        )  # fmt: skip
    for eqn in graph.eqns:
        zero_d = all(v.shape == () for v in (*eqn.inputs, *eqn.outputs))
        if not zero_d or (eqn.op.family not in _ELEMENTWISE and eqn.op.name not in _NO_OPS_AT_0D):
            raise op_error(
                ReduceComputationError, op, xs,
                f"the computation must be elementwise on its 0-d arguments (ops of the families "
                f"{', '.join(sorted(_ELEMENTWISE))}); it uses {eqn.op.name}: {graph}",
            )  # fmt: skip
    return graph


def _monoids(graph: Graph, xs: list[Tensor]) -> list[str] | None:
    """The monoid op of each output, where each is one monoid op of its own pair of inputs."""
    n = len(xs)
    if len(graph.eqns) != n:
        return None
    found: list[str] = []
    for k, out in enumerate(graph.outputs):
        eqn = out.producer
        ok = (
            eqn is not None
            and eqn.op.name in _MONOIDS
            and len(eqn.inputs) == 2
            and {id(v) for v in eqn.inputs} == {id(graph.inputs[k]), id(graph.inputs[n + k])}
        )
        if not ok:
            return None
        found.append(eqn.op.name)  # type: ignore[union-attr]
    return found


def _replay(graph: Graph, args: list[Tensor]) -> list[Tensor]:
    """The traced (elementwise, 0-d) computation on equal-shaped ``args``, with the op functions:
    recorded, differentiable and batchable as any program."""
    shape = args[0].shape
    env: dict[int, Tensor] = {id(v): a for v, a in zip(graph.inputs, args, strict=True)}
    for var in graph.consts:
        assert var.const is not None
        const = Tensor(var.const, var.dtype)
        const.weak = var.weak
        env[id(var)] = structural.broadcast_in_dim(const, shape, ()) if shape else const
    for eqn in graph.eqns:
        ins = [env[id(v)] for v in eqn.inputs]
        result: Tensor | tuple[Tensor, ...]
        if eqn.op.name in _NO_OPS_AT_0D:
            result = ins[0]  # (a 0-d reshape or broadcast: the value itself)
        else:
            result = apply(eqn.op, ins, eqn.params)
        outs = result if isinstance(result, tuple) else (result,)
        for var, value in zip(eqn.outputs, outs, strict=True):
            env[id(var)] = value
    return [env[id(v)] for v in graph.outputs]


def _leading(x: Tensor, start: int, limit: int, stride: int = 1) -> Tensor:
    """``x[start:limit:stride]`` along the leading axis."""
    rest = x.shape[1:]
    return structural.slice(x, (start, *(0,) * len(rest)), (limit, *rest), (stride, *(1,) * len(rest)))


def _tree(graph: Graph, vs: list[Tensor]) -> list[Tensor]:
    """Combine the ``N >= 1`` elements along the leading axis of each of ``vs`` pairwise, in order:
    ``c[i] = computation(v[2i], v[2i + 1])``, an odd last element carried, until one is left."""
    while vs[0].shape[0] > 1:
        n = vs[0].shape[0]
        pairs = 2 * (n // 2)
        left = [_leading(v, 0, pairs, 2) for v in vs]
        right = [_leading(v, 1, pairs, 2) for v in vs]
        combined = _replay(graph, left + right)
        if n % 2:
            combined = [concatenate([c, _leading(v, n - 1, n)], 0) for c, v in zip(combined, vs, strict=True)]
        vs = combined
    return [structural.reshape(v, v.shape[1:]) for v in vs]


def _with_init(graph: Graph, inits: list[Tensor], vs: list[Tensor], shape: tuple[int, ...]) -> list[Tensor]:
    """``computation(init, tree(vs))`` over ``shape``; the init values alone where there is nothing
    to reduce (``vs`` with an empty leading axis)."""
    spread = [structural.broadcast_in_dim(i, shape, ()) if shape else i for i in inits]
    if vs[0].shape[0] == 0:
        return spread
    return _replay(graph, spread + _tree(graph, vs))


def _same_shapes(op: ops.OpDef, xs: list[Tensor]) -> None:
    if len({x.shape for x in xs}) > 1:
        raise op_error(ShapeError, op, xs, "the operands of a variadic reduction must have one shape")


def _general_reduce(graph: Graph, xs: list[Tensor], inits: list[Tensor], dims: tuple[int, ...]) -> list[Tensor]:
    """``reduce`` with any elementwise computation: the reduced axes moved first and flattened,
    then the pairwise tree (the module docstring)."""
    shape = xs[0].shape
    kept = [d for d in range(len(shape)) if d not in dims]
    out_shape = tuple(shape[d] for d in kept)
    count = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    perm = (*dims, *kept)
    laid = []
    for x in xs:
        moved = x if perm == tuple(range(len(shape))) else structural.transpose(x, perm)
        laid.append(structural.reshape(moved, (count, *out_shape)))
    if count == 1:  # one element is its own reduction: XLA's CPU result drops the init value there
        return [structural.reshape(v, out_shape) for v in laid]
    return _with_init(graph, inits, laid, out_shape)


def _check_dimensions(op: ops.OpDef, xs: list[Tensor], dimensions: Any) -> tuple[int, ...]:
    try:
        dims = tuple(operator.index(d) for d in dimensions)
    except TypeError:
        raise op_error(OpTypeError, op, xs, f"dimensions must be a sequence of ints, got {dimensions!r}") from None
    ndim = xs[0].ndim
    if any(not 0 <= d < ndim for d in dims) or len(set(dims)) != len(dims):
        raise op_error(ShapeError, op, xs, f"dimensions {dims} must be distinct axes of a rank-{ndim} operand")
    return dims


def _inits(op: ops.OpDef, xs: list[Tensor], init_values: Any, tupled: bool) -> list[Tensor]:
    inits, init_tupled = _flat(init_values)
    if init_tupled != tupled or len(inits) != len(xs):
        raise op_error(ShapeError, op, xs, "init_values must match operands' structure")
    out = []
    for x, v in zip(xs, inits, strict=True):
        t = as_tensor(v)
        if t.ndim != 0:
            raise op_error(ShapeError, op, (*xs, t), "each init value must be 0-d")
        if t.dtype is not x.dtype:
            if not isinstance(v, bool | int | float | complex):
                raise op_error(
                    OpTypeError, op, (*xs, t),
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
    op: ops.OpDef, operands: Any, init_values: Any, computation: Callable[..., Any]
) -> tuple[list[Tensor], list[Tensor], Graph, list[str] | None, bool]:
    """The operands as Tensors, their init values, the traced computation, the monoid it is for
    each operand (``None``: a general computation), and whether they came as a tuple: what
    ``reduce`` and ``reduce_window`` check alike, before anything is recorded."""
    leaves, tupled = _flat(operands)
    if not leaves:
        raise op_error(ShapeError, op, (), "at least one operand is required")
    xs = [as_tensor(x) for x in leaves]
    _same_shapes(op, xs)
    inits = _inits(op, xs, init_values, tupled)
    graph = _computation_graph(op, computation, xs, tupled)
    return xs, inits, graph, _monoids(graph, xs), tupled


@_named("reduce")
def reduce(operands: Any, init_values: Any, computation: Callable[..., Any], dimensions: Sequence[int]) -> Any:
    """``jax.lax.reduce``: ``operands`` (a Tensor or a tuple of equal-shaped ones) reduced over
    ``dimensions`` with ``computation`` from ``init_values`` (a scalar per operand, of its dtype).
    A monoid computation is its reduce op (then ``op(init, result)`` where the init is not the
    monoid's identity); any other elementwise computation runs as the pairwise tree of the
    module docstring. Where one element is reduced (no ``dimensions``, or only axes of size 1)
    the result is that element, without the init value, as XLA's CPU backend gives (its
    simplifier turns such a reduce into a reshape); over no element it is the init value."""
    xs, inits, graph, monoids, tupled = _reduction(ops.reduce_sum, operands, init_values, computation)
    dims = _check_dimensions(ops.reduce_sum, xs, dimensions)
    if monoids is None:
        outs = _general_reduce(graph, xs, inits, dims)
    else:
        outs = []
        single = int(np.prod([xs[0].shape[d] for d in dims], dtype=np.int64)) == 1
        for x, init, m in zip(xs, inits, monoids, strict=True):
            red, _, combine, _ = _MONOIDS[m]
            r = red(x, dims)
            outs.append(r if single or _is_identity(init, m, x.dtype) else combine(init, r))
    return tuple(outs) if tupled else outs[0]


def _window_patches(x: Tensor, init: Tensor, params: dict[str, Any], out_shape: tuple[int, ...]) -> Tensor:
    """Every window's elements of ``x`` along a new leading axis, ``(window size, *out_shape)``, in
    row-major window order: ``x`` padded (and base-dilated) with the init value, then one strided
    slice per window offset."""
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(params["padding"], params["base_dilation"], strict=True)]
    padded = structural.pad(x, init, config) if any(c != (0, 0, 0) for c in config) else x
    slices = []
    for offset in itertools.product(*(range(k) for k in params["window_dimensions"])):
        starts = [o * d for o, d in zip(offset, params["window_dilation"], strict=True)]
        limits = [s + (n - 1) * st + 1 for s, n, st in zip(starts, out_shape, params["window_strides"], strict=True)]
        piece = structural.slice(padded, starts, limits, params["window_strides"])
        slices.append(structural.reshape(piece, (1, *out_shape)))
    return slices[0] if len(slices) == 1 else concatenate(slices, 0)


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
    """``jax.lax.reduce_window`` with ``computation``: ``add``, ``max`` or ``min`` per operand is
    the ``reduce_window_*`` op (combined with the init value where it is not the identity); any
    other elementwise computation reduces each window with the pairwise tree of the module
    docstring. Padding and base-dilation holes hold the init value, as in lax."""
    op = ops.reduce_window_sum
    ts, inits, graph, monoids, tupled = _reduction(op, operand, init_value, computation)
    wargs = (window_dimensions, window_strides, padding, base_dilation, window_dilation)
    if monoids is not None and all(_MONOIDS[m][1] is not None for m in monoids):
        outs = []
        for x, init, m in zip(ts, inits, monoids, strict=True):
            _, win, combine, _ = _MONOIDS[m]
            r = win(x, *wargs)
            outs.append(r if _is_identity(init, m, x.dtype) else combine(init, r))
        return tuple(outs) if tupled else outs[0]
    params = windowed._window_params(ts[0], *wargs)
    # the windowed ops' shape rule checks the window (ranks, sizes, strides, padding) and sizes the
    # output; any computation's dtype goes (a bool operand too), so it reads a float stand-in
    try:
        ((_, out_shape),) = shapes.abstract_eval(op, [(dt.float32, ts[0].shape)], params)
    except ShapeError as err:  # the rule's reason, named for the real operands
        why = str(err).split(": ", 1)[-1].rsplit(": x:", 1)[0]
        raise op_error(ShapeError, op, ts, why) from None
    windows = int(np.prod(params["window_dimensions"], dtype=np.int64))
    if windows == 0 or 0 in out_shape:
        outs = [structural.broadcast_in_dim(i, out_shape, ()) if out_shape else i for i in inits]
    else:
        patches = [_window_patches(x, i, params, out_shape) for x, i in zip(ts, inits, strict=True)]
        outs = _with_init(graph, inits, patches, out_shape)
    return tuple(outs) if tupled else outs[0]

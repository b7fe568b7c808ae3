"""The NumPy / jax.numpy / PyTorch-style Tensor API: reductions with ``axis`` and
``keepdims``, ``var``/``std``, ``any``/``all``, ``squeeze``/``flatten``/``clip``,
``reshape(-1)``, ``where``, advanced indexing and the functional ``x.at[idx]`` update.

Every entry point here is a composition of ordinary ops (``reshape``,
``reduce_*``, ``convert``, ``select``, ``gather``, ``scatter`` ...), each run
through the one eager executor, so a recording holds exactly what ran and
replays, differentiates and lowers like any other graph.

Where the libraries disagree, the active policy's library decides
(``LIBRARY``): jax.numpy for ``jax``/``jax-strict`` (and the policies not
modelled on a library), NumPy for ``numpy``, PyTorch for ``torch`` and ``kael``.
docs/tensor.md lists each decision.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax, ops
from runtime.core.dtypes import DType
from runtime.core.executor import as_tensor, asarray
from runtime.core.promotion import PromotionError, get_policy, get_policy_object
from runtime.core.shapes import GatherDimensionNumbers, OpTypeError, ScatterDimensionNumbers, ShapeError
from runtime.core.tensor import Tensor, attach_methods

# re-exported: the other modules of this layer (and users) reach them as tensor_methods.<name>
from runtime.numpy.common import LIBRARY, api_error, library, normalize_axes
from runtime.numpy.common import describe_operand as _describe  # noqa: F401
from runtime.numpy.common import is_int as _is_int
from runtime.numpy.common import keep_dims as _keep
from runtime.numpy.params import concrete_flag, dtype_param, refuse_traced

# -- dtype rules ---------------------------------------------------------------------------------

#: jnp.sum / jnp.prod / jnp.mean / jnp.var accumulate these in float32 and round once.
_UPCAST_F16 = frozenset({dt.float16, dt.bfloat16})


def sum_dtype(d: DType) -> DType:
    """The dtype ``sum``/``prod`` accumulate an integer or bool ``d`` in (``promote_integers``).

    jax.numpy and NumPy: bool and signed integers narrower than 64 bits -> int64,
    unsigned ones -> uint64. PyTorch: bool and every integer narrower than 64 bits -> int64.
    Inexact dtypes are kept, and so is every dtype under the policies not modelled on a
    library (neuron, tenferro, strict): their sums keep lax's meaning, which refuses bool.
    """
    if d.kind not in ("bool", "int", "uint") or (d.bits >= 64 and d.kind != "bool") or get_policy() not in LIBRARY:
        return d
    if library() == "torch" or d.kind in ("bool", "int"):
        return dt.int64
    return dt.uint64


def mean_dtype(d: DType, method: str, x: Any) -> DType:
    """The dtype ``mean``/``var``/``std`` of an integer or bool ``d`` compute in.

    jax.numpy: float32 up to 32 bits, float64 for 64-bit ones (``to_inexact_dtype``);
    NumPy: float64 always (``np.mean`` of any integer); PyTorch (which refuses integer
    means) and the other policies: the float their true division of integers gives.
    """
    if d.is_inexact:
        return d
    lib, policy = library(), get_policy_object(None)
    if lib == "numpy" and dt.float64 in policy.dtypes:
        return dt.float64
    from runtime.core.plan import inexact_dtype

    try:
        return inexact_dtype(ops.div, d, policy)
    except PromotionError as err:
        raise api_error(PromotionError, method, x, f"{err}") from None


def _real_dtype(d: DType) -> DType:
    return dt.COMPLEX_PART.get(d, d)


# -- reductions --------------------------------------------------------------------------------


def _prepared(x: Any, dtype: Any, method: str) -> Tensor:
    """``x`` as a strong Tensor, converted to ``dtype`` when one is given (jnp's ``dtype=``)."""
    t = as_tensor(x)
    if t.weak:
        t = t.astype(t.dtype)  # jax.numpy's reductions drop the weak flag first
    if dtype is not None:
        t = t.astype(dtype_param(method, dtype, (t,)))
    return t


def sum_(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None, *, method: str = "sum") -> Tensor:
    """``sum`` as the policy's library computes it: integers in ``sum_dtype``; float16 and
    bfloat16 accumulated in float32 and rounded once; ``keepdims`` a recorded reshape."""
    keepdims = concrete_flag(method, "keepdims", keepdims, (x,))
    t = _prepared(x, dtype, method)
    axes = normalize_axes(t, axis, method)
    wide = sum_dtype(t.dtype) if dtype is None else t.dtype  # an explicit dtype= is the accumulator
    if wide is not t.dtype:
        t = lax.convert(t, wide)
    return _keep(lax.sum_(t, axes), t, axes, keepdims)


def prod(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Tensor:
    """``prod``: integers in ``sum_dtype``, float16/bfloat16 accumulated in float32."""
    keepdims = concrete_flag("prod", "keepdims", keepdims, (x,))
    t = _prepared(x, dtype, "prod")
    axes = normalize_axes(t, axis, "prod")
    wide = sum_dtype(t.dtype) if dtype is None else t.dtype
    if wide is not t.dtype:
        t = lax.convert(t, wide)
    if t.dtype in _UPCAST_F16:
        out = lax.convert(lax.reduce_prod(lax.convert(t, dt.float32), axes), t.dtype)
    else:
        out = lax.reduce_prod(t, axes)
    return _keep(out, t, axes, keepdims)


def extreme(x: Any, axis: Any, keepdims: bool, largest: bool) -> Tensor:
    """``max``/``min``: a reduction without identity, so an empty reduced axis raises, as in
    NumPy, jax.numpy and PyTorch."""
    method = "max" if largest else "min"
    keepdims = concrete_flag(method, "keepdims", keepdims, (x,))
    t = _prepared(x, None, method)
    axes = normalize_axes(t, axis, method)
    empty = [a for a in axes if t.shape[a] == 0]
    if empty:
        raise api_error(
            ShapeError, method, t,
            f"zero-size reduction over axis {empty[0]} has no identity; reduce a non-empty axis "
            f"or use where() with an initial value",
        )  # fmt: skip
    out = (lax.reduce_max if largest else lax.reduce_min)(t, axes)
    return _keep(out, t, axes, keepdims)


def mean(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Tensor:
    """``mean``: integers and bool divide into ``mean_dtype`` (converted before summing, so
    they do not overflow); float16/bfloat16 summed and divided in float32, rounded once."""
    keepdims = concrete_flag("mean", "keepdims", keepdims, (x,))
    t = _prepared(x, dtype, "mean")
    axes = normalize_axes(t, axis, "mean")
    requested = t.dtype
    target = mean_dtype(t.dtype, "mean", t)
    if target is not t.dtype:
        t = lax.convert(t, target)
    out = lax._mean(t, axes)
    if dtype is not None and out.dtype is not requested:  # mean(dtype=int8): the float mean, converted
        out = lax.convert(out, requested)
    return _keep(out, t, axes, keepdims)


def var(
    x: Any, axis: Any = None, ddof: Any = None, keepdims: bool = False, *, correction: Any = None,
    method: str = "var",
) -> Tensor:  # fmt: skip
    """The variance ``sum(|x - mean|^2) / (N - ddof)``.

    ``ddof`` (NumPy, jax.numpy) and ``correction`` (PyTorch, jax.numpy) are the same
    number; the default is 0 under jax.numpy and NumPy, 1 under PyTorch. jax.numpy
    divides by ``N - ddof`` as it is; NumPy and PyTorch clamp it at 0. Complex inputs
    give a real variance; integers compute in ``mean_dtype``, float16/bfloat16 in float32.
    Recorded as ``convert? -> mean -> sub -> mul (conj) / square -> reduce_sum -> div -> convert?``.
    """
    if ddof is not None and correction is not None:
        raise api_error(TypeError, method, x, "give ddof or correction, not both")
    keepdims = concrete_flag(method, "keepdims", keepdims, (x,))
    t = _prepared(x, None, method)
    axes = normalize_axes(t, axis, method)
    shift = correction if correction is not None else ddof
    if shift is None:
        shift = 1 if library() == "torch" else 0
    if isinstance(shift, builtins.bool) or not isinstance(shift, (int, float)):
        raise api_error(TypeError, method, t, f"ddof/correction must be a number, got {shift!r}")
    result = mean_dtype(t.dtype, method, t)
    compute = dt.float32 if result in _UPCAST_F16 else result
    if compute is not t.dtype:
        t = lax.convert(t, compute)
    centered = lax.sub(t, _keep(lax._mean(t, axes), t, axes, True))
    if centered.dtype.kind == "complex":
        squares = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        squares = lax.mul(centered, centered)
    count = math.prod(t.shape[a] for a in axes)
    normalizer = count - shift
    total = lax.reduce_sum(squares, axes)
    if normalizer <= 0 and library() == "jax":
        # jax.numpy: NaN where N - ddof <= 0 (its ``where(normalizer > 0, ..., nan)``; no gradient)
        out = lax.full(total.shape, float("nan"), total.dtype)
    else:
        # NumPy and PyTorch divide by max(N - ddof, 0): inf or NaN. The divisor is a 0-d
        # tensor of the sum's dtype, no weak scalar, so every policy (strict too) plans it.
        divisor = np.asarray(builtins.max(normalizer, 0), total.dtype.storage)
        out = lax.div(total, asarray(divisor, total.dtype))
    final = _real_dtype(result)
    if out.dtype is not final:
        out = lax.convert(out, final)
    return _keep(out, t, axes, keepdims)


def std(x: Any, axis: Any = None, ddof: Any = None, keepdims: bool = False, *, correction: Any = None) -> Tensor:
    """``sqrt(var(...))`` (same ``ddof``/``correction`` defaults as ``var``)."""
    v = var(x, axis, ddof, keepdims, correction=correction, method="std")
    if v.dtype in _UPCAST_F16:  # jnp.std takes the root in the float32 of its computation
        return lax.convert(lax.sqrt(lax.convert(v, dt.float32)), v.dtype)
    return lax.sqrt(v)


def any_all(x: Any, axis: Any, keepdims: bool, is_any: bool) -> Tensor:
    """``any``/``all``: the input as bool (a recorded ``convert``: nonzero and NaN are true),
    then ``reduce_max``/``reduce_min`` over bool (lax's reduce_or/reduce_and of bool).

    The result is bool, except under PyTorch, whose ``any``/``all`` of uint8 is uint8.
    """
    method = "any" if is_any else "all"
    keepdims = concrete_flag(method, "keepdims", keepdims, (x,))
    t = _prepared(x, None, method)
    axes = normalize_axes(t, axis, method)
    b = t if t.dtype is dt.bool_ else lax.convert(t, dt.bool_)
    out = (lax.reduce_max if is_any else lax.reduce_min)(b, axes)
    if library() == "torch" and t.dtype is dt.uint8:
        out = lax.convert(out, dt.uint8)
    return _keep(out, t, axes, keepdims)


# -- shape methods -------------------------------------------------------------------------------


def reshape(x: Tensor, shape: Sequence[Any], method: str = "reshape") -> Tensor:
    """``x`` reshaped; one ``-1`` stands for the size that makes the element count agree."""
    sizes = list(shape)
    holes = [i for i, s in enumerate(sizes) if _is_int(s) and operator.index(s) == -1]
    if len(holes) > 1:
        raise api_error(ShapeError, method, x, f"can only infer one dimension of {tuple(shape)}")
    if holes:
        known = math.prod(operator.index(s) for i, s in enumerate(sizes) if i != holes[0] and _is_int(s))
        if known == 0 or x.size % known:
            raise api_error(ShapeError, method, x, f"cannot reshape {x.size} elements into {tuple(shape)}")
        sizes[holes[0]] = x.size // known
    return lax.reshape(x, tuple(sizes))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """The axes ``start_dim..end_dim`` (PyTorch's names; all of them by default) as one."""
    if x.ndim == 0:
        return reshape(x, (1,), "flatten")  # NumPy, jax.numpy and PyTorch flatten a scalar to [1]
    first, last = normalize_axes(x, start_dim, "flatten")[0], normalize_axes(x, end_dim, "flatten")[0]
    if first > last:
        raise api_error(ShapeError, "flatten", x, f"start_dim {start_dim} comes after end_dim {end_dim}")
    merged = math.prod(x.shape[first : last + 1])
    return reshape(x, (*x.shape[:first], merged, *x.shape[last + 1 :]), "flatten")


def squeeze(x: Tensor, axis: Any = None) -> Tensor:
    """``x`` without the size-1 ``axis`` (all size-1 axes by default).

    NumPy and jax.numpy refuse an axis whose size is not 1; PyTorch leaves it as it is.
    """
    if axis is None:
        axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = normalize_axes(x, axis, "squeeze")
        wrong = [a for a in axes if x.shape[a] != 1]
        if wrong and library() != "torch":
            raise api_error(ShapeError, "squeeze", x, f"cannot squeeze axis {wrong[0]} of size {x.shape[wrong[0]]}")
        axes = tuple(a for a in axes if x.shape[a] == 1)
    if not axes:
        return x
    return reshape(x, tuple(n for i, n in enumerate(x.shape) if i not in axes), "squeeze")


def clip(x: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """``maximum(x, min)`` then ``minimum(., max)`` (jax.numpy's ``clip``; ``min > max``
    gives ``max``, as in all three libraries). Operands promote per the policy."""
    if min is None and max is None:
        return lax._fresh_copy(x)  # np.clip's result is new memory, never x's
    if get_policy() == "torch":
        x, min, max = _clamp_operands(x, min, max)  # noqa: A001
    out = x
    if min is not None:
        out = lax.max(out, min)
    if max is not None:
        out = lax.min(out, max)
    return out


def _clamp_operands(x: Tensor, low: Any, high: Any) -> tuple[Tensor, Any, Any]:
    """``torch.clamp``'s promotion: the input and both bounds at once, by PyTorch's categories (int32
    between a 0-d float64 and a float32 tensor is float32, not float64), arrays converted to it."""
    from runtime.core.promotion import result_type

    try:
        common = result_type(x, *(b for b in (low, high) if b is not None))
    except PromotionError as err:
        raise api_error(PromotionError, "clip", x, f"{err}") from None

    def to_common(v: Any) -> Any:
        if v is None or type(v) in (bool, int, float, complex):
            return v  # a Python scalar joins as PyTorch's wrapped number: no dtype of its own
        t = as_tensor(v)
        return t if t.dtype is common else lax.convert(t, common)

    return to_common(x), to_common(low), to_common(high)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (``select``, broadcasting all three; a
    non-bool condition is compared with 0 first, as jax.numpy does).

    With the condition alone: the indices of its nonzero elements, one int64 Tensor per
    axis (``np.nonzero``), read from its current values.
    """
    if x is None and y is None:
        c = as_tensor(condition)
        _refuse_traced_values(c, "where", "the indices of nonzero elements have a data-dependent count", "condition")
        return tuple(Tensor(np.ascontiguousarray(i, np.int64), dt.int64) for i in np.nonzero(c._array))
    if x is None or y is None:
        raise api_error(TypeError, "where", condition, "give both x and y, or neither")
    c = as_tensor(condition)
    if c.dtype is not dt.bool_:
        c = lax.ne(c, asarray(np.zeros((), c.dtype.storage), c.dtype))
    return lax.select(c, x, y)


def _refuse_traced_values(t: Tensor, method: str, why: str, param: str = "the boolean mask") -> None:
    """A value that decides a shape cannot come from a graph input that is only traced
    (``trace``, ``jit``, ``vmap``): the graph would hold this call's values as constants."""
    refuse_traced(
        method, param, t, f"{why}, which a traced graph cannot hold",
        "compute it outside the traced function, or use where(mask, x, 0) to keep the shape", (t,), index=True,
    )  # fmt: skip


def refuse_traced_bounds(fn: str, param: str, t: Tensor, x: Tensor, rule: str, hint: str) -> None:
    """Traced integer indices whose bounds the active rule checks eagerly (``rule``: NumPy's and
    PyTorch's ``IndexError``, ``mode='raise'``): the check would run on this trace's values only,
    and every replay would clamp, fill or drop an out-of-bounds index silently. Refused, as
    ``jax.jit`` refuses ``mode='raise'``; ``hint`` says what runs traced."""
    refuse_traced(
        fn, param, t, f"{rule} checks them against the bounds eagerly, which a traced program cannot do on "
        "the values each call brings", hint, (x, t), index=True,
    )  # fmt: skip


#: what to do instead of a traced bounds check, for indexing and ``.at``
_INDEX_HINT = (
    "index with concrete indices (a NumPy array, or a Tensor computed outside the traced function), "
    "use take(x, i, axis, mode='clip' | 'fill' | 'wrap'), whose rule is traced, or trace under a policy "
    "that follows jax.numpy (jax, jax-strict: reads clamp, updates drop out-of-bounds indices)"
)


def _bounds_rule() -> str:
    return f"the {get_policy()!r} policy follows {'NumPy' if library() == 'numpy' else 'PyTorch'}, which"


# -- indexing ------------------------------------------------------------------------------------


class _Advanced:
    """One advanced index component on one axis: constant int64 positions, or a Tensor;
    ``item`` is its position in the index tuple (NumPy's adjacency rule counts items)."""

    __slots__ = ("axis", "item", "value")

    def __init__(self, axis: int, value: np.ndarray | Tensor, item: int) -> None:
        self.axis = axis
        self.value = value
        self.item = item


def is_basic(index: Any) -> bool:
    """Whether ``index`` is basic (ints, slices, ``...``, ``None``): ``basic_index`` handles it."""
    items = index if type(index) is tuple else (index,)
    for item in items:
        if not (item is None or item is Ellipsis or type(item) is builtins.slice or _is_int(item)):
            return False
        if isinstance(item, Tensor):
            return False
    return True


def _classify(item: Any, x: Tensor, method: str) -> tuple[str, Any]:
    if item is None:
        return "new", None
    if item is Ellipsis:
        return "ellipsis", None
    if type(item) is builtins.slice:
        return "slice", item
    if isinstance(item, Tensor):
        if item.dtype is dt.bool_:
            return "mask", item
        if item.dtype.kind in ("int", "uint"):
            return "array", item
        raise api_error(IndexError, method, x, f"indices must be integers or bool, got a {item.dtype.name} tensor")
    if _is_int(item):
        return "int", operator.index(item)
    try:
        array = np.asarray(item)
    except (TypeError, ValueError):
        raise api_error(IndexError, method, x, f"unsupported index {item!r}") from None
    if array.dtype == np.bool_:
        return "mask", array
    if array.dtype.kind in "iu" or (array.size == 0 and array.dtype.kind == "f"):
        return "array", array.astype(np.int64)
    raise api_error(IndexError, method, x, f"indices must be integers or bool, got {array.dtype} data {item!r}")


class _Parsed:
    """An index resolved against a tensor: new axes to insert, then per-axis slices and
    advanced components (ints, integer arrays, masks as their nonzero positions)."""

    __slots__ = ("advanced", "expanded_shape", "slices")

    def __init__(self, expanded_shape: tuple[int, ...], slices: list[Any], advanced: list[_Advanced]) -> None:
        self.expanded_shape = expanded_shape
        self.slices = slices  # per axis of the expanded tensor: a slice, or None on advanced axes
        self.advanced = advanced

    @property
    def ranged(self) -> bool:
        return any(s is not None and s != builtins.slice(None) for s in self.slices)


def _parse(x: Tensor, index: Any, method: str) -> _Parsed:
    items = [_classify(i, x, method) for i in (index if type(index) is tuple else (index,))]
    if sum(1 for k, _ in items if k == "ellipsis") > 1:
        raise api_error(IndexError, method, x, "an index can only have a single ellipsis ('...')")
    consumed = sum(v.ndim if k == "mask" else 1 for k, v in items if k in ("slice", "int", "array", "mask"))
    if consumed > x.ndim:
        raise api_error(IndexError, method, x, f"too many indices for a tensor of rank {x.ndim}")
    if not any(k == "ellipsis" for k, _ in items):
        items.append(("ellipsis", None))
    shape: list[int] = []
    slices: list[Any] = []
    advanced: list[_Advanced] = []
    axis = 0  # the next axis of x
    for position, (kind, value) in enumerate(items):
        if kind == "new":
            shape.append(1)
            slices.append(builtins.slice(None))
        elif kind == "ellipsis":
            for _ in range(x.ndim - consumed):
                shape.append(x.shape[axis])
                slices.append(builtins.slice(None))
                axis += 1
        elif kind == "slice":
            shape.append(x.shape[axis])
            slices.append(value)
            axis += 1
        elif kind == "mask":
            k = value.ndim
            mshape = tuple(value.shape)
            if any(m not in (s, 0) for m, s in zip(mshape, x.shape[axis : axis + k], strict=True)):  # 0: empty
                raise api_error(
                    IndexError, method, x, f"boolean mask of shape {list(mshape)} does not match axes "
                    f"{axis}..{axis + k - 1} of shape {list(x.shape[axis : axis + k])}",
                )  # fmt: skip
            if isinstance(value, Tensor):
                _refuse_traced_values(value, method, "a boolean mask's selection has a data-dependent shape")
                value = value._array
            for positions in np.nonzero(np.atleast_1d(value)):  # 0-d: a new axis of length 1 (True) or 0 (False)
                shape.append(x.shape[axis] if k else 1)
                slices.append(None)
                advanced.append(_Advanced(len(shape) - 1, positions.astype(np.int64), position))
                axis += 1 if k else 0
        else:  # int or integer array
            if kind == "int":
                value = np.asarray(value, np.int64)
            elif isinstance(value, Tensor) and value.node is None:
                value = value._array.astype(np.int64)
            shape.append(x.shape[axis])
            slices.append(None)
            advanced.append(_Advanced(len(shape) - 1, value, position))
            axis += 1
    return _Parsed(tuple(shape), slices, advanced)


def _normalized(adv: _Advanced, n: int, x: Tensor, method: str) -> np.ndarray | Tensor:
    """The component with negative positions counted from the end; out-of-range ones raise
    under NumPy and PyTorch, and are left to the gather's clamp / the scatter's drop
    under jax.numpy (its ``mode`` semantics)."""
    value = adv.value
    if library() != "jax" and isinstance(value, Tensor) and value.size:
        refuse_traced_bounds(method, "the integer index", value, x, _bounds_rule(), _INDEX_HINT)
    concrete = value._array if isinstance(value, Tensor) else value
    if library() != "jax" and concrete.size:
        bad = concrete[(concrete < -n) | (concrete >= n)]
        if bad.size:
            raise api_error(
                IndexError, method, x, f"index {int(bad.flat[0])} is out of bounds for axis {adv.axis} with size {n}"
            )
    if not isinstance(value, Tensor):
        return np.where(value < 0, value + n, value).astype(np.int64)
    if value.dtype is not dt.int64:
        value = lax.convert(value, dt.int64)
    zero = asarray(np.zeros((), np.int64), dt.int64)
    size = asarray(np.asarray(n, np.int64), dt.int64)
    return lax.select(lax.lt(value, zero), lax.add(value, size), value)


def _indices(parsed: _Parsed, shape: tuple[int, ...], x: Tensor, method: str) -> tuple[Tensor, tuple[int, ...]]:
    """The advanced components broadcast together and stacked on a last axis (the index
    vector of gather/scatter), and their broadcast shape."""
    parts = [_normalized(a, shape[a.axis], x, method) for a in parsed.advanced]
    try:
        batch = tuple(np.broadcast_shapes(*(p.shape for p in parts)))
    except ValueError:
        shapes_ = ", ".join(str(list(p.shape)) for p in parts)
        raise api_error(
            IndexError, method, x, f"index arrays of shapes {shapes_} cannot be broadcast together"
        ) from None
    if all(isinstance(p, np.ndarray) for p in parts):
        stacked = np.stack([np.broadcast_to(p, batch) for p in parts], axis=-1)
        return Tensor(np.ascontiguousarray(stacked, np.int64), dt.int64), batch
    columns = []
    for p in parts:
        t = p if isinstance(p, Tensor) else Tensor(np.ascontiguousarray(p, np.int64), dt.int64)
        if t.shape != batch:
            dims = tuple(range(len(batch) - t.ndim, len(batch)))
            t = lax.broadcast_in_dim(t, batch, dims)
        columns.append(lax.reshape(t, (*batch, 1)))
    stacked_t = columns[0] if len(columns) == 1 else lax.concatenate(columns, len(batch))
    return stacked_t, batch


def _layout(parsed: _Parsed, shape: tuple[int, ...], batch: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """NumPy's placement of the advanced dimensions: where the first advanced axis was when
    the advanced indices are adjacent items of the index (a slice, ``None`` or ``...``
    between them, even one that spans no axis, separates them), first otherwise.
    Returns (offset dims, result shape)."""
    axes = [a.axis for a in parsed.advanced]
    rest = [i for i in range(len(shape)) if i not in axes]
    nb = len(batch)
    items = sorted({a.item for a in parsed.advanced})
    adjacent = items == list(range(items[0], items[0] + len(items)))
    if adjacent:
        first = axes[0]
        before = [i for i in rest if i < first]
        offset = tuple(range(len(before))) + tuple(range(len(before) + nb, nb + len(rest)))
        out_shape = tuple(shape[i] for i in before) + batch + tuple(shape[i] for i in rest if i > first)
    else:
        offset = tuple(range(nb, nb + len(rest)))
        out_shape = batch + tuple(shape[i] for i in rest)
    return offset, out_shape


def _expand(x: Tensor, parsed: _Parsed) -> Tensor:
    return x if x.shape == parsed.expanded_shape else lax.reshape(x, parsed.expanded_shape)


def getitem(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` with NumPy's advanced indexing: integer arrays (lists, NumPy arrays,
    integer Tensors) and boolean masks, mixed with ints, slices, ``...`` and ``None``.

    Slices run first (``basic_index``); the advanced components become one ``gather``.
    A boolean mask is read when the line runs: the recording holds the positions it
    selected as a constant; the mask is not differentiable, and a mask that is only
    traced (``trace``, ``jit``) is refused, as JAX refuses it under ``jit``.
    """
    if is_basic(index):
        return lax.basic_index(x, index)
    parsed = _parse(x, index, "__getitem__")
    t = _expand(x, parsed)
    if parsed.ranged:
        t = lax.basic_index(t, tuple(builtins.slice(None) if s is None else s for s in parsed.slices))
    if not parsed.advanced:
        return t
    indices, batch = _indices(parsed, t.shape, x, "__getitem__")
    offset, _ = _layout(parsed, t.shape, batch)
    axes = tuple(a.axis for a in parsed.advanced)
    dn = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=axes, start_index_map=axes)
    if builtins.any(t.shape[a] == 0 for a in axes):
        # an indexed axis of size 0 has no element to gather (the only valid indices select
        # nothing, as an empty mask does): the result is empty, as NumPy's; a recorded
        # slice of x keeps it x's (empty) function
        _, out_shape = _layout(parsed, t.shape, batch)
        if math.prod(out_shape):
            raise api_error(IndexError, "__getitem__", x, "index out of bounds for an axis of size 0")
        return lax.reshape(lax.basic_index(t, tuple(builtins.slice(0, 0) for _ in t.shape)), out_shape)
    sizes = tuple(1 if i in axes else n for i, n in enumerate(t.shape))
    return lax.gather(t, indices, dn, sizes, mode="clip")


_SCATTERS = {"set": "scatter", "add": "scatter_add", "mul": "scatter_mul", "min": "scatter_min", "max": "scatter_max"}


def update(
    x: Tensor, index: Any, values: Any, kind: str, indices_are_sorted: bool = False, unique_indices: bool = False
) -> Tensor:
    """``x.at[index].<kind>(values)``: a new tensor, recorded as one scatter (JAX's meaning).

    ``values`` are converted to ``x``'s dtype and broadcast to the shape ``x[index]`` has;
    repeated indices: ``set`` keeps one of the updates, ``add``/``mul``/``min``/``max``
    combine all. ``indices_are_sorted`` / ``unique_indices`` are the caller's promises,
    as in JAX (``mul``'s derivative in the values needs ``unique_indices=True``).
    Out-of-bounds indices are dropped under jax.numpy and raise under NumPy and PyTorch.
    """
    method = f"at[...].{kind}"
    name = _SCATTERS[kind]
    scatter_fn = functools.partial(
        getattr(lax, name), indices_are_sorted=indices_are_sorted, unique_indices=unique_indices
    )
    parsed = _parse(x, index, method)
    if parsed.ranged or not parsed.advanced:
        return _update_flat(x, index, values, kind, scatter_fn, method)
    t = _expand(x, parsed)
    indices, batch = _indices(parsed, t.shape, x, method)
    offset, out_shape = _layout(parsed, t.shape, batch)
    axes = tuple(a.axis for a in parsed.advanced)
    u = _updates(values, x, out_shape, method)
    dn = ScatterDimensionNumbers(
        update_window_dims=offset, inserted_window_dims=axes, scatter_dims_to_operand_dims=axes
    )
    out = scatter_fn(t, indices, u, dn, mode="fill_or_drop")
    return out if out.shape == x.shape else lax.reshape(out, x.shape)


def _update_flat(x: Tensor, index: Any, values: Any, kind: str, scatter_fn: Any, method: str) -> Tensor:
    """An update whose index has ranged slices: the flat positions NumPy's own indexing
    picks (constant indices only), one scatter into ``x`` reshaped to a vector."""
    items = index if type(index) is tuple else (index,)
    concrete = []
    for item in items:
        if isinstance(item, Tensor):
            if item.node is not None and item.dtype is not dt.bool_:
                raise api_error(
                    NotImplementedError, method, x,
                    "an integer Tensor index on a graph mixed with ranged slices; slice first, then use .at",
                )  # fmt: skip
            if item.dtype is dt.bool_:
                _refuse_traced_values(item, method, "a boolean mask's selection has a data-dependent shape")
            item = item._array
        concrete.append(item)
    positions = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    try:
        picked = positions[tuple(concrete)]
    except IndexError as err:
        raise api_error(IndexError, method, x, str(err)) from None
    picked = np.asarray(picked)
    u = _updates(values, x, picked.shape, method)
    flat = lax.reshape(x, (x.size,))
    dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    idx = Tensor(np.ascontiguousarray(picked.reshape(*picked.shape, 1)), dt.int64)
    return lax.reshape(scatter_fn(flat, idx, u, dn, mode="fill_or_drop"), x.shape)


def _updates(values: Any, x: Tensor, shape: tuple[int, ...], method: str) -> Tensor:
    """``values`` in ``x``'s dtype (a recorded convert where it differs) and broadcast to
    ``shape`` (a recorded ``broadcast_in_dim``; leading size-1 axes beyond it dropped)."""
    if isinstance(values, Tensor):
        u = values if values.dtype is x.dtype else lax.convert(values, x.dtype)
    else:
        try:
            u = asarray(values, dtype=x.dtype)
        except (TypeError, ValueError, OverflowError) as err:
            raise api_error(
                OpTypeError, method, x, f"cannot store the update {values!r} as {x.dtype.name}: {err}"
            ) from None
    while u.ndim > len(shape) and u.shape[0] == 1:
        u = lax.reshape(u, u.shape[1:])
    if u.shape == shape:
        return u
    if u.ndim > len(shape) or any(a not in (1, b) for a, b in zip(u.shape[::-1], shape[::-1], strict=False)):
        raise api_error(
            ShapeError,
            method,
            x,
            f"an update of shape {list(u.shape)} does not broadcast to the indexed shape {list(shape)}",
        )
    lead = len(shape) - u.ndim
    keep = [i for i, n in enumerate(u.shape) if n == shape[lead + i]]
    if len(keep) != u.ndim:
        u = lax.reshape(u, tuple(u.shape[i] for i in keep))
    return lax.broadcast_in_dim(u, shape, tuple(lead + i for i in keep))


class IndexUpdateRef:
    """``x.at[index]``: ``get()``, and the functional updates ``set/add/mul/min/max``."""

    __slots__ = ("index", "x")
    apply: Any  # .apply(func): runtime/numpy/at_apply.py attaches it (this module is at its size limit)

    def __init__(self, x: Tensor, index: Any) -> None:
        self.x = x
        self.index = index

    def get(self) -> Tensor:
        """``x[index]``."""
        return getitem(self.x, self.index)

    def set(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """A copy of ``x`` with ``x[index]`` replaced by ``values`` (``scatter``)."""
        return update(self.x, self.index, values, "set", indices_are_sorted, unique_indices)

    def add(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """A copy of ``x`` with ``values`` added at ``index``; repeats accumulate (``scatter_add``)."""
        return update(self.x, self.index, values, "add", indices_are_sorted, unique_indices)

    def mul(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """A copy of ``x`` multiplied by ``values`` at ``index`` (``scatter_mul``)."""
        return update(self.x, self.index, values, "mul", indices_are_sorted, unique_indices)

    def min(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """A copy of ``x`` with ``minimum(x[index], values)`` at ``index`` (``scatter_min``)."""
        return update(self.x, self.index, values, "min", indices_are_sorted, unique_indices)

    def max(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """A copy of ``x`` with ``maximum(x[index], values)`` at ``index`` (``scatter_max``)."""
        return update(self.x, self.index, values, "max", indices_are_sorted, unique_indices)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """jax.numpy's name of ``mul``: ``x[index] *= values`` on a copy (``scatter_mul``)."""
        return update(self.x, self.index, values, "mul", indices_are_sorted, unique_indices)

    def divide(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """``x[index] /= values`` on a copy, as jax.numpy computes it: ``x`` truly divided by ones
        multiplied by ``values`` at ``index`` (repeats multiply the divisor; integers divide into
        the policy's float, as ``jnp.divide``)."""
        divisor = _ones_times(self.x, self.index, values, indices_are_sorted, unique_indices, "at[...].divide")
        x = self.x
        if not x.dtype.is_inexact:
            target = mean_dtype(x.dtype, "at[...].divide", x)
            x, divisor = lax.convert(x, target), lax.convert(divisor, target)
        return lax.div(x, divisor)

    def power(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False) -> Tensor:
        """``x[index] **= values`` on a copy, as jax.numpy computes it: ``x`` to the power of ones
        multiplied by ``values`` at ``index`` (repeats multiply the exponent)."""
        exponent = _ones_times(self.x, self.index, values, indices_are_sorted, unique_indices, "at[...].power")
        return lax.pow(self.x, exponent)


def _ones_times(x: Tensor, index: Any, values: Any, sorted_: bool, unique: bool, method: str) -> Tensor:
    """Ones of ``x``'s dtype and shape, multiplied by ``values`` at ``index`` (one ``scatter_mul``)."""
    ones = lax.full(x.shape, 1, x.dtype)
    return update(ones, index, values, "mul", sorted_, unique)


class IndexUpdateHelper:
    """``x.at``: index it to get an ``IndexUpdateRef``."""

    __slots__ = ("x",)

    def __init__(self, x: Tensor) -> None:
        self.x = x

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.x, index)


# -- habits of NumPy and PyTorch: transpose, ravel, cumsum, math methods, out= -------------------


def no_out(method: str, x: Tensor, out: Any) -> None:
    """NumPy's functions (``np.max(t)``, ``np.sum(t)``, ``np.clip(t, ...)``) call a non-NumPy
    array's method with ``out=None``: accepted; an actual ``out`` array is refused, as castwise
    results are new tensors (jax.numpy refuses it too)."""
    if out is not None:
        raise api_error(
            TypeError, method, x, "out= is not supported: castwise returns a new tensor (write y = x.{method}(...))"
        )


def transpose(x: Tensor, axes: tuple[Any, ...]) -> Tensor:
    """``x.transpose()`` (all axes reversed), ``x.transpose(1, 0, 2)`` or ``x.transpose((1, 0, 2))``
    (NumPy, jax.numpy). Two axes of a tensor of another rank, or under the torch policy
    always two: PyTorch's ``transpose(dim0, dim1)``, which swaps them."""
    if len(axes) == 1 and (axes[0] is None or not _is_int(axes[0])):
        axes = () if axes[0] is None else tuple(axes[0])
    if not axes:
        return lax.transpose(x, tuple(range(x.ndim))[::-1])
    if len(axes) == 2 and (library() == "torch" or x.ndim != 2):
        a, b = (normalize_axes(x, axis, "transpose")[0] for axis in axes)
        perm = list(range(x.ndim))
        perm[a], perm[b] = perm[b], perm[a]
        return lax.transpose(x, tuple(perm))
    if len(axes) != x.ndim:
        raise api_error(ShapeError, "transpose", x, f"axes {tuple(axes)} do not match the rank {x.ndim}")
    return lax.transpose(x, tuple(operator.index(a) for a in axes))


def cumulative(x: Tensor, axis: Any, dtype: Any, product: bool) -> Tensor:
    """``cumsum``/``cumprod`` as NumPy and jax.numpy: over the flattened tensor without ``axis``.
    bool accumulates in ``sum``'s dtype (int64); small integers keep theirs under jax.numpy
    (``jnp.cumsum`` of int8 is int8) and accumulate in ``sum``'s under NumPy and PyTorch."""
    method = "cumprod" if product else "cumsum"
    t = _prepared(x, dtype, method)
    if dtype is None and (library() != "jax" or t.dtype is dt.bool_):
        wide = sum_dtype(t.dtype)
        if wide is not t.dtype:
            t = lax.convert(t, wide)
    if axis is None:
        t = t if t.ndim == 1 else lax.reshape(t, (t.size,))
        axis = 0
    (a,) = normalize_axes(t, axis, method) if _is_int(axis) else (None,)
    if a is None:
        raise api_error(ShapeError, method, x, f"axis must be an int or None, got {axis!r}")
    return (lax.cumprod if product else lax.cumsum)(t, a)


#: The elementwise math methods PyTorch's Tensor has, under its names (and NumPy's ``arc*``
#: spellings), each the op function of the same meaning; integer inputs to a float function
#: compute in the policy's float, as the function does.
MATH_METHODS: dict[str, Any] = {
    "abs": lax.abs, "absolute": lax.abs, "neg": lax.neg, "negative": lax.neg, "sign": lax.sign,
    "exp": lax.exp, "exp2": lax.exp2, "expm1": lax.expm1, "log": lax.log, "log1p": lax.log1p,
    "log2": lax.log2, "log10": lax.log10, "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "square": lax.square,
    "reciprocal": lax.reciprocal, "sin": lax.sin, "cos": lax.cos, "tan": lax.tan, "asin": lax.asin,
    "acos": lax.acos, "atan": lax.atan, "arcsin": lax.asin, "arccos": lax.acos, "arctan": lax.atan,
    "sinh": lax.sinh, "cosh": lax.cosh, "tanh": lax.tanh, "asinh": lax.asinh, "acosh": lax.acosh,
    "atanh": lax.atanh, "arcsinh": lax.asinh, "arccosh": lax.acosh, "arctanh": lax.atanh,
    "floor": lax.floor, "ceil": lax.ceil, "sigmoid": lax.logistic, "erf": lax.erf, "erfc": lax.erfc,
    "lgamma": lax.lgamma, "digamma": lax.digamma,
}  # fmt: skip


def _math_method(name: str, fn: Any) -> Any:
    def method(self: Tensor) -> Tensor:
        return fn(self)  # type: ignore[no-any-return]

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{fn.__name__}(x)`` elementwise (PyTorch's ``x.{name}()``; ``rt.lax.{fn.__name__}``)."
    return method


# -- the Tensor methods of this layer -------------------------------------------------
if TYPE_CHECKING:
    _Base = Tensor
else:
    _Base = object


class TensorMethods(_Base):
    """The NumPy / jax.numpy / PyTorch-named methods ``attach_methods`` puts on ``Tensor``: each
    composes recorded ops; where the libraries disagree the policy's library decides."""

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        """This tensor with ``shape`` (a tuple or the sizes as arguments; one ``-1`` is inferred)."""
        sizes = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return reshape(self, tuple(sizes))  # type: ignore[arg-type]

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """The axes ``start_dim..end_dim`` (all by default) merged into one (a ``reshape``)."""
        return flatten(self, start_dim, end_dim)

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 axes (all, or ``axis``; a non-1 ``axis`` raises, except under torch)."""
        return squeeze(self, axis)

    def clip(self, min: Any = None, max: Any = None, out: None = None) -> Tensor:  # noqa: A002
        """``minimum(maximum(x, min), max)``; either bound may be ``None``."""
        no_out("clip", self, out)
        return clip(self, min, max)

    clamp = clip  # PyTorch's name

    def transpose(self, *axes: Any) -> Tensor:
        """NumPy's ``x.transpose()``, ``x.transpose(1, 0, 2)``, ``x.transpose((1, 0, 2))``; two axes of
        a tensor that is not a matrix (or under torch): PyTorch's swap of ``dim0`` and ``dim1``."""
        return transpose(self, axes)

    def ravel(self) -> Tensor:
        """The tensor as one axis (a ``reshape``), as ``np.ravel``."""
        return reshape(self, (-1,), "ravel")

    def cumsum(self, axis: int | None = None, dtype: Any = None, out: None = None) -> Tensor:
        """Running sums along ``axis`` (the flattened tensor by default), as ``np.cumsum``/``jnp.cumsum``."""
        no_out("cumsum", self, out)
        return cumulative(self, axis, dtype, product=False)

    def cumprod(self, axis: int | None = None, dtype: Any = None, out: None = None) -> Tensor:
        """Running products along ``axis`` (the flattened tensor by default), as ``np.cumprod``."""
        no_out("cumprod", self, out)
        return cumulative(self, axis, dtype, product=True)

    def argmax(self, axis: int | None = None, out: None = None, *, keepdims: bool = False) -> Tensor:
        """The int64 index of the largest value along ``axis`` (of the flattened tensor when
        ``None``), as ``np.argmax``: the first index on ties, the first NaN's if any."""
        no_out("argmax", self, out)
        return self._arg_extreme(axis, keepdims, largest=True)

    def argmin(self, axis: int | None = None, out: None = None, *, keepdims: bool = False) -> Tensor:
        """The int64 index of the smallest value along ``axis``, as ``np.argmin``."""
        no_out("argmin", self, out)
        return self._arg_extreme(axis, keepdims, largest=False)

    def _arg_extreme(self, axis: int | None, keepdims: bool, largest: bool) -> Tensor:
        pick = lax.argmax if largest else lax.argmin
        keepdims = concrete_flag("argmax" if largest else "argmin", "keepdims", keepdims, (self,))
        if axis is None:
            flat = self if self.ndim == 1 else lax.reshape(self, (self.size,))
            out = pick(flat, 0)
            return lax.reshape(out, (1,) * self.ndim) if keepdims else out
        out = pick(self, axis)
        if keepdims and out.ndim < self.ndim:
            a = axis % self.ndim if type(axis) is int else axis
            out = lax.reshape(out, (*out.shape[:a], 1, *out.shape[a:]))
        return out

    def sum(
        self, axis: int | Sequence[int] | None = None, keepdims: bool = False, dtype: Any = None, out: None = None
    ) -> Tensor:
        """``jnp.sum``/``np.sum``/``torch.sum``: small integers and bool sum in int64 (uint64 for
        unsigned under jax/numpy); float16/bfloat16 accumulate in float32."""
        no_out("sum", self, out)
        return sum_(self, axis, keepdims, dtype)

    def prod(
        self, axis: int | Sequence[int] | None = None, keepdims: bool = False, dtype: Any = None, out: None = None
    ) -> Tensor:
        """The product over ``axis`` (integers as in ``sum``)."""
        no_out("prod", self, out)
        return prod(self, axis, keepdims, dtype)

    def max(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor:
        """The maximum over ``axis``; an empty reduced axis raises (no identity)."""
        no_out("max", self, out)
        return extreme(self, axis, keepdims, largest=True)

    def min(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor:
        """The minimum over ``axis``; an empty reduced axis raises (no identity)."""
        no_out("min", self, out)
        return extreme(self, axis, keepdims, largest=False)

    def mean(
        self, axis: int | Sequence[int] | None = None, keepdims: bool = False, dtype: Any = None, out: None = None
    ) -> Tensor:
        """Sum divided by the count, as ``jnp.mean`` (integer tensors divide into the policy's
        float; float16/bfloat16 accumulate in float32, so a long mean does not overflow)."""
        no_out("mean", self, out)
        return mean(self, axis, keepdims, dtype)

    def var(
        self, axis: int | Sequence[int] | None = None, ddof: Any = None, keepdims: bool = False, *,
        correction: Any = None, dtype: Any = None, out: None = None,
    ) -> Tensor:  # fmt: skip
        """The variance (``ddof``/``correction`` default: 0, or 1 under torch; ``dtype``: the
        input converted first, as ``np.var(dtype=)``)."""
        no_out("var", self, out)
        x = self if dtype is None else self.astype(dtype_param("var", dtype, (self,)))
        return var(x, axis, ddof, keepdims, correction=correction)

    def std(
        self, axis: int | Sequence[int] | None = None, ddof: Any = None, keepdims: bool = False, *,
        correction: Any = None, dtype: Any = None, out: None = None,
    ) -> Tensor:  # fmt: skip
        """The standard deviation, ``sqrt(var(...))``."""
        no_out("std", self, out)
        x = self if dtype is None else self.astype(dtype_param("std", dtype, (self,)))
        return std(x, axis, ddof, keepdims, correction=correction)

    def any(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor:
        """Whether any element over ``axis`` is nonzero (bool; uint8 for uint8 under torch)."""
        no_out("any", self, out)
        return any_all(self, axis, keepdims, is_any=True)

    def all(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor:
        """Whether every element over ``axis`` is nonzero (bool; uint8 for uint8 under torch)."""
        no_out("all", self, out)
        return any_all(self, axis, keepdims, is_any=False)

    def _strong(self) -> Tensor:
        """This tensor without its weak flag: jax.numpy's reductions drop it first (a
        same-dtype ``convert``, recorded as one); ``rt.lax.reduce_sum`` keeps it, as lax does."""
        return self.astype(self.dtype) if self.weak else self

    def __getitem__(self, index: Any) -> Tensor:
        return getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError(
            f"Tensor does not support item assignment (x[{index!r}] = ...): castwise tensors are "
            f"updated functionally, as in JAX: write x = x.at[index].set(value) (or .add/.mul/.min/.max), "
            f"recorded as a scatter and differentiable [{self.dtype.name}{list(self.shape)}; "
            f"policy {get_policy()!r}]"
        )

    @property
    def at(self) -> Any:
        """``x.at[index].set(v)`` (``.add/.mul/.min/.max/.get``): JAX's functional update, a new
        tensor recorded as one ``scatter``."""
        return IndexUpdateHelper(self)


attach_methods(TensorMethods)
for _name, _fn in MATH_METHODS.items():
    setattr(Tensor, _name, _math_method(_name, _fn))

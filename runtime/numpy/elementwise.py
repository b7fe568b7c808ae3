"""NumPy-named functions (``np.maximum``, ``np.isnan``, ``np.isclose``, ``np.var`` ...) over
castwise's ops and Tensor methods.

Each is a composition of ordinary ops (``max``, ``ne``, ``eq``, ``abs``, ``select``,
``convert``, ``reduce_*`` ...) run through the one eager executor, so a tracked operand
records those ops and the recording replays, differentiates, batches and lowers like any
other graph; no op is added to the vocabulary. ``var``, ``std``, ``prod``, ``any``, ``all``
and ``clip`` are the Tensor methods' implementations (``runtime.numpy.tensor_methods``).

Where the libraries disagree, the active policy's library decides (docs/tensor.md):
``var``'s default ``ddof`` is 1 under PyTorch; ``isnan``/``isinf`` of integers are all
False and ``isfinite`` all True in every library; ``count_nonzero`` is an int64 count.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.executor import as_tensor, asarray
from runtime.core.promotion import get_policy, result_type
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import tensor_methods as tensor_api
from runtime.numpy.params import (
    concrete_flag,
    error,
    named,
    read_scalar,
    refuse_traced,
    scalar_constant,
)

Operand = Any  # Tensor | np.ndarray | Python scalar

__all__ = [
    "absolute",
    "addcdiv",
    "all",
    "allclose",
    "any",
    "clip",
    "count_nonzero",
    "divide",
    "floor_divide",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "lerp",
    "maximum",
    "mean",
    "minimum",
    "nan_to_num",
    "negative",
    "power",
    "prod",
    "remainder",
    "std",
    "sum",
    "true_divide",
    "var",
    "where",
]


# -- arithmetic under NumPy's names -------------------------------------------------------------


@named("maximum")
def maximum(x: Any, y: Any) -> Tensor:
    """The elementwise maximum, NaN-propagating (``np.maximum``, ``jnp.maximum``, ``torch.maximum``)."""
    return F.max(x, y)


@named("minimum")
def minimum(x: Any, y: Any) -> Tensor:
    """The elementwise minimum, NaN-propagating (``np.minimum``, ``jnp.minimum``, ``torch.minimum``)."""
    return F.min(x, y)


@named("clip")
def clip(x: Any, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """``minimum(maximum(x, min), max)`` (``np.clip``, ``jnp.clip``, ``torch.clamp``): the Tensor
    method's implementation; ``min > max`` gives ``max``."""
    return tensor_api.clip(as_tensor(x), min, max)


@named("power")
def power(x: Any, y: Any) -> Tensor:
    """``x ** y`` (``np.power``, ``torch.pow``)."""
    return F.pow(x, y)


@named("floor_divide")
def floor_divide(x: Any, y: Any) -> Tensor:
    """Python's ``x // y`` (``np.floor_divide``; integer ``x // 0`` as jax.numpy, docs/tensor.md)."""
    return F.floor_div(x, y)


@named("true_divide")
def true_divide(x: Any, y: Any) -> Tensor:
    """``x / y``; integers divide into the policy's float (``np.true_divide``, ``torch.true_divide``)."""
    return F.div(x, y)


@named("divide")
def divide(x: Any, y: Any) -> Tensor:
    """``x / y``, as ``true_divide`` (``np.divide``, ``torch.div``)."""
    return F.div(x, y)


@named("remainder")
def remainder(x: Any, y: Any) -> Tensor:
    """Python's ``x % y``, the sign of the divisor (``np.remainder``, ``torch.remainder``)."""
    return F.mod(x, y)


@named("absolute")
def absolute(x: Any) -> Tensor:
    """``|x|``; real for complex ``x`` (``np.absolute``, ``torch.abs``)."""
    return F.abs(x)


@named("negative")
def negative(x: Any) -> Tensor:
    """``-x`` (``np.negative``, ``torch.neg``)."""
    return F.neg(x)


# -- classification -----------------------------------------------------------------------------


@named("isnan")
def isnan(x: Any) -> Tensor:
    """True where ``x`` is NaN: ``x != x`` (either part for complex; all False for integers and
    bool, recorded as the same comparison so that it batches with ``x``)."""
    t = as_tensor(x)
    return F.ne(t, t)


@named("isinf")
def isinf(x: Any) -> Tensor:
    """True where ``x`` is +inf or -inf (either part for complex; all False for integers and bool)."""
    t = as_tensor(x)
    if t.dtype.kind == "complex":
        return F.logical_or(isinf(F.real(t)), isinf(F.imag(t)))
    if t.dtype.kind != "float":
        return F.ne(t, t)  # all False, as NumPy and jax.numpy say
    inf = asarray(np.asarray(np.inf, t.dtype.storage), t.dtype)
    return F.eq(F.abs(t), inf)


@named("isfinite")
def isfinite(x: Any) -> Tensor:
    """True where ``x`` is neither infinite nor NaN (both parts for complex; all True for
    integers and bool)."""
    t = as_tensor(x)
    if t.dtype.kind == "complex":
        return F.logical_and(F.is_finite(F.real(t)), F.is_finite(F.imag(t)))
    if t.dtype.kind != "float":
        return F.eq(t, t)  # all True
    return F.is_finite(t)


def _finfo(d: dt.DType) -> Any:
    return ml_dtypes.finfo(d.storage)


def _replace(t: Tensor, nan: Any, posinf: Any, neginf: Any) -> Tensor:
    info = _finfo(t.dtype)
    values = {
        "nan": nan,
        "posinf": info.max if posinf is None else posinf,
        "neginf": info.min if neginf is None else neginf,
    }
    # the replacements in x's dtype (np.nan_to_num casts them), as 0-d constants, or 0-d Tensors
    # converted (operands: traced under jit and vmap), broadcast
    c = {
        k: F.broadcast_in_dim(scalar_constant("nan_to_num", k, v, t.dtype, (t,)), t.shape, ())
        for k, v in values.items()
    }
    inf = asarray(np.asarray(np.inf, t.dtype.storage), t.dtype)
    out = F.select(F.ne(t, t), c["nan"], t)
    out = F.select(F.eq(t, inf), c["posinf"], out)
    return F.select(F.eq(t, F.neg(inf)), c["neginf"], out)


@named("nan_to_num")
def nan_to_num(x: Any, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    """``x`` with NaN replaced by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (by default
    the largest and the most negative finite values of ``x``'s dtype); each part of a complex
    ``x`` separately; integers and bool unchanged, in a new array (``np.nan_to_num``,
    ``torch.nan_to_num``). Recorded as ``ne``/``eq`` comparisons and ``select``s, so the
    gradient passes where ``x`` is finite and is 0 where a value was replaced. The
    replacements are scalars or 0-d Tensors (operands: traced under ``jit`` and ``vmap``)."""
    t = as_tensor(x)
    for param, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None or param == "nan":
            read_scalar("nan_to_num", param, value, operands=(t,))  # checked for every dtype
    if t.dtype.kind == "complex":
        return F.complex(_replace(F.real(t), nan, posinf, neginf), _replace(F.imag(t), nan, posinf, neginf))
    if t.dtype.kind != "float":
        return F._fresh_copy(t)  # np.nan_to_num returns a copy, never x itself
    return _replace(t, nan, posinf, neginf)


def _check_broadcast(name: str, a: Tensor, b: Tensor) -> None:
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise error(
            ShapeError, name, f"shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast together", a, b
        ) from None


@named("isclose")
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Tensor:
    """``|a - b| <= atol + rtol * |b|`` elementwise, with equal infinities close and NaNs close
    only with ``equal_nan`` (``np.isclose``, ``jnp.isclose``, ``torch.isclose``).

    ``a`` and ``b`` promote per the policy, integers to the policy's float (as ``a / b``
    would); ``rtol`` and ``atol`` are taken in that dtype (the real part's, for complex), as
    jax.numpy takes them: scalars, or 0-d Tensors (operands: traced under ``jit`` and ``vmap``).
    ``equal_nan`` must be concrete (a traced one is refused, as jax.jit refuses it).
    """
    x, y = as_tensor(a), as_tensor(b)
    _check_broadcast("isclose", x, y)
    equal_nan = concrete_flag("isclose", "equal_nan", equal_nan, (x, y))
    for param, value in (("rtol", rtol), ("atol", atol)):
        read_scalar("isclose", param, value, operands=(x, y))  # before anything is recorded
    if not (x.dtype.is_inexact or y.dtype.is_inexact):
        # integers compare in the float their true division gives (np.isclose: float64)
        target = _division_dtype(x, y)
        x, y = F.convert(x, target), F.convert(y, target)
    diff = F.sub(x, y)
    tol_dtype = dt.COMPLEX_PART.get(diff.dtype, diff.dtype)
    rt_ = scalar_constant("isclose", "rtol", rtol, tol_dtype, (x, y))
    at_ = scalar_constant("isclose", "atol", atol, tol_dtype, (x, y))
    in_range = F.le(F.abs(diff), F.add(at_, F.mul(rt_, F.abs(y))))
    out = F.logical_or(F.eq(x, y), F.logical_and(isfinite(y), in_range))
    if equal_nan:
        out = F.logical_or(out, F.logical_and(isnan(x), isnan(y)))
    return out


def _division_dtype(x: Tensor, y: Tensor) -> dt.DType:
    """The float ``x / y`` gives two integer or bool operands under the policy."""
    from runtime.core.promotion import result_type

    common = result_type(x, y)
    if common.is_inexact:
        return common
    from runtime.core import ops
    from runtime.core.plan import inexact_dtype
    from runtime.core.promotion import get_policy_object

    return inexact_dtype(ops.div, common, get_policy_object())


@named("allclose")
def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> builtins.bool:
    """Whether ``isclose`` holds everywhere, as a Python bool (``np.allclose``,
    ``torch.allclose``): it reads the values, so it cannot be traced; a traced operand or
    tolerance raises ``ConcretizationError`` (``jnp.allclose`` returns a 0-d array;
    ``all(isclose(...))`` records that)."""
    close = all(isclose(a, b, rtol, atol, equal_nan))
    refuse_traced(
        "allclose", "the result", close,
        "allclose returns a Python bool, which would be this trace's answer on every replay",
        "use all(isclose(a, b, rtol, atol)), a 0-d bool Tensor that is traced",
        [v for v in (a, b) if isinstance(v, Tensor)],
    )  # fmt: skip
    return builtins.bool(close)


# -- reductions: the Tensor methods' implementations ---------------------------------------------


@named("var")
def var(x: Any, axis: Any = None, ddof: Any = None, keepdims: bool = False, *, correction: Any = None) -> Tensor:
    """The variance (``np.var``, ``jnp.var``, ``torch.var``): ``Tensor.var``; ``ddof``
    (``correction``) defaults to 0, and to 1 under the torch policy."""
    return tensor_api.var(x, axis, ddof, keepdims, correction=correction)


@named("std")
def std(x: Any, axis: Any = None, ddof: Any = None, keepdims: bool = False, *, correction: Any = None) -> Tensor:
    """The standard deviation, ``sqrt(var(...))`` (``np.std``, ``torch.std``): ``Tensor.std``."""
    return tensor_api.std(x, axis, ddof, keepdims, correction=correction)


@named("prod")
def prod(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Tensor:
    """The product over ``axis`` (``np.prod``, ``torch.prod``): ``Tensor.prod``."""
    return tensor_api.prod(x, axis, keepdims, dtype)


@named("any")
def any(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether any element is nonzero (NaN counts), over ``axis``: ``Tensor.any``."""
    return tensor_api.any_all(x, axis, keepdims, True)


@named("all")
def all(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element is nonzero (NaN counts), over ``axis``: ``Tensor.all``."""
    return tensor_api.any_all(x, axis, keepdims, False)


@named("count_nonzero")
def count_nonzero(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The number of nonzero elements (NaN counts) over ``axis``, an int64 Tensor
    (``jnp.count_nonzero``, ``torch.count_nonzero``; ``np.count_nonzero`` returns a Python int
    for ``axis=None``, castwise a 0-d int64 Tensor). Recorded as ``convert`` to bool,
    ``convert`` to int64 and ``reduce_sum``."""
    t = as_tensor(x)
    axes = tensor_api.normalize_axes(t, axis, "count_nonzero")  # its errors show x, not the int64 copy
    b = t if t.dtype is dt.bool_ else F.convert(t, dt.bool_)
    return tensor_api.sum_(F.convert(b, dt.int64), axes, keepdims, method="count_nonzero")


# -- sum, mean and where under NumPy's names ----------------------------------------------------


@named("sum")
def sum(  # noqa: A001
    x: Operand, axis: Sequence[int] | int | None = None, *, keepdims: builtins.bool = False, dtype: Any = None
) -> Tensor:
    """``Tensor.sum`` as a function (``jnp.sum``/``np.sum``/``torch.sum`` per the policy):
    bool and small integers sum in int64 (uint64 for unsigned under jax/numpy), float16
    and bfloat16 in float32; negative axes count from the end."""
    return tensor_api.sum_(x, axis, keepdims, dtype)


@named("mean")
def mean(
    x: Operand, axis: Sequence[int] | int | None = None, *, keepdims: builtins.bool = False, dtype: Any = None
) -> Tensor:
    """``Tensor.mean`` as a function: the mean over ``axis``; integers and bool divide into
    the policy's float (float64 under numpy), converted before summing, so they do not overflow."""
    return tensor_api.mean(x, axis, keepdims, dtype)


@named("where")
def where(condition: Operand, x: Operand = None, y: Operand = None) -> Any:
    """``jnp.where``/``np.where``/``torch.where``: ``x`` where ``condition`` holds, else ``y``
    (a ``select``, all three broadcast; a non-bool condition is compared with 0).
    ``where(condition)`` alone is ``nonzero``: one int64 index Tensor per axis."""
    return tensor_api.where(condition, x, y)


def _torch_float_operand(name: str, what: str, value: Any) -> Tensor:
    t = as_tensor(value)
    if not t.dtype.is_inexact:
        raise OpTypeError(
            f"{name}: {what} is {t.dtype.name}; {name} takes floating or complex tensors (as torch.{name}) "
            f"[policy {get_policy()!r}]"
        )
    return t


@named("lerp")
def lerp(input: Any, end: Any, weight: Any) -> Tensor:  # noqa: A002
    """``torch.lerp``: ``input + weight * (end - input)``, computed as PyTorch does
    (``end - (end - input) * (1 - weight)`` where ``|weight| >= 0.5``, so ``weight = 1`` gives
    ``end`` exactly). ``input`` and ``end`` are floating or complex of one dtype, and a tensor
    ``weight`` has it too (PyTorch refuses mixed dtypes here); a Python scalar weight broadcasts."""
    x = _torch_float_operand("lerp", "input", input)
    e = _torch_float_operand("lerp", "end", end)
    if e.dtype is not x.dtype:
        raise OpTypeError(
            f"lerp: end is {e.dtype.name} but input is {x.dtype.name}; torch.lerp takes one dtype "
            f"[policy {get_policy()!r}]"
        )
    diff = F.sub(e, x)
    if isinstance(weight, bool | int | float | complex):
        if builtins.abs(weight) < 0.5:
            return F.add(x, F.mul(diff, weight))  # input + weight (end - input)
        return F.sub(e, F.mul(diff, 1 - weight))  # end - (end - input) (1 - weight)
    w = _torch_float_operand("lerp", "weight", weight)
    if w.dtype is not x.dtype:
        raise OpTypeError(
            f"lerp: weight is {w.dtype.name} but input is {x.dtype.name}; torch.lerp takes one dtype "
            f"[policy {get_policy()!r}]"
        )
    near = F.add(x, F.mul(w, diff))
    far = F.sub(e, F.mul(diff, F.sub(F.full((), 1, x.dtype), w)))
    small = F.lt(F.abs(w), F.full((), 0.5, F.abs(w).dtype))
    return where(small, near, far)  # type: ignore[no-any-return]


@named("addcdiv")
def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:  # noqa: A002
    """``torch.addcdiv``: ``input + value * tensor1 / tensor2`` (the product first, as PyTorch's
    kernel), every step in the operands' common dtype under the policy. Integer ``tensor1`` and ``tensor2`` are refused
    (PyTorch removed integer division here)."""
    t1, t2 = as_tensor(tensor1), as_tensor(tensor2)
    if not t1.dtype.is_inexact and not t2.dtype.is_inexact:
        raise OpTypeError(
            f"addcdiv: tensor1 and tensor2 are {t1.dtype.name} and {t2.dtype.name}: integer division is not "
            f"supported (as torch.addcdiv) [policy {get_policy()!r}]"
        )
    x = as_tensor(input)
    common = result_type(x, t1, t2)  # as PyTorch's TensorIterator: every step in the common dtype
    x, t1, t2 = (t if t.dtype is common else F.convert(t, common) for t in (x, t1, t2))
    return F.add(x, F.div(F.mul(t1, value), t2))  # input + (tensor1 value) / tensor2

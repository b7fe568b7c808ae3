"""The activation functions and helpers of ``jax.nn`` / ``torch.nn.functional``, built from
castwise's ops.

Each function is a composition of ordinary ops (``select``, ``max``, ``exp``, ``log1p``,
``logistic``, ``tanh``, ``erfc``, ``reduce_max``, ``reduce_sum``, ``iota``, ``eq``,
``convert`` ...) run through the one eager executor, so a tracked operand records those
ops: the recording replays, differentiates, batches (``autodiff.vmap``) and lowers like
any other graph. No op of its own is added to the vocabulary.

The formulas are jax.nn's, so values agree with it to a few ulp and gradients too:
``softplus(x) = logaddexp(x, 0)``, ``log_sigmoid(x) = -softplus(-x)``, ``softmax``
subtracts the maximum, ``gelu`` is the tanh form by default, ``silu(x) = x * sigmoid(x)``;
``relu`` and ``relu6`` are ``select``s, so their gradient is 0 at the kinks (0, and 6), as
jax.nn's custom derivatives say.

Dtypes follow the active policy's library (docs/tensor.md, "Where the libraries disagree,
the policy's library decides"): an integer operand of a function that needs a float goes
to the float the policy's ``exp`` gives it (float32 under jax for int32, float64 under
numpy); ``relu`` of an integer stays an integer; ``relu6``, ``elu`` and ``leaky_relu`` of
an integer take the dtype the policy gives an integer mixed with a Python float (jax.nn's
formulas multiply it by one). Constants are made in the operand's own float dtype, so a
bfloat16 operand computes in bfloat16 under every policy (a policy decides mixes, not
dtypes).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core import ops
from runtime.core.executor import as_tensor, asarray
from runtime.core.promotion import get_policy_object, result_type
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import tensor_methods as tensor_api
from runtime.numpy.params import (  # noqa: F401  (CASTWISE_ERRORS, describe: re-exported)
    CASTWISE_ERRORS,
    concrete_scalar,
    describe,
    dtype_param,
    error,
    named,
    read_scalar,
    scalar_operand,
)

__all__ = [
    "elu",
    "gelu",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "one_hot",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "standardize",
    "swish",
]


def _const(value: float, like: Tensor) -> Any:
    """``value`` in ``like``'s float dtype (a 0-d constant, weak when ``like`` is), so a
    bfloat16 operand computes in bfloat16 under every policy; the Python scalar itself for
    a non-float ``like`` (the policy's promotion decides, as in jax.nn's formulas)."""
    if like.dtype.kind != "float":
        return value
    c = asarray(np.asarray(value, like.dtype.storage), like.dtype)
    c.weak = like.weak
    return c


def _inexact(x: Any) -> Tensor:
    """``x`` as a Tensor; an integer or bool one converted (a recorded ``convert``) to the float
    the policy's ``exp`` gives it: float32 under jax for int32, float64 under numpy, float16
    for int8 under numpy (``np.exp(int8)``)."""
    t = as_tensor(x)
    if t.dtype.is_inexact:
        return t
    from runtime.core.plan import inexact_dtype

    return F.convert(t, inexact_dtype(ops.exp, t.dtype, get_policy_object()))


def _float_like_scalar_mix(x: Any) -> Tensor:
    """``x``; an integer or bool one converted to the dtype the policy gives it mixed with a
    Python float (jax.nn's ``relu6``/``elu``/``leaky_relu`` multiply or compare it with one:
    float64 under jax with x64 and under numpy)."""
    t = as_tensor(x)
    if t.dtype.is_inexact:
        return t
    return F.convert(t, result_type(t, 1.0))


# -- rectifiers ------------------------------------------------------------------------------


@named("nn.relu")
def relu(x: Any) -> Tensor:
    """``max(x, 0)`` (``jax.nn.relu``, ``torch.relu``), recorded as ``select(x <= 0, 0, x)`` for
    floats so that its gradient at 0 is 0, as jax.nn's custom derivative says (``max``'s
    would split it, 0.5); NaN stays NaN. Integers keep their dtype (``max(x, 0)``)."""
    t = as_tensor(x)
    if t.dtype.kind != "float":
        return F.max(t, 0)
    zero = _const(0.0, t)
    return F.select(F.le(t, zero), F.broadcast_in_dim(zero, t.shape, ()), t)


@named("nn.relu6")
def relu6(x: Any) -> Tensor:
    """``min(max(x, 0), 6)`` (``jax.nn.relu6``, ``torch.nn.functional.relu6``); its gradient is
    1 strictly between 0 and 6 and 0 elsewhere (jax.nn's custom derivative)."""
    t = _float_like_scalar_mix(x)
    if t.dtype.kind != "float":  # complex: jax.nn's formula as it is
        return F.min(F.max(t, 0), 6.0)
    zero, six = _const(0.0, t), _const(6.0, t)
    low = F.select(F.le(t, zero), F.broadcast_in_dim(zero, t.shape, ()), t)
    return F.select(F.ge(t, six), F.broadcast_in_dim(six, t.shape, ()), low)


@named("nn.leaky_relu")
def leaky_relu(x: Any, negative_slope: Any = 0.01) -> Tensor:
    """``where(x >= 0, x, negative_slope * x)`` (``jax.nn.leaky_relu``). ``negative_slope`` is a
    Python or NumPy scalar (a constant in ``x``'s dtype) or a 0-d Tensor (an operand: traced
    under ``jit``/``vmap``, so each call or example uses its own slope)."""
    t = _float_like_scalar_mix(x)
    slope = scalar_operand("nn.leaky_relu", "negative_slope", negative_slope, t, (t,))
    return F.select(F.ge(t, _const(0.0, t)), t, F.mul(slope, t))


@named("nn.elu")
def elu(x: Any, alpha: Any = 1.0) -> Tensor:
    """``where(x > 0, x, alpha * expm1(x))`` (``jax.nn.elu``); ``expm1`` runs on ``where(x > 0,
    0, x)`` so that a large positive ``x`` makes no inf (and no NaN gradient). ``alpha`` is a
    scalar or a 0-d Tensor operand, as ``leaky_relu``'s slope."""
    t = _float_like_scalar_mix(x)
    a = scalar_operand("nn.elu", "alpha", alpha, t, (t,))
    zero = _const(0.0, t)
    positive = F.gt(t, zero)
    safe = F.select(positive, F.broadcast_in_dim(zero, t.shape, ()), t)
    return F.select(positive, t, F.mul(a, F.expm1(safe)))


# -- sigmoids ----------------------------------------------------------------------------------


@named("nn.sigmoid")
def sigmoid(x: Any) -> Tensor:
    """``1 / (1 + exp(-x))`` (``jax.nn.sigmoid`` is ``lax.logistic``; ``torch.sigmoid``)."""
    return F.logistic(_inexact(x))


@named("nn.softplus")
def softplus(x: Any) -> Tensor:
    """``log(1 + exp(x))`` as jax.nn computes it, ``logaddexp(x, 0)``:
    ``max(x, 0) + log1p(exp(-|x|))``, and ``x`` itself where ``x`` is NaN.

    ``max(x, 0)`` and ``-|x|`` are ``select``s on ``x > 0``, so the gradient is the sigmoid
    everywhere, ``0.5`` at 0 included (jax.nn's custom derivative).
    """
    t = _inexact(x)
    zero = _const(0.0, t)
    positive = F.gt(t, zero)
    # max(x, 0) and -|x| as selects: their derivatives at 0 (0 and 1) sum to sigmoid(0) = 0.5,
    # jax's custom derivative, where max's and abs's tie rules need not
    amax = F.select(positive, t, F.broadcast_in_dim(zero, t.shape, ()))
    neg_abs = F.select(positive, F.neg(t), t)
    smooth = F.add(amax, F.log1p(F.exp(neg_abs)))
    return F.select(F.ne(t, t), F.add(t, zero), smooth)


@named("nn.log_sigmoid")
def log_sigmoid(x: Any) -> Tensor:
    """``log(sigmoid(x))`` as jax.nn computes it, ``-softplus(-x)``."""
    return F.neg(softplus(F.neg(_inexact(x))))


@named("nn.silu")
def silu(x: Any) -> Tensor:
    """``x * sigmoid(x)`` (``jax.nn.silu`` = ``jax.nn.swish``, ``torch.nn.functional.silu``)."""
    t = _inexact(x)
    return F.mul(t, F.logistic(t))


@named("nn.swish")
def swish(x: Any) -> Tensor:
    """``nn.silu`` under jax.nn's other name (its errors say ``nn.swish``, the name called)."""
    return silu(x)


def _gelu_default() -> bool:
    # jax.nn.gelu approximates by default; torch.nn.functional.gelu does not
    return tensor_api.library() != "torch"


#: ``approximate`` as PyTorch spells it (``torch.nn.functional.gelu(x, approximate='none')``)
_GELU_STRINGS = {"none": False, "tanh": True}


def _gelu_form(approximate: Any, x: Tensor) -> bool | Tensor:
    """``approximate`` as a Python bool, or a 0-d bool Tensor (an operand: both forms are computed
    and a ``select`` picks one, so a traced flag replays with each call's value). jax.nn's bools
    and PyTorch's strings are accepted; anything else raises naming ``nn.gelu``."""
    if approximate is None:
        return _gelu_default()
    if isinstance(approximate, str):
        if approximate not in _GELU_STRINGS:
            raise error(
                ValueError, "nn.gelu", f"approximate must be a bool, 'none' or 'tanh' (PyTorch's spelling), "
                f"got {approximate!r}", x,
            )  # fmt: skip
        return _GELU_STRINGS[approximate]
    if isinstance(approximate, Tensor):
        if approximate.dtype is not dt.bool_:
            raise error(OpTypeError, "nn.gelu", f"approximate must be a bool, got a {approximate.dtype.name} Tensor", x)
        return read_scalar("nn.gelu", "approximate", approximate, ("bool",), (x,))  # type: ignore[no-any-return]
    if isinstance(approximate, (bool, np.bool_)):
        return bool(approximate)
    raise error(
        OpTypeError, "nn.gelu", f"approximate must be a bool, 'none' or 'tanh' (PyTorch's spelling), "
        f"got {approximate!r} ({type(approximate).__name__})", x,
    )  # fmt: skip


def _gelu_tanh(t: Tensor) -> Tensor:
    cube = F.mul(t, F.mul(t, t))
    inner = F.mul(_const(math.sqrt(2 / math.pi), t), F.add(t, F.mul(_const(0.044715, t), cube)))
    cdf = F.mul(_const(0.5, t), F.add(_const(1.0, t), F.tanh(inner)))
    return F.mul(t, cdf)


def _gelu_erf(t: Tensor) -> Tensor:
    scaled = F.mul(F.neg(t), _const(math.sqrt(0.5), t))
    return F.mul(F.mul(_const(0.5, t), t), F.erfc(scaled))


@named("nn.gelu")
def gelu(x: Any, approximate: Any = None) -> Tensor:
    """The Gaussian error linear unit.

    ``approximate=True`` (or ``'tanh'``): ``x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``;
    ``approximate=False`` (or ``'none'``, PyTorch's spelling): ``0.5 * x * erfc(-x / sqrt(2))``.
    The default is the policy's library's: the tanh form under jax.nn (and numpy), the exact
    one under PyTorch. A 0-d bool Tensor picks the form per call (a recorded ``select`` of
    both). ``x^3`` is ``x * (x * x)``, as ``lax.integer_pow`` computes it.
    """
    form = _gelu_form(approximate, x)
    t = _inexact(x)
    if isinstance(form, Tensor):
        return F.select(F.broadcast_in_dim(form, t.shape, ()), _gelu_tanh(t), _gelu_erf(t))
    return _gelu_tanh(t) if form else _gelu_erf(t)


# -- softmax --------------------------------------------------------------------------------


def _shifted(x: Any, axis: Any, name: str) -> tuple[Tensor, tuple[int, ...]]:
    """``x - max(x, axis, keepdims=True)`` and the axes (jax.nn stops the gradient through the
    maximum; castwise does not use stop_gradient there, so its path is recorded: its contribution is
    zero up to rounding)."""
    t = as_tensor(x)
    axes = tensor_api.normalize_axes(t, axis, name)  # checked before anything is recorded
    empty = [a for a in axes if t.shape[a] == 0]
    if empty:
        raise error(ShapeError, name, f"axis {empty[0]} has size 0; a softmax needs a non-empty axis", t)
    t = _inexact(t)
    kept = tuple(d for d in range(t.ndim) if d not in axes)
    m = F.broadcast_in_dim(F.reduce_max(t, axes), t.shape, kept)
    return F.sub(t, m), axes


def _sum_kept(t: Tensor, axes: tuple[int, ...]) -> Tensor:
    """``sum(t, axes, keepdims=True)`` broadcast back to ``t``'s shape (float16 and bfloat16
    summed in float32 and rounded once, as jnp.sum does)."""
    total = F.sum_(t, axes)
    kept = tuple(d for d in range(t.ndim) if d not in axes)
    return F.broadcast_in_dim(total, t.shape, kept)


@named("nn.softmax")
def softmax(x: Any, axis: Any = -1) -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` over ``axis`` (an int, a tuple of ints or None for
    every axis; ``jax.nn.softmax``, ``torch.softmax(x, dim)``)."""
    shifted, axes = _shifted(x, axis, "nn.softmax")
    unnormalized = F.exp(shifted)
    return F.div(unnormalized, _sum_kept(unnormalized, axes))


@named("nn.log_softmax")
def log_softmax(x: Any, axis: Any = -1) -> Tensor:
    """``(x - max) - log(sum(exp(x - max)))`` over ``axis`` (``jax.nn.log_softmax``)."""
    shifted, axes = _shifted(x, axis, "nn.log_softmax")
    return F.sub(shifted, F.log(_sum_kept(F.exp(shifted), axes)))


@named("nn.standardize")
def standardize(
    x: Any, axis: Any = -1, mean: Any = None, variance: Any = None, epsilon: Any = 1e-5, *, algorithm: str = "fast"
) -> Tensor:
    """``(x - mean) * rsqrt(variance + epsilon)`` over ``axis`` (``jax.nn.standardize``; the
    normalisation of ``torch.nn.functional.layer_norm`` without its affine part).

    ``mean`` defaults to the mean over ``axis`` (kept as size 1); ``variance`` to
    ``mean(x^2) - mean^2`` clipped at 0 (``algorithm="fast"``, jax.nn's default) or
    ``mean((x - mean)^2)`` (``"stable"``). Integers go to the float their mean has.
    ``epsilon`` is a scalar or a 0-d Tensor operand (traced under ``jit``/``vmap``).
    """
    name = "nn.standardize"
    t = as_tensor(x)
    axes = tensor_api.normalize_axes(t, axis, name)  # checked before anything is recorded
    if not isinstance(algorithm, str) or algorithm not in ("fast", "stable"):
        raise error(ValueError, name, f"algorithm must be 'fast' or 'stable', got {algorithm!r}", t)
    read_scalar(name, "epsilon", epsilon, operands=(t,))  # checked before anything is recorded
    if mean is None:
        mean = tensor_api.mean(t, axes, keepdims=True)
    if not t.dtype.is_inexact:
        t = F.convert(t, as_tensor(mean).dtype if as_tensor(mean).dtype.is_inexact else _inexact(t).dtype)
    if variance is None:
        if algorithm == "stable":
            variance = tensor_api.mean(F.square(F.sub(t, mean)), axes, keepdims=True)
        else:
            raw = F.sub(tensor_api.mean(F.square(t), axes, keepdims=True), F.square(mean))
            variance = F.max(raw, _const(0.0, raw))  # the fast form can round below 0
    v = as_tensor(variance)
    return F.mul(F.sub(t, mean), F.rsqrt(F.add(v, scalar_operand(name, "epsilon", epsilon, v, (t,)))))


# -- one_hot -----------------------------------------------------------------------------------


def _one_hot_dtype() -> dt.DType:
    # jax.nn.one_hot: the default float (float64 with x64); numpy (no one_hot of its own):
    # jax.nn's, with NumPy's default float, float64; torch.nn.functional.one_hot: int64
    return dt.int64 if tensor_api.library() == "torch" else dt.float64


@named("nn.one_hot")
def one_hot(labels: Any, num_classes: int, dtype: Any = None, axis: int = -1) -> Tensor:
    """``labels == arange(num_classes)`` on a new ``axis`` (the last by default), converted to
    ``dtype``: ``jax.nn.one_hot`` (float64 by default, with x64) and
    ``torch.nn.functional.one_hot`` (int64 under the torch policy). Labels outside
    ``[0, num_classes)`` give a row of zeros (jax.nn's meaning; PyTorch raises).

    Recorded as ``iota``, ``broadcast_in_dim``, ``eq`` and ``convert``.
    """
    name = "nn.one_hot"
    t = as_tensor(labels)
    if t.dtype.kind not in ("int", "uint"):
        raise error(OpTypeError, name, f"labels must be integers, got {t.dtype.name}", t)
    if isinstance(num_classes, Tensor):  # the result's shape: concrete, or refused under tracing
        num_classes = concrete_scalar(
            name, "num_classes", num_classes, ("int", "uint"), "it is the result's size", (t,)
        )
    if isinstance(num_classes, (bool, np.bool_)) or not tensor_api._is_int(num_classes):
        raise error(OpTypeError, name, f"num_classes must be an int, got {num_classes!r}", t)
    num_classes = int(num_classes)
    if num_classes <= 0:
        raise error(ShapeError, name, f"num_classes must be positive, got {num_classes}", t)
    if not tensor_api._is_int(axis) or not -(t.ndim + 1) <= int(axis) <= t.ndim:
        raise error(ShapeError, name, f"axis {axis!r} is out of range for a result of rank {t.ndim + 1}", t)
    position = int(axis) % (t.ndim + 1)
    out_dtype = _one_hot_dtype() if dtype is None else dtype_param(name, dtype, (t,))
    shape = (*t.shape[:position], num_classes, *t.shape[position:])
    classes = F.iota(t.dtype, shape, position)
    spread = F.broadcast_in_dim(t, shape, tuple(d for d in range(len(shape)) if d != position))
    hot = F.eq(spread, classes)
    return hot if out_dtype is dt.bool_ else F.convert(hot, out_dtype)

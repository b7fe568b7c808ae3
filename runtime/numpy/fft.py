"""``runtime.numpy.fft``: the ``jax.numpy.fft`` / ``numpy.fft`` / array API ``fft`` namespace.

``import runtime as rt; y = rt.fft.rfft(x, n=16, norm="ortho")``. Each function takes
jax.numpy.fft's signature and keyword names (``n``/``axis`` for the one-dimensional transforms,
``s``/``axes`` for the n-dimensional ones, ``norm`` one of ``"backward"`` (the default),
``"ortho"`` and ``"forward"``) and is composed of castwise's op functions (``fft``, ``slice``,
``pad``, ``transpose``, ``conj``, ``mul``, ``iota`` ...), run through the one eager executor: a
recording holds exactly what ran, and replays, differentiates, batches and lowers to JAX like any
other graph.

Dtypes follow ``lax.fft``'s plan (``runtime.core.plan``): an integer or bool input goes to the
policy's inexact dtype (float32 up to 32 bits, float64 for 64-bit integers under ``jax``;
float64 under ``numpy``, as ``np.fft``), then a real input of a complex transform to complex
(``fft`` of float32 is complex64); each is a recorded ``convert``. The narrow floats (float16,
bfloat16, float8) transform in complex64 where the transform converts them to complex (``fft``,
``ifft``, ``irfft``, ``hfft``) and are refused by ``rfft`` and ``ihfft``, as ``jax.numpy.fft``
refuses them. A policy without complex dtypes (kael, neuron) refuses every transform.

As ``jnp.fft``, ``s`` crops or zero-pads each transformed axis at its end (for the inverse real
transforms the last axis to ``s[-1] // 2 + 1``), and more than three axes are transformed three
(or two) at a time. An empty ``axes`` is refused (there is nothing to transform).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any, Final

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.promotion import get_policy_object
from runtime.core.shapes import OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy.common import is_int as _is_int
from runtime.numpy.manipulation import roll
from runtime.numpy.params import INTEGER, as_operand, concrete_scalar, dtype_param, error, named, scalar_constant

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]

#: the ``norm`` values of NumPy, jax.numpy and the array API (``None`` is ``"backward"``)
NORMS: Final = ("backward", "ortho", "forward")
#: the innermost axes ``lax.fft`` (XLA) transforms at once
_MAX_AXES: Final = 3


# -- arguments ---------------------------------------------------------------------------------------


def _norm(name: str, norm: Any, x: Tensor) -> str:
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in NORMS:
        raise error(OpValueError, name, f"norm must be one of {', '.join(map(repr, NORMS))} or None, got {norm!r}", x)
    return norm


def _axes(name: str, x: Tensor, axes: Any, param: str) -> tuple[int, ...]:
    """``axes`` (ints, negative ones from the end) as non-negative axes of ``x``, in the given order."""
    items = (axes,) if _is_int(axes) else axes
    try:
        items = tuple(items)
    except TypeError:
        raise error(ShapeError, name, f"{param} must be an int or a sequence of ints, got {axes!r}", x) from None
    out = []
    for a in items:
        if not _is_int(a):
            raise error(ShapeError, name, f"{param} must be an int or a sequence of ints, got {axes!r}", x)
        a = operator.index(a)
        if not -x.ndim <= a < x.ndim:
            raise error(ShapeError, name, f"{param} {a} is out of range for rank {x.ndim}", x)
        out.append(a % x.ndim)
    if len(set(out)) != len(out):
        raise error(ShapeError, name, f"{param} {tuple(items)} repeats an axis (jax.numpy.fft refuses that too)", x)
    return tuple(out)


def _lengths(name: str, x: Tensor, s: Any, param: str) -> tuple[int, ...] | None:
    """``s`` (or ``n``) as positive ints, or ``None``."""
    if s is None:
        return None
    items = (s,) if _is_int(s) else s
    try:
        items = tuple(items)
    except TypeError:
        raise error(ShapeError, name, f"{param} must be a sequence of ints, got {s!r}", x) from None
    why = "it decides how many points are transformed (the result's shape)"
    items = tuple(concrete_scalar(name, param, n, INTEGER, why, (x,)) if isinstance(n, Tensor) else n for n in items)
    if not all(_is_int(n) for n in items):
        raise error(ShapeError, name, f"{param} must be ints, got {s!r}", x)
    out = tuple(operator.index(n) for n in items)
    if any(n < 1 for n in out):
        raise error(ShapeError, name, f"{param} {s!r} must be positive (the number of points of each transform)", x)
    return out


# -- the transforms ----------------------------------------------------------------------------------


def _resize(x: Tensor, axis: int, size: int) -> Tensor:
    """``x`` cropped or zero-padded at the end of ``axis`` to ``size`` (a ``slice`` or a ``pad``)."""
    have = x.shape[axis]
    if have > size:
        limits = tuple(size if i == axis else n for i, n in enumerate(x.shape))
        return F.slice(x, (0,) * x.ndim, limits)
    if have < size:
        config = [(0, size - have, 0) if i == axis else (0, 0, 0) for i in range(x.ndim)]
        return F.pad(x, 0, config)
    return x


def _move(x: Tensor, source: Sequence[int], destination: Sequence[int]) -> Tensor:
    """``x`` with the axes ``source`` at the positions ``destination`` (one ``transpose``, or none)."""
    rest = [i for i in range(x.ndim) if i not in source]
    order = [0] * x.ndim
    for s, d in zip(source, destination, strict=True):
        order[d] = s
    it = iter(rest)
    for d in range(x.ndim):
        if d not in destination:
            order[d] = next(it)
    return x if order == list(range(x.ndim)) else F.transpose(x, tuple(order))


def _innermost(x: Tensor, fft_type: str, lengths: tuple[int, ...]) -> Tensor:
    """The ``fft_type`` transform over the innermost ``len(lengths)`` axes, three at a time (XLA's
    limit): the forward transforms start with the last axes (RFFT there, FFT for the rest), the
    inverse ones end with them (IFFT first, IRFFT last)."""
    if len(lengths) <= _MAX_AXES:
        return F.fft(x, fft_type, lengths)
    k = len(lengths)
    chunk = 2 if k == 4 else _MAX_AXES
    outer, inner = lengths[: k - chunk], lengths[k - chunk :]
    first = x.ndim - k  # the outer axes are first .. first + k - chunk
    outer_axes = tuple(range(first, first + k - chunk))
    moved_to = tuple(range(x.ndim - len(outer), x.ndim))
    forward = fft_type in ("FFT", "RFFT")
    if forward:
        x = F.fft(x, fft_type, inner)
    # the outer axes innermost, transformed (complex), and back
    rest = "FFT" if forward else "IFFT"
    y = _move(x, outer_axes, moved_to)
    y = _innermost(y, rest, outer)
    x = _move(y, moved_to, outer_axes)
    return x if forward else F.fft(x, fft_type, inner)


def _scale(y: Tensor, factor: float) -> Tensor:
    """``y * factor`` with the factor a 0-d constant of ``y``'s dtype (no promotion)."""
    if factor == 1.0:
        return y
    return F.mul(y, F.full((), factor, y.dtype))


def _transform(
    name: str, fft_type: str, a: Any, s: Any, axes: Any, norm: Any, s_param: str = "s", axes_param: str = "axes"
) -> Tensor:
    """The core of every transform: ``fft_type`` over ``axes`` with ``s`` points, normalised by ``norm``."""
    x = as_operand(name, a)
    how = _norm(name, norm, x)
    lengths = _lengths(name, x, s, s_param)
    if axes is None:
        picked = tuple(range(x.ndim)) if lengths is None else tuple(range(x.ndim - len(lengths), x.ndim))
        if lengths is not None and len(lengths) > x.ndim:
            raise error(ShapeError, name, f"{s_param} {lengths} has more entries than the rank {x.ndim}", x)
    else:
        picked = _axes(name, x, axes, axes_param)
    if lengths is not None and len(lengths) != len(picked):
        raise error(ShapeError, name, f"{s_param} {lengths} and {axes_param} {picked} have different lengths", x)
    if not picked:
        raise error(ShapeError, name, "needs at least one axis to transform", x)
    inverse_real = fft_type == "IRFFT"
    if lengths is None:
        sizes = [x.shape[a] for a in picked]
        if inverse_real:
            sizes[-1] = 2 * (sizes[-1] - 1)
            if sizes[-1] < 1:
                raise error(
                    ShapeError, name,
                    f"axis {picked[-1]} has {x.shape[picked[-1]]} points, which make no output points "
                    f"(2 * (m - 1) = {sizes[-1]}): pass {s_param}",
                    x,
                )  # fmt: skip
        lengths = tuple(sizes)
    inner = tuple(range(x.ndim - len(picked), x.ndim))
    x = _move(x, picked, inner)
    for axis, n in zip(inner, lengths, strict=True):
        size = n // 2 + 1 if inverse_real and axis == inner[-1] else n
        x = _resize(x, axis, size)
    y = _innermost(x, fft_type, lengths)
    total = math.prod(lengths)
    inverse = fft_type in ("IFFT", "IRFFT")
    if how == "ortho":
        y = _scale(y, math.sqrt(total) if inverse else 1.0 / math.sqrt(total))
    elif how == "forward":
        y = _scale(y, float(total) if inverse else 1.0 / total)
    return _move(y, inner, picked)


def _one_axis(name: str, fft_type: str, a: Any, n: Any, axis: Any, norm: Any) -> Tensor:
    if not _is_int(axis):
        x = as_operand(name, a)
        raise error(ShapeError, name, f"axis must be an int, got {axis!r}", x)
    return _transform(name, fft_type, a, None if n is None else (n,), (axis,), norm, "n", "axis")


_SWAPPED: Final = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _swap(name: str, a: Any, norm: Any) -> str:
    """The direction ``hfft`` / ``ihfft`` pass on: they are ``irfft`` / ``rfft`` of the conjugate
    with the normalisation of the other direction (NumPy's definition)."""
    if not isinstance(norm, (str, type(None))) or norm not in _SWAPPED:
        raise error(
            OpValueError, name, f"norm must be one of {', '.join(map(repr, NORMS))} or None, got {norm!r}",
            as_operand(name, a),
        )  # fmt: skip
    return _SWAPPED[norm]


@named("fft.fft")
def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``jnp.fft.fft``: the discrete Fourier transform along ``axis`` with ``n`` points."""
    return _one_axis("fft.fft", "FFT", a, n, axis, norm)


@named("fft.ifft")
def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``jnp.fft.ifft``: the inverse discrete Fourier transform along ``axis`` (``1/n`` by default)."""
    return _one_axis("fft.ifft", "IFFT", a, n, axis, norm)


@named("fft.rfft")
def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``jnp.fft.rfft``: the transform of a real input along ``axis``, its ``n // 2 + 1``
    non-negative frequencies."""
    return _one_axis("fft.rfft", "RFFT", a, n, axis, norm)


@named("fft.irfft")
def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``jnp.fft.irfft``: the real signal of ``n`` points (``2 * (m - 1)`` by default) whose
    ``rfft`` is ``a`` (``m`` its points along ``axis``)."""
    return _one_axis("fft.irfft", "IRFFT", a, n, axis, norm)


@named("fft.hfft")
def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``jnp.fft.hfft``: the real spectrum of a signal with Hermitian symmetry whose first half is
    ``a``: ``irfft(conj(a), n, axis)`` scaled the other way."""
    how = _swap("fft.hfft", a, norm)
    x = as_operand("fft.hfft", a)
    return _one_axis("fft.hfft", "IRFFT", F.conj(x), n, axis, how)


@named("fft.ihfft")
def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """``jnp.fft.ihfft``: the inverse of ``hfft`` for a real ``a``: ``conj(rfft(a, n, axis))``
    scaled the other way."""
    how = _swap("fft.ihfft", a, norm)
    return F.conj(_one_axis("fft.ihfft", "RFFT", a, n, axis, how))


@named("fft.fftn")
def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``jnp.fft.fftn``: the transform over ``axes`` (every axis, or the last ``len(s)``)."""
    return _transform("fft.fftn", "FFT", a, s, axes, norm)


@named("fft.ifftn")
def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``jnp.fft.ifftn``: the inverse transform over ``axes``."""
    return _transform("fft.ifftn", "IFFT", a, s, axes, norm)


@named("fft.rfftn")
def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``jnp.fft.rfftn``: the transform of a real input over ``axes``, halved along the last one."""
    return _transform("fft.rfftn", "RFFT", a, s, axes, norm)


@named("fft.irfftn")
def irfftn(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None
) -> Tensor:
    """``jnp.fft.irfftn``: the real signal whose ``rfftn`` is ``a`` (the last axis of ``2 * (m - 1)``
    points unless ``s`` says)."""
    return _transform("fft.irfftn", "IRFFT", a, s, axes, norm)


@named("fft.fft2")
def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``jnp.fft.fft2``: ``fftn`` over two axes (the last two by default)."""
    return _transform("fft.fft2", "FFT", a, s, axes, norm)


@named("fft.ifft2")
def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``jnp.fft.ifft2``: ``ifftn`` over two axes."""
    return _transform("fft.ifft2", "IFFT", a, s, axes, norm)


@named("fft.rfft2")
def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``jnp.fft.rfft2``: ``rfftn`` over two axes."""
    return _transform("fft.rfft2", "RFFT", a, s, axes, norm)


@named("fft.irfft2")
def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``jnp.fft.irfft2``: ``irfftn`` over two axes."""
    return _transform("fft.irfft2", "IRFFT", a, s, axes, norm)


# -- frequencies and shifts ------------------------------------------------------------------------


def _freq_dtypes(name: str, dtype: Any) -> tuple[DType, DType]:
    """(the dtype computed in, the dtype returned): the policy's default float unless ``dtype``
    says; an integer or complex ``dtype`` is computed in its float and converted at the end."""
    default = get_policy_object(None).scalar_default("float", None)
    out = default if dtype is None else dtype_param(name, dtype)
    if out.kind == "float":
        return out, out
    if out.kind == "complex":
        return dt.COMPLEX_PART[out], out
    return default, out


def _points(name: str, n: Any) -> int:
    if isinstance(n, Tensor):
        n = concrete_scalar(name, "n", n, INTEGER, "it decides the result's shape")
    if not _is_int(n):
        raise OpTypeError(f"{name}: n must be an int, got {n!r} [policy {get_policy_object(None).name!r}]")
    value = operator.index(n)
    if value < 1:
        raise OpValueError(f"{name}: n must be positive, got {value} [policy {get_policy_object(None).name!r}]")
    return value


def _frequencies(name: str, k: Tensor, n: int, d: Any, compute: DType, out: DType) -> Tensor:
    spacing = scalar_constant(name, "d", d, compute)
    result = F.div(k, F.mul(spacing, F.full((), float(n), compute)))  # k / (d * n)
    return result if out is compute else F.convert(result, out)


@named("fft.fftfreq")
def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``jnp.fft.fftfreq``: the sample frequencies of an ``n``-point transform with spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    count = _points("fft.fftfreq", n)
    compute, out = _freq_dtypes("fft.fftfreq", dtype)
    i = F.iota(compute, (count,))
    half = (count + 1) // 2  # the non-negative frequencies come first
    k = F.select(F.lt(i, F.full((), float(half), compute)), i, F.sub(i, F.full((), float(count), compute)))
    return _frequencies("fft.fftfreq", k, count, d, compute, out)


@named("fft.rfftfreq")
def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``jnp.fft.rfftfreq``: the ``n // 2 + 1`` non-negative sample frequencies of ``rfft``:
    ``[0, 1, ..., n // 2] / (d * n)``."""
    count = _points("fft.rfftfreq", n)
    compute, out = _freq_dtypes("fft.rfftfreq", dtype)
    return _frequencies("fft.rfftfreq", F.iota(compute, (count // 2 + 1,)), count, d, compute, out)


def _shift(name: str, x: Any, axes: Any, inverse: bool) -> Tensor:
    t = as_operand(name, x)
    picked = tuple(range(t.ndim)) if axes is None else _axes(name, t, axes, "axes")
    if not picked:
        return t
    shifts = [-(t.shape[a] // 2) if inverse else t.shape[a] // 2 for a in picked]
    return roll(t, shifts, picked)


@named("fft.fftshift")
def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Tensor:
    """``jnp.fft.fftshift``: the zero frequency moved to the centre of ``axes`` (every axis by
    default): a ``roll`` by half of each."""
    return _shift("fft.fftshift", x, axes, False)


@named("fft.ifftshift")
def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Tensor:
    """``jnp.fft.ifftshift``: the inverse of ``fftshift`` (they differ for odd lengths)."""
    return _shift("fft.ifftshift", x, axes, True)

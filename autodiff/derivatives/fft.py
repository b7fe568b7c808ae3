"""JVP and VJP rules of the Fourier transforms: ``fft`` (FFT, IFFT, RFFT, IRFFT).

Each rule is a named function followed by its registration line; the trailing comment states
the identity it implements. Rules are written with the runtime's op functions only, so under a
recorder they record a derivative program of vocabulary ops (differentiable again).

Every transform is linear (over the reals for RFFT and IRFFT, whose operand or result is
real), so its JVP is the transform of the tangent. The VJP is the adjoint under the real inner
product ``<a, b> = Re(sum(conj(a) * b))``, with ``N = prod(fft_lengths)``:

* FFT and IFFT: the transform matrices are symmetric, so the adjoint is the conjugate transform,
  ``conj(T(conj(ct)))`` (``N`` times the inverse of FFT, ``1/N`` times FFT for IFFT).
* RFFT keeps the first ``m = n // 2 + 1`` outputs of the complex FFT of a real ``x`` along its last
  axis: ``y = P F x``. Its adjoint on a real ``x`` is ``Re(F^H P^T ct)``: the cotangent padded
  with zeros back to ``n``, then ``Re(conj(F conj(.))) = Re(F conj(.))``. It is not IRFFT, which
  would also read the mirrored half of the spectrum.
* IRFFT is ``y = Re(IFFT(P^T (w * x)))`` for the weights ``w`` (1 for the zero frequency and, for
  even ``n``, the Nyquist one; 2 for the others, which stand for their mirrored twins too), so
  its adjoint is ``w * P IFFT^H ct = w * RFFT(ct) / N`` for a real ``ct``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autodiff.derivatives._common import Primals, Tangents
from autodiff.rules import JVP_RULES, SAVES_NOTHING, VJP_RULES, VJP_SAVES
from autodiff.zeros import TangentLike, Zero, is_zero
from runtime.core import dtypes as dt
from runtime.core.lax import broadcast_in_dim, conj, fft, full, mul, pad, real
from runtime.core.tensor import Tensor


def fft_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, fft_type: str, fft_lengths: tuple[int, ...]
) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    if is_zero(t):
        return [Zero.like(out)]
    return [fft(t, fft_type, fft_lengths)]  # d T(x) = T(dx): every transform is linear


JVP_RULES["fft"] = fft_jvp


def _rfft_adjoint(ct: Tensor, lengths: tuple[int, ...]) -> Tensor:
    """``Re(F^H P^T ct)``: ct padded with zeros from ``n // 2 + 1`` to ``n`` along its last axis."""
    n = lengths[-1]
    config = [(0, 0, 0)] * (ct.ndim - 1) + [(0, n - ct.shape[-1], 0)]
    padded = pad(conj(ct), 0, config)
    return real(fft(padded, "FFT", lengths))  # Re(F^H v) = Re(conj(F conj(v))) = Re(F conj(v))


def _irfft_adjoint(ct: Tensor, lengths: tuple[int, ...]) -> Tensor:
    """``w * RFFT(ct) / N``: the zero (and, for even ``n``, the Nyquist) frequency once, the
    others twice, as IRFFT reads each of them for its mirrored twin too."""
    spectrum = fft(ct, "RFFT", lengths)
    n, total = lengths[-1], math.prod(lengths)
    cdtype = spectrum.dtype
    if total == 0:
        return full(tuple(spectrum.shape), 0, cdtype)
    m = spectrum.shape[-1]
    nyquist = 1 if n % 2 == 0 else 0
    twice = full((m - 1 - nyquist,), 2.0 / total, cdtype)
    weights = pad(twice, 1.0 / total, [(1, nyquist, 0)])  # [1, 2, ..., 2, (1)] / N
    w = broadcast_in_dim(weights, tuple(spectrum.shape), (spectrum.ndim - 1,))
    return mul(spectrum, w)


def fft_vjp(
    cotangents: Tangents,
    primals: Primals,
    outputs: Primals,
    needs: Sequence[bool],
    fft_type: str,
    fft_lengths: tuple[int, ...],
) -> list[TangentLike]:
    (ct,) = cotangents
    if is_zero(ct):
        return [Zero.like(primals[0])]
    assert isinstance(ct, Tensor)
    lengths = tuple(fft_lengths)
    if fft_type == "RFFT":
        return [_rfft_adjoint(ct, lengths)]  # x-bar = Re(F^H P^T ct)
    if fft_type == "IRFFT":
        return [_irfft_adjoint(ct, lengths)]  # x-bar = w * RFFT(ct) / N
    assert ct.dtype.kind == "complex" and ct.dtype in (dt.complex64, dt.complex128)
    return [conj(fft(conj(ct), fft_type, lengths))]  # x-bar = T^H ct = conj(T conj(ct)) (T symmetric)


VJP_RULES["fft"] = fft_vjp
VJP_SAVES["fft"] = SAVES_NOTHING

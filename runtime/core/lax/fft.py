"""The op function of the Fourier transforms: ``fft``, as ``jax.lax.fft``.

It plans, checks and runs the ``fft`` op through the executor; the conventions are in
``runtime.core.lax``. The NumPy-named transforms (``rt.fft.fft``, ``rfftn``, ``hfft`` ...) are
composed from it in ``runtime.numpy.fft``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from runtime.core import ops
from runtime.core.executor import as_tensor, op_error
from runtime.core.lax._common import Operand, _ints, _Invalid, _named, _one
from runtime.core.shapes import ShapeError
from runtime.core.tensor import Tensor

__all__ = ["fft"]


def _fft_type(value: Any) -> Any:
    """``fft_type`` as castwise's name (``"FFT"``, ``"IFFT"``, ``"RFFT"``, ``"IRFFT"``): a name in
    either case, or ``jax.lax.FftType`` (any enum member with one of those names). Anything else is
    left for the shape rule to refuse."""
    if isinstance(value, enum.Enum):
        value = value.name
    if isinstance(value, str) and value.upper() in ops.FFT_TYPES:
        return value.upper()
    return value


@_named("fft")
def fft(x: Operand, fft_type: Any, fft_lengths: Sequence[int] | int) -> Tensor:
    """``lax.fft``: the ``fft_type`` transform (FFT, IFFT, RFFT or IRFFT) over the last
    ``len(fft_lengths)`` axes (1 to 3), unnormalised forward and ``1/n`` inverse.

    As ``jax.lax.fft``, an integer or bool operand is converted to the policy's inexact dtype
    and a real one to complex for FFT, IFFT and IRFFT (``runtime.core.plan``: each a recorded
    ``convert``). RFFT of a real ``[..., n]`` is complex ``[..., n // 2 + 1]``; IRFFT reads
    ``[..., n // 2 + 1]`` and gives a real ``[..., n]`` (``n = fft_lengths[-1]``).
    """
    kind, lengths = _fft_type(fft_type), _ints(fft_lengths, "fft_lengths")
    if kind not in ops.FFT_TYPES or isinstance(lengths, _Invalid):
        # (refused before the plan, which under kael and neuron would refuse any transform first)
        t = as_tensor(x)
        what = f"fft_type must be one of {', '.join(ops.FFT_TYPES)}, got {fft_type!r}"
        if kind in ops.FFT_TYPES:
            what = f"fft_lengths must be an int or a sequence of ints, got {fft_lengths!r}"
        raise op_error(ShapeError, ops.fft, (t,), what)
    return _one(ops.fft, x, fft_type=kind, fft_lengths=lengths)

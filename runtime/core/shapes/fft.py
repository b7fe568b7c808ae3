"""Shape rules of the Fourier transforms (``runtime.core.ops`` family ``fft``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.ops import OpDef
from runtime.core.shapes._common import REAL_DTYPE, SHAPE_RULES, Aval, OpTypeError, Shape, ShapeError, _fail

#: the dtypes XLA's Fourier transforms take: the real ones of RFFT, the complex ones of the others
RFFT_DTYPES: Final = frozenset({dt.float32, dt.float64})
COMPLEX_FFT_DTYPES: Final = frozenset({dt.complex64, dt.complex128})
#: the complex dtype an RFFT of each real dtype gives
RFFT_OUTPUT: Final[dict[DType, DType]] = {dt.float32: dt.complex64, dt.float64: dt.complex128}
#: XLA transforms at most three innermost axes at once (jnp.fft composes more)
MAX_FFT_RANK: Final = 3


def fft_lengths_of(op: OpDef, avals: Sequence[Aval], value: Any) -> tuple[int, ...]:
    """``fft_lengths`` as an int tuple of 1 to 3 non-negative lengths, no more than the rank."""
    rank = len(avals[0][1])
    if not isinstance(value, tuple) or not all(type(n) is int for n in value):
        raise _fail(ShapeError, op, avals, f"fft_lengths must be a tuple of ints, got {value!r}")
    if not 1 <= len(value) <= MAX_FFT_RANK:
        raise _fail(
            ShapeError, op, avals,
            f"fft_lengths {value} must have 1 to {MAX_FFT_RANK} entries (XLA transforms at most "
            f"{MAX_FFT_RANK} innermost axes; rt.fft.fftn composes more)",
        )  # fmt: skip
    if len(value) > rank:
        raise _fail(ShapeError, op, avals, f"fft_lengths {value} has more entries than the operand's rank {rank}")
    if any(n < 0 for n in value):
        raise _fail(ShapeError, op, avals, f"fft_lengths {value} must be non-negative")
    return value


def _dtype(op: OpDef, avals: Sequence[Aval], fft_type: str) -> DType:
    dtype = avals[0][0]
    if fft_type == "RFFT":
        if dtype.kind == "complex":
            raise _fail(OpTypeError, op, avals, f"an RFFT takes a real operand, got {dtype.short} (use FFT)")
        if dtype not in RFFT_DTYPES:
            raise _fail(
                OpTypeError, op, avals,
                f"an RFFT takes float32 or float64, got {dtype.short}: convert explicitly (jax.numpy.fft.rfft "
                "refuses float16, bfloat16 and the float8 formats too)",
            )  # fmt: skip
    elif dtype not in COMPLEX_FFT_DTYPES:
        raise _fail(OpTypeError, op, avals, f"an {fft_type} takes complex64 or complex128, got {dtype.short}")
    return dtype


def fft_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.fft over the last ``len(fft_lengths)`` axes: FFT / IFFT keep a complex operand's aval;
    RFFT of a real [..., n1, .., nk] is complex [..., n1, .., nk // 2 + 1]; IRFFT of a complex
    [..., n1, .., nk // 2 + 1] is real [..., n1, .., nk]."""
    fft_type = params["fft_type"]
    if fft_type not in ops.FFT_TYPES:
        raise _fail(ShapeError, op, avals, f"fft_type must be one of {', '.join(ops.FFT_TYPES)}, got {fft_type!r}")
    lengths = fft_lengths_of(op, avals, params["fft_lengths"])
    dtype = _dtype(op, avals, fft_type)
    shape: Shape = avals[0][1]
    k = len(lengths)
    batch, minor = shape[: len(shape) - k], shape[len(shape) - k :]
    if fft_type == "IRFFT":
        expected = (*lengths[:-1], lengths[-1] // 2 + 1)
        if minor != expected:
            raise _fail(
                ShapeError, op, avals,
                f"an IRFFT of fft_lengths {lengths} needs innermost dimensions {expected} (the last one "
                f"fft_lengths[-1] // 2 + 1), got {minor}",
            )  # fmt: skip
        return ((REAL_DTYPE[dtype], (*batch, *lengths)),)
    if minor != lengths:
        raise _fail(
            ShapeError, op, avals,
            f"an {fft_type} of fft_lengths {lengths} needs innermost dimensions {lengths}, got {minor}",
        )  # fmt: skip
    if fft_type == "RFFT":
        return ((RFFT_OUTPUT[dtype], (*batch, *lengths[:-1], lengths[-1] // 2 + 1)),)
    return ((dtype, shape),)


SHAPE_RULES["fft"] = fft_rule

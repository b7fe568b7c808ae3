"""Mixed dtypes on large arrays at memory speed: binary ufuncs cast in chunks, converts into cached memory.

``np.add(f32, f64, dtype=f64, casting="unsafe")`` casts the float32 operand
inside NumPy's buffered loop: 8,192 elements at a time through a small buffer,
with the iterator's bookkeeping between the cast and the add. For 1M elements
that costs about 2x the same-dtype add, whose loop runs straight over memory.

``ufunc_into`` computes the same result in chunks of the output: each chunk of
the output first receives the operand that needs a cast (``np.copyto``, a plain
cast loop, the same cast NumPy's buffered loop runs), then the same-dtype ufunc
runs in place on it. The chunk is still in cache for the second step, so the
whole op reads each input once and writes the output once, like the same-dtype
op, and needs no memory beyond the output. Results are bit for bit those of the
in-loop cast (and so of ``convert`` + kernel): an elementwise op computes each
element from the two cast elements alone, whatever the chunking.

``convert_array`` serves the other mixed ops (their operand is converted, then
their kernel runs): a large convert that is a plain cast writes into a buffer
of the cache (``runtime.core.memory``) instead of fresh pages from the C allocator.
"""

from __future__ import annotations

import itertools
from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import memory, parallel

#: Output bytes per chunk: both steps of a chunk run in cache (measured best at 1-4 MiB on a 2 MiB L2).
CHUNK_BYTES: Final = 2 << 20


def ufunc_into(ufunc: np.ufunc, a: np.ndarray, b: np.ndarray, out: np.ndarray | None, storage: np.dtype[Any]) -> Any:
    """``ufunc(a, b, out=out, dtype=storage, casting="unsafe")``, bit for bit, chunked where that is faster.

    The chunked form runs when ``out`` is given (a fresh, C-contiguous output of
    ``storage``, as the buffer cache hands out for large results), exactly one
    operand needs a cast, and that operand has the output's shape and is
    C-contiguous, while the other is C-contiguous of the same shape or 0-d.
    Anything else (broadcasting, strided views, both operands cast) runs the
    ufunc as given.
    """
    if out is None or out.dtype != storage or not out.flags.c_contiguous:
        return _whole(ufunc, a, b, out, storage)
    cast_a = a.dtype != storage
    if cast_a == (b.dtype != storage):  # both cast (or neither): NumPy's loop
        return _whole(ufunc, a, b, out, storage)
    cast, other = (a, b) if cast_a else (b, a)
    shape = out.shape
    if cast.shape != shape or not cast.flags.c_contiguous:
        return _whole(ufunc, a, b, out, storage)
    if other.ndim == 0:
        flat_other = None
    elif other.shape == shape and other.flags.c_contiguous:
        flat_other = other.reshape(-1)
    else:
        return _whole(ufunc, a, b, out, storage)
    flat_cast, flat_out = cast.reshape(-1), out.reshape(-1)
    n = flat_out.shape[0]
    step = max(1, CHUNK_BYTES // storage.itemsize)
    if parallel.ON and n >= parallel.CHEAP_MIN_ELEMENTS:
        # each thread runs the chunk loop over its own range of the output, cut at chunk
        # boundaries: every ufunc call is the one the unsplit loop makes
        at = parallel.cuts(n, parallel.get_num_threads(), step)
        ranges = [
            (ufunc, flat_cast, other, flat_other, flat_out, cast_a, step, lo, hi) for lo, hi in itertools.pairwise(at)
        ]
        if len(ranges) > 1 and parallel.run(_chunks, ranges):
            return out
    _chunks(ufunc, flat_cast, other, flat_other, flat_out, cast_a, step, 0, n)
    return out


def _whole(ufunc: np.ufunc, a: np.ndarray, b: np.ndarray, out: np.ndarray | None, storage: np.dtype[Any]) -> Any:
    """The ufunc as given, casting inside NumPy's loop (split across threads when large)."""
    if parallel.ON and out is not None:
        return parallel.ufunc(ufunc, (a, b), out, dtype=storage, casting="unsafe")
    return ufunc(a, b, out=out, dtype=storage, casting="unsafe")


def _chunks(
    ufunc: np.ufunc,
    flat_cast: np.ndarray,
    other: np.ndarray,
    flat_other: np.ndarray | None,
    flat_out: np.ndarray,
    cast_a: bool,
    step: int,
    begin: int,
    end: int,
) -> None:
    """Elements ``begin:end`` of ``ufunc_into``'s chunked form, ``step`` output elements at a time."""
    for start in range(begin, end, step):
        stop = min(start + step, end)
        chunk = flat_out[start:stop]
        np.copyto(chunk, flat_cast[start:stop], casting="unsafe")
        rest = other if flat_other is None else flat_other[start:stop]
        if cast_a:  # operand order kept: sub is not symmetric
            ufunc(chunk, rest, out=chunk)
        else:
            ufunc(rest, chunk, out=chunk)


# -- converts -------------------------------------------------------------------------------------

_INTS: Final = (dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16, dt.uint32, dt.uint64)
#: (source, target) converts where ``jax.lax.convert_element_type`` is NumPy's plain cast: integers
#: wrap (as ``astype``), integers round to float32/float64 once, float32 <-> float64, and exact widenings
#: into complex. The castwise ``convert`` kernel runs ``astype`` for each of them (or an exact two-step
#: widening), so a cast into a cached output is bit for bit the kernel's result.
PLAIN_CONVERTS: Final[frozenset[tuple[dt.DType, dt.DType]]] = frozenset(
    {(s, t) for s in _INTS for t in _INTS if s is not t}
    | {(s, t) for s in _INTS for t in (dt.float32, dt.float64)}
    | {(dt.float32, dt.float64), (dt.float64, dt.float32)}
    | {(dt.float32, dt.complex64), (dt.float32, dt.complex128), (dt.float64, dt.complex128)}
    | {(dt.complex64, dt.complex128)}
)


def convert_array(array: np.ndarray, source: dt.DType, target: dt.DType) -> np.ndarray | None:
    """``array`` (of ``source``'s storage) converted to ``target``: for a large result of a plain cast
    (``PLAIN_CONVERTS``), a cast into a cached output buffer, at memory speed; else ``None`` (the
    caller runs the ``convert`` kernel, which also reports a wrong storage)."""
    storage = target.storage
    if (
        array.size * storage.itemsize < memory.POOL_MIN_BYTES
        or (source, target) not in PLAIN_CONVERTS
        or array.dtype != source.storage
    ):
        return None
    out = memory.empty(array.shape, storage)
    with np.errstate(over="ignore", invalid="ignore"):  # float64 -> float32 overflows to inf, as the kernel's
        if parallel.ON:
            parallel.copyto(out, array)
        else:
            np.copyto(out, array, casting="unsafe")
    return out

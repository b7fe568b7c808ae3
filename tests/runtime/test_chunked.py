"""Mixed-dtype binary ufuncs cast in chunks (runtime.core.chunked): bit for bit NumPy's in-loop cast, no extra
memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runtime as rt
from runtime.core import chunked, memory
from runtime.core import lax as F

UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
#: (operand dtype, output storage): widening float, int -> float, real -> complex, int widening
PAIRS = [
    (np.float32, np.float64),
    (np.int32, np.float64),
    (np.int8, np.float32),
    (np.uint16, np.int32),
    (np.int32, np.int64),
    (np.float32, np.complex64),
    (np.float64, np.complex128),
    (np.uint8, np.uint64),
]


def _values(rng: np.random.Generator, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(info.min, info.max, size=shape, dtype=d, endpoint=True)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    x = rng.standard_normal(shape).astype(d)
    x.flat[:4] = [np.inf, -np.inf, np.nan, -0.0]
    return x


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 64 bytes, so a short array crosses many chunk boundaries (and a ragged last one)."""
    monkeypatch.setattr(chunked, "CHUNK_BYTES", 64)


@pytest.mark.parametrize("name", sorted(UFUNCS))
@pytest.mark.parametrize(("low", "storage"), PAIRS)
@pytest.mark.parametrize("cast_first", [True, False])
def test_bit_for_bit_the_in_loop_cast(
    small_chunks: None, name: str, low: type, storage: type, cast_first: bool
) -> None:
    rng = np.random.default_rng(0)
    shape = (7, 13)  # 91 elements: a ragged last chunk
    x, y = _values(rng, low, shape), _values(rng, storage, shape)
    a, b = (x, y) if cast_first else (y, x)
    ufunc, out_dtype = UFUNCS[name], np.dtype(storage)
    with np.errstate(all="ignore"):
        want = ufunc(a, b, dtype=out_dtype, casting="unsafe")
        got = chunked.ufunc_into(ufunc, a, b, np.empty(shape, out_dtype), out_dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("other_shape", [(), (91,)])
def test_a_0d_operand_or_a_flat_one(small_chunks: None, other_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal(91).astype(np.float32)
    b = np.asarray(rng.standard_normal(other_shape))
    f64 = np.dtype(np.float64)
    for x, y in ((a, b), (b, a)):
        if x.ndim == 0:
            continue  # the cast operand must have the output's shape; a 0-d one goes to NumPy's loop
        want = np.subtract(x, y, dtype=f64, casting="unsafe")
        got = chunked.ufunc_into(np.subtract, x, y, np.empty(91, f64), f64)
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "case",
    ["broadcast", "strided cast operand", "strided other", "both cast", "fortran out", "no out", "0-d cast operand"],
)
def test_what_it_leaves_to_numpy_is_still_right(small_chunks: None, case: str) -> None:
    rng = np.random.default_rng(2)
    f64 = np.dtype(np.float64)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    b = rng.standard_normal((6, 8))
    out: np.ndarray | None = np.empty((6, 8), f64)
    if case == "broadcast":
        b = rng.standard_normal(8)
    elif case == "strided cast operand":
        a = rng.standard_normal((8, 6)).astype(np.float32).T
    elif case == "strided other":
        b = rng.standard_normal((6, 16))[:, ::2]
    elif case == "both cast":
        b = rng.standard_normal((6, 8)).astype(np.float16)
    elif case == "fortran out":
        out = np.empty((6, 8), f64, order="F")
    elif case == "no out":
        out = None
    elif case == "0-d cast operand":
        a = np.asarray(np.float32(1.5))
    want = np.add(a, b, dtype=f64, casting="unsafe")
    got = chunked.ufunc_into(np.add, a, b, out, f64)
    assert got.dtype == f64 and np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 300),
    chunk=st.integers(1, 64),
    name=st.sampled_from(sorted(UFUNCS)),
    pair=st.sampled_from(PAIRS),
    seed=st.integers(0, 2**16),
)
def test_any_length_any_chunk(n: int, chunk: int, name: str, pair: tuple[type, type], seed: int) -> None:
    rng = np.random.default_rng(seed)
    low, storage = pair
    a = _values(rng, low, (n,)) if n >= 4 else np.zeros(n, low)
    b = _values(rng, storage, (n,)) if n >= 4 else np.ones(n, storage)
    out_dtype = np.dtype(storage)
    saved = chunked.CHUNK_BYTES
    chunked.CHUNK_BYTES = chunk  # type: ignore[misc]
    try:
        with np.errstate(all="ignore"):
            got = chunked.ufunc_into(UFUNCS[name], a, b, np.empty(n, out_dtype), out_dtype)
            want = UFUNCS[name](a, b, dtype=out_dtype, casting="unsafe")
    finally:
        chunked.CHUNK_BYTES = saved  # type: ignore[misc]
    assert got.tobytes() == want.tobytes()


# -- through the eager paths: operators, the cached path, functions, the first (general) call ----------------

_N = 300_000  # f64 output of 2.4 MB: large enough for the buffer cache, two chunks of the default size


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
@pytest.mark.parametrize("way", ["operator", "function"])
def test_large_mixed_eager_ops_equal_convert_then_kernel(name: str, way: str) -> None:
    rng = np.random.default_rng(3)
    x32 = rt.asarray(rng.standard_normal(_N).astype(np.float32))
    x64 = rt.asarray(rng.standard_normal(_N))
    op = {"add": (lambda p, q: p + q), "sub": (lambda p, q: p - q), "mul": (lambda p, q: p * q)}[name]
    fn = op if way == "operator" else getattr(F, name)
    want_xy = UFUNCS[name](x32.numpy().astype(np.float64), x64.numpy())
    want_yx = UFUNCS[name](x64.numpy(), x32.numpy().astype(np.float64))
    for _ in range(3):  # first call (general path), then the cached paths
        got_xy, got_yx = fn(x32, x64), fn(x64, x32)
        assert got_xy.dtype == rt.float64 and got_xy.numpy().tobytes() == want_xy.tobytes()
        assert got_yx.numpy().tobytes() == want_yx.tobytes()


def test_large_mixed_add_allocates_at_most_its_output() -> None:
    rng = np.random.default_rng(4)
    x32 = rt.asarray(rng.standard_normal(_N).astype(np.float32))
    x64 = rt.asarray(rng.standard_normal(_N))
    x32 + x64  # warm the signature caches
    memory.empty_cache()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = x32 + x64
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert result.numpy().nbytes == _N * 8
    assert peak <= _N * 8 + 64 * 1024  # the output (plus its alignment and bookkeeping), no converted input


# -- large converts into cached memory ------------------------------------------------------------


def _extreme_values(dtype: rt.DType, n: int, rng: np.random.Generator) -> np.ndarray:
    storage = dtype.storage
    if storage.kind in "iu":
        info = np.iinfo(storage)
        x = rng.integers(info.min, info.max, size=n, dtype=storage, endpoint=True)
        x[:4] = [info.min, info.max, 0, -1 if storage.kind == "i" else 1]
        return x
    if storage.kind == "c":
        part = np.float32 if storage == np.complex64 else np.float64
        re = _extreme_values(rt.float32 if part is np.float32 else rt.float64, n, rng)
        return (re + 1j * re[::-1]).astype(storage)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-45, 300, n)).astype(storage)
    x[:6] = [
        np.inf,
        -np.inf,
        np.nan,
        -0.0,
        1e300 if storage == np.float64 else 3e38,
        5e-324 if storage == np.float64 else 1e-45,
    ]
    return x


@pytest.mark.parametrize(
    ("source", "target"), sorted(chunked.PLAIN_CONVERTS, key=lambda p: (p[0].name, p[1].name)), ids=str
)
def test_large_plain_converts_equal_the_convert_kernel(source: rt.DType, target: rt.DType) -> None:
    from runtime.core import kernels

    n = memory.POOL_MIN_BYTES // target.storage.itemsize + 7  # just large enough for the cache
    with np.errstate(all="ignore"):  # the test data overflows float32 on purpose
        x = _extreme_values(source, n, np.random.default_rng(5))
    got = chunked.convert_array(x, source, target)
    assert got is not None
    with np.errstate(all="ignore"):
        want = kernels.convert_array(x, target)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_converts_it_leaves_to_the_kernel() -> None:
    big = np.ones(memory.POOL_MIN_BYTES, np.float32)
    assert chunked.convert_array(big[:10], rt.float32, rt.float64) is None  # small
    assert chunked.convert_array(big, rt.float32, rt.int32) is None  # float -> int saturates in XLA: not a cast
    assert chunked.convert_array(big, rt.float32, rt.bfloat16) is None  # rounds through the kernel's path
    assert chunked.convert_array(big.view(np.int32), rt.float32, rt.float64) is None  # wrong storage


@pytest.mark.parametrize("name", ["div", "max", "atan2", "pow"])
def test_large_mixed_ops_through_converts_equal_convert_then_kernel(name: str) -> None:
    rng = np.random.default_rng(6)
    x32 = rt.asarray(np.abs(rng.standard_normal(_N)).astype(np.float32) + 0.5)
    x64 = rt.asarray(rng.standard_normal(_N))
    f = getattr(F, name)
    want = f(F.convert(x32, rt.float64), x64).numpy()
    for _ in range(2):  # the general path, then the cached one
        got = f(x32, x64)
        assert got.dtype == rt.float64 and got.numpy().tobytes() == want.tobytes()

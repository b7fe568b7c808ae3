"""runtime.core.memory: large kernel results reuse cached buffers, and reuse never aliases a live value."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from runtime.core import lax as F
from runtime.core import memory
from runtime.core.executor import asarray

BIG = (256, 256)  # float32: 256 KiB, above POOL_MIN_BYTES
SMALL = (16, 16)


@pytest.fixture(autouse=True)
def default_limit() -> Iterator[None]:
    limit = memory.cache_limit()
    yield
    memory.set_cache_limit(limit)


def data(shape: tuple[int, ...], seed: int, dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def address(t: rt.Tensor) -> int:
    return int(t._array.ctypes.data)


def test_a_large_result_reuses_the_memory_of_a_dead_one() -> None:
    x = asarray(data(BIG, 0))
    first = F.tanh(x)
    where = address(first)
    del first
    before = memory.cache_info()
    second = F.tanh(x)
    after = memory.cache_info()
    assert address(second) == where
    assert after.hits == before.hits + 1 and after.misses == before.misses
    np.testing.assert_array_equal(second._array, np.tanh(x._array))


_X32 = asarray(data(BIG, 11))
_X64 = asarray(data(BIG, 12, np.float64))
PATHS = {
    "operator": lambda: _X32 * _X32,
    "operator, mixed dtypes": lambda: _X32 + _X64,
    "function": lambda: F.sub(_X32, _X32),
    "function, mixed dtypes": lambda: F.mul(_X64, _X32),
    "function, Python scalar": lambda: F.div(_X32, 3.0),
    "unary": lambda: F.sin(_X64),
    "broadcast": lambda: F.broadcast_in_dim(F.reduce_sum(_X32, (0,)), BIG, (1,)),
}


@pytest.mark.parametrize("make", PATHS.values(), ids=PATHS.keys())
def test_every_large_result_path_reuses_memory(make) -> None:  # type: ignore[no-untyped-def]
    for _ in range(2):  # the first calls validate the signature; later ones take the cached path
        first = make()
        want = first._array.copy()
        where = address(first)
        del first
    again = make()
    assert address(again) == where
    np.testing.assert_array_equal(again._array, want)


def test_cached_results_are_plain_aligned_writable_arrays() -> None:
    x = asarray(data(BIG, 1))
    for out in (F.tanh(x), F.add(x, x), F.mul(x, 2.0), F.broadcast_in_dim(F.reduce_sum(x, (0,)), BIG, (1,))):
        array = out._array
        assert array.flags.c_contiguous and array.flags.writeable
        assert array.ctypes.data % 64 == 0
        assert array.dtype == np.float32 and array.shape == BIG


def test_small_results_bypass_the_cache() -> None:
    x = asarray(data(SMALL, 2))
    before = memory.cache_info()
    results = [F.tanh(x), F.add(x, x), F.mul(x, x)]
    after = memory.cache_info()
    assert (after.hits, after.misses, after.live_bytes) == (before.hits, before.misses, before.live_bytes)
    del results


@pytest.mark.parametrize(
    "keep",
    [
        lambda a: a[1:, ::2],  # a strided view
        lambda a: a.T,  # a transposed view
        lambda a: memoryview(a),  # a buffer export
        lambda a: np.asarray(a).reshape(-1),  # a reshaped view
    ],
    ids=["slice", "transpose", "memoryview", "reshape"],
)
def test_memory_still_viewed_is_never_reused(keep) -> None:  # type: ignore[no-untyped-def]
    x = asarray(data(BIG, 3))
    result = F.exp(x)
    want = np.exp(x._array)
    view = keep(result._array)
    del result
    gc.collect()
    others = [F.exp(F.neg(x)) for _ in range(3)]  # same size: would take the memory if it were idle
    np.testing.assert_array_equal(np.asarray(keep(want)), np.asarray(view))
    for other in others:
        assert not np.shares_memory(np.asarray(view), other._array)


def test_memory_whose_bytearray_is_held_is_never_reused() -> None:
    """Code that walks ``.base`` to the memory's owner and keeps only that keeps the memory."""
    x = asarray(data(BIG, 14))
    result = F.tanh(x)
    owner = result._array.base
    assert isinstance(owner, bytearray)
    want = np.frombuffer(owner, np.uint8).copy()
    del result
    others = [F.exp(x), F.sin(x), F.cos(x)]
    np.testing.assert_array_equal(np.frombuffer(owner, np.uint8), want)
    for other in others:
        assert not np.shares_memory(np.frombuffer(owner, np.uint8), other._array)


def test_a_live_results_memory_cannot_be_resized() -> None:
    x = asarray(data(BIG, 15))
    result = F.tanh(x)
    with pytest.raises(BufferError):
        result._array.base.clear()
    np.testing.assert_array_equal(result._array, np.tanh(x._array))


def test_an_impossible_allocation_raises_a_memory_error_and_leaves_the_books_alone() -> None:
    x = asarray(np.ones(3, np.float32))
    before = memory.cache_info()
    with pytest.raises(rt.OpMemoryError, match="broadcast_in_dim"):  # a MemoryError naming the op
        F.broadcast_in_dim(x, (10**7, 10**7, 3), (2,))
    assert memory.cache_info() == before


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["tanh", "add", "mul", "exp"]), st.booleans()), min_size=1, max_size=30))
def test_live_results_keep_their_values_whatever_is_freed(steps: list[tuple[str, bool]]) -> None:
    """A random program of large ops, keeping some results and dropping others: every kept
    result still holds what it held when it was made."""
    x = asarray(data(BIG, 4) * 0.5)
    kept: list[tuple[rt.Tensor, np.ndarray]] = []
    current = x
    for op, keep in steps:
        if op == "tanh":
            current = F.tanh(current)
        elif op == "add":
            current = F.add(current, x)
        elif op == "mul":
            current = F.mul(current, 0.5)
        else:
            current = F.exp(F.mul(current, 0.1))
        if keep:
            kept.append((current, current._array.copy()))
    for tensor, snapshot in kept:
        np.testing.assert_array_equal(tensor._array, snapshot)
    addresses = [address(t) for t, _ in kept]
    assert len(set(addresses)) == len(addresses)


def test_gradients_through_cached_intermediates_match_numpy() -> None:
    """The backward pass reads saved forward values while new results take freed memory."""
    x0 = data(BIG, 5)

    def chain(x: rt.Tensor) -> rt.Tensor:
        for _ in range(6):
            x = F.add(F.mul(F.tanh(x), 1.01), 0.1)
        return F.reduce_sum(x, (0, 1))

    def jax_chain(x):  # type: ignore[no-untyped-def]
        for _ in range(6):
            x = jnp.tanh(x) * 1.01 + 0.1
        return jnp.sum(x)

    want = np.asarray(jax.grad(jax_chain)(jnp.asarray(x0)))
    grad = autodiff.grad(chain)
    for _ in range(3):  # later calls run on reused memory
        np.testing.assert_allclose(grad(asarray(x0))._array, want, rtol=1e-5, atol=1e-6)


def test_idle_memory_stays_under_the_limit() -> None:
    memory.set_cache_limit(3 * 256 * 1024)
    x = asarray(data(BIG, 6))
    results = [F.tanh(x) for _ in range(8)]
    del results
    info = memory.cache_info()
    assert 0 < info.idle_bytes <= 3 * 256 * 1024


def test_a_lower_limit_releases_idle_memory_now() -> None:
    x = asarray(data(BIG, 7))
    results = [F.tanh(x) for _ in range(4)]
    del results
    assert memory.cache_info().idle_bytes >= 4 * 256 * 1024
    memory.set_cache_limit(256 * 1024)
    assert memory.cache_info().idle_bytes <= 256 * 1024


def test_limit_zero_turns_caching_off() -> None:
    memory.set_cache_limit(0)
    assert memory.cache_info().idle_bytes == 0
    x = asarray(data(BIG, 8))
    before = memory.cache_info()
    out = F.tanh(x)
    after = memory.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)
    assert out._array.base is None  # NumPy's own allocation
    np.testing.assert_array_equal(out._array, np.tanh(x._array))


def test_empty_cache_releases_idle_memory_only() -> None:
    x = asarray(data(BIG, 9))
    alive = F.tanh(x)
    dead = F.exp(x)
    del dead
    assert memory.cache_info().idle_bytes > 0
    memory.empty_cache()
    info = memory.cache_info()
    assert info.idle_bytes == 0 and info.live_bytes >= 256 * 1024
    np.testing.assert_array_equal(alive._array, np.tanh(x._array))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_set_cache_limit_rejects_a_bad_byte_count(bad: object) -> None:
    with pytest.raises(ValueError, match="set_cache_limit: expected a byte count >= 0"):
        memory.set_cache_limit(bad)  # type: ignore[arg-type]


def test_threads_sharing_the_cache_never_share_memory() -> None:
    x = asarray(data(BIG, 10))
    want = {k: np.tanh(x._array * np.float32(k)) for k in range(4)}
    errors: list[str] = []
    start = memory.cache_info().live_bytes

    def work(k: int) -> None:
        for _ in range(30):
            held = [F.tanh(F.mul(x, float(k))) for _ in range(3)]
            for h in held:
                if not np.array_equal(h._array, want[k]):
                    errors.append(f"thread {k}: a live result changed")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert memory.cache_info().live_bytes == start


_FORK_SCRIPT = """
import os, sys, threading, time
import numpy as np
import runtime as rt
from runtime.core import memory

x = rt.asarray(np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32))
holding, done = threading.Event(), threading.Event()

def hold():
    with memory._CACHE.lock:
        holding.set()
        done.wait()

holder = threading.Thread(target=hold)
holder.start()
holding.wait()
pid = os.fork()
if pid == 0:  # the child: the holder thread does not exist here and never releases
    ok = False
    try:
        ok = bool(np.array_equal(rt.tanh(x)._array, np.tanh(x._array)))
    finally:
        os._exit(0 if ok else 1)
done.set()
holder.join()
for _ in range(200):  # a deadlocked child never exits
    finished, status = os.waitpid(pid, os.WNOHANG)
    if finished:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.1)
os.kill(pid, 9)
sys.exit("the forked child deadlocked on the cache's lock")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_can_allocate_while_another_thread_held_the_lock() -> None:
    # in a fresh interpreter: this one runs JAX's threads, which make any fork unsafe
    done = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# -- the cache changes no result: every elementwise op, every dtype ------------------------------------

ELEMENTWISE = [op for op in rt.ops.OPS.values() if op.family in ("unary", "binary", "compare", "logical")]
#: the required params of the elementwise ops that have them
_PARAMS = {"reduce_precision": {"exponent_bits": 5, "mantissa_bits": 2}}


def _operand(dtype: rt.DType, n: int, seed: int) -> np.ndarray:
    """``n`` values of ``dtype`` away from the edges of every op's domain (positive, no zero)."""
    values = np.random.default_rng(seed).uniform(0.25, 2.0, n)
    if dtype.kind == "complex":
        values = values + 1j * np.random.default_rng(seed + 1).uniform(0.25, 2.0, n)
    elif dtype.kind in ("int", "uint"):
        values = np.rint(values * 3) + 1
    elif dtype.kind == "bool":
        values = values > 1.0
    with np.errstate(invalid="ignore", over="ignore"):  # narrow formats saturate or hold NaN
        return np.asarray(values).astype(dtype.storage)


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda op: op.name)
def test_cached_outputs_give_every_elementwise_result_bit_for_bit(op: rt.ops.OpDef) -> None:
    """Each elementwise op on every dtype it accepts, on operands big enough for the cache:
    the same bits, dtype and shape as with caching off."""
    from runtime.core.executor import apply

    def bits(t: rt.Tensor) -> np.ndarray:
        return np.ascontiguousarray(t._array).view(np.uint8)

    checked = 0
    cached = memory.cache_limit()
    for dtype in rt.ALL_DTYPES:
        n = memory.POOL_MIN_BYTES // dtype.storage.itemsize + 7
        operands = [asarray(_operand(dtype, n, seed)) for seed in range(op.arity or 0)]
        results = []
        for limit in (cached, 0, cached):  # the second cached call reuses the first one's memory
            memory.set_cache_limit(limit)
            try:
                results.append(apply(op, operands, _PARAMS.get(op.name, {})))
            except (TypeError, ValueError, rt.PromotionError):  # a dtype the op refuses, refused alike
                results.append(None)
        memory.set_cache_limit(cached)
        what = f"{op.name}[{dtype.name}]"
        if results[1] is None:
            assert results[0] is None and results[2] is None, what
            continue
        for got in (results[0], results[2]):
            assert got is not None and got.dtype is results[1].dtype, what
            np.testing.assert_array_equal(bits(got), bits(results[1]), err_msg=what)
        checked += 1
    assert checked >= 2, f"{op.name}: only {checked} dtypes ran"  # (real and imag take the two complex types)

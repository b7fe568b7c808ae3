"""``autodiff.jit`` keeps a Tensor argument's XLA buffer between calls while the Tensor is unchanged
(``autodiff.jit_buffers``): reuse, invalidation by in-place writes (through the Tensor or a view),
release of freed Tensors, and results that behave as any Tensor. Oracle: the same jitted function
with ``device_buffers=False`` (each call reads the NumPy storage) and NumPy."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from autodiff import jit_buffers
from runtime.core import lax as F
from runtime.core.tensor import Tensor


def arr(shape: tuple[int, ...], seed: int = 0, dtype: str = "float32") -> Tensor:
    return rt.asarray(np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype))


def loss(w1: Tensor, w2: Tensor, x: Tensor) -> Tensor:
    h = F.tanh(F.matmul(x, w1))
    out = F.matmul(h, w2)
    return F.reduce_sum(F.mul(out, out), (0, 1))


def train(device_buffers: bool, steps: int, lr: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """SGD with in-place updates (``w -= lr * g``): every step changes the parameters."""
    step = autodiff.jit(autodiff.grad(loss, argnums=(0, 1)), device_buffers=device_buffers)
    w1, w2, x = arr((5, 4), 1), arr((4, 3), 2), arr((6, 5), 3)
    for _ in range(steps):
        g1, g2 = step(w1, w2, x)
        w1 -= lr * g1
        w2 -= lr * g2
    return w1.numpy().copy(), w2.numpy().copy()


def test_training_loop_with_in_place_updates_matches_the_uncached_path() -> None:
    got = train(True, 6)
    want = train(False, 6)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert not np.array_equal(got[0], arr((5, 4), 1).numpy())  # the parameters did move


def test_an_unchanged_argument_is_put_once() -> None:
    f = autodiff.jit(lambda a, b: F.add(F.mul(a, b), a), device_buffers=True)
    a, b = arr((3, 4), 1), arr((3, 4), 2)
    f(a, b)
    puts = jit_buffers.PUTS[0]
    for _ in range(5):
        out = f(a, b)
    assert jit_buffers.PUTS[0] == puts
    np.testing.assert_allclose(out.numpy(), a.numpy() * b.numpy() + a.numpy(), rtol=1e-6)


def test_the_hook_is_the_one_transfer(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, ...]] = []
    real = jit_buffers.device_put

    def counting(array: np.ndarray, x64: bool) -> Any:
        seen.append(array.shape)
        return real(array, x64)

    monkeypatch.setattr(jit_buffers, "device_put", counting)
    f = autodiff.jit(lambda a, b: F.sub(a, b), device_buffers=True)
    a, b = arr((2, 3), 1), arr((2, 3), 2)
    for _ in range(4):
        f(a, b)
    assert seen == [(2, 3), (2, 3)]  # once per Tensor, on the first call
    b += 1.0
    f(a, b)
    assert seen == [(2, 3), (2, 3), (2, 3)]  # only the written one is put again


#: in-place writes castwise counts, each a way to change an argument between calls
WRITES: dict[str, Callable[[Tensor], object]] = {
    "iadd": lambda t: t.__iadd__(1.5),
    "imul": lambda t: t.__imul__(-2.0),
    "fill_": lambda t: t.fill_(0.25),
    "zero_": lambda t: t.zero_(),
    "clamp_": lambda t: t.clamp_(-0.1, 0.1),
    "through a reshape view": lambda t: t.reshape(-1).__iadd__(3.0),
    "through detach()": lambda t: t.detach().__isub__(0.5),
    "through another asarray of the storage": lambda t: rt.asarray(t._array).__iadd__(2.0),
}


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_an_in_place_write_is_seen_by_the_next_call(write: str) -> None:
    f = autodiff.jit(lambda a: F.mul(a, a), device_buffers=True)
    a = arr((3, 4), 5)
    f(a)
    WRITES[write](a)
    np.testing.assert_array_equal(f(a).numpy(), a.numpy() * a.numpy())


def test_a_write_between_two_cached_calls_of_different_functions_is_seen() -> None:
    f = autodiff.jit(lambda a: F.neg(a), device_buffers=True)
    g = autodiff.jit(lambda a: F.add(a, a), device_buffers=True)
    a = arr((4,), 7)
    f(a), g(a)
    a += 1.0
    np.testing.assert_array_equal(f(a).numpy(), -a.numpy())
    np.testing.assert_array_equal(g(a).numpy(), a.numpy() + a.numpy())


def test_freed_tensors_release_their_buffers() -> None:
    f = autodiff.jit(lambda a: F.exp(a), device_buffers=True)
    gc.collect()
    before = jit_buffers.cached()
    a = arr((8, 8), 1)
    out = f(a)
    assert jit_buffers.cached() == before + 2  # the argument's put, the result's own buffer
    del a, out
    gc.collect()
    assert jit_buffers.cached() == before


def test_results_are_passed_back_without_a_transfer_and_behave_as_tensors() -> None:
    f = autodiff.jit(lambda a: F.tanh(a), device_buffers=True)
    a = arr((3, 3), 2)
    r = f(a)
    puts = jit_buffers.PUTS[0]
    r2 = f(r)  # r carries its XLA buffer
    assert jit_buffers.PUTS[0] == puts
    want = np.tanh(np.tanh(a.numpy()))
    np.testing.assert_allclose(r2.numpy(), want, rtol=1e-6)
    # every reader of a result: kernels, NumPy, DLPack, printing, autodiff
    np.testing.assert_allclose(np.asarray(r2), want, rtol=1e-6)
    np.testing.assert_allclose(np.from_dlpack(r2), want, rtol=1e-6)
    np.testing.assert_allclose(F.add(r2, r2).numpy(), 2 * want, rtol=1e-6)
    assert "Tensor" in repr(r2) or str(np.round(want[0, 0], 3))[:4] in repr(r2)
    g = autodiff.grad(lambda t: F.reduce_sum(F.mul(t, t), (0, 1)))(r2)
    np.testing.assert_allclose(g.numpy(), 2 * want, rtol=1e-6)
    # a result is read-only, as documented: in-place writes go to a copy
    with pytest.raises(ValueError):
        r2 += 1.0
    c = r2.copy()
    c += 1.0
    np.testing.assert_allclose(f(c).numpy(), np.tanh(want + 1), rtol=1e-6)


def test_64_bit_arguments_keep_their_precision() -> None:
    f = autodiff.jit(lambda a: F.add(a, a), device_buffers=True)
    a = rt.asarray(np.array([1 + 2**-40, 3.0]))
    for _ in range(2):
        out = f(a)
        assert out.dtype == rt.float64
        np.testing.assert_array_equal(out.numpy(), 2 * a.numpy())


def test_forget_drops_a_buffer_after_a_write_castwise_cannot_count() -> None:
    base = np.ones(3, np.float32)
    t = rt.asarray(base)
    f = autodiff.jit(lambda a: F.mul(a, 2.0), device_buffers=True)
    f(t)
    base[:] = 4.0  # the user's own array: no version counter sees it
    jit_buffers.forget(t)
    np.testing.assert_array_equal(f(t).numpy(), np.full(3, 8.0, np.float32))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from(["call", "write_a", "write_b", "view_a", "new_b"]), min_size=1, max_size=12),
)
def test_any_sequence_of_calls_and_writes_agrees_with_the_uncached_path(script: list[str]) -> None:
    def fn(a: Tensor, b: Tensor) -> Tensor:
        return F.sub(F.mul(a, b), b)

    cached = autodiff.jit(fn, device_buffers=True)
    plain = autodiff.jit(fn, device_buffers=False)
    a, b = arr((2, 3), 1), arr((2, 3), 2)
    for i, action in enumerate(script):
        if action == "write_a":
            a += float(i)
        elif action == "write_b":
            b *= 0.5
        elif action == "view_a":
            a.reshape(6).__iadd__(1.0)
        elif action == "new_b":
            b = arr((2, 3), i + 10)
        np.testing.assert_array_equal(cached(a, b).numpy(), plain(a, b).numpy())


def test_by_default_a_write_into_a_wrapped_numpy_array_is_seen_as_eagerly() -> None:
    # rt.asarray shares the caller's array: castwise cannot count a write straight into it, so the
    # buffer cache is opt-in, and the default call reads the storage as eager execution does
    a = np.ones(3)
    t = rt.asarray(a)
    f = autodiff.jit(lambda x: F.mul(x, 2.0))
    np.testing.assert_array_equal(f(t).numpy(), [2.0, 2.0, 2.0])
    a[1] = 7.0
    np.testing.assert_array_equal(f(t).numpy(), F.mul(t, 2.0).numpy())

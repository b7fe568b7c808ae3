"""Version counters: one per block of memory, shared by every Tensor that views it.

The oracle is NumPy's own ``np.shares_memory``: after in-place writes through
any of a family of Tensors, two of them report the same ``_version`` exactly
when their arrays share memory.
"""

from __future__ import annotations

import gc
import itertools
import threading
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runtime as rt
from runtime import memory, versions
from runtime.inplace import InPlaceError

#: ways to get a Tensor sharing the memory of an untracked float64 [4, 6] tensor
VIEWS: dict[str, Callable[[rt.Tensor], rt.Tensor]] = {
    "detach": lambda t: t.detach(),
    "reshape": lambda t: t.reshape(6, 4),
    "transpose": lambda t: t.T,
    "row": lambda t: t[2],
    "slice": lambda t: t[1:3, ::2],
    "conj of real": lambda t: t.conj(),
    "asarray of its array": lambda t: rt.asarray(t.numpy()),
    "view of a view": lambda t: t.T[1:].reshape(5, 4),
}


def test_a_fresh_tensor_is_at_version_zero_and_each_write_ticks_it() -> None:
    t = rt.asarray(np.zeros(3))
    assert t._version == 0
    t += 1.0
    t *= 2.0
    t.sub_(1.0)
    assert t._version == 3
    assert (t + 1.0)._version == 0  # an out-of-place result is new memory


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_every_view_shares_its_base_counter(name: str) -> None:
    base = rt.asarray(np.arange(24.0).reshape(4, 6))
    view = VIEWS[name](base)
    assert np.shares_memory(view.numpy(), base.numpy())
    view += 1.0
    assert base._version == view._version == 1
    base += 1.0
    assert base._version == view._version == 2


def test_real_and_imag_share_their_complex_base_counter() -> None:
    z = rt.asarray(np.array([1.0 + 2.0j, 3.0 + 4.0j]))
    re, im = z.real, z.imag
    re += 1.0
    im *= 2.0
    assert z._version == re._version == im._version == 2
    np.testing.assert_array_equal(z.numpy(), [2.0 + 4.0j, 4.0 + 8.0j])


def test_two_asarray_calls_on_one_numpy_array_share_a_counter() -> None:
    array = np.ones(5)
    a, b = rt.asarray(array), rt.asarray(array)
    a += 1.0
    assert b._version == 1
    assert rt.asarray(array[1:])._version == 1


def test_cached_large_results_and_their_views_share_a_counter() -> None:
    n = memory.POOL_MIN_BYTES // 8 * 2
    x = rt.asarray(np.ones(n))
    y = x + x
    assert isinstance(y.numpy().base, bytearray)  # a cached buffer
    v = y.reshape(2, n // 2)
    v += 1.0
    assert y._version == 1
    fresh = x * 3.0  # another cached result: separate memory, separate counter
    assert fresh._version == 0


def test_memory_that_is_not_shared_is_not_counted_together() -> None:
    a = rt.asarray(np.zeros(3))
    b = rt.asarray(np.zeros(3))
    c = a.copy()
    a += 1.0
    assert (b._version, c._version) == (0, 0)


def test_memory_owner_follows_wrappers_numpy_puts_between_a_view_and_its_array() -> None:
    array = np.zeros(6)
    strided = np.lib.stride_tricks.as_strided(array, (2, 3), (24, 8))
    from_buffer = np.frombuffer(memoryview(array))
    for view in (array[2:], array.reshape(2, 3).T, strided, from_buffer, np.broadcast_to(array, (2, 6))):
        assert versions.memory_owner(view) is array


def test_a_counter_is_dropped_with_its_memory() -> None:
    before = len(versions._COUNTERS)
    t = rt.asarray(np.zeros(3))
    t += 1.0
    assert len(versions._COUNTERS) == before + 1
    del t
    gc.collect()
    assert len(versions._COUNTERS) == before
    assert rt.asarray(np.zeros(3))._version == 0  # a new array (possibly at the same address) starts at 0


def test_refused_writes_do_not_tick() -> None:
    w = rt.asarray(np.zeros(3), requires_grad=True)
    with pytest.raises(InPlaceError):
        w += 1.0
    assert w._version == 0
    i = rt.asarray(np.zeros(3, np.int32))
    with pytest.raises(TypeError):
        i += 0.5  # a float result does not fit an int tensor
    assert i._version == 0


def test_written_since_reports_the_versions_before_and_after() -> None:
    t = rt.asarray(np.zeros(3))
    t += 1.0
    clock = versions.CLOCK[0]
    assert versions.written_since(t.numpy(), clock) is None
    t += 1.0
    t += 1.0
    assert versions.written_since(t.numpy(), clock) == (3, "1")
    for _ in range(versions._HISTORY + 2):
        t += 1.0
    now, then = versions.written_since(t.numpy(), clock)  # type: ignore[misc]
    assert now == versions._HISTORY + 5 and then.startswith("at most")


def test_concurrent_writes_from_threads_are_all_counted() -> None:
    t = rt.asarray(np.zeros(8))
    views = [t[i : i + 1] for i in range(8)]

    def work(view: rt.Tensor) -> None:
        for _ in range(200):
            view += 1.0

    workers = [threading.Thread(target=work, args=(v,)) for v in views]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert t._version == 8 * 200
    np.testing.assert_array_equal(t.numpy(), np.full(8, 200.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(VIEWS)), st.integers(0, 20)), min_size=1, max_size=8))
def test_versions_agree_exactly_when_memory_is_shared(plan: list[tuple[str, int]]) -> None:
    bases = [rt.asarray(np.arange(24.0).reshape(4, 6)) for _ in range(2)]
    family = list(bases)
    for name, pick in plan:
        source = family[pick % len(family)]
        if source.shape == (4, 6):
            family.append(VIEWS[name](source))
        else:
            family.append(source.detach())
    writes = [0, 0]
    for k, t in enumerate(family):
        if k % 2 == 0:
            t += 1.0
            writes[0 if np.shares_memory(t.numpy(), bases[0].numpy()) else 1] += 1
    for a, b in itertools.combinations(family, 2):
        if np.shares_memory(a.numpy(), b.numpy()):
            assert a._version == b._version
    for base, count in zip(bases, writes, strict=True):
        assert base._version == count

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
from runtime.core import memory, versions
from runtime.core.inplace import InPlaceError

#: ways to get a Tensor sharing the memory of an untracked float64 [4, 6] tensor
VIEWS: dict[str, Callable[[rt.Tensor], rt.Tensor]] = {
    "detach": lambda t: t.detach(),
    "reshape": lambda t: t.reshape(6, 4),
    "transpose": lambda t: t.T,
    "row": lambda t: t[2],
    "slice": lambda t: t[1:3, ::2],
    "conj of real": lambda t: t.conj(),
    "asarray of its array": lambda t: rt.asarray(t._array),  # t.numpy() is read-only: see test_tensor.py
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
    assert isinstance(y._array.base, bytearray)  # a cached buffer
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


# -- which ops return views: the documented ones and no other ---------------------------------------

#: ops whose result may view an operand's memory, as PyTorch's view ops (docs/autodiff.md, "In-place
#: writes"): the reshape family, transposes, slices (static and dynamic, as ``narrow``), ``split``, and
#: ``real`` / ``imag`` / ``conj`` of the parts that are already there
VIEW_OPS = frozenset({"reshape", "transpose", "slice", "dynamic_slice", "split", "real", "imag", "conj"})


def _op_cases() -> list[tuple[str, Callable[[], tuple[object, list[rt.Tensor]]]]]:
    from tests.passes.test_lower_jax import CASES  # one small call of every op of the vocabulary

    return [(c.id, c.make) for c in CASES if c.build is None]


#: calls whose parameters make an op an identity, where returning the operand itself is tempting
_x = lambda: rt.asarray(np.arange(6.0))  # noqa: E731
IDENTITY_CALLS: dict[str, Callable[[], tuple[object, list[rt.Tensor]]]] = {
    "astype-same": lambda: ((lambda x: x.astype(rt.float64)), [_x()]),
    "convert-same": lambda: ((lambda x: rt.lax.convert(x, rt.float64)), [_x()]),
    "reverse-none": lambda: ((lambda x: rt.lax.reverse(x, ())), [_x()]),
    "tile-ones": lambda: ((lambda x: rt.lax.tile(x, (1,))), [_x()]),
    "broadcast-same": lambda: ((lambda x: rt.lax.broadcast_in_dim(x, (6,), (0,))), [_x()]),
    "pad-zero": lambda: ((lambda x: rt.lax.pad(x, 0.0, [(0, 0, 0)])), [_x()]),
    "concatenate-one": lambda: ((lambda x: rt.lax.concatenate([x], 0)), [_x()]),
    "reduce_sum-no-axes": lambda: ((lambda x: rt.lax.reduce_sum(x, ())), [_x()]),
    "select_n-one-case": lambda: ((lambda x: rt.lax.select_n(rt.asarray(np.zeros(6, bool)), x)), [_x()]),
    "clip-wide": lambda: ((lambda x: x.clip(-100.0, 100.0)), [_x()]),
    "positive": lambda: ((lambda x: +x), [_x()]),
    "add-zero": lambda: ((lambda x: x + 0), [_x()]),
    "gather-all": lambda: ((lambda x: x[np.arange(6)]), [_x()]),
    "clip-no-bounds": lambda: ((lambda x: x.clip()), [_x()]),  # np.clip copies
    "roll-zero": lambda: ((lambda x: rt.roll(x, 0)), [_x()]),  # np.roll and torch.roll copy
    "roll-full-turn": lambda: ((lambda x: rt.roll(x, 6, 0)), [_x()]),
    "roll-no-axes": lambda: ((lambda x: rt.roll(x, (), ())), [_x()]),
}


@pytest.mark.parametrize("make", [m for _, m in _op_cases()] + list(IDENTITY_CALLS.values()),
                         ids=[i for i, _ in _op_cases()] + list(IDENTITY_CALLS))  # fmt: skip
def test_only_view_ops_return_memory_an_operand_owns(make: Callable[[], tuple[object, list[rt.Tensor]]]) -> None:
    """A write into any other op's result must not change its operands (NumPy's astype, PyTorch's
    flip and tile copy), so each result either is new memory or comes from a documented view op."""
    fn, args = make()
    out = fn(*args)  # type: ignore[operator]
    outs = out if isinstance(out, (tuple, list)) else [out]
    operands = [a.numpy() for a in args if isinstance(a, rt.Tensor)]
    ops_run = {e.op.name for e in rt.trace(fn, *args).eqns}  # type: ignore[arg-type]
    for o in outs:
        if isinstance(o, rt.Tensor) and any(np.shares_memory(o.numpy(), a) for a in operands):
            assert ops_run & VIEW_OPS, f"result shares an operand's memory; ops run: {sorted(ops_run)}"


@pytest.mark.parametrize("name", ["clip-no-bounds", "roll-zero", "roll-full-turn", "roll-no-axes"])
def test_composite_identity_calls_return_new_memory(name: str) -> None:
    # Stricter than the table above, which accepts sharing when a view op ran: np.clip and np.roll
    # (and torch.roll) always return new memory, so a write into the result must leave x alone.
    fn, (x,) = IDENTITY_CALLS[name]()
    before = x.numpy().copy()
    out = fn(x)  # type: ignore[operator]
    assert not np.shares_memory(out.numpy(), x.numpy())
    out += 1
    np.testing.assert_array_equal(x.numpy(), before)
    np.testing.assert_array_equal(out.numpy(), before + 1)

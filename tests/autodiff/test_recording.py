"""Recording tracked eager ops: what is recorded is what ran."""

from __future__ import annotations

import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import autodiff
import passes
import runtime as rt
from autodiff.record import record_eager
from runtime.core import hooks
from runtime.core import lax as F
from runtime.core.graph import collect, evaluate
from runtime.core.inplace import InPlaceError
from runtime.core.plan import plan, promotes
from runtime.core.tensor import Tensor
from tests.autodiff.programs import Program, programs


def graph_of(*outs: Tensor, inputs: list[Tensor] | None = None) -> rt.Graph:
    return collect([o.node for o in outs], None if inputs is None else [t.node for t in inputs])


def test_op_without_tracked_inputs_records_nothing() -> None:
    out = F.add(np.ones(3), np.ones(3, np.complex128))
    assert out.node is None and not out.requires_grad


def test_tracked_leaf_and_mixed_add_records_one_convert() -> None:
    x = rt.asarray(np.array([1.0, 2.0, 3.0]))  # untracked f64
    y = rt.asarray(np.array([1j, 2j, 3j]), requires_grad=True)
    out = x + y
    assert out.requires_grad and out.dtype is rt.complex128
    text = str(graph_of(out))
    assert text == (
        "{ lambda a:f64[3] ; b:c128[3] . let\n    c:c128[3] = convert[to=c128] a\n    d:c128[3] = add c b\n  in (d) }"
    )


def test_untracked_inputs_become_constants_that_share_the_array() -> None:
    big = np.ones(500_000)
    y = rt.asarray(np.ones(500_000), requires_grad=True)
    out = y * rt.asarray(big)
    (const,) = graph_of(out).consts
    assert const.const is big


def test_recording_allocates_no_copy_of_its_inputs() -> None:
    n = 1_000_000
    x = rt.asarray(np.ones(n))
    y_tracked = rt.asarray(np.ones(n), requires_grad=True)
    y_plain = rt.asarray(np.ones(n))

    def peak(fn) -> int:  # type: ignore[no-untyped-def]
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        keep = fn()
        used = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        del keep
        return used

    plain = peak(lambda: x * y_plain)
    recorded = peak(lambda: x * y_tracked)
    # recording adds bookkeeping objects, never another array of n elements
    assert recorded - plain < 0.05 * n * 8, (plain, recorded)


@pytest.mark.parametrize(
    "name,fn,operands,tracked",
    [
        ("add", F.add, [np.ones(3, np.float32), np.ones(3)], 0),
        ("lt", F.lt, [np.ones(3, np.float32), np.ones(3)], 0),
        (
            "dot_general",
            lambda a, b: F.dot_general(a, b, (((0,), (0,)), ((), ()))),
            [np.ones(3, np.float32), np.ones(3, np.complex64)],
            1,
        ),
        ("select", F.select, [np.array([True, False, True]), np.ones(3, np.float32), np.ones(3)], 1),
        ("clamp", F.clamp, [np.float32(0.0), np.ones(3), np.float32(2.0)], 1),
        (
            "concatenate",
            lambda a, b, c: F.concatenate([a, b, c], 0),
            [np.ones(2, np.float32), np.ones(3), np.ones(1, np.complex64)],
            0,
        ),
        (
            "scatter",
            lambda o, i, u: F.scatter(o, i, u, rt.ScatterDimensionNumbers((), (0,), (0,))),
            [np.ones(3, np.float32), np.array([[1]], np.int32), np.ones(1)],
            0,
        ),
        (
            "scatter_add",
            lambda o, i, u: F.scatter_add(o, i, u, rt.ScatterDimensionNumbers((), (0,), (0,))),
            [np.ones(3, np.float64), np.array([[1]], np.int32), np.ones(1, np.complex64)],
            2,
        ),
        (
            "dynamic_update_slice",
            lambda o, u, s: F.dynamic_update_slice(o, u, [s]),
            [np.ones(3, np.float32), np.ones(2), np.int32(1)],
            1,
        ),
    ],
)
def test_converts_appear_exactly_where_the_plan_changes_a_dtype(name, fn, operands, tracked) -> None:  # type: ignore[no-untyped-def]
    args = [rt.asarray(o) for o in operands]
    args[tracked] = rt.asarray(operands[tracked], requires_grad=True)
    out = fn(*args)
    graph = graph_of(out)
    main = [e for e in graph.eqns if e.op.name == name]
    assert len(main) == 1, str(graph)
    eqn = main[0]
    targets = plan(eqn.op, [a.dtype for a in args])
    differing = sum(1 for a, t in zip(args, targets, strict=True) if a.dtype is not t)
    converts = [e for e in graph.eqns if e.op.name == "convert"]
    assert differing >= 1 and len(converts) == differing, str(graph)
    assert [v.dtype for v in eqn.inputs] == list(targets)
    passes.verify(graph)
    leaves = [a for a in args if a.node is not None and a.node.producer is None and a.node.const is None]
    (replayed,) = evaluate(graph, *leaves)
    assert replayed.numpy().tobytes() == out.numpy().tobytes()


def test_recording_state_is_thread_local() -> None:
    barrier = threading.Barrier(2)
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def worker(name: str, use_no_grad: bool) -> None:
        try:
            x = rt.asarray(np.arange(3.0), requires_grad=True)
            barrier.wait()
            if use_no_grad:
                with autodiff.no_grad():
                    barrier.wait()
                    out = F.sin(x)
                results[name] = "none" if out.node is None else "recorded"
            else:
                barrier.wait()
                out = F.cos(F.mul(x, 2.0))
                results[name] = str(graph_of(out))
        except BaseException as err:  # pragma: no cover - surfaced below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=("a", True)), threading.Thread(target=worker, args=("b", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results["a"] == "none"
    assert "cos" in results["b"] and "mul" in results["b"] and "sin" not in results["b"]


def test_two_threads_recording_at_once_build_independent_graphs() -> None:
    barrier = threading.Barrier(2)
    graphs: dict[int, str] = {}

    def worker(k: int) -> None:
        x = rt.asarray(np.ones(2) * k, requires_grad=True)
        out = x
        for _ in range(50):
            barrier.wait()
            out = F.add(out, float(k)) if k == 1 else F.mul(out, float(k))
        graphs[k] = str(graph_of(out))

    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert graphs[1].count(" add ") == 50 and " mul " not in graphs[1]
    assert graphs[2].count(" mul ") == 50 and " add " not in graphs[2]


def test_graph_memory_is_released_once_nothing_references_it() -> None:
    x = rt.asarray(np.ones(1000), requires_grad=True)
    y = F.sin(F.mul(x, 3.0))
    intermediate = weakref.ref(y.node.producer.inputs[0])
    assert intermediate() is not None
    del y
    assert intermediate() is None  # freed by reference counting, no cycle collector needed
    gc.collect()


def test_inplace_into_a_tensor_a_recording_references_is_refused_until_it_is_gone() -> None:
    c = rt.asarray(np.ones(3))
    x = rt.asarray(np.ones(3), requires_grad=True)
    out = x * c
    with pytest.raises(InPlaceError, match="recorded graph"):
        c += 1
    np.testing.assert_array_equal(c.numpy(), np.ones(3))
    del out
    c += 1
    np.testing.assert_array_equal(c.numpy(), 2 * np.ones(3))


class _CountingRecorder:
    def __init__(self) -> None:
        self.expected_converts = 0

    def __call__(self, op, params, inputs, targets, outputs) -> None:  # type: ignore[no-untyped-def]
        if promotes(op):
            self.expected_converts += sum(1 for x, t in zip(inputs, targets, strict=True) if x.dtype is not t)
        record_eager(op, params, inputs, targets, outputs)


def _leaves(prog: Program) -> tuple[list[Tensor], list[Tensor]]:
    values = prog.inputs()
    tensors = [rt.asarray(v, requires_grad=tr) for v, tr in zip(values, prog.tracked, strict=True)]
    return tensors, [t for t in tensors if t.requires_grad]


@given(programs(1, 30))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_eager_equals_replay_bit_for_bit_and_every_recording_verifies(prog: Program) -> None:
    tensors, leaves = _leaves(prog)
    counter = _CountingRecorder()
    with hooks.recorder_override(counter):
        outs = prog.run(tensors)
    recorded = [o for o in outs if o.node is not None]
    if not recorded:
        return
    graph = collect([o.node for o in recorded], [t.node for t in leaves])
    passes.verify(graph)
    converts = sum(1 for e in graph.eqns if e.op.name == "convert")
    # every output of the program is returned, so every recorded op is in the graph:
    # one convert per operand whose dtype differs from its plan target, no more
    assert converts == counter.expected_converts, str(graph)
    replay = evaluate(graph, *leaves)
    for eager, again in zip(recorded, replay, strict=True):
        assert eager.dtype is again.dtype and eager.shape == again.shape
        assert eager.numpy().tobytes() == again.numpy().tobytes(), str(graph)


# -- what a recording holds ---------------------------------------------------------------


def test_a_recording_holds_only_the_values_its_vjp_rules_read() -> None:
    import weakref

    from runtime.core import lax as F

    x = rt.asarray(np.linspace(-1.0, 1.0, 8), requires_grad=True)
    t = F.tanh(x)  # tanh's VJP reads its output
    m = F.mul(t, 3.0)  # mul's VJP (for t) reads the constant 3.0 only
    out = F.reduce_sum(F.add(m, 1.0), (0,))
    t_array, m_array = weakref.ref(t._array), weakref.ref(m._array)
    del t, m
    assert t_array() is not None, "tanh's output is saved for its VJP"
    assert m_array() is None, "nothing reads mul's output: it is freed with its tensor"
    out.backward()
    want = 3.0 * (1.0 - np.tanh(np.linspace(-1.0, 1.0, 8)) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-14)


def test_an_undeclared_read_is_caught_by_the_poisoned_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    # The check the autouse fixture relies on: declare (wrongly) that tanh's VJP
    # reads nothing, and its gradient comes out NaN instead of silently right.
    import autodiff
    from autodiff import record
    from autodiff.rules import SAVES_NOTHING, VJP_SAVES
    from runtime.core import lax as F

    monkeypatch.setitem(VJP_SAVES, "tanh", SAVES_NOTHING)
    for cache in record.SAVES_CACHES:  # the recorder's resolved copies of the table
        monkeypatch.setattr(record, cache, {})
    g = autodiff.grad(lambda v: F.reduce_sum(F.tanh(v), (0,)))(rt.asarray(np.ones(3)))
    assert np.isnan(g.numpy()).all()


def test_forward_mode_recordings_hold_every_value() -> None:
    # linearize records with every value held (JVP rules read primals; a value
    # not held would be recomputed), unlike grad, which holds what VJPs read.
    import weakref

    import autodiff
    from runtime.core import lax as F

    seen: list[weakref.ref[np.ndarray]] = []

    def f(v: rt.Tensor) -> rt.Tensor:
        m = F.mul(F.tanh(v), 3.0)
        seen.append(weakref.ref(m._array))
        return F.reduce_sum(F.add(m, 1.0), (0,))

    x = rt.asarray(np.linspace(-1.0, 1.0, 4))
    _, f_jvp = autodiff.linearize(f, x)
    assert seen[-1]() is not None, "linearize holds mul's output"
    t = f_jvp(rt.asarray(np.ones(4)))
    np.testing.assert_allclose(t.numpy(), 3.0 * np.sum(1.0 - np.tanh(np.linspace(-1.0, 1.0, 4)) ** 2), rtol=1e-14)
    autodiff.vjp(f, x)
    assert seen[-1]() is None, "vjp holds only what the VJP rules read"

"""The lazy recording tape (``runtime.core.tape``): a tracked op writes a pending record, and
``Tensor.node`` builds the equations on first read. The oracle throughout is the same program
recorded eagerly (``record_op`` at once, the path the tape replaced), and NumPy for values."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import autodiff
import runtime as rt
from autodiff import record
from runtime.core import hooks, tape
from runtime.core import lax as F
from runtime.core.graph import collect, pretty
from runtime.core.inplace import SavedValueModifiedError
from runtime.core.tensor import Tensor
from tests.autodiff.programs import Program, programs


def _eager_recorder(op: Any, params: Any, inputs: Any, targets: Any, outputs: Any, target_shapes: Any = None) -> None:
    record._record_now(op, params, inputs, targets, outputs, target_shapes)


@contextmanager
def recording_eagerly() -> Iterator[None]:
    """Every op in the block is recorded as equations at once (no pending records)."""
    previous = hooks.install_recorder(_eager_recorder)
    try:
        yield
    finally:
        hooks.install_recorder(previous)
        assert hooks.BINARY[0] is record.record_eager and hooks.BINARY[1] is record.record_binary  # fast entry back


def _text(*outs: Tensor) -> str:
    return pretty(collect([o.node for o in outs]))


def test_a_recorded_op_is_pending_until_node_is_read() -> None:
    x = rt.asarray(np.arange(3.0), requires_grad=True)
    y = x * 2.0
    assert tape.is_pending(y._node) and y.requires_grad
    var = y.node
    assert not tape.is_pending(y._node) and y.node is var and var.producer.op.name == "mul"


def test_consumers_share_the_var_of_a_pending_input_whichever_is_read_first() -> None:
    x = rt.asarray(np.arange(3.0), requires_grad=True)
    for first in ("consumer", "input"):
        z = x * 3.0
        w = F.sin(z)
        if first == "consumer":
            assert w.node.producer.inputs[0] is z.node
        else:
            zv = z.node
            assert w.node.producer.inputs[0] is zv
        u = z + 1.0  # recorded after z's Var was built
        assert u.node.producer.inputs[0] is z.node


def test_a_long_pending_chain_builds_and_differentiates_without_recursion() -> None:
    x = rt.asarray(np.ones(2), requires_grad=True)
    out = x
    for _ in range(20_000):
        out = out * 1.0
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(2))
    chain = x
    for _ in range(20_000):
        chain = chain + 1.0
    del chain  # freeing 20,000 pending records that nobody built
    gc.collect()


def test_a_pending_record_holds_only_the_values_a_rule_reads() -> None:
    x = rt.asarray(np.ones(1000), requires_grad=True)
    a = x + 1.0  # add's rule reads nothing: a's value is free once a is dropped
    b = a + 2.0
    a_array = weakref.ref(a._array.base if a._array.base is not None else a._array)
    del a
    gc.collect()
    assert a_array() is None
    c = x + 1.0
    d = c * c  # mul reads both operands: c's value stays with the recording
    c_array = weakref.ref(c._array)
    del c
    gc.collect()
    assert c_array() is not None
    d.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(1000, 4.0))
    assert b.node.producer.inputs[0].value is None


def test_a_write_after_recording_raises_at_backward_though_no_equation_was_built() -> None:
    x = rt.asarray(np.arange(3.0), requires_grad=True)
    a = x * 2.0
    b = a * x  # holds a's value (in a's pending record) and x's
    assert tape.is_pending(a._node) and tape.is_pending(b._node)
    with autodiff.no_grad():
        a += 1.0  # ticks a's memory version after the recording saved it
    with pytest.raises(SavedValueModifiedError, match="mul"):
        b.sum().backward()


def test_a_write_into_a_leaf_after_recording_raises_at_backward() -> None:
    w = rt.asarray(np.arange(3.0), requires_grad=True)
    v = rt.asarray(np.ones(3), requires_grad=True)
    loss = (w * v).sum()
    with autodiff.no_grad():
        v -= 0.5  # an optimizer step before backward
    with pytest.raises(SavedValueModifiedError):
        loss.backward()


def test_threads_reading_one_pending_chain_get_the_same_vars() -> None:
    x = rt.asarray(np.ones(3), requires_grad=True)
    out = x
    for _ in range(2000):
        out = F.add(F.mul(out, 1.0), 0.0)
    barrier = threading.Barrier(4)
    seen: list[Any] = []

    def read() -> None:
        barrier.wait()
        seen.append(out.node)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(v is seen[0] for v in seen)


@pytest.mark.parametrize("policy", ["jax", "torch", "numpy"])
def test_lazy_and_eager_recordings_print_the_same_graph(policy: str) -> None:
    def program() -> list[Tensor]:
        x = rt.asarray(np.ones(3, np.float32), requires_grad=True)
        y = rt.asarray(np.arange(3.0))
        z = rt.asarray(np.ones(3, np.complex64), requires_grad=True)
        a = x * y + 2.5  # converts, a weak scalar under jax
        b = F.exp(a) * z
        c = F.select(F.lt(x, 0.5), x, F.neg(x))
        return [b, c, F.div(b, 3.0)]

    with rt.policy(policy):
        outs = program()
        assert all(tape.is_pending(o._node) for o in outs)
        lazy = _text(*outs)
        with recording_eagerly():
            outs = program()
            assert not any(tape.is_pending(o._node) for o in outs)
            eager = _text(*outs)
    assert lazy == eager


@given(programs(1, 20))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_programs_record_the_same_graphs_and_gradients_lazily_and_eagerly(prog: Program) -> None:
    def run() -> tuple[str, list[np.ndarray]]:
        leaves = [rt.asarray(v, requires_grad=t) for v, t in zip(prog.inputs(), prog.tracked, strict=True)]
        outs = [o for o in prog.run(leaves) if o.node is not None]
        tracked = [t for t in leaves if t.node is not None]
        if not outs or not tracked:
            return "", []
        text = _text(*outs)
        real = [F.real(o) if o.dtype.kind == "complex" else o for o in outs if o.dtype.is_inexact]
        if not real:
            return text, []
        loss = real[0].sum()
        for r in real[1:]:
            loss = loss + r.sum()
        loss.backward()
        return text, [np.asarray(t.grad) for t in tracked]

    lazy_text, lazy_grads = run()
    with recording_eagerly():
        eager_text, eager_grads = run()
    assert lazy_text == eager_text
    assert len(lazy_grads) == len(eager_grads)
    for g_lazy, g_eager in zip(lazy_grads, eager_grads, strict=True):
        assert g_lazy.dtype == g_eager.dtype and g_lazy.tobytes() == g_eager.tobytes()

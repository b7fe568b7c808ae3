"""The cached backward plan (``autodiff.backward_plan``) against the general reverse walk.

* The backward tests of ``test_api``, ``test_recording``, ``test_inplace_aliasing``,
  ``test_pytrees`` and ``test_weak_transforms`` run here twice more: with the plan off
  (every pass walks the rules) and with ``replaying_first`` (every first pass of a
  signature returns its captured plan's replay). Their own files run the default: a first
  pass captures, later ones replay.
* A Hypothesis property: over random small programs (mixed elementwise ops and matmul,
  float32 / float64 / bfloat16 operands promoted into each other, NumPy broadcasting, weak
  Python scalars) the replayed gradients equal the general walk's bit for bit.
* What must not replay a stale or wrong plan: an in-place write after recording, a
  released recording, a policy, default-dtype, dtype or shape change, ``create_graph``.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from autodiff import backward_plan
from autodiff.backward_plan import STATS, replaying_first, use_backward_plan
from runtime.core import lax as F
from runtime.core.default_dtype import set_default_dtype
from runtime.core.inplace import SavedValueModifiedError
from runtime.core.promotion import use_policy

# -- the backward tests, both ways -----------------------------------------------------------------

_BOTH_WAYS = ("test_api", "test_recording", "test_inplace_aliasing", "test_pytrees", "test_weak_transforms")
#: not borrowed: the 100,000-op chain checks the general walk's recursion (test_api runs it with the
#: plan on); a replay is a flat loop, and the chain costs 3.5 CPU-s per mode
_NOT_BORROWED = frozenset({"test_a_100000_op_chain_differentiates_without_recursion_error"})


def _borrow(name: str) -> None:
    """Collect ``name``'s tests here too (a fresh import of the module), each under ``plan_mode``."""
    path = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_plan_both_ways_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for key, value in vars(module).items():
        if key in _NOT_BORROWED:
            continue
        if key.startswith(("test_", "Test")) and getattr(value, "__module__", None) == module.__name__:
            globals()[f"{key[:4]}_{name[5:]}_{key[5:] if key.startswith('test_') else key[4:]}"] = (
                pytest.mark.usefixtures("plan_mode")(value)
            )


for _name in _BOTH_WAYS:
    _borrow(_name)


@pytest.fixture(params=["general", "replay"])
def plan_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """``general``: the plan is off. ``replay``: every pass that captures returns the replay."""
    if request.param == "general":
        with use_backward_plan(False):
            yield request.param
    else:
        with use_backward_plan(True), replaying_first():
            yield request.param


# -- helpers ---------------------------------------------------------------------------------------


def _bits(a: Any) -> tuple[str, tuple[int, ...], bytes]:
    array = np.ascontiguousarray(a.numpy() if isinstance(a, rt.Tensor) else a)
    return (str(array.dtype), array.shape, array.tobytes())


def _both(f: Callable[[], Any]) -> tuple[Any, Any]:
    """``f()``'s results with the plan off, and replayed from a plan (a first call captures it)."""
    with use_backward_plan(False):
        general = f()
    with use_backward_plan(True):
        f()
        before = STATS["replayed"]
        replayed = f()
        assert STATS["replayed"] == before + 1, "the second pass did not replay a plan"
    return general, replayed


def _sum(t: rt.Tensor) -> rt.Tensor:
    return F.reduce_sum(t, tuple(range(t.ndim)))


# -- bit for bit over random programs --------------------------------------------------------------

_DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}
_SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1)]
_UNARY: dict[str, Callable[[rt.Tensor], rt.Tensor]] = {
    "tanh": F.tanh,
    "sin": F.sin,
    "exp": lambda x: F.exp(x * 0.25),
    "square": F.square,
    "neg": lambda x: -x,
}
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1.0),
    "max": rt.maximum,
}


@st.composite
def _programs(draw: st.DrawFn) -> tuple[list[np.ndarray], list[tuple[Any, ...]]]:
    n_inputs = draw(st.integers(1, 3))
    inputs = []
    for _ in range(n_inputs):
        dtype = _DTYPES[draw(st.sampled_from(sorted(_DTYPES)))]
        shape = draw(st.sampled_from(_SHAPES))
        values = draw(st.lists(st.floats(-2, 2, width=32), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        inputs.append(np.array(values, np.float64).reshape(shape).astype(dtype))
    steps: list[tuple[Any, ...]] = []
    for k in range(draw(st.integers(1, 8))):
        available = n_inputs + k
        kind = draw(st.sampled_from(["unary", "binary", "scalar", "matmul"]))
        a = draw(st.integers(0, available - 1))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(_UNARY))), a))
        elif kind == "scalar":
            steps.append(("scalar", draw(st.sampled_from(sorted(_BINARY))), a, draw(st.sampled_from([0.5, 1.5, -2.0]))))
        else:
            steps.append((kind, draw(st.sampled_from(sorted(_BINARY))), a, draw(st.integers(0, available - 1))))
    return inputs, steps


def _run(steps: list[tuple[Any, ...]], xs: tuple[rt.Tensor, ...]) -> rt.Tensor:
    values: list[Any] = list(xs)
    for step in steps:
        if step[0] == "unary":
            out = _UNARY[step[1]](values[step[2]])
        elif step[0] == "scalar":
            out = _BINARY[step[1]](values[step[2]], step[3])
        elif step[0] == "matmul" and values[step[2]].ndim == 2 and values[step[3]].ndim >= 1:
            a, b = values[step[2]], values[step[3]]
            b = b if b.ndim == 2 else b.reshape((b.shape[0], 1)) if b.ndim == 1 else b
            out = a @ b.T if a.shape[1] == b.shape[1] else a * 2.0
        else:
            a, b = values[step[2]], values[step[3]]
            try:
                np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                b = _sum(b)  # (a matmul's result need not broadcast with the rest)
            out = _BINARY[step[1]](a, b)
        values.append(out)
    total = values[len(xs)]
    for v in values[len(xs) + 1 :]:
        total = total + _sum(v)
    return _sum(total) if total.ndim else total


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_plan_gradients_equal_the_general_walk_bit_for_bit(program: tuple[list[np.ndarray], list[Any]]) -> None:
    inputs, steps = program
    xs = [rt.asarray(a) for a in inputs]
    g = autodiff.grad(lambda *xs: _run(steps, xs), argnums=tuple(range(len(xs))))
    general, replayed = _both(lambda: g(*xs))
    assert [_bits(a) for a in general] == [_bits(a) for a in replayed]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_backward_through_a_plan_equals_the_general_walk(program: tuple[list[np.ndarray], list[Any]]) -> None:
    inputs, steps = program

    def grads() -> list[Any]:
        xs = [rt.asarray(a, requires_grad=True) for a in inputs]
        _run(steps, tuple(xs)).backward()
        return [x.grad for x in xs]

    general, replayed = _both(grads)
    assert [None if a is None else _bits(a) for a in general] == [None if a is None else _bits(a) for a in replayed]


def test_the_benchmark_workloads_replay_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    w1, b1, w2, x = (rt.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((8, 16), (16,), (16, 4), (5, 8)))

    def mlp(w1: rt.Tensor, b1: rt.Tensor, w2: rt.Tensor) -> rt.Tensor:
        out = F.tanh(x @ w1 + b1) @ w2
        return _sum(out * out) / float(out.size)

    g = autodiff.grad(mlp, argnums=(0, 1, 2))
    general, replayed = _both(lambda: g(w1, b1, w2))
    assert [_bits(a) for a in general] == [_bits(a) for a in replayed]


# -- invalidation ----------------------------------------------------------------------------------


def _loss(w: rt.Tensor, x: rt.Tensor) -> rt.Tensor:
    return _sum(F.tanh(x * w) * w)


def test_an_inplace_write_after_recording_raises_on_a_replay_too() -> None:
    x = rt.asarray(np.linspace(-1, 1, 6).reshape(2, 3))
    for _ in range(2):  # capture, then a replay
        w = rt.asarray(np.ones((2, 3)), requires_grad=True)
        _loss(w, x).backward()
    w = rt.asarray(np.ones((2, 3)), requires_grad=True)
    weights = rt.asarray(np.full((2, 3), 0.5))
    loss = _loss(w, weights)  # the signature of the plan
    weights.reshape(3, 2).__iadd__(1.0)  # a saved value of mul, written through a view after recording
    before = STATS["replayed"]
    with pytest.raises(SavedValueModifiedError, match="mul"):
        loss.backward()
    assert STATS["replayed"] == before and w.grad is None


def test_a_released_recording_raises_on_a_replay_too() -> None:
    x = rt.asarray(np.ones(3))
    for _ in range(3):
        w = rt.asarray(np.ones(3), requires_grad=True)
        loss = _loss(w, x)
        loss.backward()
        with pytest.raises(RuntimeError, match="second time"):
            loss.backward()


@pytest.mark.parametrize(
    "change",
    ["policy", "default dtype", "dtype", "shape"],
)
def test_a_changed_signature_captures_a_new_plan(change: str) -> None:
    def grads(dtype: Any = np.float32, shape: tuple[int, ...] = (2, 3)) -> rt.Tensor:
        w = rt.asarray(np.full(shape, 0.3, dtype))
        x = rt.asarray(np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype(np.float64))
        return autodiff.grad(lambda w: _sum(F.tanh(w * x) + w * 0.5))(w)

    with use_backward_plan(True), use_policy("torch") if change == "default dtype" else contextlib.nullcontext():
        grads()
        grads()  # replayed from here on
        captured, replayed = STATS["captured"], STATS["replayed"]
        if change == "policy":
            with use_policy("torch"):
                got = grads()
                with use_backward_plan(False):
                    want = grads()
        elif change == "default dtype":
            with set_default_dtype(rt.float16):
                got = grads()
                with use_backward_plan(False):
                    want = grads()
        else:
            kwargs = {"dtype": np.float64} if change == "dtype" else {"shape": (3,)}
            got = grads(**kwargs)  # type: ignore[arg-type]
            with use_backward_plan(False):
                want = grads(**kwargs)  # type: ignore[arg-type]
        assert STATS["replayed"] == replayed, "a different signature replayed the old plan"
        assert STATS["captured"] == captured + 1
        assert _bits(got) == _bits(want)


def test_create_graph_and_higher_orders_take_the_general_path() -> None:
    def f(x: rt.Tensor) -> rt.Tensor:
        return _sum(F.sin(x) * x)

    x0 = np.linspace(-1, 1, 4)
    with use_backward_plan(True):
        for _ in range(2):  # a plan for this signature exists, and replays
            x = rt.asarray(x0, requires_grad=True)
            f(x).backward()
        replayed = STATS["replayed"]
        x = rt.asarray(x0, requires_grad=True)
        f(x).backward(create_graph=True)  # the same signature: not replayed
        assert STATS["replayed"] == replayed
        assert x.grad is not None and x.grad.node is not None  # the gradient was recorded
        second = autodiff.grad(lambda x: _sum(autodiff.grad(f)(x)))(rt.asarray(x0))
    np.testing.assert_allclose(x.grad.numpy(), np.sin(x0) + x0 * np.cos(x0))
    np.testing.assert_allclose(second.numpy(), 2 * np.cos(x0) - x0 * np.sin(x0))


def test_the_switch_turns_the_plan_off() -> None:
    x = rt.asarray(np.ones(3))
    with use_backward_plan(False):
        before = dict(STATS)
        for _ in range(3):
            autodiff.grad(lambda w: _loss(w, x))(rt.asarray(np.ones(3)))
        assert before == STATS
    backward_plan.clear_cache()


def test_a_replaced_rule_is_what_runs_not_the_plan_of_the_old_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from autodiff.rules import VJP_RULES

    def grads() -> rt.Tensor:
        return autodiff.grad(lambda w: _sum(F.tanh(w)))(rt.asarray(np.linspace(-1, 1, 3)))

    with use_backward_plan(True):
        grads()
        grads()
        rule = VJP_RULES["tanh"]
        monkeypatch.setitem(VJP_RULES, "tanh", lambda cts, p, o, needs: [F.mul(x, 2.0) for x in rule(cts, p, o, needs)])
        got = grads()
    np.testing.assert_allclose(got.numpy(), 2 * (1 - np.tanh(np.linspace(-1, 1, 3)) ** 2))


def test_a_gradient_from_a_replay_is_the_users_to_write() -> None:
    x = rt.asarray(np.ones(3))
    with use_backward_plan(True):
        for _ in range(3):
            w = rt.asarray(np.full(3, 0.5), requires_grad=True)
            _sum(x * w + w).backward()
            assert w.grad is not None
            w.grad.mul_(0.0)  # an in-place write into the gradient must not reach what the next replay reads
        w = rt.asarray(np.full(3, 0.5), requires_grad=True)
        _sum(x * w + w).backward()
    assert w.grad is not None
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))


def test_a_recording_longer_than_the_cap_takes_the_general_walk() -> None:
    def grad_of_chain(n: int) -> Any:
        x = rt.asarray(np.array([0.5, 2.0]), requires_grad=True)
        y = x
        for _ in range(n):
            y = F.mul(y, 1.5)
        F.reduce_sum(y, (0,)).backward()
        return x.grad

    with use_backward_plan(True):
        before = dict(STATS)
        long = [grad_of_chain(backward_plan.MAX_EQNS + 1) for _ in range(2)]
        assert before == STATS  # neither captured nor replayed
        short = [grad_of_chain(10) for _ in range(2)]
        assert STATS["captured"] == before["captured"] + 1 and STATS["replayed"] == before["replayed"] + 1
    np.testing.assert_array_equal(long[0].numpy(), long[1].numpy())
    np.testing.assert_array_equal(short[1].numpy(), np.full(2, 1.5**10))

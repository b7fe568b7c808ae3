"""In-place writes through aliases never give a wrong gradient: they raise.

Each reproducer writes, after the op is recorded, into memory a recording saved
through a Tensor that shares it (a view, ``detach()``, a second ``asarray`` of
one NumPy array). Before the version counters every one of them returned a
wrong gradient silently. The Hypothesis test draws programs of recorded ops,
views and in-place writes and checks each either raises or gives JAX's
gradient of the same computation with copy-at-use semantics.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from autodiff import rules as R
from runtime.core import lax as F
from runtime.core.inplace import InPlaceError, SavedValueModifiedError

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _sum(t: rt.Tensor) -> rt.Tensor:
    return F.reduce_sum(t, tuple(range(t.ndim)))


# -- the reproducers: a write through an alias after recording ------------------------------------

#: name -> (make the constant, make an alias that shares its memory, the write)
ALIASES: dict[str, Callable[[np.ndarray], tuple[rt.Tensor, Any]]] = {}


def _alias(name: str) -> Callable[[Callable[[np.ndarray], tuple[rt.Tensor, Any]]], Any]:
    def register(fn: Callable[[np.ndarray], tuple[rt.Tensor, Any]]) -> Any:
        ALIASES[name] = fn
        return fn

    return register


@_alias("reshape")
def _reshape(base: np.ndarray) -> tuple[rt.Tensor, Any]:
    c = rt.asarray(base)
    return c, lambda: c.reshape(3, 2).__iadd__(1.0)


@_alias("transpose")
def _transpose(base: np.ndarray) -> tuple[rt.Tensor, Any]:
    c = rt.asarray(base)
    return c, lambda: c.T.__imul__(2.0)


@_alias("slice")
def _slice(base: np.ndarray) -> tuple[rt.Tensor, Any]:
    c = rt.asarray(base)
    return c, lambda: c[:, 1:].__isub__(0.5)


@_alias("row")
def _row(base: np.ndarray) -> tuple[rt.Tensor, Any]:
    c = rt.asarray(base)
    return c, lambda: c[1].__iadd__(3.0)


@_alias("detach")
def _detach(base: np.ndarray) -> tuple[rt.Tensor, Any]:
    c = rt.asarray(base)
    return c, lambda: c.detach().__iadd__(1.0)


@_alias("conj of real")
def _conj(base: np.ndarray) -> tuple[rt.Tensor, Any]:
    c = rt.asarray(base)
    # conj of a real tensor is the tensor itself (no equation), so its write would be refused at once;
    # a reshape of it is a second Tensor over the same memory
    return c, lambda: c.conj().reshape(3, 2).__iadd__(1.0)


@_alias("second asarray")
def _two_asarray(base: np.ndarray) -> tuple[rt.Tensor, Any]:
    c = rt.asarray(base)
    return c, lambda: rt.asarray(base).__iadd__(1.0)


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_a_write_through_an_alias_of_a_saved_constant_raises(name: str) -> None:
    base = np.arange(1.0, 7.0).reshape(2, 3)
    c, write = ALIASES[name](base)
    w = rt.asarray(np.ones((2, 3)), requires_grad=True)
    loss = _sum(w * c)  # mul saves c for w's cotangent
    before = c.numpy().copy()
    write()
    assert c._version == 1
    assert not np.array_equal(c.numpy(), before), "the alias shares c's memory"
    with pytest.raises(SavedValueModifiedError) as info:
        loss.backward()
    text = str(info.value)
    assert "mul" in text and "float64[2, 3]" in text and "version 1" in text and "version 0" in text
    assert "copy" in text
    assert isinstance(info.value, InPlaceError)
    assert w.grad is None  # nothing was accumulated


@pytest.mark.parametrize("part", ["real", "imag"])
def test_a_write_through_real_or_imag_of_a_saved_complex_constant_raises(part: str) -> None:
    c = rt.asarray(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    w = rt.asarray(np.array([0.5 + 0.5j, 1.0 + 0.0j]), requires_grad=True)
    loss = _sum(F.real(w * c))
    view = getattr(c, part)
    view += 1.0
    assert c._version == 1
    with pytest.raises(SavedValueModifiedError, match="mul"):
        loss.backward()


def test_the_issue_reproducer_a_reshape_view_of_a_constant() -> None:
    c = rt.asarray(np.ones(3))
    w = rt.asarray([1.0, 2.0, 3.0], requires_grad=True)
    loss = F.reduce_sum(w * c, (0,))
    v = c.reshape(3, 1)
    v += 1  # c += 1 is refused; this one used to be accepted, and w.grad became [2, 2, 2]
    with pytest.raises(SavedValueModifiedError):
        loss.backward()


def test_a_write_into_a_leaf_through_detach_after_it_was_saved_raises() -> None:
    w = rt.asarray(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    loss = _sum(F.sin(w))  # sin saves its input: the leaf's memory
    d = w.detach()
    d += 1.0
    assert w._version == d._version == 1
    with pytest.raises(SavedValueModifiedError, match="sin.*tracked leaf"):
        loss.backward()


def test_a_write_into_a_saved_output_through_detach_raises() -> None:
    x = rt.asarray(np.array([0.1, 0.2]), requires_grad=True)
    y = F.tanh(x)  # tanh saves its output
    loss = _sum(y)
    alias = y.detach()[0]
    alias += 1.0
    with pytest.raises(SavedValueModifiedError, match="output 0 of tanh"):
        loss.backward()


def test_vjp_fn_and_linearize_check_saved_values() -> None:
    c = rt.asarray(np.array([2.0, 3.0]))
    _, vjp_fn = autodiff.vjp(lambda x: F.mul(x, c), np.array([1.0, 1.0]))
    alias = c.detach()
    alias += 1.0
    with pytest.raises(SavedValueModifiedError):
        vjp_fn(np.ones(2))
    c2 = rt.asarray(np.array([2.0, 3.0]))
    _, f_jvp = autodiff.linearize(lambda x: F.mul(F.sin(x), c2), np.array([1.0, 1.0]))
    np.testing.assert_allclose(f_jvp(np.ones(2)).numpy(), np.cos(1.0) * np.array([2.0, 3.0]))
    alias = c2.reshape(2, 1)
    alias *= 2.0
    with pytest.raises(SavedValueModifiedError, match="jvp"):
        f_jvp(np.ones(2))


def test_jit_raises_when_a_closed_over_array_is_written_through_an_alias() -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    jf = autodiff.jit(lambda x: F.add(F.mul(x, c), x))
    x = rt.asarray(np.ones(2))
    np.testing.assert_array_equal(jf(x).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(jf(x).numpy(), [2.0, 3.0])  # the per-call path
    view = c.reshape(2, 1)
    view += 1.0  # eager f would now give [3, 4]; the compiled program still holds [1, 2]
    with pytest.raises(SavedValueModifiedError, match="closes over"):
        jf(x)


def test_jit_is_not_disturbed_by_writes_into_other_memory() -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    jf = autodiff.jit(lambda x: F.mul(x, c))
    x = rt.asarray(np.ones(2))
    jf(x)
    other = rt.asarray(np.zeros(2))
    other += 1.0
    np.testing.assert_array_equal(jf(x).numpy(), [1.0, 2.0])


def test_writes_before_recording_are_seen_and_differentiated_at_the_new_value() -> None:
    base = np.array([1.0, 2.0, 3.0])
    c = rt.asarray(base)
    alias = rt.asarray(base).reshape(3, 1)
    alias += 1.0  # before the op: what it reads
    w = rt.asarray(np.array([0.5, 0.5, 0.5]), requires_grad=True)
    loss = _sum(w * c)
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 3.0, 4.0])


def test_the_direct_refusals_still_hold() -> None:
    c = rt.asarray(np.ones(3))
    w = rt.asarray(np.ones(3), requires_grad=True)
    out = w * c
    with pytest.raises(InPlaceError, match="recorded graph"):
        c += 1
    with pytest.raises(InPlaceError, match="requires grad"):
        w += 1
    del out


def test_a_write_into_unsaved_memory_does_not_raise() -> None:
    # add saves nothing: writing into its constant operand cannot change the gradient
    c = rt.asarray(np.array([1.0, 2.0]))
    w = rt.asarray(np.array([3.0, 4.0]), requires_grad=True)
    loss = _sum(F.add(w, c))
    alias = c.detach()
    alias += 5.0
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])


def test_a_converted_saved_operand_is_checked_through_its_convert() -> None:
    c = rt.asarray(np.array([1.0, 2.0], np.float32))  # promoted to float64: a fused convert
    w = rt.asarray(np.array([3.0, 4.0]), requires_grad=True)
    loss = _sum(w * c)
    alias = c.detach()
    alias += 1.0
    with pytest.raises(SavedValueModifiedError, match="mul"):
        loss.backward()


# -- detect_writes: writes that bypass castwise ---------------------------------------------------


def test_detect_writes_catches_a_numpy_write_into_the_wrapped_array() -> None:
    base = np.array([1.0, 2.0])
    c = rt.asarray(base)
    w = rt.asarray(np.array([3.0, 4.0]), requires_grad=True)
    with autodiff.detect_writes():
        loss = _sum(w * c)
    base[0] = 10.0  # NumPy's own write: no version counter sees it
    assert c._version == 0
    with pytest.raises(SavedValueModifiedError, match="checksum"):
        loss.backward()
    assert w.grad is None


def test_detect_writes_passes_untouched_recordings_and_checks_numpy_writes_into_results() -> None:
    x = rt.asarray(np.array([0.1, 0.2]), requires_grad=True)
    with autodiff.detect_writes():
        y = F.tanh(x)
        loss = _sum(y)
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh([0.1, 0.2]) ** 2)
    y._array[1] = 0.0  # past castwise, into the storage (y.numpy() is a read-only view)
    with pytest.raises(SavedValueModifiedError, match="tanh"):
        loss.backward()


def test_detect_writes_is_per_thread() -> None:
    seen: list[bool] = []

    def other() -> None:
        seen.append(autodiff.record._DETECT.depth > 0)

    with autodiff.detect_writes():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [False]


# -- a second backward, a failed backward -------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda w, c: _sum(w * c),  # mul saved only an untracked constant
        lambda w, c: _sum(w * w),  # mul saved only the leaf itself
        lambda w, c: _sum(F.sin(w)),  # sin saved the leaf
    ],
    ids=["constant", "leaf-twice", "leaf"],
)
def test_a_second_backward_without_retain_graph_raises_when_only_leaves_were_saved(make: Any) -> None:
    w = rt.asarray(np.array([1.0, 2.0]), requires_grad=True)
    c = rt.asarray(np.array([3.0, 4.0]))
    loss = make(w, c)
    loss.backward()
    first = w.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), first)  # not doubled


def test_a_second_backward_through_ops_that_save_nothing_runs_as_in_pytorch() -> None:
    w = rt.asarray(np.array([1.0, 2.0]), requires_grad=True)
    loss = _sum(F.add(w, 1.0))
    loss.backward()
    loss.backward()  # nothing was saved, so nothing was released: the gradient accumulates
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])


def _failing_sin(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("rule failed")

    monkeypatch.setitem(R.VJP_RULES, "sin", broken)


def test_a_backward_that_fails_midway_says_what_it_released_and_a_retry_says_why_it_cannot_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x = rt.asarray(np.array([0.5, 1.0]), requires_grad=True)
    loss = _sum(F.tanh(F.mul(F.sin(x), 2.0)))
    _failing_sin(monkeypatch)
    with pytest.raises(ValueError, match="rule failed") as info:
        loss.backward()
    note = " ".join(getattr(info.value, "__notes__", []))
    assert "stopped at sin" in note and "released" in note and "no .grad was changed" in note
    assert x.grad is None
    monkeypatch.undo()  # the rule works again, but the recording is half released
    with pytest.raises(RuntimeError, match=r"failed at sin \(ValueError: rule failed\)"):
        loss.backward()
    assert x.grad is None


def test_a_failed_backward_with_retain_graph_leaves_the_recording_intact(monkeypatch: pytest.MonkeyPatch) -> None:
    x = rt.asarray(np.array([0.5, 1.0]), requires_grad=True)
    loss = _sum(F.tanh(F.mul(F.sin(x), 2.0)))
    _failing_sin(monkeypatch)
    with pytest.raises(ValueError) as info:
        loss.backward(retain_graph=True)
    assert "as it was" in " ".join(getattr(info.value, "__notes__", []))
    monkeypatch.undo()
    loss.backward()  # the retry runs, and gives JAX's gradient
    with jax.enable_x64(True):
        want = jax.grad(lambda v: jnp.sum(jnp.tanh(jnp.sin(v) * 2.0)))(jnp.array([0.5, 1.0]))
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(want), rtol=1e-12)


# -- threads ------------------------------------------------------------------------------------


def test_concurrent_backward_calls_into_a_shared_leaf_add_up_exactly() -> None:
    threads, calls = 8, 150
    w = rt.asarray(np.zeros(4), requires_grad=True)
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            start.wait()
            for _ in range(calls):
                _sum(F.mul(w, 1.0)).backward()
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, float(threads * calls)))


# -- programs of recorded ops, views and in-place writes, against JAX -------------------------------

_UNARY = {"sin": (F.sin, jnp.sin), "tanh": (F.tanh, jnp.tanh), "square": (lambda t: F.mul(t, t), lambda v: v * v)}
_BINARY = {"add": (F.add, jnp.add), "sub": (F.sub, jnp.subtract), "mul": (F.mul, jnp.multiply)}
#: ways to make a Tensor that shares an untracked Tensor's memory
_VIEWS: dict[str, Callable[[rt.Tensor], rt.Tensor]] = {
    "detach": lambda t: t.detach(),
    "reshape": lambda t: t.reshape(6),
    "reshape3x2": lambda t: t.reshape(3, 2),
    "transpose": lambda t: t.T,
    "row": lambda t: t[1],
    "columns": lambda t: t[:, 1:],
    "conj": lambda t: t.conj(),
    "asarray": lambda t: rt.asarray(t._array),  # its storage: t.numpy() is a read-only view
}
_WRITES = {"add": lambda a, v: a.__iadd__(v), "mul": lambda a, v: a.__imul__(v), "sub": lambda a, v: a.__isub__(v)}

_step = st.one_of(
    st.tuples(st.just("unary"), st.integers(0, 50), st.sampled_from(sorted(_UNARY))),
    st.tuples(st.just("binary"), st.integers(0, 50), st.integers(0, 50), st.sampled_from(sorted(_BINARY))),
    st.tuples(st.just("view"), st.integers(0, 50), st.sampled_from(sorted(_VIEWS))),
    st.tuples(st.just("write"), st.integers(0, 50), st.sampled_from(sorted(_WRITES)), st.sampled_from([0.5, -1.25])),
)


def _run_program(steps: list[tuple[Any, ...]]) -> tuple[Any, list[tuple[Any, ...]], rt.Tensor, np.ndarray]:
    """Run ``steps`` in castwise; return the loss (or the error backward raised), the log
    a JAX replay needs, the leaf and its initial value."""
    rng = np.random.default_rng(len(steps))
    shared = rng.uniform(0.5, 1.5, (2, 3))
    w0 = rng.uniform(-1.0, 1.0, (2, 3))
    w = rt.asarray(w0.copy(), requires_grad=True)
    tracked: list[rt.Tensor] = [w]
    consts: list[rt.Tensor] = [rt.asarray(shared), rt.asarray(shared), rt.asarray(rng.uniform(0.5, 1.5, (2, 3)))]
    aliases: list[rt.Tensor] = list(consts)
    log: list[tuple[Any, ...]] = []
    for step in steps:
        kind = step[0]
        if kind == "unary":
            src = step[1] % len(tracked)
            out = _UNARY[step[2]][0](tracked[src])
            log.append(("op", len(tracked), step[2], [("t", src)]))
            tracked.append(out)
        elif kind == "binary":
            src = step[1] % len(tracked)
            operands = [("t", i) for i in range(len(tracked))] + [("c", c) for c in consts]
            pick = operands[step[2] % len(operands)]
            other = tracked[pick[1]] if pick[0] == "t" else pick[1]
            out = _BINARY[step[3]][0](tracked[src], other)
            spec = pick if pick[0] == "t" else ("c", other.numpy().copy())  # the value the op read
            log.append(("op", len(tracked), step[3], [("t", src), spec]))
            tracked.append(out)
        elif kind == "view":
            pool = [t.detach() for t in tracked] + consts  # all of shape (2, 3); consts include views
            view = _VIEWS[step[2]](pool[step[1] % len(pool)])
            aliases.append(view)
            if view.shape == (2, 3):
                consts.append(view)
        else:
            target = aliases[step[1] % len(aliases)] if step[1] % 2 else tracked[step[1] % len(tracked)].detach()
            try:
                _WRITES[step[2]](target, step[3])
            except InPlaceError:
                continue  # refused at write time: nothing changed
            log.append(("write", [t.numpy().copy() for t in tracked]))
    loss = tracked[0] * 0.0
    for t in tracked[1:]:
        loss = F.add(loss, t)
    total = _sum(loss)
    return total, log, w, w0


def _replay(log: list[tuple[Any, ...]], w0: np.ndarray) -> Any:
    """The same computation in JAX, with copy-at-use semantics: each op reads the values
    its castwise twin read; after an in-place write every tracked value takes its new
    numbers, the change itself being a constant (castwise, like PyTorch, does not
    differentiate a write made through an untracked alias)."""

    def f(w: Any) -> Any:
        env = [w]
        for event in log:
            if event[0] == "op":
                _, _, name, specs = event
                args = [env[s[1]] if s[0] == "t" else jnp.asarray(s[1]) for s in specs]
                fn = _UNARY[name][1] if name in _UNARY else _BINARY[name][1]
                env.append(fn(*args))
            else:
                env = [v + jax.lax.stop_gradient(jnp.asarray(now) - v) for v, now in zip(env, event[1], strict=True)]
        total = env[0] * 0.0
        for v in env[1:]:
            total = total + v
        return jnp.sum(total)

    with jax.enable_x64(True):
        value, g = jax.value_and_grad(f)(jnp.asarray(w0))
        return float(value), np.asarray(g)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_step, min_size=1, max_size=14))
def test_programs_with_views_and_in_place_writes_give_the_reference_gradient_or_raise(
    steps: list[tuple[Any, ...]],
) -> None:
    total, log, w, w0 = _run_program(steps)
    want_value, want_grad = _replay(log, w0)
    np.testing.assert_allclose(float(total), want_value, rtol=1e-12, atol=1e-12)
    try:
        total.backward()
    except SavedValueModifiedError:
        return  # the program wrote into a value a rule would read: refusing is right
    np.testing.assert_allclose(w.grad.numpy(), want_grad, rtol=1e-10, atol=1e-12)

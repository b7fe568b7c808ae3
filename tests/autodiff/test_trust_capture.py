"""Constants captured by reference: every replay checks what it captured, or raises.

A trace (``runtime.trace``, ``autodiff.jit``, ``autodiff.vmap``'s recording of one example)
runs the function once and replays its equations later, reading what it captured by
reference. Before the fix (``runtime.core.capture``, ``runtime.core.versions.Fold``):

1. a constant written in place through a view *during* the trace, after an op had read it,
   was replayed with the new values (eager 88, jit / vmap / trace + evaluate 148);
2. a write into a jitted function's argument through ``detach()`` was made once (at the
   trace) and never replayed, and an op on ``x.detach()`` baked the first call's argument
   into the program;
3. values computed from closed-over arrays by ops without a traced operand (``F.cos(c)``,
   the gradient ``c`` of ``sum(x * c)``) were folded into new constants that no guard
   watched: a write into ``c`` between calls left ``jit`` (and ``evaluate``) stale.

Eager execution of the same program is the oracle. Each test fails on the code before the
fix; the ``*_still_*`` / ``no_false_alarm`` tests pin what must keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import autodiff
import runtime as rt
from runtime.core import lax as F
from runtime.core.tensor import Tensor

TRANSFORMS = ("jit", "vmap", "trace")


def W() -> Tensor:
    return rt.asarray(np.array([1.0, 2.0, 3.0]))


def run(kind: str, f: Callable[[Tensor], Tensor], w: Tensor) -> np.ndarray:
    """``f(w)`` through one transform (vmap: over a batch of two copies of ``w``, example 0)."""
    if kind == "jit":
        return autodiff.jit(f)(w).numpy()
    if kind == "vmap":
        batch = rt.asarray(np.stack([w.numpy(), w.numpy()]))
        out = autodiff.vmap(f)(batch).numpy()
        np.testing.assert_array_equal(out[0], out[1])
        return out[0]  # type: ignore[no-any-return]
    graph = rt.trace(f, w)
    return rt.evaluate(graph, w)[0].numpy()


def agrees(kind: str, f: Callable[[Tensor], Tensor], make: Callable[[], Tensor] = W) -> None:
    want = f(make()).numpy()
    np.testing.assert_allclose(run(kind, f, make()), want, rtol=1e-13)


# -- 1. writes during the recording ------------------------------------------------------------------


def written_through_a_view(w: Tensor) -> Tensor:
    c = rt.asarray(np.arange(1.0, 4.0))
    a = (w * c).sum()
    v = c.reshape(3, 1)  # shares c's memory: c itself is not what is written
    v += 10
    return a + (w * c).sum()


def test_the_eager_oracle_and_grad() -> None:
    assert written_through_a_view(W()).item() == 88.0
    x = np.array([1.0, 2.0, 3.0])
    c = np.arange(1.0, 4.0)
    assert (x * c).sum() + (x * (c + 10)).sum() == 88.0
    with pytest.raises(rt.SavedValueModifiedError):  # grad refused it already
        autodiff.grad(written_through_a_view)(W())


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_constant_written_through_a_view_after_its_first_use_raises(kind: str) -> None:
    name = {"jit": "autodiff.jit", "vmap": "autodiff.vmap", "trace": "runtime.trace"}[kind]
    with pytest.raises(rt.SavedValueModifiedError, match=rf"{name}\(written_through_a_view\).*float64\[3\] constant"):
        run(kind, written_through_a_view, W())


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_constant_written_after_its_last_use_raises(kind: str) -> None:
    # eager read the zeros; the replay would read the buffer as it is when it runs
    def f(w: Tensor) -> Tensor:
        buf = rt.asarray(np.zeros(3))
        y = w * buf
        buf.reshape(3, 1).add_(1.0)
        return y

    assert f(W()).numpy().tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(rt.SavedValueModifiedError, match="after an op of the trace read it"):
        run(kind, f, W())


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_recorded_value_written_after_it_was_computed_raises(kind: str) -> None:
    def f(w: Tensor) -> Tensor:
        y = w * 2.0
        d = y.detach()
        d += 1.0  # eager: y is now 2w + 1; the replay computes 2w again
        return y * 3.0

    assert f(W()).numpy().tolist() == [9.0, 15.0, 21.0]
    with pytest.raises(rt.SavedValueModifiedError, match="result of mul was written in place"):
        run(kind, f, W())


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_returned_value_written_after_it_was_computed_raises(kind: str) -> None:
    def f(w: Tensor) -> Tensor:
        y = w * 2.0
        y.detach().add_(1.0)
        return y

    with pytest.raises(rt.SavedValueModifiedError, match="result of mul"):
        run(kind, f, W())


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_no_false_alarm_for_a_temporary_written_before_its_first_use(kind: str) -> None:
    def f(w: Tensor) -> Tensor:
        c = F.zeros(3)
        c += 1.0
        return w * c

    def through_a_view(w: Tensor) -> Tensor:
        c = rt.asarray(np.zeros(3))
        c.reshape(3, 1).add_(2.0)
        return w * c

    agrees(kind, f)
    agrees(kind, through_a_view)


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_no_false_alarm_for_writes_the_replay_does_not_read(kind: str) -> None:
    def unrelated(w: Tensor) -> Tensor:
        scratch = rt.asarray(np.zeros(3))
        y = w * 2.0
        scratch.reshape(3).add_(1.0)  # never read by the program
        return y

    def after_the_last_use(w: Tensor) -> Tensor:
        y = w * 2.0
        z = y * 3.0
        y.detach().add_(1.0)  # y is read by nothing after this
        return z

    agrees(kind, unrelated)
    agrees(kind, after_the_last_use)


# -- 2. the traced arguments ---------------------------------------------------------------------------


def writes_its_argument(x: Tensor) -> Tensor:
    d = x.detach()
    d += 1.0
    return (x * 2.0).sum()


def test_eager_writes_the_argument_on_every_call() -> None:
    x = W()
    assert writes_its_argument(x).item() == 18.0
    assert writes_its_argument(x).item() == 24.0
    assert x.numpy().tolist() == [3.0, 4.0, 5.0]


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_write_into_the_argument_while_traced_raises(kind: str) -> None:
    with pytest.raises(rt.InPlaceError, match="argument 0 .* was written in place while the function was traced"):
        run(kind, writes_its_argument, W())


def test_jit_names_the_pytree_leaf_written() -> None:
    def f(p: dict[str, Tensor]) -> Tensor:
        p["b"].detach().add_(1.0)
        return p["w"] * p["b"]

    with pytest.raises(rt.InPlaceError, match=r"argument 0, leaf \['b'\]"):
        autodiff.jit(f)({"w": W(), "b": W()})


def test_jit_cached_call_after_a_refused_trace_traces_again() -> None:
    jf = autodiff.jit(writes_its_argument)
    with pytest.raises(rt.InPlaceError):
        jf(W())
    with pytest.raises(rt.InPlaceError):  # nothing was cached: the next call traces (and refuses) again
        jf(W())
    assert jf.traces == 0


def uses_its_argument_detached(x: Tensor) -> Tensor:
    return x * x.detach()


def scales_by_a_detached_max(x: Tensor) -> Tensor:
    return x / F.reduce_max(x.detach(), (0,))


def squares_without_grad(x: Tensor) -> Tensor:
    with autodiff.no_grad():
        s = x * x
    return x + s


@pytest.mark.parametrize("f", [uses_its_argument_detached, scales_by_a_detached_max, squares_without_grad])
@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_constant_holding_the_arguments_values_raises(kind: str, f: Callable[[Tensor], Tensor]) -> None:
    # before: jit and evaluate gave the first call's values for every later argument, vmap example 0's
    with pytest.raises(rt.TracedConstantError, match="holds values of"):
        if kind == "vmap":
            autodiff.vmap(f)(rt.asarray(np.array([[1.0, 2.0], [3.0, 5.0]])))
        elif kind == "jit":
            autodiff.jit(f)(rt.asarray(np.array([1.0, 2.0])))
        else:
            rt.trace(f, np.array([1.0, 2.0]))


def test_a_detached_unmapped_argument_is_every_examples_value() -> None:
    def f(x: Tensor, w: Tensor) -> Tensor:
        return x * w.detach()

    xs = rt.asarray(np.array([[1.0, 2.0], [3.0, 5.0]]))
    w = rt.asarray(np.array([0.5, -1.0]))
    got = autodiff.vmap(f, in_axes=(0, None))(xs, w).numpy()
    np.testing.assert_array_equal(got, [f(xs[0], w).numpy(), f(xs[1], w).numpy()])


def test_no_false_alarm_for_a_closed_over_array_also_passed_as_the_argument() -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    jf = autodiff.jit(lambda x: x * c)
    np.testing.assert_array_equal(jf(c).numpy(), [1.0, 4.0])
    other = rt.asarray(np.array([3.0, 5.0]))
    np.testing.assert_array_equal(jf(other).numpy(), (other * c).numpy())


# -- 3. folded constants between calls ----------------------------------------------------------------


def bump(c: Tensor) -> None:
    """A write into ``c`` through a view: ``c`` itself is not referenced, so it is accepted."""
    c.reshape(c.size).__iadd__(1.0)


def test_jit_of_a_gradient_that_is_a_closed_over_array_raises_after_a_write() -> None:
    c = rt.asarray([1.0, 2.0])
    loss = lambda x: F.reduce_sum(x * c, (0,))  # noqa: E731
    jg = autodiff.jit(autodiff.grad(loss))
    x = rt.asarray([1.0, 1.0])
    np.testing.assert_array_equal(jg(x).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(jg(x).numpy(), [1.0, 2.0])  # the cached-signature path
    bump(c)
    np.testing.assert_array_equal(autodiff.grad(loss)(x).numpy(), [2.0, 3.0])  # eager
    with pytest.raises(rt.SavedValueModifiedError, match="a constant of the program was computed from"):
        jg(x)
    # a NumPy argument is another signature: traced again, it reads the new values
    np.testing.assert_array_equal(jg(np.array([1.0, 1.0])).numpy(), [2.0, 3.0])
    with pytest.raises(rt.SavedValueModifiedError):  # the stale entry still refuses
        jg(x)
    np.testing.assert_array_equal(autodiff.jit(autodiff.grad(loss))(x).numpy(), [2.0, 3.0])  # jit again


def test_jit_of_an_op_on_a_closed_over_array_raises_after_a_write() -> None:
    c = rt.asarray([1.0, 2.0])
    jf = autodiff.jit(lambda x: x * F.cos(c))
    x = rt.asarray([1.0, 1.0])
    np.testing.assert_allclose(jf(x).numpy(), np.cos([1.0, 2.0]))
    bump(c)
    with pytest.raises(rt.SavedValueModifiedError, match=r"autodiff.jit\(<lambda>\)"):
        jf(x)


def test_jit_first_call_after_lower_checks_too() -> None:
    c = rt.asarray([1.0, 2.0])
    jf = autodiff.jit(lambda x: x * F.cos(c))
    x = rt.asarray([1.0, 1.0])
    jf.lower(x)  # traced (not run yet)
    bump(c)
    with pytest.raises(rt.SavedValueModifiedError):
        jf(x)


def test_evaluate_raises_after_a_write_into_what_the_graph_captured() -> None:
    c = rt.asarray([1.0, 2.0])
    x = rt.asarray([1.0, 1.0])
    folded = rt.trace(lambda v: v * F.cos(c), x)
    direct = rt.trace(lambda v: v * c, x)
    np.testing.assert_allclose(rt.evaluate(folded, x)[0].numpy(), np.cos([1.0, 2.0]))
    bump(c)
    with pytest.raises(rt.SavedValueModifiedError, match="runtime.evaluate"):
        rt.evaluate(folded, x)
    with pytest.raises(rt.SavedValueModifiedError, match="runtime.evaluate"):
        rt.evaluate(direct, x)


def test_vmap_records_again_on_every_call() -> None:
    c = rt.asarray([1.0, 2.0])
    vf = autodiff.vmap(lambda x: x * F.cos(c))
    xs = rt.asarray(np.ones((3, 2)))
    vf(xs)
    bump(c)
    np.testing.assert_allclose(vf(xs).numpy(), np.ones((3, 2)) * np.cos([2.0, 3.0]))


def test_no_false_alarm_for_writes_into_memory_the_program_does_not_read() -> None:
    c = rt.asarray([1.0, 2.0])
    unrelated = rt.asarray([5.0, 6.0])

    def f(x: Tensor) -> Tensor:
        _ = F.cos(unrelated)  # read by an untracked op, but nothing the program holds comes from it
        t = rt.asarray(np.ones(2))  # a temporary folded into the program, gone after the trace
        return x * F.cos(c) + F.sin(t)

    x = rt.asarray([1.0, 1.0])
    jf = autodiff.jit(f)
    graph = rt.trace(f, x)
    jf(x)
    bump(unrelated)
    np.testing.assert_allclose(jf(x).numpy(), f(x).numpy())
    np.testing.assert_allclose(rt.evaluate(graph, x)[0].numpy(), f(x).numpy())
    np.testing.assert_allclose(run("vmap", f, x), f(x).numpy())


def test_no_false_alarm_for_the_jit_arguments_written_between_calls() -> None:
    # an optimizer step into the argument between calls: the program reads it as an argument
    c = rt.asarray([1.0, 2.0])
    step = autodiff.jit(autodiff.grad(lambda w: F.reduce_sum(w * w * c, (0,))))
    w = rt.asarray([1.0, 1.0])
    for _ in range(3):
        g = step(w)
        np.testing.assert_allclose(g.numpy(), 2 * w.numpy() * c.numpy())
        w -= 0.1 * g
    assert step.traces == 1


def test_custom_function_closing_over_a_folded_constant_is_guarded() -> None:
    c = rt.asarray([1.0, 2.0])

    @autodiff.custom_jvp
    def scale(x: Tensor) -> Tensor:
        return x * F.cos(c)

    @scale.defjvp
    def scale_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return scale(x), t * F.cos(c)

    jf = autodiff.jit(lambda x: scale(x) * 2.0)
    x = rt.asarray([1.0, 1.0])
    np.testing.assert_allclose(jf(x).numpy(), 2 * np.cos([1.0, 2.0]))
    bump(c)
    with pytest.raises(rt.SavedValueModifiedError):
        jf(x)


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_constant_from_a_detached_intermediate_that_is_gone_raises(kind: str) -> None:
    def f(x: Tensor) -> Tensor:
        y = x * 2.0  # recorded, then only read through detach(): not in the program
        z = y.detach() * 3.0
        return x * z

    with pytest.raises(rt.TracedConstantError, match="holds values of"):
        if kind == "vmap":
            autodiff.vmap(f)(rt.asarray(np.array([[1.0, 2.0], [3.0, 5.0]])))
        elif kind == "jit":
            autodiff.jit(f)(rt.asarray(np.array([1.0, 2.0])))
        else:
            rt.trace(f, np.array([1.0, 2.0]))


def test_vmap_no_false_alarm_for_ops_on_a_detached_unmapped_argument() -> None:
    def f(x: Tensor, w: Tensor) -> Tensor:
        return x * F.reduce_max(w.detach(), (0,))

    xs = rt.asarray(np.array([[1.0, 2.0], [3.0, 5.0]]))
    w = rt.asarray(np.array([0.5, -1.0]))
    got = autodiff.vmap(f, in_axes=(0, None))(xs, w).numpy()
    np.testing.assert_array_equal(got, [f(xs[0], w).numpy(), f(xs[1], w).numpy()])


def test_a_custom_rule_reading_a_folded_closure_is_checked_at_backward() -> None:
    c = rt.asarray([1.0, 2.0])

    @autodiff.custom_vjp
    def scale(x: Tensor) -> Tensor:
        return x * 2.0

    def fwd(x: Tensor) -> Any:
        return scale(x), None

    def bwd(_: Any, g: Tensor) -> Any:
        return (g * F.cos(c),)  # cos(c) alone has no traced operand: before, c was not watched

    scale.defvjp(fwd, bwd)
    x = rt.asarray([1.0, 1.0], requires_grad=True)
    loss = F.reduce_sum(scale(x), (0,))
    bump(c)
    with pytest.raises(rt.SavedValueModifiedError, match="custom_vjp scale: bwd reads"):
        loss.backward()


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_no_false_alarm_for_a_promoted_closed_over_array(kind: str) -> None:
    c32 = rt.asarray(np.array([0.5, 1.5, 2.5], np.float32))  # f64 * f32: a recorded convert of the constant
    agrees(kind, lambda w: w * c32 + F.cos(c32))


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_no_false_alarm_for_a_view_of_a_closed_over_array_at_a_traced_index(kind: str) -> None:
    table = rt.asarray(np.arange(12.0).reshape(4, 3))

    def f(w: Tensor) -> Tensor:
        i = F.convert(F.reduce_sum(w, (0,)), rt.int32) % 4  # a traced index
        row = F.dynamic_slice(table, (i, 0), (1, 3))  # a view of table (recorded: i is traced)
        return w * row.reshape(3) + F.reduce_max(table, (0, 1))

    agrees(kind, f)


@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_detached_view_of_a_closed_over_array_at_a_traced_index_raises(kind: str) -> None:
    table = rt.asarray(np.arange(12.0).reshape(4, 3))

    def f(w: Tensor) -> Tensor:
        i = F.convert(F.reduce_sum(w, (0,)), rt.int32) % 4
        row = F.dynamic_slice(table, (i, 0), (1, 3))  # its memory is table's; which row, i decides
        return w * F.reduce_max(row.detach(), (0, 1))

    def g(w: Tensor) -> Tensor:
        i = F.convert(F.reduce_sum(w, (0,)), rt.int32) % 4
        return w * F.dynamic_slice(table, (i, 0), (1, 3)).reshape(3).detach()

    with pytest.raises(rt.TracedConstantError, match="holds values of"):
        run(kind, f, W())
    with pytest.raises(rt.TracedConstantError, match="holds values of"):
        run(kind, g, W())


def test_jit_of_vmap_refuses_a_detached_jit_argument_the_vmap_does_not_map() -> None:
    def f(xs: Tensor, w: Tensor) -> Tensor:
        return autodiff.vmap(lambda x, v: x * v.detach(), in_axes=(0, None))(xs, w)

    xs = rt.asarray(np.ones((2, 3)))
    w = rt.asarray(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(autodiff.vmap(lambda x, v: x * v.detach(), in_axes=(0, None))(xs, w).numpy(),
                                  np.ones((2, 3)) * w.numpy())  # fmt: skip
    with pytest.raises(rt.TracedConstantError, match="argument 1"):  # for vmap w is fixed; for jit it is not
        autodiff.jit(f)(xs, w)


def test_vmap_no_false_alarm_for_a_detached_view_of_an_unmapped_argument() -> None:
    def f(x: Tensor, w: Tensor) -> Tensor:
        return x * w.reshape(2, 1).reshape(2).detach()

    xs = rt.asarray(np.array([[1.0, 2.0], [3.0, 5.0]]))
    w = rt.asarray(np.array([0.5, -1.0]))
    got = autodiff.vmap(f, in_axes=(0, None))(xs, w).numpy()
    np.testing.assert_array_equal(got, [f(xs[0], w).numpy(), f(xs[1], w).numpy()])

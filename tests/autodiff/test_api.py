"""The autodiff API: functional transforms, the eager tape, rules coverage, derivative programs."""

from __future__ import annotations

import numpy as np
import pytest

import autodiff
import passes
import runtime as rt
from autodiff.rules import JVP_RULES, VJP_RULES, missing_rules, non_differentiable_ops
from autodiff.testing import check_grads
from runtime.core import lax as F
from runtime.core import ops


def test_every_differentiable_op_has_both_rules() -> None:
    assert missing_rules() == {"jvp": [], "vjp": []}


def test_non_differentiable_ops_are_declared_and_have_no_rules() -> None:
    declared = set(non_differentiable_ops())
    must_be = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "iota", "floor_div", "full"}
    assert must_be <= declared
    for name in declared:
        assert name not in JVP_RULES and name not in VJP_RULES, name
    assert set(JVP_RULES) == set(VJP_RULES) == set(ops.OPS) - declared


def test_jvp_vjp_grad_value_and_grad_agree_with_calculus() -> None:
    x = rt.asarray(np.array([0.3, -1.2, 2.0]))
    out, tangent = autodiff.jvp(F.sin, (x,), (rt.asarray(np.ones(3)),))
    np.testing.assert_allclose(out.numpy(), np.sin(x.numpy()))
    np.testing.assert_allclose(tangent.numpy(), np.cos(x.numpy()))
    out, vjp_fn = autodiff.vjp(lambda a, b: F.mul(a, b), x, rt.asarray(np.array([1.0, 2.0, 3.0])))
    ga, gb = vjp_fn(rt.asarray(np.ones(3)))
    np.testing.assert_allclose(ga.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(gb.numpy(), x.numpy())

    def loss(a: rt.Tensor, b: rt.Tensor) -> rt.Tensor:
        return F.reduce_sum(F.mul(F.exp(a), b), (0,))

    b = rt.asarray(np.array([1.0, 0.5, -1.0]))
    value, (da, db) = autodiff.value_and_grad(loss, argnums=(0, 1))(x, b)
    np.testing.assert_allclose(value.numpy(), np.sum(np.exp(x.numpy()) * b.numpy()))
    np.testing.assert_allclose(da.numpy(), np.exp(x.numpy()) * b.numpy())
    np.testing.assert_allclose(db.numpy(), np.exp(x.numpy()))
    np.testing.assert_allclose(autodiff.grad(loss, argnums=1)(x, b).numpy(), np.exp(x.numpy()))


def test_grad_of_complex_input_is_the_pytorch_convention() -> None:
    z = rt.asarray(np.array([1.0 + 2.0j, -0.5 + 0.25j]))

    def loss(v: rt.Tensor) -> rt.Tensor:  # |z|^2 summed: dL/dx + i dL/dy = 2z
        return F.reduce_sum(F.real(F.mul(v, F.conj(v))), (0,))

    np.testing.assert_allclose(autodiff.grad(loss)(z).numpy(), 2 * z.numpy())


def test_linearize_records_once_and_is_reused() -> None:
    calls = []

    def f(a: rt.Tensor) -> rt.Tensor:
        calls.append(1)
        return F.mul(F.sin(a), a)

    x = rt.asarray(np.array([0.5, 1.5]))
    _, f_jvp = autodiff.linearize(f, x)
    for t in (np.array([1.0, 0.0]), np.array([0.0, 2.0])):
        expected = (np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy())) * t
        np.testing.assert_allclose(f_jvp(rt.asarray(t)).numpy(), expected)
    assert len(calls) == 1


def test_grad_of_grad() -> None:
    x = rt.asarray(np.array(0.7))
    d2 = autodiff.grad(autodiff.grad(F.sin))(x)
    np.testing.assert_allclose(d2.numpy(), -np.sin(0.7))
    d3 = autodiff.grad(autodiff.grad(autodiff.grad(lambda a: F.mul(F.mul(a, a), a))))(x)
    np.testing.assert_allclose(d3.numpy(), 6.0)


def test_backward_accumulates_like_pytorch_and_inactive_leaves_get_none() -> None:
    x = rt.asarray(np.array([1.0, 2.0]), requires_grad=True)
    unused = rt.asarray(np.array([3.0]), requires_grad=True)
    c = rt.asarray(np.array([5.0, 7.0]))
    F.reduce_sum(F.mul(x, c), (0,)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 7.0])
    F.reduce_sum(F.mul(x, x), (0,)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0 + 2.0, 7.0 + 4.0])
    assert unused.grad is None and c.grad is None


def test_backward_needs_a_cotangent_for_non_scalars() -> None:
    x = rt.asarray(np.array([1.0, 2.0]), requires_grad=True)
    y = F.mul(x, 3.0)
    with pytest.raises(RuntimeError, match="cotangent"):
        y.backward()
    y.backward(cotangent=np.array([1.0, -1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, -3.0])


def test_retain_graph() -> None:
    x = rt.asarray(np.array([1.0, 2.0]), requires_grad=True)
    y = F.reduce_sum(F.sin(F.mul(x, x)), (0,))
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_no_grad_records_nothing() -> None:
    x = rt.asarray(np.array([1.0]), requires_grad=True)
    with autodiff.no_grad():
        y = F.mul(x, 2.0)
        assert not autodiff.is_recording()
    assert y.node is None and not y.requires_grad
    assert autodiff.is_recording()


def test_no_grad_and_enable_grad_nest_and_decorate() -> None:
    x = rt.asarray(np.array([1.0]), requires_grad=True)

    @autodiff.no_grad()
    def untracked(depth: int) -> rt.Tensor:
        assert not autodiff.is_recording()
        return F.mul(x, 2.0) if depth == 0 else untracked(depth - 1)  # re-entered while open

    assert untracked(2).node is None
    with autodiff.no_grad():
        with autodiff.enable_grad():
            assert F.mul(x, 2.0).node is not None
        assert F.mul(x, 2.0).node is None
    with pytest.raises(ZeroDivisionError), autodiff.no_grad():
        1 / 0  # noqa: B018  (an exception leaves the block)
    assert autodiff.is_recording() and F.mul(x, 2.0).node is not None


def test_integer_and_bool_inputs_have_no_tangent() -> None:
    i = rt.asarray(np.array([1, 2], np.int32))
    with pytest.raises(autodiff.NonDifferentiableInputError, match="int32"):
        autodiff.grad(lambda a: F.reduce_sum(F.convert(a, rt.float64), (0,)))(i)
    with pytest.raises(TypeError, match="only floating and complex"):
        rt.asarray(np.array([True]), requires_grad=True)
    with pytest.raises(autodiff.NonDifferentiableInputError):
        autodiff.jvp(lambda a: F.convert(a, rt.float32), (i,), (np.ones(2, np.int32),))
    # a vjp through an integer primal gives it no cotangent
    _, vjp_fn = autodiff.vjp(lambda a, b: F.mul(F.convert(a, rt.float64), b), i, np.ones(2))
    gi, gb = vjp_fn(np.ones(2))
    assert gi is None and gb is not None


def test_a_100000_op_chain_differentiates_without_recursion_error() -> None:
    x = rt.asarray(np.array([0.5]), requires_grad=True)
    y = x
    for _ in range(100_000):
        y = F.mul(y, 1.0)
    F.reduce_sum(y, (0,)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0])
    _, t = autodiff.jvp(lambda a: _chain(a, 20_000), (np.array([0.5]),), (np.array([2.0]),))
    np.testing.assert_array_equal(t.numpy(), [2.0])


def _chain(a: rt.Tensor, n: int) -> rt.Tensor:
    for _ in range(n):
        a = F.add(a, 0.0)
    return a


def test_derivative_programs_are_graphs_that_verify_replay_and_differentiate_again() -> None:
    def f(a: rt.Tensor) -> rt.Tensor:
        return F.mul(F.sin(a), F.exp(a))

    x = np.array([0.1, 0.4, -0.3])
    t = np.array([1.0, 0.5, 2.0])
    jvp_graph = rt.trace(lambda a, ta: autodiff.jvp(f, (a,), (ta,))[1], x, t)
    passes.verify(jvp_graph)
    assert "cos" in str(jvp_graph)
    (replayed,) = rt.evaluate(jvp_graph, rt.asarray(x), rt.asarray(t))
    expected = (np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x)) * t
    np.testing.assert_allclose(replayed.numpy(), expected, rtol=1e-12)

    vjp_graph = rt.trace(lambda a, ct: autodiff.vjp(f, a)[1](ct)[0], x, t)
    passes.verify(vjp_graph)
    (replayed,) = rt.evaluate(vjp_graph, rt.asarray(x), rt.asarray(t))
    np.testing.assert_allclose(replayed.numpy(), expected, rtol=1e-12)

    # the derivative program is differentiable again: replayed on tracked inputs,
    # the interpreter's ops record, and its own derivatives check out
    def replay(a: rt.Tensor) -> rt.Tensor:
        return rt.evaluate(jvp_graph, a, rt.asarray(t))[0]

    check_grads(replay, [x], order=1)


def test_symbolic_zero_tangents_are_never_materialised(monkeypatch: pytest.MonkeyPatch) -> None:
    x = rt.asarray(np.array([1.0, 2.0]))
    c = rt.asarray(np.array([3.0, 4.0]))
    called: list[str] = []
    real_mul = JVP_RULES["mul"]

    def exp_rule(*args, **kwargs):  # type: ignore[no-untyped-def]
        called.append("exp")
        raise AssertionError("exp's JVP ran although its input tangent is a symbolic zero")

    def mul_rule(primals, tangents, outputs, **params):  # type: ignore[no-untyped-def]
        called.append("mul")
        assert isinstance(tangents[0], autodiff.Zero), "the inactive operand's tangent must be a Zero marker"
        return real_mul(primals, tangents, outputs, **params)

    monkeypatch.setitem(JVP_RULES, "exp", exp_rule)
    monkeypatch.setitem(JVP_RULES, "mul", mul_rule)
    _, t = autodiff.jvp(lambda a, b: F.mul(F.exp(b), a), (x, c), (rt.asarray(np.ones(2)), None))
    np.testing.assert_allclose(t.numpy(), np.exp(c.numpy()))
    assert called == ["mul"]

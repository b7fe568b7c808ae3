"""The leftovers of issue 21 in the transforms: each row fails on the code before its fix.

- ``vmap`` of a custom function whose function closes over an array that the batched function
  writes through a view after the call: the batched replay (the function run again per example)
  read the new values; now it raises ``SavedValueModifiedError``, as ``grad`` does;
- ``bool`` / ``float`` / ``int`` / ``complex`` / ``.item()`` / ``.tolist()`` / ``.numpy()`` /
  ``np.asarray`` of a traced Tensor (inside ``jit``, ``vmap``, ``trace``) raise
  ``ConcretizationError`` naming the conversion, as ``jax.jit`` raises, instead of handing back
  the trace's value for every later call;
- a traced integer exponent under a policy that raises for a negative one (``numpy``) is refused
  at trace time: a replay cannot raise;
- ``Jitted.jax_function()`` and ``passes.lower_to_jax`` check what the trace captured;
- ``use_policy(policy_object)`` activates that object, also where another one is registered
  under its name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import autodiff
import runtime as rt
from passes import lower_to_jax
from runtime.core.promotion import get_policy_object

XS = np.arange(6.0).reshape(2, 3)


def _custom(kind: str, c: rt.Tensor) -> Callable[[Any], Any]:
    """``u * c`` as a ``custom_vjp`` or ``custom_jvp`` function closing over ``c``."""
    if kind == "vjp":

        @autodiff.custom_vjp
        def scale(u: Any) -> Any:
            return u * c

        scale.defvjp(lambda u: (u * c, u), lambda u, g: (g * c,))
        return scale

    @autodiff.custom_jvp
    def scale_j(u: Any) -> Any:
        return u * c

    scale_j.defjvp(lambda p, t: (p[0] * c, t[0] * c))
    return scale_j


@pytest.mark.parametrize("kind", ["vjp", "jvp"])
def test_vmap_of_a_custom_call_written_after_the_call_raises_or_agrees(kind: str) -> None:
    def f(x: Any) -> Any:
        c = rt.asarray(np.array([1.0, 2.0, 3.0]))
        v = _custom(kind, c)(x)
        w = c.reshape(-1)
        w += 10.0  # after the call: eager's v used the old c
        return v * c

    want = np.stack([f(rt.asarray(x)).numpy() for x in XS])
    try:
        got = autodiff.vmap(f)(rt.asarray(XS))
    except rt.SavedValueModifiedError as err:
        assert "written in place after" in str(err) and "scale" in str(err)
    else:
        np.testing.assert_allclose(got.numpy(), want)


@pytest.mark.parametrize("kind", ["vjp", "jvp"])
def test_vmap_of_a_custom_call_written_before_the_call_agrees(kind: str) -> None:
    """A write before the call is what eager sees too: no refusal."""

    def f(x: Any) -> Any:
        c = rt.asarray(np.array([1.0, 2.0, 3.0]))
        w = c.reshape(-1)
        w += 10.0
        return _custom(kind, c)(x)

    want = np.stack([f(rt.asarray(x)).numpy() for x in XS])
    np.testing.assert_allclose(autodiff.vmap(f)(rt.asarray(XS)).numpy(), want)


CONVERSIONS: list[tuple[str, Callable[[rt.Tensor], Any]]] = [
    ("bool", bool),
    ("float", float),
    ("int", int),
    ("complex", complex),
    ("Tensor.item", lambda t: t.item()),
    ("Tensor.tolist", lambda t: t.tolist()),
    ("Tensor.numpy", lambda t: t.numpy()),
    ("numpy.asarray", np.asarray),
]
TRANSFORMS: list[tuple[str, Callable[[Callable[[Any], Any]], Any]]] = [
    ("jit", lambda g: autodiff.jit(g)(rt.asarray(np.array([1.5])))),
    ("vmap", lambda g: autodiff.vmap(g)(rt.asarray(np.array([[1.5], [2.5]])))),
    ("trace", lambda g: rt.trace(g, rt.asarray(np.array([1.5])))),
    ("jit(grad)", lambda g: autodiff.jit(autodiff.grad(lambda t: g(t).sum()))(rt.asarray(np.array([1.5])))),
]


@pytest.mark.parametrize(("fn", "convert"), CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
@pytest.mark.parametrize(("transform", "run"), TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_concrete_value_of_a_traced_tensor_raises(
    fn: str, convert: Callable[[rt.Tensor], Any], transform: str, run: Callable[..., Any]
) -> None:
    def f(t: Any) -> Any:
        convert(t * 2.0)
        return t * 3.0

    with pytest.raises(rt.ConcretizationError) as info:
        run(f)
    message = str(info.value)
    assert message.startswith(f"{fn}:") and "float64[1]" in message and "policy 'jax'" in message, message


@pytest.mark.parametrize(("fn", "convert"), CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_concrete_value_outside_a_trace_is_the_value(fn: str, convert: Callable[[rt.Tensor], Any]) -> None:
    """Eagerly, and under ``grad`` alone (no trace: the tape runs eagerly), the conversions work."""
    x = rt.asarray(np.array([1.0]))  # (1 is every conversion's value of it: True, 1, 1.0, 1+0j, [1.0])
    assert np.asarray(convert(x)).ravel()[0] == 1

    def loss(t: Any) -> Any:
        assert np.asarray(convert(t)).ravel()[0] == 1
        return (t * t).sum()

    np.testing.assert_allclose(autodiff.grad(loss)(x).numpy(), [2.0])


def test_a_traced_integer_exponent_is_refused_where_the_policy_raises() -> None:
    x = rt.asarray(np.array([2, 3], np.int64))
    y = rt.asarray(np.array([1, 2], np.int64))
    with rt.use_policy("numpy"):
        with pytest.raises(rt.OpValueError):
            x ** rt.asarray(np.array([-1, 2], np.int64))  # eager NumPy raises
        with pytest.raises(rt.ConcretizationError, match=r"^pow: a traced integer exponent"):
            autodiff.jit(lambda a, b: a**b)(x, y)
        # a float base, and a Python int exponent (part of the trace), still work
        np.testing.assert_array_equal(autodiff.jit(lambda a: a**2)(x).numpy(), [4, 9])
    for policy in ("jax", "torch"):  # these give the truncated value, eagerly as replayed
        with rt.use_policy(policy):
            f = autodiff.jit(lambda a, b: a**b)
            assert f(x, y).numpy().tolist() == [2, 9]
            neg = rt.asarray(np.array([-1, 2], np.int64))
            assert f(x, neg).numpy().tolist() == (x**neg).numpy().tolist() == [0, 9]


def test_jax_function_and_lower_to_jax_check_the_capture() -> None:
    x = rt.asarray(np.array([1.0, 2.0, 3.0]))
    c = rt.asarray(np.array([1.0, 2.0, 3.0]))
    jitted = autodiff.jit(lambda t: t * c)
    jax_fn = jitted.jax_function(x)
    lowered = lower_to_jax(rt.trace(lambda t: t * c, x))
    with jax.enable_x64(True):  # (a float64 program: jax_function's contract)
        np.testing.assert_allclose(np.asarray(jax_fn(x.numpy())[0]), [1.0, 4.0, 9.0])
    np.testing.assert_allclose(np.asarray(lowered(x.numpy())[0]), [1.0, 4.0, 9.0])
    graph = rt.trace(lambda t: t * c, x)
    view = c.reshape(3, 1)
    view += 10.0
    with jax.enable_x64(True), pytest.raises(rt.SavedValueModifiedError, match=r"^autodiff.jit\(<lambda>\)"):
        jax_fn(x.numpy())
    with pytest.raises(rt.SavedValueModifiedError, match=r"^lower_to_jax"):
        lowered(x.numpy())
    with pytest.raises(rt.SavedValueModifiedError, match=r"^lower_to_jax"):
        lower_to_jax(graph)


class _Narrowing:
    """Mixin: two different float dtypes promote to the narrower one."""

    def promote_types(self, a: rt.DType, b: rt.DType) -> rt.DType:
        if a is not b and a.kind == "float" and b.kind == "float":
            return a if a.bits <= b.bits else b
        return super().promote_types(a, b)  # type: ignore[misc, no-any-return]


def test_use_policy_activates_the_object() -> None:
    registered = get_policy_object("jax")
    narrowing = type("NarrowingJax", (_Narrowing, type(registered)), {})()
    a = rt.asarray(np.float32([1.0]))
    b = rt.asarray(np.float64([2.0]))
    product = autodiff.jit(lambda p, q: p * q)
    assert (a * b).dtype is rt.float64 and product(a, b).dtype is rt.float64
    with rt.use_policy(narrowing) as active:
        assert active is narrowing and get_policy_object() is narrowing
        assert rt.get_policy() == "jax"  # its name, in messages
        assert (a * b).dtype is rt.float32  # not the registered jax policy's float64
        assert product(a, b).dtype is rt.float32  # jit's cache is keyed by the object
    assert get_policy_object("jax") is registered  # nothing was registered
    assert (a * b).dtype is rt.float64 and product(a, b).dtype is rt.float64
    with rt.use_policy(registered):
        assert (a * b).dtype is rt.float64


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_einsum_diagonal_is_new_memory_whatever_the_layout(layout: str) -> None:
    x = rt.asarray(np.arange(9.0).reshape(3, 3))
    operand = x if layout == "contiguous" else x.T
    d = rt.einsum("ii->i", operand)
    np.testing.assert_array_equal(d.numpy(), np.einsum("ii->i", operand.numpy()))
    x += 1.0
    np.testing.assert_array_equal(d.numpy(), [0.0, 4.0, 8.0])  # the write into x does not show in d


@pytest.mark.parametrize("subscripts", ["ij->ij", "ij->ji", "ii->i", "ij->i", "ij"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_one_operand_einsum_never_shares_memory(subscripts: str, layout: str) -> None:
    """Identity, transpose, diagonal, sum: NumPy's values, and new memory both ways (a write into
    the operand does not show in the result, nor one into the result in the operand)."""
    x = rt.asarray(np.arange(9.0).reshape(3, 3))
    operand = x if layout == "contiguous" else x.T
    before = operand.numpy().copy()
    out = rt.einsum(subscripts, operand)
    expected = np.einsum(subscripts, before)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert not np.shares_memory(out.numpy(), x.numpy())
    x += 1.0
    np.testing.assert_array_equal(out.numpy(), expected)
    if out.ndim:
        out += 100.0
        np.testing.assert_array_equal(operand.numpy(), before + 1.0)

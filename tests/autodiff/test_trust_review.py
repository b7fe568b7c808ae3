"""An adversarial review of what castwise computes: ways to get a wrong number without an error.

Each test is a program a user testing an autodiff system could write, checked
against the same computation in JAX (x64) or against an exact value. They
cover perturbation confusion in nested transforms (a closure over an outer
tracked value, the outer value passed as the inner argument) and gradients
that alias each other or the user's cotangent, so that an in-place write into
one silently changes another.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests.autodiff.rule_helpers import x64  # noqa: E402


def S(t: Tensor) -> Tensor:
    return F.reduce_sum(t, tuple(range(t.ndim)))


def close(got: Any, want: Any) -> None:
    # (a Tensor's storage is read directly: a 0-d result's storage is checked on its own below)
    got = got.numpy() if isinstance(got, Tensor) else got
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


# -- perturbation confusion: nested transforms compared with JAX ------------------------------


def test_inner_grad_of_a_closure_over_the_outer_argument() -> None:
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x: the inner gradient is x, a function of x
    def ours(x: Tensor) -> Tensor:
        g = autodiff.grad(lambda y: S(x * y))(rt.asarray(1.0))
        return S(x * g)

    with x64():
        want = jax.grad(lambda x: x * jax.grad(lambda y: x * y)(1.0))(3.0)
    close(autodiff.grad(ours)(rt.asarray(3.0)), want)


def test_inner_grad_at_the_outer_argument_is_a_new_perturbation() -> None:
    # grad_y (y * x) at y = x is x; its derivative in x is 1 (not 2: y and x are different variables)
    def ours(x: Tensor) -> Tensor:
        return S(autodiff.grad(lambda y: S(y * x))(x))

    with x64():
        want = jax.grad(lambda x: jax.grad(lambda y: y * x)(x))(3.0)
    close(autodiff.grad(ours)(rt.asarray(3.0)), want)


def test_grad_of_grad_with_a_closure_and_the_same_argument() -> None:
    def ours(x: Tensor) -> Tensor:
        return S(autodiff.grad(lambda y: S(y**3 * x))(x))

    with x64():
        want = jax.grad(lambda x: jax.grad(lambda y: y**3 * x)(x))(2.0)
    close(autodiff.grad(ours)(rt.asarray(2.0)), want)


def test_grad_at_a_tracked_leaf_that_the_function_also_closes_over() -> None:
    # grad_a sum(a * w) at a = w is w (JAX: the argument is a new variable), not 2w
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    close(autodiff.grad(lambda a: S(a * w))(w), [1.0, 2.0])


def test_jvp_inside_grad_with_a_closure_over_the_outer_argument() -> None:
    # d/dx [jvp_y (x * sin(y)) at y = 0.5 along 1] = d/dx [x cos(0.5)] = cos(0.5)... times x: x * cos
    def ours(x: Tensor) -> Tensor:
        _, t = autodiff.jvp(lambda y: x * x * F.sin(y), (rt.asarray(0.5),), (rt.asarray(1.0),))
        return S(t)

    def theirs(x: Any) -> Any:
        return jax.jvp(lambda y: x * x * jnp.sin(y), (0.5,), (1.0,))[1]

    with x64():
        want = jax.grad(theirs)(1.5)
    close(autodiff.grad(ours)(rt.asarray(1.5)), want)


def test_hessian_of_a_function_with_an_inner_grad_over_a_closure() -> None:
    def ours(x: Tensor) -> Tensor:
        g = autodiff.grad(lambda y: S(F.sin(x * y)))(rt.asarray(0.7))
        return S(g * x)

    def theirs(x: Any) -> Any:
        return jnp.sum(jax.grad(lambda y: jnp.sum(jnp.sin(x * y)))(0.7) * x)

    x = np.array([0.3, -1.2])
    with x64():
        want = jax.hessian(theirs)(jnp.asarray(x))
    close(autodiff.hessian(ours)(rt.asarray(x)), want)


def test_inner_grad_after_the_outer_recording_was_released() -> None:
    # the inner transform must not walk into (and trip over) an outer recording it does not depend on
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    h = w * 2.0
    S(h).backward()  # releases mul's saved values
    got = autodiff.grad(lambda y: S(y * h))(rt.asarray([1.0, 1.0]))
    close(got, [2.0, 4.0])


# -- gradients that alias each other or the user's arrays ---------------------------------------


def test_grads_of_two_leaves_are_independent_arrays() -> None:
    a = rt.asarray([1.0, 2.0], requires_grad=True)
    b = rt.asarray([3.0, 4.0], requires_grad=True)
    S(a + b).backward()
    a.grad += 1  # an in-place edit of one gradient (gradient clipping, zeroing, ...)
    close(b.grad, [1.0, 1.0])
    close(a.grad, [2.0, 2.0])


def test_grad_does_not_alias_the_users_cotangent() -> None:
    x = rt.asarray([1.0, 2.0, 3.0], requires_grad=True)
    g = rt.asarray(np.ones((3, 1)))
    x.reshape(3, 1).backward(g)
    g += 1  # the user reuses their cotangent buffer
    close(x.grad, [1.0, 1.0, 1.0])


def test_grad_of_a_sum_is_writable_and_dense() -> None:
    # reduce_sum's VJP broadcasts: the .grad a user gets must be an ordinary array they may edit
    x = rt.asarray([1.0, 2.0, 3.0], requires_grad=True)
    S(x).backward()
    x.grad *= 2.0
    close(x.grad, [2.0, 2.0, 2.0])


def test_vjp_results_for_two_arguments_are_independent() -> None:
    _, f_vjp = autodiff.vjp(lambda a, b: a + b, rt.asarray([1.0, 2.0]), rt.asarray([3.0, 4.0]))
    ga, gb = f_vjp(rt.asarray([1.0, 1.0]))
    ga += 1
    close(gb, [1.0, 1.0])


def test_vjp_result_does_not_alias_the_cotangent() -> None:
    _, f_vjp = autodiff.vjp(lambda x: x.reshape(3), rt.asarray([[1.0, 2.0, 3.0]]))
    ct = rt.asarray([1.0, 1.0, 1.0])
    (g,) = f_vjp(ct)
    ct += 1
    close(g, [[1.0, 1.0, 1.0]])


def test_grad_of_the_same_tensor_at_two_argnums_are_independent() -> None:
    x = rt.asarray([2.0, 3.0])
    ga, gb = autodiff.grad(lambda a, b: S(a + b), argnums=(0, 1))(x, x)
    ga += 1
    close(gb, [1.0, 1.0])


def test_jvp_tangent_does_not_alias_the_input_tangent() -> None:
    t = rt.asarray([1.0, 1.0])
    _, out = autodiff.jvp(lambda x: x, (rt.asarray([1.0, 2.0]),), (t,))
    t += 1
    close(out, [1.0, 1.0])


# -- custom rules inside nested transforms ------------------------------------------------------


@autodiff.custom_vjp
def _cv_mul(x: Tensor, y: Tensor) -> Tensor:
    return x * y


def _cv_mul_fwd(x: Tensor, y: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    return x * y, (x, y)


def _cv_mul_bwd(res: tuple[Tensor, Tensor], g: Tensor) -> tuple[Tensor, Tensor]:
    x, y = res
    return g * y, g * x


_cv_mul.defvjp(_cv_mul_fwd, _cv_mul_bwd)


@autodiff.custom_jvp
def _cj_softplus(x: Tensor) -> Tensor:
    return F.log1p(F.exp(x))


@_cj_softplus.defjvp
def _cj_softplus_jvp(primals: tuple[Tensor], tangents: tuple[Tensor]) -> tuple[Tensor, Tensor]:
    (x,), (t,) = primals, tangents
    return _cj_softplus(x), t / (1.0 + F.exp(-x))


def _jax_rules() -> tuple[Any, Any]:
    @jax.custom_vjp
    def mul(x: Any, y: Any) -> Any:
        return x * y

    mul.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))

    @jax.custom_jvp
    def softplus(x: Any) -> Any:
        return jnp.log1p(jnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1.0 + jnp.exp(-p[0]))))
    return mul, softplus


def test_custom_vjp_inside_an_inner_grad_that_closes_over_the_outer_argument() -> None:
    jmul, _ = _jax_rules()

    def ours(x: Tensor) -> Tensor:
        return S(x * autodiff.grad(lambda y: S(_cv_mul(x, y)))(rt.asarray(1.0)))

    with x64():
        want = jax.grad(lambda x: x * jax.grad(lambda y: jmul(x, y))(1.0))(3.0)
    close(autodiff.grad(ours)(rt.asarray(3.0)), want)


def test_custom_jvp_inside_an_inner_grad_that_closes_over_the_outer_argument() -> None:
    _, jsoftplus = _jax_rules()

    def ours(x: Tensor) -> Tensor:
        return S(autodiff.grad(lambda y: S(_cj_softplus(y * x)))(rt.asarray(1.0)))

    with x64():
        want = jax.grad(lambda x: jax.grad(lambda y: jsoftplus(y * x))(1.0))(0.3)
    close(autodiff.grad(ours)(rt.asarray(0.3)), want)


# -- repeated backward ----------------------------------------------------------------------------


def test_backward_of_a_gradient_made_with_create_graph() -> None:
    # PyTorch: create_graph implies retain_graph, so the recorded gradient can be differentiated
    x = rt.asarray(3.0, requires_grad=True)
    (x * x * x).backward(create_graph=True)
    g = x.grad
    assert g is not None
    close(g, 27.0)
    x.grad = None
    g.backward()
    close(x.grad, 18.0)


def test_the_value_of_value_and_grad_is_a_plain_value() -> None:
    # as JAX's: untracked, so the user may edit it in place (it is not part of any recording they made)
    x = rt.asarray([1.0, 2.0])
    value, g = autodiff.value_and_grad(lambda x: S(x * x))(x)
    assert value.node is None and not value.requires_grad
    value += 1.0
    close(value, 6.0)
    close(g, [2.0, 4.0])
    out, tangent = autodiff.jvp(lambda x: F.sin(x), (x,), (rt.asarray([1.0, 0.0]),))
    assert out.node is None
    close(tangent, [np.cos(1.0), 0.0])


# -- nested transforms under jit -------------------------------------------------------------------


def test_jit_of_an_inner_grad_that_closes_over_the_argument_is_not_baked_in() -> None:
    # the inner gradient 2 x y at y = 1 depends on the jitted argument: each call recomputes it
    f = autodiff.jit(lambda x: autodiff.grad(lambda y: S(x * y * y))(rt.asarray(1.0)))
    for v in (3.0, 5.0):
        close(f(rt.asarray(v)), 2 * v)


def test_jit_of_grad_of_a_nested_grad_matches_jax() -> None:
    def ours(x: Tensor) -> Tensor:
        return S(x * autodiff.grad(lambda y: S(x * y * y))(rt.asarray(1.0)))

    with x64():
        jitted = jax.jit(jax.grad(lambda x: x * jax.grad(lambda y: x * y * y)(1.0)))
        want = [jitted(v) for v in (3.0, -2.0)]
    f = autodiff.jit(autodiff.grad(ours))
    for v, w in zip((3.0, -2.0), want, strict=True):
        close(f(rt.asarray(v)), w)


# -- custom functions that close over a value being differentiated ------------------------------


def _closing_vjp(a: Tensor) -> Any:
    @autodiff.custom_vjp
    def g(x: Tensor) -> Tensor:
        return x * a

    g.defvjp(lambda x: (x * a, None), lambda res, ct: (ct * a,))
    return g


def _closing_jvp(a: Tensor) -> Any:
    @autodiff.custom_jvp
    def g(x: Tensor) -> Tensor:
        return x * a

    g.defjvp(lambda p, t: (g(p[0]), t[0] * a))
    return g


@pytest.mark.parametrize("make", [_closing_vjp, _closing_jvp], ids=["custom_vjp", "custom_jvp"])
def test_a_custom_function_closing_over_the_differentiated_value_raises(make: Any) -> None:
    # d/da g(a) with g(x) = x * a is 2a, but the recorded call only sees x: it gave a (3, not 6)
    # silently. JAX raises too (UnexpectedTracerError).
    with pytest.raises(autodiff.custom.CustomClosureError, match="closes over"):
        autodiff.grad(lambda a: S(make(a)(a)))(rt.asarray(3.0))


@pytest.mark.parametrize("make", [_closing_vjp, _closing_jvp], ids=["custom_vjp", "custom_jvp"])
def test_a_custom_function_closing_over_a_tracked_leaf_raises_on_the_tape(make: Any) -> None:
    w = rt.asarray(2.0, requires_grad=True)
    x = rt.asarray(3.0, requires_grad=True)
    with pytest.raises(autodiff.custom.CustomClosureError):
        make(w)(x)  # w.grad would silently miss x through the closure


def test_a_custom_function_under_jit_closing_over_a_traced_value_raises() -> None:
    # the compiled call would replay the value traced first, whatever later calls pass
    def f(a: Tensor) -> Tensor:
        return _closing_jvp(a)(a * 1.0)

    with pytest.raises(autodiff.custom.CustomClosureError):
        autodiff.jit(f)(rt.asarray(3.0))


def test_custom_functions_that_close_over_untracked_values_still_work() -> None:
    c = rt.asarray(3.0)
    g = _closing_vjp(c)
    close(autodiff.grad(lambda x: S(g(x)))(rt.asarray(2.0)), 3.0)
    h = _closing_jvp(c)
    close(autodiff.grad(lambda x: S(autodiff.grad(lambda y: S(h(y) * y))(x)))(rt.asarray(2.0)), 6.0)


# -- argnums ------------------------------------------------------------------------------------


def test_grad_with_a_repeated_argnum_gives_that_gradient_twice() -> None:
    # a repeated argnum gave (0, 3): the first copy was overwritten by the second. (JAX's own
    # grad fails on a repeated argnum; d(ab)/da = b = 3 for each entry.)
    got = autodiff.grad(lambda a, b: S(a * b), argnums=(0, 0))(rt.asarray(2.0), rt.asarray(3.0))
    assert len(got) == 2
    close(got[0], 3.0)
    close(got[1], 3.0)
    first = got[0]
    first += 1  # each is the user's own array
    close(got[1], 3.0)


@pytest.mark.parametrize("jac", [autodiff.jacfwd, autodiff.jacrev], ids=["jacfwd", "jacrev"])
def test_a_jacobian_with_a_repeated_argnum_is_refused_not_zero(jac: Any) -> None:
    with pytest.raises(ValueError, match="repeats"):
        jac(lambda a, b: a * b, argnums=(0, 0))(rt.asarray([2.0]), rt.asarray([3.0]))


def test_forward_over_forward_with_a_closure_matches_jax() -> None:
    one = rt.asarray(1.0)

    def ours(x: Tensor) -> Tensor:
        return autodiff.jvp(lambda y: x * y * y, (x,), (one,))[1]

    with x64():
        want = jax.jvp(lambda x: jax.jvp(lambda y: x * y * y, (x,), (1.0,))[1], (3.0,), (1.0,))[1]
    close(autodiff.jvp(ours, (rt.asarray(3.0),), (one,))[1], want)


def test_the_tape_sees_through_an_inner_grad_that_closes_over_a_tracked_leaf() -> None:
    # grad_x sum(x * w * w) = w * w; its backward into w is 2 w
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    g = autodiff.grad(lambda x: S(x * w * w))(rt.asarray([1.0, 1.0]))
    S(g).backward()
    close(w.grad, [2.0, 4.0])


@pytest.mark.parametrize("inner_at_x", [False, True], ids=["inner-at-const", "inner-at-x"])
@pytest.mark.parametrize("outer", ["grad", "jvp"])
@pytest.mark.parametrize("inner", ["grad", "jvp"])
@pytest.mark.parametrize("powers", [(1, 1, 2), (2, 3, 1), (0, 2, 3)], ids=str)
def test_nested_transforms_with_closures_match_jax(
    inner_at_x: bool, outer: str, inner: str, powers: tuple[int, int, int]
) -> None:
    """f(x) = x**a * D_y[x**b * y**c](y0) with y0 = x or 0.7: every combination of grad and
    jvp, outer and inner, against JAX (perturbation confusion shows as a wrong number)."""
    a, b, c = powers

    def ours(x: Tensor) -> Tensor:
        y0 = x if inner_at_x else rt.asarray(0.7)
        h = lambda y: S(x**b * y**c)  # noqa: E731
        if inner == "grad":
            d = autodiff.grad(h)(y0)
        else:
            d = autodiff.jvp(h, (y0,), (rt.asarray(1.0),))[1]
        return S(x**a * d)

    def theirs(x: Any) -> Any:
        y0 = x if inner_at_x else 0.7
        h = lambda y: x**b * y**c  # noqa: E731
        d = jax.grad(h)(y0) if inner == "grad" else jax.jvp(h, (y0,), (1.0,))[1]
        return x**a * d

    x = 1.3
    with x64():
        want = jax.grad(theirs)(x) if outer == "grad" else jax.jvp(theirs, (x,), (1.0,))[1]
    if outer == "grad":
        got = autodiff.grad(ours)(rt.asarray(x))
    else:
        got = autodiff.jvp(ours, (rt.asarray(x),), (rt.asarray(1.0),))[1]
    close(got, want)

"""The special functions' derivative rules where they need more than test_rules_elementwise.py's
table: igamma / igammac in ``a`` (first order only, as in JAX), the derivatives JAX refuses, the
limits the rules write out (bessel_i1e at 0), and points on every branch of each expansion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.derivatives.special import NoDerivativeError  # noqa: E402
from autodiff.testing import check_grads  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from tests.autodiff.rule_helpers import x64  # noqa: E402

REAL = (rt.float32, rt.float64)
#: check_grads' and the parity's tolerances per dtype (JAX's check_grads defaults: f32 2e-3 / 1e-2 with
#: order 2, f64 1e-5; the JAX comparison within a few ulps of the dtype times the derivative's size)
JAX_RTOL = {rt.float32: 2e-5, rt.float64: 1e-12}


def _jax_jvp_vjp(fn: Callable[..., Any], args: list[np.ndarray], tangents: list[np.ndarray], ct: np.ndarray) -> Any:
    with x64():
        _, t = jax.jvp(fn, tuple(jnp.asarray(a) for a in args), tuple(jnp.asarray(t) for t in tangents))
        _, vjp_fn = jax.vjp(fn, *(jnp.asarray(a) for a in args))
        return np.asarray(t), [np.asarray(g) for g in vjp_fn(jnp.asarray(ct))]


def _ours_jvp_vjp(fn: Callable[..., Any], args: list[np.ndarray], tangents: list[np.ndarray], ct: np.ndarray) -> Any:
    _, t = autodiff.jvp(fn, [rt.asarray(a) for a in args], [rt.asarray(t) for t in tangents])
    _, vjp_fn = autodiff.vjp(fn, *(rt.asarray(a) for a in args))
    gs = vjp_fn(rt.asarray(ct))
    return t.numpy(), [g.numpy() for g in (gs if isinstance(gs, tuple | list) else [gs])]


def _compare(ours: Callable[..., Any], theirs: Callable[..., Any], args: list[np.ndarray], d: rt.DType) -> None:
    rng = np.random.default_rng(0)
    tangents = [rng.standard_normal(a.shape).astype(d.storage) for a in args]
    ct = rng.standard_normal(args[0].shape).astype(d.storage)
    want_t, want_g = _jax_jvp_vjp(theirs, args, tangents, ct)
    got_t, got_g = _ours_jvp_vjp(ours, args, tangents, ct)
    tol = JAX_RTOL[d]
    np.testing.assert_allclose(got_t, want_t, rtol=tol, atol=tol * np.max(np.abs(want_t)))
    for g, w in zip(got_g, want_g, strict=True):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.max(np.abs(w)))


# -- igamma / igammac in a: first order (igamma_grad_a has no derivative, in JAX neither) --------------

#: (a, x) on both of the expansions: the series (x < 1 or x <= a) and the continued fraction
_A = np.array([0.7, 2.5, 1.3, 4.0, 0.4])
_X = np.array([0.3, 1.7, 3.9, 6.5, 2.2])


@pytest.mark.parametrize("d", REAL, ids=lambda d: d.short)
@pytest.mark.parametrize(
    ("ours", "theirs"), [(F.igamma, lax.igamma), (F.igammac, lax.igammac)], ids=["igamma", "igammac"]
)
def test_igamma_family_in_both_operands_first_order(ours: Any, theirs: Any, d: rt.DType) -> None:
    args = [_A.astype(d.storage), _X.astype(d.storage)]
    check_grads(ours, [rt.asarray(a) for a in args], order=1, modes=("fwd", "rev"))
    _compare(ours, theirs, args, d)


def test_igamma_second_derivative_in_a_is_zero_where_jax_raises() -> None:
    """igamma_grad_a is recorded as non-differentiable (the documented departure)."""
    a, x = rt.asarray(np.array([2.5])), rt.asarray(np.array([1.7]))

    def d_da(a_: Any) -> Any:
        return autodiff.jvp(lambda s: F.igamma(s, x), [a_], [rt.asarray(np.ones(1))])[1]

    _, t2 = autodiff.jvp(d_da, [a], [rt.asarray(np.ones(1))])
    assert not np.any(t2.numpy())
    with x64(), pytest.raises(NotImplementedError):
        jax.jvp(lambda s: jax.jvp(lambda u: lax.igamma(u, jnp.array([1.7])), (s,), (jnp.ones(1),))[1],
                (jnp.array([2.5]),), (jnp.ones(1),))  # fmt: skip


def test_igamma_grad_a_is_the_derivative_in_a() -> None:
    a, x = np.array([0.7, 2.5, 4.0]), np.array([0.3, 1.7, 6.5])
    h = 1e-6
    fd = (F.igamma(a + h, x).numpy() - F.igamma(a - h, x).numpy()) / (2 * h)
    np.testing.assert_allclose(F.igamma_grad_a(a, x).numpy(), fd, rtol=1e-7)


# -- derivatives JAX refuses ----------------------------------------------------------------------------


def test_polygamma_has_no_derivative_in_m_as_in_jax() -> None:
    m, x = rt.asarray(np.array([1.0, 2.0])), rt.asarray(np.array([0.5, 1.5]))
    with pytest.raises(NoDerivativeError, match="polygamma.*m"):
        autodiff.jvp(lambda m_: F.polygamma(m_, x), [m], [rt.asarray(np.ones(2))])
    with pytest.raises(NoDerivativeError, match="polygamma.*m"):
        autodiff.vjp(lambda m_: F.polygamma(m_, x), m)[1](rt.asarray(np.ones(2)))
    with x64(), pytest.raises(ValueError, match="polygamma gradient with respect to m"):
        jax.jvp(lambda m_: lax.polygamma(m_, jnp.array([0.5, 1.5])), (jnp.array([1.0, 2.0]),), (jnp.ones(2),))


def test_zeta_and_igamma_grad_a_carry_no_tangent() -> None:
    for op in ("zeta", "igamma_grad_a"):
        assert not rt.ops.get(op).differentiable


# -- limits and branches --------------------------------------------------------------------------------


@pytest.mark.parametrize("d", REAL, ids=lambda d: d.short)
def test_bessel_i1e_derivative_at_zero_is_one_half(d: rt.DType) -> None:
    x = np.array([0.0, -0.0, 1e-30]).astype(d.storage)
    _, t = autodiff.jvp(F.bessel_i1e, [rt.asarray(x)], [rt.asarray(np.ones(3, d.storage))])
    with x64():
        _, want = jax.jvp(lax.bessel_i1e, (jnp.asarray(x),), (jnp.ones(3, d.storage),))
    np.testing.assert_array_equal(t.numpy(), np.asarray(want))
    np.testing.assert_array_equal(t.numpy(), 0.5)


#: each op on every branch of its expansion (reflection, near/far series, the erfc and erf_inv regions)
BRANCHES: list[tuple[str, Callable[..., Any], Callable[..., Any], list[float]]] = [
    ("erf", F.erf, lax.erf, [-4.5, -0.3, 0.2, 1.7, 3.0]),
    ("erfc", F.erfc, lax.erfc, [-2.5, -0.4, 0.6, 1.5, 2.7, 5.0]),
    ("erf_inv", F.erf_inv, lax.erf_inv, [-0.999, -0.6, 0.1, 0.95, 0.99999]),
    ("lgamma", F.lgamma, lax.lgamma, [-3.7, -0.4, 0.3, 1.5, 12.0]),
    ("digamma", F.digamma, lax.digamma, [-3.7, -0.4, 0.3, 1.5, 12.0]),
    ("bessel_i0e", F.bessel_i0e, lax.bessel_i0e, [-12.0, -3.0, 0.4, 7.9, 20.0]),
    ("bessel_i1e", F.bessel_i1e, lax.bessel_i1e, [-12.0, -3.0, 0.4, 7.9, 20.0]),
    ("trigamma", lambda x: F.polygamma(1.0, x), lambda x: lax.polygamma(jnp.ones_like(x), x), [-2.5, 0.3, 4.0]),
]


@pytest.mark.parametrize("d", REAL, ids=lambda d: d.short)
@pytest.mark.parametrize(("name", "ours", "theirs", "xs"), BRANCHES, ids=[b[0] for b in BRANCHES])
def test_every_branch_against_jax_and_check_grads(
    name: str, ours: Any, theirs: Any, xs: list[float], d: rt.DType
) -> None:
    x = np.asarray(xs).astype(d.storage)
    _compare(ours, theirs, [x], d)
    if d is rt.float64:  # finite differences in float32 are too coarse next to a pole
        # (and too coarse for erf_inv's tail, whose third derivative grows like 1/(1 - x)**3)
        fd = x[np.abs(x) < 0.99] if name == "erf_inv" else x
        check_grads(ours, [rt.asarray(fd)], order=2, modes=("fwd", "rev"))

"""JAX's weak types through the transforms (issue 23, item 1): a Python float (or a weak array)
given to ``jvp``, ``vjp``, ``grad`` or ``vmap`` keeps its weak flag in every result the JAX
transform leaves weak (tangents, cotangents, batched outputs), so a later ``+ f16`` stays float16.

Oracle: the same function under ``jax.jvp`` / ``jax.vjp`` / ``jax.grad`` / ``jax.vmap``, written
with ``jax.lax`` ops where castwise's op is lax's (no jax.numpy conversions in between), compared
on each result's dtype and weak flag.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import lax as jlax  # noqa: E402
from jax._src.dtypes import is_weakly_typed  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from runtime.core import lax  # noqa: E402

#: (name, castwise function, JAX function): one-argument functions of a scalar or an array
FUNCTIONS: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = [
    ("identity", lambda a: a, lambda a: a),
    ("times-python-float", lambda a: a * 2.0, lambda a: a * 2.0),
    ("lax-mul-self", lambda a: lax.mul(a, a), lambda a: jlax.mul(a, a)),
    ("lax-sin", lax.sin, jlax.sin),
    ("neg", lambda a: -a, lambda a: jlax.neg(a)),
    ("exp-times-float", lambda a: lax.exp(a) * 3.0, lambda a: jlax.exp(a) * 3.0),
    ("reshape", lambda a: lax.reshape(a, (1,)) * 1.5, lambda a: jlax.reshape(a, (1,)) * 1.5),
    # a strong operand of the same dtype (lax.mul: no convert of the weak operand in between)
    ("times-strong", lambda a: a * rt.asarray(np.asarray(2.0, a.dtype.storage)),
     lambda a: jlax.mul(a, jlax.convert_element_type(2.0, a.dtype))),
    ("to-float16", lambda a: a * rt.asarray(np.ones((), np.float16)),
     lambda a: a * jnp.ones((), jnp.float16)),
]  # fmt: skip

#: (name, castwise primal, JAX primal)
PRIMALS: list[tuple[str, Any, Any]] = [
    ("python-float", 1.5, 1.5),
    ("weak-0d", rt.asarray(1.5), jnp.asarray(1.5)),
    ("strong-f64", rt.asarray(np.float64(1.5)), jnp.float64(1.5)),
    ("strong-f32", rt.asarray(np.float32(1.5)), jnp.float32(1.5)),
]


def _aval(x: Any) -> tuple[str, bool]:
    """dtype name and weak flag of a castwise or JAX result (a Python float is weak float64)."""
    if isinstance(x, rt.Tensor):
        return x.dtype.name, x.weak
    if isinstance(x, float):
        return "float64", True
    return np.dtype(x.dtype).name, bool(is_weakly_typed(x))


def _like(primal_ours: Any, primal_theirs: Any) -> tuple[Any, Any]:
    """A tangent for each side with the primal's dtype and weak flag (a Python float for one)."""
    if isinstance(primal_ours, float):
        return 1.0, 1.0
    t = rt.asarray(np.ones((), primal_ours.dtype.storage))
    t.weak = primal_ours.weak
    return t, jnp.ones((), primal_theirs.dtype) if not primal_ours.weak else jnp.asarray(1.0)


CASES = [(f, p) for f in FUNCTIONS for p in PRIMALS]
IDS = [f"{f[0]}-{p[0]}" for f, p in CASES]


@pytest.mark.parametrize(("fn", "primal"), CASES, ids=IDS)
def test_jvp_tangent_weak_flag_is_jaxs(fn: Any, primal: Any) -> None:
    _, ours_f, theirs_f = fn
    _, ours_x, theirs_x = primal
    t_ours, t_theirs = _like(ours_x, theirs_x)
    p_ours, tan_ours = autodiff.jvp(ours_f, (ours_x,), (t_ours,))
    p_theirs, tan_theirs = jax.jvp(theirs_f, (theirs_x,), (t_theirs,))
    assert _aval(p_ours) == _aval(p_theirs)
    assert _aval(tan_ours) == _aval(tan_theirs)


@pytest.mark.parametrize(("fn", "primal"), CASES, ids=IDS)
def test_grad_weak_flag_is_jaxs(fn: Any, primal: Any) -> None:
    _, ours_f, theirs_f = fn
    _, ours_x, theirs_x = primal

    g_ours = autodiff.grad(lambda a: lax.reduce_sum(ours_f(a), tuple(range(len(np.shape(ours_f(a)))))))(ours_x)
    g_theirs = jax.grad(lambda a: jlax.reduce_sum(theirs_f(a), tuple(range(jnp.ndim(theirs_f(a))))))(theirs_x)
    assert _aval(g_ours) == _aval(g_theirs)
    # the issue's symptom: a later float16 operand decides the dtype only when the gradient is weak
    f16 = np.ones(2, np.float16)
    assert (g_ours + rt.asarray(f16)).dtype.name == np.dtype((jnp.asarray(g_theirs) + jnp.asarray(f16)).dtype).name


@pytest.mark.parametrize(("fn", "primal"), CASES, ids=IDS)
def test_vjp_with_the_outputs_own_cotangent_is_jaxs(fn: Any, primal: Any) -> None:
    _, ours_f, theirs_f = fn
    _, ours_x, theirs_x = primal
    out_ours, vjp_ours = autodiff.vjp(ours_f, ours_x)
    out_theirs, vjp_theirs = jax.vjp(theirs_f, theirs_x)
    assert _aval(out_ours)[0] == _aval(out_theirs)[0]
    ct = rt.asarray(np.ones(out_ours.shape, out_ours.dtype.storage))
    ct.weak = out_ours.weak
    dtype, weak = _aval(out_theirs)
    ct_theirs = jnp.full(jnp.shape(out_theirs), 1.0) if weak else jnp.ones(jnp.shape(out_theirs), dtype)
    (g_ours,) = vjp_ours(ct)
    (g_theirs,) = vjp_theirs(ct_theirs)
    assert _aval(g_ours) == _aval(g_theirs)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
@pytest.mark.parametrize("weak", [True, False])
def test_vmap_keeps_a_weak_batch_weak(fn: Any, weak: bool) -> None:
    _, ours_f, theirs_f = fn
    ours_x = lax.full((3,), 1.5) if weak else rt.asarray(np.full(3, 1.5))
    theirs_x = jnp.full((3,), 1.5) if weak else jnp.asarray(np.full(3, 1.5))
    assert ours_x.weak == bool(is_weakly_typed(theirs_x))
    assert _aval(autodiff.vmap(ours_f)(ours_x)) == _aval(jax.vmap(theirs_f)(theirs_x))


@pytest.mark.parametrize("scalar", [2.0, 3])
def test_vmap_of_an_unmapped_python_scalar(scalar: float) -> None:
    """An unmapped Python scalar is weak inside ``vmap``, as in ``jax.vmap(..., in_axes=(0, None))``."""
    for dtype in ("float16", "float32"):
        got = autodiff.vmap(lambda a, b: a * b, in_axes=(0, None))(rt.asarray(np.ones(3, dtype)), scalar)
        want = jax.vmap(lambda a, b: a * b, in_axes=(0, None))(jnp.ones(3, dtype), scalar)
        assert _aval(got) == _aval(want)


def test_the_issue_example() -> None:
    """``jvp`` of ``a * 2.0`` at a Python float: primal and tangent weak, so ``+ f16`` is float16."""
    h = rt.asarray(np.ones(2, np.float16))
    primal, tangent = autodiff.jvp(lambda a: a * 2.0, (1.0,), (1.0,))
    assert primal.weak and tangent.weak
    assert (primal + h).dtype.name == (tangent + h).dtype.name == "float16"
    assert (autodiff.grad(lambda a: a * 2.0)(1.0) + h).dtype.name == "float16"

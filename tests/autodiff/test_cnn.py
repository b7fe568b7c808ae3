"""A small CNN training step under ``autodiff.jit`` matches JAX's gradient (issue 15's acceptance).

conv_general_dilated -> tanh -> reduce_window max -> dense -> logsumexp cross-entropy, differentiated
with ``autodiff.grad``, traced, lowered to ``jax.lax`` and compiled by ``autodiff.jit``; the oracle is
``jax.grad`` of the same network written in ``jax.lax``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import autodiff
import runtime as rt
from runtime.core import lax as F
from tests import jax_oracles

jax.config.update("jax_enable_x64", True)

LAYOUT = ("NCHW", "OIHW", "NCHW")


def loss(w: rt.Tensor, b: rt.Tensor, v: rt.Tensor, x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
    h = F.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=LAYOUT, feature_group_count=1)
    h = F.tanh(F.add(h, F.broadcast_in_dim(b, h.shape, (1,))))
    h = F.reduce_window_max(h, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    logits = F.matmul(F.reshape(h, (h.shape[0], h.size // h.shape[0])), v)
    nll = F.sub(F.logsumexp(logits, 1), F.reduce_sum(F.mul(logits, y), (1,)))
    return F.div(F.reduce_sum(nll, (0,)), logits.shape[0])


def jax_loss(w: Any, b: Any, v: Any, x: Any, y: Any) -> Any:
    h = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=LAYOUT,
                                 precision=lax.Precision.HIGHEST)  # fmt: skip
    h = jnp.tanh(h + b[None, :, None, None])
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    logits = jnp.dot(h.reshape(h.shape[0], -1), v, precision=lax.Precision.HIGHEST)
    return jnp.mean(jax.nn.logsumexp(logits, axis=1) - jnp.sum(logits * y, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jit_cnn_step_matches_jax_gradient(dtype: Any) -> None:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((4, 2, 3, 3)) * 0.4).astype(dtype)
    b = (rng.standard_normal(4) * 0.1).astype(dtype)
    v = (rng.standard_normal((4 * 3 * 3, 3)) * 0.2).astype(dtype)
    x = rng.standard_normal((5, 2, 6, 6)).astype(dtype)
    y = np.eye(3)[rng.integers(0, 3, 5)].astype(dtype)

    step = autodiff.jit(autodiff.value_and_grad(loss, argnums=(0, 1, 2)))
    value, grads = step(w, b, v, x, y)
    want_value, want_grads = jax_oracles.jitted(jax.value_and_grad(jax_loss, argnums=(0, 1, 2)))(w, b, v, x, y)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(float(value), float(want_value), rtol=tol)
    for got, want in zip(grads, want_grads, strict=True):
        assert got.dtype.storage == np.dtype(dtype)
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=tol, atol=tol * float(np.abs(want).max()))

    # the compiled program is the traced graph with both new ops and their derivatives, lowered to lax
    graph = rt.trace(autodiff.grad(loss, argnums=(0, 1, 2)), w, b, v, x, y)
    names = {e.op.name for e in graph.eqns}
    assert {"conv_general_dilated", "reduce_window_max", "select_and_scatter_add"} <= names

    # one SGD step lowers the loss
    new = [p - 0.5 * g.numpy() for p, g in zip((w, b, v), grads, strict=True)]
    assert float(step(*new, x, y)[0]) < float(value)

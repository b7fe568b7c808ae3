"""A pipeline written for the array API standard runs unchanged on castwise tensors, and records,
differentiates and compiles: the same source, given castwise tensors and JAX arrays, finds each
library's namespace through array-api-compat (as SciPy and scikit-learn do) and gives the same
loss and the same gradient."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import autodiff
import runtime as rt

compat = pytest.importorskip("array_api_compat")
jax.config.update("jax_enable_x64", True)


def standardized_softmax_loss(w: Any, x: Any, labels: Any) -> Any:
    """Written against the standard only: no castwise, no JAX names."""
    xp = compat.array_namespace(w, x)
    mu = xp.mean(x, axis=0, keepdims=True)
    sd = xp.std(x, axis=0, correction=1, keepdims=True)
    z = (x - mu) / (sd + 1e-6)
    logits = xp.matmul(z, w)
    top = xp.max(logits, axis=-1, keepdims=True)
    log_norm = top + xp.log(xp.sum(xp.exp(logits - top), axis=-1, keepdims=True))
    log_p = logits - log_norm
    picked = xp.take_along_axis(log_p, xp.reshape(labels, (-1, 1)), axis=-1)
    penalty = xp.sum(xp.hypot(w, xp.ones_like(w))) * 1e-2
    return -xp.mean(picked) + penalty + xp.sum(xp.where(xp.abs(w) > 0.5, xp.square(w), xp.zeros_like(w))) * 1e-3


RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 3))
X = RNG.standard_normal((8, 4))
LABELS = np.array([0, 2, 1, 1, 0, 2, 2, 1])


def test_the_same_source_finds_each_namespace() -> None:
    assert compat.array_namespace(rt.asarray(W)) is rt.array_api
    assert compat.array_namespace(jax.numpy.asarray(W)) is not rt.array_api


def test_loss_and_gradient_match_jax() -> None:
    loss = standardized_softmax_loss(rt.asarray(W), rt.asarray(X), rt.asarray(LABELS))
    # the oracle compiled once (JAX's eager dispatch of each small op costs more than the test)
    want = jax.jit(standardized_softmax_loss)(jax.numpy.asarray(W), jax.numpy.asarray(X), jax.numpy.asarray(LABELS))
    np.testing.assert_allclose(loss.numpy(), np.asarray(want), rtol=1e-13)
    got = autodiff.grad(standardized_softmax_loss, argnums=(0, 1))(rt.asarray(W), rt.asarray(X), rt.asarray(LABELS))
    oracle = jax.jit(jax.grad(standardized_softmax_loss, argnums=(0, 1)))(
        jax.numpy.asarray(W), jax.numpy.asarray(X), jax.numpy.asarray(LABELS)
    )
    for g, o in zip(got, oracle, strict=True):
        np.testing.assert_allclose(g.numpy(), np.asarray(o), rtol=1e-11, atol=1e-13)


def test_it_records_and_compiles() -> None:
    graph = rt.trace(lambda w, x: standardized_softmax_loss(w, x, rt.asarray(LABELS)), rt.asarray(W), rt.asarray(X))
    names = {e.op.name for e in graph.eqns}  # the whole pipeline, op by op
    assert {"dot_general", "reduce_max", "exp", "log", "gather", "select"} <= names, names
    jitted = autodiff.jit(lambda w, x: standardized_softmax_loss(w, x, rt.asarray(LABELS)))
    eager = standardized_softmax_loss(rt.asarray(W), rt.asarray(X), rt.asarray(LABELS))
    np.testing.assert_allclose(jitted(rt.asarray(W), rt.asarray(X)).numpy(), eager.numpy(), rtol=1e-13)

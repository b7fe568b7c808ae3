"""A small convolutional network's gradient in mixed precision, checked against JAX.

bfloat16 images meet float32 convolution kernels: the convolution's operands promote together (as
dot_general's), so the recorded graph converts the images to float32 before
``conv_general_dilated``. After tanh and a 2x2 max pool, the activations are stored in bfloat16
(an explicit ``convert``) and meet the float32 dense layer, promoting again. The loss is the mean
softmax cross-entropy (a log-sum-exp made of max, exp, sum and log). The gradient of every float32
parameter is computed eagerly, again compiled with ``autodiff.jit``, and compared with
``jax.grad`` of the same network written in ``jax.lax``.

    python examples/cnn_gradient.py
"""

from __future__ import annotations

from typing import Any

import numpy as np

import autodiff
import runtime as rt
from runtime.core.graph import collect

LAYOUT = ("NHWC", "HWIO", "NHWC")
BATCH, SIZE, CHANNELS, FEATURES, CLASSES = 4, 8, 3, 6, 5


def cnn_loss(w_conv: rt.Tensor, b_conv: rt.Tensor, w_dense: rt.Tensor, b_dense: rt.Tensor, images: rt.Tensor,
             labels: rt.Tensor) -> rt.Tensor:  # fmt: skip
    """conv 3x3 (SAME) -> tanh -> 2x2 max pool -> bf16 -> dense -> mean softmax cross-entropy."""
    h = rt.lax.conv_general_dilated(images, w_conv, (1, 1), "SAME", dimension_numbers=LAYOUT)  # bf16 x f32 -> f32
    h = rt.tanh(rt.add(h, rt.lax.broadcast_in_dim(b_conv, h.shape, (3,))))
    h = rt.lax.max_pool(h, (2, 2), (2, 2))
    h = rt.lax.convert(rt.lax.reshape(h, (h.shape[0], h.size // h.shape[0])), rt.bfloat16)  # bf16 activations
    logits = rt.add(rt.matmul(h, w_dense), rt.lax.broadcast_in_dim(b_dense, (h.shape[0], CLASSES), (1,)))  # -> f32
    picked = rt.lax.reduce_sum(rt.lax.mul(logits, labels), (1,))
    return rt.lax.div(rt.lax.reduce_sum(rt.lax.sub(rt.lax.logsumexp(logits, 1), picked), (0,)), float(logits.shape[0]))


def jax_cnn_loss(w_conv: Any, b_conv: Any, w_dense: Any, b_dense: Any, images: Any, labels: Any) -> Any:
    """The same network in jax.lax, with the same conversions written out."""
    import jax.numpy as jnp
    from jax import lax
    from jax.scipy.special import logsumexp as jax_logsumexp

    x = images.astype(jnp.float32)
    h = lax.conv_general_dilated(x, w_conv, (1, 1), "SAME", dimension_numbers=LAYOUT,
                                 precision=lax.Precision.HIGHEST)  # fmt: skip
    h = jnp.tanh(h + b_conv)
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = h.reshape(h.shape[0], -1).astype(jnp.bfloat16).astype(jnp.float32)
    logits = jnp.dot(h, w_dense, precision=lax.Precision.HIGHEST) + b_dense
    return jnp.mean(jax_logsumexp(logits, axis=1) - jnp.sum(logits * labels, axis=1))


def main() -> None:
    rng = np.random.default_rng(0)
    images = rt.asarray(rng.standard_normal((BATCH, SIZE, SIZE, CHANNELS)), dtype=rt.bfloat16)
    labels = rt.asarray(np.eye(CLASSES)[rng.integers(0, CLASSES, BATCH)], dtype=rt.float32)
    params = [
        rt.asarray(rng.standard_normal((3, 3, CHANNELS, FEATURES)) * 0.3, dtype=rt.float32),
        rt.asarray(rng.standard_normal(FEATURES) * 0.1, dtype=rt.float32),
        rt.asarray(rng.standard_normal(((SIZE // 2) ** 2 * FEATURES, CLASSES)) * 0.1, dtype=rt.float32),
        rt.asarray(np.zeros(CLASSES), dtype=rt.float32),
    ]

    tracked = [rt.asarray(p.numpy(), dtype=p.dtype, requires_grad=True) for p in params]
    w_conv, b_conv, w_dense, b_dense = tracked
    loss = cnn_loss(w_conv, b_conv, w_dense, b_dense, images, labels)
    print(f"loss {float(loss):.5f} ({loss.dtype.name})")
    graph = collect([loss.node])
    names = [e.op.name for e in graph.eqns]
    converts = [e for e in graph.eqns if e.op.name == "convert"]
    print(f"recorded {len(names)} equations: conv_general_dilated x{names.count('conv_general_dilated')}, "
          f"reduce_window_max x{names.count('reduce_window_max')}, convert x{len(converts)}")  # fmt: skip
    assert any(e.inputs[0].dtype is rt.bfloat16 and e.outputs[0].dtype is rt.float32 for e in converts)
    loss.backward()
    eager = [p.grad for p in tracked]
    assert all(g is not None and g.dtype is rt.float32 for g in eager)

    grad_fn = autodiff.jit(autodiff.grad(cnn_loss, argnums=(0, 1, 2, 3)))
    compiled = grad_fn(params[0], params[1], params[2], params[3], images, labels)

    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    args = [jnp.asarray(t.numpy()) for t in (*params, images, labels)]
    expected = jax.grad(jax_cnn_loss, argnums=(0, 1, 2, 3))(*args)
    for name, got_eager, got_jit, want in zip(("w_conv", "b_conv", "w_dense", "b_dense"), eager, compiled, expected,
                                              strict=True):  # fmt: skip
        assert got_eager is not None
        want = np.asarray(want)
        # float32 sums in other orders, and bf16 activations that may round the other way near a tie
        np.testing.assert_allclose(got_eager.numpy(), want, rtol=2e-3, atol=2e-4 * np.abs(want).max())
        np.testing.assert_allclose(got_jit.numpy(), want, rtol=2e-3, atol=2e-4 * np.abs(want).max())
        print(f"d loss / d {name}: {got_eager.dtype.name}{list(got_eager.shape)}, max |grad| "
              f"{np.abs(got_eager.numpy()).max():.4f}")  # fmt: skip
    print("eager and jit gradients match JAX")


if __name__ == "__main__":
    main()

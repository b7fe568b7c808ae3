"""A mixed-precision MLP training step: bfloat16 activations, float32 weights.

The input batch is bfloat16; the weights are float32. Under the default policy
("jax") every bf16 x f32 op promotes to float32, and the recorded graph says so
with explicit `convert` nodes. One SGD step is taken, and the gradient is
checked against JAX's on the same function.

    python examples/mixed_precision_mlp.py
"""

from __future__ import annotations

import numpy as np

import autodiff  # noqa: F401  (installs the recorder; backward() needs it)
import runtime as rt
from runtime.core.graph import collect


def mlp_loss(w1: rt.Tensor, b1: rt.Tensor, w2: rt.Tensor, x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
    """Mean squared error of a one-hidden-layer tanh MLP."""
    pre = rt.add(x @ w1, rt.lax.broadcast_in_dim(b1, (x.shape[0], b1.shape[0]), (1,)))  # bf16 @ f32 -> f32
    out = rt.tanh(pre) @ w2
    err = rt.lax.sub(out, y)
    return rt.lax.div(rt.lax.reduce_sum(rt.lax.mul(err, err), (0, 1)), float(err.size))


def main() -> None:
    rng = np.random.default_rng(0)
    x = rt.asarray(rng.standard_normal((16, 8)), dtype=rt.bfloat16)
    y = rt.asarray(rng.standard_normal((16, 2)), dtype=rt.float32)
    w1 = rt.asarray(rng.standard_normal((8, 32)) * 0.3, dtype=rt.float32, requires_grad=True)
    b1 = rt.asarray(np.zeros(32), dtype=rt.float32, requires_grad=True)
    w2 = rt.asarray(rng.standard_normal((32, 2)) * 0.3, dtype=rt.float32, requires_grad=True)

    loss = mlp_loss(w1, b1, w2, x, y)
    print(f"loss {float(loss):.5f} ({loss.dtype.name})")
    graph = collect([loss.node])
    converts = [e for e in graph.eqns if e.op.name == "convert"]
    print(f"recorded {len(graph.eqns)} equations, {len(converts)} of them converts (bf16 -> f32)")
    assert any(e.inputs[0].dtype is rt.bfloat16 and e.outputs[0].dtype is rt.float32 for e in converts)

    loss.backward()
    grads = [w1.grad, b1.grad, w2.grad]
    assert all(g is not None and g.dtype is rt.float32 for g in grads)

    # the same gradient from JAX
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def jax_loss(w1, b1, w2, x, y):  # type: ignore[no-untyped-def]
        out = jnp.tanh(x @ w1 + b1) @ w2
        return jnp.mean((out - y) ** 2)

    expected = jax.grad(jax_loss, argnums=(0, 1, 2))(*(jnp.asarray(t.numpy()) for t in (w1, b1, w2, x, y)))
    for got, want in zip(grads, expected, strict=True):
        assert got is not None
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=2e-4, atol=1e-6)
    print("gradients match JAX")

    # one SGD step (new leaves; in-place updates of tracked tensors are refused)
    lr = 0.1
    params = (w1, b1, w2)
    new = [
        rt.asarray(rt.lax.sub(p.detach(), rt.lax.mul(g, lr)), requires_grad=True)
        for p, g in zip(params, grads, strict=True)
    ]
    new_loss = mlp_loss(*new, x, y)
    print(f"loss after one step {float(new_loss):.5f}")
    assert float(new_loss) < float(loss)


if __name__ == "__main__":
    main()

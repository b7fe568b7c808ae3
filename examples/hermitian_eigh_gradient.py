"""The gradient of a Hermitian eigenproblem through a mixed-dtype promotion.

An untracked float64 identity plus a tracked complex128 Hermitian matrix
promotes to complex128 (a `convert` in the recording), then `eigh`, then a loss
that depends on the eigenvectors only through gauge-invariant quantities
(|v|^2, unchanged by a phase on each eigenvector). This is exactly the case that
breaks when a recording stores `f64 + c128` instead of what eager execution
ran. The gradient is checked against finite differences along Hermitian
directions.

    python examples/hermitian_eigh_gradient.py
"""

from __future__ import annotations

import numpy as np

import autodiff  # noqa: F401  (installs the recorder; backward() needs it)
import runtime as rt


def loss_fn(h: rt.Tensor, identity: rt.Tensor) -> rt.Tensor:
    a = identity + h  # f64 + c128 -> c128
    v, w = rt.lax.eigh(a)
    weights = rt.real(rt.lax.mul(v, rt.conj(v)))  # |v_ik|^2: gauge invariant
    # sum_k |v_0k|^2 w_k^2 = (A^2)[0, 0]: depends on the eigenvectors only through |v|^2
    return rt.lax.reduce_sum(rt.lax.mul(weights[0], rt.lax.mul(w, w)), (0,))


def main() -> None:
    rng = np.random.default_rng(1)
    n = 4
    m = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    h_np = (m + m.conj().T) / 2
    identity = rt.asarray(np.eye(n))
    h = rt.asarray(h_np, requires_grad=True)

    loss = loss_fn(h, identity)
    loss.backward()
    assert h.grad is not None and h.grad.dtype is rt.complex128
    print(f"loss {float(loss):.6f}")

    # finite differences along random Hermitian directions: dL = <grad, dH>
    eps = 1e-6
    for _ in range(3):
        d = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
        d = (d + d.conj().T) / 2
        plus = float(loss_fn(rt.asarray(h_np + eps * d), identity))
        minus = float(loss_fn(rt.asarray(h_np - eps * d), identity))
        fd = (plus - minus) / (2 * eps)
        analytic = float(np.real(np.sum(np.conj(h.grad.numpy()) * d)))
        print(f"directional derivative: autodiff {analytic:+.8f}  finite differences {fd:+.8f}")
        assert abs(analytic - fd) < 1e-6 * max(1.0, abs(fd))


if __name__ == "__main__":
    main()

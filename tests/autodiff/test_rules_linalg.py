"""Derivative rules of the linalg ops: eigh, cholesky, triangular_solve.

1. finite differences and the adjoint identity to second order (``check_grads``);
2. parity with JAX (``jax.lax.linalg``), each operand active and inactive in turn;
3. symbolic zeros: inactive operands are neither computed nor stored;
4. the end-to-end regression of ``eager-semantic-promotion-recording``:
   untracked f64 identity + tracked c128 Hermitian matrix -> complex eigh -> a
   gauge-invariant eigenvector loss -> ``backward``.

eigh and cholesky derivatives are those of ``A -> op((A + A^H) / 2)`` (JAX's
``symmetrize_input=True``), so finite differences run through an explicit
symmetrisation and JAX is called with its default symmetrisation. Eigenvector
outputs are compared up to the per-column phase (gauge) of each library.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import runtime as rt
from autodiff.api import jvp, vjp
from autodiff.derivatives import linalg as RL
from autodiff.record import no_grad
from autodiff.testing import check_grads, check_vjp
from autodiff.zeros import Zero, is_zero
from runtime.core import lax as F
from runtime.core.executor import asarray
from runtime.core.tensor import Tensor
from tests import jax_oracles

jax.config.update("jax_enable_x64", True)

DTYPES = [rt.float32, rt.float64, rt.complex64, rt.complex128]
IDS = [d.short for d in DTYPES]
TOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-11, "complex128": 1e-11}
N = 3


# -- inputs ------------------------------------------------------------------------------------


def _randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: rt.DType) -> np.ndarray:
    x = rng.standard_normal(shape)
    if dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype.storage)


def _herm(x: np.ndarray) -> np.ndarray:
    return (x + np.conj(np.swapaxes(x, -1, -2))) / 2


def hermitian(dtype: rt.DType, seed: int = 0, batch: tuple[int, ...] = ()) -> np.ndarray:
    """Hermitian with well-separated eigenvalues 1, 2.5, 4.5 (exactly Hermitian in storage)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(_randn(rng, (*batch, N, N), rt.complex128 if dtype.kind == "complex" else rt.float64))
    a = q @ np.diag([1.0, 2.5, 4.5]) @ np.conj(np.swapaxes(q, -1, -2))
    return _herm(_herm(a).astype(dtype.storage))


def spd(dtype: rt.DType, seed: int = 1, batch: tuple[int, ...] = ()) -> np.ndarray:
    rng = np.random.default_rng(seed)
    b = _randn(rng, (*batch, N, N), rt.complex128 if dtype.kind == "complex" else rt.float64)
    a = b @ np.conj(np.swapaxes(b, -1, -2)) + N * np.eye(N)
    return _herm(_herm(a).astype(dtype.storage))


def triangular(dtype: rt.DType, seed: int = 2) -> np.ndarray:
    """Well conditioned in both triangles (the other triangle is read by the opposite ``lower``)."""
    rng = np.random.default_rng(seed)
    return (0.3 * _randn(rng, (N, N), dtype) + np.diag([2.0, 2.5, 3.0])).astype(dtype.storage)


def rhs(dtype: rt.DType, left_side: bool, seed: int = 3) -> np.ndarray:
    return _randn(np.random.default_rng(seed), (N, 2) if left_side else (2, N), dtype)


def T(x: np.ndarray, dtype: rt.DType) -> Tensor:
    return asarray(np.asarray(x).astype(dtype.storage), dtype)


def sym(x: Tensor) -> Tensor:
    """(x + x^H) / 2 with vocabulary ops (so finite differences see Hermitian matrices)."""
    xt = F.transpose(x, (1, 0))
    return F.mul(F.add(x, F.conj(xt) if x.dtype.kind == "complex" else xt), 0.5)


def abs2(v: Tensor) -> Tensor:
    """|v|^2 elementwise (invariant to each eigenvector's phase / sign)."""
    return F.real(F.mul(v, F.conj(v))) if v.dtype.kind == "complex" else F.mul(v, v)


def close(got: Any, want: Any, dtype: rt.DType, what: str = "") -> None:
    got_a = np.asarray(got)
    want_a = np.asarray(want)
    assert got_a.shape == want_a.shape, what
    tol = TOL[dtype.name]
    scale = max(1.0, float(np.max(np.abs(want_a))) if want_a.size else 1.0)
    err = float(np.max(np.abs(got_a - want_a))) if got_a.size else 0.0
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} > {tol * scale:.3g}\n got {got_a}\n want {want_a}"


def arr(x: Tensor | None) -> np.ndarray:
    assert x is not None
    return x.numpy()


def phases(v_ours: np.ndarray, v_jax: np.ndarray) -> np.ndarray:
    """d with v_ours[:, k] = v_jax[:, k] * d[k] (|d| = 1): the gauge between the two libraries."""
    d = np.sum(np.conj(v_jax) * v_ours, axis=-2)
    return d / np.abs(d)


TRI_PARAMS = [
    dict(zip(("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal"), flags, strict=True))
    for flags in itertools.product((True, False), repeat=5)
]


def tri_id(p: dict[str, bool]) -> str:
    return "".join(k[0] if v else "-" for k, v in p.items())


# -- 1. finite differences and the adjoint identity, second order -----------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eigh_check_grads(dtype: rt.DType) -> None:
    def f(a: Tensor) -> tuple[Tensor, Tensor]:
        v, w = F.eigh(sym(a))
        return w, abs2(v)

    check_grads(f, [T(hermitian(dtype), dtype)], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eigh_adjoint_raw_outputs(dtype: rt.DType, lower: bool) -> None:
    # VJP is the adjoint of the JVP for arbitrary (non-Hermitian) tangents and raw eigenvector cotangents.
    check_vjp(lambda a: F.eigh(a, lower=lower), [T(hermitian(dtype), dtype)])


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_cholesky_check_grads(dtype: rt.DType) -> None:
    check_grads(lambda a: F.cholesky(sym(a)), [T(spd(dtype), dtype)], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_batched_adjoint(dtype: rt.DType) -> None:
    check_vjp(lambda a: F.eigh(a), [T(hermitian(dtype, batch=(2,)), dtype)])
    check_vjp(lambda a: F.cholesky(a), [T(spd(dtype, batch=(2,)), dtype)])
    a = np.stack([triangular(dtype, seed=2), triangular(dtype, seed=4)])
    b = np.stack([rhs(dtype, True, seed=3), rhs(dtype, True, seed=5)])
    p = TRI_PARAMS[5]
    check_grads(lambda a, b: F.triangular_solve(a, b, **p), [T(a, dtype), T(b, dtype)], order=1)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_triangular_solve_check_grads_order2(dtype: rt.DType) -> None:
    for p in (TRI_PARAMS[0], TRI_PARAMS[21], TRI_PARAMS[31]):
        a, b = T(triangular(dtype), dtype), T(rhs(dtype, p["left_side"]), dtype)
        check_grads(lambda a, b, p=p: F.triangular_solve(a, b, **p), [a, b], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("p", TRI_PARAMS, ids=tri_id)
@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
def test_triangular_solve_check_grads_all_params(dtype: rt.DType, p: dict[str, bool]) -> None:
    a, b = T(triangular(dtype), dtype), T(rhs(dtype, p["left_side"]), dtype)
    check_grads(lambda a, b: F.triangular_solve(a, b, **p), [a, b], order=1, modes=("fwd", "rev"))


# -- 2. parity with JAX ---------------------------------------------------------------------------


def ours_vjp_vs_jax(jax_fun: Any, primals: list[np.ndarray], cts: Any) -> list[np.ndarray]:
    """conj(jax_vjp(conj(ct))): JAX's cotangents in our real-inner-product convention."""
    return ours_pullback_vs_jax(jax_fun, primals)(cts)


def ours_pullback_vs_jax(jax_fun: Any, primals: list[np.ndarray]) -> Callable[[Any], list[np.ndarray]]:
    """``ours_vjp_vs_jax`` as a function of the cotangents: one compiled pullback for all of them."""
    f_vjp = jax_oracles.pullback(jax_fun, *[jnp.asarray(p) for p in primals])
    return lambda cts: [np.conj(np.asarray(g)) for g in f_vjp(jax.tree_util.tree_map(np.conj, cts))]


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eigh_vs_jax(dtype: rt.DType, lower: bool) -> None:
    rng = np.random.default_rng(5)
    a = hermitian(dtype)
    ta = _randn(rng, a.shape, dtype)  # not Hermitian: both sides use its Hermitian part
    (v, w), (dv, dw) = jvp(lambda x: F.eigh(x, lower=lower), [T(a, dtype)], [T(ta, dtype)])

    def jfun(x: Any) -> Any:
        return jax.lax.linalg.eigh(x, lower=lower)

    (vj, wj), (dvj, dwj) = jax_oracles.jvp(jfun, (jnp.asarray(a),), (jnp.asarray(ta),))
    d = phases(v.numpy(), np.asarray(vj))
    close(w.numpy(), wj, dtype, "eigenvalues")
    close(v.numpy(), np.asarray(vj) * d, dtype, "eigenvectors up to phase")
    assert dv.dtype is dtype and dw.dtype is w.dtype
    close(dv.numpy(), np.asarray(dvj) * d, dtype, "JVP eigenvectors")
    close(dw.numpy(), dwj, dtype, "JVP eigenvalues")

    ct_v, ct_w = _randn(rng, a.shape, dtype), rng.standard_normal(N).astype(w.dtype.storage)
    _, f_vjp = vjp(lambda x: F.eigh(x, lower=lower), T(a, dtype))
    (ga,) = f_vjp((T(ct_v, dtype), T(ct_w, w.dtype)))
    # v_ours = v_jax d, so ct_v against our gauge is ct_v conj(d) against JAX's
    jax_vjp = ours_pullback_vs_jax(jfun, [a])
    (gj,) = jax_vjp((ct_v * np.conj(d), ct_w))
    close(arr(ga), gj, dtype, "VJP")
    close(arr(ga), _herm(arr(ga)), dtype, "VJP is Hermitian")
    # each output alone (the other cotangent a symbolic zero)
    (ga_w,) = f_vjp((None, T(ct_w, w.dtype)))
    close(arr(ga_w), jax_vjp((np.zeros_like(ct_v), ct_w))[0], dtype, "VJP, w only")
    (ga_v,) = f_vjp((T(ct_v, dtype), None))
    close(arr(ga_v), jax_vjp((ct_v * np.conj(d), np.zeros_like(ct_w)))[0], dtype, "VJP, v only")


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_cholesky_vs_jax(dtype: rt.DType) -> None:
    rng = np.random.default_rng(6)
    a, ta = spd(dtype), _randn(rng, (N, N), dtype)
    chol, dchol = jvp(F.cholesky, [T(a, dtype)], [T(ta, dtype)])
    lj, dlj = jax_oracles.jvp(jax.lax.linalg.cholesky, (jnp.asarray(a),), (jnp.asarray(ta),))
    close(chol.numpy(), lj, dtype, "cholesky")
    assert dchol.dtype is dtype
    close(dchol.numpy(), dlj, dtype, "JVP")
    ct = _randn(rng, (N, N), dtype)
    (ga,) = vjp(F.cholesky, T(a, dtype))[1](T(ct, dtype))
    close(arr(ga), ours_vjp_vs_jax(jax.lax.linalg.cholesky, [a], ct)[0], dtype, "VJP")
    close(arr(ga), _herm(arr(ga)), dtype, "VJP is Hermitian")


@pytest.mark.parametrize("p", TRI_PARAMS, ids=tri_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_triangular_solve_vs_jax(dtype: rt.DType, p: dict[str, bool]) -> None:
    rng = np.random.default_rng(7)
    a, b = triangular(dtype), rhs(dtype, p["left_side"])
    ta, tb = _randn(rng, a.shape, dtype), _randn(rng, b.shape, dtype)
    ct = _randn(rng, b.shape, dtype)
    ta_, tb_, ct_ = T(ta, dtype), T(tb, dtype), T(ct, dtype)

    def jfun(x: Any, y: Any) -> Any:
        return jax.lax.linalg.triangular_solve(x, y, **p)

    def jax_refs(x: Any, y: Any, tx: Any, ty: Any, ct: Any) -> Any:
        """JAX's JVPs (both operands active, only a, only b) and conj(vjp(conj(ct))): one program."""
        out, both = jax.jvp(jfun, (x, y), (tx, ty))
        only_a = jax.jvp(jfun, (x, y), (tx, jnp.zeros_like(ty)))[1]
        only_b = jax.jvp(jfun, (x, y), (jnp.zeros_like(tx), ty))[1]
        grads = jax.vjp(jfun, x, y)[1](jnp.conj(ct))
        return out, both, only_a, only_b, [jnp.conj(g) for g in grads]

    xj, dxj, dxj_a, dxj_b, (want_a, want_b) = jax_oracles.jitted(jax_refs)(a, b, ta, tb, ct)
    # forward: both active, only a, only b (the other a closed-over constant)
    x, dx = jvp(lambda x, y: F.triangular_solve(x, y, **p), [T(a, dtype), T(b, dtype)], [ta_, tb_])
    close(x.numpy(), xj, dtype, "primal")
    close(dx.numpy(), dxj, dtype, "JVP a, b")
    _, dx_a = jvp(lambda x: F.triangular_solve(x, T(b, dtype), **p), [T(a, dtype)], [ta_])
    close(dx_a.numpy(), dxj_a, dtype, "JVP a only")
    _, dx_b = jvp(lambda y: F.triangular_solve(T(a, dtype), y, **p), [T(b, dtype)], [tb_])
    close(dx_b.numpy(), dxj_b, dtype, "JVP b only")
    # reverse
    ga, gb = vjp(lambda x, y: F.triangular_solve(x, y, **p), T(a, dtype), T(b, dtype))[1](ct_)
    close(arr(ga), want_a, dtype, "VJP a")
    close(arr(gb), want_b, dtype, "VJP b")
    (ga_only,) = vjp(lambda x: F.triangular_solve(x, T(b, dtype), **p), T(a, dtype))[1](ct_)
    close(arr(ga_only), want_a, dtype, "VJP a only")
    (gb_only,) = vjp(lambda y: F.triangular_solve(T(a, dtype), y, **p), T(b, dtype))[1](ct_)
    close(arr(gb_only), want_b, dtype, "VJP b only")


@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
def test_inactive_operand_gets_no_grad(dtype: rt.DType) -> None:
    p = TRI_PARAMS[0]
    for active in (0, 1):
        a = asarray(triangular(dtype), dtype, requires_grad=active == 0)
        b = asarray(rhs(dtype, True), dtype, requires_grad=active == 1)
        F.reduce_sum(abs2(F.triangular_solve(a, b, **p)), (0, 1)).backward()
        assert (a.grad is None) == (active == 1)
        assert (b.grad is None) == (active == 0)


# -- 3. symbolic zeros ------------------------------------------------------------------------------


class Counter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
        self.calls: dict[str, int] = dict.fromkeys(names, 0)
        for name in names:
            original = getattr(F, name)

            def wrapped(*args: Any, _name: str = name, _orig: Any = original, **kwargs: Any) -> Any:
                self.calls[_name] += 1
                return _orig(*args, **kwargs)

            monkeypatch.setattr(F, name, wrapped)


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_symbolic_zeros(monkeypatch: pytest.MonkeyPatch, left_side: bool) -> None:
    dtype = rt.complex128
    a, b = T(triangular(dtype), dtype), T(rhs(dtype, left_side), dtype)
    p = dict(TRI_PARAMS[0], left_side=left_side)
    x = F.triangular_solve(a, b, **p)
    za, zb = Zero.like(a), Zero.like(b)
    count = Counter(monkeypatch, "dot_general", "triangular_solve")
    # JVP: b-only tangent takes no product with a's tangent; all-zero gives Zero
    (dx,) = RL.triangular_solve_jvp([a, b], [za, b], [x], **p)
    assert count.calls == {"dot_general": 0, "triangular_solve": 1}
    assert isinstance(dx, Tensor) and dx.dtype is dtype
    assert is_zero(RL.triangular_solve_jvp([a, b], [za, zb], [x], **p)[0])
    # VJP: needs only b -> no outer product for a
    count.calls.update(dot_general=0, triangular_solve=0)
    ct_a, ct_b = RL.triangular_solve_vjp([b], [a, b], [x], [False, True], **p)
    assert is_zero(ct_a) and isinstance(ct_b, Tensor)
    assert count.calls == {"dot_general": 0, "triangular_solve": 1}
    ct_a, ct_b = RL.triangular_solve_vjp([b], [a, b], [x], [True, False], **p)
    assert isinstance(ct_a, Tensor) and is_zero(ct_b)
    assert all(is_zero(c) for c in RL.triangular_solve_vjp([zb], [a, b], [x], [True, True], **p))


def test_eigh_cholesky_symbolic_zeros(monkeypatch: pytest.MonkeyPatch) -> None:
    dtype = rt.complex128
    a = T(hermitian(dtype), dtype)
    v, w = F.eigh(a)
    count = Counter(monkeypatch, "reciprocal", "broadcast_in_dim")
    (g,) = RL.eigh_vjp([Zero.like(v), w], [a], [v, w], [True])  # eigenvalues only: no gap matrix
    assert count.calls["reciprocal"] == 0 and isinstance(g, Tensor) and g.dtype is dtype
    count.calls.update(reciprocal=0, broadcast_in_dim=0)
    (g,) = RL.eigh_vjp([v, Zero.like(w)], [a], [v, w], [True])  # eigenvectors only: no diag(ct_w)
    assert count.calls == {"reciprocal": 1, "broadcast_in_dim": 2}
    assert is_zero(RL.eigh_vjp([Zero.like(v), Zero.like(w)], [a], [v, w], [True])[0])
    assert is_zero(RL.eigh_vjp([v, w], [a], [v, w], [False])[0])
    assert all(is_zero(t) for t in RL.eigh_jvp([a], [Zero.like(a)], [v, w]))
    s = T(spd(dtype), dtype)
    chol = F.cholesky(s)
    assert is_zero(RL.cholesky_jvp([s], [Zero.like(s)], [chol])[0])
    assert is_zero(RL.cholesky_vjp([Zero.like(chol)], [s], [chol], [True])[0])
    assert is_zero(RL.cholesky_vjp([chol], [s], [chol], [False])[0])


def test_rules_registered() -> None:
    from autodiff.rules import JVP_RULES, VJP_RULES

    for name in ("eigh", "cholesky", "triangular_solve"):
        assert name in JVP_RULES and name in VJP_RULES


# -- 4. end-to-end regression: f64 identity + c128 Hermitian -> eigh -> eigenvector loss ----------------


def loss_ours(v: Tensor, w: Tensor, kind: str) -> Tensor:
    """Gauge-invariant: sum_k |v[0,k]|^2 w[k]  or  sum |v|^4."""
    p = abs2(v)
    if kind == "row0":
        return F.reduce_sum(F.mul(F.reshape(F.slice(p, (0, 0), (1, N)), (N,)), w), (0,))
    return F.reduce_sum(F.mul(p, p), (0, 1))


def loss_jax(h: Any, kind: str) -> Any:
    v, w = jax.lax.linalg.eigh(jnp.eye(N, dtype=jnp.float64) + h)
    p = jnp.abs(v) ** 2
    return jnp.sum(p[0] * w) if kind == "row0" else jnp.sum(p * p)


@pytest.mark.parametrize("kind", ["row0", "abs4"])
@pytest.mark.parametrize("dtype", [rt.complex128, rt.float64], ids=["c128", "f64"])
def test_identity_plus_hermitian_eigh_backward(dtype: rt.DType, kind: str) -> None:
    rng = np.random.default_rng(11)
    h_np = _herm(_randn(rng, (N, N), dtype))
    eye = asarray(np.eye(N), rt.float64)  # untracked f64
    h = rt.asarray(h_np, dtype, requires_grad=True)  # tracked c128 (or f64)

    def run(hh: Tensor) -> Tensor:
        v, w = F.eigh(eye + hh)
        return loss_ours(v, w, kind)

    a = eye + h  # f64 + c128 -> c128: recorded with an explicit convert of the identity
    add = a.node.producer
    assert add.op.name == "add" and all(v.dtype is dtype for v in add.inputs)
    if dtype is rt.complex128:
        conv = add.inputs[0].producer
        assert conv is not None and conv.op.name == "convert" and conv.params["new_dtype"] is rt.complex128
        assert conv.inputs[0].dtype is rt.float64 and conv.inputs[0].const is not None
    else:
        assert add.inputs[0].producer is None and add.inputs[0].const is not None
    v, w = F.eigh(a)
    assert v.dtype is dtype and w.dtype is rt.float64
    loss = loss_ours(v, w, kind)
    loss.backward()
    assert eye.grad is None
    assert h.grad is not None and h.grad.dtype is dtype and h.grad.shape == (N, N)
    g = h.grad.numpy()
    # JAX: grad of a real function of a complex input is the conjugate of ours
    gj = np.conj(np.asarray(jax_oracles.jitted(jax.grad(lambda x: loss_jax(x, kind)))(jnp.asarray(h_np))))
    np.testing.assert_allclose(g, gj, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, _herm(g), rtol=0, atol=1e-13)
    # finite differences along random Hermitian directions: dL = <grad, E>
    for seed in range(3):
        e = _herm(_randn(np.random.default_rng(100 + seed), (N, N), dtype))
        eps = 1e-6
        with no_grad():
            lp = run(asarray(h_np + eps * e, dtype)).item()
            lm = run(asarray(h_np - eps * e, dtype)).item()
        fd = (lp - lm) / (2 * eps)
        assert abs(fd - float(np.real(np.sum(np.conj(g) * e)))) < 1e-7 * max(1.0, abs(fd))

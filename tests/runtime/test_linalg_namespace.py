"""``runtime.numpy.linalg`` (``rt.linalg``) against ``jax.numpy.linalg`` (x64 on).

One table, ``ROWS``: for each public function of the namespace, rows of (castwise call,
JAX call, inputs). Every row runs in f32, f64, c64 and c128, unbatched and with a leading
batch dim, and compares

1. the values (and the dtype) with jax.numpy.linalg's;
2. the JVP with ``jax.jvp`` and the VJP with ``jax.vjp`` on the same well-conditioned inputs
   (castwise's cotangents follow the real inner product: ours(ct) == conj(jax_vjp(conj(ct))));
3. (f64 and c128) finite differences and the adjoint identity to second order (``check_grads``).

Where the library's vectors are not unique (eigenvectors, singular vectors) a row compares
functions that do not depend on their phases (``|v|^2``, ``u @ vh``, reconstructions), as
tests/autodiff/test_rules_linalg*.py do. ``test_every_public_name_has_a_row`` fails when a
function is added to the namespace without a row.

Then: integer inputs per policy, the errors (function, dtypes, shapes and policy named),
recording and replay, vmap.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autodiff
import runtime as rt
from autodiff.api import jvp, vjp
from autodiff.derivatives.linalg import LinalgDerivativeError
from autodiff.testing import check_grads
from autodiff.zeros import is_zero
from runtime.core import lax as F
from runtime.core.executor import asarray
from runtime.core.shapes import OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import linalg as L
from tests import jax_oracles

jax.config.update("jax_enable_x64", True)

DTYPES = [rt.float32, rt.float64, rt.complex64, rt.complex128]
IDS = [d.short for d in DTYPES]
#: tolerance relative to max(1, max |expected|)
TOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-9, "complex128": 1e-9}


# -- inputs ------------------------------------------------------------------------------------------


def _randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: rt.DType) -> np.ndarray:
    x = rng.standard_normal(shape)
    if dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype.storage)


def general(shape: tuple[int, ...], dtype: rt.DType, seed: int) -> np.ndarray:
    """Well conditioned, with well separated singular values (and eigenvalues when square)."""
    rng = np.random.default_rng(seed)
    x = 0.4 * _randn(rng, shape, dtype)
    *_, m, n = shape
    k = min(m, n)
    spread = np.zeros((m, n))
    spread[np.arange(k), np.arange(k)] = np.arange(1, k + 1) * 1.5
    return (x + spread).astype(dtype.storage)


def hermitian(shape: tuple[int, ...], dtype: rt.DType, seed: int, eigenvalues: list[float]) -> np.ndarray:
    """``Q diag(eigenvalues) Q^H`` for a random unitary Q per matrix (exactly Hermitian)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(_randn(rng, shape, rt.complex128 if dtype.kind == "complex" else rt.float64))
    h = q @ (np.asarray(eigenvalues)[:, None] * np.conj(np.swapaxes(q, -1, -2)))
    h = (h + np.conj(np.swapaxes(h, -1, -2))) / 2
    return h.astype(dtype.storage)


def spd(shape: tuple[int, ...], dtype: rt.DType, seed: int) -> np.ndarray:
    return hermitian(shape, dtype, seed, [1.0 + 1.3 * i for i in range(shape[-1])])


def indefinite(shape: tuple[int, ...], dtype: rt.DType, seed: int) -> np.ndarray:
    """Hermitian with eigenvalues of both signs and distinct magnitudes (an SVD via eigh)."""
    return hermitian(shape, dtype, seed, [(-1.0) ** i * (1.0 + 1.1 * i) for i in range(shape[-1])])


def nearly_hermitian(shape: tuple[int, ...], dtype: rt.DType, seed: int) -> np.ndarray:
    """Hermitian PD plus a small non-Hermitian part: what ``symmetrize_input`` is for."""
    rng = np.random.default_rng(seed + 1)
    return (spd(shape, dtype, seed) + 0.05 * _randn(rng, shape, dtype)).astype(dtype.storage)


# -- castwise and jnp helpers (the same function on each side) ---------------------------------------------


def abs2(v: Tensor) -> Tensor:
    return F.real(F.mul(v, F.conj(v))) if v.dtype.kind == "complex" else F.mul(v, v)


def abs2_j(v: Any) -> Any:
    return jnp.real(v * jnp.conj(v))


def mm(x: Tensor, y: Tensor) -> Tensor:
    nd = x.ndim
    batch = tuple(range(nd - 2))
    return F.dot_general(x, y, (((nd - 1,), (nd - 2,)), (batch, batch)))


def first_k(u: Tensor, k: int, axis: int) -> Tensor:
    if u.shape[axis] == k:
        return u
    limit = list(u.shape)
    limit[axis] = k
    return F.slice(u, (0,) * u.ndim, tuple(limit))


def svd_invariants(out: Any) -> tuple[Tensor, ...]:
    """S, |U_k|^2, |Vh_k|^2 and U_k @ Vh_k: unchanged by a phase per singular pair."""
    u, s, vh = out
    k = s.shape[-1]
    uk, vk = first_k(u, k, -1), first_k(vh, k, -2)
    return s, abs2(uk), abs2(vk), mm(uk, vk)


def svd_invariants_j(out: Any) -> tuple[Any, ...]:
    u, s, vh = out
    k = s.shape[-1]
    uk, vk = u[..., :k], vh[..., :k, :]
    return s, abs2_j(uk), abs2_j(vk), uk @ vk


def power_sums(w: Tensor) -> tuple[Tensor, ...]:
    """sum(w), sum(w^2), sum(w^3): symmetric in the eigenvalues, so their order does not matter."""
    last = w.ndim - 1
    w2 = F.mul(w, w)
    return F.reduce_sum(w, last), F.reduce_sum(w2, last), F.reduce_sum(F.mul(w2, w), last)


def power_sums_j(w: Any) -> tuple[Any, ...]:
    return w.sum(-1), (w * w).sum(-1), (w * w * w).sum(-1)


def _sym_t(a: Tensor) -> Tensor:
    """``(a + a^H) / 2``: a tangent of it is Hermitian, where every derivative of a solve agrees."""
    h = F.transpose(a, (*range(a.ndim - 2), a.ndim - 1, a.ndim - 2))
    h = F.conj(h) if h.dtype.kind == "complex" else h
    return F.mul(F.add(a, h), F.full(a.shape, 0.5, a.dtype))


def _jsl_solve_pos(a: Any, b: Any, lower: bool = False) -> Any:
    """``jax.scipy.linalg.solve(a, b, assume_a="pos")``; on a batch of matrices its own vmap over the
    columns calls cho_solve in a way jax 0.10 warns about (FutureWarning, inside JAX)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "jax.scipy.linalg.cho_solve: batched 1D solves", FutureWarning)
        return jsl.solve(a, b, assume_a="pos", lower=lower)


def _lstsq_float(out: Any) -> tuple[Any, Any, Any]:
    """``lstsq``'s inexact outputs (x, residuals, s): the rank is an integer."""
    return out[0], out[1], out[3]


def _rank2(shape: tuple[int, ...], d: rt.DType) -> np.ndarray:
    """A rank-2 matrix (per batch entry): a product of [n, 2] and [2, n] factors."""
    rng = np.random.default_rng(46)
    left, right = _randn(rng, (*shape[:-1], 2), d), _randn(rng, (*shape[:-2], 2, shape[-1]), d)
    return (left @ right).astype(d.storage)


def _chain(shapes: tuple[tuple[int, ...], ...]) -> Callable[..., list[np.ndarray]]:
    return lambda d, b: [_randn(np.random.default_rng(47 + i), s, d) for i, s in enumerate(shapes)]


def _arrs(*shapes: tuple[int, ...]) -> Callable[..., list[np.ndarray]]:
    return lambda d, b: [_randn(np.random.default_rng(48 + i), (*(b if i == 0 else ()), *s), d)
                         for i, s in enumerate(shapes)]  # fmt: skip


# -- the table ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One call: ``ours(*inputs)`` vs ``theirs(*inputs)``; ``make(dtype, batch)`` builds the inputs."""

    id: str
    ours: Callable[..., Any]
    theirs: Callable[..., Any]
    make: Callable[[rt.DType, tuple[int, ...]], list[np.ndarray]]
    grad: bool = True  # compare JVP and VJP too
    eig_order: bool = False  # match eigenvalue order (and the columns with them) before comparing values
    batched: bool = True  # also run with a leading batch dim (norm rows spell their shapes out instead)
    order: int = 2  # check_grads' order (1 where the second derivative needs eigenvectors' derivatives)
    fd: bool = True  # check_grads too (not where JAX's derivative is not the function's: solve(assume_a='pos'))
    real_only: bool = False  # complex inputs are refused, as jax.numpy refuses them (slogdet(method='qr'))
    #: complex VJP checked as the adjoint of JAX's JVP, not against jax.vjp: jax.scipy's solve(assume_a='pos')
    #: transposes its custom_linear_solve as symmetric, which a complex Hermitian matrix is not, so its VJP
    #: is not the adjoint of its own JVP (castwise's is)
    complex_vjp_is_adjoint: bool = False


def _sq(n: int, kind: Callable[..., np.ndarray] = general, seed: int = 0) -> Callable[..., list[np.ndarray]]:
    return lambda d, b: [kind((*b, n, n), d, seed)]


def _mat(m: int, n: int, seed: int = 0) -> Callable[..., list[np.ndarray]]:
    return lambda d, b: [general((*b, m, n), d, seed)]


def _arr(shape: tuple[int, ...], seed: int = 0) -> Callable[..., list[np.ndarray]]:
    # entries away from zero, so that |x| and |x|^p are differentiable
    def make(d: rt.DType, b: tuple[int, ...]) -> list[np.ndarray]:
        x = general((*b, *shape), d, seed) if len(shape) >= 2 else _randn(np.random.default_rng(seed), (*b, *shape), d)
        return [np.where(np.abs(x) < 0.1, x + 0.5, x).astype(d.storage)]

    return make


def _solve_inputs(b_shape: tuple[int, ...]) -> Callable[..., list[np.ndarray]]:
    return lambda d, b: [general((*b, 3, 3), d, 1), _randn(np.random.default_rng(2), (*b, *b_shape), d)]


def _norm_rows(prefix: str, fn: Callable[..., Any], jfn: Callable[..., Any], cases: list[tuple[Any, ...]]) -> list[Row]:
    rows = []
    for shape, kwargs in cases:
        rid = f"{prefix}-{'x'.join(map(str, shape))}-" + ",".join(f"{k}={v}" for k, v in kwargs.items())
        rows.append(
            Row(rid, lambda x, kw=kwargs: fn(x, **kw), lambda x, kw=kwargs: jfn(x, **kw), _arr(shape), batched=False)
        )
    return rows


_VECTOR_ORDS = [None, 2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5]
_MATRIX_ORDS = [None, "fro", "nuc", 1, -1, math.inf, -math.inf, 2, -2]

ROWS: dict[str, list[Row]] = {
    "cholesky": [
        Row("lower", L.cholesky, jnp.linalg.cholesky, _sq(3, spd)),
        Row("upper", lambda a: L.cholesky(a, upper=True), lambda a: jnp.linalg.cholesky(a, upper=True), _sq(3, spd)),
        Row("symmetrized", L.cholesky, jnp.linalg.cholesky, _sq(3, nearly_hermitian)),
    ],
    "det": [Row("3x3", L.det, jnp.linalg.det, _sq(3))],
    "slogdet": [
        Row("3x3", lambda a: tuple(L.slogdet(a)), lambda a: tuple(jnp.linalg.slogdet(a)), _sq(3)),
        Row(
            "qr",
            lambda a: tuple(L.slogdet(a, method="qr")),
            lambda a: tuple(jnp.linalg.slogdet(a, method="qr")),
            _sq(4, seed=2),
            real_only=True,
        ),
    ],
    "inv": [Row("3x3", L.inv, jnp.linalg.inv, _sq(3))],
    "solve": [
        Row("matrix-b", L.solve, jnp.linalg.solve, _solve_inputs((3, 2))),
        Row(
            "vector-b",
            L.solve,
            jnp.linalg.solve,
            lambda d, b: [general((*b, 3, 3), d, 1), _randn(np.random.default_rng(3), (3,), d)],
        ),
        # jax.scipy's derivative takes the whole da (custom_linear_solve around a @ x) while the value
        # reads one triangle: compared with JAX, not with finite differences
        Row(
            "pos-upper",
            lambda a, b: L.solve(a, b, assume_a="pos"),
            lambda a, b: _jsl_solve_pos(a, b),
            lambda d, b: [spd((*b, 3, 3), d, 1), _randn(np.random.default_rng(2), (*b, 3, 2), d)],
            fd=False,
            complex_vjp_is_adjoint=True,
        ),
        Row(
            "pos-lower-vector",
            lambda a, b: L.solve(a, b, assume_a="pos", lower=True),
            lambda a, b: _jsl_solve_pos(a, b, lower=True),
            lambda d, b: [spd((*b, 3, 3), d, 1), _randn(np.random.default_rng(3), (*b, 3), d)],
            fd=False,
            complex_vjp_is_adjoint=True,
        ),
        Row(
            "pos-symmetric-tangents",
            lambda a, b: L.solve(_sym_t(a), b, assume_a="pos"),
            lambda a, b: _jsl_solve_pos((a + jnp.conj(jnp.swapaxes(a, -1, -2))) / 2, b),
            lambda d, b: [spd((*b, 3, 3), d, 1), _randn(np.random.default_rng(2), (*b, 3, 2), d)],
            complex_vjp_is_adjoint=True,
        ),
    ],
    "eigh": [
        Row(
            "L",
            lambda a: (L.eigh(a)[0], abs2(L.eigh(a)[1])),
            lambda a: (jnp.linalg.eigh(a)[0], abs2_j(jnp.linalg.eigh(a)[1])),
            _sq(3, spd, 4),
        ),
        Row(
            "U",
            lambda a: (L.eigh(a, UPLO="U")[0], abs2(L.eigh(a, UPLO="U")[1])),
            lambda a: (jnp.linalg.eigh(a, UPLO="U")[0], abs2_j(jnp.linalg.eigh(a, UPLO="U")[1])),
            _sq(3, spd, 4),
        ),
        Row("symmetrized", lambda a: L.eigh(a)[0], lambda a: jnp.linalg.eigh(a)[0], _sq(3, nearly_hermitian, 5)),
    ],
    "eigvalsh": [Row("3x3", L.eigvalsh, jnp.linalg.eigvalsh, _sq(3, indefinite, 6))],
    "eig": [
        Row(
            "vectors",
            lambda a: (L.eig(a)[0], abs2(L.eig(a)[1])),
            lambda a: (jnp.linalg.eig(a)[0], abs2_j(jnp.linalg.eig(a)[1])),
            _sq(3, seed=7),
            grad=False,
            eig_order=True,
        ),
        Row(
            "power-sums",
            lambda a: power_sums(L.eig(a).eigenvalues),
            lambda a: power_sums_j(jnp.linalg.eig(a)[0]),
            _sq(3, seed=7),
            grad=False,
        ),
    ],
    "eigvals": [
        Row("values", L.eigvals, jnp.linalg.eigvals, _sq(4, seed=8), grad=False, eig_order=True),
        Row(
            "power-sums",
            lambda a: power_sums(L.eigvals(a)),
            lambda a: power_sums_j(jnp.linalg.eigvals(a)),
            _sq(4, seed=8),
            order=1,
        ),
    ],
    "qr": [
        Row("reduced-tall", lambda a: tuple(L.qr(a)), lambda a: tuple(jnp.linalg.qr(a)), _mat(4, 3, 9)),
        Row("reduced-square", lambda a: tuple(L.qr(a)), lambda a: tuple(jnp.linalg.qr(a)), _mat(3, 3, 9)),
        Row(
            "complete-tall",
            lambda a: tuple(L.qr(a, mode="complete")),
            lambda a: tuple(jnp.linalg.qr(a, mode="complete")),
            _mat(4, 3, 9),
            grad=False,
        ),
        Row(
            "complete-wide-values",
            lambda a: tuple(L.qr(a, mode="complete")),
            lambda a: tuple(jnp.linalg.qr(a, mode="complete")),
            _mat(3, 4, 9),
            grad=False,
        ),
        Row("r", lambda a: L.qr(a, mode="r"), lambda a: jnp.linalg.qr(a, mode="r"), _mat(4, 3, 9)),
        # a wide matrix's QR is differentiable (JAX's rule: the square block, then R2 = Q^H X2)
        Row("reduced-wide", lambda a: tuple(L.qr(a)), lambda a: tuple(jnp.linalg.qr(a)), _mat(3, 5, 9)),
        Row(
            "complete-wide",
            lambda a: tuple(L.qr(a, mode="complete")),
            lambda a: tuple(jnp.linalg.qr(a, mode="complete")),
            _mat(3, 4, 9),
        ),
        Row(
            "raw-tall",
            lambda a: tuple(L.qr(a, mode="raw")),
            lambda a: tuple(jnp.linalg.qr(a, mode="raw")),
            _mat(4, 3, 9),
            grad=False,
        ),
        Row(
            "raw-wide",
            lambda a: tuple(L.qr(a, mode="raw")),
            lambda a: tuple(jnp.linalg.qr(a, mode="raw")),
            _mat(3, 4, 9),
            grad=False,
        ),
    ],
    "svd": [
        Row(
            "reduced-tall",
            lambda a: svd_invariants(L.svd(a, full_matrices=False)),
            lambda a: svd_invariants_j(jnp.linalg.svd(a, full_matrices=False)),
            _mat(4, 3, 10),
        ),
        Row(
            "reduced-wide",
            lambda a: svd_invariants(L.svd(a, full_matrices=False)),
            lambda a: svd_invariants_j(jnp.linalg.svd(a, full_matrices=False)),
            _mat(3, 4, 10),
        ),
        Row(
            "full-square",
            lambda a: svd_invariants(L.svd(a)),
            lambda a: svd_invariants_j(jnp.linalg.svd(a)),
            _mat(3, 3, 10),
        ),
        Row(
            "full-tall-values",
            lambda a: svd_invariants(L.svd(a)),
            lambda a: svd_invariants_j(jnp.linalg.svd(a)),
            _mat(4, 3, 10),
            grad=False,
        ),
        Row(
            "values-only",
            lambda a: L.svd(a, compute_uv=False),
            lambda a: jnp.linalg.svd(a, compute_uv=False),
            _mat(4, 3, 10),
        ),
        Row(
            "hermitian",
            lambda a: svd_invariants(L.svd(a, hermitian=True)),
            lambda a: svd_invariants_j(jnp.linalg.svd(a, hermitian=True)),
            _sq(3, indefinite, 11),
        ),
        Row(
            "hermitian-values-only",
            lambda a: L.svd(a, compute_uv=False, hermitian=True),
            lambda a: jnp.linalg.svd(a, compute_uv=False, hermitian=True),
            _sq(3, indefinite, 11),
        ),
    ],
    "svdvals": [Row("4x3", L.svdvals, jnp.linalg.svdvals, _mat(4, 3, 12))],
    "matrix_power": [
        Row(
            f"n={n}",
            lambda a, n=n: L.matrix_power(a, n),
            lambda a, n=n: jnp.linalg.matrix_power(a, n),
            lambda d, b: [general((*b, 3, 3), d, 13) * d.storage.type(0.5)],
        )
        for n in (0, 1, 2, 3, 5, 6, -1, -3)
    ],
    "lu_factor": [
        Row("3x3", lambda a: L.lu_factor(a)[0], lambda a: jsl.lu_factor(a)[0], _sq(3, seed=14)),
        Row("4x3", lambda a: L.lu_factor(a)[0], lambda a: jsl.lu_factor(a)[0], _mat(4, 3, 14)),
    ],
    "lu_solve": [
        Row(
            "matrix-b",
            lambda a, b: L.lu_solve(L.lu_factor(a), b),
            lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b),
            _solve_inputs((3, 2)),
        ),
        Row(
            "vector-b",
            lambda a, b: L.lu_solve(L.lu_factor(a), b),
            lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b),
            lambda d, b: [general((*b, 3, 3), d, 1), _randn(np.random.default_rng(3), (3,), d)],
        ),
    ],
    "norm": [
        *_norm_rows("vector", L.norm, jnp.linalg.norm, [((5,), {"ord": o}) for o in _VECTOR_ORDS]),
        *_norm_rows("matrix", L.norm, jnp.linalg.norm, [((3, 4), {"ord": o}) for o in _MATRIX_ORDS]),
        *_norm_rows(
            "axes",
            L.norm,
            jnp.linalg.norm,
            [
                ((3, 4), {"axis": 0}),
                ((3, 4), {"axis": -1, "ord": 1, "keepdims": True}),
                ((2, 3, 4), {}),
                ((2, 3, 4), {"keepdims": True}),
                ((2, 3, 4), {"axis": (2, 0), "ord": 1}),
                ((2, 3, 4), {"axis": (0, 2), "ord": math.inf}),
                ((2, 3, 4), {"axis": (2, 0), "ord": -math.inf}),
                ((2, 3, 4), {"axis": (-1, 1), "ord": -1, "keepdims": True}),
                ((2, 3, 4), {"axis": (2, 1), "ord": "nuc", "keepdims": True}),
                ((2, 3, 4), {"axis": (1, 2), "ord": 2}),
            ],
        ),
    ],
    "vector_norm": _norm_rows(
        "v",
        L.vector_norm,
        jnp.linalg.vector_norm,
        [
            ((2, 3), {}),
            ((2, 3), {"axis": 1, "ord": 1}),
            ((2, 3), {"axis": 0, "ord": math.inf, "keepdims": True}),
            ((2, 3), {"ord": 3}),
        ],
    ),
    "matrix_norm": _norm_rows(
        "m",
        L.matrix_norm,
        jnp.linalg.matrix_norm,
        [
            ((3, 4), {}),
            ((2, 3, 4), {"ord": "nuc"}),
            ((2, 3, 4), {"ord": 1, "keepdims": True}),
            ((3, 4), {"ord": -2}),
        ],
    ),
}

ROWS.update(
    {
        "pinv": [
            Row("tall", L.pinv, jnp.linalg.pinv, _mat(4, 3, 30)),
            Row("wide", L.pinv, jnp.linalg.pinv, _mat(3, 4, 30)),
            Row(
                "hermitian",
                lambda a: L.pinv(a, hermitian=True),
                lambda a: jnp.linalg.pinv(a, hermitian=True),
                _sq(3, indefinite, 31),
            ),
            # a cutoff between the singular values: the values only (the function jumps there)
            Row(
                "rtol",
                lambda a: L.pinv(a, rtol=0.5),
                lambda a: jnp.linalg.pinv(a, rtol=0.5),
                _mat(4, 3, 30),
                grad=False,
            ),
        ],
        "lstsq": [
            Row(
                "over-matrix-b",
                lambda a, b: _lstsq_float(L.lstsq(a, b)),
                lambda a, b: _lstsq_float(jnp.linalg.lstsq(a, b)),
                lambda d, b: [general((5, 3), d, 32), _randn(np.random.default_rng(33), (5, 2), d)],
                batched=False,
            ),
            Row(
                "over-vector-b",
                lambda a, b: _lstsq_float(L.lstsq(a, b)),
                lambda a, b: _lstsq_float(jnp.linalg.lstsq(a, b)),
                lambda d, b: [general((5, 3), d, 32), _randn(np.random.default_rng(34), (5,), d)],
                batched=False,
            ),
            # underdetermined: the residuals are 0, where JAX's norm**2 has no derivative
            Row(
                "under",
                lambda a, b: L.lstsq(a, b)[::3],
                lambda a, b: jnp.linalg.lstsq(a, b)[::3],
                lambda d, b: [general((3, 5), d, 35), _randn(np.random.default_rng(36), (3, 2), d)],
                batched=False,
            ),
            Row(
                "rank",
                lambda a, b: L.lstsq(a, b, rcond=0.4)[2],
                lambda a, b: jnp.linalg.lstsq(a, b, rcond=0.4)[2],
                lambda d, b: [general((5, 3), d, 32), _randn(np.random.default_rng(33), (5, 2), d)],
                grad=False,
                batched=False,
            ),
        ],
        "matrix_rank": [
            Row("full", L.matrix_rank, jnp.linalg.matrix_rank, _mat(4, 3, 37), grad=False),
            Row("deficient", L.matrix_rank, jnp.linalg.matrix_rank, lambda d, b: [_rank2((*b, 4, 4), d)], grad=False),
            Row(
                "tol",
                lambda a: L.matrix_rank(a, tol=2.0),
                lambda a: jnp.linalg.matrix_rank(a, tol=2.0),
                _mat(4, 3, 37),
                grad=False,
            ),
            Row(
                "hermitian",
                lambda a: L.matrix_rank(a, hermitian=True),
                lambda a: jnp.linalg.matrix_rank(a, hermitian=True),
                _sq(3, indefinite, 38),
                grad=False,
            ),
            Row("vector", L.matrix_rank, jnp.linalg.matrix_rank, _arr((4,)), grad=False, batched=False),
        ],
        "cond": [
            Row(f"p={p}", lambda a, p=p: L.cond(a, p), lambda a, p=p: jnp.linalg.cond(a, p), _sq(3, seed=39))
            for p in (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc")
        ]
        + [Row("tall", L.cond, jnp.linalg.cond, _mat(4, 3, 39))],
        "multi_dot": [
            Row(
                f"{'-'.join('x'.join(map(str, s)) for s in shapes)}",
                lambda *xs: L.multi_dot(xs),
                lambda *xs: jnp.linalg.multi_dot(xs),
                _chain(shapes),
                batched=False,
            )
            for shapes in (
                ((2, 3), (3, 4)),
                ((5, 2), (2, 6), (6, 3), (3, 1)),
                ((3,), (3, 4), (4, 2)),
                ((3,), (3, 4), (4,)),
                ((2, 3), (3, 4), (4,)),
            )
        ],
        "cross": [
            Row("vectors", lambda x, y: L.cross(x, y), lambda x, y: jnp.linalg.cross(x, y), _arrs((3,), (3,))),
            Row("broadcast", lambda x, y: L.cross(x, y), lambda x, y: jnp.linalg.cross(x, y), _arrs((2, 3), (3,))),
            Row(
                "axis0",
                lambda x, y: L.cross(x, y, axis=0),
                lambda x, y: jnp.linalg.cross(x, y, axis=0),
                _arrs((3, 2), (3, 2)),
                batched=False,
            ),
        ],
        "vecdot": [
            Row("last", lambda x, y: L.vecdot(x, y), lambda x, y: jnp.linalg.vecdot(x, y), _arrs((2, 3), (3,))),
            Row(
                "axis0",
                lambda x, y: L.vecdot(x, y, axis=0),
                lambda x, y: jnp.linalg.vecdot(x, y, axis=0),
                _arrs((3, 2), (3, 2)),
                batched=False,
            ),
        ],
        "trace": [
            Row(
                f"offset={k}",
                lambda x, k=k: L.trace(x, offset=k),
                lambda x, k=k: jnp.linalg.trace(x, offset=k),
                _mat(3, 4, 40),
            )
            for k in (0, 1, -1, 5)
        ],
        "diagonal": [
            Row(
                f"offset={k}",
                lambda x, k=k: L.diagonal(x, offset=k),
                lambda x, k=k: jnp.linalg.diagonal(x, offset=k),
                _mat(3, 4, 41),
            )
            for k in (0, 2, -1)
        ],
        "matrix_transpose": [Row("3x4", L.matrix_transpose, jnp.linalg.matrix_transpose, _mat(3, 4, 42))],
        "tensorinv": [
            Row(
                "ind=2",
                lambda a: L.tensorinv(a, 2),
                lambda a: jnp.linalg.tensorinv(a, 2),
                lambda d, b: [general((6, 6), d, 43).reshape(2, 3, 6)],
                batched=False,
            ),
            Row(
                "ind=1",
                lambda a: L.tensorinv(a, 1),
                lambda a: jnp.linalg.tensorinv(a, 1),
                lambda d, b: [general((6, 6), d, 43).reshape(6, 2, 3)],
                batched=False,
            ),
        ],
        "tensorsolve": [
            Row(
                "plain",
                L.tensorsolve,
                jnp.linalg.tensorsolve,
                lambda d, b: [general((6, 6), d, 44).reshape(2, 3, 6), _randn(np.random.default_rng(45), (2, 3), d)],
                batched=False,
            ),
            Row(
                "axes",
                lambda a, b: L.tensorsolve(a, b, axes=(0,)),
                lambda a, b: jnp.linalg.tensorsolve(a, b, axes=(0,)),
                lambda d, b: [general((6, 6), d, 44).reshape(6, 2, 3), _randn(np.random.default_rng(45), (2, 3), d)],
                batched=False,
            ),
        ],
    }
)

#: the result types of the namespace: the function that returns each, and jax.numpy's counterpart
RESULTS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "QRResult": (L.qr, jnp.linalg.qr),
    "SVDResult": (L.svd, jnp.linalg.svd),
    "EighResult": (L.eigh, jnp.linalg.eigh),
    "EigResult": (L.eig, jnp.linalg.eig),
    "SlogdetResult": (L.slogdet, jnp.linalg.slogdet),
}

BATCHES = {"single": (), "batched": (2,)}
CASES = [
    (name, row, batch)
    for name, rows in ROWS.items()
    for row in rows
    for batch in (BATCHES if row.batched else ["single"])
]
CASE_IDS = [f"{name}-{row.id}-{batch}" for name, row, batch in CASES]


def test_every_public_name_has_a_row() -> None:
    assert set(rt.linalg.__all__) == set(ROWS) | set(RESULTS)
    assert all(ROWS[name] for name in ROWS)
    # every public function or class defined in the module is exported (and so needs a row)
    homes = {"runtime.numpy.linalg_factor", "runtime.numpy.linalg_products"}  # the namespace re-exports them
    modules = [vars(__import__(home, fromlist=["_"])) for home in sorted(homes)]
    defined = {
        n for m in modules for n, v in m.items() if not n.startswith("_") and getattr(v, "__module__", "") in homes
    }
    assert defined == set(rt.linalg.__all__)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_result_types_have_jax_numpy_fields(name: str) -> None:
    ours, theirs = RESULTS[name]
    a = spd((3, 3), rt.float64, 0)
    got, want = ours(asarray(a)), theirs(jnp.asarray(a))
    assert type(got).__name__ == name == type(want).__name__
    assert got._fields == want._fields


# -- values, JVP and VJP against JAX -------------------------------------------------------------------------


def _leaves(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def close(got: Any, want: Any, dtype: rt.DType, what: str) -> None:
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape, (what, got_a.shape, want_a.shape)
    tol = TOL[dtype.name]
    scale = max(1.0, float(np.max(np.abs(want_a))) if want_a.size else 1.0)
    err = float(np.max(np.abs(got_a.astype(np.complex128) - want_a))) if got_a.size else 0.0
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} > {tol * scale:.3g}\n got {got_a}\n want {want_a}"


def _eig_order(w: np.ndarray, w_ref: np.ndarray) -> np.ndarray:
    """Per matrix, the permutation taking ``w`` to the order of ``w_ref`` (nearest match)."""
    return np.array([int(np.argmin(np.abs(w - r))) for r in w_ref])


def _values(out: list[np.ndarray], ref: list[np.ndarray], eig_order: bool) -> list[np.ndarray]:
    if not eig_order:
        return out
    w, w_ref = out[0], ref[0]
    flat_w, flat_ref = w.reshape(-1, w.shape[-1]), w_ref.reshape(-1, w.shape[-1])
    perms = np.stack([_eig_order(a, b) for a, b in zip(flat_w, flat_ref, strict=True)]).reshape(w.shape)
    reordered = [np.take_along_axis(w, perms, -1)]
    for v in out[1:]:  # columns of eigenvectors follow their eigenvalues
        reordered.append(np.take_along_axis(v, perms[..., None, :], -1))
    return reordered


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize(("name", "row", "batch"), CASES, ids=CASE_IDS)
def test_matches_jax_numpy_linalg(name: str, row: Row, batch: str, dtype: rt.DType) -> None:
    primals = row.make(dtype, BATCHES[batch])
    if row.real_only and dtype.kind == "complex":  # both refuse
        with pytest.raises(OpTypeError, match=rf"linalg\.{name}: "):
            row.ours(*[asarray(p) for p in primals])
        with pytest.raises(NotImplementedError):
            row.theirs(*[jnp.asarray(p) for p in primals])
        return
    out = row.ours(*[asarray(p) for p in primals])
    want = row.theirs(*[jnp.asarray(p) for p in primals])
    got_leaves = [o.numpy() for o in _leaves(out)]
    want_leaves = [np.asarray(w) for w in _leaves(want)]
    assert len(got_leaves) == len(want_leaves)
    for i, (o, w) in enumerate(zip(_leaves(out), want_leaves, strict=True)):
        assert o.dtype is rt.dtype(w.dtype), (i, o.dtype, w.dtype)
    for i, (g, w) in enumerate(zip(_values(got_leaves, want_leaves, row.eig_order), want_leaves, strict=True)):
        close(g, w, dtype, f"value {i}")
    if not row.grad:
        return
    rng = np.random.default_rng(99)
    tangents = [_randn(rng, p.shape, dtype) for p in primals]
    cts = [_randn(rng, w.shape, rt.dtype(w.dtype)) for w in want_leaves]
    jprimals, jtangents = tuple(jnp.asarray(p) for p in primals), tuple(jnp.asarray(t) for t in tangents)
    adjoint_only = row.complex_vjp_is_adjoint and dtype.kind == "complex"
    if adjoint_only:
        _, jtout = jax_oracles.jvp(row.theirs, jprimals, jtangents)
    else:  # JAX's JVP and VJP from one compiled program
        conj_cts = tuple(np.conj(c) for c in cts) if isinstance(want, tuple) else np.conj(cts[0])
        _, jtout, jgrads = jax_oracles.jvp_and_vjp(row.theirs, jprimals, jtangents, conj_cts)
    _, tout = jvp(row.ours, [asarray(p) for p in primals], [asarray(t) for t in tangents])
    for i, (t, jt) in enumerate(zip(_leaves(tout), _leaves(jtout), strict=True)):
        close(np.zeros(np.shape(jt)) if is_zero(t) else t.numpy(), jt, dtype, f"JVP {i}")
    ct_arg = tuple(asarray(c) for c in cts) if isinstance(out, tuple) else asarray(cts[0])
    grads = vjp(row.ours, *[asarray(p) for p in primals])[1](ct_arg)
    if adjoint_only:
        # <ct, J t> (J: JAX's JVP) == <our VJP(ct), t>, the real inner product
        lhs = sum(float(np.real(np.vdot(c, np.asarray(jt)))) for c, jt in zip(cts, _leaves(jtout), strict=True))
        rhs = sum(float(np.real(np.vdot(g.numpy(), t))) for g, t in zip(grads, tangents, strict=True))
        close(np.asarray(rhs), np.asarray(lhs), dtype, "VJP (adjoint of JAX's JVP)")
        return
    for i, (g, jg) in enumerate(zip(grads, jgrads, strict=True)):
        expected = np.conj(np.asarray(jg))
        close(np.zeros(expected.shape) if g is None or is_zero(g) else g.numpy(), expected, dtype, f"VJP {i}")


GRAD_CASES = [(name, row) for name, row, batch in CASES if row.grad and row.fd and batch == "single"]


@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
@pytest.mark.parametrize(("name", "row"), GRAD_CASES, ids=[f"{n}-{r.id}" for n, r in GRAD_CASES])
def test_check_grads(name: str, row: Row, dtype: rt.DType) -> None:
    """Finite differences and the adjoint identity (``check_grads``), orders 1 and 2."""
    if row.real_only and dtype.kind == "complex":
        return  # refused (test_matches_jax_numpy_linalg checks it)
    check_grads(row.ours, [asarray(p) for p in row.make(dtype, ())], order=row.order)


@pytest.mark.parametrize("storage", [np.float16, jnp.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("ord", [None, 1, math.inf, 0, 3], ids=str)
def test_norms_of_half_floats_accumulate_as_jax_numpy(storage: Any, ord: Any) -> None:  # noqa: A002
    # 300 elements of 30: their squares' sum overflows float16 unless accumulated in float32
    x = np.linspace(-30, 30, 300).astype(storage)
    got = L.norm(asarray(x), ord)
    want = np.asarray(jnp.linalg.norm(jnp.asarray(x), ord))
    assert got.dtype is rt.dtype(want.dtype)
    np.testing.assert_array_equal(got.numpy().astype(np.float64), want.astype(np.float64))


def test_eig_eigenvectors_are_right_eigenvectors() -> None:
    a = general((2, 4, 4), rt.float64, 3)
    w, v = L.eig(asarray(a))
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[..., None, :], atol=1e-12)
    with pytest.raises(LinalgDerivativeError, match="eigenvectors"):
        jvp(lambda x: L.eig(x).eigenvectors, [asarray(a)], [asarray(a)])


def test_hermitian_svd_reconstructs_and_matches_the_general_svd() -> None:
    a = indefinite((2, 4, 4), rt.complex128, 1)
    u, s, vh = L.svd(asarray(a), hermitian=True)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a, atol=1e-12)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), atol=1e-12)


# -- integer inputs: each policy's library decides ----------------------------------------------------


INT_CALLS: dict[str, Callable[[Any], Any]] = {
    "inv": L.inv, "det": L.det, "slogdet": lambda a: L.slogdet(a)[1], "qr": lambda a: L.qr(a)[1],
    "svd": lambda a: L.svd(a)[1], "svdvals": L.svdvals, "cholesky": L.cholesky, "eigh": lambda a: L.eigh(a)[0],
    "eigvalsh": L.eigvalsh, "eig": lambda a: L.eig(a)[0], "eigvals": L.eigvals, "norm": L.norm,
    "matrix_norm": L.matrix_norm, "solve": lambda a: L.solve(a, a), "lu_factor": lambda a: L.lu_factor(a)[0],
}  # fmt: skip
JNP_INT_CALLS: dict[str, Callable[[Any], Any]] = {
    "inv": jnp.linalg.inv, "det": jnp.linalg.det, "slogdet": lambda a: jnp.linalg.slogdet(a)[1],
    "qr": lambda a: jnp.linalg.qr(a)[1], "svd": lambda a: jnp.linalg.svd(a)[1], "svdvals": jnp.linalg.svdvals,
    "cholesky": jnp.linalg.cholesky, "eigh": lambda a: jnp.linalg.eigh(a)[0], "eigvalsh": jnp.linalg.eigvalsh,
    "eig": lambda a: jnp.linalg.eig(a)[0], "eigvals": jnp.linalg.eigvals, "norm": jnp.linalg.norm,
    "matrix_norm": jnp.linalg.matrix_norm, "solve": lambda a: jnp.linalg.solve(a, a),
    "lu_factor": lambda a: jsl.lu_factor(a)[0],
}  # fmt: skip

_INT_MATRIX = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]])


@pytest.mark.parametrize("storage", [np.int32, np.int64, np.uint8, np.bool_], ids=lambda t: t.__name__)
@pytest.mark.parametrize("name", sorted(INT_CALLS))
def test_integer_inputs_follow_jax_numpy(name: str, storage: type) -> None:
    # bool: unit upper triangular (invertible; its symmetric part is positive definite)
    a: np.ndarray = (np.triu(np.tril(np.ones((3, 3)), 1)) if storage is np.bool_ else _INT_MATRIX).astype(storage)
    got = INT_CALLS[name](asarray(a))
    want = np.asarray(JNP_INT_CALLS[name](jnp.asarray(a)))
    assert got.dtype is rt.dtype(want.dtype)
    close(got.numpy(), want, got.dtype if got.dtype.kind == "complex" else rt.float32, name)


def test_integer_inputs_under_numpy_and_torch() -> None:
    a = asarray(_INT_MATRIX.astype(np.int32))
    with rt.policy("numpy"):
        assert L.inv(a).dtype is rt.float64 == rt.dtype(np.linalg.inv(_INT_MATRIX.astype(np.int32)).dtype)
        assert L.norm(a).dtype is rt.float64
    with rt.policy("torch"), pytest.raises(OpTypeError, match=r"linalg\.inv: .*int32.*torch\.linalg.*i32\[3,3\]"):
        L.inv(a)


def test_an_integer_input_is_recorded_as_a_convert() -> None:
    names = [e.op.name for e in rt.trace(lambda t: L.det(t), asarray(_INT_MATRIX.astype(np.int32))).eqns]
    assert names == ["convert", "custom_jvp_call"]  # det of a tracked operand: one call with its rule
    names = [e.op.name for e in rt.trace(lambda t: L.inv(t), asarray(_INT_MATRIX.astype(np.int32))).eqns]
    assert names[0] == "convert" and "lu" in names


# -- errors --------------------------------------------------------------------------------------------


_F32_34 = asarray(np.ones((3, 4), np.float32))
_F64_33 = asarray(np.eye(3))
_VEC = asarray(np.ones(3))
_NOT_AN_INT: Any = 1.5

ERRORS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("inv-non-square", lambda: L.inv(_F32_34), ShapeError, r"linalg\.inv: .*square .*f32\[3,4\].*policy 'jax'"),
    ("det-rank-1", lambda: L.det(_VEC), ShapeError, r"linalg\.det: .*rank >= 2, got rank 1.*f64\[3\]"),
    ("qr-rank-1", lambda: L.qr(_VEC), ShapeError, r"linalg\.qr: .*rank >= 2"),
    ("qr-bad-mode", lambda: L.qr(_F64_33, mode="economic"), ShapeError, r"linalg\.qr: mode .*'economic'"),
    ("eigh-bad-uplo", lambda: L.eigh(_F64_33, UPLO="X"), ShapeError, r"linalg\.eigh: UPLO .*'X'"),
    ("cholesky-non-square", lambda: L.cholesky(_F32_34), ShapeError, r"linalg\.cholesky: .*square"),
    ("svd-f16", lambda: L.svd(asarray(np.ones((2, 2), np.float16))), OpTypeError,
     r"linalg\.svd: dtype f16 not accepted.*f16\[2,2\].*policy"),
    ("norm-f16-nuc", lambda: L.norm(asarray(np.ones((2, 2), np.float16)), "nuc"), OpTypeError, r"linalg\.norm: .*f16"),
    ("norm-bad-vector-ord", lambda: L.norm(_VEC, "fro"), ShapeError, r"linalg\.norm: invalid order 'fro' for a vector"),
    ("norm-bad-matrix-ord", lambda: L.norm(_F64_33, 3), ShapeError, r"linalg\.norm: invalid order 3 for a matrix"),
    ("norm-bad-matrix-str", lambda: L.norm(_F64_33, "inf"), ShapeError, r"invalid order 'inf' for a matrix"),
    ("norm-three-axes", lambda: L.norm(asarray(np.ones((2, 2, 2))), 2), ShapeError, r"linalg\.norm: takes one axis"),
    ("norm-axis-range", lambda: L.norm(_F64_33, axis=2), ShapeError, r"linalg\.norm: axis 2 is out of range"),
    ("norm-axis-repeat", lambda: L.norm(_F64_33, axis=(1, -1)), ShapeError, r"repeats an axis"),
    ("vector-norm-str", lambda: L.vector_norm(_VEC, "nuc"), ShapeError, r"linalg\.vector_norm: invalid order"),
    ("matrix-norm-rank-1", lambda: L.matrix_norm(_VEC), ShapeError, r"linalg\.matrix_norm: .*rank >= 2"),
    ("slogdet-method", lambda: L.slogdet(_F64_33, method="svd"), ShapeError, r"linalg\.slogdet: method"),
    ("solve-b-shape", lambda: L.solve(_F64_33, asarray(np.ones(4))), ShapeError,
     r"linalg\.solve: b must be \[3\] or \[\.\.\., 3, k\].*f64\[3,3\], f64\[4\]"),
    ("solve-batch", lambda: L.solve(asarray(np.ones((2, 3, 3))), asarray(np.ones((4, 3, 1)))), ShapeError,
     r"linalg\.solve: the batch dims"),
    ("matrix-power-float-n", lambda: L.matrix_power(_F64_33, _NOT_AN_INT), OpTypeError,
     r"linalg\.matrix_power: .*integer"),
    ("matrix-power-non-square", lambda: L.matrix_power(_F32_34, 2), ShapeError, r"linalg\.matrix_power: .*square"),
    ("lu-solve-trans", lambda: L.lu_solve(L.lu_factor(_F64_33), _VEC, trans=3), OpValueError,
     r"linalg\.lu_solve: trans must be 0 .*got 3 .*f64\[3,3\], f64\[3\]; policy"),
    ("lu-solve-b", lambda: L.lu_solve(L.lu_factor(_F64_33), asarray(np.ones(2))), ShapeError,
     r"linalg\.lu_solve: b must be"),
    ("lu-solve-batch", lambda: L.lu_solve(L.lu_factor(_F64_33), asarray(np.ones((2, 3, 1)))), ShapeError,
     r"linalg\.lu_solve: b must be .*broadcast to lu's \[\]"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "cls", "pattern"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_function_operands_and_policy(call: Callable[[], Any], cls: type, pattern: str) -> None:
    with pytest.raises(cls, match=pattern):
        call()


def test_jax_numpy_refuses_what_we_refuse() -> None:
    # the same inputs are errors in jax.numpy.linalg (its messages differ)
    with pytest.raises((ValueError, TypeError)):
        jnp.linalg.inv(jnp.ones((3, 4)))
    with pytest.raises(ValueError):
        jnp.linalg.qr(jnp.eye(3), mode="economic")
    with pytest.raises(ValueError):
        jnp.linalg.norm(jnp.ones(3), "fro")
    with pytest.raises(ValueError):
        jnp.linalg.norm(jnp.eye(3), 3)
    with pytest.raises(ValueError):
        jnp.linalg.norm(jnp.ones((2, 2, 2)), 2)
    with pytest.raises(ValueError):
        jnp.linalg.eigh(jnp.eye(3), UPLO="X")
    with pytest.raises(TypeError):
        jnp.linalg.matrix_power(jnp.eye(3), 1.5)


# -- recording, replay, vmap ------------------------------------------------------------------------------


def test_a_recording_replays_and_holds_only_vocabulary_ops() -> None:
    a = general((3, 3), rt.float64, 20)

    def f(x: Tensor) -> Tensor:
        return F.add(F.add(L.norm(x, "nuc"), L.slogdet(x).logabsdet), L.norm(L.solve(x, L.qr(x).R), 2))

    graph = rt.trace(f, asarray(a))
    names = {e.op.name for e in graph.eqns}
    assert {"svd", "lu", "qr", "triangular_solve"} <= names
    other = general((3, 3), rt.float64, 21)
    (replayed,) = rt.evaluate(graph, asarray(other))
    np.testing.assert_allclose(replayed.numpy(), f(asarray(other)).numpy(), rtol=1e-12)


def test_vmap_of_the_namespace_matches_the_batched_call() -> None:
    a = general((3, 3, 3), rt.float64, 22)
    for fn in (L.det, L.inv, lambda x: L.norm(x, 2, axis=(-2, -1)), L.eigvalsh):
        batched = autodiff.vmap(fn)(asarray(a)).numpy()
        np.testing.assert_allclose(batched, fn(asarray(a)).numpy(), rtol=1e-12, atol=1e-12)


def test_the_namespace_lowers_to_jax_with_its_derivative() -> None:
    a = general((2, 3, 3), rt.float64, 23)

    def loss(x: Tensor) -> Tensor:
        terms = [L.norm(x, "nuc", axis=(-2, -1)), L.slogdet(x).logabsdet, L.eigvalsh(x)[..., 0], L.det(L.inv(x))]
        return F.reduce_sum(F.add(F.add(terms[0], terms[1]), F.add(terms[2], terms[3])), 0)

    want = jax_oracles.jitted(
        jax.grad(
            lambda x: (
                jnp.linalg.norm(x, "nuc", axis=(-2, -1))
                + jnp.linalg.slogdet(x)[1]
                + jnp.linalg.eigvalsh(x)[..., 0]
                + jnp.linalg.det(jnp.linalg.inv(x))
            ).sum()
        )
    )(jnp.asarray(a))
    got = autodiff.jit(autodiff.grad(loss))(asarray(a))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_refused_derivatives_are_those_jax_refuses() -> None:
    tall = asarray(general((4, 3), rt.float64, 24))
    # complete QR of a tall matrix is differentiable, as in JAX 0.10 (tests/autodiff/test_rules_linalg_eig_qr.py)
    assert jvp(lambda x: L.qr(x, mode="complete").Q, [tall], [tall])[1].shape == (4, 4)
    with pytest.raises(LinalgDerivativeError, match="svd"):
        jvp(lambda x: L.svd(x).U, [tall], [tall])


_ANY_ARRAY = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4),
    elements=st.floats(-10, 10, width=64) | st.sampled_from([0.0, 1.0, -1.0]),
)


@settings(max_examples=80, deadline=None)
@given(x=_ANY_ARRAY, ord=st.sampled_from(_VECTOR_ORDS), axis=st.sampled_from([-1, 0]), keepdims=st.booleans())
def test_vector_norms_match_numpy_on_any_array(x: np.ndarray, ord: Any, axis: int, keepdims: bool) -> None:  # noqa: A002
    """Every vector order against numpy.linalg.norm, zeros and ties included (values only)."""
    with np.errstate(divide="ignore", over="ignore"):  # NumPy's own |0|**-1.5
        want = np.linalg.norm(x, ord, axis=axis, keepdims=keepdims)
    got = L.norm(asarray(x), ord, axis=axis, keepdims=keepdims).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@settings(max_examples=80, deadline=None)
@given(x=_ANY_ARRAY, ord=st.sampled_from(_MATRIX_ORDS), swap=st.booleans(), keepdims=st.booleans())
def test_matrix_norms_match_numpy_on_any_matrix(x: np.ndarray, ord: Any, swap: bool, keepdims: bool) -> None:  # noqa: A002
    """Every matrix order against numpy.linalg.norm, rank-deficient matrices included (values only)."""
    axis = (-1, -2) if swap else (-2, -1)
    want = np.linalg.norm(x, ord, axis=axis, keepdims=keepdims)
    got = L.norm(asarray(x), ord, axis=axis, keepdims=keepdims).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)

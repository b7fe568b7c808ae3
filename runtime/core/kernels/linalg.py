"""Kernels of the linear algebra ops (``runtime.core.ops`` families ``linalg``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core.kernels._common import _E8M0, _WIDEN, KERNELS, Array, _back

#: The storages LAPACK computes in. NumPy's linalg computes float32 / complex64 in double (its
#: ``_commonType``) and drives LAPACK its own way; XLA (so ``autodiff.jit`` and JAX) computes in the
#: operand's precision. These decompositions call LAPACK's routines for the operand's precision
#: instead (SciPy's, the ones jaxlib's CPU kernels call too: geev, syevd/heevd, gesdd), so eager
#: and jit results agree, eigenvalue order and eigenvector signs included.
_LAPACK = (np.dtype(np.float32), np.dtype(np.complex64), np.dtype(np.float64), np.dtype(np.complex128))


def _lapack(x: Array) -> Any:
    """``scipy.linalg`` where ``x`` is a non-empty batch of a LAPACK storage and SciPy is there
    (JAX needs it); ``None`` otherwise (NumPy's routines then)."""
    if x.dtype not in _LAPACK or x.size == 0:
        return None
    try:
        import scipy.linalg
    except ImportError:  # pragma: no cover - SciPy comes with JAX
        return None
    return scipy.linalg


def _each_matrix(x: Array, factor: Any, outs: Sequence[tuple[tuple[int, ...], np.dtype[Any]]]) -> tuple[Array, ...]:
    """``factor`` run matrix by matrix (SciPy's routines take one matrix); a matrix LAPACK cannot
    factor (NaN or inf entries) gets NaN in every output, as XLA's kernels give it."""
    batch = x.shape[:-2]
    flat = x.reshape((-1, *x.shape[-2:]))
    results = [np.empty((flat.shape[0], *shape), dtype) for shape, dtype in outs]
    for i, m in enumerate(flat):
        try:
            got = factor(m) if np.isfinite(m).all() else None
        except np.linalg.LinAlgError:
            got = None
        for j, r in enumerate(results):
            r[i] = (complex(np.nan, np.nan) if r.dtype.kind == "c" else np.nan) if got is None else got[j]
    return tuple(np.ascontiguousarray(r.reshape((*batch, *r.shape[1:]))) for r in results)


def eigh_kernel(x: Array, *, lower: bool = True) -> tuple[Array, ...]:
    """(eigenvectors, eigenvalues ascending) reading only the ``lower`` (or upper) triangle."""
    sl = _lapack(x)
    if sl is not None:
        n = x.shape[-1]

        def factor(m: Array) -> tuple[Array, Array]:
            w, v = sl.eigh(m, lower=lower, driver="evd", check_finite=False)
            return v, w

        return _each_matrix(x, factor, [((n, n), x.dtype), ((n,), x.real.dtype)])
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return (v, w)


KERNELS["eigh"] = eigh_kernel


def cholesky_kernel(x: Array) -> tuple[Array, ...]:
    """Lower Cholesky factor from the lower triangle; a non-positive-definite matrix gives NaNs (like JAX)."""
    try:
        return (np.linalg.cholesky(x),)
    except np.linalg.LinAlgError:
        pass
    # NumPy fails the whole batch; JAX marks only the failing matrices (NaN on
    # and below the diagonal, zeros above).
    flat = x.reshape((-1, *x.shape[-2:]))
    out = np.empty_like(flat)
    failed = np.tril(np.full(x.shape[-2:], np.nan, dtype=x.dtype))
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            out[i] = failed
    return (out.reshape(x.shape),)


KERNELS["cholesky"] = cholesky_kernel


def triangular_solve_kernel(
    a: Array,
    b: Array,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> tuple[Array, ...]:
    """lax.linalg.triangular_solve: op(a) @ x = b (left_side) or x @ op(a) = b.

    op(a) is a, a.T, conj(a) or a.H per transpose_a/conjugate_a; only the
    ``lower`` (or upper) triangle of a is read, and its diagonal is taken as
    ones when ``unit_diagonal``. Solved by substitution, so a zero pivot gives
    inf/NaN as in LAPACK's trsm instead of an exception.
    """
    storage = a.dtype
    m = a.shape[-1]
    if storage == _E8M0 and m > 1:
        # XLA solves float8_e8m0fnu systems by inverting the triangle, whose zeros and
        # negated entries are NaN in a format without zero or sign: every result is NaN.
        return (np.full(b.shape, np.nan, dtype=storage),)
    wide = _WIDEN.get(storage)
    if wide is not None:
        a, b = a.astype(wide), b.astype(wide)
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri = tri.copy()
        idx = np.arange(m)
        tri[..., idx, idx] = 1
    mat = np.swapaxes(tri, -1, -2) if transpose_a else tri
    if conjugate_a and np.iscomplexobj(mat):
        mat = np.conjugate(mat)
    is_lower = lower != transpose_a
    rhs = b
    if not left_side:
        # x op(a) = b  <=>  op(a)^T x^T = b^T: transposing flips the triangle.
        mat = np.swapaxes(mat, -1, -2)
        rhs = np.swapaxes(b, -1, -2)
        is_lower = not is_lower
    x = np.zeros(rhs.shape, dtype=np.result_type(mat, rhs))
    order = range(m) if is_lower else range(m - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(0, i) if is_lower else slice(i + 1, m)
            acc = rhs[..., i, :] - np.matmul(mat[..., i : i + 1, done], x[..., done, :])[..., 0, :]
            x[..., i, :] = acc if unit_diagonal else acc / mat[..., i, i, None]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    x = np.ascontiguousarray(x)
    return (_back(x, storage) if wide is not None else x,)


KERNELS["triangular_solve"] = triangular_solve_kernel


# -- factorisations: lu, qr, svd, eig ------------------------------------------------------------


def _abs1(x: Array) -> Array:
    """LAPACK's pivot size (i?amax): |x| for reals, |re| + |im| for complex."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def lu_kernel(x: Array) -> tuple[Array, ...]:
    """LU with partial row pivoting, as LAPACK's getrf: ``(lu, pivots, permutation)``.

    ``lu`` packs the unit-lower L (below the diagonal) and U; ``pivots[i]`` is the row
    swapped with row i at step i and ``permutation`` the resulting row order (``x[perm] =
    L @ U``), both int32 and 0-based, as ``jax.lax.linalg.lu``. The pivot is the first
    largest entry by LAPACK's measure (|re| + |im| for complex); a zero pivot column is
    left unscaled (getrf's ``info > 0``), so a singular matrix factors without an error.
    NumPy has no LU: this is getrf's right-looking algorithm, vectorised over the batch.
    """
    *batch, m, n = x.shape
    k = min(m, n)
    count = int(np.prod(batch, dtype=np.int64))  # (not -1: a (0, 0) matrix has no size to infer from)
    a = np.array(x.reshape((count, m, n)), copy=True)
    pivots = np.zeros((count, k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (count, 1))
    every = np.arange(count)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(_abs1(a[:, j:, j]), axis=1)
            pivots[:, j] = p
            row = a[every, j].copy()
            a[every, j] = a[every, p]
            a[every, p] = row
            idx = perm[every, j].copy()
            perm[every, j] = perm[every, p]
            perm[every, p] = idx
            pivot = a[:, j, j]
            nonzero = pivot != 0
            # getrf scales by the reciprocal of the pivot (dscal of 1 / a_jj)
            recip = np.where(nonzero, 1 / np.where(nonzero, pivot, 1), 1).astype(a.dtype)
            a[:, j + 1 :, j] *= recip[:, None]
            a[:, j + 1 :, j + 1 :] -= a[:, j + 1 :, j, None] * a[:, j, None, j + 1 :]
    return (a.reshape(x.shape), pivots.reshape((*batch, k)), perm.reshape((*batch, m)))


KERNELS["lu"] = lu_kernel


def qr_kernel(x: Array, *, full_matrices: bool = True) -> tuple[Array, ...]:
    """Householder QR (LAPACK geqrf + orgqr, through NumPy), the signs LAPACK gives: ``(q, r)``."""
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return (np.ascontiguousarray(q, dtype=x.dtype), np.ascontiguousarray(r, dtype=x.dtype))


KERNELS["qr"] = qr_kernel


def _per_matrix(x: Array, factor: Any, outs: Sequence[tuple[tuple[int, ...], np.dtype[Any]]]) -> tuple[Array, ...]:
    """``factor`` (NumPy's, which fails a whole batch on a matrix LAPACK cannot factor) run
    matrix by matrix: a matrix it refuses (NaN or inf entries: "SVD did not converge", "Array
    must not contain infs or NaNs") gets NaN in every output, as XLA's kernels (and so JAX)
    give it. ``outs`` are the outputs' per-matrix shapes and dtypes."""
    batch = x.shape[:-2]
    flat = x.reshape((-1, *x.shape[-2:]))
    results = [np.empty((flat.shape[0], *shape), dtype) for shape, dtype in outs]
    for i, m in enumerate(flat):
        try:
            got = factor(m)
        except np.linalg.LinAlgError:
            for r in results:
                r[i] = complex(np.nan, np.nan) if r.dtype.kind == "c" else np.nan
            continue
        for r, g in zip(results, got, strict=True):
            r[i] = g
    return tuple(np.ascontiguousarray(r.reshape((*batch, *r.shape[1:]))) for r in results)


def svd_kernel(x: Array, *, full_matrices: bool = True, compute_uv: bool = True) -> tuple[Array, ...]:
    """Singular values descending (LAPACK gesdd, through NumPy): ``(u, s, vh)`` or ``(s,)``.

    Singular vectors are defined up to a phase per pair (u_k, vh_k); this is LAPACK's gauge,
    as XLA CPU's, which JAX does not normalise either. A matrix LAPACK cannot decompose (NaN
    entries) gives NaN in every output, as in JAX, where NumPy raises for the whole batch.
    """
    real = x.real.dtype
    m, n = x.shape[-2:]
    k = min(m, n)
    sl = _lapack(x)
    if sl is not None:
        um, vn = (m, n) if full_matrices else (k, k)
        if not compute_uv:
            return _each_matrix(x, lambda a: (sl.svd(a, compute_uv=False, check_finite=False, lapack_driver="gesdd"),),
                                [((k,), real)])  # fmt: skip
        shapes = [((m, um), x.dtype), ((k,), real), ((vn, n), x.dtype)]
        return _each_matrix(
            x, lambda a: sl.svd(a, full_matrices=full_matrices, check_finite=False, lapack_driver="gesdd"), shapes
        )
    try:
        if not compute_uv:
            return (np.ascontiguousarray(np.linalg.svd(x, compute_uv=False), dtype=real),)
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
        return tuple(np.ascontiguousarray(a, dtype=d) for a, d in ((u, x.dtype), (s, real), (vh, x.dtype)))
    except np.linalg.LinAlgError:
        pass
    if not compute_uv:
        return _per_matrix(x, lambda a: (np.linalg.svd(a, compute_uv=False),), [((k,), real)])
    um, vn = (m, n) if full_matrices else (k, k)
    shapes = [((m, um), x.dtype), ((k,), real), ((vn, n), x.dtype)]
    return _per_matrix(x, lambda a: np.linalg.svd(a, full_matrices=full_matrices), shapes)


KERNELS["svd"] = svd_kernel


def _geev_normalise(v: Array) -> Array:
    """geev's eigenvector scaling: unit 2-norm, largest component (by modulus) real and positive."""
    if v.size == 0:  # no eigenvector (a 0x0 matrix) to scale
        return v
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    v = v * (np.conj(big) / np.abs(big))
    rows = np.argmax(np.abs(v), axis=-2)[..., None, :]
    np.put_along_axis(v, rows, np.take_along_axis(v, rows, axis=-2).real.astype(v.dtype), axis=-2)
    return v


def eig_kernel(
    x: Array, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
) -> tuple[Array, ...]:  # fmt: skip
    """Eigen-decomposition of a general matrix (LAPACK geev, through NumPy), always complex:
    ``(w, [vl], [vr])`` with ``x @ vr = vr * w`` and ``vl^H @ x = w * vl^H``, each eigenvector
    of unit norm with its largest component real (geev's scaling). The left eigenvectors are
    the rows of ``vr^-1``, rescaled. ``enable_eigvec_derivs`` changes only the derivative."""
    out = np.dtype(np.complex64) if x.dtype in (np.float32, np.complex64) else np.dtype(np.complex128)
    sl = _lapack(x)
    if sl is not None:  # sgeev / cgeev: both eigenvector sets from LAPACK itself, as XLA's
        n = x.shape[-1]
        left, right = compute_left_eigenvectors, compute_right_eigenvectors

        def factor(m: Array) -> list[Array]:
            got = sl.eig(m, left=left, right=right, check_finite=False)
            return [np.asarray(a).astype(out) for a in (got if isinstance(got, tuple) else (got,))]

        shapes = [((n,), out)] + [((n, n), out)] * (int(left) + int(right))
        return _each_matrix(x, factor, shapes)
    try:
        w, vr = np.linalg.eig(x)
    except np.linalg.LinAlgError:
        # NumPy refuses a batch holding NaN or inf; XLA's geev (JAX) gives NaN for that matrix
        n = x.shape[-1]
        w, vr = _per_matrix(x, np.linalg.eig, [((n,), out), ((n, n), out)])
    w, vr = w.astype(out), vr.astype(out)
    result = [np.ascontiguousarray(w)]
    if compute_left_eigenvectors:
        vl = np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2))
        result.append(np.ascontiguousarray(_geev_normalise(vl).astype(out)))
    if compute_right_eigenvectors:
        result.append(np.ascontiguousarray(vr))
    return tuple(result)


KERNELS["eig"] = eig_kernel


def geqrf_kernel(x: Array) -> tuple[Array, ...]:
    """LAPACK geqrf in the operand's precision (SciPy's ``?geqrf``, as XLA's CPU kernel calls it):
    ``(a, taus)``, R on and above the diagonal and the Householder vectors below it (their
    implicit unit leading entries left out). Without SciPy, NumPy's ``qr(mode="raw")`` (which
    computes single precision in double and returns the transpose)."""
    m, n = x.shape[-2:]
    k = min(m, n)
    if _lapack(x) is not None:
        from scipy.linalg import lapack

        routine = lapack.get_lapack_funcs("geqrf", dtype=x.dtype)

        def factor(a: Array) -> tuple[Array, Array]:
            qr, tau, _work, info = routine(a)
            if info != 0:  # pragma: no cover - geqrf fails only on an illegal argument
                raise np.linalg.LinAlgError(f"geqrf info={info}")
            return qr, tau

        return _each_matrix(x, factor, [((m, n), x.dtype), ((k,), x.dtype)])
    if x.size == 0:
        return (np.zeros(x.shape, x.dtype), np.zeros((*x.shape[:-2], k), x.dtype))
    flat = x.reshape((-1, m, n))
    packed = np.empty_like(flat)
    taus = np.empty((flat.shape[0], k), x.dtype)
    for i, a in enumerate(flat):
        h, tau = np.linalg.qr(a, mode="raw")
        packed[i], taus[i] = h.T.astype(x.dtype), tau.astype(x.dtype)
    return (packed.reshape(x.shape), taus.reshape((*x.shape[:-2], k)))


KERNELS["geqrf"] = geqrf_kernel

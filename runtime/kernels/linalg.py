"""Kernels of the linear algebra ops (``runtime.ops`` families ``linalg``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.kernels``.
"""

from __future__ import annotations

import numpy as np

from runtime.kernels._common import _E8M0, _WIDEN, KERNELS, Array, _back


def eigh_kernel(x: Array, *, lower: bool = True) -> tuple[Array, ...]:
    """(eigenvectors, eigenvalues ascending) reading only the ``lower`` (or upper) triangle."""
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

"""Derivative rules for the linear-algebra ops: ``eigh``, ``cholesky``, ``triangular_solve``.

Every rule is built from ``runtime.core.lax`` ops only (matrix products are
``dot_general``, masks come from ``iota`` + comparisons + ``select``), so a
derivative computed under the recorder is a graph of vocabulary ops and can be
differentiated again. All rules accept leading batch dimensions.

Conventions (see ``autodiff.rules``): reverse mode is the adjoint of forward
mode under the real inner product ``<a, b> = Re(sum(conj(a) * b))``, so for
complex inputs ``ours(ct) == conj(jax_vjp(conj(ct)))``.

Symmetric / Hermitian inputs
----------------------------
``eigh`` and ``cholesky`` are defined on symmetric (real) or Hermitian
(complex) matrices. Their rules differentiate the function
``A -> op((A + A^H) / 2)``, which is what ``jax.lax.linalg.eigh`` and
``jax.lax.linalg.cholesky`` differentiate with their default
``symmetrize_input=True``:

* the JVP uses only the Hermitian part ``(dA + dA^H) / 2`` of a tangent; the
  anti-Hermitian part of a tangent is ignored;
* the VJP returns a Hermitian (real: symmetric) cotangent: the component of
  the cotangent along anti-Hermitian directions is zero. It is the exact
  adjoint of the JVP above, and for Hermitian perturbations it is the true
  gradient of the eager op.

The eager kernels read only one triangle of the input (like LAPACK), so along a
*non*-Hermitian direction the finite-difference derivative of the raw kernel
differs from these rules; the rules are the derivative of the symmetrised
function, the only one that does not depend on which triangle is read.

Degenerate eigenvalues make the eigenvector derivative undefined: the rules
then produce inf/nan, as JAX's do.
"""

from __future__ import annotations

from typing import Any

from autodiff.rules import JVP_RULES, VJP_RULES
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core import lax as F
from runtime.core.errors import CastwiseError
from runtime.core.tensor import Tensor
from runtime.numpy.linalg_factor import _H, _mm, _mT

# -- helpers (compositions of vocabulary ops) -----------------------------------------------


def _is_complex(x: Any) -> bool:
    return bool(x.dtype.kind == "complex")


def _sym(x: Tensor) -> Tensor:
    """The Hermitian (real: symmetric) part ``(x + x^H) / 2``."""
    return F.mul(F.add(x, _H(x)), 0.5)


def _mask(shape: tuple[int, ...], kind: str) -> Tensor:
    """A bool mask over the last two axes of ``shape`` (broadcast over batch dims).

    ``kind``: ``eye`` (i == j), ``lower`` (i >= j), ``strict_lower`` (i > j),
    ``upper`` (i <= j), ``strict_upper`` (i < j).
    """
    n, m = shape[-2], shape[-1]
    rows = F.iota("int32", (n, m), 0)
    cols = F.iota("int32", (n, m), 1)
    compare = {"eye": F.eq, "lower": F.ge, "strict_lower": F.gt, "upper": F.le, "strict_upper": F.lt}[kind]
    mask = compare(rows, cols)
    if len(shape) > 2:
        nd = len(shape)
        mask = F.broadcast_in_dim(mask, shape, (nd - 2, nd - 1))
    return mask


def _where(mask: Tensor, x: Tensor, fill: complex = 0) -> Tensor:
    """``x`` where ``mask`` holds, else ``fill`` (a constant of ``x``'s dtype)."""
    return F.select(mask, x, F.full(x.shape, fill, x.dtype))


def _triangle(x: Tensor, lower: bool, unit_diagonal: bool) -> Tensor:
    """The triangle of ``x`` a triangular solve reads (strict when the diagonal is implicit)."""
    kind = ("strict_" if unit_diagonal else "") + ("lower" if lower else "upper")
    return _where(_mask(x.shape, kind), x)


def _diag_part(x: Tensor) -> Tensor:
    """The diagonal ``x[..., k, k]`` of the last two axes, shape ``x.shape[:-1]``."""
    return F.reduce_sum(_where(_mask(x.shape, "eye"), x), (x.ndim - 2,))


def _diag_matrix(d: Tensor) -> Tensor:
    """The diagonal matrix with ``d`` (shape ``(..., n)``) on its diagonal."""
    n = d.shape[-1]
    shape = (*d.shape, n)
    nd = len(shape)
    spread = F.broadcast_in_dim(d, shape, (*range(nd - 2), nd - 1))  # [..., i, j] = d[..., j]
    return _where(_mask(shape, "eye"), spread)


def _op_a(x: Tensor, transpose_a: bool, conjugate_a: bool) -> Tensor:
    """``op(x)`` as ``triangular_solve`` applies it: optional conjugate, optional transpose."""
    if conjugate_a and _is_complex(x):
        x = F.conj(x)
    return _mT(x) if transpose_a else x


# -- eigh ---------------------------------------------------------------------------------------


def _eig_gap_inverse(w: Tensor, dtype: Any) -> Tensor:
    """``F[..., i, j] = 1 / (w_j - w_i)`` off the diagonal, 0 on it, in ``dtype``."""
    n = w.shape[-1]
    shape = (*w.shape, n)
    nd = len(shape)
    batch = tuple(range(nd - 2))
    w_j = F.broadcast_in_dim(w, shape, (*batch, nd - 1))
    w_i = F.broadcast_in_dim(w, shape, (*batch, nd - 2))
    eye = _mask(shape, "eye")
    gap = F.select(eye, F.full(shape, 1, w.dtype), F.sub(w_j, w_i))  # 1 on the diagonal: no 1/0
    inv = F.select(eye, F.full(shape, 0, w.dtype), F.reciprocal(gap))
    return inv if inv.dtype is dtype else F.convert(inv, dtype)


def eigh_jvp(primals: Any, tangents: Any, outputs: Any, lower: bool = True) -> list[TangentLike]:
    (t,), (v, w) = tangents, outputs
    if is_zero(t):
        return [Zero.like(v), Zero.like(w)]
    m = _mm(_mm(_H(v), _sym(t)), v)  # v^H sym(dA) v
    dv = _mm(v, F.mul(_eig_gap_inverse(w, v.dtype), m))
    d = _diag_part(m)
    dw = F.real(d) if _is_complex(d) else d
    return [dv, dw]  # dv = v (F o v^H dA v), dw = Re diag(v^H dA v)  (JAX's gauge: v_k^H dv_k = 0)


JVP_RULES["eigh"] = eigh_jvp


def eigh_vjp(cotangents: Any, primals: Any, outputs: Any, needs: Any, lower: bool = True) -> list[TangentLike]:
    (ct_v, ct_w), (x,), (v, w) = cotangents, primals, outputs
    if not needs[0] or (is_zero(ct_v) and is_zero(ct_w)):
        return [Zero.like(x)]
    inner: TangentLike = Zero.like(v)
    if not is_zero(ct_v):
        inner = F.mul(_eig_gap_inverse(w, v.dtype), _mm(_H(v), ct_v))
    if not is_zero(ct_w):
        cw = F.convert(ct_w, v.dtype) if ct_w.dtype is not v.dtype else ct_w
        inner = add_any(inner, _diag_matrix(cw))
    assert isinstance(inner, Tensor)
    return [_sym(_mm(_mm(v, inner), _H(v)))]  # ct_A = sym(v (F o v^H ct_v + diag(ct_w)) v^H)


VJP_RULES["eigh"] = eigh_vjp


# -- cholesky -----------------------------------------------------------------------------------


def _phi(x: Tensor) -> Tensor:
    """The lower triangle of ``x`` with its diagonal halved."""
    low = _where(_mask(x.shape, "lower"), x)
    return F.select(_mask(x.shape, "eye"), F.mul(low, 0.5), low)


def cholesky_jvp(primals: Any, tangents: Any, outputs: Any) -> list[TangentLike]:
    (t,), (chol,) = tangents, outputs
    if is_zero(t):
        return [Zero.like(chol)]
    y = F.triangular_solve(chol, _sym(t), left_side=True, lower=True)  # L^-1 dA
    y = F.triangular_solve(chol, y, left_side=False, lower=True, transpose_a=True, conjugate_a=True)  # ... L^-H
    return [_mm(chol, _phi(y))]  # dL = L phi(L^-1 sym(dA) L^-H)


JVP_RULES["cholesky"] = cholesky_jvp


def cholesky_vjp(cotangents: Any, primals: Any, outputs: Any, needs: Any) -> list[TangentLike]:
    (ct,), (x,), (chol,) = cotangents, primals, outputs
    if not needs[0] or is_zero(ct):
        return [Zero.like(x)]
    z = _phi(_mm(_H(chol), ct))
    z = F.triangular_solve(chol, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True)  # L^-H z
    z = F.triangular_solve(chol, z, left_side=False, lower=True)  # ... L^-1
    return [_sym(z)]  # ct_A = sym(L^-H phi(L^H ct) L^-1)


VJP_RULES["cholesky"] = cholesky_vjp


# -- triangular_solve ---------------------------------------------------------------------------


def triangular_solve_jvp(
    primals: Any, tangents: Any, outputs: Any, left_side: bool = False, lower: bool = False,
    transpose_a: bool = False, conjugate_a: bool = False, unit_diagonal: bool = False,
) -> list[TangentLike]:  # fmt: skip
    (a, _b), (ta, tb), (x,) = primals, tangents, outputs
    rhs: TangentLike = tb
    if not is_zero(ta):
        op_ta = _op_a(_triangle(ta, lower, unit_diagonal), transpose_a, conjugate_a)
        rhs = add_any(rhs, F.neg(_mm(op_ta, x) if left_side else _mm(x, op_ta)))
    if is_zero(rhs):
        return [Zero.like(x)]
    dx = F.triangular_solve(a, rhs, left_side=left_side, lower=lower, transpose_a=transpose_a,
                            conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)  # fmt: skip
    return [dx]  # left: dX = op(A)^-1 (dB - op(dA) X); right: dX = (dB - X op(dA)) op(A)^-1


JVP_RULES["triangular_solve"] = triangular_solve_jvp


def triangular_solve_vjp(
    cotangents: Any, primals: Any, outputs: Any, needs: Any, left_side: bool = False, lower: bool = False,
    transpose_a: bool = False, conjugate_a: bool = False, unit_diagonal: bool = False,
) -> list[TangentLike]:  # fmt: skip
    (ct,), (a, b), (x,) = cotangents, primals, outputs
    if is_zero(ct) or not (needs[0] or needs[1]):
        return [Zero.like(a), Zero.like(b)]
    # the adjoint of op(A)^-1 is op(A)^-H: flip transpose, and conjugate for complex a
    ct_b = F.triangular_solve(a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
                              conjugate_a=conjugate_a != _is_complex(a), unit_diagonal=unit_diagonal)  # fmt: skip
    ct_a: TangentLike = Zero.like(a)
    if needs[0]:
        outer = F.neg(_mm(ct_b, _H(x)) if left_side else _mm(_H(x), ct_b))
        ct_a = _triangle(_op_a(outer, transpose_a, conjugate_a), lower, unit_diagonal)
    ct_b_out = ct_b if needs[1] else Zero.like(b)
    return [ct_a, ct_b_out]  # ct_B = op(A)^-H ct; ct_A = tri(op(-ct_B X^H)) (left) or tri(op(-X^H ct_B)) (right)


VJP_RULES["triangular_solve"] = triangular_solve_vjp


# -- lu, qr, svd, eig: shared pieces ------------------------------------------------------------


class LinalgDerivativeError(CastwiseError, NotImplementedError):
    """A derivative JAX does not define either (qr / svd with full matrices, eigenvectors of eig)."""


def _refuse(op: str, x: Any, why: str) -> LinalgDerivativeError:
    shape = ",".join(map(str, x.shape))
    return LinalgDerivativeError(f"{op}: no derivative for x:{x.dtype.short}[{shape}]: {why} (as in jax.lax.linalg)")


def _scale_cols(x: Tensor, s: Tensor) -> Tensor:
    """``x @ diag(s)``: column j of ``x`` times ``s[..., j]`` (``s`` real, converted to ``x``'s dtype)."""
    nd = x.ndim
    spread = F.broadcast_in_dim(s, x.shape, (*range(nd - 2), nd - 1))
    return F.mul(x, spread if spread.dtype is x.dtype else F.convert(spread, x.dtype))


def _scale_rows(x: Tensor, s: Tensor) -> Tensor:
    """``diag(s) @ x``: row i of ``x`` times ``s[..., i]``."""
    nd = x.ndim
    spread = F.broadcast_in_dim(s, x.shape, (*range(nd - 2), nd - 2))
    return F.mul(x, spread if spread.dtype is x.dtype else F.convert(spread, x.dtype))


def _imag_diagonal(x: Tensor) -> Tensor:
    """``i Im(x_kk)`` on the diagonal, zero elsewhere (complex ``x``): ``(x - conj x) / 2`` on the diagonal."""
    return _where(_mask(x.shape, "eye"), F.mul(F.sub(x, F.conj(x)), 0.5))


def _permutation(permutation: Tensor, dtype: Any) -> Tensor:
    """``P`` with ``P @ a == a[..., permutation, :]``."""
    m = permutation.shape[-1]
    shape = (*permutation.shape, m)
    nd = len(shape)
    rows = F.broadcast_in_dim(permutation, shape, tuple(range(nd - 1)))
    return F.convert(F.eq(rows, F.iota(permutation.dtype, shape, nd - 1)), dtype)


def _resize(x: Tensor, rows: int, cols: int) -> Tensor:
    """The top-left ``rows x cols`` block of ``x``, zero-padded where ``x`` is smaller."""
    *batch, m, n = x.shape
    keep = F.slice(x, (0,) * x.ndim, (*batch, min(m, rows), min(n, cols)))
    if m >= rows and n >= cols:
        return keep
    config = [(0, 0, 0)] * len(batch) + [(0, max(rows - m, 0), 0), (0, max(cols - n, 0), 0)]
    return F.pad(keep, 0, config)


def _lu_factors(packed: Tensor) -> tuple[Tensor, Tensor]:
    """``L`` ``[..., m, m]`` (unit lower) and ``U`` ``[..., n, n]`` (upper) of packed ``[..., m, n]``
    factors, completed with the identity where ``min(m, n)`` is smaller (JAX's padding)."""
    *_, m, n = packed.shape
    square_l = _resize(packed, m, m)
    l_full = F.select(_mask(square_l.shape, "eye"), F.full(square_l.shape, 1, packed.dtype),
                      _where(_mask(square_l.shape, "strict_lower"), square_l))  # fmt: skip
    square_u = _resize(packed, n, n)
    u_full = _where(_mask(square_u.shape, "upper"), square_u)
    if m < n:  # rows m.. of U are the identity's
        nd = square_u.ndim
        below = F.ge(F.iota("int32", square_u.shape, nd - 2), F.full(square_u.shape, m, "int32"))
        tail = F.logical_and(_mask(square_u.shape, "eye"), below)
        u_full = F.select(tail, F.full(square_u.shape, 1, packed.dtype), u_full)
    return l_full, u_full


# -- lu -----------------------------------------------------------------------------------------


def lu_jvp(primals: Any, tangents: Any, outputs: Any) -> list[TangentLike]:
    (t,), (packed, pivots, permutation) = tangents, outputs
    none = [Zero.like(pivots), Zero.like(permutation)]
    if is_zero(t):
        return [Zero.like(packed), *none]
    low, up = _lu_factors(packed)
    x = _mm(_permutation(permutation, t.dtype), t)  # P dA
    la = F.triangular_solve(low, x, left_side=True, lower=True, unit_diagonal=True)
    lau = F.triangular_solve(up, la, left_side=False, lower=False)  # L^-1 P dA U^-1
    d_low = _mm(low, _where(_mask(lau.shape, "strict_lower"), lau))
    d_up = _mm(_where(_mask(lau.shape, "upper"), lau), up)
    return [F.add(d_low, d_up), *none]  # dL = L tril(lau, -1), dU = triu(lau) U, packed as dL + dU


JVP_RULES["lu"] = lu_jvp


def lu_vjp(cotangents: Any, primals: Any, outputs: Any, needs: Any) -> list[TangentLike]:
    (ct, _, _), (x,), (packed, _, permutation) = cotangents, primals, outputs
    if not needs[0] or is_zero(ct):
        return [Zero.like(x)]
    low, up = _lu_factors(packed)
    conj = _is_complex(x)
    # the adjoint of lau -> (L tril(lau, -1), triu(lau) U), then of the two solves and of P
    h = F.add(
        _where(_mask(ct.shape, "strict_lower"), _mm(_H(low), ct)), _where(_mask(ct.shape, "upper"), _mm(ct, _H(up)))
    )
    h = F.triangular_solve(up, h, left_side=False, lower=False, transpose_a=True, conjugate_a=conj)
    h = F.triangular_solve(low, h, left_side=True, lower=True, transpose_a=True, conjugate_a=conj, unit_diagonal=True)
    return [_mm(_mT(_permutation(permutation, x.dtype)), h)]  # ct_A = P^T L^-H (tril(L^H G, -1) + triu(G U^H)) U^-H


VJP_RULES["lu"] = lu_vjp


# -- qr -----------------------------------------------------------------------------------------


def _qr_reduced(x: Tensor, q: Tensor, r: Tensor, full_matrices: bool) -> None:
    *_, m, n = x.shape
    if m < n:
        raise _refuse("qr", x, "the derivative needs m >= n")
    if full_matrices and m != n:
        raise _refuse("qr", x, "the derivative of full_matrices=True needs a square matrix")


def qr_jvp(primals: Any, tangents: Any, outputs: Any, full_matrices: bool = True) -> list[TangentLike]:
    (x,), (t,), (q, r) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(q), Zero.like(r)]
    _qr_reduced(x, q, r, full_matrices)
    dx_rinv = F.triangular_solve(r, t, left_side=False, lower=False)  # dA R^-1
    c = _mm(_H(q), dx_rinv)
    low = _where(_mask(c.shape, "strict_lower"), c)
    do = F.sub(low, _H(low))  # skew-Hermitian; its diagonal is i Im(c) for complex
    if _is_complex(c):
        do = F.add(do, _imag_diagonal(c))
    dq = F.add(_mm(q, F.sub(do, c)), dx_rinv)
    dr = _mm(F.sub(c, do), r)
    return [dq, dr]  # C = Q^H dA R^-1; dQ = Q (dO - C) + dA R^-1; dR = (C - dO) R


JVP_RULES["qr"] = qr_jvp


def qr_vjp(cotangents: Any, primals: Any, outputs: Any, needs: Any, full_matrices: bool = True) -> list[TangentLike]:
    (ct_q, ct_r), (x,), (q, r) = cotangents, primals, outputs
    if not needs[0] or (is_zero(ct_q) and is_zero(ct_r)):
        return [Zero.like(x)]
    _qr_reduced(x, q, r, full_matrices)
    m_: TangentLike = Zero.like(r)
    if not is_zero(ct_q):
        m_ = _mm(_H(q), ct_q)
    if not is_zero(ct_r):
        m_ = add_any(m_, F.neg(_mm(ct_r, _H(r))))
    assert isinstance(m_, Tensor)
    n_ = _where(_mask(m_.shape, "strict_lower"), F.sub(m_, _H(m_)))  # the adjoint of C -> dO
    if _is_complex(m_):
        n_ = F.add(n_, _imag_diagonal(m_))
    g = add_any(ct_q, _mm(q, F.sub(n_, m_)))
    assert isinstance(g, Tensor)
    g = F.triangular_solve(r, g, left_side=False, lower=False, transpose_a=True, conjugate_a=_is_complex(r))
    return [g]  # M = Q^H ct_Q - ct_R R^H; ct_A = (ct_Q + Q (tril(M - M^H, -1) + i Im diag M - M)) R^-H


VJP_RULES["qr"] = qr_vjp


# -- svd ----------------------------------------------------------------------------------------


def _svd_parts(x: Tensor, outputs: Any, full_matrices: bool, compute_uv: bool) -> tuple[Tensor, Tensor, Tensor]:
    """(U, s, Vh) of the thin SVD: the outputs, or a recomputation when only ``s`` was asked for."""
    *_, m, n = x.shape
    if not compute_uv:
        u, s, vh = F.svd(x, full_matrices=False)
        return u, s, vh
    if full_matrices and m != n:
        raise _refuse("svd", x, "the singular vectors' derivative of full_matrices=True needs a square matrix")
    u, s, vh = outputs
    return u, s, vh


def _svd_gaps(s: Tensor) -> Tensor:
    """``F[..., i, j] = 1 / (s_j^2 - s_i^2)`` off the diagonal, 0 on it (real)."""
    return _eig_gap_inverse(F.mul(s, s), s.dtype)


def _safe_reciprocal(s: Tensor) -> Tensor:
    """``1 / s``, 0 where ``s`` is 0 (JAX's ``s_inv``)."""
    zero = F.eq(s, F.full(s.shape, 0, s.dtype))
    return F.select(zero, F.full(s.shape, 0, s.dtype), F.reciprocal(F.select(zero, F.full(s.shape, 1, s.dtype), s)))


def _times(gaps: Tensor, x: Tensor) -> Tensor:
    return F.mul(gaps if gaps.dtype is x.dtype else F.convert(gaps, x.dtype), x)


def svd_jvp(
    primals: Any, tangents: Any, outputs: Any, full_matrices: bool = True, compute_uv: bool = True
) -> list[TangentLike]:
    (x,), (t,) = primals, tangents
    if is_zero(t):
        return [Zero.like(o) for o in outputs]
    u, s, vh = _svd_parts(x, outputs, full_matrices, compute_uv)
    v = _H(vh)
    ds_mat = _mm(_mm(_H(u), t), v)  # dS = U^H dA V
    d = _diag_part(ds_mat)
    ds = F.real(d) if _is_complex(d) else d
    if not compute_uv:
        return [ds]
    *_, m, n = x.shape
    gaps = _svd_gaps(s)
    inv_s = _safe_reciprocal(s)
    du_inner = _times(gaps, F.add(_scale_cols(ds_mat, s), _H(_scale_cols(ds_mat, s))))
    if _is_complex(ds_mat):  # the gauge: the phase rotation goes to U only, as JAX's dUdV_diag
        du_inner = F.add(du_inner, _scale_cols(_imag_diagonal(ds_mat), inv_s))
    du = _mm(u, du_inner)
    dv = _mm(v, _times(gaps, F.add(_scale_rows(ds_mat, s), _H(_scale_rows(ds_mat, s)))))
    if m > n:
        dav = _mm(t, v)
        du = F.add(du, _scale_cols(F.sub(dav, _mm(u, _mm(_H(u), dav))), inv_s))
    if n > m:
        dahu = _mm(_H(t), u)
        dv = F.add(dv, _scale_cols(F.sub(dahu, _mm(v, _mm(vh, dahu))), inv_s))
    return [du, ds, _H(dv)]  # JAX's svd_jvp_rule: dS = U^H dA V, F_ij = 1 / (s_j^2 - s_i^2)


JVP_RULES["svd"] = svd_jvp


def svd_vjp(
    cotangents: Any, primals: Any, outputs: Any, needs: Any, full_matrices: bool = True, compute_uv: bool = True
) -> list[TangentLike]:
    (x,) = primals
    ct_u, ct_s, ct_vh = cotangents if compute_uv else (Zero.like(x), cotangents[0], Zero.like(x))
    if not needs[0] or all(is_zero(c) for c in (ct_u, ct_s, ct_vh)):
        return [Zero.like(x)]
    u, s, vh = _svd_parts(x, outputs, full_matrices, compute_uv)
    *_, m, n = x.shape
    k = s.shape[-1]
    gaps = _svd_gaps(s)
    inv_s = _safe_reciprocal(s)
    g_s: TangentLike = Zero(x.dtype, (*s.shape, k))
    g_a: TangentLike = Zero.like(x)
    if not is_zero(ct_s):
        g_s = _diag_matrix(ct_s if ct_s.dtype is x.dtype else F.convert(ct_s, x.dtype))
    if isinstance(ct_u, Tensor):
        a_u = _mm(_H(u), ct_u)
        skew = F.sub(a_u, _H(a_u))
        g_s = add_any(g_s, _scale_cols(_times(gaps, skew), s))
        if _is_complex(a_u):
            g_s = add_any(g_s, _scale_cols(_imag_diagonal(a_u), inv_s))
        if m > k:
            rest = F.sub(ct_u, _mm(u, a_u))  # (I - U U^H) ct_U
            g_a = add_any(g_a, _mm(_scale_cols(rest, inv_s), vh))
    if isinstance(ct_vh, Tensor):
        a_v = _mm(vh, _H(ct_vh))  # V^H ct_V with ct_V = ct_Vh^H
        g_s = add_any(g_s, _scale_rows(_times(gaps, F.sub(a_v, _H(a_v))), s))
        if n > k:
            rest = F.sub(ct_vh, _mm(_mm(ct_vh, _H(vh)), vh))  # ct_Vh (I - V V^H)
            g_a = add_any(g_a, _mm(u, _scale_rows(rest, inv_s)))
    if not is_zero(g_s):
        assert isinstance(g_s, Tensor)
        g_a = add_any(g_a, _mm(_mm(u, g_s), vh))
    return [g_a]  # ct_A = U G_S V^H + the parts of ct_U, ct_V orthogonal to U, V (the adjoint of svd_jvp)


VJP_RULES["svd"] = svd_vjp


# -- eig ----------------------------------------------------------------------------------------


def _eig_right_vectors(x: Tensor, outputs: Any, compute_right: bool) -> Tensor:
    return outputs[-1] if compute_right else F.eig(x, compute_left_eigenvectors=False)[1]


def eig_jvp(
    primals: Any, tangents: Any, outputs: Any, compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
) -> list[TangentLike]:  # fmt: skip
    (x,), (t,) = primals, tangents
    if is_zero(t):
        return [Zero.like(o) for o in outputs]
    if compute_left_eigenvectors or compute_right_eigenvectors:
        raise _refuse("eig", x, "the eigenvectors' derivative is not defined; use eigvals (eigenvalues only)")
    vr = _eig_right_vectors(x, outputs, compute_right_eigenvectors)
    dx = t if t.dtype is vr.dtype else F.convert(t, vr.dtype)
    return [_diag_part(F.solve(vr, _mm(dx, vr)))]  # dw = diag(V^-1 dA V)


JVP_RULES["eig"] = eig_jvp


def eig_vjp(
    cotangents: Any, primals: Any, outputs: Any, needs: Any, compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
) -> list[TangentLike]:  # fmt: skip
    (x,), (ct_w, *ct_vectors) = primals, cotangents
    if any(not is_zero(c) for c in ct_vectors):
        raise _refuse("eig", x, "the eigenvectors' derivative is not defined; use eigvals (eigenvalues only)")
    if not needs[0] or is_zero(ct_w):
        return [Zero.like(x)]
    vr = _eig_right_vectors(x, outputs, compute_right_eigenvectors)
    g = F.solve(_H(vr), _mm(_diag_matrix(ct_w), _H(vr)))  # V^-H diag(ct_w) V^H
    return [g if _is_complex(x) else F.real(g)]


VJP_RULES["eig"] = eig_vjp

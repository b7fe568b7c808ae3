"""Derivative rules for the linear-algebra ops: ``eigh``, ``cholesky``, ``triangular_solve``, ``lu``,
``qr``, ``svd``, ``eig``, ``geqrf``.

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
from autodiff.zeros import TangentLike, Zero, add_any, instantiate, is_zero
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
    """A derivative castwise does not take: one JAX does not define either (svd with full matrices of a
    non-square matrix, geqrf, eig's eigenvectors without ``enable_eigvec_derivs``)."""


def _refuse(op: str, x: Any, why: str) -> LinalgDerivativeError:
    shape = ",".join(map(str, x.shape))
    return LinalgDerivativeError(f"{op}: no derivative for x:{x.dtype.short}[{shape}]: {why}")


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


def _thin_qr_jvp(q: Tensor, r: Tensor, t: Tensor) -> tuple[Tensor, Tensor]:
    """JAX's ``_thin_qr_jvp`` for ``x = q r`` with ``x`` ``[..., m, n]``, ``m >= n``, ``r`` square."""
    dx_rinv = F.triangular_solve(r, t, left_side=False, lower=False)  # dA R^-1
    c = _mm(_H(q), dx_rinv)
    low = _where(_mask(c.shape, "strict_lower"), c)
    do = F.sub(low, _H(low))  # skew-Hermitian; its diagonal is i Im(c) for complex
    if _is_complex(c):
        do = F.add(do, _imag_diagonal(c))
    dq = F.add(_mm(q, F.sub(do, c)), dx_rinv)
    dr = _mm(F.sub(c, do), r)
    return dq, dr  # C = Q^H dA R^-1; dQ = Q (dO - C) + dA R^-1; dR = (C - dO) R


def _columns(x: Tensor, start: int, stop: int) -> Tensor:
    """``x[..., :, start:stop]``."""
    return F.slice(x, (*(0,) * (x.ndim - 1), start), (*x.shape[:-1], stop))


def _rows(x: Tensor, start: int, stop: int) -> Tensor:
    """``x[..., start:stop, :]``."""
    return F.slice(x, (*(0,) * (x.ndim - 2), start, 0), (*x.shape[:-2], stop, x.shape[-1]))


def _complete_parts(q: Tensor, n: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """For complete ``q`` ``[..., m, m]`` of a tall ``[..., m, n]``: ``(q_mn, q_mp, Z, Z^H)`` with
    ``q_mn = q[..., :, :n]``, ``q_mp = q[..., :, n:]`` and ``Z = Q_pn (Q_nn - I)^-1`` (eq. 33 of
    arXiv 2409.13374, JAX's rule), ``Z^H`` solved as ``(Q_nn - I)^H Z^H = Q_pn^H`` (lu_solve, trans=2)."""
    m = q.shape[-1]
    q_mn, q_mp = _columns(q, 0, n), _columns(q, n, m)
    q_nn, q_pn = _rows(q_mn, 0, n), _rows(q_mn, n, m)
    eye = F.select(_mask(q_nn.shape, "eye"), F.full(q_nn.shape, 1, q.dtype), F.full(q_nn.shape, 0, q.dtype))
    packed, _, permutation = F.lu(F.sub(q_nn, eye))
    z_h = F.lu_solve(packed, permutation, _H(q_pn), trans=2)
    return q_mn, q_mp, _H(z_h), z_h


def qr_jvp(primals: Any, tangents: Any, outputs: Any, full_matrices: bool = True) -> list[TangentLike]:
    (x,), (t,), (q, r) = primals, tangents, outputs
    if is_zero(t):
        return [Zero.like(q), Zero.like(r)]
    *_, m, n = x.shape
    if m > n and full_matrices:
        # complete Q of a tall x (JAX's rule, arXiv 2409.13374 eqs. 32-33): the thin rule gives
        # dQ_mn and dR_nn; the completion's dQ_mp follows from Q^H Q = I, R's last m - n rows stay 0
        q_mn, q_mp, z, z_h = _complete_parts(q, n)
        dq_mn, dr_nn = _thin_qr_jvp(q_mn, _rows(r, 0, n), t)
        e = F.sub(_rows(dq_mn, n, m), _mm(z, _rows(dq_mn, 0, n)))  # dQ_pn - Z dQ_nn
        dq_mp = F.sub(_mm(dq_mn, z_h), _mm(F.add(q_mn, _mm(q_mp, z)), _H(e)))
        zeros = F.full((*r.shape[:-2], m - n, n), 0, r.dtype)
        return [F.concatenate([dq_mn, dq_mp], q.ndim - 1), F.concatenate([dr_nn, zeros], r.ndim - 2)]
    if m >= n:
        dq, dr = _thin_qr_jvp(q, r, t)
        return [dq, dr]
    # wide (JAX's rule): x = [x1 x2] = q [r1 r2]; (dq, dr1) from the square x1 = q r1, r2 = q^H x2
    dq, dr1 = _thin_qr_jvp(q, _columns(r, 0, m), _columns(t, 0, m))
    dr2 = F.add(_mm(_H(dq), _columns(x, m, n)), _mm(_H(q), _columns(t, m, n)))
    return [dq, F.concatenate([dr1, dr2], r.ndim - 1)]  # dR = [dR1, dQ^H X2 + Q^H dX2]


JVP_RULES["qr"] = qr_jvp


def _thin_qr_vjp(q: Tensor, r: Tensor, ct_q: TangentLike, ct_r: TangentLike) -> Tensor:
    """The adjoint of ``_thin_qr_jvp``: the cotangent of ``x`` from those of ``q`` and (square) ``r``."""
    m_: TangentLike = Zero.like(r)
    if isinstance(ct_q, Tensor):
        m_ = _mm(_H(q), ct_q)
    if isinstance(ct_r, Tensor):
        m_ = add_any(m_, F.neg(_mm(ct_r, _H(r))))
    assert isinstance(m_, Tensor)
    n_ = _where(_mask(m_.shape, "strict_lower"), F.sub(m_, _H(m_)))  # the adjoint of C -> dO
    if _is_complex(m_):
        n_ = F.add(n_, _imag_diagonal(m_))
    g = add_any(ct_q, _mm(q, F.sub(n_, m_)))
    assert isinstance(g, Tensor)
    return F.triangular_solve(r, g, left_side=False, lower=False, transpose_a=True, conjugate_a=_is_complex(r))
    # M = Q^H ct_Q - ct_R R^H; ct_A = (ct_Q + Q (tril(M - M^H, -1) + i Im diag M - M)) R^-H


def qr_vjp(cotangents: Any, primals: Any, outputs: Any, needs: Any, full_matrices: bool = True) -> list[TangentLike]:
    (ct_q, ct_r), (x,), (q, r) = cotangents, primals, outputs
    if not needs[0] or (is_zero(ct_q) and is_zero(ct_r)):
        return [Zero.like(x)]
    *_, m, n = x.shape
    if m > n and full_matrices:
        return [_complete_qr_vjp(q, r, ct_q, ct_r)]
    if m >= n:
        return [_thin_qr_vjp(q, r, ct_q, ct_r)]
    # the adjoint of the wide rule: dR2 = dQ^H X2 + Q^H dX2 sends X2 ct_R2^H to dQ and Q ct_R2 to dX2
    ct_r1 = Zero(r.dtype, (*r.shape[:-1], m)) if is_zero(ct_r) else _columns(ct_r, 0, m)
    ct_dq: TangentLike = ct_q
    ct_x2: TangentLike = Zero(x.dtype, (*x.shape[:-1], n - m))
    if not is_zero(ct_r):
        ct_r2 = _columns(ct_r, m, n)
        ct_dq = add_any(ct_dq, _mm(_columns(x, m, n), _H(ct_r2)))
        ct_x2 = _mm(q, ct_r2)
    ct_x1 = _thin_qr_vjp(q, _columns(r, 0, m), ct_dq, ct_r1)
    ct_x = F.concatenate([ct_x1, instantiate(ct_x2)], x.ndim - 1)
    return [ct_x]  # ct_X = [thin^T(ct_Q + X2 ct_R2^H, ct_R1), Q ct_R2]


VJP_RULES["qr"] = qr_vjp


def _complete_qr_vjp(q: Tensor, r: Tensor, ct_q: TangentLike, ct_r: TangentLike) -> Tensor:
    """The adjoint of the complete tall rule in ``qr_jvp``: with ``W = Q_mn + Q_mp Z`` and
    ``E = dQ_pn - Z dQ_nn``, ``dQ_mp = dQ_mn Z^H - W E^H`` sends ``G_mp`` (Q's last m - n columns'
    cotangent) to ``G_mp Z`` on dQ_mn and ``-G_mp^H W`` on E, which gives ``-Z^H (that)`` to dQ_nn
    and itself to dQ_pn; R's zero rows carry nothing. Then the thin rule's adjoint."""
    *_, m, n = r.shape
    q_mn, q_mp, z, z_h = _complete_parts(q, n)
    ct_r_nn: TangentLike = _rows(ct_r, 0, n) if isinstance(ct_r, Tensor) else Zero(r.dtype, (*r.shape[:-2], n, n))
    ct_dq: TangentLike = Zero(q.dtype, (*q.shape[:-1], n))
    if isinstance(ct_q, Tensor):
        g_mp = _columns(ct_q, n, m)
        ct_e = F.neg(_mm(_H(g_mp), F.add(q_mn, _mm(q_mp, z))))  # [..., m - n, n]
        from_e = F.concatenate([F.neg(_mm(z_h, ct_e)), ct_e], ct_e.ndim - 2)
        ct_dq = F.add(F.add(_columns(ct_q, 0, n), _mm(g_mp, z)), from_e)
    return _thin_qr_vjp(q_mn, _rows(r, 0, n), ct_dq, ct_r_nn)


# -- svd ----------------------------------------------------------------------------------------


def _svd_parts(x: Tensor, outputs: Any, full_matrices: bool, compute_uv: bool) -> tuple[Tensor, Tensor, Tensor]:
    """(U, s, Vh) of the thin SVD: the outputs, or a recomputation when only ``s`` was asked for."""
    *_, m, n = x.shape
    if not compute_uv:
        u, s, vh = F.svd(x, full_matrices=False)
        return u, s, vh
    if full_matrices and m != n:
        why = "the singular vectors' derivative of full_matrices=True needs a square matrix (as in jax.lax.linalg)"
        raise _refuse("svd", x, why)
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

_EIGVEC_REFUSAL = (
    "the eigenvectors' derivative is taken only with enable_eigvec_derivs=True (jax.lax.linalg.eig's "
    "opt-in: valid for distinct eigenvalues and no two components tied for the largest magnitude, which "
    "cannot be checked); use eigvals for the eigenvalues alone"
)


def _eig_right_vectors(x: Tensor, outputs: Any, compute_right: bool) -> Tensor:
    return outputs[-1] if compute_right else F.eig(x, compute_left_eigenvectors=False)[1]


def _eig_normalisation(w: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(F, mask, r)``: ``F[i, j] = 1 / (w_j - w_i)`` (0 on the diagonal), ``mask[i, j] = (i ==
    k_j)`` with ``k_j = argmax_i |v_ij|`` (the component geev makes real) and ``r_j = Re v_{k_j j}``."""
    gaps = _eig_gap_inverse(w, v.dtype)
    rows = v.ndim - 2
    k = F.argmax(F.abs(v), rows, "int32")
    picks = F.broadcast_in_dim(k, v.shape, (*range(rows), rows + 1))
    mask = F.convert(F.eq(F.iota("int32", v.shape, rows), picks), v.dtype)
    r = F.real(F.reduce_sum(F.mul(mask, v), (rows,)))
    return gaps, mask, r


def _eig_vec_jvp(w: Tensor, v: Tensor, da: Tensor) -> tuple[Tensor, Tensor]:
    """JAX's ``_eig_vec_jvp``: nondegenerate perturbation theory, under geev's normalisation (unit
    2-norm, the largest-magnitude component real)."""
    gaps, mask, r = _eig_normalisation(w, v)
    p = _mm(F.solve(v, da), v)  # P = V^-1 dA V
    u = _mm(v, F.mul(gaps, p))  # U = V (F o P)
    rows = (v.ndim - 2,)
    re = F.neg(F.real(F.reduce_sum(F.mul(F.conj(v), u), rows)))
    im = F.neg(F.div(F.imag(F.reduce_sum(F.mul(mask, u), rows)), r))
    return _diag_part(p), F.add(u, _scale_cols(v, F.complex(re, im)))
    # dw = diag(P); dv_j = u_j + c_j v_j, c_j = -Re(v_j^H u_j) - i Im(u_{k_j j}) / Re(v_{k_j j})


def _eig_vec_transpose(w: Tensor, v: Tensor, ct_v: Tensor) -> Tensor:
    """The adjoint of ``da -> dv`` in ``_eig_vec_jvp`` up to ``P``: the cotangent of ``P``."""
    gaps, mask, r = _eig_normalisation(w, v)
    rows = v.ndim - 2
    ct_c = F.reduce_sum(F.mul(F.conj(v), ct_v), (rows,))  # <v_j, ct_v_j>
    ct_u = F.sub(ct_v, _scale_cols(v, F.real(ct_c)))
    spread = F.broadcast_in_dim(F.div(F.imag(ct_c), r), v.shape, (*range(rows), rows + 1))
    ct_u = F.sub(ct_u, F.mul(F.mul(mask, F.convert(spread, v.dtype)), F.full(v.shape, 1j, v.dtype)))
    return F.mul(F.conj(gaps), _mm(_H(v), ct_u))
    # ct_U = ct_V - v diag(Re c*) - i mask diag(Im c* / r), c*_j = v_j^H ct_v_j; ct_P = conj(F) o (V^H ct_U)


def eig_jvp(
    primals: Any, tangents: Any, outputs: Any, compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
) -> list[TangentLike]:  # fmt: skip
    (x,), (t,) = primals, tangents
    if is_zero(t):
        return [Zero.like(o) for o in outputs]
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise _refuse("eig", x, _EIGVEC_REFUSAL)
    w, vr = outputs[0], _eig_right_vectors(x, outputs, compute_right_eigenvectors)
    dx = t if t.dtype is vr.dtype else F.convert(t, vr.dtype)
    if not vectors:
        return [_diag_part(F.solve(vr, _mm(dx, vr)))]  # dw = diag(V^-1 dA V)
    dw, dvr = _eig_vec_jvp(w, vr, dx)
    out: list[TangentLike] = [dw]
    if compute_left_eigenvectors:  # the left eigenvectors are the right ones of A^H (eigenvalues conj(w))
        out.append(_eig_vec_jvp(F.conj(w), outputs[1], _H(dx))[1])
    if compute_right_eigenvectors:
        out.append(dvr)
    return out  # JAX's eig_jvp_rule


JVP_RULES["eig"] = eig_jvp


def eig_vjp(
    cotangents: Any, primals: Any, outputs: Any, needs: Any, compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
) -> list[TangentLike]:  # fmt: skip
    (x,), (ct_w, *ct_vectors) = primals, cotangents
    if any(not is_zero(c) for c in ct_vectors) and not enable_eigvec_derivs:
        raise _refuse("eig", x, _EIGVEC_REFUSAL)
    if not needs[0] or (is_zero(ct_w) and all(is_zero(c) for c in ct_vectors)):
        return [Zero.like(x)]
    w, vr = outputs[0], _eig_right_vectors(x, outputs, compute_right_eigenvectors)
    ct_vl = ct_vectors[0] if compute_left_eigenvectors else Zero.like(vr)
    ct_vr = ct_vectors[-1] if compute_right_eigenvectors else Zero.like(vr)
    ct_p: TangentLike = Zero.like(vr)
    if not is_zero(ct_w):
        ct_p = _diag_matrix(ct_w)
    if isinstance(ct_vr, Tensor):
        ct_p = add_any(ct_p, _eig_vec_transpose(w, vr, ct_vr))
    g: TangentLike = Zero.like(vr)
    if not is_zero(ct_p):
        assert isinstance(ct_p, Tensor)
        g = F.solve(_H(vr), _mm(ct_p, _H(vr)))  # V^-H ct_P V^H, the adjoint of P = V^-1 dA V
    if isinstance(ct_vl, Tensor):
        vl = outputs[1]
        g_l = F.solve(_H(vl), _mm(_eig_vec_transpose(F.conj(w), vl, ct_vl), _H(vl)))
        g = add_any(g, _H(g_l))  # the left part's tangent map reads dA^H
    assert isinstance(g, Tensor)
    return [g if _is_complex(x) else F.real(g)]


VJP_RULES["eig"] = eig_vjp


# -- geqrf --------------------------------------------------------------------------------------


def geqrf_jvp(primals: Any, tangents: Any, outputs: Any) -> list[TangentLike]:
    (x,), (t,) = primals, tangents
    if is_zero(t):
        return [Zero.like(o) for o in outputs]
    raise _refuse("geqrf", x, "Householder reflectors have no derivative rule (qr(mode='raw') is not differentiable)")


JVP_RULES["geqrf"] = geqrf_jvp


def geqrf_vjp(cotangents: Any, primals: Any, outputs: Any, needs: Any) -> list[TangentLike]:
    (x,) = primals
    if not needs[0] or all(is_zero(c) for c in cotangents):
        return [Zero.like(x)]
    raise _refuse("geqrf", x, "Householder reflectors have no derivative rule (qr(mode='raw') is not differentiable)")


VJP_RULES["geqrf"] = geqrf_vjp

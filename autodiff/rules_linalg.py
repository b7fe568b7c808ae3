"""Derivative rules for the linear-algebra ops: ``eigh``, ``cholesky``, ``triangular_solve``.

Every rule is built from ``runtime.functions`` ops only (matrix products are
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
from runtime import functions as F
from runtime.tensor import Tensor

# -- helpers (compositions of vocabulary ops) -----------------------------------------------


def _is_complex(x: Any) -> bool:
    return bool(x.dtype.kind == "complex")


def _mT(x: Tensor) -> Tensor:
    """Swap the last two axes."""
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return F.transpose(x, perm)


def _H(x: Tensor) -> Tensor:
    """Conjugate transpose of the last two axes (plain transpose for real dtypes)."""
    t = _mT(x)
    return F.conj(t) if _is_complex(t) else t


def _mm(x: Tensor, y: Tensor) -> Tensor:
    """Batched matrix product over the last two axes (equal leading batch dims)."""
    nd = x.ndim
    batch = tuple(range(nd - 2))
    return F.dot_general(x, y, (((nd - 1,), (nd - 2,)), (batch, batch)))


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

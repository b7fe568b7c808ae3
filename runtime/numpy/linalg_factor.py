"""The factorisations, inverses, solves and norms of ``rt.linalg`` (``runtime.numpy.linalg``, the
namespace, re-exports them), and the helpers ``runtime.numpy.linalg_products`` shares.

``import runtime as rt; q, r = rt.linalg.qr(a)``. Each function here takes jax.numpy.linalg's
signature and conventions (``qr(a, mode="reduced")``, ``svd`` returning ``(U, S, Vh)``,
``eigh`` returning ``(eigenvalues, eigenvectors)``, ``norm(x, ord, axis, keepdims)``, leading
batch dimensions) and is a composition of castwise's ops and functions (``qr``, ``svd``,
``eigh``, ``cholesky``, ``eig``, ``lu``, ``triangular_solve``, ``dot_general``, ``reduce_*``,
``convert`` ...), run through the one eager executor: a recording holds exactly what ran, and
replays, differentiates, batches and lowers to JAX like any other graph.

Integer and bool inputs are converted (a recorded ``convert``) to the float the active
policy's library gives them: jax.numpy's ``promote_dtypes_inexact`` (float32 up to 32 bits,
float64 for 64-bit integers) under ``jax`` and the policies not modelled on a library,
float64 under ``numpy``; ``torch.linalg`` refuses them, and so do ``torch`` and ``kael``.
The factorisations run in LAPACK's dtypes (f32, f64, c64, c128), as XLA's CPU kernels do;
anything else is refused with the function, the operands and the policy named.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.executor import as_tensor
from runtime.core.promotion import PromotionError, get_policy, result_type
from runtime.core.shapes import OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy.params import named, refuse_traced

__all__ = [
    "EigResult",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lu_factor",
    "lu_solve",
    "matrix_norm",
    "matrix_power",
    "norm",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "vector_norm",
]


class QRResult(NamedTuple):
    """``qr``'s result, as jax.numpy's: ``Q`` and ``R``."""

    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    """``svd``'s result, as jax.numpy's: ``a == U @ diag(S) @ Vh``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class EighResult(NamedTuple):
    """``eigh``'s result, as jax.numpy's: ascending real eigenvalues, then eigenvectors (columns)."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class EigResult(NamedTuple):
    """``eig``'s result, as jax.numpy's: complex eigenvalues and right eigenvectors (columns)."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SlogdetResult(NamedTuple):
    """``slogdet``'s result, as jax.numpy's: ``det == sign * exp(logabsdet)``."""

    sign: Tensor
    logabsdet: Tensor


#: the dtypes LAPACK (and so XLA's CPU linalg kernels and castwise's) factorise in.
_LAPACK = frozenset({dt.float32, dt.float32r, dt.float64, dt.complex64, dt.complex128})


# -- errors, dtypes, shapes ----------------------------------------------------------------------


def _describe(operands: Sequence[Tensor]) -> str:
    return ", ".join(f"{t.dtype.short}[{','.join(map(str, t.shape))}]" for t in operands)


def _error(cls: type[Exception], name: str, operands: Sequence[Tensor], message: str) -> Exception:
    """``cls`` naming the function, the operands' dtypes and shapes, and the policy."""
    return cls(f"linalg.{name}: {message} [operands {_describe(operands)}; policy {get_policy()!r}]")


def _inexact_dtype(d: DType, name: str, operands: Sequence[Tensor]) -> DType:
    """The float an integer or bool ``d`` becomes under the active policy's library."""
    from runtime.numpy import tensor_methods as tensor_api

    if tensor_api.library() == "torch":
        raise _error(
            OpTypeError, name, operands,
            f"takes floating or complex operands and got {d.name}, as torch.linalg does: convert explicitly",
        )  # fmt: skip
    return tensor_api.mean_dtype(d, f"linalg.{name}", operands[0])


def _inexact(name: str, *xs: Any) -> tuple[Tensor, ...]:
    """``xs`` as Tensors of one inexact dtype (jax.numpy's ``promote_dtypes_inexact``): their
    common dtype under the policy, integers and bool converted to the policy's float; each
    conversion is a recorded ``convert``."""
    ts = tuple(as_tensor(x) for x in xs)
    if builtins.all(t.dtype is ts[0].dtype for t in ts):
        common = ts[0].dtype
    else:
        try:
            common = result_type(*ts)
        except PromotionError as err:
            raise _error(PromotionError, name, ts, str(err)) from None
    if not common.is_inexact:
        common = _inexact_dtype(common, name, ts)
    return tuple(t if t.dtype is common else F.convert(t, common) for t in ts)


def _lapack(name: str, x: Tensor) -> None:
    if x.dtype not in _LAPACK:
        raise _error(
            OpTypeError, name, (x,),
            f"dtype {x.dtype.short} not accepted: the factorisations run in f32, f64, c64 and c128 "
            "(convert explicitly, e.g. x.astype('float32'))",
        )  # fmt: skip


def _matrices(name: str, x: Tensor, square: bool = False) -> None:
    if x.ndim < 2:
        raise _error(ShapeError, name, (x,), f"takes (a batch of) matrices: rank >= 2, got rank {x.ndim}")
    if square and x.shape[-1] != x.shape[-2]:
        raise _error(ShapeError, name, (x,), "takes (a batch of) square matrices: the last two dims must be equal")


def _factor_input(name: str, a: Any, square: bool = False) -> Tensor:
    """``a`` promoted to an inexact dtype and checked: (a batch of) matrices in a LAPACK dtype."""
    (t,) = _inexact(name, a)
    _matrices(name, t, square)
    _lapack(name, t)
    return t


def _real_dtype(d: DType) -> DType:
    return dt.COMPLEX_PART.get(d, d)


# -- small compositions ----------------------------------------------------------------------------


def _mT(x: Tensor) -> Tensor:
    """Swap the last two axes (``transpose``)."""
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return F.transpose(x, perm)


def _H(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two axes (the plain transpose for real dtypes)."""
    t = _mT(x)
    return F.conj(t) if t.dtype.kind == "complex" else t


def _mm(x: Tensor, y: Tensor) -> Tensor:
    """Batched matrix product of equal batch dims (``dot_general``)."""
    return F._batch_matmul(x, y)


def _symmetrize(x: Tensor) -> Tensor:
    """``(x + x^H) / 2``, what ``symmetrize_input=True`` factorises in jax.numpy."""
    return F.mul(F.add(x, _H(x)), F.full(x.shape, 0.5, x.dtype))


def _eye_like(x: Tensor) -> Tensor:
    """The identity of ``x``'s (square, batched) shape and dtype."""
    nd = x.ndim
    mask = F.eq(F.iota(dt.int32, x.shape, nd - 2), F.iota(dt.int32, x.shape, nd - 1))
    return mask if x.dtype is dt.bool_ else F.convert(mask, x.dtype)


def _abs2(x: Tensor) -> Tensor:
    """``real(x * conj(x))``, the squared magnitude (real dtype), as jax.numpy's norms compute it."""
    if x.dtype.kind == "complex":
        return F.real(F.mul(x, F.conj(x)))
    return F.mul(x, x)


def _keep(out: Tensor, shape: tuple[int, ...], axes: Sequence[int], keepdims: bool) -> Tensor:
    """``out`` (``shape`` reduced over ``axes``) with the reduced axes kept as size 1."""
    if not keepdims:
        return out
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    return out if out.shape == kept else F.reshape(out, kept)


def _reduce(kind: str, x: Tensor, axes: tuple[int, ...], keepdims: bool) -> Tensor:
    """``sum`` / ``max`` / ``min`` over ``axes``, as jax.numpy's reductions; an empty max is 0
    (jax.numpy's ``initial=0``)."""
    if kind == "max" and builtins.any(x.shape[a] == 0 for a in axes):
        shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        zero = F.zeros(tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)
        return F.reshape(zero, shape) if keepdims else zero
    # sum_ accumulates float16 and bfloat16 in float32 and rounds once, as jax.numpy's sum does
    if kind == "sum":
        out = F.sum_(x, axes)
    else:
        out = F.reduce_max(x, axes) if kind == "max" else F.reduce_min(x, axes)
    return _keep(out, x.shape, axes, keepdims)


# -- factorisations --------------------------------------------------------------------------------


@named("linalg.cholesky")
def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Tensor:
    """The Cholesky factor of (a batch of) Hermitian positive-definite matrices, as
    ``jnp.linalg.cholesky``: lower ``L`` with ``a == L @ L^H`` (``L^H`` when ``upper``).

    ``symmetrize_input`` factorises ``(a + a^H) / 2`` (jax.numpy's default); without it only
    the lower triangle is read. The derivative is always that of the symmetrised function
    (castwise's cholesky rule)."""
    t = _factor_input("cholesky", a, square=True)
    if symmetrize_input:
        t = _symmetrize(t)
    factor = F.cholesky(t)
    return _H(factor) if upper else factor


def _uplo_lower(UPLO: Any, name: str, x: Tensor) -> builtins.bool:
    if UPLO is None or UPLO == "L":
        return True
    if UPLO == "U":
        return False
    raise _error(ShapeError, name, (x,), f"UPLO must be one of None, 'L' or 'U', got {UPLO!r}")


@named("linalg.eigh")
def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigen-decomposition of (a batch of) Hermitian matrices, as ``jnp.linalg.eigh``:
    ``(eigenvalues, eigenvectors)``, the eigenvalues real and ascending, ``a @ v == v * w``.

    ``symmetrize_input`` (default) decomposes ``(a + a^H) / 2``; without it only the ``UPLO``
    triangle ('L', the default, or 'U') is read. Eigenvectors are defined up to a phase per
    column, and the derivative is JAX's (that of the symmetrised function)."""
    t = _factor_input("eigh", a, square=True)
    lower = _uplo_lower(UPLO, "eigh", t)
    v, w = F.eigh(_symmetrize(t) if symmetrize_input else t, lower=lower)
    return EighResult(w, v)


@named("linalg.eigvalsh")
def eigvalsh(a: Any, UPLO: str | None = "L", symmetrize_input: bool = True) -> Tensor:
    """The real, ascending eigenvalues of (a batch of) Hermitian matrices, as ``jnp.linalg.eigvalsh``."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


@named("linalg.eig")
def eig(a: Any) -> EigResult:
    """Eigen-decomposition of (a batch of) general square matrices, as ``jnp.linalg.eig``:
    complex ``(eigenvalues, right eigenvectors)`` in LAPACK's order. As in JAX, only the
    eigenvalues are differentiable (a derivative through the eigenvectors is refused)."""
    t = _factor_input("eig", a, square=True)
    w, v = F.eig(t, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    return EigResult(w, v)


@named("linalg.eigvals")
def eigvals(a: Any) -> Tensor:
    """The complex eigenvalues of (a batch of) general square matrices, as ``jnp.linalg.eigvals``."""
    return F.eigvals(_factor_input("eigvals", a, square=True))


@named("linalg.qr")
def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition ``a == Q @ R``, as ``jnp.linalg.qr``: ``mode`` ``"reduced"`` (Q
    ``[..., m, k]``, R ``[..., k, n]``, k = min(m, n)), ``"complete"`` (Q ``[..., m, m]``,
    R ``[..., m, n]``) or ``"r"`` (R of the reduced mode alone). LAPACK's signs, as JAX's.
    ``"raw"`` gives ``(h, tau)`` as jax.numpy does: ``geqrf``'s packed reflectors and R,
    transposed (``[..., n, m]``), and its ``taus`` ``[..., min(m, n)]``; like JAX's, it is not
    differentiable."""
    t = _factor_input("qr", a)
    if mode in ("reduced", "r", "full"):
        full = False
    elif mode == "complete":
        full = True
    elif mode == "raw":
        packed, taus = F.geqrf(t)
        return QRResult(_mT(packed), taus)
    else:
        raise _error(ShapeError, "qr", (t,), f"mode must be 'reduced', 'complete', 'r' or 'raw', got {mode!r}")
    q, r = F.qr(t, full_matrices=full)
    return r if mode == "r" else QRResult(q, r)


def _hermitian_svd(t: Tensor, compute_uv: bool) -> Any:
    """The SVD of a Hermitian matrix from its eigen-decomposition, as jax.numpy computes it:
    ``S = |w|`` sorted descending, ``U`` the eigenvectors in that order, ``Vh = (U * sign(w))^H``."""
    v, w = F.eigh(_symmetrize(t))
    s = F.abs(w)
    last = s.ndim - 1
    if not compute_uv:
        return F.reverse(F.sort(s, dimension=last), (last,))
    index = F.iota(dt.int32, s.shape, last)
    s, index, sign = F.sort((s, index, F.sign(w)), dimension=last, num_keys=1)
    s, index, sign = (F.reverse(x, (last,)) for x in (s, index, sign))
    n, nd = v.shape[-1], v.ndim
    # U = v @ P with P[..., j, k] = (index[..., k] == j): the columns of v in the sorted order
    picks = F.broadcast_in_dim(index, (*index.shape[:-1], n, n), (*range(nd - 2), nd - 1))
    u = _mm(v, F.convert(F.eq(picks, F.iota(dt.int32, picks.shape, nd - 2)), v.dtype))
    signs = F.broadcast_in_dim(sign if sign.dtype is u.dtype else F.convert(sign, u.dtype), u.shape,
                               (*range(nd - 2), nd - 1))  # fmt: skip
    return SVDResult(u, s, _H(F.mul(u, signs)))


@named("linalg.svd")
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """Singular value decomposition, as ``jnp.linalg.svd``: ``(U, S, Vh)`` with
    ``a == U @ diag(S) @ Vh`` (S real, descending), or ``S`` alone without ``compute_uv``.

    ``full_matrices`` gives square U ``[..., m, m]`` and Vh ``[..., n, n]``; otherwise
    ``[..., m, k]`` and ``[..., k, n]``, k = min(m, n). ``hermitian`` computes it from ``eigh``
    of ``(a + a^H) / 2``, as jax.numpy does. Singular vectors are defined up to a phase per
    pair; their derivative follows JAX's gauge convention, and needs ``full_matrices=False``
    for non-square inputs (as in JAX)."""
    t = _factor_input("svd", a, square=bool(hermitian))
    if hermitian:
        return _hermitian_svd(t, compute_uv)
    if not compute_uv:
        return F.svd(t, full_matrices=full_matrices, compute_uv=False)
    u, s, vh = F.svd(t, full_matrices=full_matrices)
    return SVDResult(u, s, vh)


@named("linalg.svdvals")
def svdvals(x: Any) -> Tensor:
    """The singular values (real, descending), as ``jnp.linalg.svdvals``."""
    return svd(x, compute_uv=False)


# -- inverses, determinants, solves -------------------------------------------------------------------


@named("linalg.inv")
def inv(a: Any) -> Tensor:
    """The inverse of (a batch of) square matrices, as ``jnp.linalg.inv`` (by ``lu``)."""
    return F.inv(_factor_input("inv", a, square=True))


@named("linalg.det")
def det(a: Any) -> Tensor:
    """The determinant of (a batch of) square matrices, as ``jnp.linalg.det`` (by ``lu``)."""
    return F.det(_factor_input("det", a, square=True))


def _diagonal_of(x: Tensor) -> Tensor:
    """``x[..., k, k]`` (``[..., min(m, n)]``): a masked sum over the rows, differentiable."""
    *_, m, n = x.shape
    k = builtins.min(m, n)
    square = x if m == n else F.slice(x, (0,) * x.ndim, (*x.shape[:-2], k, k))
    mask = F.eq(F.iota(dt.int32, square.shape, x.ndim - 2), F.iota(dt.int32, square.shape, x.ndim - 1))
    return F.reduce_sum(F.select(mask, square, F.zeros(square.shape, square.dtype)), (x.ndim - 2,))


def _slogdet_qr(a: Tensor) -> list[Tensor]:
    """``(sign, logabsdet)`` from ``geqrf``, as jax.numpy's ``method="qr"``: R's diagonal gives
    ``log|det|`` and a sign, and each reflector with ``tau != 0`` flips it (``det(H) == -1``)."""
    n = a.shape[-1]
    packed, taus = F.geqrf(a)
    diagonal = _diagonal_of(packed)
    last = (diagonal.ndim - 1,)
    logabsdet = F.reduce_sum(F.log(F.abs(diagonal)), last)
    sign_diag = F.reduce_prod(F.sign(diagonal), last)
    used = F.slice(taus, (0,) * taus.ndim, (*taus.shape[:-1], builtins.max(n - 1, 0)))
    flips = F.select(F.ne(used, F.zeros(used.shape, used.dtype)), F.full(used.shape, -1, used.dtype),
                     F.full(used.shape, 1, used.dtype))  # fmt: skip
    return [F.mul(sign_diag, F.reduce_prod(flips, last)), logabsdet]


def _slogdet_jvp(primals: Sequence[Tensor], tangents: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """jax.numpy's slogdet rule: ``d log|det a| = tr(a^-1 da)``, the (real) sign's tangent 0."""
    (a,), (t,) = primals, tangents
    sign, logabsdet = _slogdet_qr(a)
    dlog = _diagonal_of(F.solve(a, t))
    return [sign, logabsdet], [F.zeros(sign.shape, sign.dtype), F.reduce_sum(dlog, (dlog.ndim - 1,))]


@named("linalg.slogdet")
def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """``(sign, logabsdet)`` with ``det == sign * exp(logabsdet)``, as ``jnp.linalg.slogdet``:
    ``sign`` of ``a``'s dtype (a unit complex number for complex ``a``; 0 when singular),
    ``logabsdet`` real. ``method`` ``None`` or ``"lu"`` (``lu``), or ``"qr"`` (``geqrf``; real
    inputs only, as in JAX), whose derivative is jax.numpy's rule (``tr(a^-1 da)``, a recorded
    ``custom_jvp_call``)."""
    t = _factor_input("slogdet", a, square=True)
    if method == "qr":
        if t.dtype.kind == "complex":
            raise _error(OpTypeError, "slogdet", (t,), "method='qr' takes real matrices, as jax.numpy's does")
        sign, logabsdet = F._custom_rule("slogdet", _slogdet_qr, _slogdet_jvp, (t,))
        return SlogdetResult(sign, logabsdet)
    if method not in (None, "lu"):
        raise _error(ShapeError, "slogdet", (t,), f"method must be None, 'lu' or 'qr', got {method!r}")
    sign, logabsdet = F.slogdet(t)
    return SlogdetResult(sign, logabsdet)


def _cho_solve(chol: Tensor, b: Tensor) -> Tensor:
    """``(L L^H)^-1 b`` for the lower Cholesky factor ``L`` and matrices ``b``: two triangular solves."""
    y = F.triangular_solve(chol, b, left_side=True, lower=True)
    return F.triangular_solve(chol, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True)


def _solve_pos_rule(lower: builtins.bool) -> tuple[Any, Any]:
    """The positive-definite solve (``a``'s ``lower`` or upper triangle read) as a recorded call
    with JAX's derivative: ``jax.scipy.linalg.solve`` solves with the Cholesky factor of
    ``stop_gradient(a)`` inside ``custom_linear_solve`` around ``a @ x``, so
    ``dx = a^-1 (db - da @ x)`` for the whole ``da`` (not only its Hermitian part)."""

    def fun(a: Tensor, b: Tensor) -> list[Tensor]:
        return [_cho_solve(F.cholesky(a if lower else _H(a)), b)]

    def jvp(primals: Sequence[Tensor], tangents: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        (a, b), (da, db) = primals, tangents
        (x,) = fun(a, b)
        rhs = F.sub(db, _mm(da, x))
        # the solve as ops (not another recorded call), so the tangent map's pull-back is two
        # triangular solves; a second derivative goes through cholesky (a's Hermitian part)
        return [x], fun(a, rhs)  # dx = a^-1 (db - da x)

    return fun, jvp


def _solve_pos(at: Tensor, bt: Tensor, lower: builtins.bool) -> Tensor:
    """``jax.scipy.linalg.solve(a, b, assume_a="pos", lower=lower)``: ``b`` is a batch of vectors
    ``[..., n]`` when ``a.ndim == b.ndim + 1``, else of matrices ``[..., n, k]``."""
    n = at.shape[-1]
    vector = at.ndim == bt.ndim + 1
    matrix = F.reshape(bt, (*bt.shape, 1)) if vector else bt
    if matrix.ndim < 2 or matrix.shape[-2] != n:
        raise _error(
            ShapeError, "solve", (at, bt),
            f"with assume_a='pos', b must be [..., {n}] (a.ndim == b.ndim + 1) or [..., {n}, k], as jax.scipy's",
        )  # fmt: skip
    try:
        batch = tuple(np.broadcast_shapes(at.shape[:-2], matrix.shape[:-2]))
    except ValueError:
        raise _error(ShapeError, "solve", (at, bt), "the batch dims of a and b do not broadcast") from None
    fun, jvp = _solve_pos_rule(lower)
    (x,) = F._custom_rule("solve", fun, jvp, (F._broadcast_batch(at, batch), F._broadcast_batch(matrix, batch)))
    return F.reshape(x, x.shape[:-1]) if vector else x


@named("linalg.solve")
def solve(a: Any, b: Any, *, assume_a: str = "gen", lower: builtins.bool = False) -> Tensor:
    """``x`` with ``a @ x == b``, as ``jnp.linalg.solve``: ``b`` a vector ``[n]`` (when 1-D) or
    matrices ``[..., n, k]``; the batch dims broadcast. ``a`` and ``b`` are promoted together.

    ``assume_a`` as ``jax.scipy.linalg.solve``'s: ``"gen"`` (and ``"sym"``, ``"her"``, which JAX
    solves the same way) by ``lu``; ``"pos"`` by the Cholesky factor of ``a``'s upper triangle
    (its ``lower`` one with ``lower=True``), with jax.scipy's ``b`` shapes and derivative
    (``dx = a^-1 (db - da x)``, one recorded ``custom_jvp_call``)."""
    at, bt = _inexact("solve", a, b)
    _matrices("solve", at, square=True)
    _lapack("solve", at)
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise _error(
            ShapeError, "solve", (at, bt), f"assume_a must be one of 'gen', 'sym', 'her', 'pos', got {assume_a!r}"
        )
    if assume_a == "pos":
        return _solve_pos(at, bt, builtins.bool(lower))
    n = at.shape[-1]
    if bt.ndim == 0 or (bt.ndim == 1 and bt.shape[0] != n) or (bt.ndim > 1 and bt.shape[-2] != n):
        raise _error(ShapeError, "solve", (at, bt), f"b must be [{n}] or [..., {n}, k] for a of shape [..., {n}, {n}]")
    try:
        np.broadcast_shapes(at.shape[:-2], bt.shape[:-2] if bt.ndim > 1 else ())
    except ValueError:
        raise _error(ShapeError, "solve", (at, bt), "the batch dims of a and b do not broadcast") from None
    return F.solve(at, bt)


def _unpack_lu(lu_and_piv: Any) -> tuple[Tensor, Tensor]:
    packed, pivots = lu_and_piv
    return as_tensor(packed), as_tensor(pivots)


@named("linalg.lu_factor")
def lu_factor(a: Any) -> tuple[Tensor, Tensor]:
    """``(lu, piv)``, as ``jax.scipy.linalg.lu_factor``: the packed unit-lower L and upper U
    of ``a`` ``[..., m, n]`` (``a[..., perm, :] == L @ U``) and LAPACK's int32 row swaps
    ``[..., min(m, n)]`` (``lu``'s ``pivots``: row ``i`` was swapped with row ``piv[i]``)."""
    packed, pivots, _ = F.lu(_factor_input("lu_factor", a))
    return packed, pivots


def _permutation_of_pivots(pivots: Tensor, m: int) -> Tensor:
    """The row permutation LAPACK's swaps ``pivots`` stand for: start from ``0..m-1`` and
    swap row ``i`` with row ``pivots[..., i]`` in turn, each swap a few int32 ops."""
    shape = (*pivots.shape[:-1], m)
    last = len(shape) - 1
    rows = F.iota(dt.int32, shape, last)
    perm = rows
    zero = F.zeros(shape, dt.int32)
    for i in range(pivots.shape[-1]):
        p = F.slice(pivots, (*(0,) * last, i), (*pivots.shape[:-1], i + 1))
        target = F.broadcast_in_dim(F.reshape(p, shape[:-1]), shape, tuple(range(last)))
        at_i = F.eq(rows, F.full(shape, i, dt.int32))
        at_target = F.eq(rows, target)
        value_i = F.broadcast_in_dim(F.reduce_sum(F.select(at_i, perm, zero), (last,)), shape, tuple(range(last)))
        value_t = F.broadcast_in_dim(F.reduce_sum(F.select(at_target, perm, zero), (last,)), shape, tuple(range(last)))
        perm = F.select(at_i, value_t, F.select(at_target, value_i, perm))
    return perm


@named("linalg.lu_solve")
def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0) -> Tensor:
    """Solve ``op(a) @ x == b`` from ``lu_factor(a)``, as ``jax.scipy.linalg.lu_solve``:
    ``trans=0`` solves ``a x = b``, ``1`` ``a^T x = b`` and ``2`` ``a^H x = b``; ``b`` is a vector
    ``[n]`` (when 1-D) or matrices ``[..., n, k]`` whose batch dims broadcast to ``lu``'s. The
    pivots become a permutation (int32 ops), then two ``triangular_solve``\\ s read the packed
    factors (``lax.lu_solve``)."""
    packed, pivots = _unpack_lu(lu_and_piv)
    _matrices("lu_solve", packed, square=True)
    _lapack("lu_solve", packed)
    (bt,) = _inexact("lu_solve", b)
    if isinstance(trans, builtins.bool) or not isinstance(trans, (int, np.integer)) or int(trans) not in (0, 1, 2):
        raise _error(
            OpValueError, "lu_solve", (packed, bt),
            f"trans must be 0 (a x = b), 1 (a^T x = b) or 2 (a^H x = b), as jax.scipy.linalg.lu_solve's, got {trans!r}",
        )  # fmt: skip
    n, batch = packed.shape[-1], packed.shape[:-2]
    if pivots.dtype.kind not in ("int", "uint") or pivots.shape != packed.shape[:-1]:
        raise _error(ShapeError, "lu_solve", (packed, pivots), "piv must be lu_factor's int32 pivots [..., n]")
    # the bounds check below reads the pivots: traced (jit, vmap, rt.trace), a replay could not run
    # it, and a permutation built from an out-of-range pivot silently drops a row of b
    refuse_traced(
        "linalg.lu_solve", "piv", pivots,
        "its bounds (each pivot a row of the factors) are checked on its values",
        "pass concrete pivots (lu_factor outside the traced function), or use linalg.solve on the matrix",
        (packed, pivots), index=True,
    )  # fmt: skip
    piv = pivots.numpy()
    outside = (piv < 0) | (piv >= n)
    if outside.any():
        # each pivot names the row swapped with row i: one outside [0, n) names no row, and the
        # permutation built from it would silently drop a row of b
        bad = np.argwhere(outside)[0]
        raise _error(
            OpValueError, "lu_solve", (packed, pivots),
            f"piv[{', '.join(map(str, bad))}] = {int(piv[tuple(bad)])} is not a row of the {n} x {n} factors "
            f"(pivots lie in [0, {n}), as lu_factor gives them)",
        )  # fmt: skip
    vector = bt.ndim == 1
    matrix = F.reshape(bt, (*bt.shape, 1)) if vector else bt
    fits = matrix.ndim >= 2 and matrix.shape[-2] == n
    if fits:
        try:
            fits = np.broadcast_shapes(batch, matrix.shape[:-2]) == batch
        except ValueError:
            fits = False
    if not fits:
        raise _error(
            ShapeError, "lu_solve", (packed, bt),
            f"b must be [{n}] or [..., {n}, k] with batch dims that broadcast to lu's {list(batch)}",
        )  # fmt: skip
    if matrix.dtype is not packed.dtype:
        # both to their common dtype, as jax.scipy's promote_dtypes_inexact (an f32 factorisation
        # and an f64 b solve in f64): converting b down would silently drop its precision
        common = result_type(packed, matrix)
        packed = packed if packed.dtype is common else F.convert(packed, common)
        matrix = matrix if matrix.dtype is common else F.convert(matrix, common)
    matrix = F._broadcast_batch(matrix, batch)
    x = F.lu_solve(packed, _permutation_of_pivots(F.convert(pivots, dt.int32), n), matrix, trans=int(trans))
    return F.reshape(x, x.shape[:-1]) if vector else x


@named("linalg.matrix_power")
def matrix_power(a: Any, n: int) -> Tensor:
    """``a`` to the integer power ``n``, as ``jnp.linalg.matrix_power``: repeated squaring
    (``dot_general``); ``n == 0`` gives the identity, ``n < 0`` powers ``inv(a)``. The dtype is
    ``a``'s (integers stay integers, except for negative powers)."""
    t = as_tensor(a)
    _matrices("matrix_power", t, square=True)
    if not F._is_index(n):
        raise _error(OpTypeError, "matrix_power", (t,), f"the exponent must be an integer, got {n!r}")
    k = operator.index(n)
    if k == 0:
        return _eye_like(t)
    if k < 0:
        t, k = inv(t), -k
    result: Tensor | None = None
    z: Tensor | None = None
    while k > 0:
        z = t if z is None else _mm(z, z)
        k, bit = divmod(k, 2)
        if bit:
            result = z if result is None else _mm(result, z)
    assert result is not None
    return result


# -- norms -----------------------------------------------------------------------------------------------


def _norm_axes(name: str, x: Tensor, axis: Any) -> tuple[int, ...]:
    items = (axis,) if F._is_index(axis) else axis
    try:
        items = tuple(items)
    except TypeError:
        raise _error(ShapeError, name, (x,), f"axis must be an int or a tuple of ints, got {axis!r}") from None
    out = []
    for a in items:
        if not F._is_index(a) or not -x.ndim <= operator.index(a) < x.ndim:
            raise _error(ShapeError, name, (x,), f"axis {axis!r} is out of range for rank {x.ndim}")
        out.append(operator.index(a) % x.ndim)
    if len(set(out)) != len(out):
        raise _error(ShapeError, name, (x,), f"axis {axis!r} repeats an axis")
    return tuple(out)


def _is_ord(ord: Any, value: float) -> builtins.bool:  # noqa: A002
    return not isinstance(ord, str) and ord is not None and ord == value


def _vector_norm(name: str, x: Tensor, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Tensor:  # noqa: A002
    if ord is None or _is_ord(ord, 2):
        return F.sqrt(_reduce("sum", _abs2(x), axes, keepdims))
    if _is_ord(ord, math.inf):
        return _reduce("max", F.abs(x), axes, keepdims)
    if _is_ord(ord, -math.inf):
        return _reduce("min", F.abs(x), axes, keepdims)
    if _is_ord(ord, 0):
        real = _real_dtype(x.dtype)
        return _reduce("sum", F.convert(F.ne(x, F.zeros(x.shape, x.dtype)), real), axes, keepdims)
    if _is_ord(ord, 1):
        return _reduce("sum", F.abs(x), axes, keepdims)
    if isinstance(ord, str) or not isinstance(ord, (int, float, np.integer, np.floating)):
        raise _error(ShapeError, name, (x,), f"invalid order {ord!r} for a vector norm (a number, inf or -inf)")
    magnitude = F.abs(x)
    storage = magnitude.dtype.storage
    p = np.asarray(ord).astype(storage)
    p_inv = (np.asarray(1, storage) / p).astype(storage)
    powered = F.pow(magnitude, F.full(magnitude.shape, p.item(), magnitude.dtype))
    total = _reduce("sum", powered, axes, keepdims)
    return F.pow(total, F.full(total.shape, p_inv.item(), total.dtype))


def _matrix_norm(name: str, x: Tensor, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Tensor:  # noqa: A002
    row, col = axes
    if ord is None or ord in ("f", "fro"):
        return F.sqrt(_reduce("sum", _abs2(x), axes, keepdims))
    if isinstance(ord, str) and ord != "nuc":
        raise _error(ShapeError, name, (x,), f"invalid order {ord!r} for a matrix norm")
    if _is_ord(ord, 1) or _is_ord(ord, -1):
        summed, other = (row, col if keepdims or col < row else col - 1)
        kind = "max" if ord == 1 else "min"
        return _reduce(kind, _reduce("sum", F.abs(x), (summed,), keepdims), (other,), keepdims)
    if _is_ord(ord, math.inf) or _is_ord(ord, -math.inf):
        summed, other = (col, row if keepdims or row < col else row - 1)
        kind = "max" if ord == math.inf else "min"
        return _reduce(kind, _reduce("sum", F.abs(x), (summed,), keepdims), (other,), keepdims)
    if ord == "nuc" or _is_ord(ord, 2) or _is_ord(ord, -2):
        rest = [d for d in range(x.ndim) if d not in axes]
        moved = F.transpose(x, (*rest, row, col))
        _lapack(name, moved)
        s = F.svd(moved, full_matrices=False, compute_uv=False)
        kind = "sum" if ord == "nuc" else "max" if ord == 2 else "min"
        y = _reduce(kind, s, (s.ndim - 1,), False)
        if keepdims:
            y = F.reshape(y, tuple(1 if i in axes else n for i, n in enumerate(x.shape)))
        return y
    raise _error(ShapeError, name, (x,), f"invalid order {ord!r} for a matrix norm")


@named("linalg.norm")
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
    """A vector or matrix norm, as ``jnp.linalg.norm``.

    One axis (or a 1-D ``x`` without ``axis``): vector norms, ``ord`` None/2 (Euclidean), 1,
    inf, -inf, 0 (the count of non-zeros) or any other number p (``sum(|x|**p)**(1/p)``). Two
    axes (or a 2-D ``x`` without ``axis``): matrix norms, ``ord`` None/'fro' (Frobenius),
    'nuc' (sum of singular values), 1/-1 (max/min column sum), inf/-inf (max/min row sum),
    2/-2 (largest/smallest singular value). ``ord=None`` without ``axis`` is the Euclidean
    norm of all elements, whatever the rank. The result is real.
    """
    (t,) = _inexact("norm", x)
    if axis is None:
        if ord is None:
            return F.sqrt(_reduce("sum", _abs2(t), tuple(range(t.ndim)), keepdims))
        axes = tuple(range(t.ndim))
    else:
        axes = _norm_axes("norm", t, axis)
    if len(axes) == 1:
        return _vector_norm("norm", t, 2 if ord is None else ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm("norm", t, ord, axes, keepdims)
    raise _error(
        ShapeError, "norm", (t,),
        f"takes one axis (a vector norm) or two (a matrix norm), got axis={axis!r}; for the Euclidean norm "
        "of every element leave ord=None",
    )  # fmt: skip


@named("linalg.vector_norm")
def vector_norm(x: Any, ord: Any = 2, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
    """The vector norm over ``axis`` (every axis by default, as if ``x`` were flattened), as
    ``jnp.linalg.vector_norm``; ``ord`` as for ``norm``'s vector norms. Integer inputs are
    converted to the policy's float first (jax.numpy keeps ``ord=1`` and ``inf`` integer)."""
    (t,) = _inexact("vector_norm", x)
    axes = tuple(range(t.ndim)) if axis is None else _norm_axes("vector_norm", t, axis)
    return _vector_norm("vector_norm", t, ord, axes, keepdims)


@named("linalg.matrix_norm")
def matrix_norm(x: Any, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:  # noqa: A002
    """The matrix norm over the last two axes, as ``jnp.linalg.matrix_norm``; ``ord`` as for
    ``norm``'s matrix norms."""
    (t,) = _inexact("matrix_norm", x)
    _matrices("matrix_norm", t)
    return _matrix_norm("matrix_norm", t, ord, (t.ndim - 2, t.ndim - 1), keepdims)

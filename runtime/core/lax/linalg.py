"""The op functions of linear algebra (factorisations and what is composed from them).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core import hooks, ops
from runtime.core.executor import apply, as_tensor, op_error
from runtime.core.lax._common import Operand, _named, _one
from runtime.core.lax.binary import div, eq, gt, mul, ne
from runtime.core.lax.contraction import dot_general, select
from runtime.core.lax.conversion import convert
from runtime.core.lax.reductions import reduce_max, reduce_min, reduce_prod, reduce_sum
from runtime.core.lax.structural import broadcast_in_dim, full, iota, reshape, transpose
from runtime.core.lax.unary import abs, conj, log  # noqa: A004
from runtime.core.lax.unary import sign as sign_
from runtime.core.shapes import OpValueError, ShapeError
from runtime.core.tensor import Tensor

__all__ = [
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "geqrf",
    "inv",
    "lu",
    "lu_solve",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "triangular_solve",
]


def eigh(x: Operand, lower: bool = True) -> tuple[Tensor, Tensor]:
    """Eigen-decomposition of a symmetric / Hermitian matrix: ``(eigenvectors, eigenvalues)``.

    Eigenvalues ascend and are real; like ``jax.lax.linalg.eigh`` only the
    ``lower`` (or upper) triangle is read.
    """
    v, w = apply(ops.eigh, (x,), {"lower": builtins.bool(lower)})  # type: ignore[misc]
    return v, w


def cholesky(x: Operand) -> Tensor:
    """Lower Cholesky factor L with ``x = L @ L^H``."""
    return _one(ops.cholesky, x)


def triangular_solve(
    a: Operand,
    b: Operand,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> Tensor:
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b``, as ``jax.lax.linalg.triangular_solve``."""
    return _one(
        ops.triangular_solve, a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal,
    )  # fmt: skip


def lu(x: Operand) -> tuple[Tensor, Tensor, Tensor]:
    """LU decomposition with partial pivoting, as ``jax.lax.linalg.lu``: ``(lu, pivots, permutation)``.

    ``lu`` packs the unit lower-triangular L (below the diagonal) and the upper-triangular
    U; ``x[..., permutation, :] == L @ U``. ``pivots`` (LAPACK's row swaps) and
    ``permutation`` are int32 and carry no derivative.
    """
    packed, pivots, permutation = apply(ops.lu, (x,), {})  # type: ignore[misc]
    return packed, pivots, permutation


def qr(x: Operand, full_matrices: bool = True) -> tuple[Tensor, Tensor]:
    """QR decomposition ``x = q @ r``, as ``jax.lax.linalg.qr`` (LAPACK's signs, no normalisation)."""
    q, r = apply(ops.qr, (x,), {"full_matrices": builtins.bool(full_matrices)})  # type: ignore[misc]
    return q, r


@_named("svd")
def svd(x: Operand, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Singular value decomposition ``x = u @ diag(s) @ vh``, as ``jax.lax.linalg.svd``:
    ``(u, s, vh)``, or only ``s`` (real, descending) without ``compute_uv``."""
    params = {"full_matrices": builtins.bool(full_matrices), "compute_uv": builtins.bool(compute_uv)}
    out = apply(ops.svd, (x,), params)
    if not compute_uv:
        return out[0] if isinstance(out, tuple) else out
    u, s, vh = out  # type: ignore[misc]
    return u, s, vh


def eig(
    x: Operand, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
) -> tuple[Tensor, ...]:  # fmt: skip
    """Eigen-decomposition of a general square matrix, as ``jax.lax.linalg.eig``:
    ``(w, vl, vr)`` (vectors only where asked for), complex whatever the input.

    The eigenvalues are always differentiable; the eigenvectors only with
    ``enable_eigvec_derivs=True``, JAX's opt-in: the derivative is taken under geev's
    normalisation (unit 2-norm, largest-magnitude component real), valid for distinct
    eigenvalues and no two components tied for the largest magnitude."""
    params = {
        "compute_left_eigenvectors": builtins.bool(compute_left_eigenvectors),
        "compute_right_eigenvectors": builtins.bool(compute_right_eigenvectors),
        "enable_eigvec_derivs": builtins.bool(enable_eigvec_derivs),
    }
    out = apply(ops.eig, (x,), params)
    return out if isinstance(out, tuple) else (out,)


def geqrf(x: Operand) -> tuple[Tensor, Tensor]:
    """Householder QR as LAPACK's geqrf, as ``jax.lax.linalg.geqrf``: ``(a, taus)``, R on and
    above the diagonal of ``a`` and the reflectors' vectors below it. Not differentiable (JAX
    has no rule either)."""
    a, taus = apply(ops.geqrf, (x,), {})  # type: ignore[misc]
    return a, taus


@_named("eigvals")
def eigvals(x: Operand) -> Tensor:
    """The eigenvalues of a general square matrix (complex), as ``jax.numpy.linalg.eigvals``."""
    return eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def _square_matrix(x: Operand, what: str) -> Tensor:
    """``x`` as a Tensor of (a batch of) square matrices, else the error ``lu`` gives."""
    xt = as_tensor(x)
    if xt.ndim < 2 or xt.shape[-1] != xt.shape[-2]:
        raise op_error(ShapeError, ops.lu, (xt,), f"{what} takes (a batch of) square matrices")
    return xt


def _mask_like(shape: tuple[int, ...], compare: Any) -> Tensor:
    """``compare(row, col)`` over the last two axes of ``shape`` (bool, batch dims included)."""
    nd = len(shape)
    return compare(iota(dt.int32, shape, nd - 2), iota(dt.int32, shape, nd - 1))


def _diagonal(x: Tensor) -> Tensor:
    """``x[..., k, k]`` of square matrices, shape ``x.shape[:-1]`` (a masked sum: differentiable)."""
    zero = full(x.shape, 0, x.dtype)
    return reduce_sum(select(_mask_like(x.shape, eq), x, zero), (x.ndim - 2,))


def _permutation_matrix(permutation: Tensor, dtype: Any) -> Tensor:
    """``P`` with ``P @ b == b[..., permutation, :]``: ``P[..., i, j] = (permutation[..., i] == j)``."""
    m = permutation.shape[-1]
    shape = (*permutation.shape, m)
    nd = len(shape)
    rows = broadcast_in_dim(permutation, shape, tuple(range(nd - 1)))
    return convert(eq(rows, iota(permutation.dtype, shape, nd - 1)), dtype)


def _batch_matmul(x: Tensor, y: Tensor) -> Tensor:
    nd = x.ndim
    batch = tuple(range(nd - 2))
    return dot_general(x, y, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _broadcast_batch(x: Tensor, batch: tuple[int, ...]) -> Tensor:
    """``x`` (matrices) broadcast to the leading ``batch`` dims, recorded as ``broadcast_in_dim``."""
    if x.shape[:-2] == batch:
        return x
    shape = (*batch, *x.shape[-2:])
    return broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def _check_permutation(packed: Tensor, permutation: Tensor, b: Tensor) -> None:
    """``permutation`` must hold each row ``0 .. m-1`` once per matrix (as ``lu`` gives it): a
    value out of range or repeated would make the permutation matrix drop a row of ``b``.
    Traced (``jit``, ``vmap``, ``trace``), a replay could not check it: ``lu``'s own permutation
    (``solve``, ``inv``) is one by construction and passes; any other is refused."""
    node = permutation.node
    if node is not None:
        from runtime.core.graph import ConcretizationIndexError, is_traced

        if is_traced(permutation):
            if node.producer is not None and node.producer.op is ops.lu:
                return
            raise ConcretizationIndexError(
                f"lu_solve: a traced permutation ({permutation.dtype.short}{list(permutation.shape)}) cannot be "
                "checked when the program replays; pass lu's permutation of a traced matrix, or a concrete one"
            )
    perm = permutation._array  # (the storage: numpy() refuses a traced Tensor)
    m = perm.shape[-1] if perm.ndim else 0
    if perm.size and not np.array_equal(np.sort(perm, axis=-1), np.broadcast_to(np.arange(m), perm.shape)):
        from runtime.core.promotion import get_policy

        named = zip(("lu", "permutation", "b"), (packed, permutation, b), strict=True)
        described = " ".join(f"{name}:{t.dtype.short}{list(t.shape)}" for name, t in named)
        raise OpValueError(
            f"lu_solve: permutation must hold each row 0..{m - 1} once per matrix (lu's permutation), got "
            f"{perm.tolist()!r} [lu_solve operands {described}; policy {get_policy()!r}]"
        )


@_named("lu_solve")
def lu_solve(packed: Tensor, permutation: Tensor, b: Tensor, trans: int = 0) -> Tensor:
    """Solve ``op(a) @ x = b`` for matrices ``b`` from ``a``'s ``lu``, as JAX's ``lu_solve``:
    ``trans=0`` solves ``a x = b`` (``U^-1 L^-1 P b``), ``1`` solves ``a^T x = b`` and ``2``
    ``a^H x = b`` (``P^T L^-T U^-T b``, conjugated for 2), each two triangular solves reading the
    packed factors' triangles and one permutation matmul, so it records, differentiates, batches
    and lowers as those ops. A ``permutation`` that is not one (a row out of range or repeated)
    is refused (``OpValueError``), as is a ``trans`` outside ``{0, 1, 2}``."""
    packed, permutation, b = as_tensor(packed), as_tensor(permutation), as_tensor(b)
    _check_trans("lu_solve", trans, (packed, permutation, b))
    _check_permutation(packed, permutation, b)
    p = _permutation_matrix(permutation, b.dtype)
    if trans == 0:
        pb = _batch_matmul(p, b)
        y = triangular_solve(packed, pb, left_side=True, lower=True, unit_diagonal=True)
        return triangular_solve(packed, y, left_side=True, lower=False)
    # a = P^T L U, so a^T = U^T L^T P: solve with U^T, then L^T, then undo P (P^-1 = P^T); for
    # trans=2 the triangles are conjugated as well (a^H = U^H L^H P), the permutation is real
    conj = trans == 2 and packed.dtype.kind == "complex"
    y = triangular_solve(packed, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    z = triangular_solve(packed, y, left_side=True, lower=True, transpose_a=True, conjugate_a=conj, unit_diagonal=True)
    nd = p.ndim
    return _batch_matmul(transpose(p, (*range(nd - 2), nd - 1, nd - 2)), z)


def _check_trans(name: str, trans: Any, operands: Sequence[Tensor]) -> None:
    """``trans`` must be 0, 1 or 2 (a bool or a float is not one), as scipy and JAX define it."""
    if isinstance(trans, builtins.bool) or not isinstance(trans, (int, np.integer)) or int(trans) not in (0, 1, 2):
        from runtime.core.promotion import get_policy

        described = ", ".join(f"{t.dtype.short}{list(t.shape)}" for t in operands)
        raise OpValueError(
            f"{name}: trans must be 0 (a x = b), 1 (a^T x = b) or 2 (a^H x = b), got {trans!r} "
            f"[{name} operands {described}; policy {get_policy()!r}]"
        )


def _common_inexact(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` converted (recorded) to their dtype under the active policy."""
    if a.dtype is b.dtype:
        return a, b  # nothing to decide (and no lattice question, which a policy without complex refuses)
    from runtime.core.promotion import result_type

    common = result_type(a, b)
    return (a if a.dtype is common else convert(a, common)), (b if b.dtype is common else convert(b, common))


@_named("solve")
def solve(a: Operand, b: Operand) -> Tensor:
    """``x`` with ``a @ x = b``, as ``jax.numpy.linalg.solve``: ``b`` is a vector ``[n]`` (when
    1-D) or matrices ``[..., n, k]``; batch dims broadcast. Composed of ``lu`` and two
    ``triangular_solve``\\ s, so it records, differentiates and lowers as those ops."""
    at = _square_matrix(a, "solve")
    bt = as_tensor(b)
    at, bt = _common_inexact(at, bt)
    vector = bt.ndim == 1
    if vector:
        bt = reshape(bt, (bt.shape[0], 1))
    if bt.ndim < 2 or bt.shape[-2] != at.shape[-1]:
        raise op_error(
            ShapeError, ops.triangular_solve, (at, bt), "solve: b must be [n] or [..., n, k] for a [..., n, n]"
        )
    batch = tuple(np.broadcast_shapes(at.shape[:-2], bt.shape[:-2]))
    at, bt = _broadcast_batch(at, batch), _broadcast_batch(bt, batch)
    packed, _, permutation = lu(at)
    x = lu_solve(packed, permutation, convert(bt, packed.dtype) if bt.dtype is not packed.dtype else bt)
    return reshape(x, x.shape[:-1]) if vector else x


@_named("inv")
def inv(a: Operand) -> Tensor:
    """The inverse of (a batch of) square matrices, as ``jax.numpy.linalg.inv``: ``solve(a, I)``."""
    at = _square_matrix(a, "inv")
    packed, _, permutation = lu(at)
    eye = convert(_mask_like(packed.shape, eq), packed.dtype)
    return lu_solve(packed, permutation, eye)


def _lu_sign_and_diagonal(a: Operand, what: str) -> tuple[Tensor, Tensor]:
    """The permutation's sign (+-1, of ``lu``'s dtype) and U's diagonal."""
    packed, pivots, _ = lu(_square_matrix(a, what))
    return _sign_and_diagonal(packed, pivots)


def _sign_and_diagonal(packed: Tensor, pivots: Tensor) -> tuple[Tensor, Tensor]:
    """The permutation's sign and U's diagonal, from ``lu``'s packed factors and pivots."""
    k = pivots.ndim - 1
    # each pivot that is not its own row is a swap: the sign is the product of -1 per swap (in the
    # factors' dtype, with no Python scalar: a policy without int32 arithmetic still computes it)
    swapped = ne(pivots, iota(dt.int32, pivots.shape, k))
    flips = select(swapped, full(pivots.shape, -1, packed.dtype), full(pivots.shape, 1, packed.dtype))
    return reduce_prod(flips, (k,)), _diagonal(packed)


def _det_lu(a: Tensor) -> Tensor:
    """The permutation's sign times U's diagonal product (the value of ``det``)."""
    sign, diagonal = _lu_sign_and_diagonal(a, "det")
    return mul(sign, reduce_prod(diagonal, (diagonal.ndim - 1,)))


def _matrix_axes(x: Tensor) -> tuple[int, ...]:
    return (x.ndim - 2, x.ndim - 1)


def _swap_last(x: Tensor) -> Tensor:
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(x, perm)


def _adjoint(x: Tensor) -> Tensor:
    t = _swap_last(x)
    return conj(t) if t.dtype.kind == "complex" else t


def _cofactor(at: Tensor, u: Tensor, s: Tensor, vh: Tensor) -> Tensor:
    """The cofactor matrix of (a batch of) square matrices ``at`` from their SVD ``u, s, vh``:
    ``adj(at)^T``, the derivative of ``det`` (``d det(a) = sum(_cofactor(a) * da)``), of every rank.

    ``det(a) * inv(a)^T`` is NaN at a singular matrix, where the cofactors are not (for rank
    ``n - 1`` they are a rank-1 matrix). From the SVD ``a = u @ diag(s) @ vh``, since
    ``adj(x @ y) = adj(y) @ adj(x)`` and ``adj(q) = det(q) q^H`` for a unitary ``q``:
    ``adj(a) = det(u) det(vh) vh^H @ diag(p) @ u^H`` with ``p_i`` the product of the singular
    values other than ``s_i`` (a masked product, no division): exact at every rank, 0 for
    rank ``n - 2`` and below. Composed of ``svd``, ``lu`` (the unit determinants) and
    elementwise ops, so it records and differentiates like them."""
    n, nd = s.shape[-1], s.ndim
    pair = (*s.shape, n)
    # others[..., i, j] = s[..., j] for j != i, else 1; p[..., i] = prod_j others[..., i, j]
    spread = broadcast_in_dim(s, pair, (*range(nd - 1), nd))
    others = select(_mask_like(pair, eq), full(pair, 1, s.dtype), spread)
    p = reduce_prod(others, (nd,))
    if p.dtype is not at.dtype:
        p = convert(p, at.dtype)
    unit = mul(_det_lu(u), _det_lu(vh))  # det(u) det(vh): +-1, or a unit complex number
    scaled = mul(_adjoint(vh), broadcast_in_dim(p, at.shape, (*range(nd - 1), nd)))
    adj = _batch_matmul(scaled, _adjoint(u))
    adj = mul(adj, broadcast_in_dim(unit, at.shape, tuple(range(nd - 1))))
    return _swap_last(adj)


def _det_fun(a: Tensor) -> list[Tensor]:
    """``det``'s value, as the recorded call's function (``custom_jvp_call``)."""
    return [_det_lu(a)]


def _det_jvp(primals: Sequence[Tensor], tangents: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """``det``'s JVP, the recorded call's rule: ``det(a) tr(a^-1 t)`` with one LU solve away from
    singular matrices, and ``sum(_cofactor(a) * t)`` at them (where the solve is NaN)."""
    (a,), (t,) = primals, tangents
    u, s, vh = svd(a, full_matrices=False)
    by_cofactors = reduce_sum(mul(_cofactor(a, u, s, vh), t), _matrix_axes(a))
    if a.shape[-1] == 0:
        return [_det_lu(a)], [by_cofactors]
    # Away from singular matrices the solve, as JAX's rule computes it: the cofactors' products
    # of singular values and unitary factors differ from it by tens of ulps there. A singular
    # ``a`` never reaches the solve (``safe`` is the identity there): its derivative would be
    # NaN, and NaN times the unused branch's zero cotangent is NaN.
    nd = s.ndim
    eps = float(ml_dtypes.finfo(np.dtype(s.dtype.storage)).eps)
    smax, smin = reduce_max(s, (nd - 1,)), reduce_min(s, (nd - 1,))
    regular = gt(smin, mul(smax, full(smax.shape, eps**0.5, s.dtype)))
    mask = broadcast_in_dim(regular, a.shape, tuple(range(nd - 1)))
    safe = select(mask, a, convert(_mask_like(a.shape, eq), a.dtype))
    packed, pivots, permutation = lu(safe)  # one factorisation for det(safe) and the solve
    sign, diagonal = _sign_and_diagonal(packed, pivots)
    det_safe = mul(sign, reduce_prod(diagonal, (diagonal.ndim - 1,)))
    by_solve = mul(det_safe, reduce_sum(_diagonal(lu_solve(packed, permutation, t)), (nd - 1,)))
    return [_det_lu(a)], [select(regular, by_solve, by_cofactors)]


def _custom_rule(name: str, fun: Any, jvp: Any, operands: Sequence[Tensor]) -> list[Tensor]:
    """``fun(*operands)`` (a list of Tensors) with the derivative rule ``jvp`` (``(primals,
    tangents) -> (outputs, output tangents)``), as ``jax.custom_jvp``: with a tracked operand it
    records one ``custom_jvp_call`` named ``name``, which replays, lowers (``jax.custom_jvp``),
    batches and differentiates again like any custom rule; untracked, ``fun`` simply runs. The
    NumPy-named layer composes its functions with a derivative of their own from it (``det``
    here, ``linalg.pinv``, ``linalg.solve(assume_a='pos')``, ``linalg.slogdet(method='qr')``)."""
    recorder = hooks.current_recorder()
    if recorder is None or builtins.all(t.node is None for t in operands):
        return list(fun(*operands))
    with hooks.recorder_override(None):
        values = list(fun(*operands))
    outs = [Tensor(v._array, v.dtype) for v in values]
    params = {
        "name": name, "fun": lambda *xs: list(fun(*xs)), "jvp": jvp,
        "in_avals": tuple((t.dtype, tuple(t.shape)) for t in operands),
        "out_avals": tuple((o.dtype, tuple(o.shape)) for o in outs),
    }  # fmt: skip
    recorder(ops.custom_jvp_call, params, tuple(operands), tuple(t.dtype for t in operands), tuple(outs))
    return outs


@_named("det")
def det(a: Operand) -> Tensor:
    """The determinant, as ``jax.numpy.linalg.det``: the permutation's sign times U's diagonal product.

    Its derivative is the cofactor matrix (``_cofactor``), right at singular matrices too, as
    JAX's custom JVP intends. A tracked operand records one ``custom_jvp_call`` (``name=det``)
    whose rule is ``_det_jvp``: it replays, lowers (``jax.custom_jvp``) and batches like any
    custom rule; untracked, it is the composition of ``lu`` and products."""
    at = _square_matrix(a, "det")
    recorder = hooks.current_recorder()
    if at.node is None or recorder is None or not at.dtype.is_inexact:
        return _det_lu(at)
    with hooks.recorder_override(None):
        value = _det_lu(at)
    out = Tensor(value._array, value.dtype)
    params = {
        "name": "det", "fun": _det_fun, "jvp": _det_jvp,
        "in_avals": ((at.dtype, tuple(at.shape)),), "out_avals": ((out.dtype, tuple(out.shape)),),
    }  # fmt: skip
    recorder(ops.custom_jvp_call, params, (at,), (at.dtype,), (out,))
    return out


@_named("slogdet")
def slogdet(a: Operand) -> tuple[Tensor, Tensor]:
    """``(sign, log|det|)``, as ``jax.numpy.linalg.slogdet``: ``sign`` of ``a``'s dtype (a unit
    complex number for complex ``a``, 0 for a singular matrix), ``log|det|`` real.

    A real sign is the product of the pivots' signs (``sign``), so an infinite pivot gives
    +-1 and ``log|det| = inf``, as NumPy, JAX and PyTorch give it (``x / |x|`` would be NaN)."""
    sign, diagonal = _lu_sign_and_diagonal(a, "slogdet")
    size = abs(diagonal)
    last = (diagonal.ndim - 1,)
    if diagonal.dtype.kind != "complex":
        phase = sign_(diagonal)
    else:
        safe = select(eq(size, full(size.shape, 0, size.dtype)), full(size.shape, 1, size.dtype), size)
        phase = div(diagonal, convert(safe, diagonal.dtype) if safe.dtype is not diagonal.dtype else safe)
    return mul(sign, reduce_prod(phase, last)), reduce_sum(log(size), last)

"""The parity sweep's rows of the linear algebra ops (``runtime.core.ops`` families ``linalg``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autodiff.parity._common import Case, Slot, Spec, _jax_modules, _jnp, _lax, draw
from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.plan import plan
from runtime.core.promotion import PromotionError
from runtime.core.tensor import Tensor


def _abs2_ours(v: Tensor) -> Tensor:
    return F.real(F.mul(v, F.conj(v))) if v.dtype.kind == "complex" else F.mul(v, v)


def _abs2_jax(v: Any) -> Any:
    jnp = _jnp()
    return jnp.real(v * jnp.conj(v)) if jnp.iscomplexobj(v) else v * v


def _eigh_ours(a: Tensor) -> tuple[Tensor, Tensor]:
    # Eigenvectors are defined up to a phase per column: compare the gauge-invariant
    # |v|**2 (through the eigenvector derivative) together with the eigenvalues.
    v, w = F.eigh(a)
    return w, _abs2_ours(v)


def _eigh_jax(a: Any) -> tuple[Any, Any]:
    v, w = _lax().linalg.eigh(a)
    return w, _abs2_jax(v)


def _herm(a: np.ndarray) -> np.ndarray:
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _randn(rng: np.random.Generator, shape: tuple[int, ...], complex_: bool) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def _gen_hermitian(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """Hermitian 3x3 with well separated eigenvalues, exactly Hermitian in storage."""
    slot = slots[0]
    assert isinstance(slot, DType)
    if not slot.is_inexact:  # symmetric, with distinct eigenvalues (eigenvectors defined up to sign)
        a = [[1, 1, 0], [1, 0, 0], [0, 0, 0]] if slot is dt.bool_ else [[2, 1, 0], [1, 3, 1], [0, 1, 4]]
        return [np.array(a).astype(slot.storage)]
    q, _ = np.linalg.qr(_randn(rng, (3, 3), slot.kind == "complex"))
    a = q @ np.diag([1.0, 2.5, 4.5]) @ np.conj(q.T)
    return [_herm(_herm(a).astype(slot.storage))]


def _gen_spd(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    slot = slots[0]
    assert isinstance(slot, DType)
    if not slot.is_inexact:
        a = draw(slot, "any", (3, 3), rng)
        return [np.maximum(a, a.T).astype(slot.storage)]  # (NumPy's maximum of int2 is int8)
    b = _randn(rng, (3, 3), slot.kind == "complex")
    return [_herm(_herm(b @ np.conj(b.T) + 3 * np.eye(3)).astype(slot.storage))]


def _gen_triangular(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """A well-conditioned (both triangles) matrix and a right-hand side."""
    out: list[Any] = []
    a_slot, b_slot = slots
    assert isinstance(a_slot, DType) and isinstance(b_slot, DType)
    if a_slot.is_inexact:
        a = 0.3 * _randn(rng, (3, 3), a_slot.kind == "complex") + np.diag([2.0, 2.5, 3.0])
        out.append(np.asarray(a).astype(a_slot.storage))
    else:
        out.append(draw(a_slot, "any", (3, 3), rng))
    out.append(draw(b_slot, "any", (3, 2), rng))
    return out


#: integer (and bool) operands of the general-matrix rows: well conditioned, distinct singular values
_INT_SQUARE = [[2, 1, 0], [1, 3, 1], [0, 1, 4]]
_INT_TALL = [[2, 1, 0], [1, 3, 1], [0, 1, 4], [1, 0, 1]]
_BOOL_SQUARE = [[1, 1, 0], [0, 1, 0], [0, 0, 1]]
_BOOL_TALL = [[1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]
_INT_SQUARE4 = [[2, 1, 0, 0], [1, 3, 1, 0], [0, 1, 4, 1], [0, 0, 1, 5]]
_BOOL_SQUARE4 = [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]]


def _general(slot: DType, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """A well-conditioned matrix with well separated singular values (and eigenvalues)."""
    if not slot.is_inexact:
        boolean = {(3, 3): _BOOL_SQUARE, (4, 3): _BOOL_TALL, (3, 4): np.transpose(_BOOL_TALL), (4, 4): _BOOL_SQUARE4}
        integer = {(3, 3): _INT_SQUARE, (4, 3): _INT_TALL, (3, 4): np.transpose(_INT_TALL), (4, 4): _INT_SQUARE4}
        return np.array((boolean if slot is dt.bool_ else integer)[shape]).astype(slot.storage)
    spread = np.zeros(shape)
    k = min(shape)
    spread[np.arange(k), np.arange(k)] = 1.5 * np.arange(1, k + 1)
    return (0.4 * _randn(rng, shape, slot.kind == "complex") + spread).astype(slot.storage)


def _gen_square(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    slot = slots[0]
    assert isinstance(slot, DType)
    return [_general(slot, (3, 3), rng)]


def _gen_square4(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """4x4: jax.numpy.linalg.det of 2x2 and 3x3 matrices is a closed formula (any float dtype), of
    larger ones lu's (LAPACK dtypes only), which is what castwise's det computes."""
    slot = slots[0]
    assert isinstance(slot, DType)
    return [_general(slot, (4, 4), rng)]


def _gen_tall(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    slot = slots[0]
    assert isinstance(slot, DType)
    return [_general(slot, (4, 3), rng)]


def _gen_wide(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    slot = slots[0]
    assert isinstance(slot, DType)
    return [_general(slot, (3, 4), rng)]


def _eig_vectors_ours(a: Tensor) -> tuple[Tensor, ...]:
    # geev's eigenvectors are normalised (unit norm, largest component real), so they compare as
    # they are; castwise's kernel and XLA's both call geev in the operand's precision
    w, v = F.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


def _eig_vectors_jax(a: Any) -> tuple[Any, ...]:
    w, v = _lax().linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


def _geqrf_jax(a: Any) -> tuple[Any, Any]:
    # the primitive itself: jax.lax.linalg does not export geqrf at 0.10 (jnp.linalg.qr(mode="raw")
    # calls it)
    from jax._src.lax import linalg as lax_linalg

    a_out, taus = lax_linalg.geqrf(a)
    return a_out, taus


def _svd_ours(a: Tensor) -> tuple[Tensor, ...]:
    # singular vectors are defined up to a phase per pair (u_k, vh_k): compare s, |u|^2, |vh|^2, u @ vh
    u, s, vh = F.svd(a, full_matrices=False)
    return s, _abs2_ours(u), _abs2_ours(vh), F.matmul(u, vh)


def _svd_jax(a: Any) -> tuple[Any, ...]:
    u, s, vh = _lax().linalg.svd(a, full_matrices=False)
    return s, _abs2_jax(u), _abs2_jax(vh), u @ vh


def _eigvals_ours(a: Tensor) -> tuple[Tensor, Tensor]:
    # eigenvalues in any order: their sum and sum of squares
    w = F.eigvals(a)
    return F.reduce_sum(w, (0,)), F.reduce_sum(F.mul(w, w), (0,))


def _eigvals_jax(a: Any) -> tuple[Any, Any]:
    w = _lax().linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]
    return _jnp().sum(w), _jnp().sum(w * w)


def _lu_solve_ours(trans: int) -> Any:
    def f(a: Tensor, b: Tensor) -> Tensor:
        packed, _, permutation = F.lu(a)
        return F.lu_solve(packed, permutation, b, trans=trans)

    return f


def _lu_solve_jax(trans: int) -> Any:
    def f(a: Any, b: Any) -> Any:
        packed, pivots, _ = _lax().linalg.lu(a)
        return _jax_modules()[0].scipy.linalg.lu_solve((packed, pivots), b, trans=trans)

    return f


def _invertible(values: list[Any]) -> bool:
    """An integer or bool matrix drawn from the small-integer grid may be singular (inf and NaN
    where the substitution divides by a zero pivot): keep to ones with ``|det| >= 1``."""
    with np.errstate(all="ignore"):
        return bool(abs(np.linalg.det(np.asarray(values[0]).astype(np.complex128))) >= 1)


def _lu_solve_targets(case: Case) -> list[DType]:
    """lax.lu_solve takes ``b`` in the dtype of ``a``'s factors (lu's planned dtype), as JAX's
    lax-level ``_lu_solve`` does, or an integer or bool ``b`` whose float (the one the plan
    converts it to, as ``a``) is the factors'; any other ``b`` is refused."""
    a, b = case.operand_slots
    assert isinstance(a, DType) and isinstance(b, DType)
    (factors,) = plan("lu", [a], case.policy)
    if b is not factors and (b.is_inexact or plan("lu", [b], case.policy)[0] is not factors):
        raise PromotionError(f"{case.spec.name}: b is {b.name}, the factors {factors.name}")
    return [factors, factors]


def specs() -> list[Spec]:
    """The sweep's rows of the linear algebra ops."""
    return [
        Spec("eigh", "eigh", _eigh_ours, _eigh_jax, ("x",), ((3, 3),), ("any",), plan_layout=(0,), gen=_gen_hermitian),
        Spec("cholesky", "cholesky", F.cholesky, lambda a: _lax().linalg.cholesky(a), ("x",), ((3, 3),), ("any",),
             plan_layout=(0,), gen=_gen_spd),
        Spec("triangular_solve", "triangular_solve",
             lambda a, b: F.triangular_solve(a, b, left_side=True, lower=True),
             lambda a, b: _lax().linalg.triangular_solve(a, b, left_side=True, lower=True),
             ("a", "b"), ((3, 3), (3, 2)), ("any", "any"), promoted=(0, 1), plan_layout=(0, 1),
             gen=_gen_triangular),
        Spec("lu", "lu", lambda a: F.lu(a)[0], lambda a: _lax().linalg.lu(a)[0], ("x",), ((3, 3),), ("any",),
             plan_layout=(0,), gen=_gen_square),
        Spec("qr", "qr", lambda a: F.qr(a, full_matrices=False), lambda a: _lax().linalg.qr(a, full_matrices=False),
             ("x",), ((4, 3),), ("any",), plan_layout=(0,), gen=_gen_tall),
        # complete Q of a tall matrix: JAX's rule since 0.8 (arXiv 2409.13374)
        Spec("qr_complete", "qr", lambda a: F.qr(a, full_matrices=True),
             lambda a: _lax().linalg.qr(a, full_matrices=True), ("x",), ((4, 3),), ("any",), plan_layout=(0,),
             gen=_gen_tall),
        Spec("qr_wide", "qr", lambda a: F.qr(a, full_matrices=False),
             lambda a: _lax().linalg.qr(a, full_matrices=False), ("x",), ((3, 4),), ("any",), plan_layout=(0,),
             gen=_gen_wide),
        Spec("geqrf", "geqrf", F.geqrf, _geqrf_jax, ("x",), ((4, 3),), ("any",),
             plan_layout=(0,), gen=_gen_tall, values_only=True),
        Spec("eig_vectors", "eig", _eig_vectors_ours, _eig_vectors_jax, ("x",), ((3, 3),), ("any",),
             plan_layout=(0,), gen=_gen_square),
        Spec("svd", "svd", _svd_ours, _svd_jax, ("x",), ((4, 3),), ("any",), plan_layout=(0,), gen=_gen_tall),
        Spec("eigvals", "eig", _eigvals_ours, _eigvals_jax, ("x",), ((3, 3),), ("any",), plan_layout=(0,),
             gen=_gen_square),
        # functions on lu (jax.numpy.linalg's, which factor with lu as well)
        *(Spec(f"lu_solve_trans{t}", "lu", _lu_solve_ours(t), _lu_solve_jax(t), ("a", "b"), ((3, 3), (3, 2)),
               ("any", "any"), gen=_gen_triangular, targets=_lu_solve_targets, valid=_invertible) for t in (1, 2)),
        Spec("det", "lu", F.det, lambda a: _jnp().linalg.det(a), ("x",), ((4, 4),), ("any",), plan_layout=(0,),
             gen=_gen_square4),
        Spec("slogdet", "lu", F.slogdet, lambda a: tuple(_jnp().linalg.slogdet(a)), ("x",), ((3, 3),), ("any",),
             plan_layout=(0,), gen=_gen_square),
        Spec("inv", "lu", F.inv, lambda a: _jnp().linalg.inv(a), ("x",), ((3, 3),), ("any",), plan_layout=(0,),
             gen=_gen_square),
    ]  # fmt: skip

"""The parity sweep's rows of the linear algebra ops (``runtime.ops`` families ``linalg``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autodiff.parity._common import Slot, Spec, _jnp, _lax, draw
from runtime import dtypes as dt
from runtime import functions as F
from runtime.dtypes import DType
from runtime.tensor import Tensor


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
    ]  # fmt: skip

"""Shape rules of the linear algebra ops (``runtime.core.ops`` families ``linalg``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _INEXACT,
    PARAM_DEFAULTS,
    REAL_DTYPE,
    SHAPE_RULES,
    Aval,
    OpTypeError,
    Shape,
    ShapeError,
    _accept,
    _fail,
    _same_dtype,
    operand_names,
    param,
)

# -- small helpers ----------------------------------------------------------------------------


#: dtypes LAPACK (and so jax.lax.linalg.eigh/cholesky on CPU) works in.
_LAPACK: Final = frozenset({dt.float32, dt.float32r, dt.float64, dt.complex64, dt.complex128})


# -- linear algebra -----------------------------------------------------------------------------


def _square(op: OpDef, avals: Sequence[Aval], i: int) -> Shape:
    shape = avals[i][1]
    if len(shape) < 2 or shape[-1] != shape[-2]:
        name = operand_names(op, len(avals))[i]
        raise _fail(ShapeError, op, avals, f"{name} must be a (batch of) square matrices")
    return shape


def _lapack(op: OpDef, avals: Sequence[Aval]) -> DType:
    dtype = avals[0][0]
    if dtype not in _LAPACK:
        raise _fail(OpTypeError, op, avals, f"x dtype {dtype.short} not accepted (accepts f32, f64, c64, c128)")
    return dtype


def eigh_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.eigh: (eigenvectors like x, eigenvalues of the real dtype, batch + [n])."""
    dtype = _lapack(op, avals)
    shape = _square(op, avals, 0)
    return ((dtype, shape), (REAL_DTYPE.get(dtype, dtype), shape[:-1]))


SHAPE_RULES["eigh"] = eigh_rule


def cholesky_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.cholesky: lower factor shaped like x."""
    dtype = _lapack(op, avals)
    return ((dtype, _square(op, avals, 0)),)


SHAPE_RULES["cholesky"] = cholesky_rule


def triangular_solve_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.triangular_solve: a is [..., m, m]; b is [..., m, n] (left) or [..., n, m] (right)."""
    # The plan leaves linalg operands alone, yet a and b must agree, as in lax.
    dtype = _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 0, _INEXACT)
    a = _square(op, avals, 0)
    b = avals[1][1]
    left = bool(param(op, params, "left_side"))
    if len(b) != len(a) or b[:-2] != a[:-2] or (b[-2] if left else b[-1]) != a[-1]:
        side = "left" if left else "right"
        raise _fail(ShapeError, op, avals, f"b does not match a for a {side}-side solve")
    return ((dtype, b),)


SHAPE_RULES["triangular_solve"] = triangular_solve_rule


# -- factorisations: lu, qr, svd, eig ------------------------------------------------------------

PARAM_DEFAULTS["qr"] = {"full_matrices": True}  # lax.linalg.qr's defaults
PARAM_DEFAULTS["svd"] = {"full_matrices": True, "compute_uv": True}  # lax.linalg.svd's defaults
PARAM_DEFAULTS["eig"] = {
    "compute_left_eigenvectors": True, "compute_right_eigenvectors": True, "enable_eigvec_derivs": False,
}  # fmt: skip


def _matrix(op: OpDef, avals: Sequence[Aval]) -> Shape:
    shape = avals[0][1]
    if len(shape) < 2:
        raise _fail(ShapeError, op, avals, "x must be a (batch of) matrices: rank >= 2")
    return shape


def lu_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.lu of [..., m, n]: (packed L and U like x, pivots int32 [..., min(m, n)],
    permutation int32 [..., m])."""
    dtype = _lapack(op, avals)
    shape = _matrix(op, avals)
    *batch, m, n = shape
    return ((dtype, shape), (dt.int32, (*batch, min(m, n))), (dt.int32, (*batch, m)))


SHAPE_RULES["lu"] = lu_rule


def qr_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.qr of [..., m, n]: q [..., m, m] and r [..., m, n] (full_matrices), else
    q [..., m, k] and r [..., k, n] with k = min(m, n)."""
    dtype = _lapack(op, avals)
    *batch, m, n = _matrix(op, avals)
    k = m if param(op, params, "full_matrices") else min(m, n)
    return ((dtype, (*batch, m, k)), (dtype, (*batch, k, n)))


SHAPE_RULES["qr"] = qr_rule


def svd_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.svd of [..., m, n]: (u, s, vh), or (s,) without compute_uv; s is real,
    [..., min(m, n)], u [..., m, m] and vh [..., n, n] (full_matrices) or [..., m, k] / [..., k, n]."""
    dtype = _lapack(op, avals)
    *batch, m, n = _matrix(op, avals)
    k = min(m, n)
    s = (REAL_DTYPE.get(dtype, dtype), (*batch, k))
    if not param(op, params, "compute_uv"):
        return (s,)
    full = bool(param(op, params, "full_matrices"))
    return ((dtype, (*batch, m, m if full else k)), s, (dtype, (*batch, n if full else k, n)))


SHAPE_RULES["svd"] = svd_rule


#: real dtype -> the complex dtype eig's results take.
_COMPLEX_OF: Final = {dt.float32: dt.complex64, dt.float32r: dt.complex64, dt.float64: dt.complex128}


def eig_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.eig of [..., n, n]: eigenvalues [..., n], then the left and the right
    eigenvectors [..., n, n] where asked for; all complex."""
    dtype = _lapack(op, avals)
    shape = _square(op, avals, 0)
    out = _COMPLEX_OF.get(dtype, dtype)
    vectors = [param(op, params, "compute_left_eigenvectors"), param(op, params, "compute_right_eigenvectors")]
    return ((out, shape[:-1]), *((out, shape) for wanted in vectors if wanted))


SHAPE_RULES["eig"] = eig_rule


def geqrf_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.linalg.geqrf of [..., m, n]: (the packed reflectors and R like x, taus [..., min(m, n)])."""
    dtype = _lapack(op, avals)
    *batch, m, n = _matrix(op, avals)
    return ((dtype, (*batch, m, n)), (dtype, (*batch, min(m, n))))


SHAPE_RULES["geqrf"] = geqrf_rule

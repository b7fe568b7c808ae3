"""JAX's promotion lattice (x64 enabled), standard and strict modes.

Reference: ``jax.numpy.promote_types`` / ``jax.numpy.result_type`` with
``jax_enable_x64``; the strict mode is ``jax_numpy_dtype_promotion='strict'``.
Python ``int``/``float``/``complex`` are the weak nodes ``int``/``float``/
``complex``; a Python ``bool`` is a strong ``bool``.
"""

from __future__ import annotations

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import LatticePolicy

# JAX has neither float32r nor ml_dtypes' complex32/bcomplex32 (it knows int1,
# uint1, int2 and uint2, which sit beside int4/uint4 in its lattice).
_JAX_DTYPES = tuple(d for d in dt.ALL_DTYPES if d is not dt.float32r and d not in dt.SMALL_COMPLEX)
_NARROW_FLOATS = [d for d in dt.ALL_DTYPES if d.kind == "float" and d.bits <= 8]
_INTS = [d for d in _JAX_DTYPES if d.kind in ("int", "uint")]
_FLOATS = [d for d in _JAX_DTYPES if d.kind == "float"]
_COMPLEX = [dt.complex64, dt.complex128]


def _standard_edges() -> dict[DType | str, list[DType | str]]:
    e: dict[DType | str, list[DType | str]] = {
        dt.bool_: ["int"],
        # a weak int adopts any integer type, including the 1/2/4-bit ones
        "int": [dt.uint8, dt.int8, *dt.SUB_BYTE_INTS],
        dt.uint8: [dt.int16, dt.uint16],
        dt.uint16: [dt.int32, dt.uint32],
        dt.uint32: [dt.int64, dt.uint64],
        dt.uint64: ["float"],  # u64 x i64 has no integer home: weak float -> f64
        dt.int8: [dt.int16],
        dt.int16: [dt.int32],
        dt.int32: [dt.int64],
        dt.int64: ["float"],
        # narrow floats sit directly above the weak float and below nothing:
        # they combine only with weak scalars and themselves
        "float": [*_NARROW_FLOATS, dt.bfloat16, dt.float16, "complex"],
        dt.bfloat16: [dt.float32],
        dt.float16: [dt.float32],
        dt.float32: [dt.float64, dt.complex64],
        dt.float64: [dt.complex128],
        "complex": [dt.complex64],
        dt.complex64: [dt.complex128],
        dt.complex128: [],
    }
    for d in (*dt.SUB_BYTE_INTS, *_NARROW_FLOATS):
        e[d] = []
    return e


def _strict_edges() -> dict[DType | str, list[DType | str]]:
    # Only weak scalars move: a weak int joins any int or float, a weak float
    # any float or complex, a weak complex any complex.
    e: dict[DType | str, list[DType | str]] = {d: [] for d in _JAX_DTYPES}
    e["int"] = ["float", *_INTS]
    e["float"] = ["complex", *_FLOATS]
    e["complex"] = list(_COMPLEX)
    return e


class JaxPolicy(LatticePolicy):
    """JAX's standard lattice with weak Python scalars (x64 mode)."""

    name = "jax"
    summary = "jax.numpy promotion with x64 enabled: a lattice with weak Python scalars"
    dtypes = _JAX_DTYPES
    edges = _standard_edges()

    def true_divide_dtype(self, integer: DType) -> DType | None:
        # jnp.true_divide: 64-bit integers divide into float64, narrower ones
        # (and bool) into float32, even with x64 enabled.
        return dt.float64 if integer.bits == 64 else dt.float32

    def explain_failure(self, a: DType, b: DType) -> str:
        reason = super().explain_failure(a, b)
        if reason:
            return reason
        for d in (a, b):
            if d.kind == "float" and d.bits <= 8:
                return f"{d.bits}-bit floats do not support implicit promotion"
            if d in dt.SUB_BYTE_INTS:
                return "1-bit, 2-bit and 4-bit integers do not support implicit promotion"
        return ""


class JaxStrictPolicy(JaxPolicy):
    """JAX with ``jax_numpy_dtype_promotion='strict'``: only weak, same-kind moves."""

    name = "jax-strict"
    summary = "jax.numpy strict mode: different dtypes never mix; weak scalars adopt a same-kind dtype"
    edges = _strict_edges()
    all_weak_joins_dtypes = False  # jax's strict mode joins all-weak operands' weak nodes

    def explain_failure(self, a: DType, b: DType) -> str:
        return LatticePolicy.explain_failure(self, a, b) or "strict mode allows no implicit promotion"

"""NumPy 2 promotion (NEP 50) for NumPy-native dtypes.

Reference: ``numpy.result_type`` in NumPy >= 2. Python scalars are weak: they
take the other operand's dtype unless their kind is higher (int over bool ->
int64; float over integers -> float64; complex over a float -> the complex of
that precision; complex over integers -> complex128). The ml_dtypes formats
(bfloat16, float8 ..., int1/int2/int4 and their unsigned twins, complex32,
bcomplex32) and float32r are not NumPy-native and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import Operand, Policy

_NATIVE = (
    dt.bool_,
    dt.int8, dt.int16, dt.int32, dt.int64,
    dt.uint8, dt.uint16, dt.uint32, dt.uint64,
    dt.float16, dt.float32, dt.float64,
    dt.complex64, dt.complex128,
)  # fmt: skip

_SIGNED = {8: dt.int8, 16: dt.int16, 32: dt.int32, 64: dt.int64}
# The smallest float that holds every value of an integer type (NumPy's casting table).
_INT_TO_FLOAT = {8: dt.float16, 16: dt.float32, 32: dt.float64, 64: dt.float64}
_FLOAT_BITS = {dt.float16: 16, dt.float32: 32, dt.float64: 64, dt.complex64: 32, dt.complex128: 64}
_FLOAT_OF = {16: dt.float16, 32: dt.float32, 64: dt.float64}
_COMPLEX_OF = {16: dt.complex64, 32: dt.complex64, 64: dt.complex128}


def _promote_numpy(a: DType, b: DType) -> DType:
    if a is dt.bool_:
        return b
    if b is dt.bool_:
        return a
    if a.is_integer and b.is_integer:
        if a.kind == b.kind:
            return a if a.bits >= b.bits else b
        unsigned, signed = (a, b) if a.kind == "uint" else (b, a)
        bits = max(2 * unsigned.bits, signed.bits)
        return _SIGNED[bits] if bits <= 64 else dt.float64
    # at least one float/complex: compare precision (an int counts as the
    # smallest float that holds it), then take the higher kind.
    precision = max(_FLOAT_BITS[d] if d.is_inexact else _FLOAT_BITS[_INT_TO_FLOAT[d.bits]] for d in (a, b))
    if "complex" in (a.kind, b.kind):
        return _COMPLEX_OF[precision]
    return _FLOAT_OF[precision]


# NumPy's type numbers. For three or more strong operands NumPy does not fold
# pairwise (promote_types is not associative: (int8, uint8, float16)): its
# PyArray_PromoteDTypeSequence lets the dtype with the highest type number
# (float16 is numbered last) promote every other operand, then joins those
# results, so the answer does not depend on operand order.
_TYPE_NUM = {d: np.dtype(d.storage).num for d in _NATIVE}

_PY_RANK = {"bool": 0, "int": 1, "float": 2, "complex": 3}
_PY_DEFAULT = {"bool": dt.bool_, "int": dt.int64, "float": dt.float64, "complex": dt.complex128}


class NumpyPolicy(Policy):
    """``numpy.result_type`` under NEP 50."""

    name = "numpy"
    summary = "numpy.result_type (NumPy 2, NEP 50): safe-cast lattice, weak Python scalars"
    dtypes = _NATIVE
    negative_int_power = "raise"  # np.power: "Integers to negative integer powers are not allowed."

    def _promote(self, a: DType, b: DType) -> DType | None:
        return _promote_numpy(a, b)

    def _result_type(self, operands: Sequence[Operand]) -> DType:
        strong: DType | None = None
        weak_kind: str | None = None
        strong_dtypes = [op.dtype for op in operands if op.dtype is not None]
        if strong_dtypes:
            main = max(strong_dtypes, key=lambda d: _TYPE_NUM.get(d, -1))
            strong = main
            for d in strong_dtypes:
                strong = self.promote_types(strong, self.promote_types(main, d))
        for op in operands:
            if op.pykind is not None and (weak_kind is None or _PY_RANK[op.pykind] > _PY_RANK[weak_kind]):
                weak_kind = op.pykind
        if weak_kind is None:
            assert strong is not None
            return strong
        if strong is None:
            return _PY_DEFAULT[weak_kind]
        if _PY_RANK[weak_kind] <= strong.category:
            return strong
        if weak_kind == "complex" and strong.kind == "float":
            return dt.complex128 if strong is dt.float64 else dt.complex64
        return _PY_DEFAULT[weak_kind]

"""PyTorch's promotion: the c10 ``promoteTypes`` table plus category rules.

Reference: ``c10/core/ScalarType.cpp`` (``promoteTypes``: the 13 x 13 table
below, transcribed as data, the quantized types left out because castwise has
no such dtypes) and ``aten/src/ATen/native/TypeProperties.cpp``
(``result_type``: dimensioned tensors, 0-d tensors and wrapped Python numbers
form three groups combined by category), as kael's ADR 0003 on type
promotion describes them (docs/promotion.md, Sources). Extra
rules from ``promoteTypes``: the float8 types promote only with themselves;
uint1/uint2/uint4/uint16/uint32/uint64 (c10's "barebones unsigned" types)
promote only with floating types (the float wins). Python ``float`` is the
default float (float32), ``complex`` the default complex (complex64), ``int`` is
int64. complex32 is c10's ComplexHalf (``torch.chalf``), the complex type of
float16; PyTorch has no bcomplex32.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import _STATE, Operand, Policy

# Row/column order of the table, with c10's short names.
_ORDER = ["u1", "i1", "i2", "i4", "i8", "f2", "f4", "f8", "c2", "c4", "c8", "b1", "bf"]
_C10 = {
    "u1": dt.uint8, "i1": dt.int8, "i2": dt.int16, "i4": dt.int32, "i8": dt.int64,
    "f2": dt.float16, "f4": dt.float32, "f8": dt.float64,
    "c2": dt.complex32, "c4": dt.complex64, "c8": dt.complex128, "b1": dt.bool_, "bf": dt.bfloat16,
}  # fmt: skip
# c10 promoteTypes (columns in _ORDER), verbatim cells for the dtypes castwise has.
PROMOTE_TYPES_TABLE = """
u1: u1 i2 i2 i4 i8 f2 f4 f8 c2 c4 c8 u1 bf
i1: i2 i1 i2 i4 i8 f2 f4 f8 c2 c4 c8 i1 bf
i2: i2 i2 i2 i4 i8 f2 f4 f8 c2 c4 c8 i2 bf
i4: i4 i4 i4 i4 i8 f2 f4 f8 c2 c4 c8 i4 bf
i8: i8 i8 i8 i8 i8 f2 f4 f8 c2 c4 c8 i8 bf
f2: f2 f2 f2 f2 f2 f2 f4 f8 c2 c4 c8 f2 f4
f4: f4 f4 f4 f4 f4 f4 f4 f8 c4 c4 c8 f4 f4
f8: f8 f8 f8 f8 f8 f8 f8 f8 c8 c8 c8 f8 f8
c2: c2 c2 c2 c2 c2 c2 c4 c8 c2 c4 c8 c2 c4
c4: c4 c4 c4 c4 c4 c4 c4 c8 c4 c4 c8 c4 c4
c8: c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8
b1: u1 i1 i2 i4 i8 f2 f4 f8 c2 c4 c8 b1 bf
bf: bf bf bf bf bf f4 f4 f8 c4 c4 c8 bf bf
"""


def _parse_table() -> dict[tuple[DType, DType], DType]:
    out: dict[tuple[DType, DType], DType] = {}
    for line in PROMOTE_TYPES_TABLE.strip().splitlines():
        row, cells = line.split(":")
        for col, cell in zip(_ORDER, cells.split(), strict=True):
            out[_C10[row], _C10[col]] = _C10[cell]
    return out


_TABLE = _parse_table()
# c10 isBarebonesUnsignedType: UInt1..UInt7 (castwise has uint1, uint2, uint4) and UInt16/32/64.
_BAREBONES_UNSIGNED = (dt.uint1, dt.uint2, dt.uint4, dt.uint16, dt.uint32, dt.uint64)
# Types torch has (or castwise lets stand for a torch shell type) that only
# promote with themselves: the shell signed types Int1..Int7 and the float8 family.
_SELF_ONLY = (*(d for d in dt.SUB_BYTE_INTS if d.kind == "int"), *dt.SMALL_FLOATS)
_TORCH_DTYPES = (*_C10.values(), *_BAREBONES_UNSIGNED, *_SELF_ONLY)


def _to_complex(d: DType) -> DType:
    # c10 toComplexType: float16 -> complex32 (ComplexHalf), float64 -> complex128;
    # bfloat16 -> complex64 as in torch 2.13.
    if d is dt.float16:
        return dt.complex32
    return dt.complex128 if d is dt.float64 else dt.complex64


class TorchPolicy(Policy):
    """``torch.promote_types`` / ``torch.result_type``."""

    name = "torch"
    summary = "PyTorch: c10 promoteTypes table; scalars and 0-d tensors win only with a higher category"
    dtypes = _TORCH_DTYPES
    #: torch's initial default floating dtype; ``rt.set_default_dtype`` changes it per thread.
    initial_default_float = dt.float32

    def true_divide_dtype(self, integer: DType) -> DType:
        """int / int is the default float in torch (``true_divide_float`` is unused here)."""
        return self.default_float()

    def default_float(self) -> DType:
        """The default floating dtype (``torch.get_default_dtype()``): the one place the torch
        policy decides it: Python floats, float creation functions and integer true division."""
        return _STATE.default_float or self.initial_default_float

    def _promote(self, a: DType, b: DType) -> DType | None:
        if a in _SELF_ONLY or b in _SELF_ONLY:
            return None
        if a in _BAREBONES_UNSIGNED or b in _BAREBONES_UNSIGNED:
            if a.kind == "float":
                return a
            if b.kind == "float":
                return b
            return None
        return _TABLE[a, b]

    def explain_failure(self, a: DType, b: DType) -> str:
        reason = super().explain_failure(a, b)
        if reason:
            return reason
        if a in _SELF_ONLY or b in _SELF_ONLY:
            return "float8 and sub-byte types promote only with themselves"
        return "uint1, uint2, uint4, uint16, uint32 and uint64 promote only with floating types"

    def scalar_default(self, pykind: str, context: DType | None) -> DType:  # type: ignore[override]
        if pykind == "float":
            return self.default_float()
        if pykind == "complex":  # torch's default complex follows the default float
            return _to_complex(self.default_float())
        return dt.int64 if pykind == "int" else dt.bool_

    def _combine(self, higher: DType | None, lower: DType | None) -> DType | None:
        """c10 combine_categories: ``higher`` is the more important group."""
        if higher is None:
            return lower
        if lower is None:
            return higher
        if higher.kind == "complex":
            return higher
        if lower.kind == "complex":
            if higher.kind == "float" and higher in _SELF_ONLY:
                # c10 toComplexType has no complex of a float8 type: torch raises.
                raise self.no_path(higher, lower, "float8 types have no complex counterpart")
            return _to_complex(higher) if higher.kind == "float" else lower
        if higher.kind == "float":
            return higher
        if higher is dt.bool_ or lower.kind == "float":
            return self.promote_types(higher, lower)
        return higher

    def _result_type(self, operands: Sequence[Operand]) -> DType:
        dim: DType | None = None
        zero: DType | None = None
        wrapped: DType | None = None
        for op in operands:
            if op.pykind is not None:
                d = self.scalar_default(op.pykind, None)
                wrapped = d if wrapped is None else self.promote_types(wrapped, d)
            elif op.zero_dim:
                assert op.dtype is not None
                zero = op.dtype if zero is None else self.promote_types(zero, op.dtype)
            else:
                assert op.dtype is not None
                dim = op.dtype if dim is None else self.promote_types(dim, op.dtype)
        result = self._combine(dim, self._combine(zero, wrapped))
        assert result is not None
        return result

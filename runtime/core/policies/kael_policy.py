"""kael's promotion, exactly as kael's ADR 0003 on type promotion decides it.

kael has four dtypes, ranked ``Bool < I64 < F32 < F64`` (castwise's bool,
int64, float32, float64); every other dtype is refused. The ADR's four small
functions are reproduced one by one:

* ``promote_types``: the higher of the two in the full order (the 4x4 table);
* ``dtype_category``: Bool is 0, I64 is 1, F32 and F64 share category 2;
* ``promote_with_scalar``: a Python number's dtype comes from its type
  (``True`` is Bool, ``2`` is I64, ``2.5`` is F32, the default float) and it
  wins only with a higher category than the tensor's;
* ``result_dtype``: tensors with dimensions and 0-d tensors form two groups,
  each joined with ``promote_types``; the 0-d group wins only with a higher
  category. A scalar reaches it as a 0-d tensor of ``promote_with_scalar``'s
  dtype.

The ADR's per-operation overrides (add of Bool + Bool counts in I64, true
division of an integer or Bool result goes to F32, sub / pow / floor_divide
refuse Bool inputs, in-place results must fit the category of ``self``) are
per-op rules of the promotion plan (``runtime.core.plan``), not of this lattice.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import Operand, Policy, PromotionError, PyKind

#: kael's dtypes in the ADR's full order, lowest first.
KAEL_ORDER: tuple[DType, ...] = (dt.bool_, dt.int64, dt.float32, dt.float64)
#: kael's own names for them (its DType enumerators), used in its messages.
KAEL_NAMES: dict[DType, str] = {dt.bool_: "Bool", dt.int64: "I64", dt.float32: "F32", dt.float64: "F64"}
_RANK = {d: i for i, d in enumerate(KAEL_ORDER)}
#: the ADR's Scalar constructors: true is Bool, 2 is I64, 2.5 (and 2.5f) is F32
_SCALAR_DTYPE: dict[str, DType] = {"bool": dt.bool_, "int": dt.int64, "float": dt.float32}


def dtype_category(d: DType) -> int:
    """The ADR's ``dtype_category``: Bool 0, I64 1, F32 and F64 2."""
    return 0 if d is dt.bool_ else (1 if d is dt.int64 else 2)


class KaelPolicy(Policy):
    """kael: ``Bool < I64 < F32 < F64``; scalars and 0-d tensors win only with a higher category."""

    name = "kael"
    summary = "kael (ADR 0003): Bool < I64 < F32 < F64; scalars and 0-d tensors win only with a higher category"
    dtypes = KAEL_ORDER
    true_divide_float = dt.float32  # div_dtype: an integer or Bool result becomes F32

    def _promote(self, a: DType, b: DType) -> DType | None:
        return a if _RANK[a] >= _RANK[b] else b

    def explain_failure(self, a: DType, b: DType) -> str:
        for d in (a, b):
            if d not in _RANK:
                return unknown_dtype_text(d)
        return ""

    def scalar_default(self, pykind: PyKind, context: DType | None) -> DType:
        try:
            return _SCALAR_DTYPE[pykind]
        except KeyError:
            raise PromotionError(
                f"kael has no complex dtype: a Python {pykind} cannot become a Scalar "
                f"(kael's dtypes are Bool, I64, F32, F64; policy {self.name!r})"
            ) from None

    def promote_with_scalar(self, tensor_dtype: DType, pykind: PyKind) -> DType:
        """The ADR's ``promote_with_scalar``: the scalar's dtype wins only with a higher category."""
        scalar = self.scalar_default(pykind, None)
        return tensor_dtype if dtype_category(scalar) <= dtype_category(tensor_dtype) else scalar

    def _result_type(self, operands: Sequence[Operand]) -> DType:
        # The tensors first: scalars are materialised against them (resolve_operands).
        dimensioned: DType | None = None
        zero_dimensional: DType | None = None
        for op in operands:
            if op.pykind is None:
                assert op.dtype is not None
                self._check_known(op.dtype)
                if op.zero_dim:
                    zero_dimensional = self._join(zero_dimensional, op.dtype)
                else:
                    dimensioned = self._join(dimensioned, op.dtype)
        tensors = self._combine(dimensioned, zero_dimensional)
        for op in operands:
            if op.pykind is not None:
                scalar = self.scalar_default(op.pykind, None)
                as_zero_d = scalar if tensors is None else self.promote_with_scalar(tensors, op.pykind)
                zero_dimensional = self._join(zero_dimensional, as_zero_d)
        result = self._combine(dimensioned, zero_dimensional)
        assert result is not None
        return result

    def _join(self, group: DType | None, d: DType) -> DType:
        return d if group is None else self.promote_types(group, d)

    @staticmethod
    def _combine(dimensioned: DType | None, zero_dimensional: DType | None) -> DType | None:
        """The ADR's ``result_dtype``: the 0-d group wins only with a higher category."""
        if dimensioned is None or zero_dimensional is None:
            return dimensioned if dimensioned is not None else zero_dimensional
        if dtype_category(zero_dimensional) > dtype_category(dimensioned):
            return zero_dimensional
        return dimensioned

    def _check_known(self, d: DType) -> None:
        if d not in _RANK:
            raise self.no_path(d, d, unknown_dtype_text(d))


def unknown_dtype_text(d: DType) -> str:
    """kael's refusal of a dtype it does not have."""
    return f"kael has no dtype {d.name}: its dtypes are Bool, I64, F32 and F64"

"""The two small policies: ``tenferro`` and ``strict``."""

from __future__ import annotations

from typing import ClassVar

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import LatticePolicy, Policy


class TenferroPolicy(LatticePolicy):
    """tenferro's seven-dtype policy.

    bool < int32 < int64; any int with any float -> float64; any int with complex
    -> complex128; float32 with complex64 -> complex64; float64 with complex64 ->
    complex128. bool sits below every other type (bool with float32 is float32).
    """

    name = "tenferro"
    summary = "tenferro: seven dtypes; int with float -> f64, int with complex -> c128"
    dtypes = (dt.bool_, dt.int32, dt.int64, dt.float32, dt.float64, dt.complex64, dt.complex128)
    edges: ClassVar[dict[DType | str, list[DType | str]]] = {
        dt.bool_: [dt.int32, dt.float32],
        dt.int32: [dt.int64],
        dt.int64: [dt.float64],
        dt.float32: [dt.float64, dt.complex64],
        dt.float64: [dt.complex128],
        dt.complex64: [dt.complex128],
        dt.complex128: [],
    }

    def _result_type(self, operands):  # type: ignore[no-untyped-def]
        # Python scalars follow the category rule of the base policy, not weak nodes.
        return Policy._result_type(self, operands)


class StrictPolicy(Policy):
    """No implicit promotion: two different dtypes always raise.

    A Python scalar adopts the tensor's dtype when its kind is not higher
    (``f32 * 2`` is fine, ``i32 * 2.5`` raises).
    """

    name = "strict"
    summary = "no implicit promotion: any two different dtypes raise"
    true_divide_float = None

    def _promote(self, a: DType, b: DType) -> DType | None:
        return None

    def explain_failure(self, a: DType, b: DType) -> str:
        return "policy 'strict' allows no implicit promotion"

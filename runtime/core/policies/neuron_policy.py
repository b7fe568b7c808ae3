"""The Neuron compiler's ``promote_type`` lattice (neuronx-cc penguin/dtypes).

Reference: the Neuron promotion lattice (docs/promotion.md, Sources). A hand-written
decision tree, not a table:

* regime split on "is floating" (the Neuron custom floats count as floats):
  both float -> float rule; exactly one float -> the float side wins, with no
  widening; neither -> both must be integers, else ``unexpected dtype: ...``;
* float rule: the float8_e8m0fnu guard, then wider itemsize wins, then on equal
  itemsize the eight-rung ladder
  f64 > f32r > f32 > bf16 > f16 > f8e4m3 > f8e4m3fn > f8e5m2;
  equal-itemsize floats that are both off the ladder have no path;
* int rule: same signedness -> wider itemsize wins; mixed signedness -> the
  smallest signed type that holds both among int16/int32 (or the signed operand
  itself when it is already wide enough), escaping to float32 when none can.

Choices where the reference is open are documented in docs/promotion.md:
e8m0fnu mixes with no other float; a mixed-sign pair needing a 64-bit signed
type that neither operand is escapes to float32; Neuron has no complex dtypes,
so complex is refused; Python scalars take int32/float32 when they decide the
result.
"""

from __future__ import annotations

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import Policy, PromotionError

FLOAT_LADDER: tuple[DType, ...] = (
    dt.float64,
    dt.float32r,
    dt.float32,
    dt.bfloat16,
    dt.float16,
    dt.float8_e4m3,
    dt.float8_e4m3fn,
    dt.float8_e5m2,
)
_RANK = {d: i for i, d in enumerate(FLOAT_LADDER)}
# NumPy's issubdtype(_, np.integer) is false for ml_dtypes' int4/uint4 and for
# bool, so those reach the "unexpected dtype" raise when mixed with an integer.
_NP_INTEGERS = tuple(d for d in dt.ALL_DTYPES if d.kind in ("int", "uint") and d not in dt.SUB_BYTE_INTS)
_NEURON_DTYPES = tuple(d for d in dt.ALL_DTYPES if d.kind != "complex")


class NeuronPolicy(Policy):
    """neuronx-cc ``promote_type``."""

    name = "neuron"
    summary = "neuronx-cc promote_type: wider itemsize wins, FP8 precedence ladder, float side wins"
    dtypes = _NEURON_DTYPES
    true_divide_float = dt.float32

    no_path_text = "No available implicit dtype promotion path"  # the compiler's error text

    def explain_failure(self, a: DType, b: DType) -> str:
        if a not in self._known or b not in self._known:
            bad = a if a not in self._known else b
            return f"unexpected dtype: {bad.name} (Neuron has no complex dtypes)"
        if a.kind != "float" and b.kind != "float":
            bad = a if a not in _NP_INTEGERS else b
            return f"unexpected dtype: {bad.name}"
        if dt.float8_e8m0fnu in (a, b):
            return "float8_e8m0fnu is a block-scale exponent, not a value type"
        return "equal itemsize and neither operand is on the float precedence ladder"

    def _promote(self, a: DType, b: DType) -> DType | None:
        a_float, b_float = a.kind == "float", b.kind == "float"
        if a_float and b_float:
            return _promote_floats(a, b)
        if a_float != b_float:
            return a if a_float else b  # float side wins, no widening
        if a in _NP_INTEGERS and b in _NP_INTEGERS:
            return _promote_ints(a, b)
        return None

    def scalar_default(self, pykind: str, context: DType | None) -> DType:  # type: ignore[override]
        if pykind == "complex":
            raise PromotionError(
                "No available implicit dtype promotion path for a Python complex scalar "
                "under policy 'neuron': Neuron has no complex dtypes"
            )
        return {"bool": dt.bool_, "int": dt.int32, "float": dt.float32}[pykind]


def _promote_floats(a: DType, b: DType) -> DType | None:
    if dt.float8_e8m0fnu in (a, b):
        return None  # a scale exponent is never a widen target (a != b here)
    if a.itemsize != b.itemsize:
        return a if a.itemsize > b.itemsize else b
    ranked = [d for d in (a, b) if d in _RANK]
    if not ranked:
        return None
    return min(ranked, key=_RANK.__getitem__)


def _promote_ints(a: DType, b: DType) -> DType:
    if (a.kind == "uint") == (b.kind == "uint"):
        return a if a.itemsize >= b.itemsize else b
    unsigned, signed = (a, b) if a.kind == "uint" else (b, a)
    needed_bits = max(2 * unsigned.bits, signed.bits)
    if needed_bits <= signed.bits:
        return signed
    if needed_bits == 16:
        return dt.int16
    if needed_bits == 32:
        return dt.int32
    return dt.float32  # no int16/int32 holds both: the float32 escape

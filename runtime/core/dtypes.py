"""The dtype catalog: castwise's own ``DType`` objects and ``dtype()`` lookup.

castwise keeps its own dtype objects instead of raw ``numpy.dtype`` values
because some dtypes have no NumPy type of their own (``float32r`` is stored as
float32) and the promotion policies need kind, width and short names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

import ml_dtypes
import numpy as np

from runtime.core.errors import OpTypeError, did_you_mean

Kind = Literal["bool", "int", "uint", "float", "complex"]

#: Order of kinds, lowest first; used for category rules (bool < int < float < complex).
KIND_CATEGORY: Final[dict[str, int]] = {"bool": 0, "uint": 1, "int": 1, "float": 2, "complex": 3}


class DType:
    """One element type of the catalog.

    Instances are singletons created by this module: compare them with ``is``, and
    use them as dictionary keys (hashing is by identity). ``==`` is identity between
    two ``DType`` objects, and, as for ``np.dtype`` and JAX's dtypes, a ``DType``
    also equals the NumPy dtype, scalar type and name it stands for
    (``float32 == np.float32 == np.dtype("float32") == "float32"``; ``bfloat16 ==
    ml_dtypes.bfloat16``). ``float32r``, which has no NumPy type of its own, equals the
    float32 NumPy stores it as (``np.float32``, ``"float32"``: NumPy decides
    ``np.dtype("float32") == float32r`` so through ``.dtype``, and castwise agrees), though
    not castwise's ``float32``. ``.dtype`` is the NumPy (storage) dtype, which is how
    NumPy accepts a ``DType`` wherever it takes a dtype (``np.zeros(3, rt.int4)``).
    """

    __slots__ = ("bits", "category", "index", "is_inexact", "itemsize", "kind", "name", "short", "storage")

    name: str
    short: str
    kind: Kind
    bits: int
    storage: np.dtype[Any]
    itemsize: int
    category: int
    index: int
    #: True for floating and complex dtypes (the ones that carry tangents); a plain
    #: attribute, since the recorder asks it for every tracked op
    is_inexact: bool

    if TYPE_CHECKING:  # attached by runtime/core/executor.py (the catalog computes nothing)

        def __call__(self, x: Any) -> Any:
            """``x`` as a Tensor of this dtype, as ``jnp.float32(3.0)``."""

    def __init__(self, name: str, short: str, kind: Kind, bits: int, storage: Any) -> None:
        self.name = name
        self.short = short
        self.kind = kind
        self.bits = bits
        self.storage = np.dtype(storage)
        self.itemsize = self.storage.itemsize
        self.category = KIND_CATEGORY[kind]
        self.index = len(_CATALOG)
        self.is_inexact = kind in ("float", "complex")
        _CATALOG.append(self)

    @property
    def is_integer(self) -> bool:
        """True for signed and unsigned integer dtypes (bool excluded)."""
        return self.kind in ("int", "uint")

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype that stores this dtype (``np.dtype(d)``, ``arr.astype(d)`` and every
        ``dtype=`` of NumPy read this attribute); float32r's is float32."""
        return self.storage

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if type(other) is DType:  # singletons: two DType objects are equal only when identical
            return False
        return _equals_foreign(self, other)

    # Identity hashing (the executor's plan cache and every dtype table key on DType objects).
    # Python asks ``a == b`` to imply ``hash(a) == hash(b)`` among keys of one dict; two DTypes are
    # equal only when identical, so that holds. Like ``np.dtype`` (``np.dtype("f4") == "f4"`` yet
    # their hashes differ), the equality with a NumPy dtype, type or name does not extend to hashing.
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"castwise.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        # Pickle as the module attribute so unpickling yields the singleton
        # (``bool`` is spelled ``bool_`` in this module).
        return "bool_" if self.name == "bool" else self.name


_CATALOG: list[DType] = []

bool_ = DType("bool", "bool", "bool", 8, np.bool_)
int1 = DType("int1", "i1", "int", 1, ml_dtypes.int1)
int2 = DType("int2", "i2", "int", 2, ml_dtypes.int2)
int4 = DType("int4", "i4", "int", 4, ml_dtypes.int4)
int8 = DType("int8", "i8", "int", 8, np.int8)
int16 = DType("int16", "i16", "int", 16, np.int16)
int32 = DType("int32", "i32", "int", 32, np.int32)
int64 = DType("int64", "i64", "int", 64, np.int64)
uint1 = DType("uint1", "u1", "uint", 1, ml_dtypes.uint1)
uint2 = DType("uint2", "u2", "uint", 2, ml_dtypes.uint2)
uint4 = DType("uint4", "u4", "uint", 4, ml_dtypes.uint4)
uint8 = DType("uint8", "u8", "uint", 8, np.uint8)
uint16 = DType("uint16", "u16", "uint", 16, np.uint16)
uint32 = DType("uint32", "u32", "uint", 32, np.uint32)
uint64 = DType("uint64", "u64", "uint", 64, np.uint64)
float4_e2m1fn = DType("float4_e2m1fn", "f4e2m1fn", "float", 4, ml_dtypes.float4_e2m1fn)
float6_e2m3fn = DType("float6_e2m3fn", "f6e2m3fn", "float", 6, ml_dtypes.float6_e2m3fn)
float6_e3m2fn = DType("float6_e3m2fn", "f6e3m2fn", "float", 6, ml_dtypes.float6_e3m2fn)
float8_e3m4 = DType("float8_e3m4", "f8e3m4", "float", 8, ml_dtypes.float8_e3m4)
float8_e4m3 = DType("float8_e4m3", "f8e4m3", "float", 8, ml_dtypes.float8_e4m3)
float8_e4m3fn = DType("float8_e4m3fn", "f8e4m3fn", "float", 8, ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = DType("float8_e4m3fnuz", "f8e4m3fnuz", "float", 8, ml_dtypes.float8_e4m3fnuz)
float8_e4m3b11fnuz = DType("float8_e4m3b11fnuz", "f8e4m3b11fnuz", "float", 8, ml_dtypes.float8_e4m3b11fnuz)
float8_e5m2 = DType("float8_e5m2", "f8e5m2", "float", 8, ml_dtypes.float8_e5m2)
float8_e5m2fnuz = DType("float8_e5m2fnuz", "f8e5m2fnuz", "float", 8, ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = DType("float8_e8m0fnu", "f8e8m0fnu", "float", 8, ml_dtypes.float8_e8m0fnu)
bfloat16 = DType("bfloat16", "bf16", "float", 16, ml_dtypes.bfloat16)
float16 = DType("float16", "f16", "float", 16, np.float16)
float32 = DType("float32", "f32", "float", 32, np.float32)
# Neuron's float32r ("round" float32 for the PE array) has no NumPy type: it is
# stored as float32 and differs from float32 only in how policies rank it.
float32r = DType("float32r", "f32r", "float", 32, np.float32)
float64 = DType("float64", "f64", "float", 64, np.float64)
# ml_dtypes' half-precision complex types: two float16 (PyTorch's complex32,
# torch.chalf) or two bfloat16 parts. JAX has neither.
complex32 = DType("complex32", "c32", "complex", 32, ml_dtypes.complex32)
bcomplex32 = DType("bcomplex32", "bc32", "complex", 32, ml_dtypes.bcomplex32)
complex64 = DType("complex64", "c64", "complex", 64, np.complex64)
complex128 = DType("complex128", "c128", "complex", 128, np.complex128)

#: Every dtype of the catalog, in a stable order (bool, ints, uints, small floats,
#: bf16 .. f64, complex).
ALL_DTYPES: Final[tuple[DType, ...]] = tuple(_CATALOG)

#: The narrow formats (under 16 bits of float, or 1/2/4-bit ints) that JAX keeps out
#: of implicit promotion.
SUB_BYTE_INTS: Final[tuple[DType, ...]] = tuple(d for d in ALL_DTYPES if d.is_integer and d.bits < 8)
SMALL_FLOATS: Final[tuple[DType, ...]] = tuple(d for d in ALL_DTYPES if d.kind == "float" and d.bits <= 8)
#: The complex types with half-precision parts (complex32: float16, bcomplex32: bfloat16).
SMALL_COMPLEX: Final[tuple[DType, ...]] = (complex32, bcomplex32)
#: complex -> the dtype of its real and imaginary parts.
COMPLEX_PART: Final[dict[DType, DType]] = {
    complex32: float16,
    bcomplex32: bfloat16,
    complex64: float32,
    complex128: float64,
}

_BY_NAME: dict[str, DType] = {}
for _d in ALL_DTYPES:
    _BY_NAME[_d.name] = _d
    _BY_NAME[_d.short] = _d
_BY_NAME["bool_"] = bool_

# NumPy storage dtype -> DType. float32r shares float32's storage; a NumPy float32
# always means float32.
_BY_STORAGE: dict[np.dtype[Any], DType] = {}
for _d in ALL_DTYPES:
    _BY_STORAGE.setdefault(_d.storage, _d)


def dtype(x: Any) -> DType:
    """Return the catalog ``DType`` for ``x``.

    Accepts a ``DType``, a name or short name (``"float32"``, ``"f32"``), a NumPy
    dtype or scalar type (``np.float32``), an ml_dtypes type, a JAX dtype or
    Python's ``bool``/``int``/``float``/``complex`` types. Anything else raises
    ``OpTypeError("unexpected dtype: ...")`` (a ``TypeError``), with the near names
    for a misspelt one; ``runtime.dtype`` adds its name and the active policy.
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        found = _BY_NAME.get(x)
        if found is None:
            raise _unexpected(x)
        return found
    if x is None or isinstance(x, (bool, int, float, complex)):
        # np.dtype(None) is float64 and np.dtype(3) fails oddly: refuse clearly.
        raise _unexpected(x)
    try:
        np_dtype = np.dtype(x)
    except (TypeError, ValueError):
        raise _unexpected(x) from None
    found = _BY_STORAGE.get(np_dtype)
    if found is None:
        raise _unexpected(x)
    return found


def _unexpected(x: Any) -> OpTypeError:
    """The error for what names no castwise dtype: a misspelt name gets the near names."""
    hint = did_you_mean(x, _BY_NAME) if isinstance(x, str) and x else ""
    return OpTypeError(f"unexpected dtype: {x!r}" + (f" ({hint})" if hint else " (runtime.ALL_DTYPES lists them)"))


def _equals_foreign(d: DType, other: object) -> bool:
    """``d == other`` for an ``other`` that is not a DType: a castwise name of ``d`` (long or
    short), or a NumPy dtype, type or dtype string equal to ``d``'s NumPy storage dtype."""
    if isinstance(other, str):
        if _BY_NAME.get(other) is d:
            return True
    elif other is None or isinstance(other, (int, float, complex)):
        return False  # np.dtype(None) is float64, and a number is no dtype
    try:
        return bool(np.dtype(other) == d.storage)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False


def from_numpy(np_dtype: np.dtype[Any]) -> DType:
    """Fast path of ``dtype()`` for a NumPy dtype (used on every eager op)."""
    found = _BY_STORAGE.get(np_dtype)
    if found is None:
        raise _unexpected(np_dtype)
    return found

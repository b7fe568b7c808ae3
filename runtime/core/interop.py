"""Exchange with NumPy, JAX and PyTorch: the CPU device, DLPack export and import, ``__jax_array__``.

castwise's storage is NumPy memory, so exchange is NumPy's own DLPack machinery, with two
additions:

- **The trust rule** (docs/tensor.md, "NumPy views"): memory handed out is read-only to the
  receiver, so no write can bypass castwise's version counters. DLPack 1.0 and later carry a
  read-only flag: a consumer that asks for such a capsule (``max_version >= (1, 0)``) gets the
  tensor's own memory, zero-copy, marked read-only. The legacy format (a consumer that names no
  ``max_version``, as JAX's ``from_dlpack`` does) cannot say read-only, so such a consumer gets a
  copy of its own (``copy=False`` then raises ``BufferError``). Memory castwise imports
  (``from_dlpack``) is shared and never written by castwise: the Tensor is read-only
  (``x.copy()`` is a writable one), as a JAX array's buffer must stay immutable.
- **The dtypes NumPy cannot exchange** (bfloat16, the float8 family, complex32): DLPack 1.1 has
  type codes for them (JAX and PyTorch use them), NumPy's exporter and importer do not. castwise
  exchanges their bits as unsigned integers of the same width and writes / reads the proper
  type code in the capsule's ``DLDataType``. Sub-byte types (int1/2/4, uint1/2/4, float4, float6)
  are stored one element per byte, which DLPack's packed sub-byte layout does not describe, and
  bcomplex32 has no type code: both are refused with ``BufferError``.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import get_policy
from runtime.core.shapes import OpTypeError

if TYPE_CHECKING:
    from runtime.core.tensor import Tensor

#: DLPack's device type for host memory (``kDLCPU``)
KDLCPU = 1


class Device:
    """The device a tensor lives on. castwise computes on the host CPU only, so there is one,
    ``rt.cpu`` (``x.device``); it compares equal only to itself."""

    __slots__ = ("id", "platform")

    def __init__(self, platform: str, id: int) -> None:  # noqa: A002
        self.platform = platform
        self.id = id

    def __repr__(self) -> str:
        return f"castwise.Device({self.platform!r}, id={self.id})"

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDLCPU, self.id)


CPU = Device("cpu", 0)

# DLPack 1.1's DLDataTypeCode values for the types NumPy's DLPack does not handle (JAX's and
# PyTorch's codes for them; NumPy's own types keep NumPy's codes).
_KDL_COMPLEX = 5
_EXTRA_CODES: dict[DType, int] = {
    dt.bfloat16: 4,
    dt.complex32: _KDL_COMPLEX,
    dt.float8_e3m4: 7,
    dt.float8_e4m3: 8,
    dt.float8_e4m3b11fnuz: 9,
    dt.float8_e4m3fn: 10,
    dt.float8_e4m3fnuz: 11,
    dt.float8_e5m2: 12,
    dt.float8_e5m2fnuz: 13,
    dt.float8_e8m0fnu: 14,
}
_BY_CODE: dict[tuple[int, int], DType] = {(code, d.bits): d for d, code in _EXTRA_CODES.items()}
_KDL_UINT = 1
#: the dtypes NumPy's own DLPack exporter takes
_NUMPY_EXCHANGED = frozenset(
    np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)
)  # fmt: skip

# Offsets of ``DLDataType`` (uint8 code, uint8 bits, uint16 lanes) in the two capsule layouts:
# DLManagedTensor starts with its DLTensor (data 8, device 8, ndim 4, then dtype); the versioned
# one has version (8), manager_ctx (8), deleter (8) and flags (8) before its DLTensor.
_DTYPE_OFFSET = {b"dltensor": 20, b"dltensor_versioned": 52}
_FLAGS_OFFSET = 24  # DLManagedTensorVersioned.flags
_FLAG_READ_ONLY = 1

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _capsule_dtype_address(capsule: Any) -> tuple[int, bytes]:
    """The address of the capsule's ``DLDataType`` and the capsule's name."""
    for name, offset in _DTYPE_OFFSET.items():
        if _is_valid(capsule, name):
            return int(_get_pointer(capsule, name)) + offset, name
    raise BufferError("from_dlpack: the producer's __dlpack__ returned no unconsumed DLPack capsule")


def _describe(t: Tensor) -> str:
    return f"{t.dtype.name}{list(t.shape)}"


def _exchange_view(t: Tensor, fn: str) -> tuple[np.ndarray, int | None]:
    """The storage as NumPy's DLPack can export it, and the type code to write over its
    unsigned-integer one (None: NumPy's own code is right)."""
    d = t.dtype
    if d in _EXTRA_CODES:
        return t._array.view(np.dtype(f"u{d.itemsize}")), _EXTRA_CODES[d]
    if d.bits < 8 or d is dt.bcomplex32:
        raise BufferError(
            f"{fn}: a {_describe(t)} tensor has no DLPack form: "
            + (
                "bcomplex32 has no DLPack type code"
                if d is dt.bcomplex32
                else f"castwise stores {d.name} one element per byte, and DLPack packs sub-byte types"
            )
            + f"; convert it first (x.astype(...)) or use np.asarray(x) [policy {get_policy()!r}]"
        )
    return t._array, None


def dlpack(
    self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None, copy: bool | None = None,
) -> Any:  # fmt: skip
    """``Tensor.__dlpack__``: a DLPack capsule of the tensor's memory.

    ``max_version >= (1, 0)``: the memory itself, zero-copy and flagged read-only (unless
    ``copy=True``). A legacy consumer (no ``max_version``) gets a copy, since the legacy format
    cannot mark memory read-only; with ``copy=False`` that raises ``BufferError``.
    """
    fn = "__dlpack__"
    if dl_device is not None and tuple(dl_device) != (KDLCPU, 0):
        raise BufferError(f"{fn}: castwise tensors live on the CPU (DLPack device (1, 0)), not {dl_device}")
    del stream  # host memory: there is no stream to synchronise with
    array, code = _exchange_view(self, fn)
    versioned = max_version is not None and tuple(max_version) >= (1, 0)
    if copy is False and not versioned:
        raise BufferError(
            f"{fn}: copy=False for a {_describe(self)} tensor, but a legacy (pre-1.0) DLPack capsule cannot "
            "mark castwise's memory read-only; ask with max_version=(1, 0) or allow a copy"
        )
    if copy or not versioned:
        array = array.copy()  # the consumer's own memory
    else:
        array = array.view()
        array.flags.writeable = False
    capsule = array.__dlpack__(max_version=max_version) if versioned else array.__dlpack__()
    if code is not None:
        address, _ = _capsule_dtype_address(capsule)
        ctypes.c_uint8.from_address(address).value = code
    return capsule


def dlpack_device(self: Tensor) -> tuple[int, int]:
    """``Tensor.__dlpack_device__``: ``(kDLCPU, 0)``."""
    return (KDLCPU, 0)


class _Relabelled:
    """A producer seen through NumPy's importer: its capsules' castwise-only type codes are
    rewritten to unsigned integers of the same width (the bits are the same), and ``dtype``
    records what they were, so ``from_dlpack`` can view NumPy's result as that dtype."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.dtype: DType | None = None
        self.read_only = False

    def __dlpack_device__(self) -> Any:
        return self.source.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule = self.source.__dlpack__(**kwargs)
        address, name = _capsule_dtype_address(capsule)
        code, bits = ctypes.c_uint8.from_address(address).value, ctypes.c_uint8.from_address(address + 1).value
        found = _BY_CODE.get((code, bits))
        if found is not None:
            self.dtype = found
            ctypes.c_uint8.from_address(address).value = _KDL_UINT
        if name == b"dltensor_versioned":
            flags = ctypes.c_uint64.from_address(int(_get_pointer(capsule, name)) + _FLAGS_OFFSET).value
            self.read_only = bool(flags & _FLAG_READ_ONLY)
        return capsule


def from_dlpack(x: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A Tensor of ``x``'s memory, through DLPack (NumPy, JAX and PyTorch arrays, any object with
    ``__dlpack__`` on the CPU), as ``np.from_dlpack``: zero-copy where the producer allows it.

    The Tensor keeps the producer's dtype (bfloat16, float8 ... included) and is read-only:
    castwise never writes memory another library owns (JAX's buffers are immutable); ``copy=True``
    gives a writable Tensor of its own memory.
    """
    from runtime.core.tensor import Tensor

    fn = "from_dlpack"
    if isinstance(x, Tensor):
        return x.copy() if copy else x
    if device is not None and device is not CPU and device != "cpu":
        raise BufferError(f"{fn}: castwise tensors live on the CPU, not on {device!r}")
    if not hasattr(x, "__dlpack__"):
        raise OpTypeError(
            f"{fn}: a {type(x).__name__} has no __dlpack__; use rt.asarray for array-like data"
            f" [policy {get_policy()!r}]"
        )
    if isinstance(x, np.ndarray) and x.dtype not in _NUMPY_EXCHANGED:
        # an ml_dtypes array (bfloat16, float8 ...): NumPy's exporter refuses its dtype, so its
        # bits travel as unsigned integers and are viewed back
        d = dt.from_numpy(x.dtype)
        if d not in _EXTRA_CODES:
            raise BufferError(f"{fn}: a NumPy array of {x.dtype} has no DLPack form; use rt.asarray(x)")
        inner = from_dlpack(x.view(np.dtype(f"u{d.itemsize}")), device=device, copy=copy)
        return Tensor(inner._array.view(d.storage), d)
    source = _Relabelled(x)
    try:
        array = np.from_dlpack(source, copy=copy)
    except (BufferError, TypeError, ValueError, RuntimeError) as err:
        raise BufferError(f"{fn}: cannot import a {type(x).__name__} through DLPack: {err}") from None
    if source.dtype is not None:
        array = array.view(source.dtype.storage)
    if type(array) is not np.ndarray:  # pragma: no cover - np.from_dlpack gives base ndarrays
        array = np.asarray(array)
    if not copy and array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return Tensor(array, source.dtype or dt.from_numpy(array.dtype))


def jax_array(self: Tensor) -> Any:
    """``Tensor.__jax_array__``: the values as a ``jax.Array`` (``jnp.asarray(t)``, ``jnp.sin(t)``),
    from the read-only NumPy view ``np.asarray(t)`` gives (JAX may alias it; it never writes)."""
    import jax.numpy as jnp  # only a caller that already uses JAX reaches this

    return jnp.asarray(self.__array__())


_JAX_REGISTERED = False


def register_with_jax() -> None:
    """Let JAX's jitted functions take castwise tensors: ``jnp.sin(t)``, ``jax.jit(f)(t)``.

    JAX's transforms (and every jitted ``jax.numpy`` function) refuse ``__jax_array__`` objects
    ("Triggering __jax_array__() during abstractification is no longer supported"); what they
    accept is a pytree. This registers ``Tensor`` as a JAX pytree node whose one leaf is its
    read-only NumPy view (unflattened from NumPy data: a Tensor again; from JAX values: those
    values), so JAX computes on the values. castwise never imports JAX by itself, so this is a
    call the user makes once, after which ``jax.tree_util`` sees a Tensor as its values.
    Idempotent.
    """
    global _JAX_REGISTERED
    if _JAX_REGISTERED:
        return
    import jax

    from runtime.core.tensor import Tensor

    def flatten(t: Tensor) -> tuple[tuple[np.ndarray], DType]:
        return (t.__array__(),), t.dtype

    def unflatten(dtype: DType, children: Any) -> Any:
        (leaf,) = children
        return Tensor(leaf, dtype) if isinstance(leaf, np.ndarray) else leaf

    jax.tree_util.register_pytree_node(Tensor, flatten, unflatten)
    _JAX_REGISTERED = True

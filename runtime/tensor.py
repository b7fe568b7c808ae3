"""The eager ``Tensor`` and the executor every op goes through.

``apply(op, operands, params)`` is eager execution: classify the operands, ask
``plan`` for each operand's dtype, convert (inside NumPy's loop where it can),
run the same-dtype kernel, wrap the outputs, and tell the recorder (if one is
installed and an input is tracked). Every ``runtime`` op function and every
``Tensor`` operator ends here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from runtime import chunked, hooks, kernels, memory, ops, shapes
from runtime import dtypes as dt
from runtime.dtypes import DType
from runtime.ops import OpDef
from runtime.plan import PlanInput, plan
from runtime.promotion import _STATE as _policy_state
from runtime.promotion import PLAN_CACHES, Operand, PromotionError, get_policy, get_policy_object
from runtime.shapes import ArityError, KernelDTypeError, OpTypeError, ShapeError

Scalar = bool | int | float | complex
_PY_SCALARS = (bool, int, float, complex)
_PY_KIND = {bool: "bool", int: "int", float: "float", complex: "complex"}


class Tensor:
    """An n-dimensional array with a castwise ``DType``.

    Wraps a NumPy array in the dtype's storage type (ml_dtypes for bfloat16, the
    float8 family, int4 ...). ``float32r`` tensors are stored as float32 but keep
    their own dtype. Python operators follow the active promotion policy.
    """

    __slots__ = ("__weakref__", "_array", "_const", "_requires_grad", "dtype", "grad", "node")
    __array_ufunc__ = None  # make NumPy defer to our reflected operators
    __array_priority__ = 1000

    _array: np.ndarray
    dtype: DType

    def __init__(self, array: np.ndarray, dtype: DType | None = None) -> None:
        self._array = array
        self.dtype = dtype if dtype is not None else dt.from_numpy(array.dtype)
        self._requires_grad = False
        #: the constant leaf recordings use for this (untracked) tensor, shared by all of them
        self._const: Any = None
        #: the graph value of a tracked tensor (set by the recorder / tracer)
        self.node: Any = None
        #: accumulated gradient (autodiff owns it)
        self.grad: Tensor | None = None

    # -- properties ---------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        return int(self._array.size)

    @property
    def _version(self) -> int:
        """How many in-place writes castwise made into this tensor's memory, through it or any
        Tensor sharing that memory (views, ``detach()``, ``asarray`` of the same array), as
        PyTorch's ``Tensor._version``. Recordings check it (``runtime.versions``)."""
        from runtime.versions import version

        return version(self._array)

    @property
    def requires_grad(self) -> bool:
        """True for tracked tensors: leaves marked by the user and recorded results."""
        return self._requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Mark this tensor as a tracked leaf (in place; returns ``self``)."""
        if requires_grad and not self.dtype.is_inexact:
            raise TypeError(f"only floating and complex tensors can require gradients; this one is {self.dtype.name}")
        if self.node is not None and not self.node.is_leaf:
            raise RuntimeError("requires_grad_() on a recorded result: use detach() to start a new leaf")
        from runtime.graph import new_leaf

        if requires_grad:
            new_leaf(self)
        else:
            self._requires_grad = False
            self.node = None
        return self

    def backward(self, cotangent: Any = None, retain_graph: bool = False, create_graph: bool = False) -> None:
        """Accumulate the gradient of this output into tracked leaves' ``.grad``.

        Needs ``autodiff`` (imported by ``import autodiff``).
        """
        if hooks.backward_hook is None:
            raise RuntimeError("backward() needs the autodiff package: import autodiff")
        hooks.backward_hook(self, cotangent, retain_graph, create_graph)

    def detach(self) -> Tensor:
        """An untracked tensor sharing this tensor's storage."""
        return Tensor(self._array, self.dtype)

    def copy(self) -> Tensor:
        """A fresh, writable, untracked Tensor with a copy of the values (``detach().clone()``
        in PyTorch terms)."""
        return Tensor(self._array.copy(), self.dtype)

    def numpy(self) -> np.ndarray:
        """The storage array (shared, not copied)."""
        return self._array

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is None:
            return self._array if not copy else self._array.copy()
        return self._array.astype(dtype)

    def item(self) -> Scalar:
        return self._array.item()  # type: ignore[no-any-return]

    def tolist(self) -> Any:
        return self._array.tolist()

    def __repr__(self) -> str:
        body = np.array2string(self._array, separator=", ", prefix="Tensor(")
        extra = ", requires_grad=True" if self._requires_grad else ""
        return f"Tensor({body}, dtype={self.dtype.name}{extra})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(self._array.reshape(()))

    def __float__(self) -> float:
        return float(self._array.reshape(()))

    def __int__(self) -> int:
        return int(self._array.reshape(()))

    def __complex__(self) -> complex:
        return complex(self._array.reshape(()))

    __hash__ = object.__hash__

    # -- methods -------------------------------------------------------------------
    def astype(self, dtype: Any) -> Tensor:
        """Convert to ``dtype`` (the ``convert`` op)."""
        return apply(ops.convert, (self,), {"new_dtype": dt.dtype(dtype)})  # type: ignore[return-value]

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        from runtime import functions

        sizes = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return functions.reshape(self, tuple(sizes))  # type: ignore[arg-type]

    @property
    def T(self) -> Tensor:
        return apply(ops.transpose, (self,), {"permutation": tuple(range(self.ndim))[::-1]})  # type: ignore[return-value]

    @property
    def real(self) -> Tensor:
        return apply(ops.real, (self,), {})  # type: ignore[return-value]

    @property
    def imag(self) -> Tensor:
        return apply(ops.imag, (self,), {})  # type: ignore[return-value]

    def conj(self) -> Tensor:
        return apply(ops.conj, (self,), {})  # type: ignore[return-value]

    def sum(self, axis: int | Sequence[int] | None = None) -> Tensor:
        from runtime import functions

        return functions.reduce_sum(self, _axes(axis, self.ndim))

    def prod(self, axis: int | Sequence[int] | None = None) -> Tensor:
        from runtime import functions

        return functions.reduce_prod(self, _axes(axis, self.ndim))

    def max(self, axis: int | Sequence[int] | None = None) -> Tensor:
        from runtime import functions

        return functions.reduce_max(self, _axes(axis, self.ndim))

    def min(self, axis: int | Sequence[int] | None = None) -> Tensor:
        from runtime import functions

        return functions.reduce_min(self, _axes(axis, self.ndim))

    def mean(self, axis: int | Sequence[int] | None = None) -> Tensor:
        """Sum divided by the count (integer tensors divide into the policy's float)."""
        from runtime import functions

        axes = _axes(axis, self.ndim)
        count = int(np.prod([self.shape[a] for a in axes], dtype=np.int64))
        return functions.div(functions.reduce_sum(self, axes), count)

    def __getitem__(self, index: Any) -> Tensor:
        from runtime import functions

        return functions.basic_index(self, index)

    # -- operators ---------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return apply_binary(ops.add, self, other)

    def __radd__(self, other: Any) -> Tensor:
        return apply_binary(ops.add, other, self)

    def __sub__(self, other: Any) -> Tensor:
        return apply_binary(ops.sub, self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return apply_binary(ops.sub, other, self)

    def __mul__(self, other: Any) -> Tensor:
        return apply_binary(ops.mul, self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return apply_binary(ops.mul, other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return apply_binary(ops.div, self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return apply_binary(ops.div, other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return apply_binary(ops.floor_div, self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return apply_binary(ops.floor_div, other, self)

    def __mod__(self, other: Any) -> Tensor:
        from runtime import functions

        return functions.mod(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        from runtime import functions

        return functions.mod(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return apply_binary(ops.pow, self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return apply_binary(ops.pow, other, self)

    def __matmul__(self, other: Any) -> Tensor:
        from runtime import functions

        return functions.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        from runtime import functions

        return functions.matmul(other, self)

    def __and__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_and, self, other)

    def __rand__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_and, other, self)

    def __or__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_or, self, other)

    def __ror__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_or, other, self)

    def __xor__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_xor, self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_xor, other, self)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return apply_binary(ops.eq, self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return apply_binary(ops.ne, self, other)

    def __lt__(self, other: Any) -> Tensor:
        return apply_binary(ops.lt, self, other)

    def __le__(self, other: Any) -> Tensor:
        return apply_binary(ops.le, self, other)

    def __gt__(self, other: Any) -> Tensor:
        return apply_binary(ops.gt, self, other)

    def __ge__(self, other: Any) -> Tensor:
        return apply_binary(ops.ge, self, other)

    def __neg__(self) -> Tensor:
        return apply(ops.neg, (self,), {})  # type: ignore[return-value]

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return apply(ops.abs, (self,), {})  # type: ignore[return-value]

    # -- in place --------------------------------------------------------------------
    def _inplace(self, op: OpDef, other: Any, name: str) -> Tensor:
        from runtime.inplace import apply_inplace

        return apply_inplace(self, op, other, name)

    def add_(self, other: Any) -> Tensor:
        return self._inplace(ops.add, other, "add_")

    def sub_(self, other: Any) -> Tensor:
        return self._inplace(ops.sub, other, "sub_")

    def mul_(self, other: Any) -> Tensor:
        return self._inplace(ops.mul, other, "mul_")

    def div_(self, other: Any) -> Tensor:
        return self._inplace(ops.div, other, "div_")

    def pow_(self, other: Any) -> Tensor:
        return self._inplace(ops.pow, other, "pow_")

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace(ops.add, other, "add_")

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace(ops.sub, other, "sub_")

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace(ops.mul, other, "mul_")

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace(ops.div, other, "div_")

    def __ipow__(self, other: Any) -> Tensor:
        return self._inplace(ops.pow, other, "pow_")

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._inplace(ops.floor_div, other, "floor_divide_")


def _axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ShapeError(f"axis {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim)
    return tuple(out)


#: the params of a parameterless op, shared by its recordings (equations never mutate params)
_NO_PARAMS: dict[str, Any] = {}


def apply_binary(op: OpDef, x: Any, y: Any) -> Tensor:
    """``apply`` for a binary op without params (the operators and the binary functions):
    a signature seen before (two Tensors, or a Tensor and a Python scalar) runs
    straight from its cached plan."""
    tx, ty = type(x), type(y)
    if tx is Tensor:
        if ty is Tensor:  # the commonest case, inline: two Tensors
            entry = _FAST.get((op, x.dtype, y.dtype, x._array.shape, y._array.shape, _policy_state.name))
            if entry is not None:
                xs, ys = x._array.dtype, y._array.dtype  # each array must be its dtype's storage
                if (xs is entry[5] or xs == entry[5]) and (ys is entry[6] or ys == entry[6]):
                    result = _run_fast(entry, x, y)
                    if (x.node is not None or y.node is not None) and (
                        recorder := hooks.current_recorder()
                    ) is not None:
                        recorder(op, _NO_PARAMS, (x, y), entry[3], (result,))
                    return result
            return apply(op, (x, y), {})  # type: ignore[return-value]
        if ty in _PY_KIND:
            key: Any = (op, x.dtype, ty, x._array.shape, None, _policy_state.name)
        else:
            return apply(op, (x, y), {})  # type: ignore[return-value]
    elif ty is Tensor and tx in _PY_KIND:
        key = (op, tx, y.dtype, None, y._array.shape, _policy_state.name)
    else:
        return apply(op, (x, y), {})  # type: ignore[return-value]
    entry = _FAST.get(key)
    if entry is None or not _holds_storage(x, entry[5]) or not _holds_storage(y, entry[6]):
        return apply(op, (x, y), {})  # type: ignore[return-value]  # (which reports a mislabelled array)
    targets = entry[3]
    if tx is not Tensor:  # the scalar's value is checked against its planned dtype on every call
        x = _materialize(x, targets[0], op, (x, y))
    elif ty is not Tensor:
        y = _materialize(y, targets[1], op, (x, y))
    result = _run_fast(entry, x, y)
    if (x.node is not None or y.node is not None) and (recorder := hooks.current_recorder()) is not None:
        recorder(op, _NO_PARAMS, (x, y), targets, (result,))
    return result


# -- construction -------------------------------------------------------------------


def asarray(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Make a Tensor from a Tensor, NumPy array, nested list or scalar.

    Without ``dtype``, NumPy arrays keep theirs and Python data takes the active
    policy's default dtype for its kind (``1.0`` is float64 under ``jax``,
    float32 under ``torch``). ``requires_grad=True`` makes a tracked leaf.
    """
    target = dt.dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        out = data if target is None or target is data.dtype else data.astype(target)
    else:
        if target is None:
            target = _infer_dtype(data)
        try:
            array = np.asarray(data, dtype=target.storage)
        except (OverflowError, ValueError, TypeError) as err:
            raise type(err)(f"asarray: cannot store {data!r} as {target.name}: {err}") from None
        out = Tensor(array, target)
    if requires_grad:
        if out is data:
            out = Tensor(out._array, out.dtype)
        out.requires_grad_()
    return out


def _infer_dtype(data: Any) -> DType:
    if isinstance(data, (np.ndarray, np.generic)):
        return dt.dtype(data.dtype)
    if hasattr(data, "dtype") and hasattr(data, "shape"):  # e.g. a JAX array
        return dt.dtype(data.dtype)
    kind = _python_kind(data)
    if kind is None:
        raise TypeError(f"asarray: cannot infer a dtype from {type(data).__name__} data")
    return get_policy_object(None).scalar_default(kind, None)  # type: ignore[arg-type]


def _python_kind(data: Any) -> str | None:
    """The highest Python scalar kind in nested lists (None if not Python data)."""
    rank = {"bool": 0, "int": 1, "float": 2, "complex": 3}
    best: str | None = None
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
            continue
        if isinstance(item, Tensor):
            item = item.numpy()
        if isinstance(item, (np.ndarray, np.generic)):
            kind = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}.get(item.dtype.kind)
        else:
            kind = _PY_KIND.get(type(item))
        if kind is None:
            return None
        if best is None or rank[kind] > rank[best]:
            best = kind
    return best or "float"


# -- the executor ------------------------------------------------------------------------

# Binary ops whose kernel is a plain ufunc: for NumPy-native dtypes they can cast
# inside the loop (no converted copy of an input), bit for bit like convert + kernel.
_UFUNC_BINARY: dict[OpDef, np.ufunc] = {
    ops.add: np.add,
    ops.sub: np.subtract,
    ops.mul: np.multiply,
}
_IN_LOOP_STORAGE = frozenset(
    np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128, np.int8, np.int16,
                          np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
)  # fmt: skip


def _to_tensor(x: Any) -> Tensor | Scalar:
    if isinstance(x, Tensor) or type(x) in _PY_KIND:
        return x  # type: ignore[no-any-return]
    if isinstance(x, (np.ndarray, np.generic)):
        return Tensor(np.asarray(x), dt.dtype(x.dtype))
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__"):
        return asarray(x)
    raise TypeError(f"expected a Tensor, array or Python scalar, got {type(x).__name__}")


def _plan_input(x: Tensor | Scalar) -> PlanInput:
    if isinstance(x, Tensor):
        return x.dtype if x._array.ndim else Operand(x.dtype, None, True)
    return Operand(None, _PY_KIND[type(x)], True)  # type: ignore[arg-type]


def describe_operands(op: OpDef, operands: Sequence[Any]) -> str:
    """``x:f32[3] y:c128[3]``: each operand's name, dtype and shape."""
    names = list(op.operands)
    parts = []
    for i, x in enumerate(operands):
        name = names[min(i, len(names) - 1)].lstrip("*") if names else f"arg{i}"
        if isinstance(x, Tensor):
            parts.append(f"{name}:{x.dtype.short}{list(x.shape)}")
        else:
            parts.append(f"{name}:python-{type(x).__name__}")
    return " ".join(parts)


def _fail(err: Exception, op: OpDef, operands: Sequence[Any]) -> Exception:
    text = str(err)
    context = f"[{op.name} operands {describe_operands(op, operands)}; policy {get_policy()!r}]"
    new = type(err)(f"{text} {context}")
    return new


# -- the small-op fast path ---------------------------------------------------------------
#
# Untracked binary ops on two Tensors are the common case of eager code. After one
# full run validates a signature (op, dtypes, shapes, policy), its plan and output
# dtype are cached, and later calls skip straight to the kernel: for add/sub/mul
# on NumPy-native dtypes, one ufunc call that casts inside its loop.

_FAST: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_FAST_LIMIT = 4096
PLAN_CACHES.append(_FAST)


def _holds_storage(x: Any, storage: np.dtype[Any] | None) -> bool:
    """Whether a Tensor operand's array is its dtype's storage (``None``: a Python scalar)."""
    if storage is None:
        return True
    array_dtype = x._array.dtype
    return array_dtype is storage or array_dtype == storage


def _run_fast(entry: tuple[Any, ...], x: Tensor, y: Tensor) -> Tensor:
    ufunc, storage, op, targets, out_dtype, _, _ = entry
    if ufunc is not None:
        a, b = x._array, y._array
        if a.nbytes < memory.POOL_MIN_BYTES and b.nbytes < memory.POOL_MIN_BYTES:
            if storage is None:
                result = ufunc(a, b)
            else:
                result = ufunc(a, b, dtype=storage, casting="unsafe")
        else:  # a large result goes to a cached buffer (both operands share the output storage)
            out = memory.empty_like_broadcast(a, b, storage)
            if storage is None:
                result = ufunc(a, b, out=out)
            else:
                result = chunked.ufunc_into(ufunc, a, b, out, storage)
        return Tensor(result, out_dtype)
    arrays = [
        a._array if a.dtype is t else convert_array(a._array, a.dtype, t) for a, t in zip((x, y), targets, strict=True)
    ]
    outs, avals = kernels.run_kernel(op, targets, arrays, {})
    return Tensor(outs[0], avals[0][0])


def _remember(op: OpDef, x: Any, y: Any, targets: tuple[DType, ...], out_dtype: DType) -> None:
    """Cache a validated binary call: operands are Tensors or Python scalars (keyed by type;
    a scalar is materialised at its target, so only a Tensor can need a cast)."""
    if len(_FAST) >= _FAST_LIMIT:
        _FAST.clear()
    ufunc = _UFUNC_BINARY.get(op) if targets[0].storage in _IN_LOOP_STORAGE else None
    x_tensor, y_tensor = type(x) is Tensor, type(y) is Tensor
    mixed = (x_tensor and x.dtype is not targets[0]) or (y_tensor and y.dtype is not targets[1])
    storage = targets[0].storage if (ufunc is not None and mixed) else None
    _FAST[
        op,
        x.dtype if x_tensor else type(x),
        y.dtype if y_tensor else type(y),
        x._array.shape if x_tensor else None,
        y._array.shape if y_tensor else None,
        _policy_state.name,
    ] = (
        ufunc,
        storage,
        op,
        targets,
        out_dtype,
        x.dtype.storage if x_tensor else None,  # checked per call, as apply's cached path does
        y.dtype.storage if y_tensor else None,
    )


# -- the signature cache of ``apply`` ------------------------------------------------------
#
# Every op call with a signature (op, policy, params, operand dtypes and shapes,
# Python scalar kinds) seen before skips planning and validation: the first call
# ran them, and they depend on nothing else. What remains is the kernel, the
# output check run_kernel does, and the Tensor wrappers: derivative rules run
# dozens of small ops per equation, so this is the cost of a backward pass.

_SIGNATURES: dict[tuple[Any, ...], _Signature] = {}
_SIGNATURE_LIMIT = 8192
PLAN_CACHES.append(_SIGNATURES)


class _Signature:
    """What a validated call signature fixes: operand targets and storages, output avals."""

    __slots__ = ("exact", "in_storage", "kernel_name", "out_avals", "out_expect", "single", "targets", "ufunc")

    def __init__(
        self, op: OpDef, xs: Sequence[Any], targets: tuple[DType, ...], out_avals: tuple[Any, ...], mixed_ufunc: bool
    ) -> None:
        self.targets = targets
        self.in_storage = tuple(t.storage for t in targets)
        self.out_avals = out_avals
        self.out_expect = tuple((d.storage, shape) for d, shape in out_avals)
        self.single = len(out_avals) == 1
        self.kernel_name = op.name
        self.ufunc = _UFUNC_BINARY[op] if mixed_ufunc else None
        #: every operand is a Tensor already of its target dtype: no scalar to make, nothing to convert
        self.exact = all(type(x) is Tensor and x.dtype is t for x, t in zip(xs, targets, strict=True))


def _signature_key(op: OpDef, xs: Sequence[Any], params: dict[str, Any]) -> tuple[Any, ...] | None:
    key: list[Any] = [op, _policy_state.name]
    for x in xs:
        if type(x) is Tensor:
            key.append(x.dtype)
            key.append(x._array.shape)
        elif type(x) in _PY_KIND:
            key.append(type(x))
        else:
            return None  # arrays, lists, Tensor subclasses: the general path
    if params:
        for name, value in params.items():
            key.append(name)
            key.append(value)
            key.append(type(value))  # 1, 1.0 and True hash alike
    frozen = tuple(key)
    try:
        hash(frozen)
    except TypeError:  # an unhashable param (a list, an ndarray fill value)
        return None
    return frozen


def _apply_known(sig: _Signature, op: OpDef, xs: Sequence[Any], params: dict[str, Any]) -> Any:
    """``apply`` for a signature validated before (same results, same errors).

    Returns ``None`` where the general path must run instead (it reports the
    problem): a Tensor whose array is not its dtype's storage, or a kernel
    output that does not match the signature's avals. Written without
    comprehensions: it runs for every op of a backward pass.
    """
    inputs: Sequence[Tensor]
    arrays = []
    if sig.exact:
        inputs = xs
        for x, storage in zip(xs, sig.in_storage, strict=True):
            array = x._array
            if array.dtype is not storage and array.dtype != storage:
                return None
            arrays.append(array)
    else:
        inputs = []
        for x, t in zip(xs, sig.targets, strict=True):
            inputs.append(x if type(x) is Tensor else _materialize(x, t, op, xs))
        if sig.ufunc is not None:  # add/sub/mul cast inside their loop: nothing to convert first
            a, b = inputs[0]._array, inputs[1]._array
            storage = sig.in_storage[0]
            out = memory.empty_like_broadcast(a, b, storage)
            outs: Any = (chunked.ufunc_into(sig.ufunc, a, b, out, storage),)
        else:
            for x, t, storage in zip(inputs, sig.targets, sig.in_storage, strict=True):
                array = x._array
                if x.dtype is not t:
                    array = convert_array(array, x.dtype, t)  # checks the storage itself
                elif array.dtype is not storage and array.dtype != storage:
                    return None
                arrays.append(array)
    if sig.ufunc is None:
        outs = kernels.KERNELS[sig.kernel_name](*arrays, **params)
        if len(outs) != len(sig.out_expect):
            return None
    if sig.single:
        out = outs[0]
        storage, shape = sig.out_expect[0]
        if type(out) is not np.ndarray:
            out = np.asarray(out)  # NumPy returns scalars for 0-d results
        if (out.dtype is not storage and out.dtype != storage) or out.shape != shape:
            return None  # let run_kernel report the kernel's mistake
        result: Any = Tensor(out, sig.out_avals[0][0])
        results: Any = (result,)
    else:
        results = []
        for out, (storage, shape), (dtype, _) in zip(outs, sig.out_expect, sig.out_avals, strict=True):
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            if (out.dtype is not storage and out.dtype != storage) or out.shape != shape:
                return None
            results.append(Tensor(out, dtype))
        result = tuple(results)
    for x in inputs:
        if x.node is not None:
            if (recorder := hooks.current_recorder()) is not None:
                recorder(op, params, inputs, sig.targets, results)
            break
    return result


def apply(op: OpDef, operands: Iterable[Any], params: dict[str, Any]) -> Tensor | tuple[Tensor, ...]:
    """Run ``op`` eagerly on ``operands`` with static ``params``.

    Operands may be Tensors, NumPy arrays or Python scalars. Returns one Tensor,
    or a tuple for multi-output ops (``eigh``).
    """
    xs = operands if type(operands) is tuple else tuple(operands)
    key = _signature_key(op, xs, params)
    if key is not None:
        sig = _SIGNATURES.get(key)
        if sig is not None:
            result = _apply_known(sig, op, xs, params)
            if result is not None:
                return result  # type: ignore[no-any-return]
    return _apply_general(op, xs, params, key)


def _apply_general(
    op: OpDef, operands: Sequence[Any], params: dict[str, Any], key: tuple[Any, ...] | None
) -> Tensor | tuple[Tensor, ...]:
    """The full path: plan, validate, run; remembers the signature once it succeeded."""
    xs = [_to_tensor(x) for x in operands]
    try:
        targets = plan(op, [_plan_input(x) for x in xs])
    except (PromotionError, ArityError, TypeError) as err:
        raise _fail(err, op, xs) from None
    if op.arity is not None and len(xs) != op.arity:
        raise ArityError(
            f"{op.name}: expected {op.arity} operands, got {len(xs)} "
            f"[operands {describe_operands(op, xs)}; policy {get_policy()!r}]"
        )
    # Python scalars are materialised at their planned dtype (no convert needed).
    inputs = [x if isinstance(x, Tensor) else _materialize(x, t, op, xs) for x, t in zip(xs, targets, strict=True)]
    mixed = any(x.dtype is not t for x, t in zip(inputs, targets, strict=True))
    mixed_ufunc = mixed and op in _UFUNC_BINARY and targets[0].storage in _IN_LOOP_STORAGE
    try:
        if mixed_ufunc:
            out_avals = shapes.abstract_eval(op, [(t, x.shape) for t, x in zip(targets, inputs, strict=True)], params)
            # NumPy casts each operand inside its buffered loop: no converted copy,
            # and bit for bit what convert + kernel computes.
            a, b, storage = inputs[0]._array, inputs[1]._array, targets[0].storage
            result = chunked.ufunc_into(_UFUNC_BINARY[op], a, b, memory.empty_like_broadcast(a, b, storage), storage)
            outs: tuple[np.ndarray, ...] = (result,)
        else:
            arrays = [
                x._array if x.dtype is t else convert_array(x._array, x.dtype, t)
                for x, t in zip(inputs, targets, strict=True)
            ]
            outs, out_avals = kernels.run_kernel(op, targets, arrays, params)
    except (ShapeError, OpTypeError, ArityError, KernelDTypeError) as err:
        raise _fail(err, op, xs) from None
    results = tuple(Tensor(a, aval[0]) for a, aval in zip(outs, out_avals, strict=True))
    if key is not None:
        if len(_SIGNATURES) >= _SIGNATURE_LIMIT:
            _SIGNATURES.clear()  # crude bound: a long run can see unboundedly many shapes
        _SIGNATURES[key] = _Signature(op, xs, tuple(targets), tuple(out_avals), mixed_ufunc)
    if not params and len(xs) == 2 and len(results) == 1:
        kinds = (type(xs[0]), type(xs[1]))
        if Tensor in kinds and all(k is Tensor or k in _PY_KIND for k in kinds):  # a Tensor and a Tensor or scalar
            _remember(op, xs[0], xs[1], targets, results[0].dtype)
    if any(x.node is not None for x in inputs) and (recorder := hooks.current_recorder()) is not None:
        # The recorder sees the operands as they came (plus the plan), so it can
        # write each implicit promotion down as an explicit convert.
        recorder(op, params, inputs, targets, results)
    return results[0] if len(results) == 1 else results


def convert_array(array: np.ndarray, source: DType, target: DType) -> np.ndarray:
    """Convert storage with the ``convert`` kernel (what a recorded convert replays)."""
    if (out := chunked.convert_array(array, source, target)) is not None:
        return out  # a large plain cast, into cached memory
    outs, _ = kernels.run_kernel(ops.convert, (source,), (array,), {"new_dtype": target})
    return outs[0]


def _materialize(value: Scalar, target: DType, op: OpDef, xs: Sequence[Any]) -> Tensor:
    try:
        if target.kind != "complex" and isinstance(value, complex):
            raise TypeError(f"a Python complex cannot become {target.name}")
        return Tensor(np.asarray(value, dtype=target.storage), target)
    except (OverflowError, ValueError, TypeError) as err:
        raise PromotionError(
            f"{op.name}: Python scalar {value!r} does not fit the planned dtype {target.name}: {err} "
            f"[operands {describe_operands(op, xs)}; policy {get_policy()!r}]"
        ) from None

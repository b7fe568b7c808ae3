"""The executor every op goes through, and ``asarray``.

``apply(op, operands, params)`` is eager execution: classify the operands, ask
``plan`` for each operand's dtype, convert (inside NumPy's loop where it can),
run the same-dtype kernel, wrap the outputs, and tell the recorder (if one is
installed and an input is tracked). Every ``runtime`` op function and every
``Tensor`` operator ends here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from runtime.core import chunked, hooks, kernels, memory, ops, parallel, shapes
from runtime.core import dtypes as dt
from runtime.core import weak as weak_rules
from runtime.core.dtypes import DType
from runtime.core.kernels import FPE_IGNORE, FPE_STATE
from runtime.core.ops import OpDef
from runtime.core.plan import REWRITE_RULES, Expansion, PlanInput, plan, rewrite
from runtime.core.promotion import _STATE as _policy_state
from runtime.core.promotion import (
    PLAN_CACHES,
    PY_SCALAR_KINDS,
    PromotionError,
    classify,
    get_policy,
    get_policy_object,
)
from runtime.core.shape_plan import BROADCASTING, broadcast_targets
from runtime.core.shapes import ArityError, KernelDTypeError, OpMemoryError, OpTypeError, OpValueError, ShapeError
from runtime.core.tensor import Scalar, Tensor
from runtime.core.versions import WATCHING as _WATCHING
from runtime.core.versions import note_untracked

_PY_SCALARS = (bool, int, float, complex)
#: the weak Python scalar types (by exact type), shared with ``promotion.classify``
_PY_KIND = PY_SCALAR_KINDS
_NDARRAY = np.ndarray
#: Python scalar types that are weakly typed in JAX (bool is not)
_WEAK_SCALARS = (int, float, complex)


#: NumPy's floating-point error state, set to "ignore" around every ufunc and kernel call (bound
#: methods: this is on every op's path; see runtime/core/kernels/_common.py)
_fpe_set, _fpe_reset = FPE_STATE.set, FPE_STATE.reset

#: the params of a parameterless op, shared by its recordings (equations never mutate params)
_NO_PARAMS: dict[str, Any] = {}
#: the recorder with a two-operand entry point (``hooks.BINARY``)
_BINARY_RECORDER = hooks.BINARY
_OVERRIDES = hooks._OVERRIDES


def apply_binary(op: OpDef, x: Any, y: Any) -> Tensor:
    """``apply`` for a binary op without params (the operators and the binary functions):
    a signature seen before (two Tensors, or a Tensor and a Python scalar, none weak) runs
    its ``_Plan`` right here, when the plan is ``binary``; any other call goes to ``apply``."""
    tx, ty = type(x), type(y)
    if tx is Tensor and ty is Tensor:  # the commonest case: two Tensors
        if x.weak or y.weak:  # (a weak operand's key carries its flag: apply builds it)
            return apply(op, (x, y), {})  # type: ignore[return-value]
        plan = _PLANS.get((op, _policy_state.plan_key, x.dtype, x._array.shape, y.dtype, y._array.shape))
        if plan is None or not plan.binary:
            return apply(op, (x, y), {})  # type: ignore[return-value]
        xs, ys = x._array.dtype, y._array.dtype  # each array must be its dtype's storage
        if not ((xs is plan.x_storage or xs == plan.x_storage) and (ys is plan.y_storage or ys == plan.y_storage)):
            return apply(op, (x, y), {})  # type: ignore[return-value]  # (which reports a mislabelled array)
    elif tx is Tensor and ty in _PY_KIND and not x.weak:
        plan = _PLANS.get((op, _policy_state.plan_key, x.dtype, x._array.shape, ty))
        if plan is None or not plan.binary or not _holds_storage(x, plan.x_storage):
            return apply(op, (x, y), {})  # type: ignore[return-value]
        y = _materialize(y, plan.targets[1], op, (x, y))  # the value is checked against its planned dtype
    elif ty is Tensor and tx in _PY_KIND and not y.weak:
        plan = _PLANS.get((op, _policy_state.plan_key, tx, y.dtype, y._array.shape))
        if plan is None or not plan.binary or not _holds_storage(y, plan.y_storage):
            return apply(op, (x, y), {})  # type: ignore[return-value]
        x = _materialize(x, plan.targets[0], op, (x, y))
    else:
        return apply(op, (x, y), {})  # type: ignore[return-value]
    a, b = x._array, y._array
    ufunc = plan.binary_ufunc
    if ufunc is not None:  # add/sub/mul on NumPy-native storage: one ufunc call, casting inside its loop
        cast = plan.cast
        token = _fpe_set(FPE_IGNORE)  # IEEE results (inf - inf), no NumPy warning: as every kernel
        try:
            if a.nbytes < memory.POOL_MIN_BYTES and b.nbytes < memory.POOL_MIN_BYTES:
                array = ufunc(a, b) if cast is None else ufunc(a, b, dtype=cast, casting="unsafe")
            else:  # a large result goes to a cached buffer (both operands share the output storage)
                out = memory.empty_like_broadcast(a, b, cast)
                if cast is not None:
                    array = chunked.ufunc_into(ufunc, a, b, out, cast)
                elif parallel.ON and out is not None:
                    array = parallel.ufunc(ufunc, (a, b), out)
                else:
                    array = ufunc(a, b, out=out)
        finally:
            _fpe_reset(token)
        result = Tensor(array, plan.out_dtype)
    else:  # the kernel, on each operand converted to its target
        t0, t1 = plan.targets
        arrays = [
            a if x.dtype is t0 else convert_array(a, x.dtype, t0),
            b if y.dtype is t1 else convert_array(b, y.dtype, t1),
        ]
        outs, avals = kernels.run_kernel(op, plan.targets, arrays, {})
        result = Tensor(outs[0], avals[0][0])
    if x._node is not None or y._node is not None:
        pair = _BINARY_RECORDER
        if not _OVERRIDES[0] and pair[0] is not None:  # no override anywhere: the global recorder is pair[0]
            pair[1](op, _NO_PARAMS, x, y, plan.targets, result)
            return result
        recorder = hooks.current_recorder()
        if recorder is not None:
            if recorder is pair[0]:
                pair[1](op, _NO_PARAMS, x, y, plan.targets, result)
            else:
                recorder(op, _NO_PARAMS, (x, y), plan.targets, (result,))
            return result
    if _WATCHING[0]:  # a trace is running: it keeps where a result it did not record comes from
        note_untracked((x, y), (result,))
    return result


# -- construction -------------------------------------------------------------------


def asarray(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Make a Tensor from a Tensor, NumPy array, nested list or scalar.

    Without ``dtype``, NumPy arrays keep theirs and Python data takes the active
    policy's default dtype for its kind (``1.0`` is float64 under ``jax``,
    float32 under ``torch``). Under the policies with weak types (``jax``,
    ``jax-strict``) a Python int, float or complex without ``dtype`` gives a
    weakly typed 0-d tensor, as ``jax.numpy.asarray(2.5)`` does.
    ``requires_grad=True`` makes a tracked leaf.

    Nested lists holding recorded Tensors (tracked for ``grad``, or traced inside ``rt.trace``,
    ``autodiff.jit`` and ``autodiff.vmap``) are stacked by recorded ops, as ``jnp.asarray([x, y])``
    is: the result follows their values (and gradients), never the values this call saw.
    Data castwise cannot hold raises ``OpTypeError`` (``OpValueError`` for values a dtype cannot
    store), naming the active policy.
    """
    target = None
    if dtype is not None:
        try:
            target = dt.dtype(dtype)
        except OpTypeError as err:
            raise OpTypeError(f"asarray: {err} [policy {get_policy()!r}]") from None
    if isinstance(data, (list, tuple)) and _holds_recorded(data):
        out = _stack_recorded(data, target if target is not None else _infer_dtype(data))
    elif isinstance(data, Tensor):
        out = data if target is None or target is data.dtype else data.astype(target)
    elif isinstance(data, (np.ndarray, np.generic)) or (
        hasattr(data, "__array__") and hasattr(data, "dtype") and not isinstance(data, (list, tuple))
    ):  # an array (NumPy's, JAX's ...) keeps its dtype, and converts as ``convert`` does: one cast path
        array = _native(np.asarray(data))
        try:
            source = _castwise_dtype(array.dtype, data)
        except OpTypeError as err:
            raise OpTypeError(f"asarray: {err} [policy {get_policy()!r}]") from None
        if target is None or target is source:
            out = Tensor(array, source)
        else:
            out = Tensor(convert_array(array, source, target), target)
    else:
        weak = False
        if target is None:
            target = _infer_dtype(data)
            weak = type(data) in _WEAK_SCALARS and weak_rules.honours_weak(get_policy_object(None))
        try:
            array = np.asarray(data, dtype=target.storage)
        except (OverflowError, ValueError, TypeError) as err:
            cls = OpTypeError if isinstance(err, TypeError) else OpValueError
            raise cls(
                f"asarray: cannot store {_short_repr(data)} as {target.name}: {err} [policy {get_policy()!r}]"
            ) from None
        out = Tensor(array, target)
        out.weak = weak
    if requires_grad:
        if out is data or out._node is not None:
            out = out.detach()
        out.requires_grad_()
    return out


def as_tensor(x: Any) -> Tensor:
    """``x`` itself when it is a Tensor, else ``asarray(x)``: how functions take an array-like operand."""
    return x if isinstance(x, Tensor) else asarray(x)


def _infer_dtype(data: Any) -> DType:
    if isinstance(data, (np.ndarray, np.generic)):
        return dt.dtype(data.dtype)
    if hasattr(data, "dtype") and hasattr(data, "shape"):  # e.g. a JAX array
        return dt.dtype(data.dtype)
    kind = _python_kind(data)
    if kind is None:
        raise OpTypeError(
            f"asarray: cannot infer a dtype from {type(data).__name__} data {_short_repr(data)} (an array, a "
            f"Tensor, a Python scalar or nested lists of them) [policy {get_policy()!r}]"
        )
    return get_policy_object(None).scalar_default(kind, None)  # type: ignore[arg-type]


def _holds_recorded(data: list[Any] | tuple[Any, ...]) -> bool:
    """Whether nested lists hold a Tensor on a graph (tracked, or traced)."""
    stack: list[Any] = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, Tensor) and item._node is not None:
            return True
    return False


def _stack_recorded(data: Any, target: DType) -> Tensor:
    """Nested lists of Tensors and scalars as one ``target`` Tensor, built by recorded ops
    (``convert``, ``reshape``, ``concatenate``), so a traced or tracked element stays so."""
    if isinstance(data, (list, tuple)):
        parts = [_stack_recorded(item, target) for item in data]
        if not parts:
            return Tensor(np.zeros(0, target.storage), target)
        shapes = {p.shape for p in parts}
        if len(shapes) != 1:
            raise OpValueError(
                f"asarray: the nested sequences are ragged (elements of shapes {sorted(map(list, shapes))}) "
                f"[policy {get_policy()!r}]"
            )
        rows = [apply(ops.reshape, (p,), {"new_sizes": (1, *p.shape)}) for p in parts]
        return rows[0] if len(rows) == 1 else apply(ops.concatenate, rows, {"dimension": 0})  # type: ignore[return-value]
    t = data if isinstance(data, Tensor) else asarray(data, target)
    return t if t.dtype is target else apply(ops.convert, (t,), {"new_dtype": target})  # type: ignore[return-value]


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
            item = item._array  # (its dtype only: reading a traced value's storage decides nothing)
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
    """An operand as the executor takes it: a Tensor or a weak Python scalar.

    NumPy arrays and scalars keep their dtype (big-endian ones are converted to
    native order); other array-likes go through ``asarray``. Anything castwise
    cannot hold raises ``OpTypeError`` (the executor adds the op and policy).
    """
    if isinstance(x, Tensor) or type(x) in _PY_KIND:
        return x  # type: ignore[no-any-return]
    if isinstance(x, (np.ndarray, np.generic)):
        array = _native(np.asarray(x))
        return Tensor(array, _castwise_dtype(array.dtype, x))
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__"):
        try:
            return asarray(x)
        except (TypeError, ValueError, OverflowError) as err:
            raise OpTypeError(f"operand {_short_repr(x)} cannot become a Tensor: {err}") from None
    raise OpTypeError(f"expected a Tensor, array or Python scalar operand, got {type(x).__name__} {_short_repr(x)}")


def _native(array: np.ndarray) -> np.ndarray:
    """``array`` in native byte order (big-endian input is converted, not refused)."""
    if array.dtype.isnative:
        return array
    return array.astype(array.dtype.newbyteorder("="))


def _castwise_dtype(np_dtype: np.dtype[Any], value: Any) -> DType:
    """The castwise dtype of a NumPy dtype; ``OpTypeError`` naming the value for the ones
    castwise has no dtype for (object, str, bytes, datetime, longdouble ...)."""
    try:
        return dt.from_numpy(np_dtype)
    except TypeError:
        pass
    raise OpTypeError(
        f"operand {_short_repr(value)} has NumPy dtype {np_dtype}, which castwise has no dtype for "
        "(runtime.ALL_DTYPES lists castwise's dtypes)"
    )


def _short_repr(x: Any, limit: int = 60) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plan_input(x: Tensor | Scalar) -> PlanInput:
    """What the plan sees of an operand: ``classify``'s answer, the bare dtype for a
    tensor of rank >= 1 (its fastest form, and the same to every policy)."""
    if isinstance(x, Tensor) and x._array.ndim:
        return x.dtype
    return classify(x)


def describe_operands(op: OpDef, operands: Sequence[Any]) -> str:
    """``x:f32[3] y:c128[3]``: each operand's name, dtype and shape."""
    names = list(op.operands)
    parts = []
    for i, x in enumerate(operands):
        name = names[min(i, len(names) - 1)].lstrip("*") if names else f"arg{i}"
        if isinstance(x, Tensor):
            parts.append(f"{name}:{x.dtype.short}{list(x.shape)}")
        elif isinstance(x, (np.ndarray, np.generic)):  # an operand that never became a Tensor
            parts.append(f"{name}:numpy-{x.dtype}{list(x.shape)}")
        else:
            parts.append(f"{name}:python-{type(x).__name__}")
    return " ".join(parts) if parts else "(none)"


def _fail(err: Exception, op: OpDef, operands: Sequence[Any]) -> Exception:
    """``err`` (same type) with the op named first, and the operands and policy appended."""
    text = str(err)
    if not text.startswith(f"{op.name}:"):
        text = f"{op.name}: {text}"
    context = f"[{op.name} operands {describe_operands(op, operands)}; policy {get_policy()!r}]"
    new = type(err)(f"{text} {context}")
    return new


def op_error(cls: type[Exception], op: OpDef, operands: Sequence[Any], message: str) -> Exception:
    """castwise's error for a bad call of ``op``: ``cls`` with a message naming the op, each
    operand's dtype and shape, and the active policy (what every op error carries)."""
    return _fail(cls(message), op, operands)


def _physical_memory() -> int | None:
    """The machine's physical memory in bytes, where the OS reports it."""
    try:
        import os

        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # not POSIX, or not reported
        return None


#: the most bytes one op may allocate: the machine's physical memory (a larger array
#: cannot be filled; NumPy may even hand out lazily committed pages that the kernel then
#: fills until the process is killed). ``None``: no check before allocating.
MAX_OUTPUT_BYTES: int | None = _physical_memory()


def _check_output_size(out_avals: Sequence[Any]) -> None:
    """``OpMemoryError`` before allocating when the shape rule's outputs cannot fit in memory
    (the executor adds the op, the operands and the policy)."""
    total = 0
    for dtype, shape in out_avals:
        total += math.prod(shape) * np.dtype(dtype.storage).itemsize
    if MAX_OUTPUT_BYTES is not None and total > MAX_OUTPUT_BYTES:
        outputs = ", ".join(f"{d.short}{list(s)}" for d, s in out_avals)
        raise OpMemoryError(
            f"its output needs {_bytes(total)} ({outputs}), more than this machine's "
            f"{_bytes(MAX_OUTPUT_BYTES)} of memory"
        )


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


# -- the plan cache ---------------------------------------------------------------------
#
# Every op call whose signature (``_signature_key``: op, policy, each operand's dtype,
# shape and weak flag or Python scalar kind, params) was seen before skips planning and
# validation: the first call ran them, and they depend on nothing else. ``_PLANS`` maps
# the signature to its ``_Plan``, which names everything a later call needs:
#
# * ``apply`` (``_apply_known``): the operands' targets and storages, the shape plan, the
#   weak flags and the output avals. What remains is the kernel, the output check
#   run_kernel does, and the Tensor wrappers: derivative rules run dozens of small ops
#   per equation, so this is the cost of a backward pass.
# * ``apply_binary`` (the operators and the binary functions), when ``binary`` is set:
#   two operands (a Tensor and a Tensor or a Python scalar), no params, one output,
#   nothing broadcast, nothing weak, the common case of eager code. It runs the plan
#   inline: for add/sub/mul on NumPy-native dtypes, one ufunc call that casts inside
#   its loop.
#
# ``apply_binary`` looks its plan up under the key ``_signature_key`` gives the same
# call, so both reach the same plan, and a plan is written in one place
# (``_apply_general``, after a full run succeeded).

_PLANS: dict[tuple[Any, ...], _Plan] = {}
_PLAN_LIMIT = 8192
PLAN_CACHES.append(_PLANS)


class _Plan:
    """What a validated call signature fixes, by name (one per ``_PLANS`` key): the fields
    ``_apply_known`` reads, then those ``apply_binary`` reads when ``binary`` is set."""

    __slots__ = (
        "binary", "binary_ufunc", "bshapes", "cast", "exact", "in_storage", "in_weak", "kernel_name", "out_avals",
        "out_dtype", "out_expect", "out_weak", "single", "targets", "ufunc", "x_storage", "y_storage",
    )  # fmt: skip

    def __init__(
        self,
        op: OpDef,
        xs: Sequence[Any],
        targets: tuple[DType, ...],
        out_avals: tuple[Any, ...],
        mixed_ufunc: bool,
        bshapes: tuple[tuple[int, ...], ...] | None = None,
        in_weak: tuple[bool, ...] | None = None,
        out_weak: tuple[bool, ...] | None = None,
        binary: bool = False,
    ) -> None:
        #: each operand's planned dtype, and its storage
        self.targets = targets
        self.in_storage = tuple(t.storage for t in targets)
        #: each output's (dtype, shape), and the (storage, shape) its kernel must return
        self.out_avals = out_avals
        self.out_expect = tuple((d.storage, shape) for d, shape in out_avals)
        self.single = len(out_avals) == 1
        self.kernel_name = op.name
        #: add/sub/mul of mixed dtypes casting inside NumPy's loop (``None``: the kernel)
        self.ufunc = _UFUNC_BINARY[op] if mixed_ufunc else None
        #: the shape plan when an operand is broadcast (``None``: no shape changes)
        self.bshapes = bshapes
        #: the planned operands' and the outputs' weak flags (``None``: nothing weak)
        self.in_weak = in_weak
        self.out_weak = out_weak
        #: every operand is a Tensor already of its target dtype and shape: no scalar to
        #: make, nothing to convert or broadcast
        self.exact = bshapes is None and all(
            type(x) is Tensor and x.dtype is t for x, t in zip(xs, targets, strict=True)
        )
        #: ``apply_binary`` may run this plan itself (the fields below are set for it)
        self.binary = binary
        #: each operand's own storage, checked on every call (``None``: a Python scalar)
        self.x_storage: np.dtype[Any] | None = None
        self.y_storage: np.dtype[Any] | None = None
        #: add/sub/mul whose target storage NumPy's loop computes in, same dtypes or mixed
        #: (``None``: the kernel, each operand converted to its target first)
        self.binary_ufunc: np.ufunc | None = None
        #: the storage that ufunc casts both operands to (``None``: none, the dtypes agree)
        self.cast: np.dtype[Any] | None = None
        #: the output's dtype
        self.out_dtype: DType | None = None
        if binary:
            x, y = xs
            x_tensor, y_tensor = type(x) is Tensor, type(y) is Tensor
            self.x_storage = x.dtype.storage if x_tensor else None
            self.y_storage = y.dtype.storage if y_tensor else None
            self.binary_ufunc = _UFUNC_BINARY.get(op) if targets[0].storage in _IN_LOOP_STORAGE else None
            mixed = (x_tensor and x.dtype is not targets[0]) or (y_tensor and y.dtype is not targets[1])
            self.cast = targets[0].storage if (self.binary_ufunc is not None and mixed) else None
            self.out_dtype = out_avals[0][0]


def _holds_storage(x: Any, storage: np.dtype[Any] | None) -> bool:
    """Whether a Tensor operand's array is its dtype's storage (``None``: a Python scalar)."""
    if storage is None:
        return True
    array_dtype = x._array.dtype
    return array_dtype is storage or array_dtype == storage


def _signature_key(op: OpDef, xs: Sequence[Any], params: dict[str, Any]) -> tuple[Any, ...] | None:
    """The ``_PLANS`` key of a call: ``(op, policy)``, then per operand its dtype and shape
    (and ``True`` when weak) or its Python scalar type, then each param's name, value and
    type; ``None`` for a call the plan cache does not take. ``apply_binary`` builds the
    same tuples inline: ``(op, policy, dtype, shape, dtype, shape)`` for two strong
    Tensors, ``(op, policy, dtype, shape, int)`` for a strong Tensor and an int, and so on."""
    key: list[Any] = [op, _policy_state.plan_key]
    for x in xs:
        if type(x) is Tensor:
            key.append(x.dtype)
            key.append(x._array.shape)
            if x.weak:
                key.append(True)  # a weak operand plans differently (nothing else in a key is True)
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


def _apply_known(plan: _Plan, op: OpDef, xs: Sequence[Any], params: dict[str, Any]) -> Any:
    """``apply`` for a signature validated before (same results, same errors).

    Returns ``None`` where the general path must run instead (it reports the
    problem): a Tensor whose array is not its dtype's storage, or a kernel
    output that does not match the signature's avals. Written without
    comprehensions: it runs for every op of a backward pass.
    """
    inputs: Sequence[Tensor]
    arrays = []
    if plan.exact:
        inputs = xs
        for x, storage in zip(xs, plan.in_storage, strict=True):
            array = x._array
            if array.dtype is not storage and array.dtype != storage:
                return None
            arrays.append(array)
    else:
        inputs = []
        for x, t in zip(xs, plan.targets, strict=True):
            inputs.append(x if type(x) is Tensor else _materialize(x, t, op, xs))
        if plan.in_weak is not None:
            _mark_scalars_weak(xs, inputs, plan.in_weak)
        if plan.ufunc is not None:  # add/sub/mul cast inside their loop: nothing to convert first
            a, b = inputs[0]._array, inputs[1]._array
            storage = plan.in_storage[0]
            out = memory.empty_like_broadcast(a, b, storage)
            token = _fpe_set(FPE_IGNORE)  # (as run_kernel: IEEE results without NumPy's warnings)
            try:
                outs: Any = (chunked.ufunc_into(plan.ufunc, a, b, out, storage),)
            finally:
                _fpe_reset(token)
        else:
            for x, t, storage in zip(inputs, plan.targets, plan.in_storage, strict=True):
                array = x._array
                if x.dtype is not t:
                    array = convert_array(array, x.dtype, t)  # checks the storage itself
                elif array.dtype is not storage and array.dtype != storage:
                    return None
                arrays.append(array)
            if plan.bshapes is not None:
                arrays = _broadcast_arrays(arrays, plan.bshapes)
    if plan.ufunc is None:
        token = _fpe_set(FPE_IGNORE)  # (as run_kernel: IEEE results without NumPy's warnings)
        try:
            outs = kernels.KERNELS[plan.kernel_name](*arrays, **params)
        finally:
            _fpe_reset(token)
        if len(outs) != len(plan.out_expect):
            return None
    if plan.single:
        out = outs[0]
        storage, shape = plan.out_expect[0]
        if type(out) is not np.ndarray:
            out = np.asarray(out)  # NumPy returns scalars for 0-d results
        if (out.dtype is not storage and out.dtype != storage) or out.shape != shape:
            return None  # let run_kernel report the kernel's mistake
        result: Any = Tensor(out, plan.out_avals[0][0])
        if plan.out_weak is not None:
            result.weak = True  # (set only when an output is weak)
        results: Any = (result,)
    else:
        results = []
        for out, (storage, shape), (dtype, _) in zip(outs, plan.out_expect, plan.out_avals, strict=True):
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            if (out.dtype is not storage and out.dtype != storage) or out.shape != shape:
                return None
            results.append(Tensor(out, dtype))
        if plan.out_weak is not None:
            for r, w in zip(results, plan.out_weak, strict=True):
                r.weak = w
        result = tuple(results)
    for x in inputs:
        if x._node is not None:
            if (recorder := hooks.current_recorder()) is not None:
                if plan.bshapes is None:
                    recorder(op, params, inputs, plan.targets, results)
                else:
                    recorder(op, params, inputs, plan.targets, results, plan.bshapes)
                return result
            break
    if _WATCHING[0]:  # not recorded while a trace runs (``runtime.core.versions.Fold``)
        note_untracked(inputs, results)
    return result


def apply(op: OpDef, operands: Iterable[Any], params: dict[str, Any]) -> Tensor | tuple[Tensor, ...]:
    """Run ``op`` eagerly on ``operands`` with static ``params``.

    Operands may be Tensors, NumPy arrays or Python scalars. Returns one Tensor,
    or a tuple for multi-output ops (``eigh``).
    """
    xs = operands if type(operands) is tuple else tuple(operands)
    key = _signature_key(op, xs, params)
    if key is not None:
        plan = _PLANS.get(key)
        if plan is not None:
            result = _apply_known(plan, op, xs, params)
            if result is not None:
                return result  # type: ignore[no-any-return]
    return _apply_general(op, xs, params, key)


def _apply_general(
    op: OpDef, operands: Sequence[Any], params: dict[str, Any], key: tuple[Any, ...] | None
) -> Tensor | tuple[Tensor, ...]:
    """The full path: plan, validate, run; remembers the signature once it succeeded.

    The plan decides each operand's dtype (``runtime.core.plan``), the shape plan its
    shape (``runtime.core.shape_plan``: NumPy broadcasting of elementwise ops), and,
    under the policies with weak types, ``runtime.core.weak`` its weak flag and the
    results'. The recorder is given all of it, so it writes every implicit
    conversion and broadcast down as an equation.
    """
    try:
        xs = [_to_tensor(x) for x in operands]
    except OpTypeError as err:
        raise _fail(err, op, operands) from None
    plan_inputs = [_plan_input(x) for x in xs]
    weak_policy = None
    in_weak: tuple[bool, ...] | None = None
    if (
        _may_be_weak(xs)
        or op.family in weak_rules.PROMOTING_FAMILIES
        or (op is ops.convert and params.get("weak_type"))
    ):
        # (strong operands of a promoting op too: under jax int8 + uint64 is a weak float64; and a
        # convert with weak_type=True, whose result is weak whatever its operand, as lax's)
        weak_policy = get_policy_object(None)
        if weak_rules.honours_weak(weak_policy):
            plan_inputs = [
                weak_rules.WeakOperand(x.dtype, x._array.ndim == 0) if isinstance(x, Tensor) and x.weak else p
                for x, p in zip(xs, plan_inputs, strict=True)
            ]
            for i in weak_rules.dropped_weak_bools(op, plan_inputs, weak_policy):
                # weak bools whose join is a strong bool: a recorded convert drops the flag
                strong = apply(ops.convert, (xs[i],), {"new_dtype": dt.bool_})
                assert isinstance(strong, Tensor)
                xs[i] = strong
                plan_inputs[i] = _plan_input(strong)
                key = None  # (the signature's plan would skip the convert: not remembered)
        else:
            # No weak promotion here (nor weak Python scalars), but a weak tensor made
            # under a JAX policy keeps propagating its flag by the ops' weak rules.
            weak_policy = None
            if any(isinstance(x, Tensor) and x.weak for x in xs):
                in_weak = tuple(isinstance(x, Tensor) and x.weak for x in xs)
    try:
        targets = plan(op, plan_inputs, None, params)
    except (PromotionError, ArityError, TypeError) as err:
        raise _fail(err, op, xs) from None
    if op.arity is not None and len(xs) != op.arity:
        raise ArityError(
            f"{op.name}: expected {op.arity} operands, got {len(xs)} "
            f"[operands {describe_operands(op, xs)}; policy {get_policy()!r}]"
        )
    if weak_policy is not None:
        in_weak = weak_rules.planned_weak(op, plan_inputs, weak_policy)
        if in_weak is None and op is ops.convert and params.get("weak_type"):
            in_weak = (False,)  # a strong operand; the convert's weak rule makes the result weak
    if op.name in REWRITE_RULES:  # an op that may stand for others (bool + bool, real of a real)
        try:
            expansion = rewrite(op, targets)
        except (PromotionError, TypeError) as err:
            raise _fail(err, op, xs) from None
        if expansion is not None:
            return _run_expansion(expansion, op, xs, targets, params)
    # Python scalars are materialised at their planned dtype (no convert needed).
    inputs = [x if isinstance(x, Tensor) else _materialize(x, t, op, xs) for x, t in zip(xs, targets, strict=True)]
    if in_weak is not None:
        _mark_scalars_weak(xs, inputs, in_weak)
    bshapes = None
    if op.family in BROADCASTING:
        try:
            bshapes = broadcast_targets(op, [x._array.shape for x in inputs], get_policy())
        except ShapeError as err:
            raise _fail(err, op, xs) from None
    mixed = any(x.dtype is not t for x, t in zip(inputs, targets, strict=True))
    mixed_ufunc = mixed and op in _UFUNC_BINARY and targets[0].storage in _IN_LOOP_STORAGE
    try:
        if mixed_ufunc:
            in_shapes = [x.shape for x in inputs] if bshapes is None else bshapes
            out_avals = shapes.abstract_eval(op, list(zip(targets, in_shapes, strict=True)), params)
            # NumPy casts each operand inside its buffered loop: no converted copy,
            # and bit for bit what convert + kernel computes.
            a, b, storage = inputs[0]._array, inputs[1]._array, targets[0].storage
            token = _fpe_set(FPE_IGNORE)  # (as run_kernel: IEEE results without NumPy's warnings)
            try:
                result = chunked.ufunc_into(
                    _UFUNC_BINARY[op], a, b, memory.empty_like_broadcast(a, b, storage), storage
                )
            finally:
                _fpe_reset(token)
            outs: tuple[np.ndarray, ...] = (result,)
        else:
            # the shape rule (memoised; run_kernel asks it again) sizes the outputs first
            in_shapes = [x.shape for x in inputs] if bshapes is None else bshapes
            _check_output_size(shapes.abstract_eval(op, list(zip(targets, in_shapes, strict=True)), params))
            arrays = [
                x._array if x.dtype is t else convert_array(x._array, x.dtype, t)
                for x, t in zip(inputs, targets, strict=True)
            ]
            if bshapes is not None:
                arrays = _broadcast_arrays(arrays, bshapes)
            outs, out_avals = kernels.run_kernel(op, targets, arrays, params)
    except (ShapeError, OpTypeError, ArityError, KernelDTypeError, OpMemoryError) as err:
        raise _fail(err, op, xs) from None
    except MemoryError as err:  # NumPy could not allocate: the same error, with the op named
        raise op_error(OpMemoryError, op, xs, f"out of memory ({err})") from None
    results = tuple(Tensor(a, aval[0]) for a, aval in zip(outs, out_avals, strict=True))
    out_weak = None
    if in_weak is not None:
        out_weak = weak_rules.output_weak(op, in_weak, params)
        for r, w in zip(results, out_weak, strict=True):
            r.weak = w
        if not any(out_weak):
            out_weak = None
    if key is not None:  # (then every operand is a Tensor or a Python scalar, as it came)
        if len(_PLANS) >= _PLAN_LIMIT:
            _PLANS.clear()  # crude bound: a long run can see unboundedly many shapes
        # apply_binary's case: a Tensor and a Tensor or scalar, no params, one output, no
        # broadcast, nothing weak (apply_binary sends weak operands to apply; a weak
        # operand's key carries its flag, so no strong call ever reaches its plan)
        binary = (not params and len(xs) == 2 and len(results) == 1 and bshapes is None and in_weak is None
                  and not (getattr(xs[0], "weak", False) or getattr(xs[1], "weak", False))
                  and (type(xs[0]) is Tensor or type(xs[1]) is Tensor))  # fmt: skip
        _PLANS[key] = _Plan(op, xs, tuple(targets), tuple(out_avals), mixed_ufunc, bshapes, in_weak, out_weak, binary)
    if any(x._node is not None for x in inputs) and (recorder := hooks.current_recorder()) is not None:
        # The recorder sees the operands as they came (plus the plans), so it can
        # write each implicit promotion and broadcast down as an explicit equation.
        if bshapes is None:
            recorder(op, params, inputs, targets, results)
        else:
            recorder(op, params, inputs, targets, results, bshapes)
    elif _WATCHING[0]:
        note_untracked(inputs, results)
    return results[0] if len(results) == 1 else results


def _run_expansion(
    expansion: Expansion, op: OpDef, xs: Sequence[Any], targets: Sequence[DType], params: dict[str, Any]
) -> Tensor | tuple[Tensor, ...]:
    """Run the ops ``op`` stands for (``runtime.core.plan.rewrite``): each operand converted to
    its planned dtype by a ``convert`` op, then the expansion's ops, each through ``apply``,
    so a recording holds exactly these ops. Never cached: the plan decides every call."""
    inputs = [
        (x if x.dtype is t else apply(ops.convert, (x,), {"new_dtype": t}))
        if isinstance(x, Tensor)
        else _materialize(x, t, op, xs)
        for x, t in zip(xs, targets, strict=True)
    ]
    result = expansion(apply, inputs, params)
    if op not in ops.COMPLEX_PARTS and isinstance(result, Tensor) and result._node is None and result is xs[0]:
        # an identity (abs of unsigned, floor of an integer): new memory, so that a write into
        # the result cannot change the operand; real/conj of a real one are documented views,
        # and a recorded operand refuses writes, so it is returned as it is
        copied = result.copy()
        if _WATCHING[0]:
            note_untracked((result,), (copied,))
        return copied
    return result  # type: ignore[no-any-return]


def _may_be_weak(xs: Sequence[Any]) -> bool:
    """Whether an operand can make a result weak: a weak tensor or a Python int/float/complex."""
    return any(type(x) in _WEAK_SCALARS or (isinstance(x, Tensor) and x.weak) for x in xs)


def _mark_scalars_weak(xs: Sequence[Any], inputs: Sequence[Tensor], in_weak: Sequence[bool]) -> None:
    """A materialised Python scalar carries its planned weak flag (the recorded constant shows it)."""
    for x, inp, w in zip(xs, inputs, in_weak, strict=True):
        if inp is not x:
            inp.weak = w


def _broadcast_arrays(arrays: Sequence[np.ndarray], bshapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Each array broadcast to its planned shape: a read-only view, no copy (the recorded
    ``broadcast_in_dim`` replays it with the same values)."""
    return [a if a.shape == s else np.broadcast_to(a, s) for a, s in zip(arrays, bshapes, strict=True)]


def convert_array(array: np.ndarray, source: DType, target: DType) -> np.ndarray:
    """Convert storage with the ``convert`` kernel (what a recorded convert replays)."""
    token = _fpe_set(FPE_IGNORE)  # (as run_kernel: a cast to float16 overflows to inf without a warning)
    try:
        out = chunked.convert_array(array, source, target)
    finally:
        _fpe_reset(token)
    if out is not None:
        return out  # a large plain cast, into cached memory
    outs, _ = kernels.run_kernel(ops.convert, (source,), (array,), {"new_dtype": target})
    return outs[0]


def _materialize(value: Scalar, target: DType, op: OpDef, xs: Sequence[Any]) -> Tensor:
    try:
        if target.kind != "complex" and isinstance(value, complex):
            raise TypeError(f"a Python complex cannot become {target.name}")
        if target in dt.SUB_BYTE_INTS and type(value) is int:  # ml_dtypes wraps these silently
            info = ml_dtypes.iinfo(target.storage)
            if not int(info.min) <= value <= int(info.max):
                raise OverflowError(f"Python integer {value} out of bounds for {target.name}")
        return Tensor(np.asarray(value, dtype=target.storage), target)
    except (OverflowError, ValueError, TypeError) as err:
        raise PromotionError(
            f"{op.name}: Python scalar {value!r} does not fit the planned dtype {target.name}: {err} "
            f"[operands {describe_operands(op, xs)}; policy {get_policy()!r}]"
        ) from None


# -- dtypes as constructors ---------------------------------------------------


def _dtype_call(self: DType, x: Any) -> Tensor:
    """``rt.float32(3.0)``, ``rt.int8([1, 2])``, ``rt.bfloat16(t)``: ``x`` as a Tensor of this dtype,
    as ``jnp.float32(3.0)`` is (``asarray(x, dtype=self)``: a Python scalar gives a strongly typed
    0-d Tensor, a Tensor or array is converted by ``convert``, so the conversion records)."""
    try:
        return asarray(x, dtype=self)
    except (OpTypeError, OpValueError) as err:
        raise type(err)(f"{self.name}({_short_repr(x)}): {str(err).removeprefix('asarray: ')}") from None


# Attached here, not in dtypes.py: the dtype catalog imports nothing that computes.
DType.__call__ = _dtype_call  # type: ignore[method-assign]

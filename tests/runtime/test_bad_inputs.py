"""Bad input raises castwise's error, naming the op, the operands and the policy.

A table of bad calls over the whole op vocabulary: every operand position of
every op gets operands castwise has no dtype for (object, str, bytes, datetime,
longdouble ...), and each op family gets its malformed params (dimension
numbers, float or bool axes, sizes too large for memory, a bool start index, a
pad value that does not fit). Each row names the exception type it expects;
the message must contain the op's name and the active policy, so a missing
check, a bare NumPy error or an error without context is a failing row.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.core import lax as _functions
from runtime.core import ops
from runtime.core.executor import apply
from runtime.core.promotion import PromotionError
from runtime.core.shapes import (
    ArityError,
    GatherDimensionNumbers,
    OpMemoryError,
    OpTypeError,
    ScatterDimensionNumbers,
    ShapeError,
)
from runtime.core.tensor import Tensor

#: the op functions, typed loosely: the rows pass ill-typed arguments on purpose
F: Any = _functions
POLICIES = ("jax", "numpy", "torch")


def f64(*shape: int) -> Tensor:
    return rt.asarray(np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape) / 7)


def of(dtype: str, values: Any) -> Tensor:
    d = rt.dtype(dtype)
    return rt.asarray(np.asarray(values).astype(d.storage), dtype=d)


def spd(n: int) -> Tensor:
    a = np.arange(n * n, dtype=np.float64).reshape(n, n) / 10
    return rt.asarray(a @ a.T + n * np.eye(n))


_ROWS_DN = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_POINTS_DN = ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
_WINDOW = {
    "window_dimensions": (2,),
    "window_strides": (1,),
    "padding": ((0, 0),),
    "base_dilation": (1,),
    "window_dilation": (1,),
}

_SCATTER = {"dimension_numbers": _POINTS_DN, "indices_are_sorted": False, "unique_indices": False, "mode": None}

Call = Callable[[], tuple[list[Any], dict[str, Any]]]


def _same(make: Callable[[], Tensor], n: int = 2) -> Call:
    return lambda: ([make() for _ in range(n)], {})


#: a valid call of every op with operands: (operands, params)
VALID: dict[str, Call] = {
    **{
        op.name: _same(lambda: f64(3))
        for op in ops.OPS.values()
        if op.family in (ops.BINARY, ops.COMPARE) and op.name != "floor_div"
    },
    **{
        name: _same(lambda: of("i32", [1, 2, 3]))
        for name in ("shift_left", "shift_right_arithmetic", "shift_right_logical")
    },
    "floor_div": _same(lambda: f64(3)),
    **{name: _same(lambda: of("i32", [1, 2, 3])) for name in ("and", "or", "xor")},
    "dot_general": lambda: ([f64(2, 3), f64(3, 4)], {"dimension_numbers": (((1,), (0,)), ((), ()))}),
    "select": lambda: ([of("bool", [True, False, True]), f64(3), f64(3)], {}),
    **{
        name: lambda: ([f64(3)], dict(_WINDOW))
        for name in ("reduce_window_sum", "reduce_window_max", "reduce_window_min")
    },
    "select_and_gather_add": lambda: ([f64(3), f64(3)], {**_WINDOW, "select_prim": "ge"}),
    "select_and_scatter_add": lambda: ([f64(2), f64(3)], {**_WINDOW, "select_prim": "ge"}),
    "conv_general_dilated": lambda: (
        [f64(1, 1, 3), f64(1, 1, 2)],
        {
            "window_strides": (1,),
            "padding": ((0, 0),),
            "lhs_dilation": (1,),
            "rhs_dilation": (1,),
            "dimension_numbers": None,
            "feature_group_count": 1,
            "batch_group_count": 1,
        },
    ),
    "clamp": lambda: ([f64(), f64(3), f64()], {}),
    "concatenate": lambda: ([f64(3), f64(3)], {"dimension": 0}),
    "scatter": lambda: ([f64(5), of("i32", [[1], [3]]), f64(2)], dict(_SCATTER)),
    "scatter_add": lambda: ([f64(5), of("i32", [[1], [3]]), f64(2)], dict(_SCATTER)),
    **{
        name: lambda: ([f64(5), of("i32", [[1], [3]]), f64(2)], dict(_SCATTER))
        for name in ("scatter_mul", "scatter_min", "scatter_max")
    },
    "sort": lambda: ([f64(2, 3), of("i32", [[1, 2, 3], [4, 5, 6]])], {"dimension": 1, "num_keys": 1}),
    "top_k": lambda: ([f64(2, 3)], {"k": 2}),
    "split": lambda: ([f64(2, 3)], {"sizes": (1, 2), "axis": 1}),
    "select_n": lambda: ([of("i32", [0, 2, 1]), f64(3), f64(3), f64(3)], {}),
    "gather": lambda: (
        [f64(5, 3), of("i32", [[1], [3]])],
        {"dimension_numbers": _ROWS_DN, "slice_sizes": (1, 3), "mode": None, "fill_value": None},
    ),
    "dynamic_slice": lambda: ([f64(5), of("i32", 1)], {"slice_sizes": (2,)}),
    "dynamic_update_slice": lambda: ([f64(5), f64(2), of("i32", 1)], {}),
    **{op.name: _same(lambda: f64(3), 1) for op in ops.OPS.values() if op.family == ops.UNARY},
    "real": _same(lambda: of("c128", [1 + 2j, 3j]), 1),
    "imag": _same(lambda: of("c128", [1 + 2j, 3j]), 1),
    **{name: _same(lambda: of("i32", [1, 2, 3]), 1) for name in ("population_count", "clz", "not")},
    "convert": lambda: ([f64(3)], {"new_dtype": rt.float32}),
    "bitcast_convert_type": lambda: ([f64(3)], {"new_dtype": rt.int64}),
    "integer_pow": lambda: ([f64(3)], {"y": 2}),
    "optimization_barrier": lambda: ([f64(3), of("i32", [1, 2])], {}),
    **{op.name: (lambda: ([f64(2, 3)], {"axes": (1,)})) for op in ops.OPS.values() if op.family == ops.REDUCE},
    "reshape": lambda: ([f64(6)], {"new_sizes": (2, 3)}),
    "transpose": lambda: ([f64(2, 3)], {"permutation": (1, 0)}),
    "broadcast_in_dim": lambda: ([f64(3)], {"shape": (2, 3), "broadcast_dimensions": (1,)}),
    "slice": lambda: ([f64(5)], {"start_indices": (1,), "limit_indices": (4,), "strides": None}),
    "pad": lambda: ([f64(3)], {"padding_config": ((1, 1, 0),), "padding_value": 0.0}),
    "reverse": lambda: ([f64(3)], {"dimensions": (0,)}),
    "eigh": lambda: ([spd(3)], {"lower": True}),
    "cholesky": lambda: ([spd(3)], {}),
    "triangular_solve": lambda: (
        [rt.asarray(np.tril(spd(3).numpy())), f64(3, 3)],
        {"left_side": True, "lower": True, "transpose_a": False, "conjugate_a": False, "unit_diagonal": False},
    ),
    "lu": lambda: ([spd(3)], {}),
    "qr": lambda: ([f64(4, 3)], {"full_matrices": False}),
    "geqrf": lambda: ([f64(4, 3)], {}),
    "svd": lambda: ([f64(4, 3)], {"full_matrices": False, "compute_uv": True}),
    "eig": lambda: (
        [spd(3)],
        {"compute_left_eigenvectors": False, "compute_right_eigenvectors": True, "enable_eigvec_derivs": False},
    ),
    **{name: (lambda: ([f64(2, 3)], {"axes": (1,), "index_dtype": rt.int32})) for name in ("argmax", "argmin")},
    **{
        name: (lambda: ([of("i32", [[1, 2], [3, 4]])], {"axes": (1,)}))
        for name in ("reduce_and", "reduce_or", "reduce_xor")
    },
    "reduce_precision": lambda: ([f64(3)], {"exponent_bits": 5, "mantissa_bits": 10}),
    **{
        name: (lambda: ([f64(2, 3)], {"axis": 1, "reverse": False}))
        for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
    },
    "fft": lambda: ([of("c128", [1 + 2j, 3j, 1])], {"fft_type": "FFT", "fft_lengths": (3,)}),
}
NULLARY = {op.name for op in ops.OPS.values() if not op.operands}
#: user rule calls take the user's functions as params: autodiff.custom_jvp / custom_vjp build them
#: (tests/autodiff/test_custom_rules.py checks their errors)
USER_CALLS = {op.name for op in ops.OPS.values() if op.family == "call"}


def test_every_op_with_operands_has_a_valid_call() -> None:
    assert set(VALID) | NULLARY | USER_CALLS == set(ops.OPS), "a new op needs a row here"
    for name, make in VALID.items():
        operands, params = make()
        apply(ops.OPS[name], operands, params)  # the base every bad row spoils one part of


# -- operands castwise has no dtype for --------------------------------------------------------

#: label -> (bad operand, text the message must show: its NumPy dtype or Python type)
BAD_OPERANDS: dict[str, tuple[Callable[[], Any], str]] = {
    "object": (lambda: np.array([1, 2, 3], dtype=object), "object"),
    "str": (lambda: np.array(["a", "b", "c"]), "<U1"),
    "bytes": (lambda: np.array([b"a", b"b", b"c"]), "|S1"),
    "datetime": (lambda: np.array(["2020-01-01"] * 3, dtype="datetime64[D]"), "datetime64"),
    "timedelta": (lambda: np.array([1, 2, 3], dtype="timedelta64[s]"), "timedelta64"),
    "longdouble": (lambda: np.ones(3, dtype=np.longdouble), str(np.dtype(np.longdouble))),
    "clongdouble": (lambda: np.ones(3, dtype=np.clongdouble), str(np.dtype(np.clongdouble))),
    "numpy-str-scalar": (lambda: np.str_("abc"), "<U3"),
    "None": (lambda: None, "NoneType"),
    "python-str": (lambda: "abc", "str"),
    "dict": (lambda: {"a": 1}, "dict"),
    "object-list": (lambda: [object(), object(), object()], "list"),
}


@dataclass(frozen=True)
class Row:
    """One bad call: ``call()`` must raise ``expected`` naming ``op`` (and ``shows``)."""

    op: str
    label: str
    call: Callable[[], Any]
    expected: type[BaseException]
    shows: str = ""

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}"


def _spoil(name: str, position: int, bad: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        operands, params = VALID[name]()
        operands[position] = bad()
        return apply(ops.OPS[name], operands, params)

    return call


ROWS: list[Row] = []
for _name in VALID:
    _n = len(VALID[_name]()[0])
    for _position in range(_n):
        for _label, (_bad, _shows) in BAD_OPERANDS.items():
            ROWS.append(Row(_name, f"arg{_position}-{_label}", _spoil(_name, _position, _bad), OpTypeError, _shows))


def row(op: str, label: str, call: Callable[[], Any], expected: type[BaseException], shows: str = "") -> None:
    ROWS.append(Row(op, label, call, expected, shows))


# -- malformed dot_general dimension numbers ----------------------------------------------------

for _label, _dn in {
    "too-few": ((1,), (0,)),
    "flat": (1, 0),
    "int": 5,
    "none": None,
    "three-parts": (((1,), (0,)), ((), ()), ((), ())),
    "float-dim": (((1.0,), (0,)), ((), ())),
    "bool-dim": (((True,), (0,)), ((), ())),
    "str-dim": ((("a",), (0,)), ((), ())),
    "out-of-range": (((5,), (0,)), ((), ())),
    "unequal-lists": (((1,), ()), ((), ())),
}.items():
    row("dot_general", _label, partial(lambda dn: F.dot_general(f64(2, 3), f64(3, 4), dn), _dn), ShapeError)

# -- float, bool and malformed axes and sizes ------------------------------------------------------

for _reduce in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
    for _label, _axes, _shows in (("float-axis", 1.5, "1.5"), ("float-axes", (0.0, 1), ""), ("bool-axis", True, ""),
                                  ("none-axes", None, ""), ("out-of-range", 2, "")):  # fmt: skip
        row(_reduce, _label, partial(lambda fn, axes: fn(f64(2, 3), axes), getattr(F, _reduce), _axes),
            ShapeError, _shows)  # fmt: skip
# the Tensor methods validate their axis themselves, naming the method (runtime.numpy.tensor_methods)
for _method in ("sum", "prod", "max", "min", "mean", "var", "std", "any", "all", "squeeze"):
    for _label, _axis in (("float-axis", 1.5), ("axis-out-of-range", 4), ("repeated-axis", (0, -2))):
        row(_method, f"method-{_method}-{_label}", partial(lambda m, a: getattr(f64(2, 3), m)(axis=a), _method, _axis),
            ShapeError)  # fmt: skip
for _name in ("argmax", "argmin"):
    row(_name, "complex", partial(lambda fn: fn(of("c128", [1j, 2]), 0), getattr(F, _name)), OpTypeError)
    row(_name, "empty-axis", partial(lambda fn: fn(f64(0, 2), 0), getattr(F, _name)), ShapeError)
    row(_name, "float-index-dtype", partial(lambda fn: fn(f64(3), 0, rt.float32), getattr(F, _name)), OpTypeError)
    row(_name, "axis-out-of-range", partial(lambda fn: fn(f64(3), 1), getattr(F, _name)), ShapeError)
    row(_name, "two-axes", lambda n=_name: apply(ops.OPS[n], (f64(2, 3),), {"axes": (0, 1), "index_dtype": rt.int32}),
        ShapeError)  # fmt: skip
for _name in ("reduce_and", "reduce_or", "reduce_xor"):
    row(_name, "float", partial(lambda fn: fn(f64(3), 0), getattr(F, _name)), OpTypeError)
row("reduce_precision", "integer", lambda: F.reduce_precision(of("i32", [1]), 5, 2), OpTypeError)
row("reduce_precision", "zero-exponent", lambda: F.reduce_precision(f64(3), 0, 2), ShapeError)
row("reduce_precision", "negative-mantissa", lambda: F.reduce_precision(f64(3), 5, -1), ShapeError)
for _name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    row(_name, "bool", partial(lambda fn: fn(of("bool", [True]), 0), getattr(F, _name)), OpTypeError)
    row(_name, "0-d", partial(lambda fn: fn(f64(), 0), getattr(F, _name)), ShapeError)
    row(_name, "axis-out-of-range", partial(lambda fn: fn(f64(3), 1), getattr(F, _name)), ShapeError)
    row(_name, "float-axis", partial(lambda fn: fn(f64(3), 0.5), getattr(F, _name)), ShapeError)
row("cumlogsumexp", "integer", lambda: F.cumlogsumexp(of("i32", [1]), 0), OpTypeError)
row("fft", "unknown-type", lambda: F.fft(of("c128", [1j, 2]), "DCT", (2,)), ShapeError)
row("fft", "float-lengths", lambda: F.fft(of("c128", [1j, 2]), "FFT", (2.0,)), ShapeError)
row("fft", "lengths-mismatch", lambda: F.fft(of("c128", [1j, 2]), "FFT", (3,)), ShapeError)
row("fft", "four-lengths", lambda: F.fft(rt.asarray(np.ones((1, 1, 1, 1), np.complex128)), "FFT", (1, 1, 1, 1)),
    ShapeError)  # fmt: skip
row("fft", "too-many-lengths", lambda: F.fft(of("c128", [1j, 2]), "FFT", (1, 2)), ShapeError)
row("fft", "negative-length", lambda: apply(ops.fft, (of("c128", [1j, 2]),), {"fft_type": "FFT", "fft_lengths": (-2,)}),
    ShapeError)  # fmt: skip
row("fft", "complex-rfft", lambda: F.fft(of("c128", [1j, 2]), "RFFT", (2,)), OpTypeError)
row("fft", "float16-rfft", lambda: F.fft(of("f16", [1, 2]), "RFFT", (2,)), OpTypeError)
row("fft", "irfft-last-axis", lambda: F.fft(of("c128", [1j, 2, 3]), "IRFFT", (2,)), ShapeError)
row("transpose", "float-permutation", lambda: F.transpose(f64(2, 3), (1.0, 0)), ShapeError)
row("transpose", "scalar-permutation", lambda: F.transpose(f64(2, 3), 0.5), ShapeError)
row("reverse", "float-dimension", lambda: F.reverse(f64(3), 0.5), ShapeError)
row("concatenate", "float-dimension", lambda: F.concatenate([f64(3), f64(3)], 0.5), ShapeError)
row("concatenate", "bool-dimension", lambda: F.concatenate([f64(3), f64(3)], True), ShapeError)
row("concatenate", "no-operands", lambda: F.concatenate([], 0), ArityError)
row("reshape", "float-sizes", lambda: F.reshape(f64(6), (2.0, 3)), ShapeError)
row("reshape", "str-sizes", lambda: F.reshape(f64(6), "23"), ShapeError)
row("broadcast_in_dim", "float-shape", lambda: F.broadcast_in_dim(f64(3), (2.5, 3), (1,)), ShapeError)
row("broadcast_in_dim", "float-dims", lambda: F.broadcast_in_dim(f64(3), (2, 3), (1.0,)), ShapeError)
row("slice", "float-start", lambda: F.slice(f64(5), (1.5,), (4,)), ShapeError)
row("slice", "float-strides", lambda: F.slice(f64(5), (1,), (4,), (0.5,)), ShapeError)
row("pad", "float-config", lambda: F.pad(f64(3), 0.0, [(1.5, 1, 0)]), ShapeError)
row("pad", "scalar-config", lambda: F.pad(f64(3), 0.0, 3), ShapeError)
row("dynamic_slice", "float-sizes", lambda: F.dynamic_slice(f64(5), [of("i32", 1)], (2.0,)), ShapeError)
row("gather", "float-slice-sizes",
    lambda: F.gather(f64(5, 3), of("i32", [[1]]), _ROWS_DN, (1.0, 3)), ShapeError)  # fmt: skip
row("iota", "float-dimension", lambda: F.iota(rt.int32, (3, 4), 0.5), ShapeError)
row("iota", "float-shape", lambda: F.iota(rt.int32, (3.5,)), ShapeError)
row("iota", "unknown-dtype", lambda: F.iota("float99", (3,)), OpTypeError, "float99")
row("full", "float-shape", lambda: F.full((2.5,), 1.0), ShapeError)
row("full", "object-dtype", lambda: F.full((2,), 1.0, object), OpTypeError)
row("full", "str-fill", lambda: F.full((2,), "a"), ShapeError)
row("convert", "unknown-dtype", lambda: F.convert(f64(3), "float99"), OpTypeError, "float99")
row("convert", "object-dtype", lambda: F.convert(f64(3), object), OpTypeError)

# -- sizes too large for memory: castwise's MemoryError, before allocating ----------------------------

_HUGE = (10**7, 10**7)
row("full", "huge", lambda: F.full(_HUGE, 1.0), OpMemoryError)
row("full", "overflowing", lambda: F.full((2**40, 2**40), 1.0), OpMemoryError)
row("iota", "huge", lambda: F.iota(rt.int32, (10**14,)), OpMemoryError)
row("broadcast_in_dim", "huge", lambda: F.broadcast_in_dim(f64(), _HUGE, ()), OpMemoryError)
row("pad", "huge-interior", lambda: F.pad(f64(3), 0.0, [(0, 0, 10**13)]), OpMemoryError)
row("dot_general", "huge-outer", lambda: F.dot_general(f64(10**6), f64(10**6), (((), ()), ((), ()))), OpMemoryError)

# -- start indices, pad values, Python scalars ------------------------------------------------------

row("dynamic_slice", "python-bool-start", lambda: F.dynamic_slice(f64(5), [True], (2,)), OpTypeError)
row("dynamic_slice", "numpy-bool-start", lambda: F.dynamic_slice(f64(5), [np.bool_(True)], (2,)), OpTypeError)
row("dynamic_slice", "float-start", lambda: F.dynamic_slice(f64(5), [1.5], (2,)), OpTypeError)
row("dynamic_update_slice", "python-bool-start",
    lambda: F.dynamic_update_slice(f64(5), f64(2), [False]), OpTypeError)  # fmt: skip
for _dtype, _value in (("i8", 300), ("i8", -129), ("u8", -1), ("u8", 256), ("i4", 8), ("u4", 16), ("i16", 2**15)):
    row("pad", f"{_dtype}-value-{_value}", partial(lambda d, v: F.pad(of(d, [1, 2]), v, [(1, 1, 0)]), _dtype, _value),
        ShapeError, str(_value))  # fmt: skip
row("pad", "complex-value-for-float", lambda: F.pad(f64(3), 1j, [(1, 1, 0)]), OpTypeError)
row("add", "python-int-overflow", lambda: F.add(of("i8", [1, 2]), 300), PromotionError, "300")
row("add", "three-operands", lambda: apply(ops.add, (f64(3), f64(3), f64(3)), {}), ArityError)
row("add", "unknown-param", lambda: apply(ops.add, (f64(3), f64(3)), {"axis": 0}), ShapeError)
row("reduce_sum", "missing-param", lambda: apply(ops.reduce_sum, (f64(3),), {}), ShapeError)
row("sub", "bool-operands", lambda: F.sub(of("bool", [True]), of("bool", [False])), OpTypeError)
row("add", "shape-mismatch", lambda: F.add(f64(3), f64(4)), ShapeError)
row("matmul", "0-d", lambda: F.matmul(f64(), f64(3)), ShapeError)
row("matmul", "batch-mismatch", lambda: F.matmul(f64(2, 3, 4), f64(3, 4, 5)), ShapeError)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("r", ROWS, ids=[r.id for r in ROWS])
def test_bad_input_raises_castwise_error_naming_op_and_policy(r: Row, policy: str) -> None:
    with rt.use_policy(policy), pytest.raises(r.expected) as info:
        r.call()
    message = str(info.value)
    assert type(info.value).__module__.startswith("runtime"), f"{type(info.value).__name__} is not castwise's"
    assert message.startswith(f"{r.op}:") or f"{r.op}:" in message, message
    assert f"policy {policy!r}" in message, message
    assert r.shows in message, message
    assert "Traceback" not in message


# -- what is not an error ---------------------------------------------------------------------


def test_big_endian_inputs_are_converted_to_native_order() -> None:
    for dtype in (">f8", ">f4", ">i4", ">u2", ">c16"):
        data = np.arange(1, 4).astype(dtype)
        native = data.astype(np.dtype(dtype).newbyteorder("="))
        np.testing.assert_array_equal(rt.add(data, data).numpy(), native + native)
        t = rt.asarray(data)
        assert t.numpy().dtype.isnative and t.dtype is rt.dtype(native.dtype)
        np.testing.assert_array_equal(t.numpy(), native)
        np.testing.assert_array_equal(rt.square(data[0]).numpy(), native[0] * native[0])  # a big-endian NumPy scalar
        assert rt.result_type(data, native) is rt.dtype(native.dtype)


def test_asarray_with_a_dtype_converts_as_convert_does() -> None:
    """One cast path: asarray(array, dtype) gives convert's bits (checked against JAX's
    convert_element_type, which saturates float -> int and maps NaN to 0)."""
    jax = pytest.importorskip("jax")
    data = np.array([300.7, -1.5, np.nan, 1e10, -200.0, 0.5, -0.0, np.inf])
    for target in ("int8", "uint8", "int32", "bfloat16", "float16", "float8_e4m3fn", "uint4", "bool"):
        d = rt.dtype(target)
        got = rt.asarray(data, dtype=d).numpy()
        np.testing.assert_array_equal(got.view(np.uint8), rt.lax.convert(rt.asarray(data), d).numpy().view(np.uint8))
        with jax.enable_x64(True):
            want = np.asarray(jax.lax.convert_element_type(data, d.storage))
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64), err_msg=target)
    ints = np.array([300, -129, 7])
    np.testing.assert_array_equal(
        rt.asarray(ints, dtype=rt.int8).numpy(), rt.lax.convert(rt.asarray(ints), rt.int8).numpy()
    )


def test_numpy_errors_on_allocation_are_castwise_memory_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a known memory size, NumPy's own MemoryError comes back as castwise's, naming the op."""
    from runtime.core import executor

    monkeypatch.setattr(executor, "MAX_OUTPUT_BYTES", None)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError("Unable to allocate 8 TiB")

    monkeypatch.setitem(rt.core.kernels.KERNELS, "full", refuse)
    with pytest.raises(OpMemoryError, match=r"full: out of memory \(Unable to allocate 8 TiB\)") as info:
        F.full((3,), 1.0)
    assert isinstance(info.value, MemoryError) and "policy 'jax'" in str(info.value)


def test_a_python_bool_start_index_is_refused_as_jax_refuses_it() -> None:
    jax = pytest.importorskip("jax")
    with pytest.raises(TypeError):
        jax.lax.dynamic_slice(np.arange(5.0), (True,), (2,))
    with pytest.raises(OpTypeError, match="bool"):
        F.dynamic_slice(f64(5), [True], (2,))
    # an int start index still works
    np.testing.assert_array_equal(F.dynamic_slice(f64(5), [1], (2,)).numpy(), f64(5).numpy()[1:3])


def test_a_pad_value_that_fits_is_accepted() -> None:
    assert F.pad(of("i8", [1, 2]), 127, [(1, 0, 0)]).numpy().tolist() == [127, 1, 2]
    assert F.pad(of("u8", [1, 2]), 255, [(0, 1, 0)]).numpy().tolist() == [1, 2, 255]
    assert F.pad(of("i8", [1, 2]), True, [(0, 1, 0)]).numpy().tolist() == [1, 2, 1]


def test_operator_index_of_numpy_integers_still_works() -> None:
    axis = np.int64(1)
    assert operator.index(axis) == 1
    np.testing.assert_allclose(F.reduce_sum(f64(2, 3), axis).numpy(), f64(2, 3).numpy().sum(1))
    np.testing.assert_allclose(F.concatenate([f64(3), f64(3)], np.int32(0)).numpy(), np.tile(f64(3).numpy(), 2))

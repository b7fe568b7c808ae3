"""Every public function names itself in its errors: a table over the whole public surface.

The functions are enumerated from ``runtime`` (its ``__all__``), ``rt.lax`` (the op functions
the top level does not export as themselves, keyed ``lax.<name>``; their errors say the op's
name, as lax's do), the NumPy-named modules of ``rt.numpy`` (their ``__all__``), ``rt.nn`` and
``rt.linalg`` and ``rt.fft``; ``ROWS`` maps each to at least one
bad call (an operand that is no array, a shape mismatch, an unknown dtype, a non-integer axis ...).
A public function without a row fails ``test_every_public_function_has_error_rows``, naming it,
so a new function cannot arrive without its errors checked.

Each row must raise a castwise error (an ``rt.CastwiseError``, never NumPy's own
TypeError/ValueError nor a bare "could not convert string to float") whose message
starts with the name the user called (``nn.relu:``, ``linalg.solve:``, ``sum:``), names the active
policy, and names no internal op (``dot_general:``, ``[full operands``) nor ``asarray``. The rows
run under every registered policy (each a call that raises before any computation, so the file
stays cheap: no JAX, no Hypothesis; the policies loop inside each row's test).
tests/runtime/test_bad_inputs.py checks the op vocabulary through ``apply`` (every operand
position, every malformed param); this file checks the names.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.core import ops
from runtime.numpy import creation, elementwise, manipulation
from tests.runtime.array_api_error_rows import array_api_rows

#: loosely typed handles: the rows pass ill-typed arguments on purpose
R: Any = rt
NN: Any = rt.nn
LA: Any = rt.linalg
LAX: Any = rt.lax
FT: Any = rt.fft

#: public callables of ``runtime`` that are no function to call with bad data, each with why
EXCLUDED: dict[str, str] = {
    "get_policy": "takes no arguments: nothing to get wrong but the arity, which Python checks",
    "policies": "takes no arguments: nothing to get wrong but the arity, which Python checks",
    "get_default_dtype": "takes no arguments: nothing to get wrong but the arity, which Python checks",
    "get_num_threads": "takes no arguments: nothing to get wrong but the arity, which Python checks",
    "register_with_jax": "takes no arguments: nothing to get wrong but the arity, which Python checks",
    "array_api.__array_namespace_info__": "takes no arguments: nothing to get wrong but the arity, which Python checks",
}

# -- the public surface ---------------------------------------------------------------------------


def _callables(namespace: Any, names: list[str], prefix: str = "") -> dict[str, Callable[..., Any]]:
    """``namespace``'s public functions by the name its errors carry: classes (Tensor, DType,
    the exceptions, NamedTuples), modules, dtypes and constants are not functions."""
    out = {}
    for name in names:
        obj = getattr(namespace, name)
        if inspect.isclass(obj) or inspect.ismodule(obj) or isinstance(obj, rt.DType) or not callable(obj):
            continue
        out[prefix + name] = obj
    return out


def public_functions() -> dict[str, Callable[..., Any]]:
    """Every public function of ``runtime``, ``rt.numpy`` (creation, elementwise, manipulation:
    the top level re-exports them all), ``rt.nn``, ``rt.linalg`` and ``rt.fft``, by its public name."""
    found = _callables(rt, list(rt.__all__))
    for module in (creation, elementwise, manipulation):
        for name, fn in _callables(module, list(module.__all__)).items():
            assert found.get(name) is fn, f"rt.numpy's {name} is not rt.{name}: it needs a name of its own here"
    for name, fn in _callables(rt.lax, list(rt.lax.__all__), "lax.").items():
        if getattr(rt, name[4:], None) is not fn:  # the top level's same function is checked there
            found[name] = fn
    found.update(_callables(rt.nn, list(rt.nn.__all__), "nn."))
    found.update(_callables(rt.linalg, list(rt.linalg.__all__), "linalg."))
    found.update(_callables(rt.fft, list(rt.fft.__all__), "fft."))
    # the array API namespace: its functions by ``array_api.<name>`` (their errors say ``<name>:``)
    found.update(_callables(rt.array_api, list(rt.array_api.__all__), "array_api."))
    found.update(_callables(rt.array_api.linalg, list(rt.array_api.linalg.__all__), "array_api.linalg."))
    return {name: fn for name, fn in found.items() if name not in EXCLUDED}


# -- operands ---------------------------------------------------------------------------------------


def f64(*shape: int) -> Any:
    return rt.asarray(np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape) / 7)


def i32(*shape: int) -> Any:
    return rt.asarray(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape))


def i64(*shape: int) -> Any:
    return rt.asarray(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape))


def c128(*shape: int) -> Any:
    return rt.asarray((np.arange(int(np.prod(shape))) + 0.5j).reshape(shape))


def spd(n: int) -> Any:
    a = np.arange(n * n, dtype=np.float64).reshape(n, n) / 10
    return rt.asarray(a @ a.T + n * np.eye(n))


@dataclass(frozen=True)
class Bad:
    """A bad call of a public function: ``call()`` raises ``cls`` naming the function and ``words``."""

    label: str
    call: Callable[[], Any]
    cls: type[Exception]
    words: tuple[str, ...] = ()


def bad(label: str, call: Callable[[], Any], cls: type[Exception], *words: str) -> Bad:
    return Bad(label, call, cls, words)


def _fn(name: str) -> Any:
    """The public function a row's key names: ``lax.add`` is ``rt.lax.add``, ``round`` is ``rt.round``."""
    return getattr(LAX, name[4:]) if name.startswith("lax.") else getattr(R, name)


def _key(op: str) -> str:
    """An op function's row key: its top-level name where ``rt`` has the same function, else ``lax.<op>``."""
    return f"lax.{op}" if op in rt.lax.__all__ and getattr(rt, op, None) is not getattr(rt.lax, op) else op


def _no_array(fn: str, *before: Callable[[], Any]) -> Bad:
    """``fn(..., 'abc')``: a string where an array operand goes (after the operands ``before``)."""
    return bad("str-operand", lambda: _fn(fn)(*[b() for b in before], "abc"), rt.OpTypeError)


def _mismatch(fn: str, make: Callable[[int], Any] = f64) -> Bad:
    return bad("shape-mismatch", lambda: _fn(fn)(make(3), make(4)), rt.ShapeError)


UNARY = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bessel_i0e",
    "bessel_i1e",
    "bitwise_not",
    "cbrt",
    "ceil",
    "clz",
    "conj",
    "cos",
    "cosh",
    "digamma",
    "erf",
    "erf_inv",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "imag",
    "is_finite",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "logical_not",
    "logistic",
    "neg",
    "population_count",
    "real",
    "reciprocal",
    "round",
    "rsqrt",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "absolute",
    "negative",
    "isnan",
    "isinf",
    "isfinite",
    "ravel",
]
BINARY = [
    "add",
    "atan2",
    "complex",
    "div",
    "eq",
    "floor_div",
    "fmax",
    "fmin",
    "ge",
    "gt",
    "igamma",
    "igamma_grad_a",
    "igammac",
    "le",
    "lt",
    "max",
    "min",
    "mod",
    "mul",
    "ne",
    "nextafter",
    "polygamma",
    "pow",
    "rem",
    "sub",
    "zeta",
    "maximum",
    "minimum",
    "power",
    "divide",
    "true_divide",
    "floor_divide",
    "remainder",
]
INTEGER_BINARY = [
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "logical_and",
    "logical_or",
    "logical_xor",
]
REDUCE = ["reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_prod", "reduce_sum", "reduce_xor"]
CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
POOLS = ["reduce_window_max", "reduce_window_min", "reduce_window_sum"]
SCATTERS = ["scatter", "scatter_add", "scatter_max", "scatter_min", "scatter_mul"]
_DN = rt.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
_ROWS_DN = rt.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))


def _lu() -> tuple[Any, Any]:
    return LA.lu_factor(spd(3))


ROWS: dict[str, list[Bad]] = {
    **{_key(op): [_no_array(_key(op))] for op in UNARY},
    **{_key(op): [_mismatch(_key(op)), _no_array(_key(op), lambda: f64(3))] for op in BINARY},
    **{_key(op): [_mismatch(_key(op), i32), _no_array(_key(op), lambda: i32(3))] for op in INTEGER_BINARY},
    **{
        fn: [
            bad("float-axes", lambda fn=fn: _fn(fn)(i32(2, 3), 1.5), rt.ShapeError),
            bad("str-operand", lambda fn=fn: _fn(fn)("abc", 0), rt.OpTypeError),
        ]
        for fn in map(_key, REDUCE)
    },
    **{
        fn: [bad("float-axis", lambda fn=fn: _fn(fn)(f64(2, 3), 0.5), rt.ShapeError), _no_array(fn)]
        for fn in map(_key, CUMULATIVE)
    },
    **{
        fn: [
            bad("axis-out-of-range", lambda fn=fn: _fn(fn)(f64(3), 1), rt.ShapeError),
            bad("str-operand", lambda fn=fn: _fn(fn)("abc", 0), rt.OpTypeError),
        ]
        for fn in ("lax.argmax", "lax.argmin", "argmax", "argmin")
    },
    **{
        fn: [bad("float-window", lambda fn=fn: _fn(fn)(f64(3), (1.5,), (1,), ((0, 0),)), rt.ShapeError)]
        for fn in map(_key, POOLS)
    },
    **{
        fn: [bad("str-updates", lambda fn=fn: _fn(fn)(f64(5), i32(2, 1), "ab", _DN), rt.OpTypeError)]
        for fn in map(_key, SCATTERS)
    },
    # -- the rest of the op functions, one by one
    "lax.argsort": [bad("float-axis", lambda: LAX.argsort(f64(3), 0.5), rt.ShapeError), _no_array("lax.argsort")],
    "lax.avg_pool": [
        bad("str-operand", lambda: LAX.avg_pool("abc", (2,), (1,), "VALID"), rt.OpTypeError),
        bad("bad-padding", lambda: LAX.avg_pool(f64(1, 4, 1), (2,), (1,), "NOPE"), rt.ShapeError),
    ],
    "lax.max_pool": [
        bad("str-operand", lambda: LAX.max_pool("abc", (2,), (1,), "VALID"), rt.OpTypeError),
        bad("bad-padding", lambda: LAX.max_pool(f64(1, 4, 1), (2,), (1,), "NOPE"), rt.ShapeError),
    ],
    "lax.basic_index": [bad("float-index", lambda: LAX.basic_index(f64(3), 1.5), rt.OpTypeError)],
    "lax.broadcast_in_dim": [
        bad("float-shape", lambda: LAX.broadcast_in_dim(f64(3), (2.5, 3), (1,)), rt.ShapeError),
        bad("str-operand", lambda: LAX.broadcast_in_dim("abc", (3,), ()), rt.OpTypeError),
    ],
    "lax.cholesky": [bad("not-square", lambda: LAX.cholesky(f64(2, 3)), rt.ShapeError), _no_array("lax.cholesky")],
    "lax.clamp": [
        bad("shape-mismatch", lambda: LAX.clamp(f64(2), f64(3), f64(4)), rt.ShapeError),
        bad("str-operand", lambda: LAX.clamp(0.0, "abc", 1.0), rt.OpTypeError),
    ],
    "lax.concatenate": [
        bad("float-dimension", lambda: LAX.concatenate([f64(3), f64(3)], 0.5), rt.ShapeError),
        bad("str-operand", lambda: LAX.concatenate([f64(3), "abc"], 0), rt.OpTypeError),
    ],
    "lax.conv": [
        bad("rank-mismatch", lambda: LAX.conv(f64(1, 1, 4), f64(1, 1, 2, 2), (1,), "VALID"), rt.ShapeError),
        bad("str-operand", lambda: LAX.conv("abc", f64(1, 1, 2), (1,), "VALID"), rt.OpTypeError),
        bad(
            "bad-precision",
            lambda: LAX.conv(f64(1, 1, 4), f64(1, 1, 2), (1,), "VALID", "fast"),
            rt.PrecisionError,
            "'fast'",
        ),
    ],
    "lax.conv_general_dilated": [
        bad(
            "rank-mismatch",
            lambda: LAX.conv_general_dilated(f64(1, 1, 4), f64(1, 1, 2, 2), (1,), ((0, 0),)),
            rt.ShapeError,
        ),
        bad("str-operand", lambda: LAX.conv_general_dilated("abc", f64(1, 1, 2), (1,), ((0, 0),)), rt.OpTypeError),
        bad(
            "bad-precision",
            lambda: LAX.conv_general_dilated(f64(1, 1, 4), f64(1, 1, 2), (1,), ((0, 0),), precision=("high",)),
            rt.PrecisionError,
            "pair",
        ),
    ],
    "lax.convert": [
        bad("unknown-dtype", lambda: LAX.convert(f64(3), "float99"), rt.OpTypeError, "float99"),
        bad("str-operand", lambda: LAX.convert("abc", rt.float32), rt.OpTypeError),
    ],
    "lax.det": [bad("not-square", lambda: LAX.det(f64(2, 3)), rt.ShapeError), _no_array("lax.det")],
    "lax.reduce": [
        bad("init-dtype", lambda: LAX.reduce(f64(3), np.float32(0), LAX.add, (0,)), rt.OpTypeError, "float32"),
        bad(
            "not-0d-values",
            lambda: LAX.reduce(f64(3), 0.0, lambda a, b: LAX.reshape(a + b, (1,)), (0,)),
            rt.OpTypeError,
            "0-d value",
        ),
    ],
    "lax.reduce_window": [
        bad(
            "computation-dtype",
            lambda: LAX.reduce_window(f64(3), 1.0, lambda a, b: LAX.convert(a * b, rt.float32), (2,)),
            rt.OpTypeError,
            "f32",
        ),
        bad("init-not-0d", lambda: LAX.reduce_window(f64(3), f64(2), LAX.add, (2,)), rt.ShapeError, "0-d"),
    ],
    "lax.dot": [
        bad(
            "rank-3-needs-dimension-numbers",
            lambda: LAX.dot(f64(2, 2, 3), f64(3, 2)),
            rt.ShapeError,
            "dimension_numbers",
        ),
        bad("contracting-mismatch", lambda: LAX.dot(f64(2, 3), f64(4, 2)), rt.ShapeError),
        _no_array("lax.dot", lambda: f64(3)),
    ],
    "lax.dot_general": [
        bad(
            "contracting-mismatch",
            lambda: LAX.dot_general(f64(2, 3), f64(2, 3), (((1,), (0,)), ((), ()))),
            rt.ShapeError,
        ),
        bad("str-operand", lambda: LAX.dot_general(f64(3), "abc", (((0,), (0,)), ((), ()))), rt.OpTypeError),
        bad(
            "bad-precision",
            lambda: LAX.dot_general(f64(3), f64(3), (((0,), (0,)), ((), ())), "DEFAULT"),
            rt.PrecisionError,
            "DotAlgorithmPreset",
        ),
    ],
    "lax.dynamic_slice": [
        bad("float-start", lambda: LAX.dynamic_slice(f64(5), [1.5], (2,)), rt.OpTypeError),
        bad("str-operand", lambda: LAX.dynamic_slice("abc", [0], (1,)), rt.OpTypeError),
    ],
    "lax.dynamic_update_slice": [
        bad("bool-start", lambda: LAX.dynamic_update_slice(f64(5), f64(2), [True]), rt.OpTypeError)
    ],
    "lax.eig": [bad("not-square", lambda: LAX.eig(f64(2, 3)), rt.ShapeError), _no_array("lax.eig")],
    "lax.eigh": [bad("not-square", lambda: LAX.eigh(f64(2, 3)), rt.ShapeError), _no_array("lax.eigh")],
    "lax.eigvals": [bad("not-square", lambda: LAX.eigvals(f64(2, 3)), rt.ShapeError), _no_array("lax.eigvals")],
    "lax.expand_dims": [
        bad("float-dimension", lambda: LAX.expand_dims(f64(3), 0.5), rt.ShapeError),
        bad("str-operand", lambda: LAX.expand_dims("abc", 0), rt.OpTypeError),
    ],
    "lax.full": [
        bad("float-shape", lambda: LAX.full((2.5,), 1.0), rt.ShapeError),
        bad("unknown-dtype", lambda: LAX.full((2,), 1.0, "float99"), rt.OpTypeError, "float99"),
    ],
    "ones": [
        bad("float-shape", lambda: R.ones((2.5,)), rt.ShapeError),
        bad("unknown-dtype", lambda: R.ones((2,), "float99"), rt.OpTypeError, "float99"),
    ],
    "zeros": [
        bad("float-shape", lambda: R.zeros((2.5,)), rt.ShapeError),
        bad("unknown-dtype", lambda: R.zeros((2,), "float99"), rt.OpTypeError, "float99"),
    ],
    "lax.gather": [
        bad("float-slice-sizes", lambda: LAX.gather(f64(5, 3), i32(1, 1), _ROWS_DN, (1.0, 3)), rt.ShapeError),
        bad("str-operand", lambda: LAX.gather("abc", i32(1, 1), _ROWS_DN, (1, 3)), rt.OpTypeError),
    ],
    "lax.inv": [bad("not-square", lambda: LAX.inv(f64(2, 3)), rt.ShapeError), _no_array("lax.inv")],
    "lax.iota": [
        bad("float-shape", lambda: LAX.iota(rt.int32, (3.5,)), rt.ShapeError),
        bad("unknown-dtype", lambda: LAX.iota("float99", (3,)), rt.OpTypeError, "float99"),
    ],
    "lax.logsumexp": [bad("float-axis", lambda: LAX.logsumexp(f64(3), 0.5), rt.ShapeError), _no_array("lax.logsumexp")],
    "lax.svd": [bad("1-d", lambda: LAX.svd(f64(3)), rt.ShapeError), _no_array("lax.svd")],
    "lax.lu": [bad("1-d", lambda: LAX.lu(f64(3)), rt.ShapeError), _no_array("lax.lu")],
    "lax.geqrf": [bad("1-d", lambda: LAX.geqrf(f64(3)), rt.ShapeError), _no_array("lax.geqrf")],
    "lax.lu_solve": [
        bad(
            "pivot-out-of-range",
            lambda: LAX.lu_solve(spd(3), rt.asarray(np.array([0, 5, 1], np.int32)), f64(3, 1)),
            rt.OpValueError,
        ),
        bad(
            "str-operand",
            lambda: LAX.lu_solve(spd(3), rt.asarray(np.array([0, 1, 2], np.int32)), "abc"),
            rt.OpTypeError,
        ),
    ],
    "matmul": [
        bad("shape-mismatch", lambda: R.matmul(f64(2, 3), f64(2, 3)), rt.ShapeError),
        _no_array("matmul", lambda: f64(3)),
        bad("bad-precision", lambda: R.matmul(f64(2, 2, 3), f64(3, 2), precision=3), rt.PrecisionError, "3"),
    ],
    "lax.pad": [
        bad("float-config", lambda: LAX.pad(f64(3), 0.0, [(1.5, 1, 0)]), rt.ShapeError),
        bad("str-operand", lambda: LAX.pad("abc", 0.0, [(1, 1, 0)]), rt.OpTypeError),
        bad("array-value-dtype", lambda: LAX.pad(f64(3), i32(), [(1, 1, 0)]), rt.OpTypeError, "int32", "float64"),
        bad("array-value-not-0d", lambda: LAX.pad(f64(3), f64(2), [(1, 1, 0)]), rt.ShapeError, "0-d"),
    ],
    "lerp": [
        bad("integer-input", lambda: R.lerp(i32(3), i32(3), 0.5), rt.OpTypeError, "int32"),
        bad("dtype-mismatch", lambda: R.lerp(f64(3), rt.asarray(np.ones(3, np.float32)), 0.5), rt.OpTypeError),
        bad("shape-mismatch", lambda: R.lerp(f64(3), f64(4), 0.5), rt.ShapeError),
        bad("str-operand", lambda: R.lerp("abc", f64(3), 0.5), rt.OpTypeError),
    ],
    "addcdiv": [
        bad("integer-division", lambda: R.addcdiv(f64(3), i32(3), i32(3)), rt.OpTypeError, "integer division"),
        bad("shape-mismatch", lambda: R.addcdiv(f64(3), f64(4), f64(4)), rt.ShapeError),
        bad("str-operand", lambda: R.addcdiv(f64(3), "abc", f64(3)), rt.OpTypeError),
    ],
    "set_default_dtype": [
        # refused under every policy before the policy is asked (tests/runtime/test_default_dtype.py
        # checks that every policy but torch refuses a good dtype too)
        bad("integer-dtype", lambda: R.set_default_dtype(rt.int32), rt.DefaultDtypeError, "int32", "float64"),
        bad("float8-dtype", lambda: R.set_default_dtype(rt.float8_e4m3fn), rt.DefaultDtypeError, "float8_e4m3fn"),
        bad("complex-dtype", lambda: R.set_default_dtype(rt.complex128), rt.DefaultDtypeError, "complex128"),
        bad("unknown-dtype", lambda: R.set_default_dtype("float99"), rt.DefaultDtypeError, "float99"),
    ],
    "set_num_threads": [
        bad("zero-threads", lambda: R.set_num_threads(0), rt.OpValueError, "got 0"),
        bad("negative-threads", lambda: R.set_num_threads(-2), rt.OpValueError, "got -2"),
        bad("float-count", lambda: R.set_num_threads(1.5), rt.OpTypeError, "got 1.5"),
        bad("bool-count", lambda: R.set_num_threads(True), rt.OpTypeError, "got True"),
        bad("str-count", lambda: R.set_num_threads("2"), rt.OpTypeError, "got '2'"),
    ],
    "can_cast": [
        bad("unknown-dtype", lambda: R.can_cast(rt.float32, "float99"), rt.OpTypeError, "float99"),
        bad("object-from", lambda: R.can_cast(object(), rt.float32), rt.OpTypeError),
    ],
    "lax.integer_pow": [
        bad("float-exponent", lambda: LAX.integer_pow(f64(3), 1.5), rt.OpTypeError, "Python int"),
        bad("negative-power-of-int", lambda: LAX.integer_pow(i32(3), -1), rt.OpTypeError, "negative"),
        bad("bool", lambda: LAX.integer_pow(rt.asarray([True]), 2), rt.OpTypeError),
        bad("str-operand", lambda: LAX.integer_pow("abc", 2), rt.OpTypeError),
    ],
    "lax.stop_gradient": [_no_array("lax.stop_gradient")],
    "lax.bitcast_convert_type": [
        bad("int8-to-bool", lambda: LAX.bitcast_convert_type(rt.asarray(np.ones(2, np.int8)), "bool"), rt.OpTypeError),
        bad("wider-needs-last-axis", lambda: LAX.bitcast_convert_type(i32(3), rt.float64), rt.ShapeError, "size 2"),
        bad("unknown-dtype", lambda: LAX.bitcast_convert_type(f64(3), "float99"), rt.OpTypeError),
        bad("str-operand", lambda: LAX.bitcast_convert_type("abc", rt.int64), rt.OpTypeError),
    ],
    "lax.optimization_barrier": [bad("str-operand", lambda: LAX.optimization_barrier((f64(3), "abc")), rt.OpTypeError)],
    "lax.broadcast_shapes": [
        bad("incompatible", lambda: LAX.broadcast_shapes((2,), (3,)), rt.ShapeError, "[2]", "[3]"),
        bad("no-shapes", lambda: LAX.broadcast_shapes(), rt.ShapeError),
        bad("negative-size", lambda: LAX.broadcast_shapes((-1,)), rt.ShapeError),
    ],
    "lax.unstack": [
        bad("axis-out-of-range", lambda: LAX.unstack(f64(2, 3), 2), rt.ShapeError, "axis 2"),
        bad("0-d", lambda: LAX.unstack(f64(), 0), rt.ShapeError),
        _no_array("lax.unstack"),
    ],
    "lax.padtype_to_pads": [bad("bad-padding", lambda: LAX.padtype_to_pads((4,), (2,), (1,), "NOPE"), rt.ShapeError)],
    "lax.qr": [bad("0-d", lambda: LAX.qr(f64()), rt.ShapeError), _no_array("lax.qr")],
    "lax.reduce_precision": [
        bad("zero-exponent", lambda: LAX.reduce_precision(f64(3), 0, 2), rt.ShapeError),
        bad("str-operand", lambda: LAX.reduce_precision("abc", 5, 2), rt.OpTypeError),
    ],
    "repeat": [
        bad("negative-repeats", lambda: R.repeat(f64(3), -1), rt.ShapeError),
        bad("str-operand", lambda: R.repeat("abc", 2), rt.OpTypeError),
    ],
    "lax.reshape": [
        bad("size-mismatch", lambda: LAX.reshape(f64(6), (4, 2)), rt.ShapeError),
        bad("str-operand", lambda: LAX.reshape("abc", (1,)), rt.OpTypeError),
    ],
    "lax.reverse": [
        bad("float-dimension", lambda: LAX.reverse(f64(3), 0.5), rt.ShapeError),
        bad("str-operand", lambda: LAX.reverse("abc", (0,)), rt.OpTypeError),
    ],
    "lax.select": [
        bad("shape-mismatch", lambda: LAX.select(rt.asarray([True, False]), f64(3), f64(3)), rt.ShapeError),
        bad("str-operand", lambda: LAX.select(rt.asarray([True]), "abc", f64(1)), rt.OpTypeError),
    ],
    "lax.select_n": [bad("shape-mismatch", lambda: LAX.select_n(i32(2), f64(3), f64(3)), rt.ShapeError)],
    "lax.select_and_gather_add": [
        bad(
            "float-window",
            lambda: LAX.select_and_gather_add(f64(3), f64(3), "ge", (1.5,), (1,), ((0, 0),), (1,), (1,)),
            rt.ShapeError,
        )
    ],
    "lax.select_and_scatter_add": [
        bad(
            "float-window",
            lambda: LAX.select_and_scatter_add(f64(2), f64(3), "ge", (1.5,), (1,), ((0, 0),), (1,), (1,)),
            rt.ShapeError,
        )
    ],
    "lax.slice": [
        bad("float-start", lambda: LAX.slice(f64(5), (1.5,), (4,)), rt.ShapeError),
        bad("str-operand", lambda: LAX.slice("abc", (0,), (1,)), rt.OpTypeError),
    ],
    "lax.slogdet": [bad("not-square", lambda: LAX.slogdet(f64(2, 3)), rt.ShapeError), _no_array("lax.slogdet")],
    "lax.solve": [
        bad("shape-mismatch", lambda: LAX.solve(spd(3), f64(4)), rt.ShapeError),
        _no_array("lax.solve", lambda: spd(2)),
    ],
    "lax.sort": [bad("float-dimension", lambda: LAX.sort(f64(3), 0.5), rt.ShapeError), _no_array("lax.sort")],
    "lax.split": [
        bad("sizes-mismatch", lambda: LAX.split(f64(4), (1, 2)), rt.ShapeError),
        bad("str-operand", lambda: LAX.split("abc", (1,)), rt.OpTypeError),
    ],
    "lax.squeeze": [bad("not-size-1", lambda: LAX.squeeze(f64(3), 0), rt.ShapeError), _no_array("lax.squeeze")],
    "lax.stack": [
        bad("shape-mismatch", lambda: LAX.stack([f64(3), f64(4)]), rt.ShapeError),
        bad("str-operand", lambda: LAX.stack([f64(3), "abc"]), rt.OpTypeError),
    ],
    "lax.sum_": [bad("float-axis", lambda: LAX.sum_(f64(3), 0.5), rt.ShapeError), _no_array("lax.sum_")],
    "tile": [
        bad("float-reps", lambda: R.tile(f64(3), 1.5), rt.ShapeError),
        bad("str-operand", lambda: R.tile("abc", 2), rt.OpTypeError),
    ],
    "lax.top_k": [
        bad("k-too-large", lambda: LAX.top_k(f64(3), 5), rt.ShapeError),
        bad("str-operand", lambda: LAX.top_k("abc", 1), rt.OpTypeError),
    ],
    "lax.transpose": [
        bad("float-permutation", lambda: LAX.transpose(f64(2, 3), (1.0, 0)), rt.ShapeError),
        bad("str-operand", lambda: LAX.transpose("abc", (0,)), rt.OpTypeError),
    ],
    "lax.triangular_solve": [
        bad("shape-mismatch", lambda: LAX.triangular_solve(spd(3), f64(4, 4)), rt.ShapeError),
        bad("str-operand", lambda: LAX.triangular_solve(spd(3), "abc"), rt.OpTypeError),
    ],
    # -- NumPy's meaning of the names lax also uses (runtime.numpy.shared_names)
    **{fn: [_no_array(fn)] for fn in ("arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "conjugate")},
    **{
        fn: [_no_array(fn), bad("str-decimals", lambda fn=fn: _fn(fn)(f64(3), "a"), rt.OpTypeError)]
        for fn in ("round",)
    },
    "invert": [_no_array("invert"), bad("float-operand", lambda: R.invert(f64(3)), rt.OpTypeError)],
    **{
        fn: [_mismatch(fn), _no_array(fn, lambda: f64(3))]
        for fn in ("arctan2", "multiply", "equal", "not_equal", "less", "less_equal", "greater")
    },
    **{
        fn: [
            _mismatch(fn),
            _no_array(fn, lambda: f64(3)),
            # under torch (and kael, whose Tensor API is PyTorch's) torch's alpha_check refuses these;
            # every other policy refuses alpha= itself (tests/runtime/test_alpha.py tells them apart)
            bad("float-alpha-int", lambda fn=fn: _fn(fn)(i64(3), i64(3), alpha=2.0), rt.AlphaError, "alpha"),
            bad("bool-alpha-int", lambda fn=fn: _fn(fn)(i64(3), i64(3), alpha=True), rt.AlphaError, "alpha"),
            bad("complex-alpha", lambda fn=fn: _fn(fn)(f64(3), f64(3), alpha=1j), rt.AlphaError, "alpha"),
            bad("tensor-alpha", lambda fn=fn: _fn(fn)(f64(3), f64(3), alpha=f64()), rt.AlphaError, "alpha"),
        ]
        for fn in ("add", "subtract")
    },
    "greater_equal": [_mismatch("greater_equal"), _no_array("greater_equal", lambda: f64(3))],
    **{
        fn: [_mismatch(fn, i32), _no_array(fn, lambda: i32(3))]
        for fn in ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor")
    },
    "logical_not": [_no_array("logical_not")],
    **{
        fn: [
            bad("float-axis", lambda fn=fn: _fn(fn)(f64(2, 3), axis=0.5), rt.ShapeError),
            _no_array(fn),
            bad("where-without-initial", lambda fn=fn: _fn(fn)(f64(3), where=rt.asarray([True] * 3)), rt.OpValueError),
            bad("empty-axis", lambda fn=fn: _fn(fn)(f64(0, 2), axis=0), rt.ShapeError, "identity"),
        ]
        for fn in ("max", "min", "amax", "amin")
    },
    **{
        fn: [bad("float-axis", lambda fn=fn: _fn(fn)(f64(2, 3), axis=0.5), rt.ShapeError), _no_array(fn)]
        for fn in ("cumsum", "cumprod")
    },
    **{
        fn: [
            bad("float-axis", lambda fn=fn: _fn(fn)(f64(3), 0.5), rt.ShapeError),
            _no_array(fn),
            bad("order", lambda fn=fn: _fn(fn)(f64(3), order="x"), rt.OpValueError, "order"),
        ]
        for fn in ("sort", "argsort")
    },
    "concatenate": [
        bad("float-axis", lambda: R.concatenate([f64(3), f64(3)], 0.5), rt.ShapeError),
        bad("str-operand", lambda: R.concatenate([f64(3), "abc"]), rt.OpTypeError),
        bad("0-d", lambda: R.concatenate([f64(), f64()]), rt.ShapeError, "zero-dimensional"),
    ],
    "stack": [
        bad("shape-mismatch", lambda: R.stack([f64(3), f64(4)]), rt.ShapeError),
        bad("str-operand", lambda: R.stack([f64(3), "abc"]), rt.OpTypeError),
    ],
    "expand_dims": [
        bad("float-axis", lambda: R.expand_dims(f64(3), 0.5), rt.ShapeError),
        bad("axis-out-of-range", lambda: R.expand_dims(f64(3), 3), rt.ShapeError),
        bad("str-operand", lambda: R.expand_dims("abc", 0), rt.OpTypeError),
    ],
    "squeeze": [bad("axis-out-of-range", lambda: R.squeeze(f64(3), 1), rt.ShapeError), _no_array("squeeze")],
    "reshape": [
        bad("size-mismatch", lambda: R.reshape(f64(6), (4, 2)), rt.ShapeError),
        bad("two-holes", lambda: R.reshape(f64(6), (-1, -1)), rt.ShapeError),
        bad("bad-order", lambda: R.reshape(f64(6), (2, 3), order="K"), rt.OpValueError, "order"),
        bad("str-operand", lambda: R.reshape("abc", (1,)), rt.OpTypeError),
    ],
    "transpose": [
        bad("not-a-permutation", lambda: R.transpose(f64(2, 3), (0, 0)), rt.ShapeError),
        bad("str-operand", lambda: R.transpose("abc"), rt.OpTypeError),
    ],
    "split": [
        bad("unequal-sections", lambda: R.split(f64(4), 3), rt.ShapeError, "sections"),
        bad("str-operand", lambda: R.split("abc", 1), rt.OpTypeError),
    ],
    "full": [
        bad("float-shape", lambda: R.full((2.5,), 1.0), rt.ShapeError),
        bad("unknown-dtype", lambda: R.full((2,), 1.0, "float99"), rt.OpTypeError, "float99"),
        bad("fill-does-not-broadcast", lambda: R.full((2, 3), f64(2)), rt.ShapeError),
    ],
    "select": [
        bad("lengths-differ", lambda: R.select([rt.asarray([True])], []), rt.OpValueError),
        bad("int-condition", lambda: R.select([i32(3)], [f64(3)]), rt.OpTypeError, "bool"),
        bad("str-choice", lambda: R.select([rt.asarray([True])], ["abc"]), rt.OpTypeError),
    ],
    "pad": [
        bad("negative-width", lambda: R.pad(f64(3), -1), rt.ShapeError),
        bad("bad-mode", lambda: R.pad(f64(3), 1, "reflect"), rt.OpValueError, "reflect"),
        bad("str-operand", lambda: R.pad("abc", 1), rt.OpTypeError),
    ],
    # -- creation
    "arange": [
        bad("huge", lambda: R.arange(10**13), rt.OpMemoryError),
        bad("unknown-dtype", lambda: R.arange(3, dtype="float99"), rt.OpTypeError, "float99"),
        bad("str-bound", lambda: R.arange("abc"), rt.OpTypeError),
    ],
    "linspace": [
        bad("huge", lambda: R.linspace(0.0, 1.0, 10**13), rt.OpMemoryError),
        bad("str-bound", lambda: R.linspace("a", 1.0), rt.OpTypeError),
        bad("float-num", lambda: R.linspace(0.0, 1.0, 2.5), rt.OpTypeError),
    ],
    "eye": [
        bad("huge", lambda: R.eye(10**7), rt.OpMemoryError),
        bad("unknown-dtype", lambda: R.eye(2, dtype="float99"), rt.OpTypeError, "float99"),
        bad("float-n", lambda: R.eye(2.5), rt.OpTypeError),
    ],
    "identity": [
        bad("huge", lambda: R.identity(10**7), rt.OpMemoryError),
        bad("float-n", lambda: R.identity(2.5), rt.OpTypeError),
    ],
    "array": [
        _no_array("array"),
        bad("unknown-dtype", lambda: R.array(f64(3), "float99"), rt.OpTypeError, "float99"),
        bad("str-copy", lambda: R.array(f64(3), copy="yes"), rt.OpTypeError, "copy"),
        bad("negative-ndmin", lambda: R.array(f64(3), ndmin=-1), rt.ShapeError, "ndmin"),
        bad("float-ndmin", lambda: R.array(f64(3), ndmin=1.5), rt.OpTypeError, "ndmin"),
    ],
    "zeros_like": [
        _no_array("zeros_like"),
        bad("unknown-dtype", lambda: R.zeros_like(f64(3), "float99"), rt.OpTypeError, "float99"),
    ],
    "ones_like": [
        _no_array("ones_like"),
        bad("unknown-dtype", lambda: R.ones_like(f64(3), "float99"), rt.OpTypeError, "float99"),
    ],
    "full_like": [
        bad("str-fill", lambda: R.full_like(f64(2), "a"), rt.ShapeError),
        bad("str-operand", lambda: R.full_like("abc", 1.0), rt.OpTypeError),
        bad("unknown-dtype", lambda: R.full_like(f64(3), 1.0, "float99"), rt.OpTypeError, "float99"),
    ],
    "tril": [bad("1-d", lambda: R.tril(f64(3)), rt.ShapeError), _no_array("tril")],
    "triu": [bad("1-d", lambda: R.triu(f64(3)), rt.ShapeError), _no_array("triu")],
    "diagonal": [bad("same-axes", lambda: R.diagonal(f64(2, 2), 0, 1, 1), rt.ShapeError), _no_array("diagonal")],
    "diag": [bad("3-d", lambda: R.diag(f64(2, 2, 2)), rt.ShapeError), _no_array("diag")],
    "meshgrid": [
        bad("bad-indexing", lambda: R.meshgrid(f64(2), f64(3), indexing="nope"), rt.ShapeError),
        bad("str-operand", lambda: R.meshgrid(f64(2), "abc"), rt.OpTypeError),
    ],
    # -- manipulation
    **{
        fn: [bad("str-operand", lambda fn=fn: getattr(R, fn)(f64(2), "abc"), rt.OpTypeError)]
        for fn in ("atleast_1d", "atleast_2d", "atleast_3d")
    },
    "broadcast_to": [
        bad("incompatible", lambda: R.broadcast_to(f64(3), (4,)), rt.ShapeError),
        bad("str-operand", lambda: R.broadcast_to("abc", (3,)), rt.OpTypeError),
    ],
    "dot": [
        bad("shape-mismatch", lambda: R.dot(f64(3), f64(4)), rt.ShapeError),
        _no_array("dot", lambda: f64(3)),
        bad("bad-precision", lambda: R.dot(f64(), f64(3), precision="fast"), rt.PrecisionError, "'fast'"),
    ],
    "inner": [
        bad("shape-mismatch", lambda: R.inner(f64(3), f64(4)), rt.ShapeError),
        _no_array("inner", lambda: f64(3)),
        bad("bad-precision", lambda: R.inner(f64(3), f64(3), precision="fast"), rt.PrecisionError, "'fast'"),
    ],
    "outer": [_no_array("outer", lambda: f64(3))],
    "tensordot": [
        bad("shape-mismatch", lambda: R.tensordot(f64(3), f64(4), 1), rt.ShapeError),
        _no_array("tensordot", lambda: f64(3)),
        bad("bad-precision", lambda: R.tensordot(f64(3), f64(3), 1, precision="x"), rt.PrecisionError, "'x'"),
    ],
    "einsum": [
        bad("shape-mismatch", lambda: R.einsum("i,i", f64(3), f64(4)), rt.ShapeError),
        bad("str-operand", lambda: R.einsum("i", "abc"), rt.OpTypeError, "operand 0"),
        bad("bad-precision", lambda: R.einsum("i,i", f64(3), f64(3), precision="x"), rt.PrecisionError, "'x'"),
    ],
    "flip": [bad("float-axis", lambda: R.flip(f64(3), 0.5), rt.ShapeError), _no_array("flip")],
    "hstack": [bad("str-operand", lambda: R.hstack([f64(2), "abc"]), rt.OpTypeError)],
    "vstack": [
        bad("shape-mismatch", lambda: R.vstack([f64(2), f64(3)]), rt.ShapeError),
        bad("str-operand", lambda: R.vstack([f64(2), "abc"]), rt.OpTypeError),
    ],
    "moveaxis": [
        bad("axis-out-of-range", lambda: R.moveaxis(f64(2, 3), 5, 0), rt.ShapeError, "source"),
        bad("str-operand", lambda: R.moveaxis("abc", 0, 0), rt.OpTypeError),
    ],
    "roll": [
        bad("float-shift", lambda: R.roll(f64(3), 0.5), rt.ShapeError),
        bad("str-operand", lambda: R.roll("abc", 1), rt.OpTypeError),
    ],
    "swapaxes": [
        bad("float-axis", lambda: R.swapaxes(f64(2, 3), 0.5, 1), rt.ShapeError),
        bad("str-operand", lambda: R.swapaxes("abc", 0, 0), rt.OpTypeError),
    ],
    "take": [
        bad("bad-mode", lambda: R.take(f64(3), [0], mode=3), rt.ShapeError, "mode"),
        bad("str-operand", lambda: R.take("abc", [0]), rt.OpTypeError),
    ],
    "take_along_axis": [
        bad("float-axis", lambda: R.take_along_axis(f64(3), i32(1), 0.5), rt.ShapeError),
        bad("str-operand", lambda: R.take_along_axis("abc", i32(1), 0), rt.OpTypeError),
    ],
    # -- elementwise, reductions and statistics under NumPy's names
    "clip": [bad("str-bound", lambda: R.clip(f64(3), "a", 1.0), rt.OpTypeError), _no_array("clip")],
    "nan_to_num": [
        bad("str-nan", lambda: R.nan_to_num(f64(3), nan="a"), rt.OpTypeError, "nan"),
        _no_array("nan_to_num"),
    ],
    "isclose": [
        bad("str-rtol", lambda: R.isclose(f64(3), f64(3), rtol="a"), rt.OpTypeError, "rtol"),
        bad("shape-mismatch", lambda: R.isclose(f64(3), f64(4)), rt.ShapeError),
    ],
    "allclose": [
        bad("str-atol", lambda: R.allclose(f64(3), f64(3), atol="a"), rt.OpTypeError, "atol"),
        bad("shape-mismatch", lambda: R.allclose(f64(3), f64(4)), rt.ShapeError),
    ],
    **{
        fn: [bad("float-axis", lambda fn=fn: getattr(R, fn)(f64(2, 3), axis=0.5), rt.ShapeError), _no_array(fn)]
        for fn in ("all", "any", "count_nonzero", "mean", "prod", "std", "sum", "var")
    },
    "where": [
        bad("shape-mismatch", lambda: R.where(rt.asarray([True, False]), f64(3), f64(3)), rt.ShapeError),
        bad("str-operand", lambda: R.where(rt.asarray([True]), "abc", f64(1)), rt.OpTypeError),
    ],
    # -- the rest of the top level
    "asarray": [
        bad("str-data", lambda: R.asarray("abc"), rt.OpTypeError),
        bad("unknown-dtype", lambda: R.asarray([1.0], "float99"), rt.OpTypeError, "float99"),
    ],
    "from_dlpack": [bad("no-dlpack", lambda: R.from_dlpack("abc"), rt.OpTypeError, "__dlpack__")],
    "trace": [bad("not-callable", lambda: R.trace("abc", f64(3)), rt.OpTypeError)],
    "evaluate": [bad("not-a-graph", lambda: R.evaluate("abc", f64(3)), rt.OpTypeError)],
    "plan": [
        bad("unknown-op", lambda: R.plan("nope", [rt.float32]), rt.OpTypeError, "nope"),
        bad("misspelt-op", lambda: R.plan("addd", [rt.float32, rt.float32]), rt.OpTypeError, "did you mean add"),
        bad("op-not-a-name", lambda: R.plan(3, [rt.float32]), rt.OpTypeError, "int"),
    ],
    "dtype": [
        bad("unknown-dtype", lambda: R.dtype("float99"), rt.OpTypeError, "float99"),
        bad("misspelt-dtype", lambda: R.dtype("flaot32"), rt.OpTypeError, "flaot32", "did you mean float32"),
    ],
    "result_type": [bad("unknown-dtype", lambda: R.result_type("float99"), rt.OpTypeError, "float99")],
    "promote_types": [bad("unknown-dtype", lambda: R.promote_types("float99", rt.float32), rt.OpTypeError, "float99")],
    "get_policy_object": [
        bad("unknown-policy", lambda: R.get_policy_object("nope"), rt.OpValueError, "nope"),
        bad("misspelt-policy", lambda: R.get_policy_object("nmupy"), rt.OpValueError, "did you mean numpy"),
        bad("policy-not-a-name", lambda: R.get_policy_object(3.5), rt.OpTypeError, "float"),
    ],
    **{
        fn: [bad("unknown-policy", lambda fn=fn: getattr(R, fn)("nope").__enter__(), rt.OpValueError, "nope")]
        for fn in ("policy", "use_policy")
    },
    # -- rt.nn
    **{
        f"nn.{fn}": [
            bad("str-operand", lambda fn=fn: getattr(NN, fn)("abc"), rt.OpTypeError),
            bad("object-operand", lambda fn=fn: getattr(NN, fn)(object()), rt.OpTypeError),
        ]
        for fn in ("relu", "relu6", "sigmoid", "silu", "swish", "softplus", "log_sigmoid", "gelu", "elu", "leaky_relu")
    },
    **{
        f"nn.{fn}": [
            bad("float-axis", lambda fn=fn: getattr(NN, fn)(f64(2, 3), axis=0.5), rt.ShapeError),
            bad("str-operand", lambda fn=fn: getattr(NN, fn)("abc"), rt.OpTypeError),
        ]
        for fn in ("softmax", "log_softmax", "standardize")
    },
    "nn.one_hot": [
        bad("unknown-dtype", lambda: NN.one_hot(i32(3), 3, dtype="float99"), rt.OpTypeError, "dtype"),
        bad("float-classes", lambda: NN.one_hot(i32(3), 2.5), rt.OpTypeError, "num_classes"),
    ],
    # -- rt.linalg
    **{
        f"linalg.{fn}": [
            bad("1-d", lambda fn=fn: getattr(LA, fn)(f64(3)), rt.ShapeError),
            bad("str-operand", lambda fn=fn: getattr(LA, fn)("abc"), rt.OpTypeError),
        ]
        for fn in (
            "cholesky",
            "cond",
            "det",
            "diagonal",
            "eig",
            "eigh",
            "eigvals",
            "eigvalsh",
            "inv",
            "lu_factor",
            "matrix_norm",
            "matrix_transpose",
            "pinv",
            "qr",
            "slogdet",
            "svd",
            "svdvals",
            "trace",
        )
    },
    "linalg.solve": [
        bad("shape-mismatch", lambda: LA.solve(spd(3), f64(4)), rt.ShapeError),
        bad("pos-shape-mismatch", lambda: LA.solve(spd(3), f64(4, 2), assume_a="pos"), rt.ShapeError, "assume_a"),
        bad("bad-assume-a", lambda: LA.solve(spd(3), f64(3), assume_a="tri"), rt.ShapeError, "'tri'"),
        bad("str-operand", lambda: LA.solve(spd(2), "a"), rt.OpTypeError),
    ],
    "linalg.lu_solve": [
        bad(
            "pivot-out-of-range",
            lambda: LA.lu_solve((spd(3), rt.asarray(np.array([0, 5, 1], np.int32))), f64(3)),
            rt.OpValueError,
            "piv",
        ),
        bad("str-operand", lambda: LA.lu_solve(_lu(), "abc"), rt.OpTypeError),
    ],
    "linalg.matrix_power": [
        bad("float-exponent", lambda: LA.matrix_power(spd(2), 1.5), rt.OpTypeError),
        bad("str-operand", lambda: LA.matrix_power("abc", 2), rt.OpTypeError),
    ],
    "linalg.norm": [
        bad("float-axis", lambda: LA.norm(f64(3), axis=0.5), rt.ShapeError),
        bad("str-operand", lambda: LA.norm("abc"), rt.OpTypeError),
    ],
    "linalg.lstsq": [
        bad("shape-mismatch", lambda: LA.lstsq(f64(3, 2), f64(4)), rt.ShapeError, "b must be"),
        bad("str-operand", lambda: LA.lstsq(f64(3, 2), "abc"), rt.OpTypeError),
    ],
    "linalg.matrix_rank": [
        bad("tol-and-rtol", lambda: LA.matrix_rank(f64(3, 3), 0.1, tol=0.1), rt.OpValueError, "tol"),
        bad("str-operand", lambda: LA.matrix_rank("abc"), rt.OpTypeError),
    ],
    "linalg.multi_dot": [
        bad("one-array", lambda: LA.multi_dot([f64(2, 2)]), rt.ShapeError, "at least two"),
        bad("shape-mismatch", lambda: LA.multi_dot([f64(2, 3), f64(2, 3)]), rt.ShapeError, "f64[2,3]"),
    ],
    "linalg.cross": [
        bad("not-3-vectors", lambda: LA.cross(f64(2), f64(2)), rt.ShapeError, "3-vectors"),
        bad("str-operand", lambda: LA.cross(f64(3), "abc"), rt.OpTypeError),
    ],
    "linalg.vecdot": [
        bad("size-mismatch", lambda: LA.vecdot(f64(3), f64(4)), rt.ShapeError, "f64[3]", "f64[4]"),
        bad("str-operand", lambda: LA.vecdot("abc", f64(3)), rt.OpTypeError),
    ],
    "linalg.tensorinv": [
        bad("bad-ind", lambda: LA.tensorinv(f64(2, 2), 0), rt.ShapeError, "ind"),
        bad("str-operand", lambda: LA.tensorinv("abc"), rt.OpTypeError),
    ],
    "linalg.tensorsolve": [
        bad("shape-mismatch", lambda: LA.tensorsolve(f64(2, 3, 6), f64(3, 2)), rt.ShapeError, "b's shape"),
        bad("str-operand", lambda: LA.tensorsolve("abc", f64(2)), rt.OpTypeError),
    ],
    "linalg.vector_norm": [
        bad("float-axis", lambda: LA.vector_norm(f64(3), axis=0.5), rt.ShapeError),
        bad("str-operand", lambda: LA.vector_norm("abc"), rt.OpTypeError),
    ],
    # -- rt.fft, and the op function rt.lax.fft
    "lax.fft": [
        bad("unknown-type", lambda: R.lax.fft(c128(4), "DCT", (4,)), rt.ShapeError, "fft_type"),
        bad("float-lengths", lambda: R.lax.fft(c128(4), "FFT", (4.0,)), rt.ShapeError, "fft_lengths"),
        bad("str-operand", lambda: R.lax.fft("abc", "FFT", (3,)), rt.OpTypeError),
    ],
    **{
        f"fft.{fn}": [
            bad("bad-norm", lambda fn=fn: getattr(FT, fn)(c128(4, 4), norm="unitary"), rt.OpValueError, "norm"),
            bad("float-axis", lambda fn=fn: getattr(FT, fn)(c128(4, 4), axis=0.5), rt.ShapeError, "axis"),
            bad("axis-out-of-range", lambda fn=fn: getattr(FT, fn)(c128(4, 4), axis=2), rt.ShapeError, "axis 2"),
            bad("zero-points", lambda fn=fn: getattr(FT, fn)(c128(4, 4), n=0), rt.ShapeError, "positive"),
            bad("str-operand", lambda fn=fn: getattr(FT, fn)("abc"), rt.OpTypeError),
        ]
        for fn in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
    },
    **{
        f"fft.{fn}": [
            bad("bad-norm", lambda fn=fn: getattr(FT, fn)(c128(4, 4), norm="unitary"), rt.OpValueError, "norm"),
            bad("repeated-axes", lambda fn=fn: getattr(FT, fn)(c128(4, 4), axes=(0, 0)), rt.ShapeError, "repeats"),
            bad("s-axes-lengths", lambda fn=fn: getattr(FT, fn)(c128(4, 4), s=(4,), axes=(0, 1)), rt.ShapeError, "s "),
            bad("str-operand", lambda fn=fn: getattr(FT, fn)("abc"), rt.OpTypeError),
        ]
        for fn in ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2")
    },
    **{
        f"fft.{fn}": [
            bad("float-n", lambda fn=fn: getattr(FT, fn)(2.5), rt.OpTypeError, "n must be an int"),
            bad("zero-n", lambda fn=fn: getattr(FT, fn)(0), rt.OpValueError, "positive"),
            bad("unknown-dtype", lambda fn=fn: getattr(FT, fn)(4, dtype="float99"), rt.OpTypeError, "dtype"),
        ]
        for fn in ("fftfreq", "rfftfreq")
    },
    **{
        f"fft.{fn}": [
            bad("axis-out-of-range", lambda fn=fn: getattr(FT, fn)(f64(3), axes=1), rt.ShapeError, "axes 1"),
            bad("str-operand", lambda fn=fn: getattr(FT, fn)("abc"), rt.OpTypeError),
        ]
        for fn in ("fftshift", "ifftshift")
    },
}

# -- NumPy's math functions, NaN-ignoring reductions and array helpers (runtime/numpy/math_functions.py,
# nan_functions.py, arrays.py)
NUMPY_UNARY = ["angle", "around", "deg2rad", "degrees", "fabs", "iscomplex", "isneginf", "isposinf", "isreal",
               "iscomplexobj", "isrealobj", "positive", "rad2deg", "radians", "rint", "signbit", "sinc", "trunc",
               "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin",
               "nancumsum", "nancumprod", "nanmedian", "median", "ptp", "average", "ediff1d", "flipud", "diagflat",
               "trapezoid", "ndim", "shape", "size"]  # fmt: skip
NUMPY_BINARY = ["copysign", "float_power", "fmod", "heaviside", "hypot", "logaddexp", "logaddexp2"]
ROWS.update({fn: [_no_array(fn)] for fn in NUMPY_UNARY})
ROWS.update({fn: [_mismatch(fn), _no_array(fn, lambda: f64(3))] for fn in NUMPY_BINARY})
ROWS.update(
    {
        "hypot": [*ROWS["hypot"], bad("complex", lambda: R.hypot(c128(3), c128(3)), rt.OpTypeError, "complex")],
        "fabs": [*ROWS["fabs"], bad("complex", lambda: R.fabs(c128(3)), rt.OpTypeError, "complex")],
        "positive": [*ROWS["positive"], bad("bool", lambda: R.positive(rt.asarray([True])), rt.OpTypeError, "bool")],
        "size": [*ROWS["size"], bad("axis-out-of-range", lambda: R.size(f64(2, 3), 2), rt.ShapeError, "axis")],
        "nanmax": [*ROWS["nanmax"], bad("complex", lambda: R.nanmax(c128(3)), rt.OpValueError, "complex")],
        "median": [*ROWS["median"], bad("axis-out-of-range", lambda: R.median(f64(3), 1), rt.ShapeError)],
        "average": [
            *ROWS["average"],
            bad("weights-shape", lambda: R.average(f64(2, 3), weights=f64(2)), rt.ShapeError, "weights"),
        ],
        **{
            fn: [
                bad("q-out-of-range", lambda fn=fn: _fn(fn)(f64(4), 250.0), rt.OpValueError, "q"),
                bad("method", lambda fn=fn: _fn(fn)(f64(4), 0.5, method="nearest"), rt.OpValueError, "method"),
                bad("str-operand", lambda fn=fn: _fn(fn)("abc", 0.5), rt.OpTypeError),
            ]
            for fn in ("quantile", "percentile", "nanquantile", "nanpercentile")
        },
        "diff": [bad("negative-n", lambda: R.diff(f64(3), -1), rt.ShapeError, "n"), _no_array("diff")],
        "append": [_no_array("append", lambda: f64(3))],
        "fliplr": [bad("1-d", lambda: R.fliplr(f64(3)), rt.ShapeError), _no_array("fliplr")],
        "rot90": [
            bad("same-axes", lambda: R.rot90(f64(2, 2), 1, (0, 0)), rt.ShapeError, "repeats"),
            _no_array("rot90"),
        ],
        "column_stack": [bad("str-operand", lambda: R.column_stack(["abc"]), rt.OpTypeError)],
        "dstack": [bad("str-operand", lambda: R.dstack(["abc"]), rt.OpTypeError)],
        "array_split": [
            bad("no-sections", lambda: R.array_split(f64(4), 0), rt.ShapeError, "sections"),
            bad("str-operand", lambda: R.array_split("abc", 2), rt.OpTypeError),
        ],
        "hsplit": [
            bad("uneven", lambda: R.hsplit(f64(2, 3), 2), rt.ShapeError),
            bad("str-operand", lambda: R.hsplit("abc", 2), rt.OpTypeError),
        ],
        "vsplit": [
            bad("1-d", lambda: R.vsplit(f64(4), 2), rt.ShapeError, "2 dimensions"),
            bad("str-operand", lambda: R.vsplit("abc", 2), rt.OpTypeError),
        ],
        "dsplit": [
            bad("2-d", lambda: R.dsplit(f64(2, 2), 2), rt.ShapeError, "3 dimensions"),
            bad("str-operand", lambda: R.dsplit("abc", 2), rt.OpTypeError),
        ],
        "broadcast_shapes": [bad("incompatible", lambda: R.broadcast_shapes((2,), (3,)), rt.ShapeError)],
        "broadcast_arrays": [bad("incompatible", lambda: R.broadcast_arrays(f64(2), f64(3)), rt.ShapeError)],
        "kron": [_no_array("kron", lambda: f64(3))],
        "vdot": [_mismatch("vdot"), _no_array("vdot", lambda: f64(3))],
        "tri": [bad("float-n", lambda: R.tri(2.5), rt.OpTypeError, "N")],
    }
)
ROWS.update(
    {
        "searchsorted": [
            bad("2-d", lambda: R.searchsorted(f64(2, 2), f64(3)), rt.ShapeError, "1-D"),
            bad("side", lambda: R.searchsorted(f64(3), f64(2), side="middle"), rt.OpValueError, "side"),
            _no_array("searchsorted", lambda: f64(3)),
        ],
        "digitize": [
            bad("2-d-bins", lambda: R.digitize(f64(3), f64(2, 2)), rt.ShapeError, "bins"),
            _no_array("digitize", lambda: f64(3)),
        ],
        "interp": [
            bad("lengths", lambda: R.interp(f64(3), f64(3), f64(4)), rt.ShapeError, "xp and fp"),
            bad("period", lambda: R.interp(f64(3), f64(3), f64(3), period=2.0), rt.OpValueError, "period"),
        ],
        "isin": [_no_array("isin", lambda: f64(3))],
        "polyval": [
            bad("2-d", lambda: R.polyval(f64(2, 2), f64(3)), rt.ShapeError, "1-D"),
            _no_array("polyval", lambda: f64(3)),
        ],
        "vander": [bad("2-d", lambda: R.vander(f64(2, 2)), rt.ShapeError, "1-D"), _no_array("vander")],
        **{
            fn: [
                bad("mode", lambda fn=fn: _fn(fn)(f64(3), f64(2), "middle"), rt.OpValueError, "mode"),
                bad("2-d", lambda fn=fn: _fn(fn)(f64(2, 2), f64(2)), rt.ShapeError, "1-D"),
                _no_array(fn, lambda: f64(3)),
            ]
            for fn in ("convolve", "correlate")
        },
        "cov": [bad("3-d", lambda: R.cov(f64(2, 2, 2)), rt.ShapeError, "2-D"), _no_array("cov")],
        "corrcoef": [bad("3-d", lambda: R.corrcoef(f64(2, 2, 2)), rt.ShapeError, "2-D"), _no_array("corrcoef")],
        **{
            w: [bad("float-m", lambda w=w: _fn(w)(2.5), rt.OpTypeError, "M")]
            for w in ("hanning", "hamming", "blackman", "bartlett")
        },
        "logspace": [bad("axis", lambda: R.logspace(0.0, 1.0, 3, axis=1), rt.OpValueError, "axis")],
        "geomspace": [bad("zero", lambda: R.geomspace(0.0, 1.0, 3), rt.OpValueError, "non-zero")],
        "matvec": [
            bad("1-d-matrix", lambda: R.matvec(f64(3), f64(3)), rt.ShapeError, "2-D"),
            _no_array("matvec", lambda: f64(2, 3)),
        ],
        "vecmat": [
            bad("1-d-matrix", lambda: R.vecmat(f64(3), f64(3)), rt.ShapeError, "2-D"),
            _no_array("vecmat", lambda: f64(3)),
        ],
    }
)
ROWS.update(array_api_rows(bad, f64, i32))

#: rows whose function still names another, or raises a builtin error, each with the file that owns
#: the fix (strict xfail: a fix there makes the row pass and the mark must go); none today
PENDING: dict[tuple[str, str], str] = {}

POLICIES = rt.policies()
#: the op labels an internal error would carry (``dot_general: ``, ``[full operands``)
_OP_NAMES = sorted(set(ops.OPS) | {"asarray"})
_ALTERNATIVES = "|".join(re.escape(op) for op in sorted(_OP_NAMES, key=len, reverse=True))
_INTERNAL = re.compile(rf"(?<![\w.])({_ALTERNATIVES}): |\[({_ALTERNATIVES}) operands ")


def test_every_public_function_has_error_rows() -> None:
    functions = public_functions()
    missing = sorted(set(functions) - set(ROWS))
    assert not missing, f"public functions without error rows (add them to ROWS): {missing}"
    stale = sorted(set(ROWS) - set(functions))
    assert not stale, f"rows for names that are no public function: {stale}"
    assert all(ROWS[name] for name in functions), "each function needs at least one bad call"


def _cases() -> list[Any]:
    out = []
    for name, rows in ROWS.items():
        for r in rows:
            owner = PENDING.get((name, r.label))
            marks = [pytest.mark.xfail(strict=True, reason=owner)] if owner else []
            out.append(pytest.param(name, r, marks=marks, id=f"{name}-{r.label}"))
    return out


def check(name: str, r: Bad, policy: str) -> None:
    """``r`` raises its castwise error, saying ``name:`` first, the policy, no internal op."""
    with rt.use_policy(policy), pytest.raises(Exception) as info:
        r.call()
    err = info.value
    message = str(err)
    assert isinstance(err, r.cls), f"{type(err).__name__} where {r.cls.__name__} was expected: {message}"
    assert isinstance(err, rt.CastwiseError) and type(err).__module__.startswith("runtime."), (
        f"{type(err).__module__}.{type(err).__name__} is not castwise's: {message}"
    )
    # what the user called: rt.lax's op functions say the op's name, as lax's do; the array API
    # namespace's functions say theirs (xp.sum, xp.linalg.cholesky)
    called = name.removeprefix("lax.").removeprefix("array_api.")
    assert message.startswith(f"{called}:"), message
    assert f"policy {policy!r}" in message, message
    internal = {m.group(1) or m.group(2) for m in _INTERNAL.finditer(message)} - {called}
    assert not internal, f"names the internal {sorted(internal)}: {message}"
    for word in r.words:
        assert word in message, message


@pytest.mark.parametrize(("name", "r"), _cases())
def test_a_bad_call_raises_a_castwise_error_naming_the_function(name: str, r: Bad) -> None:
    """Under every registered policy (one test per row, the policies in a loop: pytest's own cost
    per test would otherwise be most of this file's time)."""
    if r.cls is rt.OpMemoryError and rt.core.executor.MAX_OUTPUT_BYTES is None:
        pytest.skip("this machine does not report its memory: nothing refuses a huge array before allocating")
    for policy in POLICIES:
        check(name, r, policy)


@pytest.mark.parametrize(
    "message",
    [
        "matmul: dot_general: sizes differ [dot_general operands x:f64[3]; policy 'jax']",
        "matmul: sizes differ [dot_general operands x:f64[3]; policy 'jax']",
        "power: an operand is no array: asarray: cannot infer [power operands x:f64[3]; policy 'jax']",
        "matmul: sizes differ [matmul operands x:f64[3]; policy 'numpy']",
        "dot_general: sizes differ [matmul operands x:f64[3]; policy 'jax']",
    ],
)
def test_the_check_refuses_what_it_is_there_to_refuse(message: str) -> None:
    """The check itself: an internal label, a missing policy or another function's name fails."""

    def raise_it() -> None:
        raise rt.OpTypeError(message)

    with pytest.raises(AssertionError):
        check("matmul" if "matmul" in message else "power", Bad("fake", raise_it, rt.OpTypeError), "jax")
    with pytest.raises(AssertionError):  # a builtin error, though its words are right
        check("matmul", Bad("fake", lambda: np.add("a", 1.0), TypeError), "jax")

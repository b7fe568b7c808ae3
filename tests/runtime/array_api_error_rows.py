"""The error rows of rt.array_api's functions for tests/runtime/test_errors_everywhere.py: each
public function of the namespace (``array_api.<name>``, ``array_api.linalg.<name>``) with bad calls
whose errors must name what the user called (``sum:``, ``linalg.cholesky:``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import runtime as rt

XP: Any = rt.array_api

UNARY = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "conj", "cos", "cosh",
    "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan", "log", "log10", "log1p", "log2", "logical_not",
    "negative", "positive", "real", "reciprocal", "round", "sign", "signbit", "sin", "sinh", "sqrt", "square",
    "tan", "tanh", "trunc", "unique_all", "unique_counts", "unique_inverse", "unique_values", "nonzero",
    "matrix_transpose", "empty_like", "zeros_like", "ones_like", "unstack",
]  # fmt: skip
BINARY = [
    "add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal", "hypot", "less",
    "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
    "nextafter", "not_equal", "pow", "remainder", "subtract", "matmul", "vecdot",
]  # fmt: skip
INTEGER_BINARY = ["bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor"]
REDUCTIONS = ["max", "min", "sum", "prod", "mean", "var", "std", "all", "any", "count_nonzero", "argmax", "argmin"]
DEVICE = ["zeros", "ones", "empty"]
LINALG_UNARY = [
    "cholesky", "det", "diagonal", "eigh", "eigvalsh", "inv", "matrix_norm", "qr", "slogdet", "svd", "svdvals",
    "vector_norm", "matrix_transpose",
]  # fmt: skip
LINALG_BINARY = ["matmul", "solve", "tensordot", "vecdot", "outer"]


def array_api_rows(bad: Callable[..., Any], f64: Callable[..., Any], i32: Callable[..., Any]) -> dict[str, list[Any]]:
    """The rows, built with the table's own ``bad`` and operand makers."""

    def no_array(fn: Callable[..., Any], *before: Any) -> Any:
        return bad("str-operand", lambda: fn(*before, "abc"), rt.OpTypeError)

    def mismatch(fn: Callable[..., Any], make: Callable[..., Any] = f64) -> Any:
        return bad("shape-mismatch", lambda: fn(make(3), make(4)), rt.ShapeError)

    la = XP.linalg
    rows: dict[str, list[Any]] = {
        **{f"array_api.{n}": [no_array(getattr(XP, n))] for n in UNARY},
        **{f"array_api.{n}": [mismatch(getattr(XP, n)), no_array(getattr(XP, n), f64(3))] for n in BINARY},
        **{f"array_api.{n}": [mismatch(getattr(XP, n), i32), no_array(getattr(XP, n), i32(3))] for n in INTEGER_BINARY},
        **{
            f"array_api.{n}": [
                bad("float-axis", lambda n=n: getattr(XP, n)(f64(2, 3), axis=0.5), rt.ShapeError),
                no_array(getattr(XP, n)),
            ]
            for n in REDUCTIONS
        },
        **{
            f"array_api.{n}": [
                bad("device", lambda n=n: getattr(XP, n)((2,), device="gpu"), XP.DeviceError, "rt.cpu"),
                bad("negative-shape", lambda n=n: getattr(XP, n)((-2,)), rt.ShapeError),
            ]
            for n in DEVICE
        },
        **{f"array_api.linalg.{n}": [no_array(getattr(la, n))] for n in LINALG_UNARY},
        **{f"array_api.linalg.{n}": [no_array(getattr(la, n), f64(3, 3))] for n in LINALG_BINARY},
        "array_api.linalg.matrix_power": [
            bad("float-exponent", lambda: la.matrix_power(f64(2, 2), 1.5), rt.OpTypeError)
        ],
        "array_api.full": [bad("bad-fill", lambda: XP.full((2,), "a"), rt.OpTypeError, "fill_value")],
        "array_api.full_like": [no_array(XP.full_like)]
        if False
        else [bad("str-operand", lambda: XP.full_like("abc", 1), rt.OpTypeError)],
        "array_api.asarray": [
            bad("copy-false-list", lambda: XP.asarray([1, 2], copy=False), XP.CopyError, "copy=False"),
            bad("copy-false-convert", lambda: XP.asarray(f64(2), dtype=rt.float32, copy=False), XP.CopyError),
            bad("device", lambda: XP.asarray([1.0], device="gpu"), XP.DeviceError),
        ],
        "array_api.astype": [
            bad("bad-dtype", lambda: XP.astype(f64(2), "nope"), rt.OpTypeError, "nope"),
            bad("device", lambda: XP.astype(f64(2), rt.float32, device="tpu"), XP.DeviceError),
        ],
        "array_api.arange": [bad("device", lambda: XP.arange(3, device="gpu"), XP.DeviceError)],
        "array_api.eye": [bad("device", lambda: XP.eye(3, device="gpu"), XP.DeviceError)],
        "array_api.linspace": [bad("device", lambda: XP.linspace(0, 1, 5, device="gpu"), XP.DeviceError)],
        "array_api.from_dlpack": [bad("no-dlpack", lambda: XP.from_dlpack(3), rt.OpTypeError, "__dlpack__")],
        "array_api.meshgrid": [
            bad("bad-indexing", lambda: XP.meshgrid(f64(3), indexing="q"), rt.ShapeError, "indexing")
        ],
        "array_api.tril": [bad("vector", lambda: XP.tril(f64(3)), rt.ShapeError)],
        "array_api.triu": [bad("vector", lambda: XP.triu(f64(3)), rt.ShapeError)],
        "array_api.can_cast": [bad("bad-dtype", lambda: XP.can_cast("abc", rt.float32), rt.OpTypeError, "abc")],
        "array_api.finfo": [bad("integer", lambda: XP.finfo(rt.int8), rt.OpTypeError, "int8")],
        "array_api.iinfo": [bad("float", lambda: XP.iinfo(rt.float32), rt.OpTypeError, "float32")],
        "array_api.isdtype": [bad("bad-kind", lambda: XP.isdtype(rt.float32, "floats"), rt.OpTypeError, "floats")],
        "array_api.result_type": [bad("bad-dtype", lambda: XP.result_type("abc"), rt.OpTypeError, "abc")],
        "array_api.clip": [no_array(XP.clip)],
        "array_api.where": [
            bad("shape-mismatch", lambda: XP.where(f64(3) > 0, f64(4), 0.0), rt.ShapeError),
            no_array(XP.where, f64(3) > 0, f64(3)),
        ],
        "array_api.broadcast_arrays": [mismatch(XP.broadcast_arrays)],
        "array_api.broadcast_to": [bad("bad-shape", lambda: XP.broadcast_to(f64(3), (4,)), rt.ShapeError)],
        "array_api.concat": [
            bad("rank-mismatch", lambda: XP.concat([f64(3), f64(2, 3)]), rt.ShapeError),
            bad("zero-d", lambda: XP.concat([f64(), f64()]), rt.ShapeError),
        ],
        "array_api.stack": [bad("shape-mismatch", lambda: XP.stack([f64(3), f64(4)]), rt.ShapeError)],
        "array_api.expand_dims": [bad("axis-out-of-range", lambda: XP.expand_dims(f64(3), axis=5), XP.AxisError)],
        "array_api.flip": [bad("axis-out-of-range", lambda: XP.flip(f64(3), axis=2), rt.ShapeError)],
        "array_api.moveaxis": [bad("axis-out-of-range", lambda: XP.moveaxis(f64(3), 0, 3), rt.ShapeError)],
        "array_api.permute_dims": [bad("not-a-permutation", lambda: XP.permute_dims(f64(2, 3), (0, 0)), rt.ShapeError)],
        "array_api.repeat": [bad("negative-count", lambda: XP.repeat(f64(3), -1), rt.ShapeError)],
        "array_api.reshape": [bad("bad-size", lambda: XP.reshape(f64(6), (4, -1)), rt.ShapeError)],
        "array_api.roll": [bad("float-shift", lambda: XP.roll(f64(3), 1.5), rt.ShapeError)],
        "array_api.squeeze": [bad("not-size-1", lambda: XP.squeeze(f64(2, 3), axis=0), rt.ShapeError, "size 2")],
        "array_api.tile": [bad("negative-reps", lambda: XP.tile(f64(3), (-1,)), rt.ShapeError)],
        "array_api.take": [bad("str-operand", lambda: XP.take("abc", rt.asarray([0])), rt.OpTypeError)],
        "array_api.take_along_axis": [
            bad(
                "rank-mismatch", lambda: XP.take_along_axis(f64(2, 3), rt.asarray(np.array([0])), axis=1), rt.ShapeError
            )
        ],
        "array_api.tensordot": [bad("shape-mismatch", lambda: XP.tensordot(f64(3), f64(4), axes=1), rt.ShapeError)],
        "array_api.argsort": [bad("axis-out-of-range", lambda: XP.argsort(f64(3), axis=2), rt.ShapeError)],
        "array_api.sort": [bad("axis-out-of-range", lambda: XP.sort(f64(3), axis=2), rt.ShapeError)],
        "array_api.searchsorted": [
            bad("matrix", lambda: XP.searchsorted(f64(2, 2), f64(3)), rt.ShapeError, "1-D"),
            bad("bad-side", lambda: XP.searchsorted(f64(3), f64(3), side="middle"), rt.OpValueError, "side"),
        ],
        "array_api.isin": [no_array(XP.isin, f64(3))],
        "array_api.cumulative_sum": [bad("no-axis", lambda: XP.cumulative_sum(f64(2, 3)), rt.ShapeError, "axis")],
        "array_api.cumulative_prod": [bad("no-axis", lambda: XP.cumulative_prod(f64(2, 3)), rt.ShapeError, "axis")],
        "array_api.diff": [bad("negative-n", lambda: XP.diff(f64(3), n=-1), rt.ShapeError, "n must")],
    }
    return rows

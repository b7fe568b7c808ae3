"""Kernels give IEEE results without NumPy's RuntimeWarnings, as XLA and JAX do.

``inf - inf``, ``1 / 0``, a float16 sum past 65504, ``log(-1)``, a NaN converted to an
integer: each is a defined result, NumPy's warning about it is noise. Every op family that
computes on floats runs here with warnings as errors, on the eager paths (the binary fast
path, a signature seen before, the general path) and the graph interpreter, and its values
are NumPy's IEEE values. The caller's own NumPy error state is left as it was, after an
exception too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.core import kernels
from runtime.core import lax as F
from runtime.core.graph import evaluate, trace

INF, NAN = np.inf, np.nan


def _arr(values: list[float], dtype: Any = rt.float32) -> rt.Tensor:
    return rt.asarray(np.array(values, np.float64), dtype=dtype)


#: (name, castwise op, operands, NumPy's IEEE result of the same computation)
ROWS: list[tuple[str, Callable[..., Any], tuple[Any, ...], Callable[[], np.ndarray]]] = [
    ("sub inf-inf f32", F.sub, (_arr([INF, 1]), _arr([INF, 1])), lambda: np.array([NAN, 0], np.float32)),
    ("sub inf-inf f64", F.sub, (_arr([INF], rt.float64), _arr([INF], rt.float64)), lambda: np.array([NAN])),
    ("add overflow f16", F.add, (_arr([60000], rt.float16), _arr([60000], rt.float16)),
     lambda: np.array([INF], np.float16)),
    ("mul overflow bf16", F.mul, (_arr([1e38], rt.bfloat16), _arr([1e38], rt.bfloat16)), lambda: np.array([INF])),
    ("div by zero f32", F.div, (_arr([1, 0, -1]), _arr([0, 0, 0])), lambda: np.array([INF, NAN, -INF], np.float32)),
    ("div by zero c64", F.div, (_arr([1], rt.complex64), _arr([0], rt.complex64)),
     lambda: np.array([complex(INF, NAN)], np.complex64)),
    ("rem by zero f32", F.rem, (_arr([1]), _arr([0])), lambda: np.array([NAN], np.float32)),
    ("pow 0**-1", F.pow, (_arr([0]), _arr([-1])), lambda: np.array([INF], np.float32)),
    ("log -1 and 0", F.log, (_arr([-1, 0]),), lambda: np.array([NAN, -INF], np.float32)),
    ("sqrt -1", F.sqrt, (_arr([-1], rt.float64),), lambda: np.array([NAN])),
    ("exp overflow f32", F.exp, (_arr([1000]),), lambda: np.array([INF], np.float32)),
    ("reduce_sum overflow f16", lambda x: F.reduce_sum(x, axes=(0,)), (_arr([60000, 60000], rt.float16),),
     lambda: np.array(INF, np.float16)),
    ("reduce_sum inf-inf", lambda x: F.reduce_sum(x, axes=(0,)), (_arr([INF, -INF]),), lambda: np.array(NAN)),
    ("cumsum inf-inf", lambda x: F.cumsum(x, axis=0), (_arr([INF, -INF]),), lambda: np.array([INF, NAN])),
    ("dot inf*0", lambda x, y: F.dot_general(x, y, (((0,), (0,)), ((), ()))), (_arr([INF, 1]), _arr([0, 1])),
     lambda: np.array(NAN)),
    ("convert nan to i32", lambda x: F.convert(x, rt.int32), (_arr([NAN, 1e30]),),
     lambda: np.array([0, 2**31 - 1], np.int32)),
    ("convert 1e300 to f32", lambda x: F.convert(x, rt.float32), (_arr([1e300], rt.float64),),
     lambda: np.array([INF], np.float32)),
    ("mixed f16 + f64 overflow", F.add, (_arr([1], rt.float16), _arr([1e300], rt.float64)), lambda: np.array([1e300])),
]  # fmt: skip


def _same(got: rt.Tensor, want: np.ndarray) -> None:
    g = np.asarray(got.numpy(), dtype=np.complex128 if np.iscomplexobj(want) else np.float64)
    w = np.asarray(want, dtype=g.dtype)
    assert g.shape == w.shape and np.array_equal(g, w, equal_nan=True), (g, w)


@pytest.mark.parametrize(("name", "op", "operands", "want"), ROWS, ids=[r[0] for r in ROWS])
def test_ieee_results_without_warnings(name: str, op: Callable[..., Any], operands: tuple[Any, ...],
                                       want: Callable[[], np.ndarray]) -> None:  # fmt: skip
    with np.errstate(all="ignore"):
        expected = want()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = op(*operands)  # the general path (validates the signature) ...
        again = op(*operands)  # ... and the memoised one
        replayed = evaluate(trace(op, *operands), *operands)  # the graph interpreter
    for got in (first, again, replayed[0] if isinstance(replayed, (list, tuple)) else replayed):
        _same(got, expected)


def test_the_callers_numpy_error_state_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    x = _arr([INF])
    before = np.geterr()
    F.sub(x, x)
    assert np.geterr() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):  # NumPy outside castwise still warns
            np.array([INF]) - np.array([INF])

    def broken(*_: Any, **__: Any) -> Any:
        raise ValueError("broken kernel")

    monkeypatch.setitem(kernels.KERNELS, "neg", broken)
    with pytest.raises(ValueError, match="broken kernel"):
        F.neg(_arr([1]))
    assert np.geterr() == before  # restored after the exception too
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        np.array([1.0]) / 0.0  # and a caller's own setting is still honoured

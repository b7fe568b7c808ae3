"""The parity sweep's rows of the reduction ops (``runtime.core.ops`` families ``reduce``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autodiff.parity._common import (
    _ALL_EXACT,
    _INT_EXACT,
    _REAL_EXACT,
    Gen,
    Slot,
    Spec,
    _eps,
    _lax,
    _structural_spec,
    draw,
    draw_distinct,
)
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.dtypes import int32 as _int32


def _gen_distinct(axis: int) -> Gen:
    """Operands of a max/min reduction over ``axis``: no ties within a reduced group."""

    def gen(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
        slot = slots[0]
        assert isinstance(slot, DType)
        return [draw_distinct(slot, (3, 4), axis, rng)]

    return gen


def _gen_half_ulps(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """Rows ``[1, e, e, e]`` with ``e`` half an ulp of 1: summed one by one in the dtype (as
    XLA's CPU reduction does) each ``+ e`` rounds back to 1; a wider accumulator or another
    order gives ``1 + 2e`` or more."""
    slot = slots[0]
    assert isinstance(slot, DType)
    if not slot.is_inexact:
        return [draw(slot, "any", (3, 4), rng)]
    e = _eps(slot) / 2
    rows = np.array([[1.0, e, e, e], [1.0, e, e, e], [0.5, e / 2, e / 2, e / 2]])
    if slot.kind == "complex":
        rows = rows + 1j * rows[::-1]
    return [rows.astype(slot.storage)]


def _gen_ties_and_nans(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """argmax/argmin operands: few distinct values (ties in every row), and a NaN in two rows
    of a float (two NaNs in one), so the first-index and NaN rules are both exercised."""
    slot = slots[0]
    assert isinstance(slot, DType)
    x = draw(slot, "any", (3, 4), rng)
    x[:, 1] = x[:, 3]
    if slot.kind == "float" and np.isnan(np.array(np.nan).astype(slot.storage)):
        x[1, 2] = np.nan
        x[2, 0] = x[2, 3] = np.nan
    return [x]


def _scan_spec(op: str, reverse: bool, exact: frozenset[str], domain: str = "any") -> Spec:
    name = f"{op}-reverse" if reverse else op
    return _structural_spec(name, op, lambda x: getattr(F, op)(x, 1, reverse),
                            lambda x: getattr(_lax(), op)(x, axis=1, reverse=reverse), (3, 5), exact=exact,
                            domain=domain)  # fmt: skip


def specs() -> list[Spec]:
    """The sweep's rows of the reduction ops."""
    return [
        _structural_spec("reduce_sum", "reduce_sum", lambda x: F.reduce_sum(x, (1,)),
                         lambda x: _lax().reduce_sum(x, (1,)), (3, 4), exact=_INT_EXACT),
        _structural_spec("reduce_sum-rounding", "reduce_sum", lambda x: F.reduce_sum(x, (1,)),
                         lambda x: _lax().reduce_sum(x, (1,)), (3, 4), gen=_gen_half_ulps),
        _structural_spec("reduce_prod", "reduce_prod", lambda x: F.reduce_prod(x, (1,)),
                         lambda x: _lax().reduce_prod(x, (1,)), (3, 4), exact=_INT_EXACT),
        _structural_spec("reduce_max", "reduce_max", lambda x: F.reduce_max(x, (1,)),
                         lambda x: _lax().reduce_max(x, (1,)), (3, 4), gen=_gen_distinct(1)),
        _structural_spec("reduce_min", "reduce_min", lambda x: F.reduce_min(x, (0,)),
                         lambda x: _lax().reduce_min(x, (0,)), (3, 4), gen=_gen_distinct(0)),
        _structural_spec("argmax", "argmax", lambda x: F.argmax(x, 1, _int32),
                         lambda x: _lax().argmax(x, 1, np.int32), (3, 4), gen=_gen_ties_and_nans),
        _structural_spec("argmin", "argmin", lambda x: F.argmin(x, 0, _int32),
                         lambda x: _lax().argmin(x, 0, np.int32), (3, 4), gen=_gen_ties_and_nans),
        _structural_spec("reduce_and", "reduce_and", lambda x: F.reduce_and(x, (1,)),
                         lambda x: _lax().reduce_and(x, (1,)), (3, 4)),
        _structural_spec("reduce_or", "reduce_or", lambda x: F.reduce_or(x, (0, 1)),
                         lambda x: _lax().reduce_or(x, (0, 1)), (3, 4)),
        _structural_spec("reduce_xor", "reduce_xor", lambda x: F.reduce_xor(x, (0,)),
                         lambda x: _lax().reduce_xor(x, (0,)), (3, 4)),
        _structural_spec("reduce_precision", "reduce_precision", lambda x: F.reduce_precision(x, 4, 3),
                         lambda x: _lax().reduce_precision(x, exponent_bits=4, mantissa_bits=3), (3, 4),
                         exact=_REAL_EXACT),
        _scan_spec("cumsum", False, _ALL_EXACT),
        _scan_spec("cumsum", True, _ALL_EXACT),
        _scan_spec("cumprod", False, _REAL_EXACT),  # complex products: XLA's multiply rounds otherwise
        _scan_spec("cumprod", True, _REAL_EXACT),
        _scan_spec("cummax", False, _ALL_EXACT),
        _scan_spec("cummax", True, _ALL_EXACT),
        _scan_spec("cummin", False, _ALL_EXACT),
        _scan_spec("cummin", True, _ALL_EXACT),
        _scan_spec("cumlogsumexp", False, frozenset()),  # exp and log1p: NumPy's, within tolerance of XLA's
        _scan_spec("cumlogsumexp", True, frozenset()),
    ]  # fmt: skip

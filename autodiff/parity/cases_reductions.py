"""The parity sweep's rows of the reduction ops (``runtime.ops`` families ``reduce``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autodiff.parity._common import _INT_EXACT, Gen, Slot, Spec, _eps, _lax, _structural_spec, draw, draw_distinct
from runtime import functions as F
from runtime.dtypes import DType


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
    ]  # fmt: skip

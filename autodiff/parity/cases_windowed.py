"""The parity sweep's rows of the windowed reductions (``runtime.core.ops`` family ``window``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows. The JAX references
are lax's primitives (``jax.lax.reduce_window`` with add/max/min from their identities binds
reduce_window_sum/max/min; select_and_gather_add and select_and_scatter_add have no public name and
are called from ``jax._src.lax.windowed_reductions``). max/min windows draw distinct values, so no
window has a tie for the derivatives to break differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from autodiff.parity._common import _ALL_EXACT, _INT_EXACT, Gen, Slot, Spec, _structural_spec, draw, draw_distinct
from runtime.core import lax as F
from runtime.core.dtypes import DType

#: a window with every geometry param in play (the base dilation puts holes between elements)
_GEOMETRY: Final[dict[str, Any]] = {
    "window_dimensions": (2, 2),
    "window_strides": (1, 2),
    "padding": ((1, 0), (0, 1)),
    "base_dilation": (1, 2),
    "window_dilation": (2, 1),
}
#: lax's select_and_scatter_add takes no dilation (nor, so, lax's VJP of a dilated max/min window)
_PLAIN: Final[dict[str, Any]] = {**_GEOMETRY, "base_dilation": (1, 1), "window_dilation": (1, 1)}
#: the same without window dilation: lax transposes a max window over a base-dilated operand
_BASE: Final[dict[str, Any]] = {**_GEOMETRY, "window_dilation": (1, 1)}
_SHAPE: Final = (3, 4)


def _windows() -> Any:
    from jax._src.lax import windowed_reductions

    return windowed_reductions


def _args(p: dict[str, Any]) -> tuple[Any, ...]:
    return (p["window_dimensions"], p["window_strides"], p["padding"], p["base_dilation"], p["window_dilation"])


def _distinct(slot: Slot, rng: np.random.Generator) -> Any:
    assert isinstance(slot, DType)
    try:
        return draw_distinct(slot, (1, _SHAPE[0] * _SHAPE[1]), 1, rng).reshape(_SHAPE)
    except ValueError:  # fewer distinct values than elements (float8_e8m0fnu): ties are unavoidable
        return draw(slot, "any", _SHAPE, rng)


def _gen_distinct(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    return [_distinct(slots[0], rng)]


def _gen_select(source_shape: tuple[int, ...]) -> Gen:
    """(tangents or source, operand): any values, and an operand without ties."""

    def gen(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
        first = slots[0]
        assert isinstance(first, DType)
        return [draw(first, "any", source_shape, rng), _distinct(slots[1], rng)]

    return gen


def _sgn(prim: str) -> Any:
    from jax import lax

    return lax.ge_p if prim == "ge" else lax.le_p


def specs() -> list[Spec]:
    """The sweep's rows of the windowed reductions."""
    plain_shape = (3, 2)  # the window output of _PLAIN on a (3, 4) operand
    return [
        _structural_spec("reduce_window_sum", "reduce_window_sum", lambda x: F.reduce_window_sum(x, **_GEOMETRY),
                         lambda x: _windows()._reduce_window_sum(x, *_args(_GEOMETRY)), _SHAPE, exact=_INT_EXACT),
        _structural_spec("reduce_window_max", "reduce_window_max", lambda x: F.reduce_window_max(x, **_BASE),
                         lambda x: _windows()._reduce_window_max(x, *_args(_BASE)), _SHAPE,
                         gen=_gen_distinct),
        _structural_spec("reduce_window_min", "reduce_window_min", lambda x: F.reduce_window_min(x, **_PLAIN),
                         lambda x: _windows()._reduce_window_min(x, *_args(_PLAIN)), _SHAPE,
                         gen=_gen_distinct),
        Spec("select_and_gather_add", "select_and_gather_add",
             lambda t, x: F.select_and_gather_add(t, x, "ge", **_BASE),
             lambda t, x: _windows()._select_and_gather_add(t, x, _sgn("ge"), *_args(_BASE)),
             ("tangents", "operand"), (_SHAPE, _SHAPE), ("any", "any"), promoted=(0, 1), plan_layout=(0, 1),
             gen=_gen_select(_SHAPE), exact=_ALL_EXACT),
        Spec("select_and_scatter_add", "select_and_scatter_add",
             lambda s, x: F.select_and_scatter_add(s, x, "le", **_PLAIN),
             lambda s, x: _windows()._select_and_scatter_add(s, x, _sgn("le"), *_args(_PLAIN)[:3]),
             ("source", "operand"), (plain_shape, _SHAPE), ("any", "any"), promoted=(0, 1), plan_layout=(0, 1),
             gen=_gen_select(plain_shape)),
    ]  # fmt: skip

"""Shape rules of the reduction ops (``runtime.ops`` families ``reduce``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.ops import OpDef
from runtime.shapes._common import _ALL, _NUM, SHAPE_RULES, Aval, _accept, _axes


def _reduce(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _accept(op, avals, 0, kinds)
    shape = avals[0][1]
    axes = _axes(op, avals, params["axes"], len(shape), "axis")
    return ((dtype, tuple(s for d, s in enumerate(shape) if d not in axes)),)


def reduce_sum_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_sum: numbers; result keeps the input dtype."""
    return _reduce(op, avals, params, _NUM)


SHAPE_RULES["reduce_sum"] = reduce_sum_rule


def reduce_prod_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_prod: numbers."""
    return _reduce(op, avals, params, _NUM)


SHAPE_RULES["reduce_prod"] = reduce_prod_rule


def reduce_max_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_max: every dtype."""
    return _reduce(op, avals, params, _ALL)


SHAPE_RULES["reduce_max"] = reduce_max_rule


def reduce_min_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_min: every dtype."""
    return _reduce(op, avals, params, _ALL)


SHAPE_RULES["reduce_min"] = reduce_min_rule

"""Shape rules of the user call ops (``runtime.core.ops`` families ``call``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.core.ops import OpDef
from runtime.core.shapes._common import PARAM_DEFAULTS, SHAPE_RULES, Aval, ShapeError, _fail


def custom_call_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """A user function recorded as one call (``custom_jvp_call`` / ``custom_vjp_call``): the
    operands must have the avals it was recorded with, and the outputs are the recorded ones."""
    expected = tuple((d, tuple(s)) for d, s in params["in_avals"])
    got = tuple((d, tuple(s)) for d, s in avals)
    if got != expected:
        want = " ".join(f"{d.short}{list(s)}" for d, s in expected)
        raise _fail(ShapeError, op, avals, f"{params['name']} was recorded for operands {want}")
    return tuple((d, tuple(s)) for d, s in params["out_avals"])


SHAPE_RULES["custom_jvp_call"] = custom_call_rule
SHAPE_RULES["custom_vjp_call"] = custom_call_rule
PARAM_DEFAULTS["custom_vjp_call"] = {"residuals": None}

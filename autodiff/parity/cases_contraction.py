"""The parity sweep's rows of the contraction, selection and joining ops (``runtime.core.ops`` families
``dot_general``, ``select``, ``clamp``, ``concatenate``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from autodiff.parity._common import (
    _ALL_EXACT,
    _INT_EXACT,
    PY_VALUES,
    PyScalar,
    Slot,
    Spec,
    _component,
    _float_grid,
    _int_grid,
    _jnp,
    _lax,
)
from runtime.core import dtypes as dt
from runtime.core import lax as F


def _bcast(*xs: Any) -> list[Any]:
    """Broadcast 0-d operands to the common shape (lax.select/clamp want equal shapes)."""
    jnp = _jnp()
    shape = max((jnp.shape(x) for x in xs), key=len)
    return [jnp.broadcast_to(x, shape) if jnp.shape(x) != shape else x for x in xs]


_MATMUL: Final = (((1,), (0,)), ((), ()))
_BATCHED: Final = (((2,), (1,)), ((0,), (0,)))


def _gen_clamp(slots: Sequence[Slot], rng: np.random.Generator) -> list[Any]:
    """lo, x, hi with element 0 inside (lo, hi), element 1 below lo, element 2 above hi, no ties."""
    wanted = ((0, 1, 2), (1, 0, 2), (0, 2, 1))  # rank of (lo, x, hi) for each element
    pools: list[np.ndarray] = []
    for slot in slots:
        if isinstance(slot, PyScalar):
            pools.append(np.array([float(np.real(PY_VALUES[slot.kind]))]))
        elif slot.kind in ("bool", "int", "uint"):
            pools.append(_int_grid(slot, "any").astype(np.float64))
        else:  # the ranks asked for below keep the three operands apart: no positional split needed
            pools.append(_float_grid(_component(slot), "any"))
    columns: list[list[float]] = []
    for ranks in wanted:
        pick = [float(rng.choice(pool)) for pool in pools]
        for _ in range(400):  # rejection sampling: the pools are small grids
            if len(set(pick)) == 3 and tuple(int(r) for r in np.argsort(np.argsort(pick))) == ranks:
                break
            pick = [float(rng.choice(pool)) for pool in pools]
        columns.append(pick)  # integer-only slots may leave ties: they carry no derivative
    out: list[Any] = []
    for i, slot in enumerate(slots):
        if isinstance(slot, PyScalar):
            out.append(PY_VALUES[slot.kind])
        else:
            out.append(np.array([col[i] for col in columns]).astype(slot.storage))
    return out


def specs() -> list[Spec]:
    """The sweep's rows of the contraction, selection and joining ops."""
    return [
        Spec("dot_general", "dot_general", lambda x, y: F.dot_general(x, y, _MATMUL),
             lambda x, y: _lax().dot_general(x, y, _MATMUL), ("lhs", "rhs"), ((2, 3), (3, 2)), ("any", "any"),
             lambda x, y: _jnp().matmul(x, y), promoted=(0, 1), plan_layout=(0, 1), exact=_INT_EXACT),
        Spec("dot_general-batched", "dot_general", lambda x, y: F.dot_general(x, y, _BATCHED),
             lambda x, y: _lax().dot_general(x, y, _BATCHED), ("lhs", "rhs"), ((2, 2, 3), (2, 3, 2)),
             ("any", "any"), lambda x, y: _jnp().matmul(x, y), promoted=(0, 1), plan_layout=(0, 1),
             exact=_INT_EXACT),
        Spec("dot_general-precision", "dot_general", lambda x, y: F.dot_general(x, y, _MATMUL, ("high", "highest")),
             lambda x, y: _lax().dot_general(x, y, _MATMUL, ("high", "highest")), ("lhs", "rhs"), ((2, 3), (3, 2)),
             ("any", "any"), promoted=(0, 1), plan_layout=(0, 1), exact=_INT_EXACT),
        Spec("select", "select", F.select, lambda p, a, b: _lax().select(p, *_bcast(a, b)),
             ("pred", "on_true", "on_false"), ((3,), (3,), (3,)), ("any", "any", "any"),
             lambda p, a, b: _jnp().where(p, a, b), promoted=(1, 2), scalar_ok=(1, 2), fixed={0: dt.bool_},
             plan_layout=(0, 1, 2), exact=_ALL_EXACT),
        # No jnp reference: jnp.clip is minimum(maximum(x, lo), hi), whose derivative differs from
        # lax.clamp's (which castwise follows) when lo > hi; under jax, JAX's result_type + lax.clamp.
        Spec("clamp", "clamp", F.clamp, lambda lo, x, hi: _lax().clamp(*_bcast(lo, x, hi)),
             ("min", "operand", "max"), ((3,), (3,), (3,)), ("any", "any", "any"), promoted=(0, 1, 2),
             scalar_ok=(0, 2), plan_layout=(0, 1, 2), gen=_gen_clamp, exact=_ALL_EXACT),
        Spec("concatenate", "concatenate", lambda a, b: F.concatenate([a, b], 0),
             lambda a, b: _lax().concatenate([a, b], 0), ("operands[0]", "operands[1]"), ((2, 3), (1, 3)),
             ("any", "any"), lambda a, b: _jnp().concatenate([a, b], 0), promoted=(0, 1), plan_layout=(0, 1),
             exact=_ALL_EXACT),
    ]  # fmt: skip

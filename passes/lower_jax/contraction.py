"""Lowerings of contraction, selection and joining (``runtime.core.ops`` families ``dot_general``,
``select``, ``clamp``, ``concatenate``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passes.lower_jax._common import LOWERINGS, Lowered, _full_shape, _kind, _lax_precision
from runtime.core import shapes
from runtime.core.graph import Eqn

# -- contraction, selection, joining ----------------------------------------------------------


def dot_general_lowering(eqn: Eqn, lhs: Any, rhs: Any) -> Lowered:
    """lax.dot_general at the recorded precision (Precision.HIGHEST without one), result in the
    operand dtype.

    Unlike the elementwise ops, lax.dot_general accepts operands of different
    dtypes and promotes them itself; the lowering refuses them (as lax.add
    does) so that a graph the ``promote`` pass missed cannot slip through.
    """
    from jax import lax

    if np.dtype(lhs.dtype) != np.dtype(rhs.dtype):
        raise TypeError(
            f"dot_general requires arguments to have the same dtypes, got {np.dtype(lhs.dtype)}, "
            f"{np.dtype(rhs.dtype)} (castwise lowers promoted graphs only; lax.dot_general would promote itself)"
        )
    dims = shapes.dot_dimension_numbers(eqn.params["dimension_numbers"])
    return (lax.dot_general(lhs, rhs, dims, precision=_lax_precision(eqn)),)


LOWERINGS["dot_general"] = dot_general_lowering


def select_lowering(eqn: Eqn, pred: Any, on_true: Any, on_false: Any) -> Lowered:
    """lax.select, with 0-d operands broadcast first (castwise's scalar rule)."""
    from jax import lax

    return (lax.select(*_full_shape(eqn, pred, on_true, on_false)),)


LOWERINGS["select"] = select_lowering


def select_n_lowering(eqn: Eqn, which: Any, *cases: Any) -> Lowered:
    """lax.select_n, with 0-d operands broadcast first; an integer ``which`` becomes int32 (lax's only
    integer type for it; castwise takes any integer dtype)."""
    from jax import lax

    if _kind(which) != "bool" and np.dtype(which.dtype) != np.int32:
        which = lax.convert_element_type(which, np.int32)
    return (lax.select_n(*_full_shape(eqn, which, *cases)),)


LOWERINGS["select_n"] = select_n_lowering


def clamp_lowering(eqn: Eqn, lo: Any, x: Any, hi: Any) -> Lowered:
    """lax.clamp(min, operand, max)."""
    from jax import lax

    return (lax.clamp(lo, x, hi),)


LOWERINGS["clamp"] = clamp_lowering


def concatenate_lowering(eqn: Eqn, *operands: Any) -> Lowered:
    """lax.concatenate."""
    from jax import lax

    return (lax.concatenate(list(operands), int(eqn.params["dimension"])),)


LOWERINGS["concatenate"] = concatenate_lowering

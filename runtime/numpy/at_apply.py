"""``x.at[index].apply(func)``: jax.numpy's ``.at[].apply``, ``func`` at the indexed positions.

As JAX (``lax.scatter_apply``: a scatter whose combiner is ``lambda x, _: func(x)``), ``func``
is applied once per occurrence of a position in ``index``: a position named twice becomes
``func(func(v))``, one not named keeps its value. Which positions, and how often, is what
``x.at[index].add(1)`` counts (the same index rules as the other ``.at`` updates: out-of-bounds
positions are dropped under jax.numpy and raise under NumPy and PyTorch), read when the line
runs; so the index must be concrete (a traced index raises ``ConcretizationIndexError``).

The result is composed of recorded ops, one round per repeat: the positions named at least
``r`` times are gathered into a vector, ``func`` runs on it, and a scatter writes it back. So
``func`` sees a 1-D Tensor of the selected values (JAX calls it on each scalar): it must be
elementwise and keep the dtype and shape (``ApplyError`` otherwise). Being a composition, the
result records, vmaps, lowers and differentiates: JAX defines no derivative for
``scatter_apply`` (its JVP raises NotImplementedError); castwise's is the chain rule through the
gathers and scatters, tested against finite differences (tests/runtime/test_at_apply.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax
from runtime.core.errors import OpTypeError
from runtime.core.tensor import Tensor
from runtime.numpy.common import api_error, describe_operand
from runtime.numpy.params import refuse_traced
from runtime.numpy.tensor_methods import IndexUpdateRef, getitem, update

__all__ = ["ApplyError", "apply"]

METHOD = "at[...].apply"


class ApplyError(OpTypeError):
    """``.at[index].apply(func)`` with a ``func`` that is not callable, or that does not return
    a Tensor of the selected values' shape and dtype."""


def _index_tensors(index: Any) -> list[Tensor]:
    items = index if type(index) is tuple else (index,)
    return [item for item in items if isinstance(item, Tensor)]


def apply(
    self: IndexUpdateRef,
    func: Callable[[Tensor], Any],
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> Tensor:
    """A copy of ``x`` with ``func`` applied at ``index``, once per occurrence of a position
    (``jax.numpy``'s ``x.at[index].apply(func)``)."""
    x = self.x
    if not callable(func):
        raise api_error(ApplyError, METHOD, x, f"func must be a callable of one Tensor, got {type(func).__name__}")
    for t in _index_tensors(self.index):
        refuse_traced(
            METHOD, "the index", t, "how often func runs at each position depends on its values",
            "compute the index outside the traced function", (x,), index=True,
        )  # fmt: skip
    try:  # how often each position is named: what .at[index].add(1) counts
        counts = update(lax.full(x.shape, 0, dt.int64), self.index, 1, "add", indices_are_sorted, unique_indices)
    except (IndexError, TypeError, ValueError) as err:  # a bad index: the error of the method called
        message = str(err)
        if not message.startswith("at[...].add: "):
            raise
        zeros, operand = (
            f"[operand {describe_operand(lax.full(x.shape, 0, dt.int64))};",
            f"[operand {describe_operand(x)};",
        )
        raise type(err)(METHOD + message.removeprefix("at[...].add").replace(zeros, operand)) from None
    per_position = np.asarray(counts._array).reshape(-1)
    rounds = int(per_position.max()) if per_position.size else 0
    if rounds == 0:
        return x
    out = x if x.ndim == 1 else lax.reshape(x, (x.size,))
    for r in range(1, rounds + 1):
        where = Tensor(np.flatnonzero(per_position >= r).astype(np.int64), dt.int64)
        selected = getitem(out, where)
        got = func(selected)
        if not isinstance(got, Tensor) or got.shape != selected.shape or got.dtype is not selected.dtype:
            what = f"{got.dtype.name}{list(got.shape)}" if isinstance(got, Tensor) else type(got).__name__
            raise api_error(
                ApplyError, METHOD, x,
                f"func must return a Tensor of the selected values' dtype and shape, "
                f"{selected.dtype.name}{list(selected.shape)} (it is applied elementwise, as JAX's), got {what}",
            )  # fmt: skip
        out = update(out, where, got, "set", True, True)
    return out if out.shape == x.shape else lax.reshape(out, x.shape)


IndexUpdateRef.apply = apply

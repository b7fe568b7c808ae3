"""The shape plan: the shape each operand of an elementwise op is broadcast to.

``broadcast_targets(op, shapes)`` is the shape half of the promotion plan
(``runtime.core.plan.plan`` decides dtypes). Eager execution, the graph recorder,
the tracer and the ``promote`` pass call it, so the broadcasts eager code
performs implicitly are the ``broadcast_in_dim`` equations the graph records.

The rule is NumPy's: shapes are aligned on the right, missing leading axes
count as size 1, and a size-1 axis stretches to the other operands' size; any
other disagreement is an error. It covers every elementwise family: binary,
compare, logical, select (the predicate too) and clamp. Rank-equal size-1
broadcasting (``(3, 4) x (3, 1)``) is part of it.

One exception keeps the graph lax-strict without churning it: a 0-d operand
stays 0-d where the kernels' scalar rule accepts it (every position of
binary, compare, logical and select; ``min`` and ``max`` of clamp, not its
``operand``), exactly as lax accepts a rank-0 operand. Every other operand
whose shape differs from the result is broadcast with ``broadcast_in_dim``,
its axes mapped to the trailing axes of the result.

=============  ==============================  ======================
family         broadcast operands              a 0-d operand stays
=============  ==============================  ======================
binary         x, y                            x, y
compare        x, y                            x, y
logical        x, y                            x, y
select         pred, on_true, on_false         pred, on_true, on_false
clamp          min, operand, max               min, max
=============  ==============================  ======================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from runtime.core import ops
from runtime.core.ops import OpDef
from runtime.core.shapes import ShapeError

Shape = tuple[int, ...]

#: The families whose operands broadcast together (NumPy rules).
BROADCASTING: Final[frozenset[str]] = frozenset({ops.BINARY, ops.COMPARE, ops.LOGICAL, ops.SELECT, ops.CLAMP})

#: Per family, the operand positions that must take the full result shape even when 0-d.
_FULL_EVEN_IF_0D: Final[dict[str, frozenset[int]]] = {ops.CLAMP: frozenset({1})}


def broadcasts(op: OpDef) -> bool:
    """True when ``op``'s operands broadcast together (an elementwise family)."""
    return op.family in BROADCASTING


def result_shape(op: OpDef, shapes: Sequence[Shape], policy: str | None = None) -> Shape:
    """The NumPy broadcast of ``shapes``; ``ShapeError`` naming the op, the shapes and
    the policy when they are incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        offset = rank - len(shape)
        for axis, size in enumerate(shape):
            current = out[offset + axis]
            if size == current or size == 1:
                continue
            if current == 1:
                out[offset + axis] = size
                continue
            listed = " and ".join(str(list(s)) for s in shapes)
            where = f" under policy {policy!r}" if policy is not None else ""
            raise ShapeError(
                f"{op.name}: operand shapes {listed} cannot be broadcast together{where} "
                f"(axis {axis - len(shape)} has sizes {current} and {size}; NumPy broadcasting "
                "aligns shapes on the right and stretches only size-1 axes)"
            )
    return tuple(out)


def broadcast_targets(op: OpDef, shapes: Sequence[Shape], policy: str | None = None) -> tuple[Shape, ...] | None:
    """The shape each operand of ``op`` is broadcast to, or ``None`` when none changes.

    ``None`` is the common answer (equal shapes, or 0-d operands where the
    kernels take them): callers test for it and pay nothing more. Operands of
    non-elementwise ops never broadcast.
    """
    if op.family not in BROADCASTING or len(shapes) < 2:
        return None
    first = shapes[0]
    for s in shapes:
        if s != first:
            break
    else:
        return None  # the hot case: every shape agrees
    out = result_shape(op, shapes, policy)
    full = _FULL_EVEN_IF_0D.get(op.family, frozenset())
    targets = tuple(s if s == out or (s == () and i not in full) else out for i, s in enumerate(shapes))
    if all(t == s for t, s in zip(targets, shapes, strict=True)):
        return None
    return targets


def broadcast_dimensions(operand: Shape, target: Shape) -> tuple[int, ...]:
    """``broadcast_in_dim``'s ``broadcast_dimensions`` for NumPy broadcasting: the operand's
    axes map to the trailing axes of ``target``."""
    lead = len(target) - len(operand)
    return tuple(range(lead, len(target)))


def broadcast_params(operand: Shape, target: Shape) -> dict[str, tuple[int, ...]]:
    """The params of the ``broadcast_in_dim`` equation that takes ``operand`` to ``target``."""
    return {"shape": tuple(target), "broadcast_dimensions": broadcast_dimensions(operand, target)}

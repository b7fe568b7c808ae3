"""Hypothesis strategies for castwise dtypes and tensors.

Use them in your own tests (``hypothesis`` is a test extra: this module
imports it, and ``import runtime`` never imports this module)::

    from hypothesis import given
    from runtime.testing import strategies as cst

    @given(cst.operand_pairs(policy="jax"))
    def test_add_promotes(pair):
        x, y = pair
        assert (x + y).dtype == runtime.promote_types(x.dtype, y.dtype)

A ``policy`` argument is a policy name or object; ``None`` means the policy
active when the strategy is *built* (not when it is drawn from). ``kinds``
filters dtypes by kind: ``"bool"``, ``"int"``, ``"uint"``, ``"float"``,
``"complex"``, or the groups ``"integer"`` (int and uint) and ``"inexact"``
(float and complex); pass one name or several.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Final

import ml_dtypes
import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import Policy, get_policy_object
from runtime.core.tensor import Tensor

__all__ = [
    "KIND_GROUPS",
    "MAX_MAGNITUDE",
    "default_elements",
    "dtypes",
    "mixed_dtype_pairs",
    "operand_pairs",
    "shapes",
    "tensors",
]

#: Kind names accepted by ``kinds=``, each with the dtype kinds it stands for.
KIND_GROUPS: Final[dict[str, frozenset[str]]] = {
    "bool": frozenset({"bool"}),
    "int": frozenset({"int"}),
    "uint": frozenset({"uint"}),
    "float": frozenset({"float"}),
    "complex": frozenset({"complex"}),
    "integer": frozenset({"int", "uint"}),
    "inexact": frozenset({"float", "complex"}),
}

#: Largest magnitude of the default float elements (every float format holds it).
MAX_MAGNITUDE: Final = 4.0
#: Default integer elements lie in [-INT_BOUND, INT_BOUND], clipped to the dtype's range.
INT_BOUND: Final = 10

PolicyLike = str | Policy | None
KindsLike = str | Iterable[str] | None
ShapeLike = Sequence[int] | st.SearchStrategy[tuple[int, ...]] | None


def _policy(policy: PolicyLike) -> Policy:
    return get_policy_object(policy)


def _kinds(kinds: KindsLike) -> frozenset[str] | None:
    if kinds is None:
        return None
    names = [kinds] if isinstance(kinds, str) else list(kinds)
    if not names:
        raise ValueError("kinds: give at least one kind, or None for all")
    out: set[str] = set()
    for name in names:
        if name not in KIND_GROUPS:
            raise ValueError(f"unknown dtype kind {name!r}; choose from {', '.join(KIND_GROUPS)}")
        out |= KIND_GROUPS[name]
    return frozenset(out)


def _known_dtypes(pol: Policy, kinds: KindsLike) -> list[DType]:
    wanted = _kinds(kinds)
    return [d for d in pol.dtypes if wanted is None or d.kind in wanted]


def dtypes(policy: PolicyLike = None, kinds: KindsLike = None) -> st.SearchStrategy[DType]:
    """The dtypes ``policy`` knows (``Policy.dtypes``), optionally only those of ``kinds``.

    Shrinks toward the catalog's first dtypes (bool, then the narrow ints).
    Raises ``ValueError`` at once when nothing is left after filtering.
    """
    pol = _policy(policy)
    found = _known_dtypes(pol, kinds)
    if not found:
        raise ValueError(f"policy {pol.name!r} knows no dtype of kinds {sorted(_kinds(kinds) or ())}")
    return st.sampled_from(found)


def mixed_dtype_pairs(policy: PolicyLike = None, kinds: KindsLike = None) -> st.SearchStrategy[tuple[DType, DType]]:
    """Ordered pairs ``(a, b)`` of *different* dtypes that promote under ``policy``.

    Both orders of each pair are drawn (``(f32, c128)`` and ``(c128, f32)``).
    With ``kinds``, both dtypes are of those kinds. Raises ``ValueError`` at
    once for a policy that promotes no such pair (``strict``, ``jax-strict``).
    """
    pol = _policy(policy)
    found = _known_dtypes(pol, kinds)
    pairs = [(a, b) for a in found for b in found if a is not b and pol.can_promote(a, b)]
    if not pairs:
        raise ValueError(
            f"policy {pol.name!r} promotes no pair of different dtypes"
            + (f" of kinds {sorted(_kinds(kinds) or ())}" if kinds is not None else "")
        )
    return st.sampled_from(pairs)


def shapes(
    min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4
) -> st.SearchStrategy[tuple[int, ...]]:
    """Small array shapes: ``min_dims``..``max_dims`` axes of ``min_side``..``max_side`` each."""
    if not 0 <= min_dims <= max_dims or not 0 <= min_side <= max_side:
        raise ValueError(f"shapes: bad bounds dims {min_dims}..{max_dims}, sides {min_side}..{max_side}")
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def _shape_strategy(shape: ShapeLike) -> st.SearchStrategy[tuple[int, ...]]:
    if shape is None:
        return shapes()
    if isinstance(shape, st.SearchStrategy):
        return shape
    return st.just(tuple(int(s) for s in shape))


def _moderate_float() -> st.SearchStrategy[float]:
    # Three decimals at most: shrinks toward 0, never a tiny non-zero magnitude,
    # and ``+ 0.0`` turns -0.0 into 0.0 (the fnuz formats have no negative zero).
    return st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE, allow_nan=False, allow_infinity=False).map(
        lambda x: round(x, 3) + 0.0
    )


def default_elements(dtype: Any) -> st.SearchStrategy[Any]:
    """The default element values of ``tensors(dtype)``: finite and moderate.

    bool: ``False``/``True``; integers: ``-10..10`` clipped to the dtype's range;
    floats: values in ``[-4, 4]`` with at most three decimals (rounded to the
    format on storage); ``float8_e8m0fnu`` (no sign, no zero): powers of two
    ``2**-4 .. 2**2``; complex (complex32 and bcomplex32 included): both parts
    as for floats.
    """
    d = dt.dtype(dtype)
    if d.kind == "bool":
        return st.booleans()
    if d.is_integer:
        # ml_dtypes.iinfo also describes int1/int2/int4 and their unsigned twins
        info = ml_dtypes.iinfo(d.storage)
        return st.integers(max(int(info.min), -INT_BOUND), min(int(info.max), INT_BOUND))
    if d.name == "float8_e8m0fnu":
        return st.integers(-4, 2).map(lambda k: 2.0**k)
    if d.kind == "complex":
        return st.builds(complex, _moderate_float(), _moderate_float())
    return _moderate_float()


def _store(values: list[Any], d: DType, shape: tuple[int, ...]) -> np.ndarray:
    wide: Any = {"bool": np.bool_, "int": np.int64, "uint": np.int64, "float": np.float64, "complex": np.complex128}
    array = np.asarray(values, dtype=wide[d.kind]).reshape(shape)
    return array.astype(d.storage)


def tensors(
    dtype: Any,
    shape: ShapeLike = None,
    elements: st.SearchStrategy[Any] | None = None,
) -> st.SearchStrategy[Tensor]:
    """Castwise Tensors of ``dtype`` (a dtype, or a strategy of dtypes such as ``dtypes()``).

    ``shape`` is a fixed shape, a strategy of shapes, or ``None`` for
    ``shapes()`` (0 to 3 axes of 1 to 4 elements). ``elements`` draws Python
    values (stored with ``numpy.astype`` into the dtype's storage); by default
    ``default_elements(dtype)``: finite, moderate values. Every float element of
    the result is finite (values a custom ``elements`` makes non-finite are
    rejected).
    """
    dtype_st: st.SearchStrategy[DType] = (
        dtype.map(dt.dtype) if isinstance(dtype, st.SearchStrategy) else st.just(dt.dtype(dtype))
    )
    shape_st = _shape_strategy(shape)

    @st.composite
    def build(draw: st.DrawFn) -> Tensor:
        d = draw(dtype_st)
        shp = draw(shape_st)
        size = math.prod(shp)
        elems = elements if elements is not None else default_elements(d)
        values = draw(st.lists(elems, min_size=size, max_size=size))
        array = _store(values, d, shp)
        if d.is_inexact:
            # a custom ``elements`` may overflow a narrow format; the defaults never do
            assume(bool(np.all(np.isfinite(array.astype(np.complex128)))))
        return Tensor(array, d)

    return build()


def operand_pairs(
    policy: PolicyLike = None,
    kinds: KindsLike = None,
    shape: ShapeLike = None,
) -> st.SearchStrategy[tuple[Tensor, Tensor]]:
    """Pairs ``(x, y)`` of Tensors of one shape whose dtypes differ and promote under ``policy``.

    The dtypes come from ``mixed_dtype_pairs(policy, kinds)`` (both orders);
    the values from ``default_elements``; the shared shape from ``shape`` as in
    ``tensors``.
    """
    pairs = mixed_dtype_pairs(policy, kinds)
    shape_st = _shape_strategy(shape)

    @st.composite
    def build(draw: st.DrawFn) -> tuple[Tensor, Tensor]:
        a, b = draw(pairs)
        shp = draw(shape_st)
        return draw(tensors(a, shp)), draw(tensors(b, shp))

    return build()

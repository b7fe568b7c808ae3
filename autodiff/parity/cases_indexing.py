"""The parity sweep's rows of the indexing ops (``runtime.core.ops`` families ``scatter``, ``gather``,
``dynamic_slice``, ``dynamic_update_slice``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from autodiff.parity._common import _ALL_EXACT, _INT_EXACT, PyScalar, Spec, _lax
from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.shapes import GatherDimensionNumbers, ScatterDimensionNumbers

_ROW_SCATTER = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))  # fmt: skip
_ROW_GATHER = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
_SCATTER_IDX: Final = np.array([[0], [3], [1]], dtype=np.int32)
_SCATTER_ADD_IDX: Final = np.array([[0], [3], [0]], dtype=np.int32)  # a duplicate: updates accumulate
_GATHER_IDX: Final = np.array([[4], [0], [2], [0]], dtype=np.int32)


def _jax_scatter_dn() -> Any:
    return _lax().ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))  # fmt: skip


def _jax_gather_dn() -> Any:
    return _lax().GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))


def specs() -> list[Spec]:
    """The sweep's rows of the indexing ops."""
    i32 = dt.int32
    return [
        Spec("scatter", "scatter", lambda x, u: F.scatter(x, _SCATTER_IDX, u, _ROW_SCATTER, unique_indices=True),
             lambda x, u: _lax().scatter(x, _SCATTER_IDX, u, _jax_scatter_dn(), unique_indices=True),
             ("operand", "updates"), ((5, 3), (3, 3)), ("any", "any"), promoted=(0, 1),
             plan_layout=(0, i32, 1), exact=_ALL_EXACT),
        Spec("scatter_add", "scatter_add", lambda x, u: F.scatter_add(x, _SCATTER_ADD_IDX, u, _ROW_SCATTER),
             lambda x, u: _lax().scatter_add(x, _SCATTER_ADD_IDX, u, _jax_scatter_dn()),
             ("operand", "updates"), ((5, 3), (3, 3)), ("any", "any"), promoted=(0, 1),
             plan_layout=(0, i32, 1), exact=_INT_EXACT),
        *(Spec(name, name, lambda x, u, _n=name: getattr(F, _n)(x, _SCATTER_ADD_IDX, u, _ROW_SCATTER),
               lambda x, u, _n=name: getattr(_lax(), _n)(x, _SCATTER_ADD_IDX, u, _jax_scatter_dn()),
               ("operand", "updates"), ((5, 3), (3, 3)), ("any", "any"), promoted=(0, 1),
               plan_layout=(0, i32, 1), exact=_ALL_EXACT if name != "scatter_mul" else _INT_EXACT)
          for name in ("scatter_min", "scatter_max")),
        # unique indices: JAX (and castwise) differentiate scatter_mul's updates only then
        Spec("scatter_mul", "scatter_mul",
             lambda x, u: F.scatter_mul(x, _SCATTER_IDX, u, _ROW_SCATTER, unique_indices=True),
             lambda x, u: _lax().scatter_mul(x, _SCATTER_IDX, u, _jax_scatter_dn(), unique_indices=True),
             ("operand", "updates"), ((5, 3), (3, 3)), ("any", "any"), promoted=(0, 1),
             plan_layout=(0, i32, 1), exact=_INT_EXACT),
        Spec("gather", "gather", lambda x: F.gather(x, _GATHER_IDX, _ROW_GATHER, (1, 3)),
             lambda x: _lax().gather(x, _GATHER_IDX, _jax_gather_dn(), (1, 3)), ("operand",), ((5, 3),),
             ("any",), plan_layout=(0, i32), exact=_ALL_EXACT),
        Spec("dynamic_slice", "dynamic_slice", lambda x: F.dynamic_slice(x, [2], (3,)),
             lambda x: _lax().dynamic_slice(x, (2,), (3,)), ("operand",), ((6,),), ("any",),
             plan_layout=(0, PyScalar("int")), exact=_ALL_EXACT),
        Spec("dynamic_update_slice", "dynamic_update_slice", lambda x, u: F.dynamic_update_slice(x, u, [1]),
             lambda x, u: _lax().dynamic_update_slice(x, u, (1,)), ("operand", "update"), ((6,), (3,)),
             ("any", "any"), promoted=(0, 1), plan_layout=(0, 1, PyScalar("int")), exact=_ALL_EXACT),
    ]  # fmt: skip

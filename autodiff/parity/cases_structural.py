"""The parity sweep's rows of the structural ops (``runtime.core.ops`` families ``structural``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from autodiff.parity._common import _ALL_EXACT, Spec, _jnp, _lax, _structural_spec
from runtime.core import dtypes as dt
from runtime.core import lax as F

_WHICH: Final = np.array([2, 0, 1], dtype=np.int32)


def specs() -> list[Spec]:
    """The sweep's rows of the structural ops."""
    return [
        _structural_spec("reshape", "reshape", lambda x: F.reshape(x, (2, 6)),
                         lambda x: _lax().reshape(x, (2, 6)), (3, 4)),
        _structural_spec("transpose", "transpose", lambda x: F.transpose(x, (1, 0)),
                         lambda x: _lax().transpose(x, (1, 0)), (3, 4)),
        _structural_spec("broadcast_in_dim", "broadcast_in_dim", lambda x: F.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
                         lambda x: _lax().broadcast_in_dim(x, (2, 3, 4), (1, 2)), (3, 1)),
        _structural_spec("slice", "slice", lambda x: F.slice(x, (1, 0), (3, 4), (1, 2)),
                         lambda x: _lax().slice(x, (1, 0), (3, 4), (1, 2)), (3, 4)),
        _structural_spec("pad", "pad", lambda x: F.pad(x, 1, ((1, 0, 1), (0, -1, 0))),
                         lambda x: _lax().pad(x, _jnp().asarray(1, x.dtype), ((1, 0, 1), (0, -1, 0))), (3, 4)),
        # a 0-d array padding value, an operand (differentiated and batched), converted to x's dtype first
        # (drawn as shape [1], reshaped to 0-d on both sides)
        Spec("pad-operand-value", "pad",
             lambda x, v: F.pad(x, F.convert(F.reshape(v, ()), x.dtype), ((1, 0, 1), (0, -1, 0))),
             lambda x, v: _lax().pad(x, _lax().convert_element_type(_lax().reshape(v, ()), x.dtype),
                                     ((1, 0, 1), (0, -1, 0))),
             ("x", "padding_value"), ((3, 4), (1,)), ("any", "any"), plan_layout=(0, 1), exact=_ALL_EXACT),
        Spec("optimization_barrier", "optimization_barrier", lambda x, y: tuple(F.optimization_barrier((x, y))),
             lambda x, y: tuple(_lax().optimization_barrier((x, y))), ("operands[0]", "operands[1]"),
             ((3,), (2, 2)), ("any", "any"), plan_layout=(0, 1), exact=_ALL_EXACT),
        _structural_spec("reverse", "reverse", lambda x: F.reverse(x, (0,)), lambda x: _lax().rev(x, (0,)), (3, 4)),
        _structural_spec("sort", "sort", lambda x: F.sort(x, 1), lambda x: _lax().sort(x, dimension=1), (3, 4)),
        Spec("sort-two-operands", "sort", lambda x, y: F.sort((x, y), 0),
             lambda x, y: tuple(_lax().sort((x, y), dimension=0)), ("operands[0]", "operands[1]"),
             ((4, 2), (4, 2)), ("any", "any"), plan_layout=(0, 1), exact=_ALL_EXACT),
        _structural_spec("top_k", "top_k", lambda x: F.top_k(x, 2), lambda x: tuple(_lax().top_k(x, 2)), (3, 4)),
        _structural_spec("split", "split", lambda x: tuple(F.split(x, (1, 3), 1)),
                         lambda x: tuple(_lax().split(x, (1, 3), axis=1)), (3, 4)),
        Spec("select_n", "select_n", lambda a, b, c: F.select_n(_WHICH, a, b, c),
             lambda a, b, c: _lax().select_n(_WHICH, a, b, c), ("cases[0]", "cases[1]", "cases[2]"),
             ((3,), (3,), (3,)), ("any", "any", "any"), promoted=(0, 1, 2), plan_layout=(dt.int32, 0, 1, 2),
             exact=_ALL_EXACT),
        Spec("iota", "iota", lambda dtype: F.iota(dtype, (2, 3), 1),
             lambda dtype: _lax().broadcasted_iota(dtype.storage, (2, 3), 1), (), (), dtype_param=True,
             exact=_ALL_EXACT),
        *(Spec(f"full-{kind}", "full", lambda dtype, _v=value: F.full((2, 3), _v, dtype),
               lambda dtype, _v=value: _lax().full((2, 3), _v, dtype.storage), (), (), dtype_param=True,
               exact=_ALL_EXACT) for kind, value in (("int", 3), ("float", 1.5), ("complex", 1.5 - 0.5j))),
    ]  # fmt: skip

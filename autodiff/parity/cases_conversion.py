"""The parity sweep's rows of the conversion ops (``runtime.core.ops`` families ``convert``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from typing import Any

from autodiff.parity._common import _ALL_EXACT, Spec, _lax
from runtime.core import lax as F
from runtime.core.dtypes import DType


def _lax_convert(x: Any, dtype: DType) -> Any:
    """``lax.convert_element_type``; complex to real takes the real part first, which is what
    the conversion does, so JAX's ComplexWarning about it is not printed for every such case."""
    lax = _lax()
    if dtype.kind != "complex" and "complex" in str(getattr(x, "dtype", "")):
        x = lax.real(x)
    return lax.convert_element_type(x, dtype.storage)


def specs() -> list[Spec]:
    """The sweep's rows of the conversion ops."""
    return [
        Spec("convert", "convert", lambda x, dtype: F.convert(x, dtype),
             _lax_convert, ("x",), ((3,),), ("any",),
             plan_layout=(0,), dtype_param=True, exact=_ALL_EXACT),
        Spec("bitcast_convert_type", "bitcast_convert_type", lambda x, dtype: F.bitcast_convert_type(x, dtype),
             lambda x, dtype: _lax().bitcast_convert_type(x, dtype.storage), ("x",), ((3,),), ("any",),
             plan_layout=(0,), dtype_param=True, exact=_ALL_EXACT),
    ]  # fmt: skip

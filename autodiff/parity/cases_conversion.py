"""The parity sweep's rows of the conversion ops (``runtime.core.ops`` families ``convert``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from autodiff.parity._common import _ALL_EXACT, Spec, _lax
from runtime.core import lax as F


def specs() -> list[Spec]:
    """The sweep's rows of the conversion ops."""
    return [
        Spec("convert", "convert", lambda x, dtype: F.convert(x, dtype),
             lambda x, dtype: _lax().convert_element_type(x, dtype.storage), ("x",), ((3,),), ("any",),
             plan_layout=(0,), dtype_param=True, exact=_ALL_EXACT),
    ]  # fmt: skip

"""JVP and VJP rules of ``convert``.

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. The conventions are those of the elementwise rules (``autodiff.derivatives``).
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.derivatives._common import Primals, Tangents, _cast
from autodiff.rules import JVP_RULES, SAVES_NOTHING, VJP_RULES, VJP_SAVES
from autodiff.zeros import TangentLike, Zero, is_zero
from runtime.core.dtypes import DType

# -- convert ----------------------------------------------------------------------------------


def convert_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, new_dtype: DType, weak_type: bool = False
) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    if not out.dtype.is_inexact:
        return [Zero.like(out)]  # integer / bool results carry no tangent
    return [_cast(t, out.dtype, out.weak)]  # type: ignore[arg-type]  # d convert(x) = convert(dx) (real part when to real)
JVP_RULES["convert"] = convert_jvp


def convert_vjp(
    cotangents: Tangents,
    primals: Primals,
    outputs: Primals,
    needs: Sequence[bool],
    new_dtype: DType,
    weak_type: bool = False,
) -> list[TangentLike]:
    (ct,), (x,), (out,) = cotangents, primals, outputs
    if is_zero(ct) or not out.dtype.is_inexact or not x.dtype.is_inexact:
        return [Zero.like(x)]
    # The adjoint of each real-linear convert is the convert back: complex -> real
    # keeps the real part (the adjoint of embedding a real input in the complex
    # plane), real -> complex embeds (the adjoint of taking the real part), widths
    # just change.
    return [_cast(ct, x.dtype, x.weak)]  # type: ignore[arg-type]  # x-bar = convert(ct, x.dtype)
VJP_RULES["convert"] = convert_vjp
VJP_SAVES["convert"] = SAVES_NOTHING

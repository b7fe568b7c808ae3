"""The parity sweep's rows of the user call ops (``runtime.core.ops`` families ``call``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from dataclasses import replace

import autodiff
from autodiff.parity._common import Spec, _lax, _structural_spec
from runtime.core import lax as F
from runtime.core.tensor import Tensor


@autodiff.custom_jvp
def custom_transpose(x: Tensor) -> Tensor:
    """``transpose`` recorded as a ``custom_jvp_call`` (the sweep's user call)."""
    return F.transpose(x, (1, 0))


@custom_transpose.defjvp
def custom_transpose_jvp(primals: tuple[Tensor], tangents: tuple[Tensor]) -> tuple[Tensor, Tensor]:
    return custom_transpose(primals[0]), F.transpose(tangents[0], (1, 0))


@autodiff.custom_vjp
def custom_vjp_transpose(x: Tensor) -> Tensor:
    """``transpose`` recorded as a ``custom_vjp_call`` (the sweep's user call)."""
    return F.transpose(x, (1, 0))


def custom_transpose_fwd(x: Tensor) -> tuple[Tensor, None]:
    return custom_vjp_transpose(x), None


def custom_transpose_bwd(_: None, g: Tensor) -> tuple[Tensor]:
    return (F.transpose(g, (1, 0)),)


custom_vjp_transpose.defvjp(custom_transpose_fwd, custom_transpose_bwd)


def specs() -> list[Spec]:
    """The sweep's rows of the user call ops."""
    return [
        # -- user calls: a transpose under a custom rule that is its own derivative (so lax.transpose is
        # the reference); tests/autodiff/test_custom_rules.py checks jax.custom_jvp/custom_vjp lowering
        _structural_spec("custom_jvp_call", "custom_jvp_call", custom_transpose,
                         lambda x: _lax().transpose(x, (1, 0)), (3, 4)),
        replace(_structural_spec("custom_vjp_call", "custom_vjp_call", custom_vjp_transpose,
                                 lambda x: _lax().transpose(x, (1, 0)), (3, 4)), reverse_only=True),
    ]  # fmt: skip

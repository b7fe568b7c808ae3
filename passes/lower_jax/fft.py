"""Lowering of ``fft`` (``runtime.core.ops`` family ``fft``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered
from runtime.core.graph import Eqn

# -- Fourier transforms ---------------------------------------------------------------------------


def fft_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.fft with the same type and lengths (the operand already has the dtype the plan gave it,
    so lax.fft's own conversion is the identity)."""
    from jax import lax

    fft_type = getattr(lax.FftType, str(eqn.params["fft_type"]))
    return (lax.fft(x, fft_type, tuple(int(n) for n in eqn.params["fft_lengths"])),)


LOWERINGS["fft"] = fft_lowering

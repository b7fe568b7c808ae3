"""The parity sweep's rows of the Fourier transforms (``runtime.core.ops`` family ``fft``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows. Each row closes
over the transform's type and lengths; the JAX reference under ``jax`` is ``jax.numpy.fft``'s
function of the same meaning, elsewhere ``jax.lax.fft`` on the operand at castwise's planned
dtype (lax.fft converts a real operand of a complex transform to complex, as castwise's plan does).
No row compares bit for bit: pocketfft (castwise's kernel) and XLA's transforms round differently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import runtime as rt
from autodiff.parity._common import Spec, _jnp, _lax
from runtime.core import lax as F


def _fft_spec(
    name: str, fft_type: str, shape: tuple[int, ...], lengths: tuple[int, ...], jnp_ref: Callable[..., Any]
) -> Spec:
    return Spec(name, "fft", lambda x: F.fft(x, fft_type, lengths), lambda x: _lax().fft(x, fft_type, lengths),
                ("x",), (shape,), ("any",), jnp_ref, plan_layout=(0,), exact=frozenset())  # fmt: skip


def _namespace_spec(name: str, ours: Callable[..., Any], ref: Callable[..., Any], shape: tuple[int, ...]) -> Spec:
    """A row of an ``rt.fft`` function: its reference is the jax.numpy.fft function on the operand
    at castwise's planned dtype (jax.numpy.fft converts real operands to complex as castwise does)."""
    return Spec(name, "fft", ours, ref, ("x",), (shape,), ("any",), ref, plan_layout=(0,), exact=frozenset())


def specs() -> list[Spec]:
    """The sweep's rows of ``fft``: each type in one and two dimensions, odd and even lengths."""
    return [
        _fft_spec("fft", "FFT", (3, 4), (4,), lambda x: _jnp().fft.fft(x)),
        _fft_spec("fft-2d", "FFT", (3, 4), (3, 4), lambda x: _jnp().fft.fft2(x)),
        _fft_spec("fft-ifft", "IFFT", (3, 5), (5,), lambda x: _jnp().fft.ifft(x)),
        _fft_spec("fft-ifft-2d", "IFFT", (2, 3, 4), (3, 4), lambda x: _jnp().fft.ifft2(x)),
        _fft_spec("fft-rfft", "RFFT", (3, 4), (4,), lambda x: _jnp().fft.rfft(x)),
        _fft_spec("fft-rfft-odd-2d", "RFFT", (3, 5), (3, 5), lambda x: _jnp().fft.rfft2(x)),
        _fft_spec("fft-irfft", "IRFFT", (3, 3), (4,), lambda x: _jnp().fft.irfft(x, 4)),
        _fft_spec("fft-irfft-odd-2d", "IRFFT", (2, 3), (2, 5), lambda x: _jnp().fft.irfft2(x, (2, 5))),
        # rt.fft's compositions (crop, pad, moved axes, norm scaling), against jax.numpy.fft under every policy
        _namespace_spec("fft-namespace-hfft", lambda x: rt.fft.hfft(x, n=5, axis=0, norm="ortho"),
                        lambda x: _jnp().fft.hfft(x, n=5, axis=0, norm="ortho"), (3, 2)),
        _namespace_spec("fft-namespace-rfftn", lambda x: rt.fft.rfftn(x, s=(4, 2), axes=(1, 0), norm="forward"),
                        lambda x: _jnp().fft.rfftn(x, s=(4, 2), axes=(1, 0), norm="forward"), (3, 5)),
        _namespace_spec("fft-namespace-ifftshift", lambda x: rt.fft.ifftshift(rt.fft.ifft(x, n=3)),
                        lambda x: _jnp().fft.ifftshift(_jnp().fft.ifft(x, n=3)), (2, 4)),
    ]  # fmt: skip

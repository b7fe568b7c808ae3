"""Every op of the vocabulary as a function, plus a few compositions of them: lax's names and
strict semantics (``rt.lax``), as ``jax.lax`` beside ``jax.numpy``.

Each function accepts Tensors, NumPy arrays and Python scalars, and runs through
the one eager executor (``runtime.core.executor.apply``), so promotion, errors and
recording behave the same whichever way an op is called.

One module per op family, named as the family's kernels (``runtime.core.kernels``), shape rules
(``runtime.core.shapes``), derivative and batching rules (``autodiff``) and parity rows:
binary, contraction, conversion, convolution, fft, indexing, linalg, reductions, special,
structural, unary, windowed; ``_common`` holds the argument helpers they share.
"""

from __future__ import annotations

from runtime.core.lax import (
    binary,
    computations,
    contraction,
    conversion,
    convolution,
    indexing,
    linalg,
    reductions,
    special,
    structural,
    unary,
    windowed,
)
from runtime.core.lax import fft as _fft_family  # (the module: its function ``fft`` takes the name below)

# shared with the NumPy-named layer (runtime.numpy), which composes them
from runtime.core.lax._common import _is_index  # noqa: F401
from runtime.core.lax.binary import *  # noqa: F403
from runtime.core.lax.binary import check_integer_power  # noqa: F401
from runtime.core.lax.computations import *  # noqa: F403
from runtime.core.lax.contraction import *  # noqa: F403
from runtime.core.lax.conversion import *  # noqa: F403
from runtime.core.lax.convolution import *  # noqa: F403
from runtime.core.lax.fft import *  # noqa: F403
from runtime.core.lax.indexing import *  # noqa: F403
from runtime.core.lax.linalg import *  # noqa: F403
from runtime.core.lax.linalg import _batch_matmul, _broadcast_batch, _custom_rule  # noqa: F401
from runtime.core.lax.reductions import *  # noqa: F403
from runtime.core.lax.reductions import _mean  # noqa: F401
from runtime.core.lax.special import *  # noqa: F403
from runtime.core.lax.structural import *  # noqa: F403
from runtime.core.lax.structural import _fresh_copy  # noqa: F401
from runtime.core.lax.unary import *  # noqa: F403
from runtime.core.lax.windowed import *  # noqa: F403

__all__ = sorted(
    {
        name
        for module in (
            binary,
            computations,
            contraction,
            conversion,
            convolution,
            _fft_family,
            indexing,
            linalg,
            reductions,
            special,
            structural,
            unary,
            windowed,
        )
        for name in module.__all__
    }
)

"""Batching rules: one per op of the vocabulary, for ``autodiff.vmap``.

A batching rule runs an op on operands that carry an extra *batch* dimension::

    rule(op, args, dims, params) -> (outputs, out_dims)

``args`` are Tensors; ``dims[i]`` is the position of ``args[i]``'s batch
dimension, or ``None`` for an operand that is the same for every example (it
has the op's per-example shape). At least one operand is batched. The rule
returns the outputs and the position of each output's batch dimension.

Rules are written with the eager executor (``runtime.core.executor.apply``) on the
vocabulary's own ops, so a batched op under a recorder is recorded as
ordinary equations (``grad`` of a ``vmap`` is the ordinary VJP of those), and
they never change an operand's dtype: the operands of every equation vmap
replays already share the dtype its plan chose (the recording wrote the
promotion down as ``convert`` equations, which are batched like any unary
op), so a batched op plans exactly as the unbatched one did. What a rule adds
is shape plumbing: ``transpose`` to move a batch dimension, ``broadcast_in_dim``
for an unbatched operand the op needs batched, and the op's params rewritten
for one more dimension. Each rule is a named function followed by its
registration line (shared rules register once per op of their family).

Layout: the rules live in one module per op family, named after the sections of
``runtime/core/ops.py`` as ``runtime.core.kernels`` and ``autodiff.derivatives`` are: ``binary``,
``unary``, ``conversion``, ``contraction``, ``indexing``, ``reductions``, ``structural``,
``special``, ``linalg``, ``calls``, ``windowed``, ``convolution`` and ``fft``. The elementwise ops of
``binary``, ``unary``, ``conversion``, ``contraction`` (select, select_n, clamp), ``special`` and
``reductions`` (reduce_precision) share one rule, ``batch_elementwise``; the user calls' rule
``batch_user_call`` is also ``conv_general_dilated``'s for a batched kernel. Both live in
``_common`` with the table (``BATCH_RULES``) and the helpers that move and broadcast batch
dimensions. This package imports every family module, so ``BATCH_RULES`` is complete once it is
imported, and re-exports ``_common``'s public names.
"""

from __future__ import annotations

from autodiff.batching_rules import (  # noqa: F401  (each registers its rules in BATCH_RULES)
    binary,
    calls,
    contraction,
    conversion,
    convolution,
    fft,
    indexing,
    linalg,
    reductions,
    special,
    structural,
    unary,
    windowed,
)
from autodiff.batching_rules._common import (  # noqa: F401
    BATCH_RULES,
    BatchResult,
    BatchRule,
    Dims,
    Params,
    at_front,
    batch_elementwise,
    batch_size,
    batch_user_call,
    broadcast_batch,
    example_shape,
    missing_batch_rules,
    move_batch_dim,
)

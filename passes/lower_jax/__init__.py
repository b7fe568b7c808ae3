"""Lowering semantic graphs to JAX/XLA: ``lower_to_jax`` and ``export_stablehlo``.

The first step of a mechanical move (no behaviour change): ``passes/lower_jax.py`` is renamed to
``passes/lower_jax/binary.py`` unchanged, and the next commit carves it into one module per op family.
"""

from passes.lower_jax.binary import (  # noqa: F401
    LOWERINGS,
    X64_DTYPES,
    Lowered,
    LoweringError,
    LoweringRule,
    export_stablehlo,
    graph_dtypes,
    jax_supports,
    lower_to_jax,
    needs_x64,
    uniform_value,
    with_weak_type,
    x64_enabled,
)

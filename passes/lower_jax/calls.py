"""Lowerings of the user calls (``runtime.core.ops`` family ``call``: ``autodiff.custom_jvp`` /
``custom_vjp``), which lower the traced functions with ``lowering.lower_to_jax``.

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from passes.lower_jax._common import LOWERINGS, Lowered, _kind, _param
from passes.lower_jax.lowering import lower_to_jax
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn

# -- user calls (autodiff.custom_jvp / custom_vjp) ------------------------------------------------


def _call_examples(eqn: Eqn) -> list[Any]:
    """Example operands to trace a call's functions on: the recorded values where the graph kept
    them, else zeros (the functions' Python control flow must not depend on values, as under jit)."""
    from runtime.core.tensor import Tensor

    examples = []
    for var in eqn.inputs:
        value = var.value if var.value is not None else np.zeros(var.shape, var.dtype.storage)
        examples.append(Tensor(value, var.dtype))
    return examples


def _zeros_like(example: Any) -> Any:
    from runtime.core.tensor import Tensor

    return Tensor(np.zeros(example.shape, example.dtype.storage), example.dtype)


def _float0_to_zeros(values: Sequence[Any], likes: Sequence[Any]) -> list[Any]:
    """JAX hands integer values float0 tangents; castwise's rules take zeros of the value's dtype."""
    import jax
    import jax.numpy as jnp

    return [jnp.zeros(p.shape, p.dtype) if v.dtype == jax.dtypes.float0 else v for v, p in zip(values, likes)]  # noqa: B905


def _no_tangent(value: Any, dtype: DType) -> Any:
    """An integer output's tangent or cotangent is float0 in JAX."""
    import jax

    return value if dtype.is_inexact else np.zeros(value.shape, jax.dtypes.float0)


def custom_jvp_call_lowering(eqn: Eqn, *operands: Any) -> Lowered:
    """jax.custom_jvp of the traced function, with the traced rule (primals and tangents in) as its JVP."""
    import jax

    from runtime.core.graph import trace

    fun, rule = _param(eqn, "fun"), _param(eqn, "jvp")
    examples = _call_examples(eqn)
    n, n_out = len(examples), len(eqn.outputs)
    fun_jax = lower_to_jax(trace(lambda *xs: list(fun(*xs)), *examples))

    def traced_rule(*pt: Any) -> list[Any]:
        outs, tangents = rule(list(pt[:n]), list(pt[n:]))
        return [*outs, *tangents]

    rule_jax = lower_to_jax(trace(traced_rule, *examples, *[_zeros_like(x) for x in examples]))
    out_dtypes = [v.dtype for v in eqn.outputs]

    @jax.custom_jvp
    def call(*xs: Any) -> tuple[Any, ...]:
        return tuple(fun_jax(*xs))

    def call_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
        result = rule_jax(*primals, *_float0_to_zeros(tangents, primals))
        t_out = tuple(_no_tangent(t, d) for t, d in zip(result[n_out:], out_dtypes, strict=True))
        return tuple(result[:n_out]), t_out

    call.defjvp(call_jvp)
    return tuple(call(*operands))


LOWERINGS["custom_jvp_call"] = custom_jvp_call_lowering


def _conj(x: Any) -> Any:
    from jax import lax

    return lax.conj(x) if _kind(x) == "complex" else x


def custom_vjp_call_lowering(eqn: Eqn, *operands: Any) -> Lowered:
    """jax.custom_vjp of the traced function, with the traced ``fwd`` and ``bwd`` as its rule.

    castwise's ``bwd`` follows PyTorch's complex convention and JAX's is its
    conjugate, so JAX's rule is ``conj(bwd(conj(ct)))`` (the identity on real values).
    """
    import jax

    from runtime.core import hooks
    from runtime.core.graph import trace
    from runtime.core.tensor import Tensor

    fun, fwd, bwd = _param(eqn, "fun"), _param(eqn, "fwd"), _param(eqn, "bwd")
    examples = _call_examples(eqn)
    n_out = len(eqn.outputs)
    fun_jax = lower_to_jax(trace(lambda *xs: list(fun(*xs)), *examples))
    fwd_jax = lower_to_jax(trace(lambda *xs: [*fwd(*xs)[0], *fwd(*xs)[1]], *examples))
    with hooks.recorder_override(None):
        _, residuals = fwd(*examples)
    residuals = [Tensor(r.numpy(), r.dtype) for r in residuals]
    n_res = len(residuals)
    in_dtypes = [v.dtype for v in eqn.inputs]
    active = [i for i, d in enumerate(in_dtypes) if d.is_inexact]

    def traced_bwd(*rc: Any) -> list[Any]:
        cts = bwd(list(rc[:n_res]), list(rc[n_res:]))
        return [cts[i] for i in active]

    outs_like = [Tensor(np.zeros(v.shape, v.dtype.storage), v.dtype) for v in eqn.outputs]
    bwd_jax = lower_to_jax(trace(traced_bwd, *residuals, *outs_like))

    @jax.custom_vjp
    def call(*xs: Any) -> tuple[Any, ...]:
        return tuple(fun_jax(*xs))

    def call_fwd(*xs: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        result = fwd_jax(*xs)
        return tuple(result[:n_out]), tuple(result[n_out:])

    def call_bwd(res: Sequence[Any], cts: Sequence[Any]) -> tuple[Any, ...]:
        cts = _float0_to_zeros(cts, outs_like_jax)
        pulled = iter(bwd_jax(*res, *[_conj(c) for c in cts]))
        return tuple(_conj(next(pulled)) if i in active else None for i in range(len(in_dtypes)))

    import jax.numpy as jnp

    outs_like_jax = [jnp.zeros(v.shape, v.dtype.storage) for v in eqn.outputs]
    call.defvjp(call_fwd, call_bwd)
    return tuple(call(*operands))


LOWERINGS["custom_vjp_call"] = custom_vjp_call_lowering

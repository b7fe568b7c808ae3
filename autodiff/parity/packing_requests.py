"""The JAX references of a sweep case as ``Request`` s, built as ``autodiff.parity.cli`` builds them.

This is what ``benchmarks/parity.py`` and ``tests/autodiff/test_parity_packing.py`` feed
``autodiff.parity.packing``: the primal (``_run_jax``), each operand's JVP and the VJP
(``_jax_derivatives``), the joint JVPs of a format without a zero (``_jax_joint_jvp``),
and one ``jax.vmap`` per vmap row (``_check_vmap``), with the inputs, tangents and
cotangents the sweep draws. Building them compiles nothing: whether JAX accepts the
primal, and its output types, come from ``jax.eval_shape``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.parity._common import (
    NARROW_INT_DTYPES,
    Case,
    _call_ours,
    _case_rng,
    _has,
    _jax_function,
    _jax_modules,
    _make_inputs,
    _ours_args,
    _outputs,
    _planned,
    random_like,
)
from autodiff.parity.cli import _NO_ZERO, VMAP_BATCH, _active_sets, _vmap_rows
from autodiff.parity.packing import Request, _closed, _x64
from autodiff.testing import close_over
from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.promotion import PromotionError, use_policy


def _as_tuple(f: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
    return lambda *a: tuple(_outputs(f(*a)))


def _jvp_request(key: str, group: str, fj: Callable[..., Any], operands: Sequence[Any], active: tuple[int, ...],
                 tangents: dict[int, np.ndarray]) -> Request:  # fmt: skip
    """``J t`` with the operands of ``active`` active (the others closed over); a float0 tangent
    (an integer output's) is float64 zeros, as the sweep compares it."""
    jax, jnp = _jax_modules()[0], _jax_modules()[1]
    n = len(operands)

    def fn(*a: Any) -> tuple[Any, ...]:
        xs, ts = a[:n], a[n:]
        _, out_t = jax.jvp(_as_tuple(close_over(fj, xs, active)), tuple(xs[i] for i in active), tuple(ts))
        return tuple(jnp.zeros(t.shape, jnp.float64) if t.dtype == jax.dtypes.float0 else t for t in out_t)

    return Request(key, fn, (*operands, *(tangents[i] for i in active)), group)


def _vjp_request(key: str, group: str, fj: Callable[..., Any], operands: Sequence[Any], full: tuple[int, ...],
                 cts: Sequence[np.ndarray], inexact: Sequence[bool]) -> Request:  # fmt: skip
    """Every operand's cotangent in castwise's convention, ``conj(jax_vjp(conj(ct)))``, from one
    ``jax.vjp``; an integer output's cotangent is a float0 zero (not an argument)."""
    jax, jnp = _jax_modules()[0], _jax_modules()[1]
    n = len(operands)

    def fn(*a: Any) -> tuple[Any, ...]:
        xs, given = a[:n], iter(a[n:])
        outs, vjp_fn = jax.vjp(_as_tuple(close_over(fj, xs, full)), *(xs[i] for i in full))
        ct = tuple(jnp.conj(next(given)) if k else np.zeros(o.shape, jax.dtypes.float0)
                   for k, o in zip(inexact, outs, strict=True))  # fmt: skip
        return tuple(jnp.conj(g) for g in vjp_fn(ct))

    return Request(key, fn, (*operands, *(c for c, k in zip(cts, inexact, strict=True) if k)), group)


def _primal_avals(fj: Callable[..., Any], operands: Sequence[Any]) -> list[tuple[DType, tuple[int, ...]]] | None:
    """JAX's output types for the primal (traced, not run); None where JAX refuses it."""
    jax = _jax_modules()[0]
    f, arrays = _closed(Request("", fj, tuple(operands)))
    try:
        with _x64(eager=False):
            outs = jax.eval_shape(f, *arrays)
    except Exception:
        return None
    return [(dt.dtype(np.dtype(o.dtype)), tuple(o.shape)) for o in outs]


def requests_for(case: Case, seed: int = 0) -> list[Request]:
    """Every JAX reference the sweep asks for ``case``, keyed ``<case id>/<what>``."""
    spec, group = case.spec, case.spec.family
    if spec.op == "concatenate" and _has(case, *NARROW_INT_DTYPES):
        return []  # the sweep refuses these before JAX sees them (XLA's CPU compiler aborts)
    try:
        if spec.arity and case.policy != "jax":
            _planned(case)
    except PromotionError:
        return []  # no plan, no reference
    operands = _make_inputs(case, seed)
    with _x64(eager=False):
        fj = _jax_function(case, operands)
    out: list[Request] = [Request(f"{case.id}/primal", fj, tuple(operands), group)]
    avals = _primal_avals(fj, operands)
    if avals is None:
        return out  # JAX refuses: the case stops at its agree check
    if spec.arity:
        examples = [list(operands)] + [_make_inputs(case, seed + k) for k in range(1, VMAP_BATCH)]
        jax = _jax_modules()[0]
        for axis, batched in _vmap_rows(case):
            in_axes = tuple(axis if i in batched else None for i in range(len(operands)))
            stacked = tuple(np.stack([np.asarray(e[i]) for e in examples], axis=axis) if i in batched else operands[i]
                            for i in range(len(operands)))  # fmt: skip
            out.append(Request(f"{case.id}/vmap{axis}{list(batched)}", jax.vmap(fj, in_axes=in_axes), stacked, group))
    try:
        with use_policy(case.policy):
            eager = _call_ours(case, _ours_args(case, operands))
    except Exception:
        return out  # castwise refuses: no derivative is compared
    if [(o.dtype, o.shape) for o in eager] != avals:
        return out  # a wrong dtype or shape: the sweep compares no derivative
    sets = _active_sets(case)
    if not sets or not any(o.dtype.is_inexact for o in eager):
        return out
    full = sets[-1]
    slots = case.operand_slots
    rng = _case_rng(seed, "derivatives", case.id)
    tangents = {i: random_like(slots[i], np.shape(operands[i]), rng) for i in full}  # type: ignore[arg-type]
    cts = [random_like(o.dtype, o.shape, rng) for o in eager]
    for i in full:
        out.append(_jvp_request(f"{case.id}/jvp{i}", group, fj, operands, (i,), tangents))
    inexact = [o.dtype.is_inexact for o in eager]
    out.append(_vjp_request(f"{case.id}/vjp", group, fj, operands, full, cts, inexact))
    for active in sets:
        if len(active) > 1 and any(d in _NO_ZERO for d in [*(o.dtype for o in eager), *(slots[i] for i in active)]):
            out.append(_jvp_request(f"{case.id}/jvp{list(active)}", group, fj, operands, active, tangents))
    return out


def quick_requests(seed: int = 0) -> list[Request]:
    """Every request of ``castwise parity --quick``."""
    from autodiff.parity.cases import build_cases

    return [r for case in build_cases(quick=True, seed=seed) for r in requests_for(case, seed)]

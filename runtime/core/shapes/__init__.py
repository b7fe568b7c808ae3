"""Shape and dtype rules for every op of the vocabulary (abstract evaluation).

``abstract_eval(op, in_avals, params)`` takes the ``(dtype, shape)`` of each
operand and the op's static params, checks them, and returns the output avals.
It is the single place where an op's signature is enforced: the kernels
(``runtime.core.kernels``), the graph verifier and the graph builders all call it,
so a mismatch is caught before any array work and with the same message.

Checks run in a fixed order, each with its own exception class:

1. arity                                   -> ``ArityError`` (a ``TypeError``)
2. promoted operands share one dtype       -> ``KernelDTypeError`` (a ``TypeError``)
3. each operand's dtype kind is accepted   -> ``OpTypeError`` (a ``TypeError``)
4. shapes and params                       -> ``ShapeError`` (a ``ValueError``)

Which operands are "promoted" mirrors ``runtime.core.plan`` (the plan converts them
to one dtype before the kernel runs, so disagreement here means a caller
skipped the plan). Accepted dtypes follow ``jax.lax``; the few deliberate
departures are noted at the rule.

Every rule is a named function followed by its registration in
``SHAPE_RULES``.

Layout: the shape rules live in one module per op family, named after the sections of
``runtime/core/ops.py``: ``binary`` (binary, compare, logical); ``contraction`` (clamp, concatenate,
dot_general, select); ``indexing`` (dynamic_slice, dynamic_update_slice, gather, scatter); ``unary``
(unary); ``conversion`` (convert); ``reductions`` (reduce); ``structural`` (structural); ``linalg``
(linalg); ``calls`` (call); ``windowed`` (window); ``convolution`` (conv); ``fft`` (fft); ``special`` (the special
functions: erf, lgamma, igamma ...). What several families
share is in ``_common``. This package re-exports their names, holds the checked entry point and
imports every family module, so ``SHAPE_RULES`` is complete once it is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.ops import OpDef
from runtime.core.shapes import (
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
from runtime.core.shapes._common import (  # noqa: F401
    PARAM_DEFAULTS,
    REAL_DTYPE,
    SHAPE_RULES,
    ArityError,
    Aval,
    KernelDTypeError,
    OpMemoryError,
    OpTypeError,
    OpValueError,
    PrecisionError,
    Shape,
    ShapeError,
    ShapeRule,
    _fail,
    describe,
    format_aval,
    operand_names,
    param,
    scalar_kind,
)
from runtime.core.shapes.binary import (  # noqa: F401
    COMPLEX_OF,
    add_rule,
    and_rule,
    atan2_rule,
    complex_rule,
    div_rule,
    eq_rule,
    floor_div_rule,
    ge_rule,
    gt_rule,
    le_rule,
    lt_rule,
    max_rule,
    min_rule,
    mul_rule,
    ne_rule,
    nextafter_rule,
    or_rule,
    pow_rule,
    rem_rule,
    sub_rule,
    xor_rule,
)
from runtime.core.shapes.calls import (  # noqa: F401
    custom_call_rule,
)
from runtime.core.shapes.contraction import (  # noqa: F401
    PRECISION_NAMES,
    DotDimensionNumbers,
    Precision,
    canonical_precision,
    check_precision,
    clamp_rule,
    concatenate_rule,
    dot_dimension_numbers,
    dot_general_rule,
    select_n_rule,
    select_rule,
)
from runtime.core.shapes.conversion import (  # noqa: F401
    convert_rule,
)
from runtime.core.shapes.convolution import (  # noqa: F401
    Conv,
    ConvDimensionNumbers,
    conv_dimension_numbers,
    conv_general_dilated_rule,
    conv_geometry,
    conv_output_shape,
    conv_vjp_lhs_padding,
    conv_vjp_rhs_padding,
)
from runtime.core.shapes.fft import (  # noqa: F401
    fft_rule,
)
from runtime.core.shapes.indexing import (  # noqa: F401
    GATHER_DEFAULT_MODE,
    SCATTER_DEFAULT_MODE,
    GatherDimensionNumbers,
    Mode,
    ScatterDimensionNumbers,
    dynamic_slice_rule,
    dynamic_update_slice_rule,
    gather_dimension_numbers,
    gather_rule,
    parse_mode,
    scatter_add_rule,
    scatter_dimension_numbers,
    scatter_max_rule,
    scatter_min_rule,
    scatter_mul_rule,
    scatter_rule,
    scatter_window,
)
from runtime.core.shapes.linalg import (  # noqa: F401
    cholesky_rule,
    eig_rule,
    eigh_rule,
    lu_rule,
    qr_rule,
    svd_rule,
    triangular_solve_rule,
)
from runtime.core.shapes.reductions import (  # noqa: F401
    reduce_max_rule,
    reduce_min_rule,
    reduce_prod_rule,
    reduce_sum_rule,
)
from runtime.core.shapes.structural import (  # noqa: F401
    broadcast_in_dim_rule,
    full_rule,
    iota_rule,
    pad_rule,
    reshape_rule,
    reverse_rule,
    slice_rule,
    sort_rule,
    split_rule,
    top_k_rule,
    transpose_rule,
)
from runtime.core.shapes.unary import (  # noqa: F401
    ROUNDING_METHODS,
    abs_rule,
    conj_rule,
    cos_rule,
    exp_rule,
    expm1_rule,
    imag_rule,
    is_finite_rule,
    log1p_rule,
    log_rule,
    logistic_rule,
    neg_rule,
    not_rule,
    real_rule,
    reciprocal_rule,
    round_rule,
    rsqrt_rule,
    sign_rule,
    sin_rule,
    sqrt_rule,
    square_rule,
    tanh_rule,
)
from runtime.core.shapes.windowed import (  # noqa: F401
    SELECT_PRIMS,
    Window,
    dilate_dim,
    reduce_window_max_rule,
    reduce_window_min_rule,
    reduce_window_sum_rule,
    select_and_gather_add_rule,
    select_and_scatter_add_rule,
    stride_dim,
    window_geometry,
    window_output_shape,
)

#: The op-family modules: importing one registers its shape rules in ``SHAPE_RULES``.
FAMILY_MODULES = (
    binary,
    contraction,
    indexing,
    unary,
    conversion,
    reductions,
    structural,
    linalg,
    calls,
    special,
    windowed,
    convolution,
    fft,
)


# -- params: which are optional, with their defaults -----------------------------------------


def _check_params(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> None:
    for name in params:
        if name not in op.params:
            declared = ", ".join(op.params) or "no params"
            raise _fail(ShapeError, op, avals, f"unknown param {name!r} (takes {declared})")
    defaults = PARAM_DEFAULTS.get(op.name, {})
    for name in op.params:
        if name not in params and name not in defaults:
            raise _fail(ShapeError, op, avals, f"missing param {name!r}")


def _check_arity(op: OpDef, avals: Sequence[Aval]) -> None:
    # A ``*name`` slot may sit anywhere (dynamic_slice's start indices come last),
    # so OpDef.arity, which only looks at the first slot, is not used here.
    fixed = sum(1 for s in op.operands if not s.startswith("*"))
    variadic = fixed != len(op.operands)
    n = len(avals)
    if (variadic and n < fixed) or (not variadic and n != fixed):
        expected = f"at least {fixed}" if variadic else str(fixed)
        raise ArityError(
            f"{op.name}: expected {expected} operands ({', '.join(op.operands) or 'none'}), got {n}"
            + (f": {describe(op, avals)}" if avals else "")
        )


# -- entry point ------------------------------------------------------------------------------

_CACHE: dict[Any, tuple[Aval, ...]] = {}
_CACHE_LIMIT: Final = 8192


def freeze_params(params: Mapping[str, Any]) -> Any:
    """A hashable key for ``params`` (``None`` when empty); raises ``TypeError`` if unhashable."""
    if not params:
        return None
    key = tuple(sorted((k, _freeze(v)) for k, v in params.items()))
    hash(key)
    return key


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        # Keep the type so a JAX NamedTuple and a plain tuple never share an entry.
        return (type(v), tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return (dict, tuple(sorted((k, _freeze(x)) for k, x in v.items())))
    if isinstance(v, (bool, int, float, complex)):
        # 1 == 1.0 == True == (1+0j) but they validate differently (a complex fill).
        return (type(v), v)
    return v


def resolve(op: OpDef | str) -> OpDef:
    """The ``OpDef`` for ``op`` (a name or an ``OpDef``)."""
    return op if isinstance(op, OpDef) else ops.get(op)


def abstract_eval_cached(opdef: OpDef, avals: tuple[Aval, ...], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """``abstract_eval`` for already-normalised avals (tuples of DType and int tuples); memoised."""
    try:
        key: Any = (opdef.name, avals, freeze_params(params))
    except TypeError:
        key = None  # an unhashable param (an ndarray fill value): validate every time
    if key is not None:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
    out = _abstract_eval(opdef, avals, params)
    if key is not None:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()  # crude bound: shapes in a long run can be unbounded
        _CACHE[key] = out
    return out


def _abstract_eval(opdef: OpDef, avals: tuple[Aval, ...], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    _check_arity(opdef, avals)
    _check_params(opdef, avals, params)
    rule = SHAPE_RULES.get(opdef.name)
    if rule is None:
        raise NotImplementedError(f"{opdef.name}: no shape rule")
    return rule(opdef, avals, params)


def abstract_eval(op: OpDef | str, in_avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """Check a call of ``op`` and return its output avals ``((dtype, shape), ...)``.

    ``in_avals`` holds one ``(dtype, shape)`` per operand; ``dtype`` may be
    anything ``runtime.dtype()`` accepts. Raises ``ArityError``,
    ``KernelDTypeError``, ``OpTypeError`` or ``ShapeError`` (in that order of
    checking) with a message naming the op and every operand's dtype and
    shape. Results are memoised per (op, avals, params).
    """
    opdef = resolve(op)
    avals = tuple((d if isinstance(d, DType) else dt.dtype(d), tuple(int(n) for n in s)) for d, s in in_avals)
    return abstract_eval_cached(opdef, avals, params)


def _check_complete() -> None:
    # Import-time guard: a newly declared op without a rule fails loudly here,
    # not at its first use.
    missing = [name for name in ops.OPS if name not in SHAPE_RULES]
    if missing:
        raise ImportError(f"runtime.core.shapes: no shape rule for {', '.join(missing)}")


_check_complete()

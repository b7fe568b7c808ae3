"""Same-dtype NumPy kernels for every op of the vocabulary.

A kernel takes NumPy arrays in the storage dtype of their castwise ``DType``
(promotion already happened: ``runtime.core.plan`` converted the operands) plus the
op's params as keyword arguments, and returns a tuple of output arrays. Values
follow ``jax.lax`` on CPU, not NumPy, where the two differ:

* floats narrower than 32 bits (float16, bfloat16, the float8/float6/float4
  families) are computed in float32 and rounded back after every op, which is
  what XLA's CPU backend does, so results match JAX bit for bit for the
  correctly rounded ops;
* int1/int2/int4 and their unsigned twins are computed in 8 bits and wrapped
  back;
* complex32 and bcomplex32 (no XLA type; PyTorch computes complex32 in
  complex64, its "opmath" type) are computed in complex64 and each part is
  rounded back to float16 / bfloat16 after every op, as XLA does for the narrow
  floats; ``abs``/``real``/``imag`` give the part's dtype. (ml_dtypes 0.7 gives
  these types NumPy's kind "c", and NumPy's ``.real`` of them is not the real
  part: kernels widen them before any complex branch.)
* integer ``div``/``rem`` use XLA's total definitions (``x / 0 == -1``,
  ``x % 0 == x``, ``INT_MIN / -1 == INT_MIN``);
* ``convert`` saturates float -> int and maps NaN to 0, like XLA;
  float8_e8m0fnu (no zero, sign or infinity) turns 0, negative values, +-inf
  and float64 values below 2**-127 into NaN, rounds every value strictly
  between 2**-127 and 2**-126 up to 2**-126 (ml_dtypes 0.7 rounds those to
  nearest: castwise follows XLA whichever is installed), and none of its
  values is zero (so all convert to True);
* ``max`` / ``min`` and their reductions order -0.0 < +0.0, as XLA does;
  complex ``max`` / ``min`` pick ``x`` or ``y`` as XLA does (docs/parity.md);
* kernels give IEEE results (``inf - inf`` is NaN, ``1 / 0`` is inf) without NumPy's
  RuntimeWarnings, as XLA and JAX do (``_common.FPE_STATE``);
* ``reduce_sum`` / ``reduce_prod`` fold in XLA CPU's order, rounding after
  every step (``_xla_fold``: windows of 32, then left to right); float8_e8m0fnu
  sums, maxima and minima are NaN, like XLA's, whose identity converts to NaN.

One deliberate departure: subnormal floats keep IEEE gradual underflow (as in
NumPy), where XLA on CPU flushes them to zero, inputs and results alike. A
value below the smallest normal number of its dtype can be tiny but non-zero
here and 0 in JAX (pinned by ``tests/passes/test_lower_jax.py``). In
float8_e8m0fnu, which has no zero, XLA's flushed value is NaN: e8m0 arithmetic
whose float32 result is below 2**-126 gives NaN there.

``run_kernel`` is the checked entry point the eager executor and the graph
interpreter use: it validates the call with ``runtime.core.shapes.abstract_eval``
before any array work and checks that the kernel returned exactly the avals
promised. Kernels may return views of their inputs (reshape, transpose,
slice ...): callers that mutate buffers in place must copy first.

Layout: the kernels live in one module per op family, named after the sections of
``runtime/core/ops.py``: ``binary`` (binary, compare, logical); ``contraction`` (clamp, concatenate,
dot_general, select); ``indexing`` (dynamic_slice, dynamic_update_slice, gather, scatter); ``unary``
(unary); ``conversion`` (convert); ``reductions`` (reduce); ``structural`` (structural); ``linalg``
(linalg); ``calls`` (call); ``windowed`` (window); ``convolution`` (conv); ``fft`` (fft); ``special`` (the special
functions: erf, lgamma, igamma ...). What several families
share is in ``_common`` and ``conversion``. This package re-exports their names, holds the checked
entry point and imports every family module, so ``KERNELS`` is complete once it is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import shapes
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError
from runtime.core.kernels import (
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
from runtime.core.kernels._common import (  # noqa: F401
    FPE_IGNORE,
    FPE_STATE,
    KERNELS,
    Array,
    Kernel,
)
from runtime.core.kernels.binary import (  # noqa: F401
    add_kernel,
    and_kernel,
    atan2_kernel,
    complex_kernel,
    div_kernel,
    eq_kernel,
    floor_div_kernel,
    ge_kernel,
    gt_kernel,
    le_kernel,
    lt_kernel,
    max_kernel,
    min_kernel,
    mul_kernel,
    ne_kernel,
    nextafter_kernel,
    or_kernel,
    pow_kernel,
    rem_kernel,
    shift_left_kernel,
    shift_right_arithmetic_kernel,
    shift_right_logical_kernel,
    sub_kernel,
    xor_kernel,
)
from runtime.core.kernels.calls import (  # noqa: F401
    custom_call_kernel,
)
from runtime.core.kernels.contraction import (  # noqa: F401
    clamp_kernel,
    concatenate_kernel,
    dot_general_kernel,
    select_kernel,
    select_n_kernel,
)
from runtime.core.kernels.conversion import (  # noqa: F401
    convert_array,
    convert_kernel,
    scalar_array,
)
from runtime.core.kernels.convolution import (  # noqa: F401
    conv_general_dilated_kernel,
)
from runtime.core.kernels.fft import (  # noqa: F401
    fft_kernel,
)
from runtime.core.kernels.indexing import (  # noqa: F401
    dynamic_slice_kernel,
    dynamic_update_slice_kernel,
    gather_kernel,
    scatter_add_kernel,
    scatter_kernel,
    scatter_max_kernel,
    scatter_min_kernel,
    scatter_mul_kernel,
)
from runtime.core.kernels.linalg import (  # noqa: F401
    cholesky_kernel,
    eig_kernel,
    eigh_kernel,
    lu_kernel,
    qr_kernel,
    svd_kernel,
    triangular_solve_kernel,
)
from runtime.core.kernels.reductions import (  # noqa: F401
    reduce_max_kernel,
    reduce_min_kernel,
    reduce_prod_kernel,
    reduce_sum_kernel,
)
from runtime.core.kernels.structural import (  # noqa: F401
    broadcast_in_dim_kernel,
    full_kernel,
    iota_kernel,
    pad_kernel,
    reshape_kernel,
    reverse_kernel,
    slice_kernel,
    sort_kernel,
    split_kernel,
    top_k_kernel,
    transpose_kernel,
)
from runtime.core.kernels.unary import (  # noqa: F401
    abs_kernel,
    ceil_kernel,
    clz_kernel,
    conj_kernel,
    cos_kernel,
    exp2_kernel,
    exp_kernel,
    expm1_kernel,
    floor_kernel,
    imag_kernel,
    is_finite_kernel,
    log1p_kernel,
    log_kernel,
    logistic_kernel,
    neg_kernel,
    not_kernel,
    population_count_kernel,
    real_kernel,
    reciprocal_kernel,
    round_kernel,
    rsqrt_kernel,
    sign_kernel,
    sin_kernel,
    sqrt_kernel,
    square_kernel,
    tanh_kernel,
)
from runtime.core.kernels.windowed import (  # noqa: F401
    reduce_window_max_kernel,
    reduce_window_min_kernel,
    reduce_window_sum_kernel,
    select_and_gather_add_kernel,
    select_and_scatter_add_kernel,
)
from runtime.core.ops import OpDef
from runtime.core.shapes import ArityError, Aval, KernelDTypeError

#: The op-family modules: importing one registers its kernels in ``KERNELS``.
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


class KernelOutputError(CastwiseError, RuntimeError):
    """A kernel returned an array whose dtype or shape differs from its abstract value (a castwise bug)."""


# -- checked entry point ---------------------------------------------------------------------------


class _Plan:
    """What run_kernel memoises per call signature: input storages and output avals."""

    __slots__ = ("in_storage", "out_avals", "out_expect", "single")

    def __init__(self, in_storage: list[np.dtype[Any]], out_avals: tuple[Aval, ...]) -> None:
        self.in_storage = in_storage
        self.out_avals = out_avals
        self.out_expect = tuple((d.storage, s) for d, s in out_avals)
        self.single = len(out_avals) == 1


_PLANS: dict[Any, _Plan] = {}
_PLAN_LIMIT: Final = 8192


def _prepare(name: str, in_dtypes: Sequence[Any], arrays: Sequence[Array], params: Mapping[str, Any]) -> _Plan:
    opdef = shapes.resolve(name)
    dtypes = tuple(d if isinstance(d, DType) else dt.dtype(d) for d in in_dtypes)
    if len(dtypes) != len(arrays):
        raise ArityError(f"{name}: {len(dtypes)} dtypes for {len(arrays)} arrays")
    avals = tuple((d, tuple(a.shape)) for d, a in zip(dtypes, arrays, strict=True))
    out_avals = shapes.abstract_eval_cached(opdef, avals, params)
    if name not in KERNELS:
        raise NotImplementedError(f"{name}: no kernel")
    return _Plan([d.storage for d in dtypes], out_avals)


def _storage_error(name: str, in_dtypes: Sequence[Any], arrays: Sequence[Array]) -> KernelDTypeError:
    opdef = shapes.resolve(name)
    dtypes = [d if isinstance(d, DType) else dt.dtype(d) for d in in_dtypes]
    names = shapes.operand_names(opdef, len(arrays))
    for operand, d, a in zip(names, dtypes, arrays, strict=True):
        if a.dtype != d.storage:
            return KernelDTypeError(
                f"{name}: {shapes.format_aval(operand, (d, tuple(a.shape)))} holds {a.dtype} data, expected {d.storage}"
            )
    raise AssertionError("no storage mismatch")  # pragma: no cover


#: NumPy's floating-point error state, set to "ignore" around each kernel call (``_common.FPE_STATE``)
_fpe_set, _fpe_reset = FPE_STATE.set, FPE_STATE.reset


def run_kernel(
    op: OpDef | str, in_dtypes: Sequence[DType], arrays: Sequence[Array], params: Mapping[str, Any]
) -> tuple[tuple[Array, ...], tuple[Aval, ...]]:
    """Run ``op``'s kernel on ``arrays`` (NumPy arrays in the storage of ``in_dtypes``).

    Validates the call first (``abstract_eval``: arity, dtypes, shapes,
    params; the same errors), checks each array holds its dtype's storage
    (``KernelDTypeError``), runs the kernel and checks that each output has
    exactly its aval's storage dtype and shape (``KernelOutputError``
    otherwise). Returns ``(outputs, output_avals)``. Validation is memoised
    per (op, dtypes, shapes, params), so a repeated small op costs a
    dictionary lookup and a few identity checks on top of the NumPy call.
    """
    name = op if isinstance(op, str) else op.name
    try:
        key: Any = (
            name,
            shapes.freeze_params(params) if params else None,
            tuple(in_dtypes),
            tuple([a.shape for a in arrays]),
        )
        plan = _PLANS.get(key)
    except TypeError:  # an unhashable param (an ndarray fill value): validate every time
        key, plan = None, None
    if plan is None:
        plan = _prepare(name, in_dtypes, arrays, params)
        if key is not None:
            if len(_PLANS) >= _PLAN_LIMIT:
                _PLANS.clear()  # crude bound: a long run can see unboundedly many shapes
            _PLANS[key] = plan
    # Built-in NumPy dtypes are singletons, so ``is`` settles the common case.
    if [a.dtype for a in arrays] != plan.in_storage:
        raise _storage_error(name, in_dtypes, arrays)
    # Looked up per call (not memoised) so a kernel replaced in KERNELS takes effect; IEEE results
    # without NumPy's floating-point warnings (_common.FPE_STATE)
    token = _fpe_set(FPE_IGNORE)
    try:
        outs = KERNELS[name](*arrays, **params)
    finally:
        _fpe_reset(token)
    if plan.single and len(outs) == 1:
        out = outs[0]
        storage, shape = plan.out_expect[0]
        if type(out) is not np.ndarray:
            out = np.asarray(out)  # NumPy returns scalars for 0-d results
        if (out.dtype is not storage and out.dtype != storage) or out.shape != shape:
            raise _output_error(name, out, storage, shape)
        return (out,), plan.out_avals
    if len(outs) != len(plan.out_expect):
        raise KernelOutputError(f"{name}: kernel returned {len(outs)} outputs, expected {len(plan.out_expect)}")
    checked: list[Array] = []
    for out, (storage, shape) in zip(outs, plan.out_expect, strict=True):
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        if out.dtype != storage or out.shape != shape:
            raise _output_error(name, out, storage, shape)
        checked.append(out)
    return tuple(checked), plan.out_avals


def _output_error(name: str, out: Array, storage: np.dtype[Any], shape: tuple[int, ...]) -> KernelOutputError:
    return KernelOutputError(f"{name}: kernel returned {out.dtype}{list(out.shape)}, expected {storage}{list(shape)}")


def _check_complete() -> None:
    # Import-time guard: every declared op needs a kernel.
    missing = [name for name in shapes.ops.OPS if name not in KERNELS]
    if missing:
        raise ImportError(f"runtime.core.kernels: no kernel for {', '.join(missing)}")


_check_complete()

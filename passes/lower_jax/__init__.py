"""Lowering semantic graphs to JAX/XLA: ``lower_to_jax`` and ``export_stablehlo``.

``lower_to_jax(graph)`` turns a graph into a plain Python function over JAX
arrays in which every equation becomes the corresponding ``jax.lax``
primitive. It never calls ``jax.numpy`` on values (which would promote on its
own): ``jax.lax`` refuses operands of different dtypes, so lowering is an
independent check of the ``promote`` pass. A raw, unpromoted graph fails with
lax's own ``TypeError`` (with the offending equation attached as a note);
every promoted graph lowers. The lowered function also checks, equation by
equation, that lax produced exactly the dtype and shape the graph recorded
(``LoweringError`` otherwise: the shape rules and lax disagree, a castwise bug).

The function is traceable: ``jax.jit``, ``jax.export``, ``jax.sharding`` and
``jax.vmap`` take it like any JAX function. Where castwise documents a
departure from ``jax.lax`` (``runtime.core.kernels``), the lowering reproduces
castwise's meaning with lax ops:

* ``pow`` on integers uses jnp.power's binary exponentiation (lax.pow has none);
* ``floor_div`` is jnp.floor_divide's algorithm, written with lax ops;
* ``conj`` of a real value is the value itself (lax.conj would make it complex);
* ``convert`` from complex to a real dtype takes the real part explicitly;
* ``dynamic_slice`` / ``dynamic_update_slice`` clamp negative starts instead of
  wrapping them (``allow_negative_indices=False``), as XLA does natively;
* ``eigh`` / ``cholesky`` read one triangle (``symmetrize_input=False``);
* ``qr`` / ``svd`` / ``eig`` give the same factors up to LAPACK's gauge (signs, phases),
  which castwise's kernels take from the same LAPACK routines;
* ``dot_general`` and ``conv_general_dilated`` pass a recorded ``precision=`` on to lax and
  otherwise ask for ``Precision.HIGHEST`` (castwise never picks reduced precision such as TF32
  itself); ``dot_general`` refuses mixed operand dtypes, which lax.dot_general alone would promote.

JAX is an optional dependency: it is imported inside functions only.
``LOWERINGS`` maps every op of the vocabulary to its rule; each rule is a named
function followed by its registration, like the kernels and shape rules.

Layout: the rules live in one module per op family, named like those of ``runtime.core.kernels`` and
``runtime.core.shapes`` (after the sections of ``runtime/core/ops.py``): ``binary`` (binary, compare, logical);
``contraction`` (clamp, concatenate, dot_general, select); ``indexing`` (dynamic_slice,
dynamic_update_slice, gather, scatter); ``unary`` (unary); ``conversion`` (convert); ``reductions``
(reduce, scan, reduce_precision); ``structural`` (structural); ``linalg`` (linalg); ``calls`` (call);
``windowed`` (window); ``convolution`` (conv); ``fft`` (fft); ``special`` (the special functions: erf, lgamma,
igamma ...). What several families share (``LOWERINGS``, ``LoweringError``, the helpers, the rules
that are one lax function, ``with_weak_type``) is in ``_common``; the driver (``lower_to_jax``,
``export_stablehlo``, ``graph_dtypes``, ``needs_x64`` ...) is in ``lowering``. This package
re-exports their names and imports every family module, so ``LOWERINGS`` is complete once it is
imported.
"""

from passes.lower_jax import (
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
from passes.lower_jax._common import (  # noqa: F401
    LOWERINGS,
    X64_DTYPES,
    Lowered,
    LoweringError,
    LoweringRule,
    with_weak_type,
    x64_enabled,
)
from passes.lower_jax.binary import (  # noqa: F401
    add_lowering,
    and_lowering,
    atan2_lowering,
    div_lowering,
    eq_lowering,
    floor_div_lowering,
    ge_lowering,
    gt_lowering,
    le_lowering,
    lt_lowering,
    max_lowering,
    min_lowering,
    mul_lowering,
    ne_lowering,
    or_lowering,
    pow_lowering,
    rem_lowering,
    sub_lowering,
    xor_lowering,
)
from passes.lower_jax.calls import (  # noqa: F401
    custom_jvp_call_lowering,
    custom_vjp_call_lowering,
)
from passes.lower_jax.contraction import (  # noqa: F401
    clamp_lowering,
    concatenate_lowering,
    dot_general_lowering,
    select_lowering,
    select_n_lowering,
)
from passes.lower_jax.conversion import (  # noqa: F401
    convert_lowering,
)
from passes.lower_jax.convolution import (  # noqa: F401
    conv_general_dilated_lowering,
)
from passes.lower_jax.fft import (  # noqa: F401
    fft_lowering,
)
from passes.lower_jax.indexing import (  # noqa: F401
    dynamic_slice_lowering,
    dynamic_update_slice_lowering,
    gather_lowering,
    scatter_add_lowering,
    scatter_lowering,
    scatter_max_lowering,
    scatter_min_lowering,
    scatter_mul_lowering,
)
from passes.lower_jax.linalg import (  # noqa: F401
    cholesky_lowering,
    eig_lowering,
    eigh_lowering,
    lu_lowering,
    qr_lowering,
    svd_lowering,
    triangular_solve_lowering,
)
from passes.lower_jax.lowering import (  # noqa: F401
    export_stablehlo,
    graph_dtypes,
    jax_supports,
    lower_to_jax,
    needs_x64,
    uniform_value,
)
from passes.lower_jax.reductions import (  # noqa: F401
    argmax_lowering,
    argmin_lowering,
    cumlogsumexp_lowering,
    cummax_lowering,
    cummin_lowering,
    cumprod_lowering,
    cumsum_lowering,
    reduce_and_lowering,
    reduce_max_lowering,
    reduce_min_lowering,
    reduce_or_lowering,
    reduce_precision_lowering,
    reduce_prod_lowering,
    reduce_sum_lowering,
    reduce_xor_lowering,
)
from passes.lower_jax.structural import (  # noqa: F401
    broadcast_in_dim_lowering,
    full_lowering,
    iota_lowering,
    pad_lowering,
    reshape_lowering,
    reverse_lowering,
    slice_lowering,
    sort_lowering,
    split_lowering,
    top_k_lowering,
    transpose_lowering,
)
from passes.lower_jax.unary import (  # noqa: F401
    abs_lowering,
    conj_lowering,
    cos_lowering,
    exp_lowering,
    expm1_lowering,
    imag_lowering,
    log1p_lowering,
    log_lowering,
    logistic_lowering,
    neg_lowering,
    real_lowering,
    reciprocal_lowering,
    round_lowering,
    rsqrt_lowering,
    sign_lowering,
    sin_lowering,
    sqrt_lowering,
    square_lowering,
    tanh_lowering,
)
from passes.lower_jax.windowed import (  # noqa: F401
    reduce_window_max_lowering,
    reduce_window_min_lowering,
    reduce_window_sum_lowering,
    select_and_gather_add_lowering,
    select_and_scatter_add_lowering,
)

#: The op-family modules: importing one registers its rules in ``LOWERINGS``.
FAMILY_MODULES = (
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

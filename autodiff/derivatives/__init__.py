"""JVP and VJP (transpose) rules of the op vocabulary, one module per op family.

The tables are ``autodiff.rules`` (``JVP_RULES``, ``VJP_RULES``, ``VJP_SAVES``; its docstring gives
a rule's signature): ``autodiff.rules.load_rules`` imports every module of ``RULE_MODULES`` and
each registers its rules there. Each rule is a named function followed by its registration line;
the trailing comment states the identity it implements. Rules are written with the runtime's op
functions only, so under a recorder they record a derivative program of vocabulary ops
(differentiable again).

Layout: one module per op family, named after the sections of ``runtime/core/ops.py`` as
``runtime.core.kernels``, ``runtime.core.shapes`` and ``autodiff.parity``'s ``cases_*`` modules are:

* ``binary``: add, sub, mul, div, rem, pow, max, min, atan2, complex;
* ``unary``: neg, abs, sign, exp, log, expm1, log1p, sin, cos, tanh, logistic, sqrt, rsqrt, conj,
  real, imag, square, reciprocal, exp2, sinh, cosh, tan, asin, acos, atan, asinh, acosh, atanh, cbrt;
* ``conversion``: convert;
* ``contraction``: dot_general, concatenate, select, select_n, clamp;
* ``indexing``: gather, scatter, scatter_add, scatter_mul, scatter_min, scatter_max, dynamic_slice,
  dynamic_update_slice;
* ``reductions``: reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_precision, cumsum,
  cumprod, cummax, cummin, cumlogsumexp;
* ``structural``: reshape, transpose, broadcast_in_dim, slice, pad, reverse, sort, top_k, split;
* ``special``: erf, erfc, erf_inv, lgamma, digamma, polygamma, igamma, igammac, bessel_i0e, bessel_i1e;
* ``linalg``: eigh, cholesky, triangular_solve, lu, qr, svd, eig, geqrf;
* ``windowed``: reduce_window_sum, reduce_window_max, reduce_window_min, select_and_gather_add,
  select_and_scatter_add;
* ``convolution``: conv_general_dilated;
* ``fft``: fft (FFT, IFFT, RFFT, IRFFT).

The ``calls`` family (``custom_jvp_call``, ``custom_vjp_call``) has no module here: its rules run
the user's and are registered by ``autodiff.custom``. Ops declared without derivatives have no rule
(``autodiff.rules.non_differentiable_ops``). What several families' rules share is in ``_common``.
The batching rules are laid out the same way in ``autodiff.batching_rules``.

Conventions of the elementwise rules (``binary``, ``unary``, ``conversion``, ``special``;
``select``, ``select_n`` and ``clamp`` in ``contraction``; see ``autodiff.rules``):

* Tangents have the output's dtype and shape, cotangents the input's. The
  operands of a binary op already share one dtype (the recorder wrote the
  promotion down as ``convert`` equations), so rules combine same-dtype values
  and build their constants with ``full`` in the exact dtype needed (no reliance
  on the active policy's treatment of Python scalars).
* Reverse mode uses the real inner product ``<a, b> = Re(sum(conj(a) * b))``: for
  a holomorphic op with derivative ``f'(z)`` the JVP is ``t -> f'(z) t`` and the
  VJP ``ct -> ct * conj(f'(z))``; non-holomorphic ops (``abs``, ``real``,
  ``imag``, ``conj``, ``convert``) use their derived adjoints.
* A symbolic ``Zero`` tangent contributes nothing and costs no op; a cotangent
  is only computed for inputs with ``needs[i]`` True.
* ``max``/``min`` split ties equally (as JAX does); ``clamp`` follows
  ``jax.lax.clamp``'s JVP (ties send no gradient anywhere).

Conventions of the structural rules (``dot_general`` and ``concatenate`` in ``contraction``,
``indexing``, ``reduce_sum`` / ``reduce_prod`` / ``reduce_max`` / ``reduce_min`` in ``reductions``,
``structural``; see ``autodiff.rules``):

* Every op here except ``dot_general``, ``reduce_prod`` and the choosers is
  linear in its differentiable operands with real coefficients, so its JVP is
  the op itself applied to the tangents and its VJP is the plain linear
  transpose (no conjugation is needed under ``<a, b> = Re(sum(conj(a) * b))``).
  ``dot_general`` and ``reduce_prod`` are holomorphic: their VJPs multiply by the
  conjugate of the other factors.
* Index operands (``scatter_indices``, gather ``start_indices``, the start
  indices of ``dynamic_slice`` / ``dynamic_update_slice``) are integers: they
  always get a ``Zero`` cotangent.
* A symbolic ``Zero`` tangent costs no op where the result is zero; where a
  zero must be combined with a live tangent (``concatenate``, ``scatter``,
  ``dynamic_update_slice``) it is built with ``full`` in the exact dtype.
  A cotangent is only computed for inputs with ``needs[i]`` True.
* Gather/scatter transposes use an explicit mode so that each is the exact
  adjoint of the kernel it reverses: a clamping gather (``clip`` or JAX's
  default ``promise_in_bounds``) transposes to a ``clip`` scatter-add, a
  ``fill_or_drop`` gather to a ``fill_or_drop`` scatter-add, and a scatter
  transposes to a gather with ``fill_value=0`` (``clip`` for ``clip``,
  ``fill_or_drop`` otherwise: out-of-bounds windows are dropped).

``reductions``, ``special``, ``linalg``, ``windowed``, ``convolution`` and ``fft`` state their own in their
docstrings.
"""

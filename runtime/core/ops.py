"""The op vocabulary: every op declared once.

Each ``OpDef`` says what an op *is* (name, family, operand names, attribute
names, whether it has derivatives). What an op *does* lives in tables owned by
the package that owns the concern: kernels and shape rules in ``runtime``,
promotion in ``runtime.core.plan``, JVP and transpose rules in ``autodiff``. This
module imports nothing else of castwise, so any table can import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True, eq=False)  # identity: each op is declared once
class OpDef:
    """Declaration of one op.

    ``operands`` names the array inputs in order; a name starting with ``*``
    means any number of operands there (``concatenate``'s operands, the start
    indices of ``dynamic_slice``). ``params`` are the static
    attributes. ``differentiable`` is False for ops whose outputs carry no
    tangent (comparisons, logical ops, iota) or are piecewise constant.
    """

    name: str
    family: str
    operands: tuple[str, ...]
    params: tuple[str, ...] = ()
    differentiable: bool = True

    @property
    def variadic(self) -> bool:
        return any(name.startswith("*") for name in self.operands)

    @property
    def arity(self) -> int | None:
        """Number of operands, ``None`` for variadic ops."""
        return None if self.variadic else len(self.operands)

    def __str__(self) -> str:
        return self.name


OPS: dict[str, OpDef] = {}


def declare(
    name: str,
    family: str,
    operands: tuple[str, ...],
    params: tuple[str, ...] = (),
    differentiable: bool = True,
) -> OpDef:
    """Declare an op in the vocabulary and return its definition."""
    if name in OPS:
        raise ValueError(f"op {name!r} is declared twice")
    op = OpDef(name, family, operands, params, differentiable)
    OPS[name] = op
    return op


# Families (the promotion plan keys on these).
BINARY: Final = "binary"  # elementwise, both operands promoted, result of that dtype
COMPARE: Final = "compare"  # both operands promoted, result bool
LOGICAL: Final = "logical"  # bool / integer, both promoted
DOT: Final = "dot_general"
SELECT: Final = "select"
CLAMP: Final = "clamp"
CONCATENATE: Final = "concatenate"
SCATTER: Final = "scatter"
GATHER: Final = "gather"
DYNAMIC_SLICE: Final = "dynamic_slice"
DYNAMIC_UPDATE_SLICE: Final = "dynamic_update_slice"
UNARY: Final = "unary"
CONVERT: Final = "convert"
REDUCE: Final = "reduce"
STRUCTURAL: Final = "structural"
LINALG: Final = "linalg"
CALL: Final = "call"  # a user function recorded as one equation (operands keep their dtypes)
SCAN: Final = "scan"  # cumulative reductions along one axis: the result has the operand's dtype and shape
WINDOW: Final = "window"  # reductions over sliding windows (reduce_window_*) and their select_and_* companions
CONV: Final = "conv"  # conv_general_dilated: both operands promoted, as dot_general's
FFT: Final = "fft"  # the discrete Fourier transforms over the innermost axes (lax.fft)

XY = ("x", "y")

# -- elementwise binary ---------------------------------------------------------
add = declare("add", BINARY, XY)
sub = declare("sub", BINARY, XY)
mul = declare("mul", BINARY, XY)
div = declare("div", BINARY, XY)  # true division for inexact, truncating for integers (lax.div)
rem = declare("rem", BINARY, XY)  # sign of the dividend (lax.rem / C fmod)
pow = declare("pow", BINARY, XY)  # noqa: A001
max = declare("max", BINARY, XY)  # noqa: A001
min = declare("min", BINARY, XY)  # noqa: A001
atan2 = declare("atan2", BINARY, XY)
floor_div = declare("floor_div", BINARY, XY, differentiable=False)  # Python's //
eq = declare("eq", COMPARE, XY, differentiable=False)
ne = declare("ne", COMPARE, XY, differentiable=False)
lt = declare("lt", COMPARE, XY, differentiable=False)
le = declare("le", COMPARE, XY, differentiable=False)
gt = declare("gt", COMPARE, XY, differentiable=False)
ge = declare("ge", COMPARE, XY, differentiable=False)
logical_and = declare("and", LOGICAL, XY, differentiable=False)
logical_or = declare("or", LOGICAL, XY, differentiable=False)
logical_xor = declare("xor", LOGICAL, XY, differentiable=False)

# -- contraction, selection, joining --------------------------------------------------
dot_general = declare("dot_general", DOT, ("lhs", "rhs"), ("dimension_numbers", "precision"))
select = declare("select", SELECT, ("pred", "on_true", "on_false"))
clamp = declare("clamp", CLAMP, ("min", "operand", "max"))
concatenate = declare("concatenate", CONCATENATE, ("*operands",), ("dimension",))

# -- indexing -------------------------------------------------------------------------
scatter = declare(
    "scatter",
    SCATTER,
    ("operand", "scatter_indices", "updates"),
    ("dimension_numbers", "indices_are_sorted", "unique_indices", "mode"),
)
scatter_add = declare(
    "scatter_add",
    SCATTER,
    ("operand", "scatter_indices", "updates"),
    ("dimension_numbers", "indices_are_sorted", "unique_indices", "mode"),
)
scatter_mul = declare(
    "scatter_mul",
    SCATTER,
    ("operand", "scatter_indices", "updates"),
    ("dimension_numbers", "indices_are_sorted", "unique_indices", "mode"),
)
scatter_min = declare(
    "scatter_min",
    SCATTER,
    ("operand", "scatter_indices", "updates"),
    ("dimension_numbers", "indices_are_sorted", "unique_indices", "mode"),
)
scatter_max = declare(
    "scatter_max",
    SCATTER,
    ("operand", "scatter_indices", "updates"),
    ("dimension_numbers", "indices_are_sorted", "unique_indices", "mode"),
)
gather = declare(
    "gather",
    GATHER,
    ("operand", "start_indices"),
    ("dimension_numbers", "slice_sizes", "mode", "fill_value"),
)
dynamic_slice = declare("dynamic_slice", DYNAMIC_SLICE, ("operand", "*start_indices"), ("slice_sizes",))
dynamic_update_slice = declare("dynamic_update_slice", DYNAMIC_UPDATE_SLICE, ("operand", "update", "*start_indices"))

# -- elementwise unary ----------------------------------------------------------------
neg = declare("neg", UNARY, ("x",))
abs = declare("abs", UNARY, ("x",))  # noqa: A001
sign = declare("sign", UNARY, ("x",))
exp = declare("exp", UNARY, ("x",))
log = declare("log", UNARY, ("x",))
expm1 = declare("expm1", UNARY, ("x",))
log1p = declare("log1p", UNARY, ("x",))
sin = declare("sin", UNARY, ("x",))
cos = declare("cos", UNARY, ("x",))
tanh = declare("tanh", UNARY, ("x",))
logistic = declare("logistic", UNARY, ("x",))
sqrt = declare("sqrt", UNARY, ("x",))
rsqrt = declare("rsqrt", UNARY, ("x",))
conj = declare("conj", UNARY, ("x",))
real = declare("real", UNARY, ("x",))
imag = declare("imag", UNARY, ("x",))
square = declare("square", UNARY, ("x",))
reciprocal = declare("reciprocal", UNARY, ("x",))
convert = declare(
    "convert", CONVERT, ("x",), ("new_dtype", "weak_type")
)  # weak_type: JAX's weak flag (runtime.core.weak)
# lax.bitcast_convert_type: the bits of x read as new_dtype; a narrower new_dtype adds a trailing axis of
# size (old bits / new bits), a wider one removes a trailing axis of that size (sub-byte dtypes refused)
bitcast_convert_type = declare("bitcast_convert_type", CONVERT, ("x",), ("new_dtype",), differentiable=False)

# -- elementwise unary: rounding, tests, exponentials, trigonometric and hyperbolic ---------------
floor = declare("floor", UNARY, ("x",), differentiable=False)  # piecewise constant
ceil = declare("ceil", UNARY, ("x",), differentiable=False)
# rounding_method: 0 rounds half away from zero, 1 to nearest even (lax.RoundingMethod's values)
round = declare("round", UNARY, ("x",), ("rounding_method",), differentiable=False)  # noqa: A001
is_finite = declare("is_finite", UNARY, ("x",), differentiable=False)  # bool result
exp2 = declare("exp2", UNARY, ("x",))
sinh = declare("sinh", UNARY, ("x",))
cosh = declare("cosh", UNARY, ("x",))
tan = declare("tan", UNARY, ("x",))
asin = declare("asin", UNARY, ("x",))
acos = declare("acos", UNARY, ("x",))
atan = declare("atan", UNARY, ("x",))
asinh = declare("asinh", UNARY, ("x",))
acosh = declare("acosh", UNARY, ("x",))
atanh = declare("atanh", UNARY, ("x",))
cbrt = declare("cbrt", UNARY, ("x",))
# lax.integer_pow: x ** y for a static Python int y, by repeated squaring as XLA computes it (negative
# y: the reciprocal, inexact dtypes only)
integer_pow = declare("integer_pow", UNARY, ("x",), ("y",))
# lax.stop_gradient: the identity whose tangent and cotangent are zero (its own op, so a graph keeps it)
stop_gradient = declare("stop_gradient", UNARY, ("x",), differentiable=False)
# -- elementwise integer ops -------------------------------------------------------------------
logical_not = declare("not", UNARY, ("x",), differentiable=False)  # lax.bitwise_not: bool and integers
population_count = declare("population_count", UNARY, ("x",), differentiable=False)
clz = declare("clz", UNARY, ("x",), differentiable=False)
shift_left = declare("shift_left", BINARY, XY, differentiable=False)
shift_right_arithmetic = declare("shift_right_arithmetic", BINARY, XY, differentiable=False)
shift_right_logical = declare("shift_right_logical", BINARY, XY, differentiable=False)
# -- elementwise binary: floats ----------------------------------------------------------------
nextafter = declare("nextafter", BINARY, XY, differentiable=False)  # no derivative in JAX either
complex = declare("complex", BINARY, XY)  # noqa: A001  # re + i im: float32/float64 -> complex

# -- special functions (elementwise; real floats, narrow floats computed in float32) ---------------
erf = declare("erf", UNARY, ("x",))
erfc = declare("erfc", UNARY, ("x",))
erf_inv = declare("erf_inv", UNARY, ("x",))
lgamma = declare("lgamma", UNARY, ("x",))
digamma = declare("digamma", UNARY, ("x",))
bessel_i0e = declare("bessel_i0e", UNARY, ("x",))
bessel_i1e = declare("bessel_i1e", UNARY, ("x",))
# polygamma(m, x): m a whole number held as a float (lax.polygamma); no derivative in m, as JAX
polygamma = declare("polygamma", BINARY, ("m", "x"))
# Hurwitz zeta and d P(a, x) / da: JAX defines no derivative of either (it raises; castwise records
# them as non-differentiable, so a second derivative of igamma in a is zero here: docs/autodiff.md)
zeta = declare("zeta", BINARY, ("x", "q"), differentiable=False)
igamma = declare("igamma", BINARY, ("a", "x"))  # regularized lower incomplete gamma P(a, x)
igammac = declare("igammac", BINARY, ("a", "x"))  # its complement Q(a, x) = 1 - P(a, x)
igamma_grad_a = declare("igamma_grad_a", BINARY, ("a", "x"), differentiable=False)

# -- reductions -----------------------------------------------------------------------
reduce_sum = declare("reduce_sum", REDUCE, ("x",), ("axes",))
reduce_prod = declare("reduce_prod", REDUCE, ("x",), ("axes",))
reduce_max = declare("reduce_max", REDUCE, ("x",), ("axes",))
reduce_min = declare("reduce_min", REDUCE, ("x",), ("axes",))
# -- reductions: index, bitwise, precision ---------------------------------------------------------
# argmax/argmin: lax's one-element ``axes``; ties give the first index, and a NaN wins (the first NaN)
argmax = declare("argmax", REDUCE, ("x",), ("axes", "index_dtype"), differentiable=False)
argmin = declare("argmin", REDUCE, ("x",), ("axes", "index_dtype"), differentiable=False)
reduce_and = declare("reduce_and", REDUCE, ("x",), ("axes",), differentiable=False)  # bool and integers
reduce_or = declare("reduce_or", REDUCE, ("x",), ("axes",), differentiable=False)
reduce_xor = declare("reduce_xor", REDUCE, ("x",), ("axes",), differentiable=False)
# elementwise: x rounded to a float format with that many exponent and mantissa bits (kept in x's dtype)
reduce_precision = declare("reduce_precision", UNARY, ("x",), ("exponent_bits", "mantissa_bits"))

# -- cumulative reductions (lax.cumsum ...): along ``axis``, from the end when ``reverse`` ---------------
cumsum = declare("cumsum", SCAN, ("x",), ("axis", "reverse"))
cumprod = declare("cumprod", SCAN, ("x",), ("axis", "reverse"))
cummax = declare("cummax", SCAN, ("x",), ("axis", "reverse"))
cummin = declare("cummin", SCAN, ("x",), ("axis", "reverse"))
cumlogsumexp = declare("cumlogsumexp", SCAN, ("x",), ("axis", "reverse"))

# -- windowed reductions and convolution ---------------------------------------------------------
#: the window geometry of every windowed op, as lax.reduce_window_sum_p names it
WINDOW_PARAMS: Final = ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation")
reduce_window_sum = declare("reduce_window_sum", WINDOW, ("x",), WINDOW_PARAMS)
reduce_window_max = declare("reduce_window_max", WINDOW, ("x",), WINDOW_PARAMS)
reduce_window_min = declare("reduce_window_min", WINDOW, ("x",), WINDOW_PARAMS)
# Internal ops of reduce_window_max/min's derivatives (lax's select_and_gather_add / select_and_scatter_add):
# per window, the element of ``operand`` that ``select_prim`` ("ge": max, "le": min) picks first decides which
# ``tangents`` element is read (gather) or which operand position receives ``source`` (scatter, summed).
# Each is linear in its first operand and the other's transpose; the operand gets no derivative.
select_and_gather_add = declare(
    "select_and_gather_add", WINDOW, ("tangents", "operand"), ("select_prim", *WINDOW_PARAMS)
)
select_and_scatter_add = declare(
    "select_and_scatter_add", WINDOW, ("source", "operand"), ("select_prim", *WINDOW_PARAMS)
)
conv_general_dilated = declare(
    "conv_general_dilated",
    CONV,
    ("lhs", "rhs"),
    ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "dimension_numbers",
     "feature_group_count", "batch_group_count", "precision"),
)  # fmt: skip

# -- structural -----------------------------------------------------------------------
reshape = declare("reshape", STRUCTURAL, ("x",), ("new_sizes",))
transpose = declare("transpose", STRUCTURAL, ("x",), ("permutation",))
broadcast_in_dim = declare("broadcast_in_dim", STRUCTURAL, ("x",), ("shape", "broadcast_dimensions"))
slice = declare("slice", STRUCTURAL, ("x",), ("start_indices", "limit_indices", "strides"))  # noqa: A001
pad = declare("pad", STRUCTURAL, ("x",), ("padding_config", "padding_value"))
reverse = declare("reverse", STRUCTURAL, ("x",), ("dimensions",))
iota = declare("iota", STRUCTURAL, (), ("dtype", "shape", "dimension"), differentiable=False)
full = declare("full", STRUCTURAL, (), ("shape", "fill_value", "dtype"), differentiable=False)
# -- structural: sorting, splitting, choosing among cases ----------------------------------------
# sort: operands of one shape (dtypes may differ) sorted together along ``dimension`` by the first
# ``num_keys`` of them (lax.sort's order: -0.0 == 0.0, NaNs last); one output per operand
sort = declare("sort", STRUCTURAL, ("*operands",), ("dimension", "is_stable", "num_keys"))
top_k = declare("top_k", STRUCTURAL, ("operand",), ("k",))  # outputs (values, int32 indices), last axis
split = declare("split", STRUCTURAL, ("operand",), ("sizes", "axis"))  # one output per size
select_n = declare("select_n", SELECT, ("which", "*cases"))  # cases[which]: bool or integer which
# lax.optimization_barrier: the identity on any operands (one output each), its own op so that a graph
# and its lowering keep it (XLA does not move computations across it)
optimization_barrier = declare("optimization_barrier", STRUCTURAL, ("*operands",))

# -- linear algebra -------------------------------------------------------------------
eigh = declare("eigh", LINALG, ("x",), ("lower",))  # outputs (eigenvectors, eigenvalues)
cholesky = declare("cholesky", LINALG, ("x",))  # lower-triangular factor
triangular_solve = declare(
    "triangular_solve",
    LINALG,
    ("a", "b"),
    ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal"),
)
lu = declare("lu", LINALG, ("x",))  # outputs (packed L and U, pivots int32, permutation int32), as lax.linalg.lu
qr = declare("qr", LINALG, ("x",), ("full_matrices",))  # outputs (q, r)
svd = declare("svd", LINALG, ("x",), ("full_matrices", "compute_uv"))  # outputs (u, s, vh), or (s,)
# outputs (eigenvalues, [left eigenvectors], [right eigenvectors]), complex, as lax.linalg.eig
# enable_eigvec_derivs: the eigenvectors are differentiable (lax.linalg.eig's opt-in; JAX's rule)
eig = declare(
    "eig", LINALG, ("x",), ("compute_left_eigenvectors", "compute_right_eigenvectors", "enable_eigvec_derivs")
)
# outputs (the Householder reflectors below R's diagonal, R on and above it; taus [..., min(m, n)]),
# as lax.linalg.geqrf (its derivative is refused, as JAX has none)
geqrf = declare("geqrf", LINALG, ("x",))

# -- Fourier transforms ------------------------------------------------------------------
#: lax.fft's transform kinds, castwise's ``fft_type`` values (jax.lax.FftType's names)
FFT_TYPES: Final = ("FFT", "IFFT", "RFFT", "IRFFT")
# fft over the last len(fft_lengths) axes (1 to 3, as XLA): FFT / IFFT complex -> complex, RFFT real ->
# complex (last axis n // 2 + 1), IRFFT complex (last axis n // 2 + 1) -> real (last axis n)
fft = declare("fft", FFT, ("x",), ("fft_type", "fft_lengths"))

# -- user calls (autodiff.custom_jvp / autodiff.custom_vjp) ------------------------------------
# The function and its derivative rule travel as params: ``fun`` (operands -> list of outputs) is
# what the kernel replays; ``jvp(primals, tangents) -> (outputs, tangents)``, or
# ``fwd(*operands) -> (outputs, residuals)`` with ``bwd(residuals, cotangents) -> cotangents``, is
# what differentiation, lowering and batching call; ``in_avals`` / ``out_avals`` are the
# ((dtype, shape), ...) the call was recorded with; ``residuals`` are an eager call's saved values.
custom_jvp_call = declare("custom_jvp_call", CALL, ("*args",), ("name", "fun", "jvp", "in_avals", "out_avals"))
custom_vjp_call = declare(
    "custom_vjp_call", CALL, ("*args",), ("name", "fun", "fwd", "bwd", "in_avals", "out_avals", "residuals")
)


#: Ops whose kernels take only inexact (floating or complex) operands, as in
#: ``jax.lax``. The promotion plan converts an integer or bool operand of these
#: to the policy's inexact dtype (``runtime.core.plan.plan_inexact_operands``), as
#: jax.numpy, NumPy and PyTorch do; the recording shows that ``convert``.
FLOAT_ONLY: Final = frozenset(
    {exp, log, expm1, log1p, sin, cos, tanh, logistic, sqrt, rsqrt, reciprocal, atan2, cholesky, eigh, triangular_solve,
     exp2, sinh, cosh, tan, asin, acos, atan, asinh, acosh, atanh, cbrt, nextafter,
     erf, erfc, erf_inv, lgamma, digamma, bessel_i0e, bessel_i1e, polygamma, zeta, igamma, igammac, igamma_grad_a,
     lu, qr, svd, eig, geqrf}
)  # fmt: skip
#: Ops whose meaning on a real operand is an identity or a constant
#: (``real(x) = x``, ``conj(x) = x``, ``imag(x) = 0``): the plan's rewrite
#: rules (``runtime.core.plan.rewrite``) record them as such.
COMPLEX_PARTS: Final = frozenset({real, imag, conj})


def get(name: str) -> OpDef:
    """The declaration of op ``name``; ``KeyError`` naming the vocabulary otherwise."""
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; the vocabulary is: {', '.join(OPS)}") from None

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
departure from ``jax.lax`` (``runtime.kernels``), the lowering reproduces
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
* ``dot_general`` asks for ``Precision.HIGHEST`` (castwise never uses reduced
  precision such as TF32), and refuses mixed operand dtypes, which
  lax.dot_general alone would promote.

JAX is an optional dependency: it is imported inside functions only.
``LOWERINGS`` maps every op of the vocabulary to its rule; each rule is a named
function followed by its registration, like the kernels and shape rules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from passes._util import eqn_text
from runtime import dtypes as dt
from runtime import shapes
from runtime.dtypes import DType
from runtime.graph import Eqn, Graph, GraphError, Var
from runtime.kernels import scalar_array

#: What a rule returns: one JAX array per equation output.
Lowered = tuple[Any, ...]
#: A lowering rule: ``rule(eqn, *operands) -> outputs``; it reads static params from ``eqn.params``.
LoweringRule = Callable[..., Lowered]

#: op name -> lowering rule.
LOWERINGS: dict[str, LoweringRule] = {}

#: dtypes JAX handles only with ``jax_enable_x64``.
X64_DTYPES: Final[frozenset[DType]] = frozenset({dt.int64, dt.uint64, dt.float64, dt.complex128})


class LoweringError(RuntimeError):
    """lax produced a value whose dtype or shape differs from the graph's record (a castwise bug),
    or the graph uses something JAX cannot express (a dtype XLA lacks)."""


# -- helpers ----------------------------------------------------------------------------------


def _param(eqn: Eqn, name: str) -> Any:
    return shapes.param(eqn.op, eqn.params, name)


def _out_shape(eqn: Eqn, i: int = 0) -> tuple[int, ...]:
    return eqn.outputs[i].shape


def _storage(d: Any) -> np.dtype[Any]:
    return dt.dtype(d).storage


def _full_shape(eqn: Eqn, *xs: Any) -> list[Any]:
    """Broadcast 0-d operands to the output shape (castwise's scalar rule; lax.select has none)."""
    from jax import lax

    shape = _out_shape(eqn)
    return [x if tuple(x.shape) == shape else lax.broadcast_in_dim(x, shape, ()) for x in xs]


def _const(value: Any, like: Any) -> Any:
    """A 0-d JAX constant of ``like``'s dtype."""
    import jax.numpy as jnp

    return jnp.asarray(np.asarray(value).astype(like.dtype))


def x64_enabled() -> bool:
    """Whether ``jax_enable_x64`` is on here (globally or in a ``jax.enable_x64`` block)."""
    import jax

    return bool(jax.config.read("jax_enable_x64"))


def _kind(x: Any) -> str:
    """The castwise kind (bool / int / uint / float / complex) of a JAX value's dtype."""
    return dt.from_numpy(np.dtype(x.dtype)).kind


# -- elementwise binary -----------------------------------------------------------------------


def add_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.add."""
    from jax import lax

    return (lax.add(*_full_shape(eqn, x, y)),)


LOWERINGS["add"] = add_lowering


def sub_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.sub."""
    from jax import lax

    return (lax.sub(*_full_shape(eqn, x, y)),)


LOWERINGS["sub"] = sub_lowering


def mul_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.mul."""
    from jax import lax

    return (lax.mul(*_full_shape(eqn, x, y)),)


LOWERINGS["mul"] = mul_lowering


def div_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.div (XLA's total integer division: x / 0 == -1)."""
    from jax import lax

    return (lax.div(*_full_shape(eqn, x, y)),)


LOWERINGS["div"] = div_lowering


def rem_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.rem (sign of the dividend; integer x % 0 == x)."""
    from jax import lax

    return (lax.rem(*_full_shape(eqn, x, y)),)


LOWERINGS["rem"] = rem_lowering


def _int_pow(x: Any, y: Any) -> Any:
    # jnp.power's integer algorithm: binary exponentiation over the exponent's
    # low 6 bits with wrapping multiplies, shifting it as unsigned; pow(0, y) is
    # 0 for y != 0 (the castwise kernel documents the same algorithm).
    from jax import lax

    zero, one = _const(0, y), _const(1, y)
    x_zero, x_one = _const(0, x), _const(1, x)
    acc = lax.select(lax.bitwise_and(lax.eq(x, x_zero), lax.ne(y, zero)), lax.full_like(x, x_zero),
                     lax.full_like(x, x_one))  # fmt: skip
    base, bits = x, y
    for _ in range(6):
        acc = lax.select(lax.ne(lax.bitwise_and(bits, one), zero), lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        bits = lax.shift_right_logical(bits, one)
    return acc


def pow_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.pow for floats and complex; jnp.power's binary exponentiation (in lax ops) for integers."""
    from jax import lax

    x, y = _full_shape(eqn, x, y)
    if _kind(x) in ("int", "uint"):
        return (_int_pow(x, y),)
    return (lax.pow(x, y),)


LOWERINGS["pow"] = pow_lowering


def max_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.max (NaN-propagating; complex lexicographic)."""
    from jax import lax

    return (lax.max(*_full_shape(eqn, x, y)),)


LOWERINGS["max"] = max_lowering


def min_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.min (NaN-propagating; complex lexicographic)."""
    from jax import lax

    return (lax.min(*_full_shape(eqn, x, y)),)


LOWERINGS["min"] = min_lowering


def atan2_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.atan2(x, y)."""
    from jax import lax

    return (lax.atan2(*_full_shape(eqn, x, y)),)


LOWERINGS["atan2"] = atan2_lowering


def floor_div_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """Python ``//`` with jnp.floor_divide's algorithm, in lax ops.

    Unsigned: lax.div. Signed: lax.div, minus one where the signs differ and
    the remainder is not zero. Floats: CPython's float_divmod (rem, corrected
    dividend, div, sign fix, round half away from zero).
    """
    from jax import lax

    x, y = _full_shape(eqn, x, y)
    if _kind(x) == "uint":
        return (lax.div(x, y),)
    if _kind(x) in ("int", "uint"):
        quotient = lax.div(x, y)
        zero = lax.full_like(x, _const(0, x))
        fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)), lax.ne(lax.rem(x, y), zero))
        return (lax.select(fix, lax.sub(quotient, lax.full_like(x, _const(1, x))), quotient),)
    zero = lax.full_like(x, _const(0, x))
    mod = lax.rem(x, y)
    corrected = lax.select(lax.eq(y, zero), x, lax.sub(x, mod))
    div = lax.div(corrected, y)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(y), lax.sign(mod)))
    div = lax.select(fix, lax.sub(div, lax.full_like(x, _const(1, x))), div)
    return (lax.round(div, lax.RoundingMethod.AWAY_FROM_ZERO),)


LOWERINGS["floor_div"] = floor_div_lowering


def eq_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.eq."""
    from jax import lax

    return (lax.eq(*_full_shape(eqn, x, y)),)


LOWERINGS["eq"] = eq_lowering


def ne_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.ne."""
    from jax import lax

    return (lax.ne(*_full_shape(eqn, x, y)),)


LOWERINGS["ne"] = ne_lowering


def lt_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.lt."""
    from jax import lax

    return (lax.lt(*_full_shape(eqn, x, y)),)


LOWERINGS["lt"] = lt_lowering


def le_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.le."""
    from jax import lax

    return (lax.le(*_full_shape(eqn, x, y)),)


LOWERINGS["le"] = le_lowering


def gt_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.gt."""
    from jax import lax

    return (lax.gt(*_full_shape(eqn, x, y)),)


LOWERINGS["gt"] = gt_lowering


def ge_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.ge."""
    from jax import lax

    return (lax.ge(*_full_shape(eqn, x, y)),)


LOWERINGS["ge"] = ge_lowering


def and_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.bitwise_and (logical on bool)."""
    from jax import lax

    return (lax.bitwise_and(*_full_shape(eqn, x, y)),)


LOWERINGS["and"] = and_lowering


def or_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.bitwise_or (logical on bool)."""
    from jax import lax

    return (lax.bitwise_or(*_full_shape(eqn, x, y)),)


LOWERINGS["or"] = or_lowering


def xor_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.bitwise_xor (logical on bool)."""
    from jax import lax

    return (lax.bitwise_xor(*_full_shape(eqn, x, y)),)


LOWERINGS["xor"] = xor_lowering


# -- contraction, selection, joining ----------------------------------------------------------


def dot_general_lowering(eqn: Eqn, lhs: Any, rhs: Any) -> Lowered:
    """lax.dot_general at Precision.HIGHEST, result in the operand dtype.

    Unlike the elementwise ops, lax.dot_general accepts operands of different
    dtypes and promotes them itself; the lowering refuses them (as lax.add
    does) so that a graph the ``promote`` pass missed cannot slip through.
    """
    from jax import lax

    if np.dtype(lhs.dtype) != np.dtype(rhs.dtype):
        raise TypeError(
            f"dot_general requires arguments to have the same dtypes, got {np.dtype(lhs.dtype)}, "
            f"{np.dtype(rhs.dtype)} (castwise lowers promoted graphs only; lax.dot_general would promote itself)"
        )
    dims = shapes.dot_dimension_numbers(eqn.params["dimension_numbers"])
    return (lax.dot_general(lhs, rhs, dims, precision=lax.Precision.HIGHEST),)


LOWERINGS["dot_general"] = dot_general_lowering


def select_lowering(eqn: Eqn, pred: Any, on_true: Any, on_false: Any) -> Lowered:
    """lax.select, with 0-d operands broadcast first (castwise's scalar rule)."""
    from jax import lax

    return (lax.select(*_full_shape(eqn, pred, on_true, on_false)),)


LOWERINGS["select"] = select_lowering


def select_n_lowering(eqn: Eqn, which: Any, *cases: Any) -> Lowered:
    """lax.select_n, with 0-d operands broadcast first; an integer ``which`` becomes int32 (lax's only
    integer type for it; castwise takes any integer dtype)."""
    from jax import lax

    if _kind(which) != "bool" and np.dtype(which.dtype) != np.int32:
        which = lax.convert_element_type(which, np.int32)
    return (lax.select_n(*_full_shape(eqn, which, *cases)),)


LOWERINGS["select_n"] = select_n_lowering


def clamp_lowering(eqn: Eqn, lo: Any, x: Any, hi: Any) -> Lowered:
    """lax.clamp(min, operand, max)."""
    from jax import lax

    return (lax.clamp(lo, x, hi),)


LOWERINGS["clamp"] = clamp_lowering


def concatenate_lowering(eqn: Eqn, *operands: Any) -> Lowered:
    """lax.concatenate."""
    from jax import lax

    return (lax.concatenate(list(operands), int(eqn.params["dimension"])),)


LOWERINGS["concatenate"] = concatenate_lowering


# -- indexing ---------------------------------------------------------------------------------


def _mode(eqn: Eqn, default: shapes.Mode) -> Any:
    from jax import lax

    name = shapes.parse_mode(_param(eqn, "mode"), default)
    return {
        "clip": lax.GatherScatterMode.CLIP,
        "fill_or_drop": lax.GatherScatterMode.FILL_OR_DROP,
        "promise_in_bounds": lax.GatherScatterMode.PROMISE_IN_BOUNDS,
    }[name]


def gather_lowering(eqn: Eqn, operand: Any, start_indices: Any) -> Lowered:
    """lax.gather with the same dimension numbers, an explicit mode, and the fill value in the operand dtype."""
    from jax import lax

    dn = shapes.gather_dimension_numbers(eqn.params["dimension_numbers"])
    fill = _param(eqn, "fill_value")
    if fill is not None:
        fill = scalar_array(fill, eqn.inputs[0].dtype).item()
    out = lax.gather(
        operand,
        start_indices,
        lax.GatherDimensionNumbers(
            offset_dims=dn.offset_dims,
            collapsed_slice_dims=dn.collapsed_slice_dims,
            start_index_map=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=dn.start_indices_batching_dims,
        ),
        tuple(int(s) for s in eqn.params["slice_sizes"]),
        mode=_mode(eqn, shapes.GATHER_DEFAULT_MODE),
        fill_value=fill,
    )
    return (out,)


LOWERINGS["gather"] = gather_lowering


def _scatter_args(eqn: Eqn) -> dict[str, Any]:
    from jax import lax

    dn = shapes.scatter_dimension_numbers(eqn.params["dimension_numbers"])
    return {
        "dimension_numbers": lax.ScatterDimensionNumbers(
            update_window_dims=dn.update_window_dims,
            inserted_window_dims=dn.inserted_window_dims,
            scatter_dims_to_operand_dims=dn.scatter_dims_to_operand_dims,
            operand_batching_dims=dn.operand_batching_dims,
            scatter_indices_batching_dims=dn.scatter_indices_batching_dims,
        ),
        "indices_are_sorted": bool(_param(eqn, "indices_are_sorted")),
        "unique_indices": bool(_param(eqn, "unique_indices")),
        "mode": _mode(eqn, shapes.SCATTER_DEFAULT_MODE),
    }


def scatter_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter"] = scatter_lowering


def scatter_add_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_add with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_add(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_add"] = scatter_add_lowering


def scatter_mul_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_mul with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_mul(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_mul"] = scatter_mul_lowering


def scatter_min_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_min with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_min(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_min"] = scatter_min_lowering


def scatter_max_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_max with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_max(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_max"] = scatter_max_lowering


def _start_indices(starts: Sequence[Any]) -> list[Any]:
    """Start indices of one integer dtype (lax requires it; castwise allows a mix).

    A mix goes to int64 when x64 is on (int32 otherwise); uint64 values beyond
    the signed range saturate first, so an out-of-range start stays out of range
    (and clamps to the end) instead of wrapping negative.
    """
    from jax import lax

    kinds = {np.dtype(s.dtype) for s in starts}
    if len(kinds) <= 1:
        return list(starts)
    target, limit = (np.dtype(np.int64), 2**63 - 1) if x64_enabled() else (np.dtype(np.int32), 2**31 - 1)
    out = []
    for s in starts:
        d = np.dtype(s.dtype)
        if d.kind == "u" and int(np.iinfo(d).max) > limit:
            s = lax.min(s, _const(limit, s))
        out.append(lax.convert_element_type(s, target))
    return out


def dynamic_slice_lowering(eqn: Eqn, operand: Any, *start_indices: Any) -> Lowered:
    """lax.dynamic_slice with starts clamped into range (no negative wrap-around)."""
    from jax import lax

    sizes = tuple(int(s) for s in eqn.params["slice_sizes"])
    starts = _start_indices(start_indices)
    return (lax.dynamic_slice(operand, starts, sizes, allow_negative_indices=False),)


LOWERINGS["dynamic_slice"] = dynamic_slice_lowering


def dynamic_update_slice_lowering(eqn: Eqn, operand: Any, update: Any, *start_indices: Any) -> Lowered:
    """lax.dynamic_update_slice with starts clamped into range (no negative wrap-around)."""
    from jax import lax

    starts = _start_indices(start_indices)
    return (lax.dynamic_update_slice(operand, update, starts, allow_negative_indices=False),)


LOWERINGS["dynamic_update_slice"] = dynamic_update_slice_lowering


# -- elementwise unary ------------------------------------------------------------------------


def neg_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.neg."""
    from jax import lax

    return (lax.neg(x),)


LOWERINGS["neg"] = neg_lowering


def abs_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.abs (complex gives its real dtype)."""
    from jax import lax

    return (lax.abs(x),)


LOWERINGS["abs"] = abs_lowering


def sign_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.sign."""
    from jax import lax

    return (lax.sign(x),)


LOWERINGS["sign"] = sign_lowering


def exp_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.exp."""
    from jax import lax

    return (lax.exp(x),)


LOWERINGS["exp"] = exp_lowering


def log_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.log."""
    from jax import lax

    return (lax.log(x),)


LOWERINGS["log"] = log_lowering


def expm1_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.expm1."""
    from jax import lax

    return (lax.expm1(x),)


LOWERINGS["expm1"] = expm1_lowering


def log1p_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.log1p."""
    from jax import lax

    return (lax.log1p(x),)


LOWERINGS["log1p"] = log1p_lowering


def sin_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.sin."""
    from jax import lax

    return (lax.sin(x),)


LOWERINGS["sin"] = sin_lowering


def cos_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cos."""
    from jax import lax

    return (lax.cos(x),)


LOWERINGS["cos"] = cos_lowering


def tanh_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.tanh."""
    from jax import lax

    return (lax.tanh(x),)


LOWERINGS["tanh"] = tanh_lowering


def logistic_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.logistic."""
    from jax import lax

    return (lax.logistic(x),)


LOWERINGS["logistic"] = logistic_lowering


def sqrt_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.sqrt."""
    from jax import lax

    return (lax.sqrt(x),)


LOWERINGS["sqrt"] = sqrt_lowering


def rsqrt_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.rsqrt."""
    from jax import lax

    return (lax.rsqrt(x),)


LOWERINGS["rsqrt"] = rsqrt_lowering


def conj_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.conj for complex; a real value is returned as is (castwise keeps conj real, like jnp.conj)."""
    from jax import lax

    return (lax.conj(x) if _kind(x) == "complex" else x,)


LOWERINGS["conj"] = conj_lowering


def real_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.real."""
    from jax import lax

    return (lax.real(x),)


LOWERINGS["real"] = real_lowering


def imag_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.imag."""
    from jax import lax

    return (lax.imag(x),)


LOWERINGS["imag"] = imag_lowering


def square_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.square."""
    from jax import lax

    return (lax.square(x),)


LOWERINGS["square"] = square_lowering


def reciprocal_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reciprocal."""
    from jax import lax

    return (lax.reciprocal(x),)


LOWERINGS["reciprocal"] = reciprocal_lowering


def _lax_unary_lowering(lax_name: str) -> Callable[..., Lowered]:
    """The lowering of an op that is ``jax.lax.<lax_name>`` one for one."""

    def lowering(eqn: Eqn, x: Any) -> Lowered:
        from jax import lax

        return (getattr(lax, lax_name)(x),)

    lowering.__name__ = lowering.__qualname__ = f"{lax_name}_lowering"
    lowering.__doc__ = f"lax.{lax_name}."
    return lowering


def _lax_binary_lowering(lax_name: str) -> Callable[..., Lowered]:
    """The lowering of a binary op that is ``jax.lax.<lax_name>`` one for one."""

    def lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
        from jax import lax

        return (getattr(lax, lax_name)(x, y),)

    lowering.__name__ = lowering.__qualname__ = f"{lax_name}_lowering"
    lowering.__doc__ = f"lax.{lax_name}."
    return lowering


for _op_name, _lax_name in (
    ("floor", "floor"), ("ceil", "ceil"), ("is_finite", "is_finite"), ("exp2", "exp2"), ("sinh", "sinh"),
    ("cosh", "cosh"), ("tan", "tan"), ("asin", "asin"), ("acos", "acos"), ("atan", "atan"), ("asinh", "asinh"),
    ("acosh", "acosh"), ("atanh", "atanh"), ("cbrt", "cbrt"), ("not", "bitwise_not"),
    ("population_count", "population_count"), ("clz", "clz"),
):  # fmt: skip
    LOWERINGS[_op_name] = _lax_unary_lowering(_lax_name)

for _op_name in ("shift_left", "shift_right_arithmetic", "shift_right_logical", "nextafter", "complex"):
    LOWERINGS[_op_name] = _lax_binary_lowering(_op_name)

# the special functions: each is the lax function of the same name
LOWERINGS["erf"] = _lax_unary_lowering("erf")
LOWERINGS["erfc"] = _lax_unary_lowering("erfc")
LOWERINGS["erf_inv"] = _lax_unary_lowering("erf_inv")
LOWERINGS["lgamma"] = _lax_unary_lowering("lgamma")
LOWERINGS["digamma"] = _lax_unary_lowering("digamma")
LOWERINGS["bessel_i0e"] = _lax_unary_lowering("bessel_i0e")
LOWERINGS["bessel_i1e"] = _lax_unary_lowering("bessel_i1e")
LOWERINGS["polygamma"] = _lax_binary_lowering("polygamma")
LOWERINGS["zeta"] = _lax_binary_lowering("zeta")
LOWERINGS["igamma"] = _lax_binary_lowering("igamma")
LOWERINGS["igammac"] = _lax_binary_lowering("igammac")
LOWERINGS["igamma_grad_a"] = _lax_binary_lowering("igamma_grad_a")


def round_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.round with the recorded method (0: away from zero, 1: to nearest even)."""
    from jax import lax

    method = lax.RoundingMethod(int(_param(eqn, "rounding_method")))
    return (lax.round(x, method),)


LOWERINGS["round"] = round_lowering


def convert_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.convert_element_type to the target's storage; complex -> real takes lax.real first."""
    from jax import lax

    target = dt.dtype(eqn.params["new_dtype"])
    if _kind(x) == "complex" and target.kind != "complex":
        x = lax.real(x)  # what castwise (and XLA) mean, stated instead of warned about
    if eqn.params.get("weak_type"):
        return (with_weak_type(x, True, target.storage),)  # jax.numpy's weak convert
    return (lax.convert_element_type(x, target.storage),)


LOWERINGS["convert"] = convert_lowering


# -- reductions -------------------------------------------------------------------------------


def reduce_sum_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_sum."""
    from jax import lax

    return (lax.reduce_sum(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_sum"] = reduce_sum_lowering


def reduce_prod_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_prod."""
    from jax import lax

    return (lax.reduce_prod(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_prod"] = reduce_prod_lowering


def reduce_max_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_max."""
    from jax import lax

    return (lax.reduce_max(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_max"] = reduce_max_lowering


def reduce_min_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_min."""
    from jax import lax

    return (lax.reduce_min(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_min"] = reduce_min_lowering


def argmax_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.argmax over the one recorded axis."""
    from jax import lax

    (axis,) = eqn.params["axes"]
    return (lax.argmax(x, int(axis), dt.dtype(eqn.params["index_dtype"]).storage),)


LOWERINGS["argmax"] = argmax_lowering


def argmin_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.argmin over the one recorded axis."""
    from jax import lax

    (axis,) = eqn.params["axes"]
    return (lax.argmin(x, int(axis), dt.dtype(eqn.params["index_dtype"]).storage),)


LOWERINGS["argmin"] = argmin_lowering


def reduce_and_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_and."""
    from jax import lax

    return (lax.reduce_and(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_and"] = reduce_and_lowering


def reduce_or_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_or."""
    from jax import lax

    return (lax.reduce_or(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_or"] = reduce_or_lowering


def reduce_xor_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_xor."""
    from jax import lax

    return (lax.reduce_xor(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_xor"] = reduce_xor_lowering


def reduce_precision_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_precision."""
    from jax import lax

    p = eqn.params
    return (lax.reduce_precision(x, exponent_bits=int(p["exponent_bits"]), mantissa_bits=int(p["mantissa_bits"])),)


LOWERINGS["reduce_precision"] = reduce_precision_lowering


def cumsum_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cumsum."""
    from jax import lax

    return (lax.cumsum(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cumsum"] = cumsum_lowering


def cumprod_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cumprod."""
    from jax import lax

    return (lax.cumprod(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cumprod"] = cumprod_lowering


def cummax_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cummax."""
    from jax import lax

    return (lax.cummax(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cummax"] = cummax_lowering


def cummin_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cummin."""
    from jax import lax

    return (lax.cummin(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cummin"] = cummin_lowering


def cumlogsumexp_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cumlogsumexp."""
    from jax import lax

    return (lax.cumlogsumexp(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cumlogsumexp"] = cumlogsumexp_lowering


# -- structural -------------------------------------------------------------------------------


def reshape_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reshape."""
    from jax import lax

    return (lax.reshape(x, tuple(int(n) for n in eqn.params["new_sizes"])),)


LOWERINGS["reshape"] = reshape_lowering


def transpose_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.transpose."""
    from jax import lax

    return (lax.transpose(x, tuple(int(p) for p in eqn.params["permutation"])),)


LOWERINGS["transpose"] = transpose_lowering


def broadcast_in_dim_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.broadcast_in_dim."""
    from jax import lax

    shape = tuple(int(n) for n in eqn.params["shape"])
    dims = tuple(int(d) for d in eqn.params["broadcast_dimensions"])
    return (lax.broadcast_in_dim(x, shape, dims),)


LOWERINGS["broadcast_in_dim"] = broadcast_in_dim_lowering


def slice_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.slice."""
    from jax import lax

    strides = _param(eqn, "strides")
    return (
        lax.slice(
            x,
            tuple(int(s) for s in eqn.params["start_indices"]),
            tuple(int(s) for s in eqn.params["limit_indices"]),
            None if strides is None else tuple(int(s) for s in strides),
        ),
    )


LOWERINGS["slice"] = slice_lowering


def pad_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.pad, the padding value converted to the operand dtype as castwise's convert does."""
    import jax.numpy as jnp
    from jax import lax

    value = jnp.asarray(scalar_array(_param(eqn, "padding_value"), eqn.inputs[0].dtype))
    config = tuple((int(lo), int(hi), int(interior)) for lo, hi, interior in eqn.params["padding_config"])
    return (lax.pad(x, value, config),)


LOWERINGS["pad"] = pad_lowering


def reverse_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.rev."""
    from jax import lax

    return (lax.rev(x, tuple(int(d) for d in eqn.params["dimensions"])),)


LOWERINGS["reverse"] = reverse_lowering


# -- windowed reductions and convolution -------------------------------------------------------------


def _window(eqn: Eqn) -> dict[str, Any]:
    p = eqn.params
    return {
        "window_dimensions": tuple(int(k) for k in p["window_dimensions"]),
        "window_strides": tuple(int(s) for s in p["window_strides"]),
        "padding": tuple((int(lo), int(hi)) for lo, hi in p["padding"]),
        "base_dilation": tuple(int(b) for b in p["base_dilation"]),
        "window_dilation": tuple(int(d) for d in p["window_dilation"]),
    }


def _reduce_window(eqn: Eqn, x: Any, init: Any, computation: Any) -> Lowered:
    import jax.numpy as jnp
    from jax import lax

    w = _window(eqn)
    return (lax.reduce_window(x, jnp.asarray(init), computation, w["window_dimensions"], w["window_strides"],
                              w["padding"], w["base_dilation"], w["window_dilation"]),)  # fmt: skip


def reduce_window_sum_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_window with lax.add from 0 (lax's reduce_window_sum)."""
    from jax import lax

    return _reduce_window(eqn, x, scalar_array(0, eqn.inputs[0].dtype), lax.add)


LOWERINGS["reduce_window_sum"] = reduce_window_sum_lowering


def reduce_window_max_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_window with lax.max from lax's max identity (lax's reduce_window_max)."""
    from jax import lax

    from runtime.kernels.reductions import _extreme_identity

    return _reduce_window(eqn, x, _extreme_identity(_storage(eqn.inputs[0].dtype), True), lax.max)


LOWERINGS["reduce_window_max"] = reduce_window_max_lowering


def reduce_window_min_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_window with lax.min from lax's min identity (lax's reduce_window_min)."""
    from jax import lax

    from runtime.kernels.reductions import _extreme_identity

    return _reduce_window(eqn, x, _extreme_identity(_storage(eqn.inputs[0].dtype), False), lax.min)


LOWERINGS["reduce_window_min"] = reduce_window_min_lowering


def _select_prim(eqn: Eqn) -> Any:
    from jax import lax

    return lax.ge_p if eqn.params["select_prim"] == "ge" else lax.le_p


def select_and_gather_add_lowering(eqn: Eqn, tangents: Any, operand: Any) -> Lowered:
    """lax's select_and_gather_add (jax._src.lax.windowed_reductions; it has no public name)."""
    from jax._src.lax.windowed_reductions import _select_and_gather_add

    w = _window(eqn)
    return (_select_and_gather_add(tangents, operand, _select_prim(eqn), w["window_dimensions"],
                                   w["window_strides"], w["padding"], w["base_dilation"],
                                   w["window_dilation"]),)  # fmt: skip


LOWERINGS["select_and_gather_add"] = select_and_gather_add_lowering


def select_and_scatter_add_lowering(eqn: Eqn, source: Any, operand: Any) -> Lowered:
    """lax's select_and_scatter_add; with a dilation (which lax's does not take), the transpose
    (``jax.linear_transpose``) of lax's select_and_gather_add written out tap by tap in lax ops."""
    import jax
    from jax._src.lax.windowed_reductions import _select_and_scatter_add

    w = _window(eqn)
    if all(b == 1 for b in w["base_dilation"]) and all(d == 1 for d in w["window_dilation"]):
        return (_select_and_scatter_add(source, operand, _select_prim(eqn), w["window_dimensions"],
                                        w["window_strides"], w["padding"]),)  # fmt: skip
    gather = functools.partial(_gather_by_taps, operand=operand, select=eqn.params["select_prim"], w=w)
    (out,) = jax.linear_transpose(gather, operand)(source)
    return (out,)


LOWERINGS["select_and_scatter_add"] = select_and_scatter_add_lowering


def _gather_by_taps(tangents: Any, *, operand: Any, select: str, w: dict[str, Any]) -> Any:
    """select_and_gather_add as a sum over the window's taps of strided slices (linear in ``tangents``)."""
    import itertools

    import jax.numpy as jnp
    from jax import lax

    big = jnp.inf if select == "ge" else -jnp.inf
    pads = [(lo, hi, b - 1) for (lo, hi), b in zip(w["padding"], w["base_dilation"], strict=True)]
    px = lax.pad(operand, jnp.asarray(-big, operand.dtype), pads)
    pt = lax.pad(tangents, jnp.asarray(0, tangents.dtype), pads)
    geometry = zip(px.shape, w["window_dimensions"], w["window_dilation"], w["window_strides"], strict=True)
    out_shape = [max(0, (n - (1 + (k - 1) * d)) // s + 1) for n, k, d, s in geometry]
    best = val = None
    for offsets in itertools.product(*(range(k) for k in w["window_dimensions"])):
        start = [o * d for o, d in zip(offsets, w["window_dilation"], strict=True)]
        limit = [st + (n - 1) * s + 1 for st, n, s in zip(start, out_shape, w["window_strides"], strict=True)]
        cx = lax.slice(px, start, limit, w["window_strides"])
        ct = lax.slice(pt, start, limit, w["window_strides"])
        if best is None or val is None:
            best, val = cx, ct
            continue
        keep = (best >= cx) if select == "ge" else (best <= cx)
        best, val = lax.select(keep, best, cx), lax.select(keep, val, ct)
    return jnp.zeros(out_shape, tangents.dtype) if val is None else val


def conv_general_dilated_lowering(eqn: Eqn, lhs: Any, rhs: Any) -> Lowered:
    """lax.conv_general_dilated at Precision.HIGHEST, the dimension numbers as lax.ConvDimensionNumbers."""
    from jax import lax

    p = eqn.params
    c = shapes.conv_geometry(p, len(eqn.inputs[0].shape))
    dnums = lax.ConvDimensionNumbers(*c.dimension_numbers)
    return (lax.conv_general_dilated(lhs, rhs, c.window_strides, c.padding, c.lhs_dilation, c.rhs_dilation, dnums,
                                     c.feature_group_count, c.batch_group_count,
                                     precision=lax.Precision.HIGHEST),)  # fmt: skip


LOWERINGS["conv_general_dilated"] = conv_general_dilated_lowering


def iota_lowering(eqn: Eqn) -> Lowered:
    """lax.broadcasted_iota."""
    from jax import lax

    shape = tuple(int(n) for n in eqn.params["shape"])
    return (lax.broadcasted_iota(_storage(eqn.params["dtype"]), shape, int(eqn.params["dimension"])),)


LOWERINGS["iota"] = iota_lowering


def full_lowering(eqn: Eqn) -> Lowered:
    """lax.full, the fill value converted to the dtype as castwise's convert does (ints wrap)."""
    import jax.numpy as jnp
    from jax import lax

    target = dt.dtype(eqn.params["dtype"])
    fill = jnp.asarray(scalar_array(eqn.params["fill_value"], target))
    return (lax.full(tuple(int(n) for n in eqn.params["shape"]), fill, target.storage),)


LOWERINGS["full"] = full_lowering


def sort_lowering(eqn: Eqn, *operands: Any) -> Lowered:
    """lax.sort of every operand by the first ``num_keys``."""
    from jax import lax

    out = lax.sort(
        tuple(operands),
        dimension=int(eqn.params["dimension"]),
        is_stable=bool(_param(eqn, "is_stable")),
        num_keys=int(_param(eqn, "num_keys")),
    )
    return tuple(out)


LOWERINGS["sort"] = sort_lowering


def top_k_lowering(eqn: Eqn, operand: Any) -> Lowered:
    """lax.top_k along the last axis: (values, int32 indices)."""
    from jax import lax

    values, indices = lax.top_k(operand, int(eqn.params["k"]))
    return (values, indices)


LOWERINGS["top_k"] = top_k_lowering


def split_lowering(eqn: Eqn, operand: Any) -> Lowered:
    """lax.split into ``sizes`` along ``axis``."""
    from jax import lax

    return tuple(lax.split(operand, tuple(int(n) for n in eqn.params["sizes"]), axis=int(eqn.params["axis"])))


LOWERINGS["split"] = split_lowering


# -- linear algebra ---------------------------------------------------------------------------


def eigh_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.eigh reading only the ``lower`` (or upper) triangle: (eigenvectors, eigenvalues)."""
    from jax import lax

    v, w = lax.linalg.eigh(x, lower=bool(_param(eqn, "lower")), symmetrize_input=False)
    return (v, w)


LOWERINGS["eigh"] = eigh_lowering


def cholesky_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.cholesky reading the lower triangle (NaNs for a non-positive-definite matrix)."""
    from jax import lax

    return (lax.linalg.cholesky(x, symmetrize_input=False),)


LOWERINGS["cholesky"] = cholesky_lowering


def triangular_solve_lowering(eqn: Eqn, a: Any, b: Any) -> Lowered:
    """lax.linalg.triangular_solve with the same flags."""
    from jax import lax

    flags = {
        name: bool(_param(eqn, name)) for name in ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")
    }
    return (lax.linalg.triangular_solve(a, b, **flags),)


LOWERINGS["triangular_solve"] = triangular_solve_lowering


def lu_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.lu: (packed factors, pivots, permutation)."""
    from jax import lax

    packed, pivots, permutation = lax.linalg.lu(x)
    return (packed, pivots, permutation)


LOWERINGS["lu"] = lu_lowering


def qr_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.qr (no pivoting): (q, r)."""
    from jax import lax

    q, r = lax.linalg.qr(x, full_matrices=bool(_param(eqn, "full_matrices")))
    return (q, r)


LOWERINGS["qr"] = qr_lowering


def svd_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.svd: (u, s, vh), or (s,) without compute_uv."""
    from jax import lax

    full, uv = bool(_param(eqn, "full_matrices")), bool(_param(eqn, "compute_uv"))
    out = lax.linalg.svd(x, full_matrices=full, compute_uv=uv)
    return tuple(out) if uv else (out,)


LOWERINGS["svd"] = svd_lowering


def eig_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.eig (XLA CPU only): eigenvalues, then the eigenvectors asked for."""
    from jax import lax

    left, right = bool(_param(eqn, "compute_left_eigenvectors")), bool(_param(eqn, "compute_right_eigenvectors"))
    return tuple(lax.linalg.eig(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right))


LOWERINGS["eig"] = eig_lowering


# -- user calls (autodiff.custom_jvp / custom_vjp) ------------------------------------------------


def _call_examples(eqn: Eqn) -> list[Any]:
    """Example operands to trace a call's functions on: the recorded values where the graph kept
    them, else zeros (the functions' Python control flow must not depend on values, as under jit)."""
    from runtime.tensor import Tensor

    examples = []
    for var in eqn.inputs:
        value = var.value if var.value is not None else np.zeros(var.shape, var.dtype.storage)
        examples.append(Tensor(value, var.dtype))
    return examples


def _zeros_like(example: Any) -> Any:
    from runtime.tensor import Tensor

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

    from runtime.graph import trace

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

    from runtime import hooks
    from runtime.graph import trace
    from runtime.tensor import Tensor

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


# -- the driver -------------------------------------------------------------------------------


def graph_dtypes(graph: Graph) -> set[DType]:
    """Every dtype a value of ``graph`` has (inputs, constants, equation operands and results)."""
    found = {v.dtype for v in graph.inputs} | {v.dtype for v in graph.consts}
    for eqn in graph.eqns:
        found.update(v.dtype for v in eqn.inputs)
        found.update(v.dtype for v in eqn.outputs)
    return found


def needs_x64(graph: Graph) -> bool:
    """Whether lowering ``graph`` needs ``jax_enable_x64`` (a 64-bit integer or float, or complex128)."""
    return bool(graph_dtypes(graph) & X64_DTYPES)


@functools.cache
def jax_supports(dtype: DType) -> bool:
    """Whether this JAX/XLA build can hold arrays of ``dtype`` (it lacks the float6 formats, for one)."""
    import jax

    try:
        jax.device_put(np.zeros((), dtype.storage))
    except Exception:  # XLA reports an unknown element type in several ways
        return False
    return True


def with_weak_type(value: Any, weak: bool, storage: Any = None) -> Any:
    """``value`` (converted to ``storage``) with JAX's weak flag set to ``weak``: the
    ``convert_element_type[weak_type=...]`` jax.numpy writes when it promotes."""
    from jax._src.dtypes import is_weakly_typed
    from jax._src.lax.lax import _convert_element_type

    target = np.dtype(value.dtype if storage is None else storage)
    if is_weakly_typed(value) == weak and np.dtype(value.dtype) == target:
        return value
    return _convert_element_type(value, target, weak)


def _keep_weak(var: Var, value: Any) -> Any:
    """The lowered value with the graph's weak flag (``Var.weak``): inputs and constants
    are marked, and a rule written with several lax ops keeps the flag its op has."""
    from jax._src.dtypes import is_weakly_typed

    if is_weakly_typed(value) == var.weak:
        return value
    return with_weak_type(value, var.weak)


def _check_aval(graph: Graph, eqn: Eqn, var: Var, value: Any) -> None:
    got_dtype, got_shape = np.dtype(value.dtype), tuple(value.shape)
    if got_dtype != var.dtype.storage or got_shape != var.shape:
        raise LoweringError(
            f"lax produced {got_dtype}{list(got_shape)} where the graph records {var.type_str()} "
            f"(storage {var.dtype.storage}): castwise's shape rule and jax.lax disagree\n"
            f"    {eqn_text(graph, eqn)}"
        )


def _check_input(var: Var, value: Any, index: int) -> Any:
    from runtime.tensor import Tensor

    if isinstance(value, Tensor):
        if value.dtype is not var.dtype:
            raise GraphError(f"input {index} {var.type_str()} got {value.dtype.short}{list(value.shape)}")
        value = value.numpy()
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        value = np.asarray(value)
    if np.dtype(value.dtype) != var.dtype.storage or tuple(value.shape) != var.shape:
        raise GraphError(
            f"input {index} {var.type_str()} got {np.dtype(value.dtype)}{list(value.shape)} "
            f"(expected storage {var.dtype.storage})"
        )
    return value


def _interpret(graph: Graph, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    if len(args) != len(graph.inputs):
        raise GraphError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    env: dict[int, Any] = {}
    for i, (var, arg) in enumerate(zip(graph.inputs, args, strict=True)):
        env[id(var)] = _check_input(var, arg, i)
        if var.weak:
            env[id(var)] = with_weak_type(env[id(var)], True)
    for var, value in zip(graph.consts, consts, strict=True):
        env[id(var)] = _keep_weak(var, value.materialize() if isinstance(value, _Fill) else value)
    for eqn in graph.eqns:
        try:
            operands = [env[id(v)] for v in eqn.inputs]
        except KeyError:
            raise GraphError(
                f"{eqn.op.name}: an input is used before it is defined\n    {eqn_text(graph, eqn)}"
            ) from None
        rule = LOWERINGS.get(eqn.op.name)
        if rule is None:
            raise NotImplementedError(f"no JAX lowering for op {eqn.op.name!r}")
        try:
            outs = rule(eqn, *operands)
        except Exception as err:
            err.add_note(f"while lowering to jax.lax: {eqn_text(graph, eqn)}")
            raise
        out_vars = eqn.outputs
        if len(outs) != len(out_vars):
            raise LoweringError(f"{eqn.op.name}: lowering gave {len(outs)} outputs for {len(out_vars)}")
        for var, value in zip(out_vars, outs, strict=True):
            _check_aval(graph, eqn, var, value)
            env[id(var)] = _keep_weak(var, value)
    return [env[id(v)] for v in graph.outputs]


def uniform_value(array: np.ndarray) -> np.ndarray | None:
    """The single element ``array`` repeats (a 0-d array), or ``None``.

    Compared bit for bit, so ``[0.0, -0.0]`` is not uniform and ``[nan, nan]``
    (same payload) is.
    """
    if array.size <= 1:
        return None
    flat = np.ascontiguousarray(array).reshape(-1)
    first = flat[:1]
    raw, raw_first = flat.view(np.uint8).reshape(flat.size, -1), first.view(np.uint8)
    if not np.array_equal(raw, np.broadcast_to(raw_first, raw.shape)):
        return None
    return first.reshape(())


@dataclass(frozen=True)
class _Fill:
    """A uniform constant, materialised as ``lax.full`` inside the traced function."""

    value: Any
    shape: tuple[int, ...]

    def materialize(self) -> Any:
        from jax import lax

        return lax.full(self.shape, self.value, self.value.dtype)


def _const_value(var: Var) -> Any:
    """A constant as a JAX value: a ``jnp`` array of its dtype; a uniform one as a ``lax.full`` of its element.

    Autodiff instantiates ones and zeros (a ``grad`` seed, the ``1`` of
    ``1 - tanh**2``) as dense arrays; as a broadcast scalar XLA fuses them
    instead of embedding and reading a literal.
    """
    import jax.numpy as jnp

    assert var.const is not None
    value = uniform_value(var.const)
    if value is not None:
        return _Fill(jnp.asarray(value, dtype=var.dtype.storage), var.shape)
    return jnp.asarray(var.const, dtype=var.dtype.storage)


def lower_to_jax(graph: Graph) -> Callable[..., list[Any]]:
    """A JAX function computing ``graph``: ``fn(*inputs) -> [outputs]``.

    ``fn`` takes one array per graph input (JAX or NumPy arrays, or castwise
    Tensors) of exactly the input's storage dtype and shape (``GraphError``
    otherwise: nothing is promoted) and returns a list of JAX arrays, one per
    graph output, each of its output's storage dtype. Every equation becomes
    its ``jax.lax`` primitive (see ``LOWERINGS``); constants become ``jnp``
    arrays of their dtype, created once here (a constant whose elements are
    all equal, bit for bit, becomes ``lax.full`` of one element).

    ``fn`` is traceable (``jax.jit(fn)``, ``jax.export``, shardings). Graphs
    with 64-bit values need ``jax_enable_x64``: called eagerly, ``fn`` turns it
    on for the call itself; under a trace it must already be on (``with
    jax.enable_x64(True): jax.jit(fn)(...)``), else ``LoweringError``.

    Raises ``LoweringError`` now if the graph uses a dtype this JAX lacks, and
    when called: lax's own ``TypeError`` for an unpromoted mixed-dtype
    equation (the printed equation attached as a note), ``LoweringError`` if
    lax computes an aval other than the recorded one.
    """
    import jax

    used = graph_dtypes(graph)
    missing = sorted(d.name for d in used if not jax_supports(d))
    if missing:
        raise LoweringError(f"JAX/XLA has no {', '.join(missing)}: this graph cannot be lowered")
    x64 = bool(used & X64_DTYPES)
    if x64 and not x64_enabled():
        with jax.enable_x64(True):
            consts = [_const_value(v) for v in graph.consts]
    else:
        consts = [_const_value(v) for v in graph.consts]

    def lowered(*args: Any) -> list[Any]:
        if not x64 or x64_enabled():
            return _interpret(graph, consts, args)
        if any(isinstance(a, jax.core.Tracer) for a in args):
            raise LoweringError(
                "this graph has 64-bit values: trace it with x64 enabled, e.g. "
                "`with jax.enable_x64(True): jax.jit(fn)(...)`"
            )
        with jax.enable_x64(True):
            return _interpret(graph, consts, args)

    lowered.__doc__ = f"The JAX lowering of\n{graph}"
    return lowered


def export_stablehlo(graph: Graph) -> str:
    """The StableHLO text of ``graph`` (via ``jax.export`` of ``jax.jit(lower_to_jax(graph))``).

    Input types come from the graph's inputs (storage dtypes: ``float32r`` is
    ``f32``); 64-bit graphs are exported with x64 enabled for the call.
    """
    import contextlib

    import jax

    fn = lower_to_jax(graph)
    specs = [jax.ShapeDtypeStruct(v.shape, v.dtype.storage) for v in graph.inputs]
    context = jax.enable_x64(True) if needs_x64(graph) else contextlib.nullcontext()
    with context:
        exported = jax.export.export(jax.jit(fn))(*specs)
        return str(exported.mlir_module())

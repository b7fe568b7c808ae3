"""What every lowering rule shares: ``LOWERINGS``, ``LoweringError``, the helpers the rules use and
the factories of the rules that are one ``jax.lax`` function (unary, binary and special ops).

See ``passes.lower_jax`` for the conventions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import shapes
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError
from runtime.core.graph import Eqn

#: What a rule returns: one JAX array per equation output.
Lowered = tuple[Any, ...]
#: A lowering rule: ``rule(eqn, *operands) -> outputs``; it reads static params from ``eqn.params``.
LoweringRule = Callable[..., Lowered]

#: op name -> lowering rule.
LOWERINGS: dict[str, LoweringRule] = {}

#: dtypes JAX handles only with ``jax_enable_x64``.
X64_DTYPES: Final[frozenset[DType]] = frozenset({dt.int64, dt.uint64, dt.float64, dt.complex128})


class LoweringError(CastwiseError, RuntimeError):
    """lax produced a value whose dtype or shape differs from the graph's record (a castwise bug),
    or the graph uses something JAX cannot express (a dtype XLA lacks)."""


# -- helpers ----------------------------------------------------------------------------------


def _param(eqn: Eqn, name: str) -> Any:
    return shapes.param(eqn.op, eqn.params, name)


def _lax_precision(eqn: Eqn) -> Any:
    """A dot's or convolution's ``precision`` param as lax's: the recorded pair of lax.Precision
    members, or ``Precision.HIGHEST`` where none was asked for (castwise's kernels compute at full
    precision, so its lowering never picks a reduced one such as TF32 by itself)."""
    from jax import lax

    pair = eqn.params.get("precision")
    if pair is None:
        return lax.Precision.HIGHEST
    return (lax.Precision[pair[0].upper()], lax.Precision[pair[1].upper()])


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


# -- one-for-one lax rules ------------------------------------------------------------------


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


# -- weak types -------------------------------------------------------------------------------


def with_weak_type(value: Any, weak: bool, storage: Any = None) -> Any:
    """``value`` (converted to ``storage``) with JAX's weak flag set to ``weak``: the
    ``convert_element_type[weak_type=...]`` jax.numpy writes when it promotes."""
    from jax._src.dtypes import is_weakly_typed
    from jax._src.lax.lax import _convert_element_type

    target = np.dtype(value.dtype if storage is None else storage)
    if is_weakly_typed(value) == weak and np.dtype(value.dtype) == target:
        return value
    return _convert_element_type(value, target, weak)

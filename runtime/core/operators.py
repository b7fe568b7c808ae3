"""The Tensor's operators, in-place methods and dtype/complex-part methods: the op layer's part of
the array type, attached to ``Tensor`` (``runtime.core.tensor.attach_methods``) from here, above
the executor, so ``runtime.core.tensor`` imports no op.

Each operator is one op through the executor (``x + y`` is ``add`` with the active policy's
promotion); ``%`` and ``@`` are ``lax.mod`` and ``lax.matmul``; ``~``, ``<<`` and ``>>`` are
NumPy's ``invert``, ``left_shift`` and ``right_shift`` (``>>`` fills with the sign bit for signed
integers and with zeros for unsigned ones, as NumPy and jax.numpy do). Every in-place operator
(``+=`` ... ``%=``, ``&=``, ``@=``, ``<<=``) writes through ``runtime.core.inplace`` (checked and
version-bumped there), so ``y = x; x %= 2`` changes ``y`` as ``x += 1`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.core import dtypes as dt
from runtime.core import interop, lax, ops
from runtime.core.executor import apply, apply_binary
from runtime.core.inplace import apply_inplace, fill_inplace
from runtime.core.ops import OpDef
from runtime.core.promotion import PromotionError, get_policy, result_type
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor, attach_methods


def _integer_op(name: str, symbol: str, fn: Any, *operands: Any) -> Tensor:
    """``fn(*operands)``, an op on integers (and bool for ``~``): a dtype the op refuses raises
    naming the operator the user wrote (NumPy's and jax.numpy's ufunc name and the symbol)."""
    try:
        return fn(*operands)  # type: ignore[no-any-return]
    except OpTypeError as err:
        raise OpTypeError(f"{name} ({symbol}): {err}") from None


def right_shift(x: Any, y: Any) -> Tensor:
    """NumPy's ``x >> y``: an arithmetic shift (sign fill) of signed integers, a logical one
    (zero fill) of unsigned ones, decided by the operands' promoted dtype."""
    try:
        unsigned = result_type(x, y).kind == "uint"
    except (PromotionError, TypeError):
        unsigned = False  # the op itself raises the policy's refusal, naming the operands
    shift = lax.shift_right_logical if unsigned else lax.shift_right_arithmetic
    return _integer_op("right_shift", "x >> y", shift, x, y)


def _matrix_transpose(x: Tensor) -> Tensor:
    if x.ndim < 2:
        raise ShapeError(
            f"mT: the matrix transpose needs at least 2 dimensions, got {x.dtype.name}{list(x.shape)} "
            f"[policy {get_policy()!r}]"
        )
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    return apply(ops.transpose, (x,), {"permutation": perm})  # type: ignore[return-value]


if TYPE_CHECKING:
    _Base = Tensor
else:
    _Base = object


def _clamp_bounds(x: Tensor, bounds: tuple[Any, Any]) -> Tensor:
    """``min(max(x, low), high)``, each bound optional (``clamp_``'s out-of-place result)."""
    low, high = bounds
    out = x if low is None else lax.max(x, low)
    return out if high is None else lax.min(out, high)


class TensorOperators(_Base):
    """The methods ``attach_methods`` puts on ``Tensor`` (a holder, never instantiated)."""

    # -- methods -------------------------------------------------------------------
    # The NumPy / jax.numpy / PyTorch-style API (runtime.numpy.tensor_methods; docs/tensor.md): each
    # method composes recorded ops; where the libraries disagree the policy's library decides.
    def astype(self, dtype: Any) -> Tensor:
        """Convert to ``dtype`` (the ``convert`` op)."""
        return apply(ops.convert, (self,), {"new_dtype": dt.dtype(dtype)})  # type: ignore[return-value]

    @property
    def T(self) -> Tensor:
        return apply(ops.transpose, (self,), {"permutation": tuple(range(self.ndim))[::-1]})  # type: ignore[return-value]

    @property
    def real(self) -> Tensor:
        return apply(ops.real, (self,), {})  # type: ignore[return-value]

    @property
    def imag(self) -> Tensor:
        return apply(ops.imag, (self,), {})  # type: ignore[return-value]

    def conj(self) -> Tensor:
        return apply(ops.conj, (self,), {})  # type: ignore[return-value]

    @property
    def mT(self) -> Tensor:
        """The last two axes swapped (the array API's ``matrix_transpose``; a ``transpose``)."""
        return _matrix_transpose(self)

    @property
    def device(self) -> interop.Device:
        """The device the tensor lives on: castwise computes on the CPU only (``rt.cpu``)."""
        return interop.CPU

    def __index__(self) -> int:
        """A 0-d integer tensor as a Python int (``range(t)``, ``lst[t]``), as NumPy's
        ``__index__``: through ``int()``, so a traced tensor raises as ``int()`` does."""
        if self.ndim != 0 or not self.dtype.is_integer:
            raise TypeError(
                f"__index__: only a 0-d integer tensor is an index, got {self.dtype.name}{list(self.shape)} "
                f"(as NumPy: only integer scalar arrays can be converted to a scalar index) [policy {get_policy()!r}]"
            )
        return int(self)

    def zero_(self) -> Tensor:
        """Fill with zeros in place and return the tensor (PyTorch's ``zero_``; ``grad.zero_()``)."""
        return fill_inplace(self, 0, "zero_")

    def fill_(self, value: Any) -> Tensor:
        """Fill with the scalar ``value`` (converted to the tensor's dtype) in place (PyTorch's ``fill_``)."""
        return fill_inplace(self, value, "fill_")

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """PyTorch's ``clamp_``: ``min(max(x, min), max)`` stored into ``x`` (``max`` wins where
        ``min > max``; NaN stays NaN), with the refusals of every in-place write (a result whose
        category is above ``x``'s, as a float bound of an int tensor, is refused)."""
        if min is None and max is None:
            raise OpTypeError(f"clamp_: at least one of min and max must be given [policy {get_policy()!r}]")
        return apply_inplace(self, _clamp_bounds, (min, max), "clamp_")

    def __dlpack__(
        self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None, copy: bool | None = None,
    ) -> Any:  # fmt: skip
        """A DLPack capsule of the values (``np.from_dlpack(t)``, ``torch.from_dlpack(t)``,
        ``jax.dlpack.from_dlpack(t)``): read-only shared memory for a DLPack >= 1.0 consumer, a
        copy for a legacy one (``runtime.core.interop.dlpack``)."""
        return interop.dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)``: DLPack's CPU device."""
        return interop.dlpack_device(self)

    def __jax_array__(self) -> Any:
        """``jnp.asarray(t)``: the values as a ``jax.Array`` (``runtime.core.interop.jax_array``)."""
        return interop.jax_array(self)

    # -- operators ---------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return apply_binary(ops.add, self, other)

    def __radd__(self, other: Any) -> Tensor:
        return apply_binary(ops.add, other, self)

    def __sub__(self, other: Any) -> Tensor:
        return apply_binary(ops.sub, self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return apply_binary(ops.sub, other, self)

    def __mul__(self, other: Any) -> Tensor:
        return apply_binary(ops.mul, self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return apply_binary(ops.mul, other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return apply_binary(ops.div, self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return apply_binary(ops.div, other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return apply_binary(ops.floor_div, self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return apply_binary(ops.floor_div, other, self)

    def __mod__(self, other: Any) -> Tensor:
        return lax.mod(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return lax.mod(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return lax.pow(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return lax.pow(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return lax.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return lax.matmul(other, self)

    def __and__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_and, self, other)

    def __rand__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_and, other, self)

    def __or__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_or, self, other)

    def __ror__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_or, other, self)

    def __xor__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_xor, self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return apply_binary(ops.logical_xor, other, self)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return apply_binary(ops.eq, self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return apply_binary(ops.ne, self, other)

    def __lt__(self, other: Any) -> Tensor:
        return apply_binary(ops.lt, self, other)

    def __le__(self, other: Any) -> Tensor:
        return apply_binary(ops.le, self, other)

    def __gt__(self, other: Any) -> Tensor:
        return apply_binary(ops.gt, self, other)

    def __ge__(self, other: Any) -> Tensor:
        return apply_binary(ops.ge, self, other)

    def __lshift__(self, other: Any) -> Tensor:
        return _integer_op("left_shift", "x << y", lax.shift_left, self, other)

    def __rlshift__(self, other: Any) -> Tensor:
        return _integer_op("left_shift", "x << y", lax.shift_left, other, self)

    def __rshift__(self, other: Any) -> Tensor:
        return right_shift(self, other)

    def __rrshift__(self, other: Any) -> Tensor:
        return right_shift(other, self)

    def __invert__(self) -> Tensor:
        # NumPy's invert: logical not of bool, every bit flipped of an integer (lax's ``not``)
        return _integer_op("invert", "~x", lax.logical_not, self)

    def __neg__(self) -> Tensor:
        return apply(ops.neg, (self,), {})  # type: ignore[return-value]

    def __pos__(self) -> Tensor:
        # a copy, as NumPy's +x: a write into the result must not change x (a recorded x
        # refuses in-place writes, so it can be returned as it is, unrecorded)
        return self if self._node is not None else self.copy()

    def __abs__(self) -> Tensor:
        return apply(ops.abs, (self,), {})  # type: ignore[return-value]

    # -- in place --------------------------------------------------------------------
    def _inplace(self, op: OpDef, other: Any, name: str) -> Tensor:
        return apply_inplace(self, op, other, name)

    def add_(self, other: Any) -> Tensor:
        return self._inplace(ops.add, other, "add_")

    def sub_(self, other: Any) -> Tensor:
        return self._inplace(ops.sub, other, "sub_")

    def mul_(self, other: Any) -> Tensor:
        return self._inplace(ops.mul, other, "mul_")

    def div_(self, other: Any) -> Tensor:
        return self._inplace(ops.div, other, "div_")

    def pow_(self, other: Any) -> Tensor:
        lax.check_integer_power(self, other, "pow_")
        return self._inplace(ops.pow, other, "pow_")

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace(ops.add, other, "add_")

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace(ops.sub, other, "sub_")

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace(ops.mul, other, "mul_")

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace(ops.div, other, "div_")

    def __ipow__(self, other: Any) -> Tensor:
        lax.check_integer_power(self, other, "pow_")
        return self._inplace(ops.pow, other, "pow_")

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._inplace(ops.floor_div, other, "floor_divide_")

    def __imod__(self, other: Any) -> Tensor:
        return apply_inplace(self, lax.mod, other, "remainder_")

    def __imatmul__(self, other: Any) -> Tensor:
        # NumPy's ``a @= b`` writes a @ b into a, whose shape it must keep (b square)
        return apply_inplace(self, lax.matmul, other, "matmul_")

    def __iand__(self, other: Any) -> Tensor:
        return self._inplace(ops.logical_and, other, "bitwise_and_")

    def __ior__(self, other: Any) -> Tensor:
        return self._inplace(ops.logical_or, other, "bitwise_or_")

    def __ixor__(self, other: Any) -> Tensor:
        return self._inplace(ops.logical_xor, other, "bitwise_xor_")

    def __ilshift__(self, other: Any) -> Tensor:
        return apply_inplace(
            self, lambda x, y: _integer_op("left_shift", "x <<= y", lax.shift_left, x, y), other, "bitwise_left_shift_"
        )

    def __irshift__(self, other: Any) -> Tensor:
        return apply_inplace(self, right_shift, other, "bitwise_right_shift_")


attach_methods(TensorOperators)

"""The Tensor's operators, in-place methods and dtype/complex-part methods: the op layer's part of
the array type, attached to ``Tensor`` (``runtime.core.tensor.attach_methods``) from here, above
the executor, so ``runtime.core.tensor`` imports no op.

Each operator is one op through the executor (``x + y`` is ``add`` with the active policy's
promotion); ``%`` and ``@`` are ``lax.mod`` and ``lax.matmul``; an in-place operator writes
through ``runtime.core.inplace`` (checked and version-bumped there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.core import dtypes as dt
from runtime.core import lax, ops
from runtime.core.executor import apply, apply_binary
from runtime.core.inplace import apply_inplace
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor, attach_methods

if TYPE_CHECKING:
    _Base = Tensor
else:
    _Base = object


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

    def __neg__(self) -> Tensor:
        return apply(ops.neg, (self,), {})  # type: ignore[return-value]

    def __pos__(self) -> Tensor:
        # a copy, as NumPy's +x: a write into the result must not change x (a recorded x
        # refuses in-place writes, so it can be returned as it is, unrecorded)
        return self if self.node is not None else self.copy()

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


attach_methods(TensorOperators)

"""The eager ``Tensor``: a NumPy array in its dtype's storage, with a castwise ``DType``.

This module holds the array type and nothing that computes. Its operators and in-place methods
are attached by the op layer (``runtime.core.operators``), its NumPy-named methods (``reshape``,
``sum``, indexing, ``.at[]``) by the NumPy-named layer (``runtime.numpy.tensor_methods``), as
``jax._src.numpy.array_methods`` attaches jax.Array's, so the array type never imports the
libraries built on it. Execution is ``runtime.core.executor``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import hooks
from runtime.core.dtypes import DType
from runtime.core.promotion import get_policy
from runtime.core.versions import version

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from runtime.core.ops import OpDef

Scalar = bool | int | float | complex
_NDARRAY = np.ndarray


class Tensor:
    """An n-dimensional array with a castwise ``DType``.

    Wraps a NumPy array in the dtype's storage type (ml_dtypes for bfloat16, the
    float8 family, int4 ...). ``float32r`` tensors are stored as float32 but keep
    their own dtype. Python operators follow the active promotion policy.
    """

    __slots__ = ("__weakref__", "_array", "_const", "_node", "_requires_grad", "dtype", "grad", "weak")
    __array_ufunc__ = None  # make NumPy defer to our reflected operators
    __array_priority__ = 1000

    _array: np.ndarray
    dtype: DType

    def __init__(self, array: np.ndarray, dtype: DType | None = None) -> None:
        if type(array) is not _NDARRAY:  # NumPy returns scalars for 0-d results: storage is always an ndarray
            array = _storage_array(array)
        self._array = array
        self.dtype = dtype if dtype is not None else dt.from_numpy(array.dtype)
        self._requires_grad = False
        #: the constant leaf recordings use for this (untracked) tensor, shared by all of them
        self._const: Any = None
        #: the graph value of a tracked tensor (set by the recorder / tracer): a ``Var``, or
        #: a pending record (``runtime.core.tape``) that the ``node`` property builds it from
        self._node: Any = None
        #: accumulated gradient (autodiff owns it)
        self.grad: Tensor | None = None
        #: JAX's weak type (policies jax and jax-strict; ``runtime.core.weak``)
        self.weak = False

    # -- properties ---------------------------------------------------------------
    @property
    def node(self) -> Any:
        """The graph value (``runtime.core.graph.Var``) of a tracked or traced tensor, else
        ``None``. A lazily recorded op's ``Eqn``/``Var`` are built here, on the first read."""
        node = self._node
        if type(node) is list:  # a pending record (runtime.core.tape)
            node = self._node = MATERIALISE[0](node)
        return node

    @node.setter
    def node(self, value: Any) -> None:
        self._node = value

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        return int(self._array.size)

    @property
    def _version(self) -> int:
        """How many in-place writes castwise made into this tensor's memory, through it or any
        Tensor sharing that memory (views, ``detach()``, ``asarray`` of the same array), as
        PyTorch's ``Tensor._version``. Recordings check it (``runtime.core.versions``)."""
        return version(self._array)

    @property
    def requires_grad(self) -> bool:
        """True for tracked tensors: leaves marked by the user and recorded results."""
        return self._requires_grad

    def backward(self, cotangent: Any = None, retain_graph: bool = False, create_graph: bool = False) -> None:
        """Accumulate the gradient of this output into tracked leaves' ``.grad``.

        Needs ``autodiff`` (imported by ``import autodiff``).
        """
        if hooks.backward_hook is None:
            raise RuntimeError("backward() needs the autodiff package: import autodiff")
        hooks.backward_hook(self, cotangent, retain_graph, create_graph)

    def detach(self) -> Tensor:
        """An untracked tensor sharing this tensor's storage (and its weak flag)."""
        out = Tensor(self._array, self.dtype)
        out.weak = self.weak
        return out

    def copy(self) -> Tensor:
        """A fresh, writable, untracked Tensor with a copy of the values (``detach().clone()``
        in PyTorch terms)."""
        out = Tensor(self._array.copy(), self.dtype)
        out.weak = self.weak
        return out

    def numpy(self) -> np.ndarray:
        """A read-only NumPy view of the storage: shared, not copied (``np.shares_memory`` holds),
        and not writable, so no write can bypass castwise's version counters (a recording or an
        ``autodiff.jit`` cache may hold this memory). ``t.numpy().copy()`` is a writable copy;
        in-place writes go through castwise (``t += 1``, ``t.at[i].set(v)``). A traced Tensor
        (inside ``jit`` / ``vmap`` / ``trace``) raises ``ConcretizationError``, as the
        conversions below do."""
        if self._node is not None:
            _concrete(self, "Tensor.numpy")
        return _read_only(self._array)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(t)``: the read-only view ``numpy()`` gives; ``copy=True`` or a ``dtype``:
        a fresh, writable array."""
        if self._node is not None:
            _concrete(self, "numpy.asarray")
        if dtype is None:
            return self._array.copy() if copy else _read_only(self._array)
        return self._array.astype(dtype)

    def item(self) -> Scalar:
        """The one element as a Python scalar (``ConcretizationError`` when traced)."""
        if self._node is not None:
            _concrete(self, "Tensor.item")
        return self._array.item()  # type: ignore[no-any-return]

    def tolist(self) -> Any:
        """The values as nested Python lists (``ConcretizationError`` when traced)."""
        if self._node is not None:
            _concrete(self, "Tensor.tolist")
        return self._array.tolist()

    def __repr__(self) -> str:
        body = np.array2string(self._array, separator=", ", prefix="Tensor(")
        extra = (", weak_type=True" if self.weak else "") + (", requires_grad=True" if self._requires_grad else "")
        return f"Tensor({body}, dtype={self.dtype.name}{extra})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        # PyTorch's and NumPy's rule: one element (of any rank) has a truth value
        if self.size != 1:
            raise ValueError(
                f"the truth value of a {self.dtype.name} tensor of shape {list(self.shape)} "
                f"({self.size} elements) is ambiguous; use .any() or .all() "
                f"[policy {get_policy()!r}]"
            )
        if self._node is not None:
            _concrete(self, "bool")
        return bool(self._array.reshape(()))

    def _scalar(self, kind: str) -> Any:
        """The one element, for ``float()``/``int()``/``complex()``; anything else says what to do."""
        if self.size != 1:
            raise TypeError(
                f"{kind}() of a {self.dtype.name} tensor of shape {list(self.shape)} ({self.size} elements): "
                f"only a one-element tensor converts to a Python {kind}; index one element (x[i]), "
                f"reduce it (x.sum(), x.mean()), or use .tolist() [policy {get_policy()!r}]"
            )
        if kind != "complex" and self.dtype.kind == "complex":
            raise TypeError(
                f"{kind}() of a {self.dtype.name} tensor would drop the imaginary part; "
                f"use .real or abs() first, or complex() [policy {get_policy()!r}]"
            )
        if self._node is not None:
            _concrete(self, kind)
        return self._array.reshape(())

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    __hash__ = object.__hash__

    # Attached from above (``attach_methods``): requires_grad_ by runtime.core.graph, the operators and
    # in-place methods by runtime.core.operators, the NumPy-named methods by runtime.numpy.tensor_methods
    # (``round`` by runtime.numpy.shared_names).
    # This is the type checker's view of them; at run time the class has the real ones.
    if TYPE_CHECKING:

        def requires_grad_(self, requires_grad: bool = True) -> Tensor: ...
        def astype(self, dtype: Any) -> Tensor: ...
        def reshape(self, *shape: int | Sequence[int]) -> Tensor: ...
        def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor: ...
        def squeeze(self, axis: int | Sequence[int] | None = None) -> Tensor: ...
        def clip(self, min: Any = None, max: Any = None, out: None = None) -> Tensor: ...  # noqa: A002
        def transpose(self, *axes: Any) -> Tensor: ...
        def ravel(self) -> Tensor: ...
        def cumsum(self, axis: int | None = None, dtype: Any = None, out: None = None) -> Tensor: ...
        def cumprod(self, axis: int | None = None, dtype: Any = None, out: None = None) -> Tensor: ...
        @property
        def T(self) -> Tensor: ...
        @property
        def real(self) -> Tensor: ...
        @property
        def imag(self) -> Tensor: ...
        def conj(self) -> Tensor: ...
        @property
        def mT(self) -> Tensor: ...
        @property
        def device(self) -> Any: ...
        def __index__(self) -> int: ...
        def zero_(self) -> Tensor: ...
        def fill_(self, value: Any) -> Tensor: ...
        def __array_namespace__(self, /, *, api_version: str | None = None) -> Any: ...
        def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor: ...
        def clamp_(self, min: Any = None, max: Any = None) -> Tensor: ...  # noqa: A002
        def __dlpack__(
            self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: tuple[int, int] | None = None, copy: bool | None = None,
        ) -> Any: ...  # fmt: skip
        def __dlpack_device__(self) -> tuple[int, int]: ...
        def __jax_array__(self) -> Any: ...
        def argmax(self, axis: int | None = None, out: None = None, *, keepdims: bool = False) -> Tensor: ...
        def argmin(self, axis: int | None = None, out: None = None, *, keepdims: bool = False) -> Tensor: ...
        def _arg_extreme(self, axis: int | None, keepdims: bool, largest: bool) -> Tensor: ...
        def sum(
            self, axis: int | Sequence[int] | None = None, keepdims: bool = False, dtype: Any = None, out: None = None
        ) -> Tensor: ...
        def prod(
            self, axis: int | Sequence[int] | None = None, keepdims: bool = False, dtype: Any = None, out: None = None
        ) -> Tensor: ...
        def max(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor: ...
        def min(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor: ...
        def round(self, decimals: int = 0, out: None = None) -> Tensor: ...
        def mean(
            self, axis: int | Sequence[int] | None = None, keepdims: bool = False, dtype: Any = None, out: None = None
        ) -> Tensor: ...
        def var(
            self,
            axis: int | Sequence[int] | None = None,
            ddof: Any = None,
            keepdims: bool = False,
            *,
            correction: Any = None,
            dtype: Any = None,
            out: None = None,
        ) -> Tensor: ...
        def std(
            self,
            axis: int | Sequence[int] | None = None,
            ddof: Any = None,
            keepdims: bool = False,
            *,
            correction: Any = None,
            dtype: Any = None,
            out: None = None,
        ) -> Tensor: ...
        def any(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor: ...
        def all(self, axis: int | Sequence[int] | None = None, keepdims: bool = False, out: None = None) -> Tensor: ...
        def _strong(self) -> Tensor: ...
        def __getitem__(self, index: Any) -> Tensor: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        @property
        def at(self) -> Any: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __eq__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def _inplace(self, op: OpDef, other: Any, name: str) -> Tensor: ...
        def add_(self, other: Any) -> Tensor: ...
        def sub_(self, other: Any) -> Tensor: ...
        def mul_(self, other: Any) -> Tensor: ...
        def div_(self, other: Any) -> Tensor: ...
        def pow_(self, other: Any) -> Tensor: ...
        def __iadd__(self, other: Any) -> Tensor: ...
        def __isub__(self, other: Any) -> Tensor: ...
        def __imul__(self, other: Any) -> Tensor: ...
        def __itruediv__(self, other: Any) -> Tensor: ...
        def __ipow__(self, other: Any) -> Tensor: ...
        def __ifloordiv__(self, other: Any) -> Tensor: ...
        def __imod__(self, other: Any) -> Tensor: ...
        def __imatmul__(self, other: Any) -> Tensor: ...
        def __iand__(self, other: Any) -> Tensor: ...
        def __ior__(self, other: Any) -> Tensor: ...
        def __ixor__(self, other: Any) -> Tensor: ...
        def __ilshift__(self, other: Any) -> Tensor: ...
        def __irshift__(self, other: Any) -> Tensor: ...
        def __lshift__(self, other: Any) -> Tensor: ...
        def __rlshift__(self, other: Any) -> Tensor: ...
        def __rshift__(self, other: Any) -> Tensor: ...
        def __rrshift__(self, other: Any) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        # the elementwise math methods (runtime.numpy.tensor_methods.MATH_METHODS)
        def abs(self) -> Tensor: ...
        def absolute(self) -> Tensor: ...
        def neg(self) -> Tensor: ...
        def negative(self) -> Tensor: ...
        def sign(self) -> Tensor: ...
        def exp(self) -> Tensor: ...
        def exp2(self) -> Tensor: ...
        def expm1(self) -> Tensor: ...
        def log(self) -> Tensor: ...
        def log1p(self) -> Tensor: ...
        def log2(self) -> Tensor: ...
        def log10(self) -> Tensor: ...
        def sqrt(self) -> Tensor: ...
        def rsqrt(self) -> Tensor: ...
        def square(self) -> Tensor: ...
        def reciprocal(self) -> Tensor: ...
        def sin(self) -> Tensor: ...
        def cos(self) -> Tensor: ...
        def tan(self) -> Tensor: ...
        def asin(self) -> Tensor: ...
        def acos(self) -> Tensor: ...
        def atan(self) -> Tensor: ...
        def arcsin(self) -> Tensor: ...
        def arccos(self) -> Tensor: ...
        def arctan(self) -> Tensor: ...
        def sinh(self) -> Tensor: ...
        def cosh(self) -> Tensor: ...
        def tanh(self) -> Tensor: ...
        def asinh(self) -> Tensor: ...
        def acosh(self) -> Tensor: ...
        def atanh(self) -> Tensor: ...
        def arcsinh(self) -> Tensor: ...
        def arccosh(self) -> Tensor: ...
        def arctanh(self) -> Tensor: ...
        def floor(self) -> Tensor: ...
        def ceil(self) -> Tensor: ...
        def sigmoid(self) -> Tensor: ...
        def erf(self) -> Tensor: ...
        def erfc(self) -> Tensor: ...
        def lgamma(self) -> Tensor: ...
        def digamma(self) -> Tensor: ...

        clamp = clip


#: ``MATERIALISE[0](record)``: the ``Var`` of a pending record (set by ``runtime.core.tape``)
MATERIALISE: list[Callable[[Any], Any]] = [lambda record: record]

#: ``CONCRETE[0](t, fn)`` raises ``ConcretizationError`` when ``t`` is traced (set by
#: ``runtime.core.graph``, which knows what a trace is; the array type does not import it).
#: The conversions to Python and NumPy values call it for a Tensor on a graph.
CONCRETE: list[Callable[[Tensor, str], None] | None] = [None]


def _concrete(t: Tensor, fn: str) -> None:
    check = CONCRETE[0]
    if check is not None:
        check(t, fn)


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (the storage itself stays as it is: castwise's own in-place
    writes, which tick the version counter, still go through)."""
    view = array.view()
    view.flags.writeable = False
    return view


def _storage_array(array: Any) -> np.ndarray:
    """A Tensor's storage from a NumPy scalar or an ndarray subclass: a base-class ndarray
    (a 0-d copy of a scalar, a view of a subclass), so ``np.asarray(tensor)`` always works."""
    out = np.asarray(array)
    if type(out) is not np.ndarray:  # pragma: no cover - np.asarray always gives a base ndarray
        raise TypeError(f"a Tensor's storage must be a NumPy array, got {type(array).__name__}")
    return out


#: what ``attach_methods`` leaves alone: the bookkeeping every class body has, and ``__hash__``,
#: which Python sets to None in a class body that defines ``__eq__`` (Tensor keeps identity hashing)
_CLASS_BOOKKEEPING = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__annotations__",
        "__firstlineno__",
        "__static_attributes__",
        "__hash__",
    }
)


def attach_methods(source: type) -> None:
    """Put the methods (and properties) defined in the class body of ``source`` on ``Tensor``: how
    the layers above the array type give it their methods without the array type importing them."""
    for name, value in vars(source).items():
        if name not in _CLASS_BOOKKEEPING:
            setattr(Tensor, name, value)

"""The standard's ``linalg`` extension (``xp.linalg``): castwise's ``rt.linalg`` under the
standard's names and signatures, plus the main namespace's ``matmul``, ``matrix_transpose``,
``tensordot``, ``vecdot`` and ``outer``.

``cross``, ``matrix_rank``, ``pinv`` and ``trace`` are the linalg work package's
(``runtime.numpy.linalg``): this module's ``__getattr__`` hands them out once that module has
them, and until then they are missing (docs/tensor.md's table says "not yet").
"""

from __future__ import annotations

from typing import Any

from runtime.core.tensor import Tensor
from runtime.numpy import creation as C
from runtime.numpy import linalg as L
from runtime.numpy import manipulation as M
from runtime.numpy.array_api import manipulation as AM
from runtime.numpy.params import named

#: the standard's linalg functions that ``runtime.numpy.linalg`` provides when it has them
PENDING: tuple[str, ...] = ("cross", "matrix_rank", "pinv", "trace")

__all__ = [
    "cholesky",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_transpose",
    "outer",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "vecdot",
    "vector_norm",
]


@named("linalg.cholesky")
def cholesky(x: Any, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each Hermitian positive-definite matrix (lower, or ``upper``)."""
    return L.cholesky(x, upper=upper)


def det(x: Any, /) -> Tensor:
    """The determinant of each matrix."""
    return L.det(x)


@named("linalg.diagonal")
def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of each matrix (the last two axes)."""
    return C.diagonal(x, offset, -2, -1)


def eigh(x: Any, /) -> Any:
    """The eigenvalues (ascending) and eigenvectors of each Hermitian matrix."""
    return L.eigh(x)


def eigvalsh(x: Any, /) -> Tensor:
    """The eigenvalues of each Hermitian matrix, ascending."""
    return L.eigvalsh(x)


def inv(x: Any, /) -> Tensor:
    """The inverse of each square matrix."""
    return L.inv(x)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:  # noqa: A002
    """The ``ord`` norm of each matrix."""
    return L.matrix_norm(x, keepdims=keepdims, ord=ord)


def matrix_power(x: Any, n: int, /) -> Tensor:
    """Each square matrix raised to the integer power ``n``."""
    return L.matrix_power(x, n)


@named("linalg.matmul")
def matmul(x1: Any, x2: Any, /) -> Tensor:
    """The main namespace's ``matmul`` (its errors say ``linalg.matmul``)."""
    return AM.matmul(x1, x2)


@named("linalg.matrix_transpose")
def matrix_transpose(x: Any, /) -> Tensor:
    """The main namespace's ``matrix_transpose``."""
    return AM.matrix_transpose(x)


@named("linalg.tensordot")
def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Tensor:
    """The main namespace's ``tensordot``."""
    return AM.tensordot(x1, x2, axes=axes)


@named("linalg.vecdot")
def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The main namespace's ``vecdot``."""
    return AM.vecdot(x1, x2, axis=axis)


@named("linalg.outer")
def outer(x1: Any, x2: Any, /) -> Tensor:
    """The outer product of two vectors."""
    return M.outer(x1, x2)


def qr(x: Any, /, *, mode: str = "reduced") -> Any:
    """The QR factorisation of each matrix."""
    return L.qr(x, mode)


def slogdet(x: Any, /) -> Any:
    """The sign and log-magnitude of each determinant."""
    return L.slogdet(x)


def solve(x1: Any, x2: Any, /) -> Tensor:
    """The solution ``x`` of ``x1 @ x = x2``."""
    return L.solve(x1, x2)


def svd(x: Any, /, *, full_matrices: bool = True) -> Any:
    """The singular value decomposition of each matrix."""
    return L.svd(x, full_matrices=full_matrices)


def svdvals(x: Any, /) -> Tensor:
    """The singular values of each matrix, descending."""
    return L.svdvals(x)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:  # noqa: A002
    """The ``ord`` norm over ``axis`` (all axes flattened by default)."""
    return L.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims)


def __getattr__(name: str) -> Any:
    # the linalg work package's functions, as soon as runtime.numpy.linalg defines them
    if name in PENDING and hasattr(L, name):
        return getattr(L, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""``rt.add`` and ``rt.subtract``: NumPy's ``add``/``subtract``, plus PyTorch's ``alpha=`` under torch.

Without ``alpha`` they are ``rt.lax.add`` / ``rt.lax.sub`` (NumPy's meaning, the policy's
promotion; tests/runtime/test_numpy_names.py holds them against NumPy and jax.numpy). With
``alpha`` they are ``torch.add(input, other, alpha=a)`` = ``input + a * other`` and
``torch.sub`` = ``input - a * other``, under the torch policy only (its Tensor API follows
PyTorch: ``runtime.numpy.common.library``): NumPy's and jax.numpy's ``add`` have no such keyword,
so under another policy ``alpha=`` raises ``AlphaError`` rather than give a call those
libraries would refuse a meaning.

PyTorch's rules (ATen ``alpha_check``, on the operands' common dtype): a bool ``alpha`` only for
a bool result; a floating ``alpha`` not for an integral (or bool) result; a complex ``alpha`` only
for a complex result. ``alpha`` is a Python number (PyTorch's ``Scalar``), converted to the common
dtype; both operands are converted to it too and ``input + alpha * other`` runs there, each step
an explicit op, so it records, differentiates (``d/d other`` is ``alpha``), vmaps and lowers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.errors import OpTypeError
from runtime.core.executor import asarray
from runtime.core.promotion import result_type
from runtime.core.tensor import Tensor
from runtime.numpy.common import library
from runtime.numpy.params import error, named

__all__ = ["AlphaError", "add", "subtract"]


class AlphaError(OpTypeError):
    """``alpha=`` that PyTorch refuses for the operands' dtype, that is no number, or under a
    policy whose library has no ``alpha``."""


def _kind(alpha: Any) -> str | None:
    if isinstance(alpha, (bool, np.bool_)):
        return "bool"
    if isinstance(alpha, (int, np.integer)):
        return "int"
    if isinstance(alpha, (float, np.floating)):
        return "float"
    if isinstance(alpha, (complex, np.complexfloating)):
        return "complex"
    return None


def _check(name: str, x: Any, y: Any, alpha: Any) -> DType:
    """The common dtype of ``x`` and ``y``, once ``alpha`` passed PyTorch's checks."""
    if library() != "torch":
        raise error(
            AlphaError, name, f"alpha= is PyTorch's keyword (torch.{name[:3]}); this policy's {name} has none "
            f"(NumPy's and jax.numpy's do not take it): write {name}(x, alpha * y), or use policy 'torch'", x, y,
        )  # fmt: skip
    kind = _kind(alpha)
    if kind is None:
        what = f"a Tensor {alpha.dtype.name}{list(alpha.shape)}" if isinstance(alpha, Tensor) else type(alpha).__name__
        raise error(AlphaError, name, f"alpha must be a Python number (torch's Scalar), got {what}", x, y)
    common = result_type(x, y)
    if kind == "bool" and common.name != "bool":
        raise error(AlphaError, name, f"a bool alpha only for a bool result; the result is {common.name}", x, y)
    if kind == "float" and not common.is_inexact:
        raise error(
            AlphaError, name, f"alpha {alpha!r} is a float: for integral input tensors ({common.name} result), "
            "alpha must not be a floating point number (as torch)", x, y,
        )  # fmt: skip
    if kind == "complex" and common.kind != "complex":
        raise error(
            AlphaError, name, f"alpha {alpha!r} is complex and the result {common.name} is not; for non-complex input "
            "tensors alpha must not be a complex number (as torch)", x, y,
        )  # fmt: skip
    return common


def _to(v: Any, common: DType) -> Tensor:
    if isinstance(v, Tensor):
        return v if v.dtype is common else F.convert(v, common)
    return asarray(v, common)  # a Python number or NumPy data: stored at once in the common dtype


def _with_alpha(name: str, op: Any, x: Any, y: Any, alpha: Any) -> Tensor:
    common = _check(name, x, y, alpha)
    if _kind(alpha) in ("bool", "int") and alpha == 1:
        return op(_to(x, common), _to(y, common))  # type: ignore[no-any-return]
    xc, yc = _to(x, common), _to(y, common)
    return op(xc, F.mul(yc, asarray(alpha, common)))  # type: ignore[no-any-return]


@named("add")
def add(x: Any, y: Any, *, alpha: Any = None) -> Tensor:
    """``np.add``: ``rt.lax.add``, the same meaning. With ``alpha`` (torch policy only),
    ``torch.add``: ``x + alpha * y``."""
    if alpha is None:
        return F.add(x, y)
    return _with_alpha("add", F.add, x, y, alpha)


@named("subtract")
def subtract(x: Any, y: Any, *, alpha: Any = None) -> Tensor:
    """``np.subtract``: ``rt.lax.sub``, the same meaning. With ``alpha`` (torch policy only),
    ``torch.sub``: ``x - alpha * y``."""
    if alpha is None:
        return F.sub(x, y)
    return _with_alpha("subtract", F.sub, x, y, alpha)
